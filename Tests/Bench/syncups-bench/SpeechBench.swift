import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsSpeech
import SyncUpsTestSupport

/// The speech engines on recorded speech: real-time factor, partial latency, peak memory.
enum SpeechBench {
    struct Result {
        var engine: String
        var audioSeconds: Double
        var realTimeFactor: Double
        /// Live, per clip: from the onset of its speech to its first partial (clips without one are left out).
        var partialLatencies: [Double]
        /// Live, per clip: from the end of its speech to the final that covers it.
        var finalLatencies: [Double]
        var clips: Int
        /// The live run's finals against the reference.
        var liveWordErrorRate: Double
        /// The recognizer's CPU (this process and its engine process) per second of live audio.
        var cpuSecondsPerMeetingSecond: Double
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

    /// This process's CPU seconds, and those of its living descendants (an engine and its launcher) from /proc:
    /// they are counted before they exit, which `RUSAGE_CHILDREN` would not do for a grandchild.
    static func cpuSecondsOfSelfAndDescendants() -> Double {
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
                if parent == getpid() { return true }
                current = parent
            }
            return false
        }
        return ProcessSample.cpuSeconds(getpid())
            + parents.keys.filter(descends).map { ProcessSample.cpuSeconds($0) }.reduce(0, +)
    }

    /// Runs in a child process (so its peak RSS and CPU are the engine's): decodes `audio` as fast as possible,
    /// then feeds the clips in real time to time partials and finals.
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

        // Live: the clips fed in real time (100 ms every 100 ms, as the recorder feeds the engine), 2 s of
        // silence first (the engine loads meanwhile) and after each. For each clip: its first partial from its
        // speech's onset, and the final that covers its end from its speech's end (both from the clip's audio,
        // by level), read every 100 ms. A result belongs to the clip its times overlap.
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
        speech += SpeechFixture.silence(seconds: 3)  // time for the last clip's final
        let live = try RecognizerHarness(recognizer)
        let cpuBefore = ProcessSample.cpuSeconds(getpid())
        let liveStart = MonotonicInstant.now()
        var arrivals: [(result: RecognitionResult, at: Double)] = []
        var deadline = liveStart
        var offset = 0
        while offset < speech.count {
            let end = min(speech.count, offset + 3200)
            live.stream.feed(Array(speech[offset..<end]), Int64(offset / 2))
            offset = end
            deadline = deadline + .milliseconds(100)
            var spec = timespec(
                tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil)
            let results = live.results
            let now = (MonotonicInstant.now() - liveStart).seconds
            for result in results.dropFirst(arrivals.count) { arrivals.append((result, now)) }
        }
        let cpu = cpuSecondsOfSelfAndDescendants() - cpuBefore
        _ = live.finish(timeout: .seconds(120))
        var partialLatencies: [Double] = []
        var finalLatencies: [Double] = []
        for span in spans {
            let mine = arrivals.filter { $0.result.end > span.start && $0.result.start < span.stop }
            if let first = mine.first(where: { $0.result.kind == .partial }) {
                partialLatencies.append(first.at - span.onset)
            }
            if let last = mine.last(where: { $0.result.kind == .final }) { finalLatencies.append(last.at - span.end) }
        }
        let liveWords = live.finals.flatMap { $0.text.lowercased().split(separator: " ") }
        let liveWordErrorRate = wordErrorRate(
            liveWords.map { $0.filter { $0.isLetter || $0 == "'" } }, referenceWords())
        return Result(
            engine: engine,
            audioSeconds: seconds,
            realTimeFactor: elapsed / seconds,
            partialLatencies: partialLatencies,
            finalLatencies: finalLatencies,
            clips: spans.count,
            liveWordErrorRate: liveWordErrorRate,
            cpuSecondsPerMeetingSecond: cpu / (Double(speech.count) / 32_000),
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
}
