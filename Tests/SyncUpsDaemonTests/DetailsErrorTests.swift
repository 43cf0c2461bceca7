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
        let meeting = try VirtualTimeTests.savedMeeting(of: id, by: client, in: directory)
        let path = directory.path + "/meetings/" + meeting + ".json"
        let key = String(repeating: "k", count: 700_000)
        Files.write(path, "{\"\(key)\":1,\"\(key)\":2}")
        let read = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meeting)])
        let error = try #require(read["detailsError"]?.stringValue)
        #expect(error.utf8.count < 300, "\(error.utf8.count) bytes")
        #expect(error.hasPrefix("meetings/\(meeting).json: duplicate key \"kkkk"), "\(error.prefix(200))")
        #expect(read["segments"] == [])
    }
}
