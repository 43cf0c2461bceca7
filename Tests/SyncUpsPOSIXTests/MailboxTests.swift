import Glibc
import SyncUpsPOSIX
import Synchronization
import Testing

@Suite struct MailboxTests {
    /// `wait` is how shutdown waits for a helper's last report with the loop stopped: it must wake for a
    /// message posted from another thread, and not for one already taken (the eventfd still says "ready").
    @Test func waitWakesForANewMessageAndNotForOneAlreadyTaken() throws {
        let mailbox = try Mailbox<Int>()
        mailbox.post(1)
        #expect(mailbox.wait(timeout: .zero) == .message)
        #expect(mailbox.takeAll() == [1])
        let start = MonotonicInstant.now()
        #expect(mailbox.wait(timeout: .milliseconds(50)) == .timedOut)
        #expect(MonotonicInstant.now() - start >= .milliseconds(50))
        let poster = try DedicatedThread(name: "test-poster") { mailbox.post(2) }
        #expect(mailbox.wait(timeout: .seconds(10)) == .message)
        poster.join()
        #expect(mailbox.takeAll() == [2])
    }

    /// A readable descriptor given to `wait` (the daemon's signals at shutdown) ends it as `interrupted`, not
    /// as a timeout: the shutdown tells the two apart.
    @Test func aReadableDescriptorEndsTheWaitAsInterrupted() throws {
        let mailbox = try Mailbox<Int>()
        var ends: [CInt] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { for end in ends { close(end) } }
        var byte: UInt8 = 1
        #expect(write(ends[1], &byte, 1) == 1)
        #expect(mailbox.wait(timeout: .seconds(10), orUntilReadable: FileDescriptor(rawValue: ends[0])) == .interrupted)
    }

    /// On a manual clock the loop's `wait(for:until:)` does not sleep: a queued message is there, else the clock
    /// moves to the deadline and the wait has timed out (before, shutdown measured the manual clock while
    /// sleeping in real time, and the deadline never came).
    @Test func theLoopsWaitOnAManualClockMovesTheClockToTheDeadline() throws {
        let start = MonotonicInstant(nanoseconds: 1_000_000_000)
        let loop = try EventLoop(clock: .manual(startingAt: start))
        let mailbox = try Mailbox<Int>()
        #expect(loop.wait(for: mailbox, until: start + .seconds(5)) == .timedOut)
        #expect(loop.now() == start + .seconds(5))
        mailbox.post(1)
        #expect(loop.wait(for: mailbox, until: start + .seconds(9)) == .message)
        #expect(loop.now() == start + .seconds(5))
    }
}

@Suite struct MailboxBoundTests {
    /// A helper posting faster than the loop drains waits at `capacity`: the queue never grows past it, and
    /// every message arrives, in order, once the loop takes them.
    @Test func aFullMailboxHoldsThePosterBackAndLosesNothing() throws {
        let loop = try EventLoop()
        let mailbox = try Mailbox<Int>(capacity: 8)
        var received: [Int] = []
        _ = try mailbox.attach(to: loop) { received += $0 }
        let isDone = Atomic(false)
        let poster = try DedicatedThread(name: "test-poster") {
            for value in 0..<50 { mailbox.post(value) }
            isDone.store(true, ordering: .sequentiallyConsistent)
        }
        // Without the loop draining, the poster stops at the bound.
        var deadline = MonotonicInstant.now() + .seconds(10)
        while mailbox.pendingCount < 8 && MonotonicInstant.now() < deadline {}
        #expect(mailbox.pendingCount == 8)
        let posterFinished = isDone.load(ordering: .sequentiallyConsistent)
        #expect(!posterFinished)
        deadline = MonotonicInstant.now() + .seconds(10)
        while received.count < 50 && MonotonicInstant.now() < deadline { loop.runOnce(timeoutMilliseconds: 100) }
        poster.join()
        #expect(received == Array(0..<50))
    }
}
