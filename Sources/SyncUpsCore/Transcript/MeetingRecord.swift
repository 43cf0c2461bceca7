/// What a recognizer reported: a provisional tail (replaced by the next result) or settled text with its
/// words, times in seconds from the meeting's start.
public struct RecognizedSpeech: Sendable, Equatable {
    public var isFinal: Bool
    public var text: String
    public var words: [TranscriptWord]
    /// The stretch of audio it covers, when the recognizer says (what places a final without words).
    public var start: Double?
    public var end: Double?

    public init(isFinal: Bool, text: String, words: [TranscriptWord] = [], start: Double? = nil, end: Double? = nil) {
        self.isFinal = isFinal
        self.text = text
        self.words = words
        self.start = start
        self.end = end
    }
}

/// Who had the floor when, and what was said: the meeting's transcript and its attribution, kept together.
/// Adding a result costs its own length, not the meeting's: the transcript is appended to in place, and
/// each settled utterance is attributed once, as it comes (the turns up to then are all the turns its words
/// can fall in).
public struct MeetingRecord: Sendable, Equatable {
    public private(set) var turns: [SpeakerTurn] = []
    public private(set) var segments: [TranscriptSegment] = []
    /// When the timer stood still (for `MeetingInsights`: floor time excludes it).
    public private(set) var pauses: [TimerPause] = []
    /// The latest voices matched (`addVoice`): what the next words are attributed with. Only the recent ones
    /// are kept: words arrive seconds after they were said, not minutes.
    public private(set) var voices: [VoiceEvidence] = []
    public static let keptVoices = 64
    /// The transcript: the settled text, then the provisional tail, and ` ❌` where transcription failed
    /// (the app's `speechFailure`, only when something was transcribed).
    public private(set) var transcript = ""
    /// The provisional tail alone.
    public private(set) var partial = ""
    /// The stretch of audio the provisional tail covers, as the recognizer said.
    private var partialStart: Double?
    private var partialEnd: Double?
    /// The UTF-8 length of the settled part of `transcript`.
    private var settledBytes = 0
    /// Transcription failed: the transcript takes no more words.
    public private(set) var hasFailed = false
    /// The daemon stopped mid-meeting; what there was is saved.
    public var isInterrupted = false
    /// The latest time a turn or a pause began or ended at: the record's times never go back (a tick
    /// stamped with its deadline may be handled after a request stamped later).
    private var latest = 0.0

    public init() {}

    /// The settled text only (what a journal keeps).
    public var finalText: String { String(transcript.utf8.prefix(settledBytes)) ?? "" }

    /// Adds a result; returns whether anything changed (a final always settles something).
    @discardableResult
    public mutating func add(_ speech: RecognizedSpeech) -> Bool {
        guard !hasFailed else { return false }
        let text = speech.text.trimmingWhitespace()
        if !speech.isFinal {
            // The same words again keep the times of the latest (they are where the tail is settled).
            (partialStart, partialEnd) = (speech.start, speech.end)
            guard text != partial else { return false }
            partial = text
            dropProvisionalTail()
            if !text.isEmpty { transcript += (settledBytes > 0 ? " " : "") + text }
            return true
        }
        partial = ""
        dropProvisionalTail()
        if !text.isEmpty {
            transcript += (settledBytes > 0 ? " " : "") + text
            settledBytes = transcript.utf8.count
        }
        if !speech.words.isEmpty {
            segments += Attribution.segments(utterances: [speech.words], turns: turns, voices: voices)
        } else if !text.isEmpty {
            // No word timings (protocol.md allows it): the text still goes to whoever had the floor then.
            segments.append(Self.untimedSegment(text, start: speech.start, end: speech.end, turns: turns))
        }
        return true
    }

    /// Words without timings, over `start`…`end` where the recognizer placed them (in order, whatever it said;
    /// from the last turn's start if it did not), to whoever had the floor there.
    public static func untimedSegment(_ text: String, start: Double?, end: Double?, turns: [SpeakerTurn])
        -> TranscriptSegment
    {
        let given = start ?? turns.last?.start ?? 0
        let (start, end) = (min(given, end ?? given), max(given, end ?? given))
        let turn = Attribution.turn(for: TranscriptWord(word: "", start: start, end: end), in: turns)
        return TranscriptSegment(speaker: turn.map { turns[$0].speaker }, start: start, end: end, text: text, words: [])
    }

    /// Where the provisional tail lies, as the recognizer said (for the journal: a crash settles it there).
    public var partialSpan: (start: Double?, end: Double?) { (partialStart, partialEnd) }

    /// The meeting is saved with a provisional tail that no final replaced (a recognizer cut off by the end, or
    /// one whose last utterance settled to nothing, as PocketSphinx's grammar search does with half a sentence):
    /// the tail is settled as it stands, so that the saved transcript has no words its segments lack. Its
    /// speaker is whoever had the floor where it lies (it has no word timings).
    public mutating func settleProvisionalTail() {
        guard !partial.isEmpty, !hasFailed else { return }
        add(RecognizedSpeech(isFinal: true, text: partial, start: partialStart, end: partialEnd))
    }

    /// A voice was matched over `evidence`'s stretch. Segments already attributed there are attributed again
    /// (their words split where the voice says another spoke them); returns the segments that changed, as they
    /// are now, for the correction event (empty if none did).
    @discardableResult
    public mutating func addVoice(_ evidence: VoiceEvidence) -> [TranscriptSegment] {
        voices.append(evidence)
        if voices.count > Self.keptVoices { voices.removeFirst(voices.count - Self.keptVoices) }
        var corrected: [TranscriptSegment] = []
        var index = segments.count - 1
        // Newest first: only the last segments can lie where a voice was just heard.
        while index >= 0, segments[index].end >= evidence.start - Attribution.maximumWordLength {
            let segment = segments[index]
            if !segment.words.isEmpty, segment.start < evidence.end {
                let again = Attribution.segments(utterances: [segment.words], turns: turns, voices: voices)
                if again != [segment] {
                    segments.replaceSubrange(index...index, with: again)
                    corrected.insert(contentsOf: again, at: 0)
                }
            }
            index -= 1
        }
        return corrected
    }

    /// Transcription failed: the words so far stay, the provisional ones settled (the transcript keeps them
    /// before its ` ❌`, so its segments do too).
    public mutating func markFailure() {
        guard !hasFailed else { return }
        settleProvisionalTail()
        hasFailed = true
        if !transcript.isEmpty { transcript += " ❌" }
    }

    /// `speaker` has the floor from `time`; the turn before ends there.
    public mutating func beginTurn(_ speaker: Attendee, at time: Double) {
        let time = moment(time)
        endTurn(at: time)
        turns.append(SpeakerTurn(speaker: speaker, start: time))
    }

    /// The current turn ends at `time` (the meeting's end).
    public mutating func endTurn(at time: Double) {
        guard !turns.isEmpty, turns[turns.count - 1].end == nil else { return }
        turns[turns.count - 1].end = moment(time)
    }

    /// The most pauses a record keeps, give or take two a turn: at it, the older half are merged (`stopTimer`),
    /// so a client pausing and resuming in a loop cannot grow the record without end.
    public static let maxPauses = 1_000

    /// The timer stops at `time` (a pause, the wait for `end`, the save), unless it stands still already.
    /// A pause that begins where the last one ended (or before: times never go back) continues it.
    public mutating func stopTimer(at time: Double) {
        guard let last = pauses.last else {
            pauses.append(TimerPause(start: moment(time)))
            return
        }
        guard let lastEnd = last.end else { return }
        let time = moment(time)
        if time <= lastEnd {
            pauses[pauses.count - 1].end = nil
            return
        }
        if pauses.count >= Self.maxPauses { mergeOlderPauses() }
        pauses.append(TimerPause(start: time))
    }

    /// Merges the older half of the pauses: those that lie within one turn (between two consecutive moments a
    /// turn began or ended, or the meeting was ended) become one pause as long as all of them together, ending
    /// where the last ended. The time the timer stood still stays what it was, and within each turn too, so
    /// each floor in `MeetingInsights` is exact however many pauses there were; only where the paused time
    /// lies within a turn moves. A pause across such a moment is kept as it is.
    private mutating func mergeOlderPauses() {
        var boundaries = turns.flatMap { [$0.start] + ($0.end.map { [$0] } ?? []) }
        if let endedAt { boundaries.append(endedAt) }
        boundaries.sort()
        let older = pauses.count / 2
        var merged: [TimerPause] = []
        merged.reserveCapacity(pauses.count)
        var next = 0  // the first boundary after the current pause's start
        var group: (window: Int, stood: Double, end: Double)?
        func close() {
            guard let current = group else { return }
            merged.append(TimerPause(start: current.end - current.stood, end: current.end))
            group = nil
        }
        for pause in pauses[..<older] {
            let end = pause.end ?? pause.start
            while next < boundaries.count, boundaries[next] <= pause.start { next += 1 }
            // Across a boundary: as it is.
            if next < boundaries.count, boundaries[next] < end {
                close()
                merged.append(pause)
                continue
            }
            if let current = group, current.window == next {
                group = (next, current.stood + (end - pause.start), end)
            } else {
                close()
                group = (next, end - pause.start, end)
            }
        }
        close()
        merged += pauses[older...]
        pauses = merged
    }

    /// The timer runs again from `time`.
    public mutating func startTimer(at time: Double) {
        guard !pauses.isEmpty, pauses[pauses.count - 1].end == nil else { return }
        pauses[pauses.count - 1].end = moment(time)
    }

    /// When the meeting was ended (time up, `session.end`, `next` at the last speaker), while it waits to be
    /// saved: the end of its real time for `MeetingInsights`, and where a crash's open turn is closed.
    public private(set) var endedAt: Double?

    /// The meeting was ended at `time` (nil: resumed, it goes on); the first end counts until then.
    public mutating func markEnded(at time: Double?) {
        guard let time else {
            endedAt = nil
            return
        }
        if endedAt == nil { endedAt = moment(time) }
    }

    /// The meeting is over at `time`: any pause ends there, and the last turn where the meeting ended (`endedAt`,
    /// before the save's wait), else there too: no turn runs past the meeting's end.
    public mutating func finish(at time: Double) {
        if let endedAt, let last = turns.last, last.end == nil, last.start <= endedAt {
            turns[turns.count - 1].end = endedAt
        }
        endTurn(at: time)
        startTimer(at: time)
    }

    /// The meeting's timeline, for its details file.
    public func timeline(durationSeconds: Int) -> MeetingTimeline {
        MeetingTimeline(durationSeconds: durationSeconds, turns: turns, pauses: pauses, end: endedAt)
    }

    /// `time`, or the latest time recorded if that is later; recorded as the latest.
    private mutating func moment(_ time: Double) -> Double {
        latest = max(latest, time)
        return latest
    }

    /// Removes the provisional tail from `transcript`, in place.
    private mutating func dropProvisionalTail() {
        guard transcript.utf8.count > settledBytes else { return }
        let cut = transcript.utf8.index(transcript.utf8.startIndex, offsetBy: settledBytes)
        transcript.removeSubrange(cut...)
    }
}
