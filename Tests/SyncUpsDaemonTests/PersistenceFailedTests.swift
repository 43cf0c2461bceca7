import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// `persistence.failed` says each failure once: a write retried with its back-off that fails again alike says
/// nothing new (the desktop turns the event into a notification), while `status` keeps naming the error.
/// Before, every retry published the event again: a notification a retry for as long as a disk stayed full.
@Suite struct PersistenceFailedTests {
    /// A meeting's details blocked by a directory (the write fails alike at each try, for root too), retried
    /// five times in virtual time: one event for the six tries the log shows; another meeting's details
    /// failing then is a new failure, and said.
    @Test func aDetailsWriteFailingAtEachRetryIsSaidOnceAndAnotherMeetingsFailureToo() throws {
        let directory = TemporaryDirectory("failed-once")
        let log = LogLines()
        let daemon = try VirtualTimeTests.daemon(directory, log: log)
        let (client, watcher, id, meeting) = try VirtualTimeTests.meetingWhoseDetailsFail(daemon, in: directory)
        let failure = "cannot write the meeting's details"
        #expect(log.count(containing: failure, meeting) == 1)
        for attempt in 2...6 {
            #expect(VirtualTimeTests.retryFailingDetails(of: meeting, daemon, log: log) == attempt, "no retry")
        }
        let status = try client.result("status")
        #expect(status["persistence"]?["lastError"]?.stringValue?.contains(failure) == true, "\(status)")
        watcher.drainSocket()
        #expect(!watcher.hasLine { $0["event"] == "persistence.failed" }, "a retry failing alike was said again")

        let second = try client.result("session.start", ["syncup": .string(id), "audio": false])
        let secondMeeting = try #require(second["meeting"]?.stringValue)
        let blocked = directory.path + "/meetings/" + secondMeeting + ".json"
        #expect(mkdir(blocked, 0o700) == 0 && mkdir(blocked + "/in-the-way", 0o700) == 0)
        _ = try client.result("session.end", ["action": "save"])
        let said = try watcher.events(until: "persistence.failed").last?["data"]?["error"]?.stringValue
        #expect(said?.contains(secondMeeting) == true, "\(said ?? "nothing")")
    }
}
