import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Synchronization
import Testing

@testable import SyncUpsDaemon

/// A meeting the user brings back (a `sync-ups.json` that names it again, restored from a backup while the
/// daemon runs or before a start) is the user's again: a deletion of it still under way (its removal failing)
/// is called off, its record in `deleted-meetings.json` goes, and its files stay. Before, the attack's C2: the
/// restored details were removed again at the next retry of the deletion, and again at every start.
@Suite struct RestoredMeetingTests {
    /// Runs the loop until the journal writer has done what was queued so far, and the loop what it reported.
    static func journalsCaughtUp(_ daemon: InProcessDaemon) {
        let signal = try? ChangeSignal()
        let isDone = Atomic(false)
        daemon.journals.whenDone {
            isDone.store(true, ordering: .sequentiallyConsistent)
            signal?.changed()
        }
        #expect(signal?.wait { isDone.load(ordering: .sequentiallyConsistent) } == true)
        for _ in 0..<5 { daemon.turn(waitingUpTo: 5) }
    }

    @Test func aDeletedMeetingWhoseRemovalFailsIsKeptOnceARestoredSyncUpsJSONNamesItAgain() throws {
        let directory = TemporaryDirectory("restored-meeting")
        let daemon = try VirtualTimeTests.daemon(directory)
        let (client, watcher, id) = try VirtualTimeTests.soloSyncUp(daemon, watching: "syncups")
        let started = try client.result("session.start", ["syncup": .string(id), "audio": false])
        let meeting = try #require(started["meeting"]?.stringValue)
        let meetings = directory.path + "/meetings/"
        _ = try client.result("session.end", ["action": "save"])
        let deadline = MonotonicInstant.now() + .seconds(10)
        while Files.exists(meetings + meeting + ".recording.json") && MonotonicInstant.now() < deadline {
            daemon.turn(waitingUpTo: 10)
        }
        let details = meetings + meeting + ".json"
        let backup = (syncUps: Files.readString(directory.path + "/sync-ups.json"), details: Files.readString(details))
        #expect(backup.details != nil)
        // A directory where its call's audio would be: the deletion's removal fails for good (EISDIR).
        #expect(mkdir(meetings + meeting + ".call.wav", 0o700) == 0)
        _ = try client.result("meetings.delete", ["syncup": .string(id), "meeting": .string(meeting)])
        let record = directory.path + "/" + DeletedMeetingsFile.fileName
        #expect(Files.exists(record) && !Files.exists(details))
        daemon.advanceTime(by: .seconds(1))  // the write throttle's second: sync-ups.json without the meeting
        let written = MonotonicInstant.now() + .seconds(10)
        while Files.readString(directory.path + "/sync-ups.json")?.contains(meeting) != false
            && MonotonicInstant.now() < written
        {
            daemon.turn(waitingUpTo: 10)
        }

        // The deletion's first retry (at half a second) is over: the restore comes between two tries.
        Self.journalsCaughtUp(daemon)
        // The user restores both from the backup; the daemon reloads sync-ups.json.
        Files.write(details, backup.details ?? "")
        Files.write(directory.path + "/sync-ups.json.new", backup.syncUps ?? "")
        #expect(rename(directory.path + "/sync-ups.json.new", directory.path + "/sync-ups.json") == 0)
        _ = try watcher.events(until: "syncups.reloaded")
        Self.journalsCaughtUp(daemon)
        for _ in 0..<4 {  // well past the deletion's retries (0.5 s, doubling)
            daemon.advanceTime(by: .seconds(30))
            Self.journalsCaughtUp(daemon)
        }
        #expect(Files.readString(details) == backup.details, "the restored details were removed again")
        #expect(!Files.exists(record), "deleted-meetings.json still names the restored meeting")
        let status = try client.result("status")
        #expect(status["persistence"]?["lastError"] == .null, "\(status)")
        _ = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meeting)])
    }

    /// At a start, the record of a deletion whose removal had failed is dropped for a meeting `sync-ups.json`
    /// (read whole) names: the user put it back while the daemon was down. After a fallback (`.prev`, one write
    /// behind, may still name a meeting the user deleted since) the deletion goes on.
    @Test(arguments: ["sync-ups.json", "fallback to .prev"])
    func aRecordedDeletionOfAMeetingTheFileNamesAtStart(_ source: String) throws {
        let directory = TemporaryDirectory("restored-at-start")
        let meeting = Meeting(
            id: Meeting.ID(UUID(counting: 77)), date: Date(timeIntervalSince1970: 1_700_000_000), transcript: "kept")
        let data = directory.dataDirectory(holding: [SyncUp.fixture(meetings: [meeting])])
        if source != "sync-ups.json" {
            Files.write(data + "/sync-ups.json.prev", Files.readString(data + "/sync-ups.json") ?? "")
            Files.write(data + "/sync-ups.json", #"{"oops": tr"#)
        }
        let details = data + "/meetings/\(meeting.id).json"
        Files.write(details, "{}")
        let record = data + "/" + DeletedMeetingsFile.fileName
        Files.write(record, #"{"meetings": ["\#(meeting.id)"]}"#)
        let daemon = try InProcessDaemon(dataDirectory: data)
        Self.journalsCaughtUp(daemon)
        if source == "sync-ups.json" {
            #expect(Files.exists(details), "the restored details were removed at the start")
            #expect(!Files.exists(record))
        } else {
            #expect(!Files.exists(details))
            #expect(!Files.exists(record))
        }
    }
}
