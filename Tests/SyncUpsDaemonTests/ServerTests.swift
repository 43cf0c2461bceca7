import Glibc
import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol
import SyncUpsTestSupport
import Testing

/// The server's framing, turn by turn: lines are whatever reached a newline, however the bytes were split;
/// a line over the limit is refused and the connection closed; a client that closes its side still gets
/// its answers.
@Suite struct ServerTests {
    static func daemon(maxLineBytes: Int = Limits().maxLineBytes) throws -> (TemporaryDirectory, InProcessDaemon) {
        let directory = TemporaryDirectory("server")
        var limits = Limits()
        limits.maxLineBytes = maxLineBytes
        return (directory, try InProcessDaemon(dataDirectory: directory.path, limits: limits))
    }

    /// Turns the loop until the daemon has closed `fd` (a read returns 0); false if it stays open.
    static func waitForClose(_ fd: FileDescriptor, _ daemon: InProcessDaemon) -> Bool {
        let deadline = MonotonicInstant.now() + .seconds(10)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while MonotonicInstant.now() < deadline {
            daemon.turn(waitingUpTo: 10)
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd.rawValue, $0.baseAddress, $0.count) }
            if count == 0 { return true }
        }
        return false
    }

    @Test(arguments: [1, 7, 12, 23])
    func answersALineSplitAcrossReadsOnceItsNewlineComes(splitAt: Int) throws {
        let (directory, daemon) = try Self.daemon()
        _ = directory
        let client = LoopClient(try daemon.connect(), daemon)
        let line = Array(#"{"id":"split","cmd":"ping"}"#.utf8)
        try client.send(String(decoding: line[..<splitAt], as: UTF8.self))
        for _ in 0..<5 { daemon.turn() }
        try client.send(String(decoding: line[splitAt...], as: UTF8.self))
        for _ in 0..<5 { daemon.turn() }
        client.drainSocket()
        #expect(!client.hasLine { _ in true }, "answered before the newline")
        try client.send("\r\n")
        let reply = try client.reply(to: "split")
        #expect(reply["result"] == "pong", "\(reply)")
    }

    @Test func refusesALineOverTheLimitAndClosesTheConnection() throws {
        let (directory, daemon) = try Self.daemon(maxLineBytes: 64)
        _ = directory
        let fd = try daemon.connect()
        let client = LoopClient(fd, daemon)
        _ = try client.result("ping")  // a line under the limit is fine
        // No newline yet: the limit holds for what is still coming too.
        try client.send(#"{"id":"long","cmd":"ping","args":{"padding":""# + String(repeating: "x", count: 100))
        let refused = try client.take { $0["error"] != nil }.last
        #expect(refused?["id"] == .null)
        #expect(refused?["error"]?["code"] == "line_too_long", "\(String(describing: refused))")
        #expect(Self.waitForClose(fd, daemon))
        // Others go on being answered.
        #expect(try LoopClient(try daemon.connect(), daemon).result("ping") == "pong")
    }

    /// The subscriber limit counts connections, not subscriptions: one that changes what it follows keeps
    /// its one place; one that follows nothing any more, or closes, gives its place back; a subscriber past
    /// the limit is refused with the reason (and its ping still answered). (A half-closed subscriber keeps its
    /// place: it still reads its events, as `echo subscribe | socat - UNIX-CONNECT:…` does.)
    @Test func theSubscriberLimitCountsConnectionsAndFreesThePlaceOfOneThatLeaves() throws {
        let directory = TemporaryDirectory("subscribers")
        var limits = Limits()
        limits.maxSubscribers = 2
        let daemon = try InProcessDaemon(dataDirectory: directory.path, limits: limits)
        func subscribe(_ client: LoopClient, _ topics: [String]) throws -> JSONValue {
            try client.send(
                JSONWriter().string(
                    ["id": "sub", "cmd": "subscribe", "args": ["topics": .array(topics.map(JSONValue.string))]])
                    + "\n")
            return try client.reply(to: "sub")
        }
        /// Asks until the daemon has seen a close (a deadline against a hang, not a measure).
        func subscribeOnceAPlaceIsFree(_ client: LoopClient) throws -> JSONValue {
            let deadline = MonotonicInstant.now() + .seconds(10)
            var reply = try subscribe(client, ["session"])
            while reply["ok"] != true, MonotonicInstant.now() < deadline {
                daemon.turn(waitingUpTo: 10)
                reply = try subscribe(client, ["session"])
            }
            return reply
        }
        let first = LoopClient(try daemon.connect(), daemon)
        var second: LoopClient? = LoopClient(try daemon.connect(), daemon)
        var third: LoopClient? = LoopClient(try daemon.connect(), daemon)
        #expect(try subscribe(first, ["session"])["ok"] == true)
        #expect(try subscribe(first, ["session", "syncups"])["ok"] == true, "a change is not a second place")
        #expect(try subscribe(second!, ["syncups"])["ok"] == true)
        let refused = try subscribe(third!, ["session"])
        #expect(refused["error"]?["code"] == "too_many_subscriptions", "\(refused)")
        #expect(try third!.result("ping") == "pong")
        // Following nothing any more frees the place.
        _ = try first.result("unsubscribe")
        #expect(try subscribe(third!, ["session"])["ok"] == true)
        #expect(try subscribe(first, ["session"])["error"]?["code"] == "too_many_subscriptions")
        // So does a close, with its input read to the end or not.
        second = nil
        #expect(try subscribeOnceAPlaceIsFree(first)["ok"] == true)
        let fourth = LoopClient(try daemon.connect(), daemon)
        #expect(try subscribe(fourth, ["session"])["error"]?["code"] == "too_many_subscriptions")
        try third!.send(#"{"id":"unread","cmd":"status"}"# + "\n")
        third = nil
        #expect(try subscribeOnceAPlaceIsFree(fourth)["ok"] == true)
    }

    @Test func answersWhatAClientSentBeforeClosingItsSideThenCloses() throws {
        let (directory, daemon) = try Self.daemon()
        _ = directory
        let fd = try daemon.connect()
        let client = LoopClient(fd, daemon)
        // The last line has no newline: the end of input ends it.
        try client.send(#"{"id":"one","cmd":"ping"}"# + "\n" + #"{"id":"two","cmd":"ping"}"#)
        #expect(shutdown(fd.rawValue, CInt(SHUT_WR)) == 0)
        #expect(try client.reply(to: "one")["result"] == "pong")
        #expect(try client.reply(to: "two")["result"] == "pong")
        #expect(Self.waitForClose(fd, daemon))
    }

    /// A client that shuts its sending side while its reading is paused for unread replies (it pipelined
    /// more than the pause threshold and read nothing) still gets every reply, in order, then the end of the
    /// stream: the half-close is seen when reading resumes, after the lines before it (no `EPOLLRDHUP`).
    @Test func aHalfCloseWhileReadingIsPausedStillGetsEveryReplyThenTheEnd() throws {
        let directory = TemporaryDirectory("server")
        let daemon = try InProcessDaemon(dataDirectory: directory.path, readPauseThreshold: 1024)
        let fd = try daemon.connect()
        let client = LoopClient(fd, daemon)
        let lines = (0..<200).map { #"{"id":\#($0),"cmd":"ping"}"# + "\n" }.joined()
        try client.send(lines)
        for _ in 0..<5 { daemon.turn() }
        #expect(daemon.pauses > 0, "reading never paused")
        #expect(shutdown(fd.rawValue, CInt(SHUT_WR)) == 0)
        for _ in 0..<5 { daemon.turn() }
        let replies = try client.take { $0["id"] == 199 }
        #expect(replies.compactMap { $0["id"]?.numberValue?.int64 } == (0..<200).map(Int64.init))
        #expect(replies.allSatisfy { $0["result"] == "pong" })
        #expect(Self.waitForClose(fd, daemon))
    }

    /// `InProcessDaemon.handle` (the fuzzer's way in) takes every client's path, not a shortcut past the
    /// server: a reply over the output limit closes its connection, as on a socket, and the next line is
    /// answered on a new one. (Through the old `Server.reply(to:)` the whole reply came back.)
    @Test func theInProcessDaemonsLinesMeetTheSameLimitsAsASocketClients() throws {
        let directory = TemporaryDirectory("server")
        var limits = Limits()
        limits.maxOutputBytes = 256
        let daemon = try InProcessDaemon(dataDirectory: directory.path, limits: limits)
        let ping = Array(#"{"id":"p","cmd":"ping"}"#.utf8)
        #expect(
            ping.withUnsafeBytes { daemon.handle($0) } == Array(#"{"id":"p","ok":true,"result":"pong"}"#.utf8) + [0x0A])
        let themes = Array(#"{"id":"t","cmd":"themes.list"}"#.utf8)
        #expect(themes.withUnsafeBytes { daemon.handle($0) }.isEmpty)
        #expect(ping.withUnsafeBytes { daemon.handle($0) }.count > 0)
        // A blank line is answered by nothing, as on a socket.
        #expect([UInt8(0x0D)].withUnsafeBytes { daemon.handle($0) }.isEmpty)
    }

    /// Writes `bytes` to a non-blocking client socket, turning the daemon's loop whenever the socket is full:
    /// a line bigger than the socket's buffer (a 1 MiB request) reaches a daemon that only runs when told.
    static func sendTurning(_ bytes: [UInt8], to fd: FileDescriptor, _ daemon: InProcessDaemon) throws {
        var written = 0
        let deadline = MonotonicInstant.now() + .seconds(30)
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(fd.rawValue, $0.baseAddress, $0.count) }
            if count > 0 {
                written += count
            } else {
                guard MonotonicInstant.now() < deadline else { throw TestFailure("the daemon stopped reading") }
                daemon.turn()
            }
        }
    }

    /// Every reply echoes the request's id, so an id of 600,000 bytes made a 600 KB error reply (over
    /// `maxReplyBytes`), and one of 1,048,554 bytes (a legal 1 MiB line) an error over the output limit: the
    /// client was cut off without a reply. An id over `Request.maxIDBytes` is refused, answered with id null;
    /// and an error whose message echoes a huge part of the line (an unknown field's name) is kept under the
    /// reply limit too. The connection goes on either way.
    @Test(arguments: [
        (600_000, "id"), (1_048_554, "id"), (600_000, "field"), (1_048_554 - 20, "field"),
    ])
    func aHugeIdOrFieldGetsABoundedReplyAndTheConnectionGoesOn(size: Int, kind: String) throws {
        let (directory, daemon) = try Self.daemon()
        _ = directory
        let fd = try daemon.connect()
        let client = LoopClient(fd, daemon)
        let huge = String(repeating: "x", count: size)
        let line = kind == "id" ? #"{"id":""# + huge + #"","cmd":"ping"}"# : #"{"cmd":"ping",""# + huge + #"":1}"#
        #expect(line.utf8.count <= Limits().maxLineBytes)
        try Self.sendTurning(Array((line + "\n").utf8), to: fd, daemon)
        let replies = try client.take { $0["ok"] != nil }
        let reply = try #require(replies.last)
        #expect(reply["id"] == .null)
        #expect(reply["error"]?["code"] == "invalid_request")
        let message = reply["error"]?["message"]?.stringValue ?? ""
        #expect(JSONWriter().encode(reply).count <= Limits().maxReplyBytes, "\(message.prefix(200))")
        if kind == "id" { #expect(message.contains("at most \(Request.maxIDBytes) bytes"), "\(message.prefix(200))") }
        // The same connection is answered again.
        #expect(try client.result("ping") == "pong")
    }

    /// The longest id still allowed is echoed as it was sent.
    @Test func anIdOfTheLongestAllowedLengthIsEchoed() throws {
        let (directory, daemon) = try Self.daemon()
        _ = directory
        let client = LoopClient(try daemon.connect(), daemon)
        let id = String(repeating: "i", count: Request.maxIDBytes - 2)  // with its quotes, the limit
        try client.send(#"{"id":""# + id + #"","cmd":"ping"}"# + "\n")
        let reply = try client.reply(to: id)
        #expect(reply["result"] == "pong")
    }
}
