/// Finds the item an id refers to, given in full or as a unique prefix of at least four characters (like git).
public enum IDPrefix {
    /// The shortest prefix accepted.
    public static let minimumLength = 4

    public enum Resolution: Equatable, Sendable {
        case found(Int)
        case notFound
        /// Every match, in the order of the items.
        case ambiguous([Int])
        case tooShort
    }

    /// Matches `text` (any case) against the canonical ids of `ids`, in one pass: the definition, and the
    /// quickest way for a one-off lookup; for many lookups in the same ids keep an `IDIndex`, which answers
    /// exactly the same.
    public static func resolve(_ text: String, in ids: [String]) -> Resolution {
        let needle = text.uppercased()
        if let exact = ids.firstIndex(of: needle) { return .found(exact) }
        guard needle.count >= minimumLength else { return .tooShort }
        let matches = ids.indices.filter { ids[$0].hasPrefix(needle) }
        switch matches.count {
        case 0: return .notFound
        case 1: return .found(matches[0])
        default: return .ambiguous(matches)
        }
    }
}
