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
    static func referenceWords() -> [Substring] {
        let path = "/usr/share/pocketsphinx/test/data/librivox/transcription"
        guard let fd = try? FileDescriptor.open(path, O_RDONLY), let bytes = try? fd.readToEnd() else { return [] }
        fd.close()
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").sorted { $0.suffix(8) < $1.suffix(8) }
            .flatMap { line in line.split(separator: " ").filter { !$0.hasPrefix("<") && !$0.hasPrefix("(") } }
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
    /// are counted before they exit, which `RUSAGE_CHILDREN` would not do for a grandchild; and the largest
    /// peak resident size among them.
    static func processTree(_ root: pid_t) -> (cpuSeconds: Double, peakResidentKiB: Int) {
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
        let tree = [root] + parents.keys.filter(descends)
        return (
            tree.map { ProcessSample.cpuSeconds($0) }.reduce(0, +),
            tree.map { ProcessSample.statusField($0, "VmHWM:") ?? 0 }.max() ?? 0
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

    /// The live figures, through the daemon's real microphone path: syncupsd records from ALSA's `file`
    /// plugin reading a FIFO that is fed in real time (100 ms every 100 ms), and a client subscribed to the
    /// session times the `session.transcript` events. Latencies run from the moment the 100 ms period
    /// holding the sample went into the microphone (the FIFO) to the event's arrival on the socket.
    struct Live {
        /// Per clip: from the onset of its speech to its first partial (clips without one are left out).
        var partialLatencies: [Double]
        /// Per clip: from the end of its speech to the final that covers it.
        var finalLatencies: [Double]
        var clips: Int
        /// The saved meeting's transcript against the reference.
        var wordErrorRate: Double
        /// The daemon's CPU and its engine's, per second of meeting.
        var cpuSecondsPerMeetingSecond: Double
        var peakResidentKiB: Int
    }

    static func live(engine: String, command: String?) throws -> Live {
        // 2 s of silence first (the engine loads meanwhile) and after each clip, 3 s at the end.
        let clips = try librivoxClips()
        let gap = SpeechFixture.silence(seconds: 2)
        var speech = gap
        var spans: [(onset: Double, end: Double, start: Double, stop: Double)] = []
        for clip in clips {
            let base = Double(speech.count) / 32_000
            let voiced = voicedSpan(clip)
            spans.append((base + voiced.onset, base + voiced.end, base, base + Double(clip.count) / 32_000))
            speech += clip + gap
        }
        speech += SpeechFixture.silence(seconds: 3)
        let meetingSeconds = Double(speech.count) / 32_000

        let alsa = try ALSAFixture(paced: true)
        var arguments = ["--audio-device", "virtmic", "--no-cue", "--speech-engine", engine]
        if let command { arguments += ["--speech-command", command] }
        let daemon = try DaemonProcess(arguments: arguments, environment: alsa.environment)
        defer { _ = daemon.stop() }
        let feeder = try PacedFeeder(fifo: alsa.microphonePath, audio: speech)
        defer { feeder.stop() }
        let client = try daemon.client()
        let created = try client.result("syncups.create", ["title": "Bench", "duration": 600, "attendees": ["Ann"]])
        let id = created["id"]!.stringValue!
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        let cpuBefore = processTree(daemon.pid).cpuSeconds
        _ = try client.result("session.start", ["syncup": .string(id), "call": false])

        // Every change of the settled text (a final) and of the provisional tail (a partial), with its arrival.
        var settledAt: [(bytes: Int, at: MonotonicInstant)] = []
        var partialsAt: [MonotonicInstant] = []
        var lastPartial = ""
        var fedTo: MonotonicInstant?
        let trace = getenv("SYNCUPS_BENCH_SPEECH_TRACE") != nil
        while fedTo == nil || MonotonicInstant.now() < fedTo! {
            if fedTo == nil, let started = feeder.startedAt {
                fedTo = started + .milliseconds(Int64(meetingSeconds * 1000))
            }
            let line: String
            do {
                guard let read = try client.readLine(timeout: .milliseconds(200)) else {
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
        guard let started = feeder.startedAt, let meeting = ended["data"]?["meeting"],
            let meetingID = meeting["id"]?.stringValue
        else { throw TestFailure("the meeting was not saved: \(ended)") }
        let details = try client.result(
            "meetings.get", ["syncup": .string(id), "meeting": .string(meetingID), "segmentsLimit": 500])
        // The moment the period holding meeting time `t` went into the microphone, in seconds after the first.
        func captured(_ t: Double) -> Double { (t * 10).rounded(.down) / 10 }
        func seconds(_ instant: MonotonicInstant) -> Double { (instant - started).seconds }

        // Each final settles one segment (one attendee: no turn splits it), in order: the k-th growth of the
        // settled text is the k-th segment's arrival.
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
            _ = Console.error("transcript \(meeting["transcript"]?.stringValue ?? "")\n")
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
        let words = (meeting["transcript"]?.stringValue ?? "").lowercased().split(separator: " ")
        return Live(
            partialLatencies: partialLatencies,
            finalLatencies: finalLatencies,
            clips: spans.count,
            wordErrorRate: wordErrorRate(words.map { $0.filter { $0.isLetter || $0 == "'" } }, referenceWords()),
            cpuSecondsPerMeetingSecond: (tree.cpuSeconds - cpuBefore) / meetingSeconds,
            peakResidentKiB: tree.peakResidentKiB
        )
    }
}
