import Foundation
import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsSpeech
import SyncUpsTestSupport

/// Word error rates of a remote stand-up on a real PipeWire (`scripts/pipewire-graph`), PocketSphinx with its
/// full language model on pocketsphinx-testdata's read speech: Ann (local) reads three clips into the
/// microphone in her half, Bob (remote) two clips into the call sink in his. Run once clean and once with
/// Bob's voice leaking into the microphone at -3 dB.
///
/// Three ways to transcribe the same meeting are set side by side. `mixed` is the daemon's: one recognizer
/// on the microphone ducked under the call, attributed to the floor. The other two decode each channel's
/// file with its own recognizer afterwards (as fast as the recognizer keeps up, nothing dropped), merged by
/// word time and attributed to the floor as the daemon does: `separate` keeps every word, so a leak comes
/// out twice (once from each channel); `separate, echo dropped` drops a microphone word the call carries at
/// the same time. "Twice" counts Bob's reference words that his transcript holds more often than he said
/// them.
enum CallAudioBench {
    static let directory = "/usr/share/pocketsphinx/test/data/librivox"
    static let localClips = ["0870", "0880", "0890"]
    static let remoteClips = ["0920", "0930"]
    /// Each attendee's half of the meeting.
    static let turnSeconds = 22

    /// One way's figures for one case.
    struct Figures {
        var localWER: Double
        var remoteWER: Double
        var remoteTwice: Int
    }

    static let ways = ["mixed", "separate", "separate, echo dropped"]

    static func run() throws -> JSONValue {
        guard PipeWireGraph.unavailableReason == nil else {
            print("call audio: skipped (\(PipeWireGraph.unavailableReason!))")
            return .null
        }
        let references = referenceWords()
        let localReference = localClips.flatMap { references[$0] ?? [] }
        let remoteReference = remoteClips.flatMap { references[$0] ?? [] }
        var report = JSONObject()
        var rows: [String: [Bool: Figures]] = [:]
        for leaks in [false, true] {
            let meeting = try meeting(leaks: leaks)
            for (way, words) in zip(ways, [meeting.mixed, meeting.separate, meeting.echoDropped]) {
                let local = words.filter { $0.start < Double(turnSeconds) }.map(\.word)
                let remote = words.filter { $0.start >= Double(turnSeconds) }.map(\.word)
                rows[way, default: [:]][leaks] = Figures(
                    localWER: SpeechBench.wordErrorRate(local, localReference),
                    remoteWER: SpeechBench.wordErrorRate(remote, remoteReference),
                    remoteTwice: twice(remote, remoteReference))
            }
        }
        print(
            "\ncall audio (PipeWire, PocketSphinx with its language model, \(localClips.count)+\(remoteClips.count) LibriVox clips, \(remoteReference.count) remote words)"
        )
        print("way                      clean: local  remote  twice | leak -3 dB: local  remote  twice")
        for way in ways {
            let clean = rows[way]![false]!
            let leak = rows[way]![true]!
            print(
                way.padding(22) + "        \(percent(clean.localWER))  \(percent(clean.remoteWER))  "
                    + "\(clean.remoteTwice)".padding(5, left: true) + " |             \(percent(leak.localWER))  "
                    + "\(percent(leak.remoteWER))  " + "\(leak.remoteTwice)".padding(5, left: true))
            var object = JSONObject()
            for (name, figures) in [("clean", clean), ("leak", leak)] {
                object.append(
                    name,
                    [
                        "localWER": .double(figures.localWER), "remoteWER": .double(figures.remoteWER),
                        "remoteWordsTwice": .int(figures.remoteTwice),
                    ])
            }
            report.append(way, .object(object))
        }
        report.append("remoteReferenceWords", .int(remoteReference.count))
        return .object(report)
    }

    static func percent(_ value: Double) -> String {
        (String((value * 1000).rounded() / 10) + "%").padding(6, left: true)
    }

    /// How many of `reference`'s words `hypothesis` holds more often than `reference` does.
    static func twice(_ hypothesis: [Substring], _ reference: [Substring]) -> Int {
        var said: [Substring: Int] = [:]
        for word in reference { said[word, default: 0] += 1 }
        var heard: [Substring: Int] = [:]
        for word in hypothesis where said[word] != nil { heard[word, default: 0] += 1 }
        return heard.reduce(0) { $0 + max(0, $1.value - said[$1.key]!) }
    }

    struct Word {
        var word: Substring
        var start: Double
        var end: Double
    }

    /// One meeting's words (meeting time) the three ways.
    struct Meeting {
        var mixed: [Word]
        var separate: [Word]
        var echoDropped: [Word]
    }

    static func meeting(leaks: Bool) throws -> Meeting {
        let graph = try PipeWireGraph()
        if leaks { try graph.leakCallIntoMicrophone() }
        let daemon = try DaemonProcess(
            arguments: ["--no-cue", "--speech-engine", "pocketsphinx"], environment: graph.environment)
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create", ["title": "Bench", "duration": .int(2 * turnSeconds), "attendees": ["Ann", "Bob"]])
        let id = created["id"]!.stringValue!
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": .string(id)])
        guard started["callAudio"]?["state"] == "recording", started["audio"]?["through"] == "sound server" else {
            throw TestFailure("the meeting does not record both sides: \(JSONWriter().string(started))")
        }
        try graph.play(try clips(localClips), into: "micfeed")
        try client.waitUntilElapsed(turnSeconds)
        let remote = try clips(remoteClips)
        try graph.play(remote, into: "call")
        let ended = try client.nextEvent("session.ended", timeout: .seconds(60))
        let meetingID = ended["data"]!["meeting"]!["id"]!.stringValue!
        let details = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meetingID)])
        let mixed = (details["segments"]?.arrayValue ?? []).flatMap { segment in
            (segment["words"]?.arrayValue ?? []).flatMap { word in
                normalized(word["word"]?.stringValue ?? "").map {
                    Word(
                        word: $0, start: word["start"]?.numberValue?.double ?? 0,
                        end: word["end"]?.numberValue?.double ?? 0)
                }
            }
        }
        print("  \(leaks ? "leak" : "clean"), the daemon's transcript:")
        for segment in details["segments"]?.arrayValue ?? [] {
            let start = segment["start"]?.numberValue?.double ?? 0
            print(
                "    \(String((start * 10).rounded() / 10)) s \(segment["speaker"]?["name"]?.stringValue ?? "?"): \(segment["text"]?.stringValue ?? "")"
            )
        }
        for line in daemon.log.contents.split(separator: "\n") where line.contains("warning") {
            print("    daemon: \(line)")
        }
        let base = daemon.dataPath + "/meetings/" + meetingID
        if let keep = Subprocess.currentEnvironment()["SYNCUPS_BENCH_KEEP"] {
            // The files of each run, to listen to and to look at when a figure is odd.
            let copy = "\(keep)/\(leaks ? "leak" : "clean")-\(MonotonicInstant.now().nanoseconds)"
            mkdir(copy, 0o755)
            Files.write(copy + "/mic.wav", Files.read(base + ".wav") ?? [])
            Files.write(copy + "/call.wav", Files.read(base + ".call.wav") ?? [])
            Files.write(copy + "/daemon.log", daemon.log.contents)
            Files.write(copy + "/details.json", JSONWriter().string(details))
            for name in ["pipewire", "pipewire-pulse", "wireplumber"] {
                Files.write(copy + "/\(name).log", Files.read(graph.directory.appending("\(name).log")) ?? [])
            }
        }
        let microphone = try decode(Array((Files.read(base + ".wav") ?? []).dropFirst(44)))
        let call = try decode(Array((Files.read(base + ".call.wav") ?? []).dropFirst(44)))
        print("    the microphone's own recognizer: \(microphone.map(\.word).joined(separator: " "))")
        print("    the call's own recognizer: \(call.map(\.word).joined(separator: " "))")
        let separate = (microphone + call).sorted { $0.start < $1.start }
        // A microphone word within 0.3 s of a call word is the call heard through the speakers.
        let echoDropped =
            (microphone.filter { word in
                !call.contains { $0.start < word.end + 0.3 && word.start < $0.end + 0.3 }
            } + call).sorted { $0.start < $1.start }
        return Meeting(mixed: mixed, separate: separate, echoDropped: echoDropped)
    }

    /// The clips' samples one after another, half a second of silence before each.
    static func clips(_ names: [String]) throws -> [UInt8] {
        var audio: [UInt8] = []
        for name in names {
            let path = "\(directory)/sense_and_sensibility_01_austen_64kb-\(name).wav"
            guard let bytes = Files.read(path) else { throw TestFailure("cannot read \(path)") }
            audio += SpeechFixture.silence(seconds: 0.5) + bytes.dropFirst(44)
        }
        return audio
    }

    /// The reference words of each clip, by its number.
    static func referenceWords() -> [String: [Substring]] {
        let text = String(decoding: Files.read(directory + "/transcription") ?? [], as: UTF8.self)
        var references: [String: [Substring]] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard let last = words.last else { continue }
            references[String(last.dropLast().suffix(4))] = words.filter { !$0.hasPrefix("<") && !$0.hasPrefix("(") }
        }
        return references
    }

    static func normalized(_ text: String) -> [Substring] {
        text.lowercased().split(separator: " ").map { $0.filter { $0.isLetter || $0 == "'" } }
    }

    /// One file decoded on its own recognizer, its words in meeting time, told of the turns as the daemon's
    /// is (an utterance ends at each). Fed 100 ms at a time, three times as fast as real time: all at once
    /// would overflow the recognizer's 30 s queue.
    static func decode(_ audio: [UInt8]) throws -> [Word] {
        let chunkBytes = 3200  // 100 ms, as the recorder hands it on
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer())
        var frame: Int64 = 0
        let bobFrom = Int64(turnSeconds * 16_000)
        harness.stream.turn(0, Attendee(id: Attendee.ID(UUID()), name: "Ann"))
        for offset in stride(from: 0, to: audio.count, by: chunkBytes) {
            if frame == bobFrom { harness.stream.turn(frame, Attendee(id: Attendee.ID(UUID()), name: "Bob")) }
            frame = harness.feed(Array(audio[offset..<min(audio.count, offset + chunkBytes)]), from: frame)
            var pause = timespec(tv_sec: 0, tv_nsec: 33_000_000)
            nanosleep(&pause, nil)
        }
        guard harness.finish(timeout: .seconds(300)) else { throw TestFailure("the recognizer did not finish") }
        if let dropped = harness.events.first(where: { if case .dropped = $0 { true } else { false } }) {
            throw TestFailure("the recognizer could not keep up: \(dropped)")
        }
        return harness.finals.flatMap(\.words).flatMap { word in
            normalized(word.word).map { Word(word: $0, start: word.start, end: word.end) }
        }
    }
}

extension String {
    /// The text padded with spaces to `width` characters, on the right (or the left).
    func padding(_ width: Int, left: Bool = false) -> String {
        let spaces = String(repeating: " ", count: max(0, width - count))
        return left ? spaces + self : self + spaces
    }
}
