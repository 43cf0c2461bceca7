/// Swift's `Duration` as its `Codable` form writes it: `[high, low]`, the two 64-bit halves of a signed 128-bit
/// count of attoseconds. `.seconds(60)` is `[3, 4659767778871345152]`.
public struct DurationPair: Sendable, Hashable {
    public var high: Int64
    public var low: UInt64

    public init(high: Int64, low: UInt64) {
        self.high = high
        self.low = low
    }

    private static let attosecondsPerSecond: Int128 = 1_000_000_000_000_000_000

    public init(_ duration: Duration) {
        let components = duration.components
        let attoseconds = Int128(components.seconds) * Self.attosecondsPerSecond + Int128(components.attoseconds)
        self.high = Int64(truncatingIfNeeded: attoseconds >> 64)
        self.low = UInt64(truncatingIfNeeded: attoseconds)
    }

    /// The longest duration the daemon takes from a file, either way: the app's `Duration` holds up to about
    /// 5 × 10^21 years, and the timer's nanoseconds (`Int64`) overflow past 292.
    public static let maxYears = 100
    private static let maxSeconds = Int128(maxYears) * 365 * 86_400

    /// The duration, or nil when it is longer than `maxYears` (either sign).
    public var durationInRange: Duration? {
        let attoseconds = Int128(high) << 64 | Int128(low)
        let (seconds, remainder) = attoseconds.quotientAndRemainder(dividingBy: Self.attosecondsPerSecond)
        guard seconds.magnitude <= Self.maxSeconds.magnitude else { return nil }
        return Duration(secondsComponent: Int64(seconds), attosecondsComponent: Int64(remainder))
    }
}
