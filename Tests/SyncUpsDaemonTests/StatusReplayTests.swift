import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// A `status` line repeated byte for byte is answered from the last reply (`Server.replayGeneration`) only
/// while nothing that reply says has changed.
@Suite struct StatusReplayTests {
    static func daemon() throws -> (TemporaryDirectory, InProcessDaemon, LoopClient) {
        let directory = TemporaryDirectory("replay")
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        return (directory, daemon, LoopClient(try daemon.connect(), daemon))
    }

    @Test func aStatusLineRepeatedInTheSameBurstAfterAChangeSaysWhatChanged() throws {
        let (directory, daemon, client) = try Self.daemon()
        _ = directory
        _ = daemon
        let status = #"{"id":"s","cmd":"status"}"# + "\n"
        try client.send(
            status + status + #"{"id":"c","cmd":"syncups.create","args":{"title":"New"}}"# + "\n" + status)
        let replies = try client.take { $0["id"] == "s" && $0["result"]?["syncUps"] == 1 }
            .filter { $0["id"] == "s" }
        #expect(replies.map { $0["result"]?["syncUps"] } == [0, 0, 1])
        #expect(replies.last?["result"]?["seq"] != replies.first?["result"]?["seq"])
    }

    @Test func aRepeatedStatusLineStillCountsTheUptime() throws {
        let (directory, daemon, client) = try Self.daemon()
        _ = directory
        _ = daemon
        let status = #"{"id":"s","cmd":"status"}"# + "\n"
        try client.send(status)
        let first = try #require(try client.reply(to: "s")["result"]?["uptime"]?.numberValue?.double)
        // The uptime has millisecond precision: wait until the clock has passed the next millisecond.
        let later = MonotonicInstant.now() + .milliseconds(2)
        while MonotonicInstant.now() < later {}
        try client.send(status)
        let second = try #require(try client.reply(to: "s")["result"]?["uptime"]?.numberValue?.double)
        #expect(second > first)
    }

    @Test func anotherIdGetsItsOwnReply() throws {
        let (directory, daemon, client) = try Self.daemon()
        _ = directory
        _ = daemon
        try client.send(#"{"id":"a","cmd":"status"}"# + "\n" + #"{"id":"a","cmd":"status"}"# + "\n")
        try client.send(#"{"id":"b","cmd":"status"}"# + "\n" + #"{"cmd":"status"}"# + "\n")
        let replies = try client.take { $0["id"] == .null && $0["ok"] == true }
        #expect(replies.compactMap { $0["event"] == nil ? $0["id"] : nil } == ["a", "a", "b", .null])
    }
}
