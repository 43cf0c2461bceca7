import Glibc
import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// Insights at the endings that used to get them wrong, through the whole daemon in virtual time.
@Suite struct EndingInsightsTests {
    /// Pause at 2 s, 3 s paused, `session.end`: the meeting took 5 s, 3 of them paused (it said 2.003 and 0:
    /// the pause that lasted to the end was taken for the save's wait).
    @Test func aPauseThatLastsToSessionEndCountsAsPaused() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, clock: .manual(startingAt: VirtualTimeTests.start))
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result(
            "syncups.create", ["title": "Solo", "duration": 60, "attendees": ["Ann", "Bob"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        daemon.advanceTime(by: .seconds(2))
        _ = try client.result("session.pause")
        daemon.advanceTime(by: .seconds(3))
        let ended = try client.result("session.end", ["action": "save"])
        let meeting = try #require(ended["meeting"]?.stringValue)
        let got = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meeting)])
        #expect(got["insights"]?["realSeconds"] == 5)
        #expect(got["insights"]?["pausedSeconds"] == 3)
        #expect(got["insights"]?["attendees"]?[0]?["floor"] == 2)
    }
}
