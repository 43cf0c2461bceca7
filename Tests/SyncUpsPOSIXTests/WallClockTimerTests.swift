import Glibc
import SyncUpsPOSIX
import Testing

/// The schedules' timer on the real wall clock (CLOCK_REALTIME, absolute), and on a manual loop one of the
/// loop's timers, due when the caller's wall clock reaches the deadline.
@Suite struct WallClockTimerTests {
    static func realtime() -> (seconds: Int64, nanoseconds: Int) {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return (Int64(spec.tv_sec), spec.tv_nsec)
    }

    /// Armed for the second after next, it fires once the wall clock reaches it, not before, and without
    /// delay (deadline 5 s: a guard against a hang; the wait is at most 2 s).
    @Test func firesWhenTheWallClockReachesItsSecondNotBefore() throws {
        let loop = try EventLoop()
        var firings: [(Int64, Int)] = []
        let timer = try WallClockTimer(loop: loop) { clockWasSet in
            #expect(!clockWasSet)
            firings.append(Self.realtime())
        }
        let deadline = Self.realtime().seconds + 2
        timer.arm(at: deadline)
        #expect(timer.deadline == deadline)
        let guardTime = MonotonicInstant.now() + .seconds(5)
        while firings.isEmpty, MonotonicInstant.now() < guardTime { loop.runOnce(timeoutMilliseconds: 100) }
        let fired = try #require(firings.first, "not fired by \(deadline)")
        #expect(fired.0 >= deadline, "fired at \(fired) before \(deadline)")
        #expect(fired.0 <= deadline + 1, "fired at \(fired), more than a second after \(deadline)")
        #expect(timer.deadline == nil)
        // Disarmed, it stays quiet.
        timer.arm(at: nil)
        loop.runOnce(timeoutMilliseconds: 200)
        #expect(firings.count == 1)
    }

    /// On a manual loop it fires when virtual time brings the caller's wall clock to the deadline, once;
    /// armed again, the new deadline replaces the old.
    @Test func onAManualLoopFiresWhenVirtualTimeReachesTheDeadline() throws {
        let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        let loop = try EventLoop(clock: .manual(startingAt: start))
        let wall = { 1_809_334_770 + (loop.now() - start).nanoseconds / 1_000_000_000 }
        var firings: [Int64] = []
        let timer = try WallClockTimer(loop: loop, now: wall) { _ in firings.append(wall()) }
        timer.arm(at: 1_809_334_800)
        timer.arm(at: 1_809_334_790)
        loop.advanceTime(by: .seconds(19))
        #expect(firings.isEmpty)
        loop.advanceTime(by: .seconds(1))
        #expect(firings == [1_809_334_790])
        loop.advanceTime(by: .seconds(60))
        #expect(firings == [1_809_334_790])
        #expect(loop.scheduledTimerCount == 0)
    }
}
