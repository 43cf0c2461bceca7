import FoundationEssentials
import SyncUpsCore
import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsTestSupport
import Testing

/// New ids and dates come from the daemon's `UUIDGenerator` and `WallClock`, never from `UUID()` or
/// `Date()` directly, so a test can fix them.
@Suite struct InjectedDependenciesTests {
    static let date = Date(timeIntervalSince1970: 1_234_567_890)

    @Test func idsAndDatesComeFromTheInjectedGenerators() throws {
        let directory = TemporaryDirectory("injected")
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, uuid: .incrementing(), wallClock: .fixed(Self.date))
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result("syncups.create", ["title": "Fixed", "attendees": ["Ann"]])
        #expect(created["id"]?.stringValue == "00000000-0000-0000-0000-000000000000")
        #expect(created["attendees"]?[0]?["id"]?.stringValue == "00000000-0000-0000-0000-000000000001")
        let status = try client.result("status", [:])
        #expect(status["startedAt"]?.stringValue == "2009-02-13T23:31:30Z")
    }

    @Test func aCorruptFileIsMovedAsideUnderTheInjectedDate() throws {
        let directory = TemporaryDirectory("injected-corrupt")
        Files.write(directory.path + "/sync-ups.json", "{ not json")
        _ = try InProcessDaemon(dataDirectory: directory.path, wallClock: .fixed(Self.date))
        #expect(Files.list(directory.path).contains("sync-ups.json.corrupt-20090213T233130Z"))
    }
}
