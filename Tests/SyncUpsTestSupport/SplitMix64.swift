import Glibc

/// A small seeded generator, so a test's or a benchmark's random data is the same on every run (and a failure
/// names a case that can be replayed).
public struct SplitMix64: RandomNumberGenerator, CustomStringConvertible {
    /// The seed it started from.
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The environment variable that fixes a randomised test's seed, to replay a failure.
    public static let seedVariable = "SYNCUPS_TEST_SEED"

    /// A generator for a randomised test: seeded from `$SYNCUPS_TEST_SEED` when it is set, else with a fresh
    /// seed, so each run tries new cases. Put the generator in the test's failure messages: it says its seed.
    public static func forTest() -> SplitMix64 {
        if let text = getenv(seedVariable).map({ String(cString: $0) }), let seed = UInt64(text) {
            return SplitMix64(seed: seed)
        }
        var system = SystemRandomNumberGenerator()
        return SplitMix64(seed: system.next())
    }

    /// "seed N (SYNCUPS_TEST_SEED=N replays it)", for failure messages.
    public var description: String { "seed \(seed) (\(Self.seedVariable)=\(seed) replays it)" }
}
