import CPocketSphinx
import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// PocketSphinx in process (Debian's 0.8+5prealpha library and its en-us model), streaming on its own
/// thread: partial results while someone speaks, a final one when they stop (voice activity) or when the
/// speaker changes (a forced utterance boundary).
public enum PocketSphinxRecognizer {
    /// Where Debian's `pocketsphinx-en-us` installs its model.
    public struct Model: Sendable, Equatable {
        public var acousticModel: String
        public var languageModel: String?
        /// A JSGF grammar instead of the language model: small vocabularies, deterministic results.
        public var grammar: String?
        public var dictionary: String

        public init(acousticModel: String, languageModel: String?, grammar: String? = nil, dictionary: String) {
            self.acousticModel = acousticModel
            self.languageModel = languageModel
            self.grammar = grammar
            self.dictionary = dictionary
        }

        public static let debian = Model(
            acousticModel: "/usr/share/pocketsphinx/model/en-us/en-us",
            languageModel: "/usr/share/pocketsphinx/model/en-us/en-us.lm.bin",
            dictionary: "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"
        )

        /// True when every file the model needs exists.
        public var isInstalled: Bool {
            let files =
                [FilePath.join(acousticModel, "mdef"), dictionary] + [languageModel, grammar].compactMap { $0 }
            return files.allSatisfy { access($0, R_OK) == 0 }
        }

        var arguments: [String] {
            // No -logfn: logging is turned off with err_set_logfp(nil) instead. A -logfn file is opened by every
            // ps_init and dropped unclosed by the next err_set_logfp: one descriptor lost per meeting.
            // An utterance ends after 0.3 s without speech (the library's default is 0.5 s): the final comes
            // 0.2 s sooner, and the pauses inside a read sentence are still shorter than that.
            var arguments = [
                "-hmm", acousticModel, "-dict", dictionary, "-samprate", String(AudioFormat.sampleRate),
                "-vad_postspeech", "30",
            ]
            if let grammar {
                arguments += ["-jsgf", grammar]
            } else if let languageModel {
                // One pass: the final is the live search's best path, at once. The second (flat lexicon) pass
                // and the lattice's best path ran over the whole utterance when it ended, 0.2-0.5 s of a
                // busy core, and on the LibriVox clips they cost words (WER 31.0 % with, 26.8 % without).
                // At most 3,000 active HMMs a frame (the library's 30,000): under half the CPU (a busy core
                // is what delays a final), the same words on the LibriVox clips; at 1,500 they lose 5 more.
                arguments += ["-lm", languageModel, "-fwdflat", "no", "-bestpath", "no", "-maxhmmpf", "3000"]
            }
            return arguments
        }
    }

    /// A recognizer that loads `model` when a meeting starts (0.2–1 s and ~190 MB, released at its end, so
    /// an idle daemon stays small).
    public static func recognizer(model: Model = .debian) -> SpeechRecognizer {
        SpeechRecognizer(name: "pocketsphinx") { (events) throws(SpeechError) in
            let queue = try RecognizerQueue(events: events)
            do {
                _ = try DedicatedThread(name: "syncups-sphinx") {
                    Decoder.run(model: model, input: queue.items, events: events)
                }
            } catch {
                throw SpeechError("cannot start the recognizer thread: \(error)")
            }
            return queue.stream()
        }
    }
}

/// The decoding loop; everything here runs on the recognizer's one thread.
private struct Decoder {
    /// Samples a second, to turn sample counts into seconds.
    static let framesPerSecond = Double(AudioFormat.sampleRate)

    let decoder: OpaquePointer
    let events: @Sendable (RecognizerEvent) -> Void
    /// Samples fed since the meeting started (the decoder's notion of time, in 1/`AudioFormat.sampleRate` s).
    var fedFrames: Int64 = 0
    /// Where the current utterance started, in samples.
    var utteranceStart: Int64 = 0
    var isInSpeech = false
    var hasAudioInUtterance = false
    var lastPartialAt: Int64 = 0
    var lastPartial = ""
    /// Turns past the audio fed so far, in order: each ends the utterance when the audio reaches its frame.
    /// The loop decides a turn on its clock, and the audio before it can come later (the mixer waits up to
    /// 2 s for the call's; a loaded machine): ended at once, with silence for the audio still to come, the
    /// utterance was cut in two and that audio decoded past the turn, as the next speaker's words.
    var pendingTurns: [Int64] = []

    static func run(
        model: PocketSphinxRecognizer.Model,
        input: BlockingQueue<RecognizerInput>,
        events: @escaping @Sendable (RecognizerEvent) -> Void
    ) {
        err_set_logfp(nil)
        let config = Subprocess.withCStrings(model.arguments) { argv in
            syncups_ps_config(Int32(model.arguments.count), UnsafeMutablePointer(mutating: argv))
        }
        guard let config, let decoder = ps_init(config) else {
            events(.failed("PocketSphinx could not load its model from \(model.acousticModel)"))
            if let config { cmd_ln_free_r(config) }
            while let item = input.pop() {
                if case .finish = item { break }
            }
            events(.finished)
            return
        }
        events(.ready)
        var state = Decoder(decoder: decoder, events: events)
        ps_start_utt(decoder)
        while let item = input.pop() {
            switch item {
            case .audio(let bytes, let startFrame):
                state.feed(bytes, startFrame: startFrame)
            case .turn(let frame, _):
                state.turn(at: frame)
            case .finish:
                state.endUtterance(restart: false)
                ps_free(decoder)
                cmd_ln_free_r(config)
                Memory.releaseFreePages()  // give the model's ~190 MB back to the system
                events(.finished)
                return
            }
        }
    }

    init(decoder: OpaquePointer, events: @escaping @Sendable (RecognizerEvent) -> Void) {
        self.decoder = decoder
        self.events = events
    }

    /// A new speaker from `frame` on: the utterance ends there, now if the audio has reached it, else when it does.
    mutating func turn(at frame: Int64) {
        if frame <= fedFrames {
            endUtterance()
        } else {
            pendingTurns.append(frame)
        }
    }

    /// Feeds silence up to `frame` when audio went missing (dropped by a full queue), so times stay aligned.
    mutating func catchUp(to frame: Int64) {
        let missing = frame - fedFrames
        guard missing > 0 else { return }
        if missing > 5 * AudioFormat.sampleRate {
            // A long gap: start afresh at the new position rather than decode seconds of zeros (the turns
            // within it end nothing more).
            endUtterance()
            fedFrames = frame
            utteranceStart = frame
            pendingTurns.removeAll { $0 <= frame }
            return
        }
        let silence = [Int16](repeating: 0, count: Int(missing))
        process(silence)
    }

    mutating func feed(_ bytes: [UInt8], startFrame: Int64) {
        catchUp(to: startFrame)
        let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        process(samples)
        let inSpeech = ps_get_in_speech(decoder) != 0
        if inSpeech {
            isInSpeech = true
            // A provisional result up to four times a second while someone speaks; asked for at every chunk
            // until the first one has words, so the first comes as soon as the search has any.
            if fedFrames - lastPartialAt >= 4_000 { publishPartial() }
        } else if isInSpeech {
            // Voice activity ended: the utterance is over.
            endUtterance()
        }
    }

    /// Decodes `samples`, the next audio, ending the utterance at each pending turn they reach.
    mutating func process(_ samples: [Int16]) {
        var rest = samples[...]
        while let turn = pendingTurns.first, turn <= fedFrames + Int64(rest.count) {
            let count = Int(turn - fedFrames)
            decode(rest.prefix(count))
            rest = rest.dropFirst(count)
            pendingTurns.removeFirst()
            endUtterance()
        }
        decode(rest)
    }

    private mutating func decode(_ samples: ArraySlice<Int16>) {
        guard !samples.isEmpty else { return }
        samples.withUnsafeBufferPointer { buffer in
            _ = ps_process_raw(decoder, buffer.baseAddress, buffer.count, 0, 0)
        }
        fedFrames += Int64(samples.count)
        hasAudioInUtterance = true
    }

    mutating func publishPartial() {
        var score: Int32 = 0
        guard let hypothesis = ps_get_hyp(decoder, &score) else { return }
        let text = String(cString: hypothesis)
        guard !text.isEmpty else { return }
        lastPartialAt = fedFrames
        guard text != lastPartial else { return }
        lastPartial = text
        let start = Double(utteranceStart) / Self.framesPerSecond
        events(
            .result(
                RecognitionResult(
                    kind: .partial, text: text, start: start, end: Double(fedFrames) / Self.framesPerSecond, words: []))
        )
    }

    /// Ends the utterance, reports its final result with word timings, and (unless finishing) starts the next.
    mutating func endUtterance(restart: Bool = true) {
        if hasAudioInUtterance {
            ps_end_utt(decoder)
            var score: Int32 = 0
            let text = ps_get_hyp(decoder, &score).map { String(cString: $0) } ?? ""
            let words = collectWords()
            // One that settled to nothing after partials says so (an empty final): its partial was a guess
            // the search gave up (a grammar's half sentence, noise), not words to keep.
            if !text.isEmpty || !words.isEmpty || !lastPartial.isEmpty {
                events(
                    .result(
                        RecognitionResult(
                            kind: .final,
                            text: text.isEmpty ? words.map(\.word).joined(separator: " ") : text,
                            start: words.first?.start ?? Double(utteranceStart) / Self.framesPerSecond,
                            end: words.last?.end ?? Double(fedFrames) / Self.framesPerSecond,
                            words: words
                        )
                    )
                )
            }
            if restart { ps_start_utt(decoder) }
        }
        utteranceStart = fedFrames
        lastPartialAt = fedFrames
        lastPartial = ""
        isInSpeech = false
        hasAudioInUtterance = false
    }

    /// The utterance's words with times on the meeting's clock. PocketSphinx numbers frames (10 ms) from an
    /// origin of its own, and its voice-activity filter drops the silence before the speech without counting
    /// it, so the utterance's frames are anchored at its end: its last frame is the audio fed last (the
    /// utterance ends when speech does, at a turn, or at the meeting's end). Anchored at the start, words
    /// after a silence came out early by the silence's length (2 s after a 2 s pause), and could go to the
    /// speaker before.
    func collectWords() -> [TranscriptWord] {
        var spans: [(word: String, start: Int32, end: Int32)] = []
        var last: Int32 = 0
        var segment = ps_seg_iter(decoder)
        while let current = segment {
            var startFrame: Int32 = 0
            var endFrame: Int32 = 0
            ps_seg_frames(current, &startFrame, &endFrame)
            last = max(last, endFrame)
            if let raw = ps_seg_word(current), let word = Self.spokenWord(String(cString: raw)) {
                spans.append((word, startFrame, endFrame))
            }
            segment = ps_seg_next(current)
        }
        let end = Double(fedFrames) / Self.framesPerSecond
        let earliest = Double(utteranceStart) / Self.framesPerSecond
        func time(_ frame: Int32) -> Double { max(earliest, end - Double(last + 1 - frame) / 100) }
        return spans.map { TranscriptWord(word: $0.word, start: time($0.start), end: time($0.end + 1)) }
    }

    /// The word without PocketSphinx's markers: nil for `<s>`, `</s>`, `<sil>` and fillers like `[NOISE]`
    /// or `++UH++`; `a(2)` (an alternate pronunciation) becomes `a`.
    static func spokenWord(_ raw: String) -> String? {
        if raw.hasPrefix("<") || raw.hasPrefix("[") || raw.hasPrefix("+") { return nil }
        if let parenthesis = raw.firstIndex(of: "(") { return String(raw[..<parenthesis]) }
        return raw
    }
}
