import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// `syncups.schedule` is the user's data: a write the disk refuses is reported in `status.persistence` and
/// retried with the latest schedules until it works (issue 29's attack, break 3). The daemons run on a manual
/// clock: the store's write throttle and the retries' back-off pass in virtual time (`waitForStatus(advancing:)`).
@Suite struct ScheduleFileTests {
    let directory = TemporaryDirectory("schedfile")
    let faults = FaultyFileSystem()
    static let step = Duration.milliseconds(500)

    func daemon(fileSystem: FileSystem = .live) throws -> InProcessDaemon {
        try InProcessDaemon(
            dataDirectory: directory.path, clock: .manual(startingAt: VirtualTimeTests.start), fileSystem: fileSystem)
    }

    var scheduleOnDisk: String {
        String(decoding: Files.read(directory.appending("syncups.schedule")) ?? [], as: UTF8.self)
    }

    /// The disk is full when a schedule is set and another cleared: `status` says so (the file and the error)
    /// until space is back; then the file holds the latest schedules. Before, the commands succeeded, status
    /// said nothing, nothing retried, and a restart brought the cleared schedule back and lost the new one.
    @Test func aFullDiskIsReportedAndRetriedWithTheLatestSchedules() throws {
        let daemon = try self.daemon(fileSystem: faults.fileSystem)
        let client = LoopClient(try daemon.connect(), daemon)
        let design = try client.result("syncups.create", ["title": "Design", "duration": 60, "attendees": ["A"]])
        let ops = try client.result("syncups.create", ["title": "Ops", "duration": 60, "attendees": ["B"]])
        _ = try client.result(
            "schedule.set", ["syncup": try #require(design["id"]), "schedule": "mon-fri 09:30", "timeZone": "UTC"])
        try client.waitForStatus(advancing: Self.step) {
            scheduleOnDisk.contains("mon-fri 09:30") && $0["persistence"]?["unsavedChanges"] == false
        }

        faults.fail(.write, with: .noSpace)
        _ = try client.result("schedule.clear", ["syncup": try #require(design["id"])])
        _ = try client.result(
            "schedule.set", ["syncup": try #require(ops["id"]), "schedule": "daily 10:00", "timeZone": "UTC"])
        let failing = try client.waitForStatus(advancing: Self.step) {
            $0["persistence"]?["lastError"]?.stringValue?.contains("syncups.schedule") == true
        }
        let error = failing["persistence"]?["lastError"]?.stringValue ?? ""
        #expect(error.contains("No space left"), "\(error)")
        #expect(failing["persistence"]?["unsavedChanges"] == true)
        #expect(scheduleOnDisk.contains("mon-fri 09:30"))

        faults.heal()
        try client.waitForStatus(advancing: Self.step) {
            $0["persistence"]?["lastError"] == .null && $0["persistence"]?["unsavedChanges"] == false
        }
        #expect(!scheduleOnDisk.contains("mon-fri 09:30"), "\(scheduleOnDisk)")
        #expect(scheduleOnDisk.contains("daily 10:00"), "\(scheduleOnDisk)")
    }

    /// A hand-edited file: an entry that does not parse is kept verbatim when another schedule is set (it was
    /// deleted at the next save), and a schedule of a sync-up that does not exist is dropped with one warning.
    @Test func keepsAnEntryThatDoesNotParseAndDropsUnknownSyncUps() throws {
        let (design, ops): (String, String)
        do {
            let daemon = try self.daemon()
            let client = LoopClient(try daemon.connect(), daemon)
            let created = try client.result("syncups.create", ["title": "Design", "duration": 60, "attendees": ["A"]])
            design = try #require(created["id"]?.stringValue)
            let other = try client.result("syncups.create", ["title": "Ops", "duration": 60, "attendees": ["B"]])
            ops = try #require(other["id"]?.stringValue)
            try client.waitForStatus(advancing: Self.step) { $0["persistence"]?["unsavedChanges"] == false }
        }
        let bad = #"{"syncup":"\#(design)","schedule":"mon-fry 25:00","timeZone":"UTC","note":"mine"}"#
        let unknown = #"{"syncup":"00000000-0000-0000-0000-0000000000AA","schedule":"daily 10:00","timeZone":"UTC"}"#
        let file = #"{"version":1,"schedules":[\#(bad),\#(unknown)]}"#
        Files.write(directory.appending("syncups.schedule"), Array(file.utf8))

        let daemon = try self.daemon()
        let client = LoopClient(try daemon.connect(), daemon)
        let warnings = try client.result("status")["persistence"]?["warnings"]?.arrayValue ?? []
        #expect(warnings.contains { $0.stringValue?.contains("1 schedules of sync-ups that do not exist") == true })
        #expect(warnings.contains { $0.stringValue?.contains("kept in the file") == true }, "\(warnings)")
        _ = try client.result("schedule.set", ["syncup": .string(ops), "schedule": "daily 10:00", "timeZone": "UTC"])
        try client.waitForStatus(advancing: Self.step) { _ in scheduleOnDisk.contains(ops) }
        #expect(scheduleOnDisk.contains("mon-fry 25:00") && scheduleOnDisk.contains("mine"), "\(scheduleOnDisk)")
        #expect(!scheduleOnDisk.contains("0000000000AA"), "\(scheduleOnDisk)")
    }

    /// A file over 1 MiB (the attack's 45 MB took 108 s to start) is not read: moved aside with a warning.
    @Test func movesAsideAFileOverOneMebibyte() throws {
        let huge = #"{"version":1,"schedules":[],"pad":""# + String(repeating: "x", count: 1 << 20) + #""}"#
        Files.write(directory.appending("syncups.schedule"), huge)
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        let client = LoopClient(try daemon.connect(), daemon)
        let warnings = try client.result("status")["persistence"]?["warnings"]?.arrayValue ?? []
        #expect(warnings.contains { $0.stringValue?.contains("is over 1 MiB") == true }, "\(warnings)")
        #expect(Files.read(directory.appending("syncups.schedule")) == nil)
        let names = (try? DirectoryListing.names(in: directory.path)) ?? []
        #expect(names.contains { $0.hasPrefix("syncups.schedule.corrupt-") }, "\(names)")
    }

    /// A `syncups.schedule` that cannot be read (here a directory at its name; on a real disk EACCES or EIO) is
    /// not taken for no file: it is moved aside with a warning, never overwritten by the next save. Before,
    /// any read error loaded nothing and said nothing.
    @Test func aFileThatCannotBeReadIsMovedAsideNotTakenForNone() throws {
        let path = directory.appending("syncups.schedule")
        #expect(mkdir(path, 0o755) == 0)
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        let client = LoopClient(try daemon.connect(), daemon)
        let warnings = try client.result("status")["persistence"]?["warnings"]?.arrayValue ?? []
        #expect(warnings.contains { $0.stringValue?.contains("cannot read") == true }, "\(warnings)")
        let names = (try? DirectoryListing.names(in: directory.path)) ?? []
        #expect(names.contains { $0.hasPrefix("syncups.schedule.corrupt-") }, "\(names)")
    }

    /// "Skip today" on a reminder: `status.next` counts down to the following start, not the skipped one (it
    /// said "Ops in 1 min" after Snooze then Skip today).
    @Test func statusNextPassesOverASkippedStart() throws {
        let start = Date(timeIntervalSince1970: 1_809_336_600)  // 2027-05-03 09:30 UTC, a Monday
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, wallClock: WallClock { start.addingTimeInterval(-60) })
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result("syncups.create", ["title": "Ops", "duration": 60, "attendees": ["A"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.result("schedule.set", ["syncup": .string(id), "schedule": "daily 09:30", "timeZone": "UTC"])
        #expect(try client.result("status")["next"]?["inSeconds"] == 60)
        daemon.scheduler.snooze(try #require(SyncUp.ID(uuidString: id)), start: 1_809_336_600)
        daemon.scheduler.skip(try #require(SyncUp.ID(uuidString: id)), start: 1_809_336_600)
        let next = try client.result("status")["next"]
        #expect(next?["inSeconds"] == 86_460, "\(String(describing: next))")
        #expect(next?["next"] == "2027-05-04T09:30:00Z")
    }

    /// A deleted sync-up's schedule leaves the file (it stayed there for good, break 11 of issue 29).
    @Test func deletingASyncUpRemovesItsSchedule() throws {
        let daemon = try self.daemon()
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result("syncups.create", ["title": "Ops", "duration": 60, "attendees": ["A"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.result("schedule.set", ["syncup": .string(id), "schedule": "daily 09:30", "timeZone": "UTC"])
        try client.waitForStatus(advancing: Self.step) { _ in scheduleOnDisk.contains(id) }
        _ = try client.result("syncups.delete", ["id": .string(id)])
        try client.waitForStatus(advancing: Self.step) {
            $0["persistence"]?["unsavedChanges"] == false && !scheduleOnDisk.contains(id)
        }
        #expect(scheduleOnDisk.contains("\"schedules\""), "\(scheduleOnDisk)")
    }
}
