import SyncUpsPOSIX
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
