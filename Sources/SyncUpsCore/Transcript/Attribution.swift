/// Gives each recognised word to the attendee whose voice was heard saying it, where the speaker encoder
/// matched it with confidence (`VoiceEvidence`), else to the attendee who had the floor; and groups the words
/// into segments, split wherever the speaker or the way it was decided changes.
///
/// The daemon decides the turns, so the rotation schedule is the diarization (protocol.md, `segments`): each
/// word goes to the turn it overlaps most, its length capped at a second (recognizers stretch a last word
/// over the silence after it); a tie goes to the turn holding the word's midpoint; a word outside every turn
/// goes to the nearest one, except after a last turn that ended before the meeting did (its speaker
/// left): such a word is nobody's.
public enum Attribution {
    /// The longest a word is taken to last.
    public static let maximumWordLength = 1.0
    /// The most words in a segment; a longer stretch of one speaker is split into consecutive segments.
    public static let maximumSegmentWords = 500

    /// Segments for the utterances `utterances` (each a list of words), split wherever the speaker changes.
    public static func segments(
        utterances: [[TranscriptWord]], turns: [SpeakerTurn], voices: [VoiceEvidence] = []
    ) -> [TranscriptSegment] {
        var segments: [TranscriptSegment] = []
        for words in utterances {
            var current: (turn: Int?, voice: Attendee.ID?, words: [TranscriptWord], confidence: Double)? = nil
            for word in words {
                let turn = self.turn(for: word, in: turns)
                let voice = evidence(for: word, in: voices)
                // A segment holds one speaker's words, and at most `maximumSegmentWords` (one reply must hold it).
                if let open = current, open.turn == turn, open.voice == voice?.speaker.id,
                    open.words.count < maximumSegmentWords
                {
                    current?.words.append(word)
                    current?.confidence += voice?.confidence ?? 0
                } else {
                    if let open = current { segments.append(segment(open, turns: turns, voices: voices)) }
                    current = (turn, voice?.speaker.id, [word], voice?.confidence ?? 0)
                }
            }
            if let open = current { segments.append(segment(open, turns: turns, voices: voices)) }
        }
        return segments
    }

    /// The voice heard at the middle of `word` (its length capped as for turns), if one was matched.
    public static func evidence(for word: TranscriptWord, in voices: [VoiceEvidence]) -> VoiceEvidence? {
        let middle = (word.start + min(word.end, word.start + maximumWordLength)) / 2
        return voices.last { $0.holds(middle) }
    }

    /// The index of the turn `word` belongs to, or nil when there are no turns.
    public static func turn(for word: TranscriptWord, in turns: [SpeakerTurn]) -> Int? {
        guard !turns.isEmpty else { return nil }
        let end = min(word.end, word.start + maximumWordLength)
        let middle = (word.start + end) / 2
        var best: (index: Int, overlap: Double, holdsMiddle: Bool)? = nil
        for (index, turn) in turns.enumerated() {
            let turnEnd = turn.end ?? .infinity
            let overlap = min(end, turnEnd) - max(word.start, turn.start)
            let holdsMiddle = turn.start <= middle && middle < turnEnd
            guard overlap > 0 || (overlap == 0 && holdsMiddle) else { continue }
            if let current = best {
                if overlap > current.overlap + 1e-9 || (abs(overlap - current.overlap) <= 1e-9 && holdsMiddle) {
                    best = (index, overlap, holdsMiddle)
                }
            } else {
                best = (index, overlap, holdsMiddle)
            }
        }
        if let best { return best.index }
        // After the last turn ended before the meeting did (its speaker left with nobody after them): nobody's.
        if let lastEnd = turns.last?.end, middle >= lastEnd, turns.last!.start < lastEnd { return nil }
        // Outside every turn: the nearest one.
        return turns.indices.min { distance(middle, turns[$0]) < distance(middle, turns[$1]) }
    }

    private static func distance(_ time: Double, _ turn: SpeakerTurn) -> Double {
        if time < turn.start { return turn.start - time }
        if let end = turn.end, time >= end { return time - end }
        return 0
    }

    private static func segment(
        _ open: (turn: Int?, voice: Attendee.ID?, words: [TranscriptWord], confidence: Double), turns: [SpeakerTurn],
        voices: [VoiceEvidence]
    ) -> TranscriptSegment {
        let words = open.words
        let heard = open.voice.flatMap { id in voices.last { $0.speaker.id == id }?.speaker }
        return TranscriptSegment(
            speaker: heard ?? open.turn.map { turns[$0].speaker },
            start: words.first?.start ?? 0,
            end: words.last?.end ?? 0,
            text: words.map(\.word).joined(separator: " "),
            words: words,
            // The mean over the words, to the thousandth (what the wire says).
            attribution: heard == nil
                ? .floor : .voice(confidence: (open.confidence / Double(words.count) * 1000).rounded() / 1000)
        )
    }
}
