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

    /// A full disk (every byte taken: `sync-ups.json` and `deleted-meetings.json` cannot be written, unlinking
    /// works) when a sync-up with three saved meetings is deleted, then a kill -9: the next start lists it
    /// again with its meetings, and each meeting's details are all there, as is the other sync-up's meeting.
    /// Before (attack 37b's E5), the files went without the record: the sync-up came back listing three
    /// meetings whose details were gone.
    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs needs root (CI runs as root)"))
    func aDeletionTheFullDiskCannotRecordKeepsItsFilesAcrossAKill() throws {
        let mount = try SmallDisk(size: "400k")
        defer { mount.unmount() }
        let arguments = ["--data-dir", mount.path] + Self.arguments
        let first = try DaemonProcess(arguments: arguments)
        let client = try first.client()
        let gone = try client.result("syncups.create", ["title": "Gone", "duration": 600, "attendees": ["A"]])["id"]!
        let kept = try client.result("syncups.create", ["title": "Kept", "duration": 600, "attendees": ["B"]])["id"]!
        var saved: [JSONValue] = []
        for syncUp in [gone, gone, gone, kept] {
            let started = try client.result("session.start", ["syncup": syncUp, "audio": false])
            saved.append(try #require(started["meeting"]))
            _ = try client.result("session.end", ["action": "save"])
            let journal = mount.appending("meetings/\(saved.last!.stringValue ?? "").recording.json")
            #expect(try waitFor { !Files.exists(journal) })  // details written, sync-ups.json synced
        }
        let details = saved.map { mount.appending("meetings/\($0.stringValue ?? "").json") }
        for file in details { #expect(Files.exists(file)) }
        let watcher = try first.client()
        _ = try watcher.result("subscribe", ["topics": ["daemon"], "snapshot": false])
        let filler = open(mount.appending("filler"), O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 1, count: 4096)
        while write(filler, block, block.count) > 0 {}
        close(filler)

        _ = try client.result("syncups.delete", ["id": gone])
        for file in details { #expect(Files.exists(file), "\(file) went without a record") }
        var failures: [String] = []
        // Both fail, in either order: the record on the journal's thread, sync-ups.json on the store's.
        while !failures.contains(where: { $0.contains("cannot record the deletion in") })
            || !failures.contains(where: { $0.hasPrefix("writing") && $0.contains("sync-ups.json") })
        {
            let event = try watcher.nextEvent("persistence.failed")
            failures.append(event["data"]?["error"]?.stringValue ?? "")
        }
        #expect(first.stop(signal: SIGKILL) == .signaled(SIGKILL))

        unlink(mount.appending("filler"))
        let second = try DaemonProcess(arguments: arguments)
        let again = try second.client()
        let titles = try again.result("syncups.list")["syncups"]?.arrayValue?.compactMap { $0["title"]?.stringValue }
        #expect(Set(titles ?? []) == ["Gone", "Kept"])
        let listed = try again.result("syncups.get", ["id": gone])["meetings"]?.arrayValue?.compactMap { $0["id"] }
        #expect(Set(listed ?? []) == Set(saved[0..<3]))
        for file in details { #expect(Files.exists(file), "\(file) is gone while its meeting is listed") }
        for (syncUp, meeting) in zip([gone, gone, gone, kept], saved) {
            let got = try again.result("meetings.get", ["syncup": syncUp, "meeting": meeting])
            #expect(got["detailsError"] == .null, "\(got)")
        }
    }
}
