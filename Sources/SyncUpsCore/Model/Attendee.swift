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
