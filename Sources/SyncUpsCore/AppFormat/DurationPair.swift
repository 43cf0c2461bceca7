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

    public var duration: Duration {
        let attoseconds = Int128(high) << 64 | Int128(low)
        let (seconds, remainder) = attoseconds.quotientAndRemainder(dividingBy: Self.attosecondsPerSecond)
        return Duration(secondsComponent: Int64(seconds), attosecondsComponent: Int64(remainder))
    }
}
