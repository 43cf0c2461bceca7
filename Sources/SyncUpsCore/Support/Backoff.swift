/// The growing wait between attempts at something that keeps failing (a write, a connection): `initial`,
/// doubling after each failure up to `maximum`, and back to `initial` once an attempt works. One policy
/// type for every retry (`StoreRetry.backoff` for the user's files: `sync-ups.json`, meetings' details,
/// schedules, voice profiles; the session bus's reconnection; `syncupsctl watch` finding the daemon again),
/// so none counts its own way.
public struct Backoff: Sendable, Equatable {
    public let initial: Duration
    public let maximum: Duration
    /// The wait before the next attempt.
    public private(set) var delay: Duration

    public init(initial: Duration, maximum: Duration) {
        precondition(initial > .zero && maximum >= initial, "a back-off grows from a positive delay")
        self.initial = initial
        self.maximum = maximum
        delay = initial
    }

    /// Whether no attempt has failed since the last that worked.
    public var isAtStart: Bool { delay == initial }

    /// The wait before the attempt after this failure; the one after it doubles.
    public mutating func next() -> Duration {
        let now = delay
        delay = min(delay * 2, maximum)
        return now
    }

    /// An attempt worked: the next failure waits `initial` again.
    public mutating func reset() { delay = initial }
}
