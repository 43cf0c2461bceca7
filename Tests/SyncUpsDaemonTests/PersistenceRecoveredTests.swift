import Glibc
import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// `persistence.recovered` means no write of the user's data fails any more: sync-ups.json working again
/// while a meeting's details still fail is not it. Before, each writer published its own recovery, so a
/// client saw "recovered" while `status` still reported the details' error.
@Suite struct DetailsFailureAndStoreTests {
    @Test func theStoreRecoveringWhileDetailsStillFailPublishesNoRecovery() throws {
        let directory = TemporaryDirectory("persistence-owner")
        let faults = FaultyFileSystem()
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000_000)),
            fileSystem: faults.fileSystem)
        let (client, watcher, id) = try VirtualTimeTests.soloSyncUp(daemon, watching: "daemon")
        let started = try client.result("session.start", ["syncup": .string(id), "audio": false])
        let meeting = try #require(started["meeting"]?.stringValue)
        let details = directory.path + "/meetings/" + meeting + ".json"
        // A directory where the details file goes, and a full disk for sync-ups.json.
        #expect(mkdir(details, 0o700) == 0 && mkdir(details + "/in-the-way", 0o700) == 0)
        faults.fail(.write, with: .noSpace)
        _ = try client.result("session.end", ["action": "save"])
        // Both fail: sync-ups.json's write and the details' (each on its own thread, so waited for).
        var failures: [String] = []
        while !(failures.contains { $0.contains("details") } && failures.contains { !$0.contains("details") }) {
            daemon.advanceTime(by: .milliseconds(100))
            failures += try watcher.events(until: "persistence.failed").compactMap { $0["data"]?["error"]?.stringValue }
        }
        // Space again: sync-ups.json is written at its retry, the details are not.
        faults.heal()
        let saved = MonotonicInstant.now() + .seconds(20)
        while try client.result("status")["persistence"]?["unsavedChanges"] != false && MonotonicInstant.now() < saved {
            daemon.advanceTime(by: .seconds(1))
            daemon.turn(waitingUpTo: 10)
        }
        _ = try? watcher.take(timeout: .milliseconds(300)) { _ in false }
        let status = try client.result("status")
        #expect(status["persistence"]?["unsavedChanges"] == false, "\(status)")
        #expect(status["persistence"]?["lastError"]?.stringValue?.contains("details") == true, "\(status)")
        #expect(!watcher.hasLine { $0["event"] == "persistence.recovered" })
        // The details' way is clear: now it is over, and said once.
        #expect(rmdir(details + "/in-the-way") == 0 && rmdir(details) == 0)
        let deadline = MonotonicInstant.now() + .seconds(20)
        while !Files.exists(details) && MonotonicInstant.now() < deadline {
            daemon.advanceTime(by: .seconds(1))
            daemon.turn(waitingUpTo: 10)
        }
        _ = try watcher.events(until: "persistence.recovered")
        #expect(try client.result("status")["persistence"]?["lastError"] == .null)
    }
}
