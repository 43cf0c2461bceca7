import SyncUpsPOSIX
import SyncUpsPersistence
import Testing

@Suite struct WriteThrottleTests {
    let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    func at(_ milliseconds: Int) -> MonotonicInstant { start + .milliseconds(milliseconds) }

    @Test func writesTheFirstChangeAtOnce() {
        var throttle = WriteThrottle()
        #expect(throttle.changed(at: at(0)) == .writeNow)
    }

    @Test func coalescesChangesWithinTheNextSecondIntoOneTrailingWrite() {
        var throttle = WriteThrottle()
        #expect(throttle.changed(at: at(0)) == .writeNow)
        #expect(throttle.changed(at: at(100)) == .writeAt(at(1000)))
        #expect(throttle.changed(at: at(500)) == .nothing)
        #expect(throttle.changed(at: at(999)) == .nothing)
        #expect(throttle.timerFired(at: at(1000)) == .writeNow)
        // The trailing write opens a new window.
        #expect(throttle.changed(at: at(1200)) == .writeAt(at(2000)))
    }

    @Test func writesAtOnceAgainAfterAQuietSecond() {
        var throttle = WriteThrottle()
        #expect(throttle.changed(at: at(0)) == .writeNow)
        #expect(throttle.changed(at: at(1000)) == .writeNow)
        #expect(throttle.changed(at: at(5000)) == .writeNow)
    }

    @Test func writesUrgentChangesAtOnceEvenInsideTheWindow() {
        var throttle = WriteThrottle()
        #expect(throttle.changed(at: at(0)) == .writeNow)
        #expect(throttle.changed(at: at(10)) == .writeAt(at(1000)))
        #expect(throttle.urgent(at: at(20)) == .writeNow)
        #expect(!throttle.isPending)
        #expect(throttle.timerFired(at: at(1000)) == .nothing)
    }

    @Test func dropsAPendingWriteWhenAnOutsideEditWins() {
        var throttle = WriteThrottle()
        _ = throttle.changed(at: at(0))
        _ = throttle.changed(at: at(10))
        throttle.cancelPending()
        #expect(throttle.timerFired(at: at(1000)) == .nothing)
    }

    @Test func waitsForTheWindowIfTheTimerFiresEarly() {
        var throttle = WriteThrottle()
        _ = throttle.changed(at: at(0))
        _ = throttle.changed(at: at(10))
        #expect(throttle.timerFired(at: at(999)) == .writeAt(at(1000)))
    }
}
