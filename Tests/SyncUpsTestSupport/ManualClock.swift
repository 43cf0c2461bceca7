import SyncUpsPOSIX
import Synchronization

/// A monotonic clock the test moves, for code that takes its clock as a closure (`{ clock.now }`): time
/// passes only when the test says, in steps as small or large as it likes.
public final class ManualClock: Sendable {
    private let nanoseconds = Atomic<Int64>(1_000_000_000)

    public init() {}

    /// A clock no test moves: time that never passes.
    public static let standingStill = ManualClock()

    public var now: MonotonicInstant { MonotonicInstant(nanoseconds: nanoseconds.load(ordering: .relaxed)) }

    public func advance(by duration: Duration) {
        nanoseconds.add(duration.nanoseconds, ordering: .relaxed)
    }
}
