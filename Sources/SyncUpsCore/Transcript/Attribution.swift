/// Gives each recognised word to the attendee who had the floor, and groups the words into segments.
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
    public static func segments(utterances: [[TranscriptWord]], turns: [SpeakerTurn]) -> [TranscriptSegment] {
        var segments: [TranscriptSegment] = []
        for words in utterances {
            var current: (turn: Int?, words: [TranscriptWord])? = nil
            for word in words {
                let turn = self.turn(for: word, in: turns)
                // A segment holds one speaker's words, and at most `maximumSegmentWords` (one reply must hold it).
                if let open = current, open.turn == turn, open.words.count < maximumSegmentWords {
                    current?.words.append(word)
                } else {
                    if let open = current { segments.append(segment(open.words, turn: open.turn, turns: turns)) }
                    current = (turn, [word])
                }
            }
            if let open = current { segments.append(segment(open.words, turn: open.turn, turns: turns)) }
        }
        return segments
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

    private static func segment(_ words: [TranscriptWord], turn: Int?, turns: [SpeakerTurn]) -> TranscriptSegment {
        TranscriptSegment(
            speaker: turn.map { turns[$0].speaker },
            start: words.first?.start ?? 0,
            end: words.last?.end ?? 0,
            text: words.map(\.word).joined(separator: " "),
            words: words
        )
    }
}
