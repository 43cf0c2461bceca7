import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// The saved meetings whose details file waits to be written: queued, written, failed and retried with a
/// back-off, deleted while pending, and the failure `status` reports until nothing waits any more.
@Suite struct DetailsWritesTests {
    let first = Meeting.ID(UUID(counting: 1))
    let second = Meeting.ID(UUID(counting: 2))

    func writes() -> DetailsWrites<String> {
        DetailsWrites(initialDelay: .milliseconds(500), maximumDelay: .seconds(2))
    }

    @Test func aQueuedWriteIsHeldUntilWrittenAndNothingFailed() {
        var writes = writes()
        writes.queue(first, "details")
        #expect(writes.details(of: first) == "details" && !writes.isEmpty)
        #expect(writes.report(first, error: nil) == .written(recovered: false))
        #expect(writes.details(of: first) == nil && writes.isEmpty && writes.lastError == nil)
        // A second report of the same write (nothing waits for it) is not a write of a pending meeting.
        #expect(writes.report(first, error: nil) == .notPending)
    }

    @Test func aFailedWriteIsRetriedWithABackOffUpToTheMaximum() {
        var writes = writes()
        writes.queue(first, "details")
        #expect(writes.report(first, error: "disk full") == .retry(after: .milliseconds(500), isFirstFailure: true))
        #expect(writes.lastError == "disk full" && writes.details(of: first) == "details")
        #expect(writes.pending[first]?.hasFailed == true)
        #expect(writes.report(first, error: "disk full") == .retry(after: .seconds(1), isFirstFailure: false))
        #expect(writes.report(first, error: "still full") == .retry(after: .seconds(2), isFirstFailure: false))
        #expect(writes.report(first, error: "still full") == .retry(after: .seconds(2), isFirstFailure: false))
        #expect(writes.lastError == "still full")
        // The retry that works ends the failure: `persistence.recovered`.
        #expect(writes.report(first, error: nil) == .written(recovered: true))
        #expect(writes.lastError == nil && writes.isEmpty)
    }

    /// The failure is over only when no meeting's details wait: one written while another still fails is not.
    @Test func theFailureEndsOnlyWhenNothingWaits() {
        var writes = writes()
        writes.queue(first, "one")
        writes.queue(second, "two")
        _ = writes.report(first, error: "disk full")
        #expect(writes.report(second, error: nil) == .written(recovered: false))
        #expect(writes.lastError == "disk full")
        #expect(writes.report(first, error: nil) == .written(recovered: true))
    }

    /// A meeting deleted while its write failed: no longer waited for, and with it the failure ends; the write
    /// in flight reports a meeting nothing waits for (its file goes too).
    @Test func aMeetingDeletedWhilePendingIsNoLongerWritten() {
        var writes = writes()
        writes.queue(first, "one")
        _ = writes.report(first, error: "disk full")
        let (deleted, recovered) = writes.delete([first, second])
        #expect(deleted == [first] && recovered)
        #expect(writes.details(of: first) == nil && writes.lastError == nil)
        #expect(writes.report(first, error: nil) == .notPending)
        #expect(writes.report(first, error: "disk full") == .notPending)
        #expect(writes.lastError == nil)
        // Deleting what never failed ends no failure.
        writes.queue(second, "two")
        #expect(writes.delete([second]) == ([second], false))
    }
}
