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
        var partialLatency: Double?
        /// From the end of an utterance to its final result.
        var finalLatency: Double?
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
        let directory = "/usr/share/pocketsphinx/test/data/librivox"
        var audio: [UInt8] = []
        for name in ((try? DirectoryListing.names(in: directory)) ?? []).sorted() where name.hasSuffix(".wav") {
            let fd = try FileDescriptor.open(directory + "/" + name, O_RDONLY)
            audio += try fd.readToEnd().dropFirst(44)
            fd.close()
            audio += SpeechFixture.silence(seconds: 0.5)
        }
        return audio
    }

    /// Runs in a child process (so its peak RSS is the engine's): decodes `audio` as fast as possible,
    /// then feeds an utterance at real time to time the first partial.
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

        // Latency, live: a second of silence, an utterance, then silence, all fed in real time. The first
        // partial is timed from the speech's onset; the final from its end (engines without partials, such as
        // a batch Whisper adapter, have only the second).
        var partialLatency: Double? = nil
        var finalLatency: Double? = nil
        do {
            let live = try RecognizerHarness(recognizer)
            let utterance = try SpeechFixture.say(
                "yesterday I finished the review of the quarterly report and today I will deploy it", rate: 140)
            let speech = SpeechFixture.silence(seconds: 1) + utterance + SpeechFixture.silence(seconds: 20)
            let start = MonotonicInstant.now()
            let onset = start + .seconds(1)
            let speechEnd = onset + .milliseconds(Int64(utterance.count / 32))
            var deadline = start
            var offset = 0
            while offset < speech.count && finalLatency == nil {
                let end = min(speech.count, offset + 3200)
                live.stream.feed(Array(speech[offset..<end]), Int64(offset / 2))
                offset = end
                deadline = deadline + .milliseconds(100)
                var spec = timespec(
                    tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
                    tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil)
                let results = live.results
                if partialLatency == nil && results.contains(where: { $0.kind == .partial }) {
                    partialLatency = (MonotonicInstant.now() - onset).seconds
                }
                if results.contains(where: { $0.kind == .final }) {
                    finalLatency = (MonotonicInstant.now() - speechEnd).seconds
                }
            }
            _ = live.finish()
        }
        return Result(
            engine: engine,
            audioSeconds: seconds,
            realTimeFactor: elapsed / seconds,
            partialLatency: partialLatency,
            finalLatency: finalLatency,
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
