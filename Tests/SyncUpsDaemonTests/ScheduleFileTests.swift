import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// `syncups.schedule` is the user's data: a write the disk refuses is reported in `status.persistence` and
/// retried with the latest schedules until it works (issue 29's attack, break 3).
@Suite struct ScheduleFileTests {
    let directory = TemporaryDirectory("schedfile")
    let faults = FaultyFileSystem()

    var scheduleOnDisk: String {
        String(decoding: Files.read(directory.appending("syncups.schedule")) ?? [], as: UTF8.self)
    }

    /// The disk is full when a schedule is set and another cleared: `status` says so (the file and the error)
    /// until space is back; then the file holds the latest schedules. Before, the commands succeeded, status
    /// said nothing, nothing retried, and a restart brought the cleared schedule back and lost the new one.
    @Test func aFullDiskIsReportedAndRetriedWithTheLatestSchedules() throws {
        let daemon = try InProcessDaemon(dataDirectory: directory.path, fileSystem: faults.fileSystem)
        let client = LoopClient(try daemon.connect(), daemon)
        let design = try client.result("syncups.create", ["title": "Design", "duration": 60, "attendees": ["A"]])
        let ops = try client.result("syncups.create", ["title": "Ops", "duration": 60, "attendees": ["B"]])
        _ = try client.result(
            "schedule.set", ["syncup": try #require(design["id"]), "schedule": "mon-fri 09:30", "timeZone": "UTC"])
        try client.waitForStatus {
            scheduleOnDisk.contains("mon-fri 09:30") && $0["persistence"]?["unsavedChanges"] == false
        }

        faults.fail(.write, with: .noSpace)
        _ = try client.result("schedule.clear", ["syncup": try #require(design["id"])])
        _ = try client.result(
            "schedule.set", ["syncup": try #require(ops["id"]), "schedule": "daily 10:00", "timeZone": "UTC"])
        let failing = try client.waitForStatus {
            $0["persistence"]?["lastError"]?.stringValue?.contains("syncups.schedule") == true
        }
        let error = failing["persistence"]?["lastError"]?.stringValue ?? ""
        #expect(error.contains("No space left"), "\(error)")
        #expect(failing["persistence"]?["unsavedChanges"] == true)
        #expect(scheduleOnDisk.contains("mon-fri 09:30"))

        faults.heal()
        try client.waitForStatus {
            $0["persistence"]?["lastError"] == .null && $0["persistence"]?["unsavedChanges"] == false
        }
        #expect(!scheduleOnDisk.contains("mon-fri 09:30"), "\(scheduleOnDisk)")
        #expect(scheduleOnDisk.contains("daily 10:00"), "\(scheduleOnDisk)")
    }
}
