import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsSpeech
import SyncUpsTestSupport

/// Word error rates of a remote stand-up on a real PipeWire (`scripts/pipewire-graph`), PocketSphinx with its
/// full language model on pocketsphinx-testdata's read speech: Ann (local) reads three clips into the
/// microphone in her half, Bob (remote) two clips into the call sink in his. Run once clean and once with
/// Bob's voice leaking into the microphone at -3 dB. The daemon's way (one recognizer on the mix) is set
/// against the other way (each file decoded on its own afterwards): that way, what the microphone's
/// recognizer says during Bob's turn is the leak transcribed a second time.
enum CallAudioBench {
    static let directory = "/usr/share/pocketsphinx/test/data/librivox"
    static let localClips = ["0870", "0880", "0890"]
    static let remoteClips = ["0920", "0930"]
    /// Each attendee's half of the meeting.
    static let turnSeconds = 22

    struct Side {
        var words: Int
        var wordErrorRate: Double
    }

    static func run() throws -> JSONValue {
        guard PipeWireGraph.unavailableReason == nil else {
            print("call audio: skipped (\(PipeWireGraph.unavailableReason!))")
            return .null
        }
        var report = JSONObject()
        print(
            "\ncall audio (PipeWire, PocketSphinx with its language model, \(localClips.count)+\(remoteClips.count) LibriVox clips)"
        )
        print("case    mixed: local WER  remote WER | per file: local WER  remote WER  leaked words in the mic's text")
        for leaks in [false, true] {
            let row = try meeting(leaks: leaks)
            let line =
                "\(leaks ? "leak  " : "clean ")  \(percent(row.mixedLocal))  \(percent(row.mixedRemote)) | \(percent(row.fileLocal))  \(percent(row.fileRemote))  \(row.doubled) of \(row.remoteReference)"
            print(line)
            var object = JSONObject()
            object.append("mixedLocalWER", .double(row.mixedLocal))
            object.append("mixedRemoteWER", .double(row.mixedRemote))
            object.append("perFileLocalWER", .double(row.fileLocal))
            object.append("perFileRemoteWER", .double(row.fileRemote))
            object.append("perFileDoubledWords", .int(row.doubled))
            object.append("remoteReferenceWords", .int(row.remoteReference))
            report.append(leaks ? "leak" : "clean", .object(object))
        }
        return .object(report)
    }

    static func percent(_ value: Double) -> String {
        let text = String((value * 1000).rounded() / 10) + "%"
        return String(repeating: " ", count: max(0, 6 - text.count)) + text
    }

    struct Row {
        var mixedLocal: Double
        var mixedRemote: Double
        var fileLocal: Double
        var fileRemote: Double
        var doubled: Int
        var remoteReference: Int
    }

    static func meeting(leaks: Bool) throws -> Row {
        let references = referenceWords()
        let localReference = localClips.flatMap { references[$0] ?? [] }
        let remoteReference = remoteClips.flatMap { references[$0] ?? [] }
        let graph = try PipeWireGraph()
        let daemon = try DaemonProcess(
            arguments: ["--no-cue", "--speech-engine", "pocketsphinx"], environment: graph.environment)
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create", ["title": "Bench", "duration": .int(2 * turnSeconds), "attendees": ["Ann", "Bob"]])
        let id = created["id"]!.stringValue!
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": .string(id)])
        try graph.play(try clips(localClips), into: "micfeed")
        try client.waitUntilElapsed(turnSeconds)
        let remote = try clips(remoteClips)
        try graph.playRemote(remote, leaks: leaks)
        let ended = try client.nextEvent("session.ended", timeout: .seconds(60))
        let meetingID = ended["data"]!["meeting"]!["id"]!.stringValue!
        let details = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meetingID)])
        func words(of speaker: String) -> [Substring] {
            (details["segments"]?.arrayValue ?? []).filter { $0["speaker"]?["name"]?.stringValue == speaker }
                .flatMap { normalized($0["text"]?.stringValue ?? "") }
        }
        for segment in details["segments"]?.arrayValue ?? [] {
            let start = segment["start"]?.numberValue?.double ?? 0
            print(
                "    \(String((start * 10).rounded() / 10)) s \(segment["speaker"]?["name"]?.stringValue ?? "?"): \(segment["text"]?.stringValue ?? "")"
            )
        }
        let base = daemon.dataPath + "/meetings/" + meetingID
        let microphone = Array((Files.read(base + ".wav") ?? []).dropFirst(44))
        let callAudio = Array((Files.read(base + ".call.wav") ?? []).dropFirst(44))
        let microphoneText = try decode(microphone)
        let callText = try decode(callAudio)
        // The microphone's recognizer during Bob's turn: Ann is silent, so every word there is the leak.
        let doubled = microphoneText.filter { $0.start >= Double(turnSeconds) }.flatMap(\.words).count
        return Row(
            mixedLocal: SpeechBench.wordErrorRate(words(of: "Ann"), localReference),
            mixedRemote: SpeechBench.wordErrorRate(words(of: "Bob"), remoteReference),
            fileLocal: SpeechBench.wordErrorRate(
                microphoneText.filter { $0.start < Double(turnSeconds) }.flatMap(\.words), localReference),
            fileRemote: SpeechBench.wordErrorRate(callText.flatMap(\.words), remoteReference),
            doubled: doubled,
            remoteReference: remoteReference.count
        )
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

    /// One file decoded on its own (the per-channel alternative): each final result's start and words.
    static func decode(_ audio: [UInt8]) throws -> [(start: Double, words: [Substring])] {
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer())
        _ = harness.feed(audio)
        _ = harness.finish(timeout: .seconds(300))
        return harness.finals.map { ($0.start, normalized($0.text)) }
    }
}
