import Glibc
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

    /// On a manual clock: the uptime is the loop's, and time passes only when the test moves it.
    @Test func aRepeatedStatusLineStillCountsTheUptime() throws {
        let directory = TemporaryDirectory("replay")
        let daemon = try VirtualTimeTests.daemon(directory)
        let client = LoopClient(try daemon.connect(), daemon)
        let status = #"{"id":"s","cmd":"status"}"# + "\n"
        try client.send(status)
        let first = try #require(try client.reply(to: "s")["result"]?["uptime"]?.numberValue?.double)
        daemon.advanceTime(by: .milliseconds(1500))
        try client.send(status)
        let second = try #require(try client.reply(to: "s")["result"]?["uptime"]?.numberValue?.double)
        #expect(abs(second - first - 1.5) < 0.0005, "\(first) then \(second)")
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

    /// A `status` of a few KiB (the data directory's long path is in it twice) pipelined 2,000 times by a
    /// client that reads every reply: reading pauses at 192 KiB unsent, so the client is never over
    /// `maxOutputBytes`. Before, a run of 256 replays was appended at once, 1.15 MB of 4.5 KB replies, and
    /// the client was cut off before its first reply.
    @Test func aBigStatusPipelinedIsPausedForNotCutOff() throws {
        let directory = TemporaryDirectory("replay")
        var path = directory.path
        for letter in "abcdefghij" {
            path += "/" + String(repeating: letter, count: 200)
            try #require(mkdir(path, 0o700) == 0)
        }
        let daemon = try InProcessDaemon(dataDirectory: path)
        let client = LoopClient(try daemon.connect(), daemon)
        let status = #"{"id":"s","cmd":"status"}"# + "\n"
        try client.send(String(repeating: status, count: 2000) + #"{"id":"end","cmd":"ping"}"# + "\n")
        let replies = try client.take { $0["id"] == "end" }
        let statuses = replies.filter { $0["id"] == "s" }
        #expect(statuses.count == 2000)
        let size = JSONWriter().string(statuses.last ?? .null).utf8.count
        #expect(size > 4096, "the status reply is \(size) bytes")
    }
}
