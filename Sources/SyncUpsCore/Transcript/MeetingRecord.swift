/// What a recognizer reported: a provisional tail (replaced by the next result) or settled text with its
/// words, times in seconds from the meeting's start.
public struct RecognizedSpeech: Sendable, Equatable {
    public var isFinal: Bool
    public var text: String
    public var words: [TranscriptWord]

    public init(isFinal: Bool, text: String, words: [TranscriptWord] = []) {
        self.isFinal = isFinal
        self.text = text
        self.words = words
    }
}

/// Who had the floor when, and what was said: the meeting's transcript and its attribution, kept together.
/// Each settled utterance is attributed once, as it comes (the turns up to then are all the turns its words
/// can fall in), so adding one costs its own length, not the meeting's.
public struct MeetingRecord: Sendable, Equatable {
    public private(set) var turns: [SpeakerTurn] = []
    public private(set) var segments: [TranscriptSegment] = []
    public private(set) var assembly = TranscriptAssembly()
    /// Transcription failed: the transcript ends with ` ❌` and takes no more words.
    public private(set) var hasFailed = false
    /// The daemon stopped mid-meeting; what there was is saved.
    public var isInterrupted = false

    public init() {}

    /// The transcript: settled text, the provisional tail, and ` ❌` where transcription failed (the app's
    /// `speechFailure`, only when something was transcribed).
    public var transcript: String {
        let text = assembly.text
        return hasFailed && !text.isEmpty ? text + " ❌" : text
    }

    public mutating func add(_ speech: RecognizedSpeech) {
        guard !hasFailed else { return }
        assembly.add(kind: speech.isFinal, text: speech.text, words: speech.words)
        if speech.isFinal { segments += Attribution.segments(utterances: [speech.words], turns: turns) }
    }

    public mutating func markFailure() {
        hasFailed = true
    }

    /// `speaker` has the floor from `time`; the turn before ends there.
    public mutating func beginTurn(_ speaker: Attendee, at time: Double) {
        endTurn(at: time)
        turns.append(SpeakerTurn(speaker: speaker, start: time))
    }

    /// The current turn ends at `time` (the meeting's end).
    public mutating func endTurn(at time: Double) {
        guard !turns.isEmpty, turns[turns.count - 1].end == nil else { return }
        turns[turns.count - 1].end = time
    }
}
