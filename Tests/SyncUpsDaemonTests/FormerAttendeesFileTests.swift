import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization
import Testing

@testable import SyncUpsDaemon

/// `former-attendees.json` is the user's data as much as `sync-ups.json`: a full disk or a failed `fsync`
/// is reported and retried, and no `sync-ups.json` that drops someone is on disk before their id is
/// remembered (issue 26's attack, breaks 1 and 2).
@Suite struct FormerAttendeesFileTests {
    let directory = TemporaryDirectory("former")
    let faults = FaultyFileSystem()

    static let step = Duration.milliseconds(500)

    /// A daemon on a manual clock: the store's write throttle and the retries' back-off pass in virtual time
    /// (`waitForStatus(advancing:)`).
    func daemon() throws -> (InProcessDaemon, LoopClient) {
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, clock: .manual(startingAt: VirtualTimeTests.start),
            fileSystem: faults.fileSystem)
        return (daemon, LoopClient(try daemon.connect(), daemon))
    }

    var syncUpsOnDisk: String {
        String(decoding: Files.read(directory.appending("sync-ups.json")) ?? [], as: UTF8.self)
    }
    var formerOnDisk: String {
        String(decoding: Files.read(directory.appending("former-attendees.json")) ?? [], as: UTF8.self)
    }

    /// Creates "F9" with Xena and Yuri, waits until it is on disk, and returns its id and Yuri.
    func create(_ client: LoopClient) throws -> (id: String, yuri: JSONValue) {
        let created = try client.result(
            "syncups.create", ["title": "F9", "duration": 60, "attendees": ["Xena", "Yuri"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.waitForStatus(advancing: Self.step) { _ in syncUpsOnDisk.contains("Yuri") }
        return (id, try #require(created["attendees"]?.arrayValue?.last))
    }

    /// The disk fills just before Xena is removed: `status` says the state is not saved, with the error, until
    /// space is back; then her id is in the file and the error gone. Before, the log said "cannot write" once,
    /// status said all was well, and nothing retried: her id was lost at the next restart.
    @Test func aFullDiskWhileRemovingSomeoneIsReportedAndRetried() throws {
        let (daemon, client) = try daemon()
        _ = daemon
        let (id, yuri) = try create(client)
        faults.fail(.write, with: .noSpace)
        _ = try client.result("syncups.update", ["id": .string(id), "attendees": [yuri]])
        let failing = try client.waitForStatus(advancing: Self.step) {
            $0["persistence"]?["lastError"]?.stringValue != nil
        }
        let error = failing["persistence"]?["lastError"]?.stringValue ?? ""
        #expect(error.contains("former-attendees.json") && error.contains("No space left"), "\(error)")
        #expect(failing["persistence"]?["unsavedChanges"] == true)
        #expect(syncUpsOnDisk.contains("Xena"), "sync-ups.json dropped Xena before her id was remembered")
        faults.heal()
        try client.waitForStatus(advancing: Self.step) {
            $0["persistence"]?["lastError"] == .null && $0["persistence"]?["unsavedChanges"] == false
        }
        #expect(formerOnDisk.contains("Xena"))
        #expect(!syncUpsOnDisk.contains("Xena"))
    }

    /// Every `fsync` fails (the former file's own and the directory's): `sync-ups.json` keeps Xena, since her
    /// id is not durably remembered. Before, sync-ups.json dropped her at once (put in place before its
    /// `fsync`) while the former file was still being synced: a kill then lost her id (3 of 3 runs).
    @Test func syncUpsJsonNeverDropsSomeoneBeforeTheirIdIsDurable() throws {
        let (daemon, client) = try daemon()
        _ = daemon
        let (id, yuri) = try create(client)
        faults.fail(.sync, with: .ioError)
        _ = try client.result("syncups.update", ["id": .string(id), "attendees": [yuri]])
        try client.waitForStatus(advancing: Self.step) { $0["persistence"]?["lastError"]?.stringValue != nil }
        #expect(syncUpsOnDisk.contains("Xena") || formerOnDisk.contains("Xena"))
        #expect(syncUpsOnDisk.contains("Xena"), "sync-ups.json dropped Xena while her id was not durable")
        faults.heal()
        try client.waitForStatus(advancing: Self.step) {
            $0["persistence"]?["lastError"] == .null && !syncUpsOnDisk.contains("Xena")
        }
        #expect(formerOnDisk.contains("Xena"))
    }

    /// A temporary file a kill left behind is removed at the next start (four had piled up across restarts).
    @Test func aKilledWritesTemporaryFileIsRemovedAtStart() throws {
        Files.write(directory.appending(".former-attendees.json.tmp-4242-7"), "{")
        let (daemon, _) = try daemon()
        _ = daemon
        #expect(!Files.list(directory.path).contains(".former-attendees.json.tmp-4242-7"))
    }

    /// A file that does not parse is moved aside, as sync-ups.json is, never overwritten by the next removal.
    @Test func aFormerFileThatDoesNotParseIsMovedAsideNotOverwritten() throws {
        Files.write(directory.appending("former-attendees.json"), "{\"syncups\": {hand-edited")
        let (daemon, client) = try daemon()
        _ = daemon
        let warnings = try client.result("status")["persistence"]?["warnings"]?.arrayValue?.compactMap(\.stringValue)
        #expect(warnings?.contains { $0.contains("former-attendees.json") && $0.contains("moved it to") } == true)
        let aside = Files.list(directory.path).filter { $0.hasPrefix("former-attendees.json.corrupt-") }
        #expect(aside.count == 1)
        #expect(aside.first.flatMap { Files.read(directory.appending($0)) } == Array("{\"syncups\": {hand-edited".utf8))
    }
}

/// The log says what was kept where: when the meeting's details cannot be written and its journal could
/// not be either, it does not claim the journal keeps them (before: "keeping them in memory and in the
/// journal", printed whatever the journal's fate).
@Suite struct DetailsFailureLogTests {
    @Test func aFailedDetailsWriteDoesNotClaimTheJournalWhenItFailedToo() throws {
        let directory = TemporaryDirectory("details-log")
        let lines = Mutex<[String]>([])
        let logger = Logger(minimumLevel: .info) { _, message, _ in lines.withLock { $0.append(message) } }
        // The manual clock: the journal's next version waits for its one-a-second timer, which the test moves.
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, logger: logger, clock: .manual(startingAt: VirtualTimeTests.start))
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result("syncups.create", ["title": "RO", "duration": 60, "attendees": ["A", "B"]])
        _ = try client.result("session.start", ["syncup": created["id"]!, "audio": false])
        // `meetings/` becomes a file: every journal and details write fails (ENOTDIR), even as root.
        let meetings = directory.appending("meetings")
        _ = Files.list(meetings).map { unlink(meetings + "/" + $0) }
        rmdir(meetings)
        Files.write(meetings, "not a directory")
        _ = try client.result("session.absent", ["attendee": "B"])
        // The writes are the journal's and the clean-up's threads (a real deadline against a hang); the journal's
        // timer is the loop's, moved half a second a turn.
        func turn(untilLogged text: String) throws {
            let deadline = MonotonicInstant.now() + .seconds(20)
            while !lines.withLock({ $0.contains { $0.contains(text) } }) {
                guard MonotonicInstant.now() < deadline else { throw TestFailure("never logged: \(text)") }
                daemon.advanceTime(by: .milliseconds(500))
                daemon.turn(waitingUpTo: 10)
            }
        }
        try turn(untilLogged: "cannot write the meeting journal")
        _ = try client.result("session.end", ["action": "save"])
        try turn(untilLogged: "cannot write the meeting's details")
        let failure = lines.withLock { $0.first { $0.contains("cannot write the meeting's details") } } ?? ""
        #expect(!failure.contains("in the journal"), "\(failure)")
        #expect(failure.contains("journal could not be written either"), "\(failure)")
    }
}
