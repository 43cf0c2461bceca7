/// "did you mean …?" for a mistyped name, as git does: the one edit-distance rule for commands, options,
/// themes and configuration keys.
public enum Suggestion {
    /// The candidate nearest to `typed` (ignoring case), if it is near enough to be what was meant: at most
    /// a third of the typed length in edits (a swap of two letters counts as one), and at least one.
    /// Nothing is suggested for a longer word: no name is that long, and a client's megabyte of a name must
    /// not cost a megabyte of comparisons per candidate.
    static let longestWord = 64

    public static func nearest(to typed: String, among candidates: some Sequence<String>) -> String? {
        guard typed.utf8.count <= longestWord * 4 else { return nil }
        let word = Array(typed.lowercased())
        guard word.count <= longestWord else { return nil }
        let limit = max(1, word.count / 3)
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let other = Array(candidate.lowercased())
            guard abs(other.count - word.count) <= limit else { continue }  // more edits than that already
            let distance = self.distance(word, other)
            if distance <= limit, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// ` (did you mean "x"?)` for an error message, or nothing.
    public static func phrase(for typed: String, among candidates: some Sequence<String>) -> String {
        nearest(to: typed, among: candidates).map { " (did you mean \"\($0)\"?)" } ?? ""
    }

    /// The optimal string alignment distance: insertions, deletions, substitutions and transpositions of
    /// neighbours, one each.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
