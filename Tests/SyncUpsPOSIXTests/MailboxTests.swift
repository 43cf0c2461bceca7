import SyncUpsPOSIX
import Synchronization
import Testing

@Suite struct MailboxTests {
    /// `wait` is how shutdown waits for a helper's last report with the loop stopped: it must wake for a
    /// message posted from another thread, and not for one already taken (the eventfd still says "ready").
    @Test func waitWakesForANewMessageAndNotForOneAlreadyTaken() throws {
        let mailbox = try Mailbox<Int>()
        mailbox.post(1)
        #expect(mailbox.wait(timeout: .zero))
        #expect(mailbox.takeAll() == [1])
        let start = MonotonicInstant.now()
        #expect(!mailbox.wait(timeout: .milliseconds(50)))
        #expect(MonotonicInstant.now() - start >= .milliseconds(50))
        let poster = try DedicatedThread(name: "test-poster") { mailbox.post(2) }
        #expect(mailbox.wait(timeout: .seconds(10)))
        poster.join()
        #expect(mailbox.takeAll() == [2])
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
