import Glibc
import SyncUpsJSON
import SyncUpsTestSupport
import Testing

/// A deleted sync-up or meeting stays deleted when the daemon is killed while the journal it left cannot be
/// removed: `deleted-meetings.json` says so to the next start's recovery. Before, the journal's removal was
/// retried, but a kill -9 before it worked recovered the deleted meeting "interrupted by a crash" (and
/// recreated its deleted sync-up). A meeting that was not deleted is still recovered beside it.
///
/// The journal that cannot be removed is a directory at its path (unlink fails with EISDIR, even for root);
/// after the kill it becomes the journal again, as a journal the removal left behind.
@Suite struct DeletionDurabilityTests {
    static let arguments = ["--audio-device", "null", "--no-cue", "--speech-engine", "none"]

    /// Records a meeting of `syncUp` and saves it; returns its id and its journal as it was while it ran.
    static func recordAndSave(_ client: RawClient, _ daemon: DaemonProcess, syncUp: JSONValue) throws -> (
        meeting: JSONValue, journal: [UInt8]
    ) {
        let started = try client.result("session.start", ["syncup": syncUp, "audio": false])
        let meeting = try #require(started["meeting"])
        let path = journalPath(daemon, meeting)
        let journal = try #require(Files.read(path))
        _ = try client.result("session.end", ["action": "save"])
        #expect(try waitFor { !Files.exists(path) })
        return (meeting, journal)
    }

    static func journalPath(_ daemon: DaemonProcess, _ meeting: JSONValue) -> String {
        daemon.dataPath + "/meetings/\(meeting.stringValue ?? "")" + ".recording.json"
    }

    /// Makes the journal of `meeting` unremovable, deletes it through `delete`, and waits until the daemon
    /// has tried; then starts a meeting of `running` and kills the daemon mid-way.
    static func deleteUnremovably(
        _ client: RawClient, _ daemon: DaemonProcess, meeting: JSONValue, running: JSONValue,
        delete: () throws -> Void
    ) throws -> JSONValue {
        let path = journalPath(daemon, meeting)
        #expect(mkdir(path, 0o700) == 0)
        try delete()
        #expect(daemon.log.wait { $0.contains("cannot remove the meeting's journal") })
        let started = try client.result("session.start", ["syncup": running, "audio": false])
        let kept = try #require(started["meeting"])
        #expect(Files.exists(journalPath(daemon, kept)))
        // The deletion in sync-ups.json, past the write throttle's second (a kill before it loses the deletion,
        // as it loses any change the throttle held back): from here on only the journal could bring it back.
        #expect(
            try waitFor {
                let persistence = try client.result("status")["persistence"]
                return persistence?["unsavedChanges"] == false && persistence?["synced"] == true
            })
        #expect(daemon.stop(signal: SIGKILL) == .signaled(SIGKILL))
        return kept
    }

    @Test func aDeletedSyncUpDoesNotComeBackAfterAKillWhileItsMeetingsJournalCannotBeRemoved() throws {
        let first = try DaemonProcess(arguments: Self.arguments)
        let client = try first.client()
        let gone = try client.result("syncups.create", ["title": "Gone", "duration": 600, "attendees": ["A"]])["id"]!
        let kept = try client.result("syncups.create", ["title": "Kept", "duration": 600, "attendees": ["B"]])["id"]!
        let (meeting, journal) = try Self.recordAndSave(client, first, syncUp: gone)
        let running = try Self.deleteUnremovably(client, first, meeting: meeting, running: kept) {
            _ = try client.result("syncups.delete", ["id": gone])
        }
        let path = Self.journalPath(first, meeting)
        #expect(rmdir(path) == 0)
        Files.write(path, journal)

        let second = try DaemonProcess(arguments: Self.arguments, directory: first.directory)
        let again = try second.client()
        let titles = try again.result("syncups.list")["syncups"]?.arrayValue?.compactMap { $0["title"]?.stringValue }
        #expect(titles == ["Kept"])
        let recovered = try again.result("meetings.get", ["syncup": kept, "meeting": running])
        #expect(recovered["interrupted"] == true)
        #expect(try waitFor { !Files.exists(path) })
        #expect(try waitFor { !Files.exists(second.dataPath + "/deleted-meetings.json") })
    }

    @Test func aDeletedMeetingDoesNotComeBackAfterAKillWhileItsJournalCannotBeRemoved() throws {
        let first = try DaemonProcess(arguments: Self.arguments)
        let client = try first.client()
        let id = try client.result("syncups.create", ["title": "Design", "duration": 600, "attendees": ["A"]])["id"]!
        let (meeting, journal) = try Self.recordAndSave(client, first, syncUp: id)
        let running = try Self.deleteUnremovably(client, first, meeting: meeting, running: id) {
            _ = try client.result("meetings.delete", ["syncup": id, "meeting": meeting])
        }
        let path = Self.journalPath(first, meeting)
        #expect(rmdir(path) == 0)
        Files.write(path, journal)

        let second = try DaemonProcess(arguments: Self.arguments, directory: first.directory)
        let again = try second.client()
        let meetings = try again.result("syncups.get", ["id": id])["meetings"]?.arrayValue?.map { $0["id"] }
        #expect(meetings == [running])
        #expect(try waitFor { !Files.exists(path) })
        #expect(try waitFor { !Files.exists(second.dataPath + "/deleted-meetings.json") })
    }
}
