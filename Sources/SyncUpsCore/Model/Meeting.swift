import FoundationEssentials

/// A meeting held by a sync-up: when it started and what was said.
public struct Meeting: Sendable, Hashable, Identifiable {
    public typealias ID = Identifier<Meeting>

    public let id: ID
    public let date: Date
    public var transcript: String

    public init(id: ID, date: Date, transcript: String) {
        self.id = id
        self.date = date
        self.transcript = transcript
    }
}
