import Glibc
import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Testing

/// A deleted sync-up's meetings keep their files while `deleted-meetings.json` cannot be written: a kill -9
/// before `sync-ups.json` drops the sync-up must not bring it back listing meetings whose files are gone.
/// `status` and the `persistence.failed` event name the record's path and errno, the removal is retried with
/// the store's back-off, and once the record can be written the files go and the failure ends. Before (attack
/// 37b's E5), the files went at once and nothing said the record was missing.
@Suite struct DeletionRecordTests {
    static let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)

    /// A sync-up with three saved meetings (no audio): the daemon, its client and watcher of `daemon` events,
    /// the sync-up's id, and the meetings' details files.
    static func syncUpWithThreeMeetings(in directory: TemporaryDirectory, fileSystem: FileSystem = .live) throws -> (
        InProcessDaemon, LoopClient, LoopClient, String, [String]
    ) {
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, clock: .manual(startingAt: start), fileSystem: fileSystem)
        let (client, watcher, id) = try VirtualTimeTests.soloSyncUp(daemon, watching: "daemon")
        let details = try (0..<3).map { _ in
            let meeting = try VirtualTimeTests.savedMeeting(of: id, by: client, in: directory)
            return directory.path + "/meetings/" + meeting + ".json"
        }
        for file in details { #expect(Files.exists(file)) }
        return (daemon, client, watcher, id, details)
    }

    /// Advances the virtual clock a second at a time until `done` (20 s of real time at most).
    static func advance(_ daemon: InProcessDaemon, until done: () throws -> Bool) rethrows -> Bool {
        let deadline = MonotonicInstant.now() + .seconds(20)
        while try !done() {
            guard MonotonicInstant.now() < deadline else { return false }
            daemon.advanceTime(by: .seconds(1))
            daemon.turn(waitingUpTo: 10)
        }
        return true
    }

    @Test func aDeletionWhoseRecordCannotBeWrittenKeepsTheFilesAndSaysWhyUntilItCan() throws {
        let directory = TemporaryDirectory("deletion-record")
        let (daemon, client, watcher, id, details) = try Self.syncUpWithThreeMeetings(in: directory)
        let record = directory.path + "/deleted-meetings.json"
        #expect(mkdir(record, 0o700) == 0)  // every write of the record fails (EISDIR), sync-ups.json's works
        _ = try client.result("syncups.delete", ["id": .string(id)])
        // The reply came once the writer had tried: nothing went.
        for file in details { #expect(Files.exists(file), "\(file) went without a record") }
        let failed = try watcher.events(until: "persistence.failed").last?["data"]?["error"]?.stringValue
        #expect(failed?.contains("cannot record the deletion in \(record) (") == true, "\(failed ?? "none")")
        #expect(failed?.hasSuffix(": Is a directory") == true, "\(failed ?? "none")")
        let lastError = try client.result("status")["persistence"]?["lastError"]?.stringValue
        #expect(lastError?.hasPrefix("keeping the deleted meeting's files until its deletion is recorded") == true)
        #expect(lastError?.contains(record) == true, "\(lastError ?? "none")")
        #expect(daemon.syncUpIDs.isEmpty)
        // Still kept at the retries while the record cannot be written.
        daemon.advanceTime(by: .seconds(5))
        daemon.turn(waitingUpTo: 10)
        for file in details { #expect(Files.exists(file)) }

        #expect(rmdir(record) == 0)
        #expect(Self.advance(daemon) { details.allSatisfy { !Files.exists($0) } })
        _ = try watcher.events(until: "persistence.recovered")
        #expect(try client.result("status")["persistence"]?["lastError"] == .null)
        #expect(!Files.exists(record))
    }

    /// A full disk fails both `sync-ups.json` and the record while unlinking still works: the files stay,
    /// the event names the record, and once space is back both are written and the files go.
    @Test func aDeletionOnAFullDiskKeepsTheFilesUntilSpaceIsBack() throws {
        let directory = TemporaryDirectory("deletion-record-full")
        let faults = FaultyFileSystem()
        let (daemon, client, watcher, id, details) = try Self.syncUpWithThreeMeetings(
            in: directory, fileSystem: faults.fileSystem)
        faults.fail(.write, with: .noSpace)
        _ = try client.result("syncups.delete", ["id": .string(id)])
        for file in details { #expect(Files.exists(file), "\(file) went without a record") }
        let record = directory.path + "/deleted-meetings.json"
        let recordFailure = "cannot record the deletion in \(record) (write)"
        let failed = try watcher.take(timeout: .seconds(20)) { line in
            guard line["event"] == "persistence.failed", let error = line["data"]?["error"]?.stringValue else {
                return false
            }
            return error.contains(recordFailure)
        }
        let error = failed.last?["data"]?["error"]?.stringValue
        #expect(error?.hasSuffix(": No space left on device") == true, "\(error ?? "none")")
        for file in details { #expect(Files.exists(file)) }

        faults.heal()
        #expect(Self.advance(daemon) { details.allSatisfy { !Files.exists($0) } })
        // The store's own write goes on its writer's thread, its failure and retry reported after: `lastError`
        // may be null before that failure is heard, so both are waited for (a clean-clone run read the file
        // first).
        #expect(
            try Self.advance(daemon) {
                try client.result("status")["persistence"]?["lastError"] == .null
                    && Files.readString(directory.path + "/sync-ups.json")?.contains(id) == false
            })
        #expect(!Files.exists(record))
    }
}
