import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// B10: a hand-edited details file whose parse error quotes a 700 KB key leaves its meeting readable, with a
/// `detailsError` cut short and no segments. Before, the error quoted the whole key and `meetings.get` answered
/// `internal` ("the reply would be 700463 bytes…"), whatever page was asked for.
@Suite struct DetailsErrorTests {
    @Test func aDetailsErrorQuotingAHugeKeyIsCutShortAndTheMeetingStaysReadable() throws {
        let directory = TemporaryDirectory("details-error")
        let daemon = try VirtualTimeTests.daemon(directory)
        let (client, _, id) = try VirtualTimeTests.soloSyncUp(daemon, watching: "daemon")
        let started = try client.result("session.start", ["syncup": .string(id), "audio": false])
        let meeting = try #require(started["meeting"]?.stringValue)
        daemon.advanceTime(by: .seconds(2))
        _ = try client.result("session.end", ["action": "save"])
        let path = directory.path + "/meetings/" + meeting + ".json"
        // The journal goes once the details are written and reported: from then on they are read from the file.
        _ = try client.waitForStatus { _ in !Files.exists(directory.path + "/meetings/" + meeting + ".recording.json") }
        let key = String(repeating: "k", count: 700_000)
        Files.write(path, "{\"\(key)\":1,\"\(key)\":2}")
        let read = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meeting)])
        let error = try #require(read["detailsError"]?.stringValue)
        #expect(error.utf8.count < 300, "\(error.utf8.count) bytes")
        #expect(error.hasPrefix("meetings/\(meeting).json: duplicate key \"kkkk"), "\(error.prefix(200))")
        #expect(read["segments"] == [])
    }
}
