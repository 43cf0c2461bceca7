/// When the session's one-second ticks fall due, on a monotonic clock, without drift.
///
/// Deadlines are `base + n seconds`, never "now + 1 s", so a late wake-up does not push later ticks back:
/// after an hour of running time the tick count equals the elapsed seconds. Pausing keeps the fraction of
/// the second already run, so a pause costs no time and gives none. Pure: the clock is passed in.
public struct TickSchedule: Sendable, Equatable {
    /// Nanoseconds on the caller's monotonic clock.
    public typealias Instant = Int64
    private static let second: Int64 = 1_000_000_000

    /// The next tick's deadline while running; nil while paused.
    public private(set) var nextDeadline: Instant?
    /// While paused: how long the current second still had to run.
    private var remainingAtPause: Int64 = 0

    public init(startingAt now: Instant) {
        nextDeadline = now + Self.second
    }

    /// The deadline of the first tick due at `now`, if any, advancing past it alone (a late wake-up takes its
    /// ticks one at a time, each handled before the next).
    public mutating func takeTick(at now: Instant) -> Instant? {
        guard let deadline = nextDeadline, deadline <= now else { return nil }
        nextDeadline = deadline + Self.second
        return deadline
    }

    /// Whether a tick is due at `now`.
    public func isDue(at now: Instant) -> Bool { nextDeadline.map { $0 <= now } ?? false }

    public mutating func pause(at now: Instant) {
        guard let deadline = nextDeadline else { return }
        remainingAtPause = max(0, deadline - now)
        nextDeadline = nil
    }

    public mutating func resume(at now: Instant) {
        guard nextDeadline == nil else { return }
        nextDeadline = now + remainingAtPause
    }
}
