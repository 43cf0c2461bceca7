import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// The one owner of "which writes of the user's data are failing": `persistence.failed` names each failure,
/// `persistence.recovered` comes only when nothing fails, and `lastError` is what `status` shows.
@Suite struct FailingWritesTests {
    let meeting = Meeting.ID(UUID(counting: 1))
    let other = Meeting.ID(UUID(counting: 2))

    @Test func eachFailureIsSaidAndTheRecoveryOnlyOnceNothingFails() {
        var writes = FailingWrites()
        #expect(writes.isEmpty && writes.lastError == nil)
        #expect(writes.failed(.syncUps, "disk full") == .failed("disk full"))
        #expect(writes.failed(.details(meeting), "no details") == .failed("no details"))
        #expect(writes.failed(.journalRemoval(other), "no unlink") == .failed("no unlink"))
        #expect(writes.lastError == "no unlink")
        // A retry failing again alike says nothing new, but is the latest.
        #expect(writes.failed(.syncUps, "disk full") == .unchanged)
        #expect(writes.lastError == "disk full")
        #expect(writes.succeeded(.syncUps) == .unchanged)
        #expect(writes.lastError == "no unlink")
        #expect(writes.succeeded(.journalRemoval(other)) == .unchanged)
        #expect(writes.lastError == "no details" && writes.error(of: .details(meeting)) == "no details")
        #expect(writes.succeeded(.details(meeting)) == .recovered)
        #expect(writes.isEmpty && writes.lastError == nil)
    }

    /// A retried write failing again with the same error says nothing new: a full disk during a meeting
    /// published `persistence.failed`, and the desktop showed it, at every retry of every failing write.
    /// `lastError` stays current: the retry's failure is the latest.
    @Test func aWriteFailingAgainAlikeSaysNothingNewAndStaysTheLatest() {
        var writes = FailingWrites()
        #expect(writes.failed(.details(meeting), "disk full") == .failed("disk full"))
        #expect(writes.failed(.syncUps, "read-only") == .failed("read-only"))
        #expect(writes.lastError == "read-only")
        for _ in 0..<5 { #expect(writes.failed(.details(meeting), "disk full") == .unchanged) }
        #expect(writes.lastError == "disk full" && writes.error(of: .details(meeting)) == "disk full")
        #expect(writes.failed(.syncUps, "read-only") == .unchanged)
        #expect(writes.lastError == "read-only")
    }

    /// What is new is said: the same write failing with another error (and back), another write failing with
    /// an error no write has now, and a write failing again after it worked (a new episode).
    @Test func anotherErrorAnotherWriteOrANewEpisodeIsSaid() {
        var writes = FailingWrites()
        _ = writes.failed(.details(meeting), "disk full")
        #expect(writes.failed(.details(meeting), "read-only") == .failed("read-only"))
        #expect(writes.failed(.details(meeting), "disk full") == .failed("disk full"))
        #expect(writes.failed(.details(other), "no details") == .failed("no details"))
        #expect(writes.failed(.journal(meeting), "no journal") == .failed("no journal"))
        #expect(writes.succeeded([.details(meeting), .details(other), .journal(meeting)]) == .recovered)
        #expect(writes.failed(.details(meeting), "disk full") == .failed("disk full"))
    }

    /// Many writes waiting on one failing file fail with one text (it names the file and the cause): said
    /// once, not once a write (a deleted sync-up's 300 meetings, their deletion record blocked, published 300
    /// events at once, attack 38's break 4). Once that error is gone from every write, it is news again.
    @Test func writesFailingWithTheErrorAlreadySaidAddNothing() {
        var writes = FailingWrites()
        let blocked = "cannot record the deletion in deleted-meetings.json: Is a directory"
        #expect(writes.failed(.journalRemoval(meeting), blocked) == .failed(blocked))
        #expect(writes.failed(.journalRemoval(other), blocked) == .unchanged)
        #expect(writes.lastError == blocked && writes.error(of: .journalRemoval(other)) == blocked)
        #expect(writes.succeeded([.journalRemoval(meeting), .journalRemoval(other)]) == .recovered)
        #expect(writes.failed(.journalRemoval(other), blocked) == .failed(blocked))
    }

    /// A write that works without having failed, or one reported twice, says nothing.
    @Test func aWriteThatNeverFailedRecoversNothing() {
        var writes = FailingWrites()
        #expect(writes.succeeded(.schedule) == .unchanged)
        _ = writes.failed(.voiceProfiles, "read-only")
        #expect(writes.succeeded(.voiceProfiles) == .recovered)
        #expect(writes.succeeded(.voiceProfiles) == .unchanged)
    }

    /// A deleted meeting's details and journal writes are no longer wanted: they end with it, and that is the
    /// recovery when nothing else fails; its journal's removal still fails until it works.
    @Test func aDeletedMeetingsWritesEndButItsJournalsRemovalStays() {
        var writes = FailingWrites()
        _ = writes.failed(.details(meeting), "no details")
        _ = writes.failed(.journal(meeting), "no journal")
        _ = writes.failed(.journalRemoval(meeting), "no unlink")
        #expect(writes.succeeded([.details(meeting), .journal(meeting), .details(other)]) == .unchanged)
        #expect(writes.lastError == "no unlink")
        #expect(writes.succeeded([.journalRemoval(meeting), .journal(meeting)]) == .recovered)
    }
}
