import Glibc
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// The loop's contract, one turn (`runOnce`) at a time: deferred work after the batch, in order; work given
/// way (`executeAfterPolling`) after the next poll's input; timers in deadline order, once, cancellable.
@Suite struct EventLoopTests {
    /// A pipe whose read end the loop watches; `poke` makes it readable.
    final class Pipe {
        let read: FileDescriptor
        let write: FileDescriptor

        init() throws {
            (read, write) = try FileDescriptor.pipe()
            try read.setNonBlocking()
        }

        deinit {
            read.close()
            write.close()
        }

        func poke() throws { try write.writeAll([1]) }

        /// Calls `handler` on `loop` each time the pipe has been poked (and empties it first).
        func watch(on loop: EventLoop, _ handler: @escaping () -> Void) throws {
            _ = try loop.watch(read, for: .readable) { [self] _ in
                var buffer = [UInt8](repeating: 0, count: 64)
                _ = try? buffer.withUnsafeMutableBytes { try read.readAvailable(into: $0) }
                handler()
            }
        }
    }

    @Test func runsExecutedTasksInOrderAfterTheBatchAndTheirOwnOnTheNextTurn() throws {
        let loop = try EventLoop()
        let pipe = try Pipe()
        var order: [String] = []
        try pipe.watch(on: loop) {
            order.append("input")
            loop.execute { order.append("first") }
            loop.execute {
                order.append("second")
                loop.execute { order.append("queued by second") }
            }
            order.append("input done")
        }
        try pipe.poke()
        loop.runOnce(timeoutMilliseconds: 1000)
        #expect(order == ["input", "input done", "first", "second"])
        #expect(loop.hasDeferredWork)
        loop.runOnce(timeoutMilliseconds: 1000)  // does not wait: work is queued
        #expect(order == ["input", "input done", "first", "second", "queued by second"])
        #expect(!loop.hasDeferredWork)
    }

    /// After an input that arrived right away, `run()` polls without sleeping for the busy-poll window,
    /// unless the handler said the next input is further off (`skipBusyPoll`): then it sleeps at once.
    @Test(arguments: [false, true])
    func pollsAfterAQuickInputUnlessTheHandlerSaysTheNextIsFarOff(skips: Bool) throws {
        let loop = try EventLoop(busyPollWindow: .seconds(5))
        let pipe = try Pipe()
        try pipe.watch(on: loop) {
            if skips { loop.skipBusyPoll() }
            // Ends the run: through a timer, which a sleeping loop wakes for and a polling one sees.
            loop.schedule(after: .milliseconds(20)) { loop.stop() }
        }
        try pipe.poke()
        loop.run()
        if skips {
            #expect(loop.busyPolls == 0)
        } else {
            #expect(loop.busyPolls > 0)
        }
    }

    @Test func runsWorkGivenWayOnlyAfterTheNextPollsInput() throws {
        let loop = try EventLoop()
        let pipe = try Pipe()
        var order: [String] = []
        try pipe.watch(on: loop) { order.append("input") }
        loop.executeAfterPolling { order.append("yielded") }
        try pipe.poke()  // ready when the loop polls: handled before the work that gave way
        loop.runOnce(timeoutMilliseconds: 1000)
        #expect(order == ["input", "yielded"])
        // With nothing ready, the poll does not wait for input that is not coming.
        loop.executeAfterPolling { order.append("alone") }
        loop.runOnce(timeoutMilliseconds: 10_000)
        #expect(order == ["input", "yielded", "alone"])
    }

    @Test func firesTimersOnceInDeadlineOrderAndNotWhenCancelled() throws {
        let loop = try EventLoop()
        let base = loop.now()
        var fired: [Int] = []
        loop.schedule(at: base + .milliseconds(30)) { fired.append(3) }
        let cancelled = loop.schedule(at: base + .milliseconds(20)) { fired.append(2) }
        loop.schedule(at: base + .milliseconds(10)) { fired.append(1) }
        loop.schedule(at: MonotonicInstant(nanoseconds: 1)) { fired.append(0) }  // long due
        #expect(loop.scheduledTimerCount == 4)
        loop.cancel(cancelled)
        #expect(loop.scheduledTimerCount == 3)
        #expect(loop.run(until: { fired.count == 3 }))
        #expect(fired == [0, 1, 3])
        #expect(loop.now() - base >= .milliseconds(30), "fired before its deadline")
        #expect(loop.scheduledTimerCount == 0)
        loop.cancel(cancelled)  // cancelling again does nothing
        #expect(loop.scheduledTimerCount == 0)
    }

    #if DEBUG
        /// A debug build says where each waiting timer was scheduled, and forgets it once it fired or was
        /// cancelled: what a test that finds a timer left over prints.
        @Test func namesWhereEachWaitingTimerWasScheduled() throws {
            let loop = try EventLoop(clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000)))
            let line = #line + 1
            let fires = loop.schedule(after: .seconds(1)) {}
            let cancelled = loop.schedule(after: .seconds(2)) {}
            #expect(
                loop.scheduledTimerOrigins == [
                    "SyncUpsPOSIXTests/EventLoopTests.swift:\(line)",
                    "SyncUpsPOSIXTests/EventLoopTests.swift:\(line + 1)",
                ])
            loop.cancel(cancelled)
            #expect(loop.scheduledTimerOrigins == ["SyncUpsPOSIXTests/EventLoopTests.swift:\(line)"])
            loop.advanceTime(by: .seconds(1))
            #expect(loop.scheduledTimerOrigins.isEmpty)
            _ = fires
        }
    #endif

    @Test func reportsAHangupWithoutBeingAskedAndStopsReportingOnceUnwatched() throws {
        let loop = try EventLoop()
        let (read, write) = try FileDescriptor.pipe()
        defer { read.close() }
        var events: [IOEvents] = []
        let watch = try loop.watch(read, for: []) { events.append($0) }
        write.close()
        #expect(loop.run(until: { !events.isEmpty }))
        #expect(events.first.map { !$0.isDisjoint(with: .hangup) } == true)
        loop.unwatch(watch)
        let count = events.count
        loop.runOnce(timeoutMilliseconds: 0)
        #expect(events.count == count)
    }

    /// Closed, the loop lets go of every handler, timer and task without running them (so what they hold can
    /// end), and an owner's late `unwatch` or `cancel` of what it had is harmless.
    @Test func aClosedLoopDropsItsHandlersUnrunAndTakesLateUnwatchesCalmly() throws {
        final class Held {}
        let loop = try EventLoop()
        let pipe = try Pipe()
        weak var held: Held?
        var ran: [String] = []
        let (watch, timer) = try {
            let object = Held()
            held = object
            let watch = try loop.watch(pipe.read, for: .readable) { _ in ran.append("watch \(object)") }
            let timer = loop.schedule(after: .zero) { ran.append("timer \(object)") }
            loop.execute { ran.append("task \(object)") }
            loop.executeAfterPolling { ran.append("after polling \(object)") }
            return (watch, timer)
        }()
        try pipe.poke()
        loop.close()
        #expect(held == nil, "a closed loop still holds what its handlers captured")
        #expect(loop.scheduledTimerCount == 0)
        loop.unwatch(watch)
        loop.cancel(timer)
        loop.runOnce(timeoutMilliseconds: 0)
        #expect(ran.isEmpty)
    }

    /// On a manual clock time stands still until the test moves it; then every timer due fires in deadline
    /// order with the clock at its own deadline, including one a handler schedules within the span and the
    /// work a handler defers, and never a cancelled one or one due later.
    @Test func aManualClockFiresTimersInOrderAtTheirDeadlinesOnlyWhenAdvanced() throws {
        let start = MonotonicInstant(nanoseconds: 5_000_000_000)
        let loop = try EventLoop(clock: .manual(startingAt: start))
        var fired: [(String, Int64)] = []
        func note(_ name: String) { fired.append((name, (loop.now() - start).nanoseconds / 1_000_000)) }
        loop.schedule(after: .milliseconds(300)) { note("c") }
        loop.schedule(after: .milliseconds(100)) {
            note("a")
            loop.schedule(after: .milliseconds(50)) { note("a+50") }
            loop.execute { note("deferred by a") }
        }
        let cancelled = loop.schedule(after: .milliseconds(200)) { note("cancelled") }
        loop.schedule(after: .milliseconds(900)) { note("later") }
        loop.cancel(cancelled)
        for _ in 0..<3 { loop.runOnce(timeoutMilliseconds: 0) }
        #expect(fired.isEmpty)
        #expect(loop.now() == start)

        loop.advanceTime(by: .milliseconds(500))
        #expect(fired.map(\.0) == ["a", "deferred by a", "a+50", "c"])
        #expect(fired.map(\.1) == [100, 100, 150, 300])
        #expect(loop.now() == start + .milliseconds(500))
        #expect(loop.scheduledTimerCount == 1)
        loop.advanceTime(by: .milliseconds(400))
        #expect(fired.last?.0 == "later" && fired.last?.1 == 900)
    }

    /// A timer that comes due while a handler runs fires before the next handler of the same batch, not once
    /// the whole turn is done, and the work it defers (the server's sending of its events) runs then too: a
    /// meeting's tick reaches its subscribers after one client's slice, not after every client's. On the
    /// real clock (a handler busy for 30 ms, a timer due in 10) and on the manual one (`skipTime`).
    @Test func aTimerThatCameDueDuringAHandlerFiresWithItsWorkBeforeTheNextHandler() throws {
        for isManual in [false, true] {
            let loop =
                isManual
                ? try EventLoop(clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000_000)))
                : try EventLoop()
            let (first, second) = (try Pipe(), try Pipe())
            var order: [String] = []
            loop.schedule(after: .milliseconds(10)) {
                order.append("timer")
                loop.execute { order.append("timer's work") }
            }
            try first.watch(on: loop) {
                order.append("first")
                if isManual {
                    loop.skipTime(by: .milliseconds(10))
                } else {
                    // Work, not a wait: the handler keeps the loop busy past the timer's deadline.
                    let end = MonotonicInstant.now() + .milliseconds(30)
                    while MonotonicInstant.now() < end {}
                }
            }
            try second.watch(on: loop) { order.append("second") }
            try first.poke()
            try second.poke()
            loop.runOnce(timeoutMilliseconds: 0)
            #expect(order == ["first", "timer", "timer's work", "second"], "manual clock: \(isManual)")
        }
    }
}
