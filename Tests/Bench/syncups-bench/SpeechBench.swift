import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsSpeech
import SyncUpsTestSupport

/// The speech engines on recorded speech: real-time factor, partial latency, peak memory.
enum SpeechBench {
    struct Result {
        var engine: String
        var audioSeconds: Double
        var realTimeFactor: Double
        var peakResidentKiB: Int
        var words: Int
        /// Word error rate against the clips' reference transcription.
        var wordErrorRate: Double
    }

    /// The reference transcription of the clips, in file order, as lower-case words.
    static func referenceWords() -> [Substring] { referenceWordsByClip().flatMap { $0 } }

    /// The reference transcription of each clip, in file order, as lower-case words.
    static func referenceWordsByClip() -> [[Substring]] {
        let path = "/usr/share/pocketsphinx/test/data/librivox/transcription"
        guard let fd = try? FileDescriptor.open(path, O_RDONLY), let bytes = try? fd.readToEnd() else { return [] }
        fd.close()
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").sorted { $0.suffix(8) < $1.suffix(8) }
            .map { line in line.split(separator: " ").filter { !$0.hasPrefix("<") && !$0.hasPrefix("(") } }
    }

    /// Word-level edit distance divided by the reference length.
    static func wordErrorRate(_ hypothesis: [Substring], _ reference: [Substring]) -> Double {
        guard !reference.isEmpty else { return 0 }
        var previous = Array(0...hypothesis.count)
        for (row, word) in reference.enumerated() {
            var current = [row + 1] + Array(repeating: 0, count: hypothesis.count)
            for column in 1...max(1, hypothesis.count) where column <= hypothesis.count {
                let substitution = previous[column - 1] + (hypothesis[column - 1] == word ? 0 : 1)
                current[column] = min(substitution, previous[column] + 1, current[column - 1] + 1)
            }
            previous = current
        }
        return Double(previous[hypothesis.count]) / Double(reference.count)
    }

    /// The five LibriVox clips of pocketsphinx-testdata (25 s of read speech), as raw PCM.
    static func recordedSpeech() throws -> [UInt8] {
        try librivoxClips().flatMap { $0 + SpeechFixture.silence(seconds: 0.5) }
    }

    /// Each clip's PCM (16 kHz mono S16_LE), in file order.
    static func librivoxClips() throws -> [[UInt8]] {
        let directory = "/usr/share/pocketsphinx/test/data/librivox"
        return try ((try? DirectoryListing.names(in: directory)) ?? []).sorted().filter { $0.hasSuffix(".wav") }.map {
            let fd = try FileDescriptor.open(directory + "/" + $0, O_RDONLY)
            defer { fd.close() }
            return Array(try fd.readToEnd().dropFirst(44))
        }
    }

    /// Seconds from the clip's start to its first and after its last 30 ms frame above -40 dBFS.
    static func voicedSpan(_ clip: [UInt8]) -> (onset: Double, end: Double) {
        let frame = 480
        var first: Int?
        var last = 0
        var index = 0
        while (index + 1) * frame * 2 <= clip.count {
            var energy = 0.0
            for sample in 0..<frame {
                let at = (index * frame + sample) * 2
                let value = Double(Int16(bitPattern: UInt16(clip[at]) | UInt16(clip[at + 1]) << 8)) / 32768
                energy += value * value
            }
            if energy / Double(frame) > 1e-4 {  // -40 dBFS
                if first == nil { first = index }
                last = index + 1
            }
            index += 1
        }
        return (Double((first ?? 0) * frame) / 16_000, Double(last * frame) / 16_000)
    }

    /// The CPU seconds of `root` and of its living descendants (an engine and its launcher) from /proc: they
    /// are counted before they exit, which `RUSAGE_CHILDREN` would not do for a grandchild; `root`'s own apart
    /// from its descendants' (an engine that runs as a command: the adapter and what it starts); and the
    /// largest peak resident size among them.
    static func processTree(_ root: pid_t) -> (cpuSeconds: Double, descendantsCPU: Double, peakResidentKiB: Int) {
        var parents: [pid_t: pid_t] = [:]
        for name in (try? DirectoryListing.names(in: "/proc")) ?? [] {
            guard let pid = pid_t(name), let fd = try? FileDescriptor.open("/proc/\(pid)/stat", O_RDONLY),
                let bytes = try? fd.readToEnd()
            else { continue }
            fd.close()
            let text = String(decoding: bytes, as: UTF8.self)
            guard let close = text.lastIndex(of: ")") else { continue }
            let fields = text[text.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = pid_t(fields[1]) { parents[pid] = parent }
        }
        func descends(_ pid: pid_t) -> Bool {
            var current = pid
            while let parent = parents[current], parent > 1 {
                if parent == root { return true }
                current = parent
            }
            return false
        }
        let descendants = parents.keys.filter(descends)
        let descendantsCPUSeconds = descendants.map { ProcessSample.cpuSeconds($0) }.reduce(0, +)
        return (
            ProcessSample.cpuSeconds(root) + descendantsCPUSeconds, descendantsCPUSeconds,
            ([root] + descendants).map { ProcessSample.statusField($0, "VmHWM:") ?? 0 }.max() ?? 0
        )
    }

    /// Runs in a child process (so its peak RSS is the engine's): decodes the clips as fast as possible.
    static func run(engine: String, command: String?) throws -> Result {
        let recognizer: SpeechRecognizer
        switch engine {
        case "pocketsphinx": recognizer = PocketSphinxRecognizer.recognizer()
        default: recognizer = CommandRecognizer.recognizer(command: command ?? "")
        }
        let audio = try recordedSpeech()
        let seconds = Double(audio.count) / 32_000
        let harness = try RecognizerHarness(recognizer)
        let start = MonotonicInstant.now()
        harness.feed(audio)
        _ = harness.finish(timeout: .seconds(600))
        let elapsed = (MonotonicInstant.now() - start).seconds
        let recognized = harness.finals.flatMap { $0.text.lowercased().split(separator: " ") }

        return Result(
            engine: engine,
            audioSeconds: seconds,
            realTimeFactor: elapsed / seconds,
            peakResidentKiB: engine == "pocketsphinx"
                ? ProcessSample.statusField(getpid(), "VmHWM:") ?? 0 : childrenPeakKiB(),
            words: recognized.count,
            wordErrorRate: wordErrorRate(recognized.map { $0.filter { $0.isLetter || $0 == "'" } }, referenceWords())
        )
    }

    /// The largest resident size of any finished child: an external engine runs as one.
    static func childrenPeakKiB() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return usage.ru_maxrss
    }

    /// One live meeting: each clip with what comes before it (the meeting's start, silence, a speaker turn).
    struct LiveMeeting {
        struct Utterance {
            /// The clip's index in file order.
            var clip: Int
            /// Audio before it (after the previous clip, or from the meeting's start).
            var silenceBefore: Double
            /// That audio is a quiet room's noise (-60 dBFS), not digital silence: what a microphone gives.
            var noise = false
            /// A speaker turn (`session.next`) when the clip's audio starts, just before its speech.
            var turnBefore = false
        }

        var utterances: [Utterance]
        var tail = 3.0
        /// The clips, each cut to its speech and 90 ms around it, follow each other with no pause: one speaker
        /// going on (a breath between two clips is all the silence), measured as one utterance from the first
        /// clip's onset to the last clip's end.
        var monologue = false

        /// A monologue of at least 25 s: six clips cut to their speech, from clip `first` on in file order and
        /// that one again at the end.
        static func monologue(first: Int, clips: Int) -> LiveMeeting {
            LiveMeeting(
                utterances: (0...clips).map { .init(clip: (first + $0) % clips, silenceBefore: $0 == 0 ? 2 : 0) },
                monologue: true)
        }
    }

    /// A row of the live table: the same kind of moment for at least five utterances, in one meeting or more.
    struct LiveCase {
        var name: String
        var key: String
        var meetings: [LiveMeeting]
        /// Each meeting's engine is started ahead (`--speech-spare-at-start`), and the meeting starts once its
        /// model is loaded: the row's CPU is the meeting's, the start-up's is `Live.spareStartCPUSeconds`.
        var warm = false

        static func all(clips: Int) -> [LiveCase] {
            let indices = Array(0..<clips)
            return [
                // 2 s of silence before each clip (the engine loads during the first 2 s).
                LiveCase(
                    name: "after 2 s of silence", key: "gaps",
                    meetings: [LiveMeeting(utterances: indices.map { .init(clip: $0, silenceBefore: 2) })]),
                // A meeting per clip, which starts 1 s after the meeting: its speech in the first 2 s.
                LiveCase(
                    name: "first words of a meeting, engine started with it (cold)", key: "meetingStart",
                    meetings: indices.map { LiveMeeting(utterances: [.init(clip: $0, silenceBefore: 1)]) }),
                // The same with the engine started ahead of the meeting (warm).
                LiveCase(
                    name: "first words of a meeting, engine started ahead (warm)", key: "meetingStartWarm",
                    meetings: indices.map { LiveMeeting(utterances: [.init(clip: $0, silenceBefore: 1)]) },
                    warm: true),
                // 10 s of a quiet room's noise before each clip.
                LiveCase(
                    name: "after 10 s of room noise", key: "longSilence",
                    meetings: [
                        LiveMeeting(utterances: indices.map { .init(clip: $0, silenceBefore: 10, noise: true) })
                    ]),
                // A new speaker for each clip, the turn just before the speech.
                LiveCase(
                    name: "right after a speaker change", key: "speakerChange",
                    meetings: [
                        LiveMeeting(utterances: indices.map { .init(clip: $0, silenceBefore: 2, turnBefore: true) })
                    ]),
                // One speaker for 25-30 s without a pause, a meeting each (the clips in another order each time).
                LiveCase(
                    name: "a monologue of 25-30 s", key: "monologue",
                    meetings: indices.map { LiveMeeting.monologue(first: $0, clips: clips) }),
            ]
        }
    }

    /// The live figures, through the daemon's real microphone path: syncupsd records from ALSA's `file`
    /// plugin reading a FIFO that is fed in real time (100 ms every 100 ms), and a client subscribed to the
    /// session times the `session.transcript` events. Latencies run from the moment the 100 ms period
    /// holding the sample went into the microphone (the FIFO) to the event's arrival on the socket.
    struct Live {
        /// Per clip: from the onset of its speech to its first partial (clips without one are left out).
        var partialLatencies: [Double] = []
        /// Per clip: from the end of its speech to the final that covers it.
        var finalLatencies: [Double] = []
        var clips = 0
        /// The saved meetings' transcripts against the reference.
        var wordErrorRate = 0.0
        /// The daemon's CPU and its engine's, per second of meeting.
        var cpuSecondsPerMeetingSecond = 0.0
        /// The engine's own CPU per second of meeting (syncupsd's descendants: a command engine and what it
        /// starts); nil for an engine in syncupsd's process, whose CPU is syncupsd's.
        var engineCPUSecondsPerMeetingSecond: Double?
        /// syncupsd's own CPU per second of meeting (an engine in its process included).
        var daemonCPUSecondsPerMeetingSecond: Double {
            cpuSecondsPerMeetingSecond - (engineCPUSecondsPerMeetingSecond ?? 0)
        }
        var peakResidentKiB = 0
        /// For a warm case, per meeting: the CPU its engine took to start ahead (its own process tree's, to the
        /// adapter's "ready"), which the row's CPU leaves out.
        var spareStartCPUSeconds: [Double] = []
    }

    /// The meetings of `liveCase`, one daemon each, and their figures together.
    static func live(engine: String, command: String?, liveCase: LiveCase) throws -> Live {
        let clips = try librivoxClips()
        let references = referenceWordsByClip()
        var live = Live()
        var recognized: [Substring] = []
        var reference: [Substring] = []
        var cpuSeconds = 0.0
        var engineCPUSeconds = 0.0
        var meetingSeconds = 0.0
        for meeting in liveCase.meetings {
            let one = try liveMeeting(
                engine: engine, command: command, meeting: meeting, clips: clips, warm: liveCase.warm)
            if let spare = one.spareStartCPUSeconds { live.spareStartCPUSeconds.append(spare) }
            live.partialLatencies += one.partialLatencies
            live.finalLatencies += one.finalLatencies
            live.clips += meeting.monologue ? 1 : meeting.utterances.count
            live.peakResidentKiB = max(live.peakResidentKiB, one.peakResidentKiB)
            recognized += one.words
            reference += meeting.utterances.flatMap { $0.clip < references.count ? references[$0.clip] : [] }
            cpuSeconds += one.cpuSeconds
            engineCPUSeconds += one.engineCPUSeconds
            meetingSeconds += one.meetingSeconds
        }
        live.wordErrorRate = wordErrorRate(recognized.map { $0.filter { $0.isLetter || $0 == "'" } }, reference)
        live.cpuSecondsPerMeetingSecond = cpuSeconds / max(meetingSeconds, 1)
        if engine != "pocketsphinx" {
            live.engineCPUSecondsPerMeetingSecond = engineCPUSeconds / max(meetingSeconds, 1)
        }
        return live
    }

    /// `seconds` of a quiet room's noise: white noise at -60 dBFS RMS (a fixed sequence, the same every run).
    static func roomNoise(seconds: Double) -> [UInt8] {
        var state: UInt32 = 0x2545_F491
        var bytes: [UInt8] = []
        let count = Int(seconds * 16_000)
        bytes.reserveCapacity(count * 2)
        for _ in 0..<count {
            state = state &* 1_664_525 &+ 1_013_904_223
            // Uniform in [-57, 57): RMS 33 of 32768, -60 dBFS.
            let sample = Int16(Int(state >> 16) % 114 - 57)
            let bits = UInt16(bitPattern: sample)
            bytes.append(UInt8(bits & 0xFF))
            bytes.append(UInt8(bits >> 8))
        }
        return bytes
    }

    static func liveMeeting(
        engine: String, command: String?, meeting: LiveMeeting, clips: [[UInt8]], warm: Bool = false
    ) throws -> (
        partialLatencies: [Double], finalLatencies: [Double], words: [Substring], cpuSeconds: Double,
        engineCPUSeconds: Double, meetingSeconds: Double, peakResidentKiB: Int, spareStartCPUSeconds: Double?
    ) {
        var speech: [UInt8] = []
        var spans: [(onset: Double, end: Double, start: Double, stop: Double)] = []
        for utterance in meeting.utterances {
            var clip = clips[utterance.clip]
            if meeting.monologue {
                let voiced = voicedSpan(clip)
                let margin = 0.09
                let from = max(Int((voiced.onset - margin) * 16_000), 0) * 2
                clip = Array(clip[from..<min(Int((voiced.end + margin) * 16_000) * 2, clip.count)])
            }
            speech +=
                utterance.noise
                ? roomNoise(seconds: utterance.silenceBefore) : SpeechFixture.silence(seconds: utterance.silenceBefore)
            let base = Double(speech.count) / 32_000
            let voiced = voicedSpan(clip)
            spans.append((base + voiced.onset, base + voiced.end, base, base + Double(clip.count) / 32_000))
            speech += clip
        }
        if meeting.monologue, let first = spans.first, let last = spans.last {
            spans = [(first.onset, last.end, first.start, last.stop)]
        }
        speech += SpeechFixture.silence(seconds: meeting.tail)
        let meetingSeconds = Double(speech.count) / 32_000
        let turns = meeting.utterances.enumerated().filter { $0.element.turnBefore }.map { spans[$0.offset].start }

        let alsa = try ALSAFixture(paced: true)
        var arguments = ["--audio-device", "virtmic", "--no-cue", "--speech-engine", engine]
        if let command { arguments += ["--speech-command", command] }
        if warm { arguments.append("--speech-spare-at-start") }
        let daemon = try DaemonProcess(arguments: arguments, environment: alsa.environment)
        defer { _ = daemon.stop() }
        var spareStartCPUSeconds: Double?
        if warm {
            // The engine started ahead has loaded its model: the Whisper adapter logs "ready N s after start".
            let deadline = MonotonicInstant.now() + .seconds(180)
            while !daemon.log.contents.contains(" after start (") {
                guard MonotonicInstant.now() < deadline else {
                    throw TestFailure("the engine started ahead never said it was ready")
                }
                usleep(50_000)
            }
            spareStartCPUSeconds = processTree(daemon.pid).descendantsCPU
        }
        let feeder = try PacedFeeder(fifo: alsa.microphonePath, audio: speech)
        defer { feeder.stop() }
        let client = try daemon.client()
        let attendees = (0...turns.count).map { JSONValue.string("Speaker \($0 + 1)") }
        let created = try client.result(
            "syncups.create", ["title": "Bench", "duration": 600, "attendees": .array(attendees)])
        let id = created["id"]!.stringValue!
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        let before = processTree(daemon.pid)
        _ = try client.result("session.start", ["syncup": .string(id), "call": false])

        // Every change of the settled text (a final) and of the provisional tail (a partial), with its arrival.
        var settledAt: [(bytes: Int, at: MonotonicInstant)] = []
        var partialsAt: [MonotonicInstant] = []
        var lastPartial = ""
        var fedTo: MonotonicInstant?
        var turnsSent = 0
        let trace = getenv("SYNCUPS_BENCH_SPEECH_TRACE") != nil
        while fedTo == nil || MonotonicInstant.now() < fedTo! {
            if fedTo == nil, let started = feeder.startedAt {
                fedTo = started + .milliseconds(Int64(meetingSeconds * 1000))
            }
            // A turn when the feeder reaches its clip (the reply is a line like the events, and skipped).
            if let started = feeder.startedAt, turnsSent < turns.count,
                (MonotonicInstant.now() - started).seconds >= turns[turnsSent]
            {
                try client.send(#"{"id":2,"cmd":"session.next"}"# + "\n")
                turnsSent += 1
            }
            let line: String
            do {
                guard let read = try client.readLine(timeout: .milliseconds(turnsSent < turns.count ? 20 : 200))
                else {
                    throw TestFailure("syncupsd closed the connection")
                }
                line = read
            } catch let failure as TestFailure where failure.description.hasPrefix("no line") {
                continue
            }
            let at = MonotonicInstant.now()
            guard let event = try? JSONParser().parse(line), event["event"] == "session.transcript",
                let session = event["data"]?["session"]
            else { continue }
            if trace, let started = feeder.startedAt {
                _ = Console.error(
                    "event at \((at - started).seconds): audio \(session["audio"]?["seconds"]?.numberValue?.double ?? -1) partial \(session["transcription"]?["partial"]?.stringValue ?? "")\n"
                )
            }
            let transcript = session["transcript"]?.stringValue ?? ""
            let partial = session["transcription"]?["partial"]?.stringValue ?? ""
            // The transcript is the settled text, then a space and the partial when both are there.
            let settled = max(0, transcript.utf8.count - partial.utf8.count - (partial.isEmpty ? 0 : 1))
            if settled > (settledAt.last?.bytes ?? 0) { settledAt.append((settled, at)) }
            if !partial.isEmpty && partial != lastPartial { partialsAt.append(at) }
            lastPartial = partial
        }
        let tree = processTree(daemon.pid)
        _ = try client.result("session.end", ["action": "save"])
        let ended = try client.nextEvent("session.ended", timeout: .seconds(60))
        guard let started = feeder.startedAt, let saved = ended["data"]?["meeting"],
            let meetingID = saved["id"]?.stringValue
        else { throw TestFailure("the meeting was not saved: \(ended)") }
        let details = try client.result(
            "meetings.get", ["syncup": .string(id), "meeting": .string(meetingID), "segmentsLimit": 500])
        // The moment the period holding meeting time `t` went into the microphone, in seconds after the first.
        func captured(_ t: Double) -> Double { (t * 10).rounded(.down) / 10 }
        func seconds(_ instant: MonotonicInstant) -> Double { (instant - started).seconds }

        // Each final settles one segment (no turn splits one: each turn comes before its clip's speech), in
        // order: the k-th growth of the settled text is the k-th segment's arrival.
        var partialLatencies: [Double] = []
        var finalLatencies: [Double] = []
        let segmentValues = details["segments"]?.arrayValue ?? []
        if segmentValues.count != settledAt.count {
            print("   (\(engine): \(segmentValues.count) segments, \(settledAt.count) finals seen before the end)")
        }
        let segments = segmentValues.enumerated().map { index, segment in
            (
                start: segment["start"]?.numberValue?.double ?? 0, end: segment["end"]?.numberValue?.double ?? 0,
                at: index < settledAt.count ? seconds(settledAt[index].at) : nil as Double?
            )
        }
        if trace {
            for span in spans {
                _ = Console.error("clip \(span.start) voiced \(span.onset)-\(span.end) stop \(span.stop)\n")
            }
            for (bytes, at) in settledAt { _ = Console.error("settled \(bytes) at \(seconds(at))\n") }
            for at in partialsAt { _ = Console.error("partial at \(seconds(at))\n") }
            for segment in segments { _ = Console.error("segment \(segment)\n") }
            _ = Console.error("transcript \(saved["transcript"]?.stringValue ?? "")\n")
            for line in daemon.log.contents.split(separator: "\n") where line.contains("whisper") {
                _ = Console.error("log \(line)\n")
            }
        }
        for span in spans {
            let onset = captured(span.onset)
            let next = spans.first(where: { $0.start > span.start })?.onset ?? meetingSeconds
            if let first = partialsAt.map(seconds).first(where: { $0 >= onset && $0 < captured(next) }) {
                partialLatencies.append(first - onset)
            }
            if let last = segments.last(where: { $0.end > span.start && $0.start < span.stop }), let at = last.at {
                finalLatencies.append(at - captured(span.end))
            }
        }
        return (
            partialLatencies, finalLatencies,
            (saved["transcript"]?.stringValue ?? "").lowercased().split(separator: " "),
            tree.cpuSeconds - before.cpuSeconds, tree.descendantsCPU - before.descendantsCPU,
            meetingSeconds, tree.peakResidentKiB, spareStartCPUSeconds
        )
    }
}
