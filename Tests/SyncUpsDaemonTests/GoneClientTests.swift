import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// A client that writes its requests and closes its socket without reading the replies (a script's `sendall`
/// then `close`): every line it sent is carried out, in order, and the connection ends once they are.
@Suite struct GoneClientTests {
    /// A gone client's replies are not queued at all: nothing would ever send them. Before, each was encoded
    /// into its output and dropped only at the next send, so `ConnectionState`'s "a gone client's output never
    /// fills up" held only because the input loop checks its send point before its pause threshold.
    @Test func aGoneClientsRepliesAreNotQueued() throws {
        let loop = try EventLoop()
        let server = Server(loop: loop, limits: Limits(), version: "test", logger: .discarding)
        defer { server.shutDown(reason: "test") }
        let (daemonEnd, clientEnd) = try ServerTurnTests.socketPair()
        defer { clientEnd.close() }
        let connection = try #require(server.adopt(daemonEnd))
        _ = connection.state.apply(.peerGone)  // the fact alone: its action (reading the rest) is not wanted here
        #expect(connection.state.isPeerGone && connection.state.acceptsOutput)
        server.enqueue(Array(repeating: 0x41, count: 100_000), to: connection)
        let queued = connection.output.count
        #expect(queued == 0, "\(queued) bytes queued for a client that is gone")
    }

    /// Three deletes pipelined, then a close. Each `syncups.delete` is answered off the loop (it waits for its
    /// people's voice profiles to go), so the connection waited for the first reply when the hang-up came:
    /// it was closed there and then, and the other two deletes were never done (attack 37's C4).
    @Test func linesSentBeforeTheClientClosedAreCarriedOut() throws {
        let directory = TemporaryDirectory("gone-client")
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        let client = LoopClient(try daemon.connect(), daemon)
        var ids: [String] = []
        for title in ["B", "C", "D"] {
            let created = try client.result("syncups.create", ["title": .string(title), "attendees": ["Ann"]])
            ids.append(try #require(created["id"]?.stringValue))
        }
        let connections = try client.result("status")["connections"]
        let script = try daemon.connect()
        let lines = ids.map { #"{"cmd":"syncups.delete","args":{"id":"\#($0)"}}"# + "\n" }.joined()
        try UnixSocket.sendAll(script, Array(lines.utf8))
        script.close()
        let deadline = MonotonicInstant.now() + .seconds(20)
        while !daemon.syncUpIDs.isEmpty, MonotonicInstant.now() < deadline { daemon.turn(waitingUpTo: 10) }
        #expect(daemon.syncUpIDs.isEmpty, "left: \(daemon.syncUpIDs.count) of 3")
        // And the connection is gone: nothing of it is left behind.
        _ = try client.waitForStatus { $0["connections"] == connections }
    }

    /// A script pipelined more than a line's limit of requests and closed without reading. All of it is in
    /// the socket when the hang-up comes; only a line's limit past what the daemon held was read then, and the
    /// rest died with the socket, the creates at its end among it, silently (attack 37b's E1).
    @Test func aBacklogLongerThanALineIsCarriedOutToItsEnd() throws {
        let directory = TemporaryDirectory("gone-backlog")
        var limits = Limits()
        limits.maxLineBytes = 4096
        let daemon = try InProcessDaemon(dataDirectory: directory.path, limits: limits)
        let client = LoopClient(try daemon.connect(), daemon)
        let connections = try client.result("status")["connections"]
        let script = try daemon.connect()
        // Room for it all, the default limit (`wmem_max`) doubled by the kernel is ample.
        var size: CInt = 1 << 20
        setsockopt(script.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        // 100 KB: more than a read's buffer (64 KiB) and a line's limit together.
        let statuses = String(repeating: #"{"cmd":"status"}"# + "\n", count: 6000)
        let creates = (1...3).map {
            #"{"cmd":"syncups.create","args":{"title":"Last \#($0)","attendees":["Ann"]}}"# + "\n"
        }
        try UnixSocket.sendAll(script, Array((statuses + creates.joined()).utf8))
        script.close()
        let deadline = MonotonicInstant.now() + .seconds(20)
        while daemon.syncUpIDs.count < 3, MonotonicInstant.now() < deadline { daemon.turn(waitingUpTo: 10) }
        #expect(daemon.syncUpIDs.count == 3, "created: \(daemon.syncUpIDs.count) of 3")
        _ = try client.waitForStatus { $0["connections"] == connections }
    }

    /// A script that read no reply (one waits in its socket) sends a last line without a newline and closes:
    /// Linux then ends the daemon's reads with ECONNRESET, not with an end of file, and that last line was
    /// taken for one cut short and dropped, though the protocol carries a last line out (attack 38's break 1).
    @Test func aLastLineWithoutNewlineIsCarriedOutWhenTheClientLeftRepliesUnread() throws {
        let directory = TemporaryDirectory("gone-reset")
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        let client = LoopClient(try daemon.connect(), daemon)
        let connections = try client.result("status")["connections"]
        let script = try daemon.connect()
        try UnixSocket.sendAll(script, Array((#"{"cmd":"syncups.create","args":{"title":"First"}}"# + "\n").utf8))
        let deadline = MonotonicInstant.now() + .seconds(20)
        while daemon.syncUpIDs.count < 1, MonotonicInstant.now() < deadline { daemon.turn(waitingUpTo: 10) }
        // Its reply is in the script's socket, unread; the close now resets the daemon's end.
        try UnixSocket.sendAll(script, Array(#"{"cmd":"syncups.create","args":{"title":"Last"}}"#.utf8))
        script.close()
        while daemon.syncUpIDs.count < 2, MonotonicInstant.now() < deadline { daemon.turn(waitingUpTo: 10) }
        #expect(daemon.syncUpIDs.count == 2, "created: \(daemon.syncUpIDs.count) of 2")
        _ = try client.waitForStatus { $0["connections"] == connections }
    }
}
