import Glibc
import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// A meeting recovered at start-up whose details file cannot be written then gets the retry every other
/// details write gets: `status` reports the failure meanwhile, and once the write works the details are on
/// disk, the journal goes and the failure ends. Before, the one write at start-up was all it got: the details
/// stayed in memory until the next restart.
@Suite struct DetailsFailureRecoveryTests {
    @Test func aRecoveredMeetingWhoseDetailsCannotBeWrittenIsRetried() throws {
        let directory = TemporaryDirectory("recovered-details")
        let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        var meeting = ""
        do {
            // A meeting left running by a daemon that never stopped: its journal is all there is.
            let crashed = try InProcessDaemon(dataDirectory: directory.path, clock: .manual(startingAt: start))
            let client = LoopClient(try crashed.connect(), crashed)
            let created = try client.result("syncups.create", ["title": "Crash", "duration": 60, "attendees": ["A"]])
            let started = try client.result("session.start", ["syncup": created["id"]!, "audio": false])
            meeting = try #require(started["meeting"]?.stringValue)
        }
        let details = directory.path + "/meetings/" + meeting + ".json"
        let journal = directory.path + "/meetings/" + meeting + ".recording.json"
        #expect(Files.exists(journal))
        // A directory where the details file goes: its write fails, for root too.
        #expect(mkdir(details, 0o700) == 0)
        #expect(mkdir(details + "/in-the-way", 0o700) == 0)

        let daemon = try InProcessDaemon(dataDirectory: directory.path, clock: .manual(startingAt: start))
        let client = LoopClient(try daemon.connect(), daemon)
        let failing = try client.result("status")
        #expect(
            failing["persistence"]?["warnings"]?.arrayValue?.contains {
                $0.stringValue?.hasPrefix("cannot write the details of a recovered meeting") == true
            } == true, "\(failing)")
        #expect(
            failing["persistence"]?["lastError"]?.stringValue?.contains("cannot write the meeting's details") == true)

        // The way is clear again: the retry after the store's back-off writes the details.
        #expect(rmdir(details + "/in-the-way") == 0 && rmdir(details) == 0)
        daemon.advanceTime(by: .seconds(1))
        let deadline = MonotonicInstant.now() + .seconds(20)
        while !Files.exists(details) || Files.exists(journal) {
            guard MonotonicInstant.now() < deadline else { break }
            daemon.turn(waitingUpTo: 10)
        }
        #expect(Files.exists(details) && Files.readString(details)?.contains(meeting) == true)
        #expect(!Files.exists(journal))
        let recovered = try client.result("status")
        #expect(recovered["persistence"]?["lastError"] == .null)
        // And the warning that said they could not be written is gone with the failure.
        #expect(
            recovered["persistence"]?["warnings"]?.arrayValue?.contains {
                $0.stringValue?.hasPrefix("cannot write the details of a recovered meeting") == true
            } == false, "\(recovered)")
    }
}
