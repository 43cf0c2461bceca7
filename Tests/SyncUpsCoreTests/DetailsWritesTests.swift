import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// The saved meetings whose files wait: details queued, written, failed and retried with a back-off, deleted
/// while pending; journals whose removal failed, retried with the same back-off.
@Suite struct DetailsWritesTests {
    let first = Meeting.ID(UUID(counting: 1))
    let second = Meeting.ID(UUID(counting: 2))

    func writes() -> DetailsWrites<String> {
        DetailsWrites(initialDelay: .milliseconds(500), maximumDelay: .seconds(2))
    }

    @Test func aQueuedWriteIsHeldUntilWritten() {
        var writes = writes()
        writes.queue(first, "details")
        #expect(writes.details(of: first) == "details" && !writes.isEmpty)
        #expect(writes.report(first, failed: false) == .written)
        #expect(writes.details(of: first) == nil && writes.isEmpty)
        // A second report of the same write (nothing waits for it) is not a write of a pending meeting.
        #expect(writes.report(first, failed: false) == .notPending)
    }

    @Test func aFailedWriteIsRetriedWithABackOffUpToTheMaximum() {
        var writes = writes()
        writes.queue(first, "details")
        #expect(writes.report(first, failed: true) == .retry(after: .milliseconds(500), isFirstFailure: true))
        #expect(writes.details(of: first) == "details")
        #expect(writes.pending[first]?.hasFailed == true)
        #expect(writes.report(first, failed: true) == .retry(after: .seconds(1), isFirstFailure: false))
        #expect(writes.report(first, failed: true) == .retry(after: .seconds(2), isFirstFailure: false))
        #expect(writes.report(first, failed: true) == .retry(after: .seconds(2), isFirstFailure: false))
        #expect(writes.report(first, failed: false) == .written)
        #expect(writes.isEmpty)
    }

    /// A meeting deleted while its write failed is no longer waited for; the write in flight reports a meeting
    /// nothing waits for (its file goes too).
    @Test func aMeetingDeletedWhilePendingIsNoLongerWritten() {
        var writes = writes()
        writes.queue(first, "one")
        _ = writes.report(first, failed: true)
        #expect(writes.delete([first, second]) == [first])
        #expect(writes.details(of: first) == nil)
        #expect(writes.report(first, failed: false) == .notPending)
        #expect(writes.report(first, failed: true) == .notPending)
    }

    /// A journal whose removal fails is retried with the same back-off as the details, until it goes.
    @Test func aJournalWhoseRemovalFailsIsRetriedUntilItGoes() {
        var writes = writes()
        #expect(writes.journalRemoved(first, failed: false) == nil && writes.removals.isEmpty)
        #expect(writes.journalRemoved(first, failed: true) == .milliseconds(500))
        #expect(writes.journalRemoved(first, failed: true) == .seconds(1))
        #expect(writes.removals[first] != nil)
        #expect(writes.journalRemoved(first, failed: false) == nil)
        #expect(writes.removals.isEmpty)
    }
}
