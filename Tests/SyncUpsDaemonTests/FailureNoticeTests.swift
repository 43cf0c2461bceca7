import SyncUpsBus
import SyncUpsJSON
import SyncUpsProtocol
import Testing

@testable import SyncUpsDaemon

/// The desktop shows one notification per failure episode of the user's data: the first `persistence.failed`
/// after nothing failed, none for the failures that follow it (another write, another error: `status` and
/// the socket's events name each), and on `persistence.recovered` the same notification, replaced in place,
/// says that saving works again. Before, each `persistence.failed` (one per retry of each failing write)
/// showed the critical notification again, and it stayed on screen after the recovery.
@Suite struct FailureNoticeTests {
    @Test func anEpisodeIsOneNotificationReplacedByItsRecovery() throws {
        var notice = FailureNotice()
        func failed(_ error: String) -> DesktopNotification? {
            notice.notification(for: EventName.persistenceFailed, canShow: true) { ["error": .string(error)] }
        }
        func recovered() -> DesktopNotification? {
            notice.notification(for: EventName.persistenceRecovered, canShow: true) { [:] }
        }
        let first = try #require(failed("disk full"))
        #expect(first.summary == "syncupsd cannot save your sync-ups")
        #expect(first.body == "disk full" && first.urgency == .critical)
        // Another write's failure, another error, a retry: nothing more on screen.
        let later = [failed("read-only"), failed("disk full")]
        #expect(later == [nil, nil])
        let recovery = try #require(recovered())
        #expect(recovery.slot == first.slot, "the failure is replaced in place, not stacked")
        #expect(recovery.summary == "syncupsd saves your sync-ups again" && recovery.urgency == .normal)
        // The next episode shows again; a recovery with no failure shown says nothing.
        let next = failed("disk full")
        #expect(next == first)
        _ = recovered()
        let again = recovered()
        #expect(again == nil)
    }

    /// While nothing can show (no bus, `notify none`), a failure is not counted as shown, so the episode's next
    /// failure shows once it can; and a recovery still ends the episode, so the next one shows. (Followed only
    /// while notifications could show, a recovery heard while they were off left every later episode silent.)
    @Test func anEpisodeEndsEvenWhileNothingCanShow() throws {
        var notice = FailureNotice()
        let unseen = notice.notification(for: EventName.persistenceFailed, canShow: false) { ["error": "disk full"] }
        #expect(unseen == nil && !notice.isShown)
        #expect(notice.notification(for: EventName.persistenceFailed, canShow: true) { ["error": "disk full"] } != nil)
        let recovery = notice.notification(for: EventName.persistenceRecovered, canShow: false) { [:] }
        #expect(recovery == nil && !notice.isShown)
        #expect(notice.notification(for: EventName.persistenceFailed, canShow: true) { ["error": "again"] } != nil)
    }
}
