import Glibc
import SyncUpsJSON
import SyncUpsTestSupport
import Testing

/// A deleted meeting whose deletion could not be recorded (`deleted-meetings.json`'s path taken by a directory:
/// EISDIR) keeps its files, and `sync-ups.json` no longer names it; the daemon is stopped before the record
/// works. The next start sets those files aside in `meetings/orphaned/` and says so in `status`. Before (attack
/// 38's break 2), nothing on disk named them and no start looked: they stayed for good, nothing said.
@Suite struct OrphanedMeetingsTests {
    static let arguments = ["--audio-device", "null", "--no-cue", "--speech-engine", "none"]

    @Test func aDeletionUnrecordedAtShutdownIsSetAsideAtTheNextStart() throws {
        let first = try DaemonProcess(arguments: Self.arguments)
        let client = try first.client()
        let id = try client.result("syncups.create", ["title": "Private", "duration": 600, "attendees": ["A"]])["id"]!
        let started = try client.result("session.start", ["syncup": id])
        let meeting = try #require(started["meeting"]?.stringValue)
        _ = try client.result("session.end", ["action": "save"])
        let meetings = first.dataPath + "/meetings"
        let files = [meeting + ".json", meeting + ".wav"]
        #expect(try waitFor { files.allSatisfy { Files.exists(meetings + "/" + $0) } })
        // Saved for good: details written, sync-ups.json synced, the journal gone (kept, the unrecorded deletion
        // keeps it too, and the next start recovers the meeting from it).
        #expect(try waitFor { !Files.exists(meetings + "/\(meeting).recording.json") })
        let record = first.dataPath + "/deleted-meetings.json"
        #expect(mkdir(record, 0o700) == 0)
        let watcher = try first.client()
        _ = try watcher.result("subscribe", ["topics": ["daemon"], "snapshot": false])
        _ = try client.result("meetings.delete", ["syncup": id, "meeting": .string(meeting)])
        let failed = try watcher.nextEvent("persistence.failed")
        #expect(failed["data"]?["error"]?.stringValue?.contains("until its deletion is recorded") == true)
        #expect(
            try waitFor {
                let persistence = try client.result("status")["persistence"]
                return persistence?["unsavedChanges"] == false && persistence?["synced"] == true
            })
        #expect(first.stop(signal: SIGTERM) == .exited(0))
        #expect(first.log.wait { $0.contains("stopping with the deletion of a meeting unrecorded") })
        #expect(rmdir(record) == 0)

        let second = try DaemonProcess(arguments: Self.arguments, directory: first.directory)
        let again = try second.client()
        let listed = try again.result("syncups.get", ["id": id])["meetings"]?.arrayValue ?? []
        #expect(listed.isEmpty)
        let warnings = try again.result("status")["persistence"]?["warnings"]?.arrayValue ?? []
        #expect(
            warnings.contains { $0.stringValue?.contains("set aside the files of 1 meetings") == true }, "\(warnings)")
        for name in files {
            #expect(!Files.exists(meetings + "/" + name), "\(name) stayed, named by nothing")
            #expect(Files.exists(meetings + "/orphaned/" + name), "\(name) was not set aside")
        }
        #expect(second.log.wait { $0.contains("setting aside \(files.sorted().joined(separator: ", "))") })
    }
}
