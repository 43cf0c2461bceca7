/// A person who speaks in a sync-up.
public struct Attendee: Sendable, Hashable, Identifiable {
    public typealias ID = Identifier<Attendee>

    public let id: ID
    public var name: String

    public init(id: ID, name: String = "") {
        self.id = id
        self.name = name
    }
}

extension Attendee {
    /// How a name is shown: `(no name)` for a blank one, empty or whitespace alone as a hand edit of the file
    /// can leave it (the app shows nothing there; a line of spaces would look like no output).
    public static func shown(_ name: String) -> String { isBlank(name) ? "(no name)" : name }

    /// Empty or whitespace alone, without making a trimmed copy.
    public static func isBlank(_ name: String) -> Bool { name.allSatisfy(\.isWhitespace) }
}
