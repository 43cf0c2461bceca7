import FoundationEssentials

/// A UUID tagged with the type it identifies, so a meeting id cannot be passed where a sync-up id is expected.
///
/// The SyncUps app uses `Tagged<Self, UUID>`; this is the same idea in ten lines.
public struct Identifier<Tag>: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UUID

    public init(_ rawValue: UUID) {
        self.rawValue = rawValue
    }

    /// Parses a UUID string in either case.
    public init?(uuidString: String) {
        guard let uuid = UUID(uuidString: uuidString) else { return nil }
        self.rawValue = uuid
    }

    /// The canonical form: upper-case, as the app's `JSONEncoder` writes UUIDs.
    public var description: String { rawValue.uuidString }

    public static func < (lhs: Identifier, rhs: Identifier) -> Bool {
        lhs.rawValue.uuidString < rhs.rawValue.uuidString
    }
}

/// Makes new UUIDs; live it is random, in tests it counts up like swift-dependencies' `.incrementing`.
public struct UUIDGenerator: Sendable {
    private let generate: @Sendable () -> UUID

    public init(_ generate: @escaping @Sendable () -> UUID) {
        self.generate = generate
    }

    public func callAsFunction() -> UUID { generate() }

    /// Random version-4 UUIDs.
    public static let random = UUIDGenerator { UUID() }

    /// `00000000-0000-0000-0000-000000000000`, `…0001`, … in order, as the app's tests use.
    public static func incrementing() -> UUIDGenerator {
        let counter = AtomicCounter()
        return UUIDGenerator { UUID(counting: counter.next()) }
    }
}

extension UUID {
    /// The UUID whose last 12 hex digits spell `value`: `UUID(counting: 3)` is `00000000-0000-0000-0000-000000000003`.
    public init(counting value: Int) {
        let hex = String(value, radix: 16, uppercase: true)
        let padded = String(repeating: "0", count: max(0, 12 - hex.count)) + hex
        self.init(uuidString: "00000000-0000-0000-0000-" + padded)!
    }
}
