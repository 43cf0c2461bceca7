import Glibc

/// A point on `CLOCK_MONOTONIC`, the clock the event loop's timers run on: it never jumps with wall-clock
/// changes, so a meeting's one-second ticks stay one second apart.
public struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since an arbitrary point (boot, on Linux).
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// Reads the clock.
    public static func now() -> MonotonicInstant {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return MonotonicInstant(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: lhs.nanoseconds + rhs.nanoseconds)
    }

    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
        .nanoseconds(lhs.nanoseconds - rhs.nanoseconds)
    }

    public var description: String { "\(Double(nanoseconds) / 1e9)s" }

    /// Asks `condition` every 10 ms until it holds or `deadline` passes, and returns whether it held: for what
    /// has no descriptor to wait on (a child's exit that another thread reaps). Blocks: off the loop only.
    public static func poll(until deadline: MonotonicInstant, _ condition: () -> Bool) -> Bool {
        while !condition() {
            guard now() < deadline else { return false }
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            nanosleep(&pause, nil)
        }
        return true
    }

    var timeSpec: timespec {
        timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    }
}

extension Duration {
    /// The duration in whole nanoseconds, truncated.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The duration in seconds as a floating-point number.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
