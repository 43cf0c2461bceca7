import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// What runs within whose turn: a subscriber is never closed inside another client's request, and a timer
/// that comes due while a client's big replies are made waits for one of them, not for the whole pipeline.
@Suite struct ServerTurnTests {
    static let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)

    /// A connected, non-blocking socket pair: the daemon's end, then the client's.
    static func socketPair() throws -> (FileDescriptor, FileDescriptor) {
        var fds: [CInt] = [-1, -1]
        let flags = CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue) | CInt(SOCK_NONBLOCK.rawValue)
        #expect(socketpair(AF_UNIX, flags, 0, &fds) == 0)
        return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
    }

    /// Clients connecting faster than the loop turns (a script that connects and closes in a loop) are
    /// accepted `acceptsPerTurn` at a time: the loop polls between, so the other clients' requests, the
    /// hang-ups of those who left and the timers are handled, and the listener (level-triggered) reports the
    /// rest on the next poll. It accepted until `accept` said EAGAIN: one connect/close client kept the loop in
    /// `accept4` (1,162 calls and no `epoll_wait` in a second, attack 42), a ping took 1.5 s and the slots
    /// of departed clients were never given back.
    @Test func acceptsABoundedNumberOfConnectionsPerTurn() throws {
        let directory = TemporaryDirectory("accept-turn")
        let loop = try EventLoop()
        var limits = Limits()
        limits.maxConnections = 1000
        let server = Server(loop: loop, limits: limits, version: "test", logger: .discarding)
        let path = directory.path + "/socket"
        let listener = try UnixSocket.listen(path: path)
        try server.start(listener: listener)
        // The server's from here on, closed by its shutDown (closed here too, the second close closed another
        // test's descriptor of the same number: a daemon's queue or mailbox, which then hung).
        defer { server.shutDown(reason: "test") }
        let waiting = Server.acceptsPerTurn * 3 + 1
        var clients: [FileDescriptor] = []
        defer { for client in clients { client.close() } }
        for _ in 0..<waiting { clients.append(try UnixSocket.connect(path: path)) }
        loop.runOnce(timeoutMilliseconds: 1000)
        #expect(server.connections.count == Server.acceptsPerTurn)
        // The rest, on the next turns.
        let deadline = MonotonicInstant.now() + .seconds(10)
        while server.connections.count < waiting, MonotonicInstant.now() < deadline {
            loop.runOnce(timeoutMilliseconds: 100)
        }
        #expect(server.connections.count == waiting)
    }

    /// Events a request publishes overflow a subscriber's output limit: the subscriber is cut off then (its
    /// output discarded, nothing more queued), but closed on its own turn, after the request, as MPD defers
    /// it. It was closed inside `publish`, so the request that published saw the connections and the
    /// subscriber count change under it.
    @Test func aSubscriberOverItsOutputLimitIsClosedOnItsOwnTurnNotInsideAnotherClientsRequest() throws {
        let loop = try EventLoop(clock: .manual(startingAt: Self.start))
        var limits = Limits()
        limits.maxOutputBytes = 4096
        let server = Server(loop: loop, limits: limits, version: "test", logger: .discarding)
        let (daemonEnd, clientEnd) = try Self.socketPair()
        defer { clientEnd.close() }
        let subscriber = try #require(server.adopt(daemonEnd))
        try server.setTopics([.syncups], for: subscriber)
        let payload: JSONValue = ["padding": .string(String(repeating: "p", count: 1000))]
        // Within one request's turn: eight changes of a kilobyte each, twice the subscriber's limit.
        for _ in 0..<8 {
            server.publish(.syncups, "syncup.updated", payload)
            #expect(!subscriber.isClosed)
            #expect(server.connections[subscriber.number] != nil && server.subscriberCount == 1)
        }
        #expect(subscriber.output.count <= limits.maxOutputBytes)
        #expect(subscriber.state.phase == .cutOff)
        loop.runOnce(timeoutMilliseconds: 0)  // the subscriber's own turn
        #expect(subscriber.isClosed)
        #expect(server.connections.isEmpty && server.subscriberCount == 0)
        // It got none of the output it was cut off with: only the end of the stream.
        var byte: UInt8 = 0
        #expect(Glibc.read(clientEnd.rawValue, &byte, 1) == 0)
    }

    /// A meeting's tick that comes due while a client's pipelined `syncups.list` pages (300 KB each) are made
    /// is published after the first page, before the next line of that client is handled: a page ends its
    /// slice, and the loop fires due timers between handlers. On the manual clock no slice ever runs out of
    /// time, and timers fired only once per turn (the real clock) or never within one (the manual one), so
    /// the whole pipeline ran first: the `status` after the first page said the `seq` before the tick.
    @Test func aTickDueWhileBigRepliesArePipelinedIsPublishedBetweenTwoOfThem() throws {
        let directory = TemporaryDirectory("big-replies")
        let syncUps = (0..<100).map { SyncUp.realistic(index: $0, meetingCount: 28, transcriptBytes: 16) }
        let daemon = try InProcessDaemon(
            dataDirectory: directory.dataDirectory(holding: syncUps), readPauseThreshold: 64 << 20,
            clock: .manual(startingAt: Self.start))
        let client = LoopClient(try daemon.connect(), daemon)
        let watcher = LoopClient(try daemon.connect(), daemon)
        _ = try watcher.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": .string(syncUps[0].id.description), "audio": false])
        let page = #"{"id":"page","cmd":"syncups.list","args":{"limit":100}}"# + "\n"
        try client.send(page + #"{"id":"s1","cmd":"status"}"# + "\n" + page + #"{"id":"s2","cmd":"status"}"# + "\n")
        daemon.skipTime(by: .seconds(1))  // the first tick is due; it fires once the loop turns
        let first = try client.take { $0["id"] == "page" }.last
        #expect((first?["result"]?["syncups"]?.arrayValue?.count ?? 0) == 100)
        #expect(JSONWriter().encode(first ?? .null).count >= Server.sendChunk)
        let tick = try watcher.events(until: "session.tick").last
        let tickSeq = try #require(tick?["seq"]?.numberValue?.int64)
        let status = try client.reply(to: "s1")
        let seq = try #require(status["result"]?["seq"]?.numberValue?.int64)
        #expect(seq >= tickSeq, "the line after the first page ran before the tick (seq \(seq) < \(tickSeq))")
        #expect(try client.reply(to: "s2")["ok"] == true)
    }

    /// A client whose request the daemon had not read when it stopped (it reads none while it saves the
    /// meeting) reads end of file, as protocol.md's Stopping section says: closing a Unix socket with unread
    /// input resets its peer on Linux, so such clients read `ECONNRESET` after the whole save (attack 87: 8
    /// clients that connected as SIGTERM came waited 4.6 s for a reset).
    @Test func aClientWhoseRequestWasNotReadWhenTheDaemonStopsReadsEndOfFile() throws {
        let loop = try EventLoop(clock: .manual(startingAt: Self.start))
        let server = Server(loop: loop, limits: Limits(), version: "test", logger: .discarding)
        let (daemonEnd, clientEnd) = try Self.socketPair()
        defer { clientEnd.close() }
        #expect(server.adopt(daemonEnd) != nil)
        try clientEnd.writeAll(Array(#"{"id":"1","cmd":"status"}"#.utf8) + [0x0A])
        server.shutDown(reason: "test")
        var byte: UInt8 = 0
        let received = recv(clientEnd.rawValue, &byte, 1, 0)
        let error = received < 0 ? errno : 0
        #expect(received == 0, "the client read \(received) (errno \(error)), not end of file")
    }

    /// A client still writing requests as the daemon stops reads end of file too (attack 88: a writer blocked
    /// on a full socket woke as the stop read what was queued, and what it sent then was unread at the close:
    /// 4 of 6 such clients read a reset with a 4 MiB send buffer). Twenty stops, each with a writer blocked.
    @Test func aClientStillWritingWhenTheDaemonStopsReadsEndOfFile() throws {
        for round in 0..<20 {
            let loop = try EventLoop(clock: .manual(startingAt: Self.start))
            let server = Server(loop: loop, limits: Limits(), version: "test", logger: .discarding)
            let (daemonEnd, clientEnd) = try Self.socketPair()
            defer { clientEnd.close() }
            var size: CInt = 4 << 20
            setsockopt(clientEnd.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<CInt>.size))
            #expect(fcntl(clientEnd.rawValue, F_SETFL, 0) == 0)  // blocking: the writer waits on a full socket
            // A guard against a hang, not a measure: a daemon's end never closed fails the test (EAGAIN).
            var guardTime = timeval(tv_sec: 10, tv_usec: 0)
            for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
                setsockopt(clientEnd.rawValue, SOL_SOCKET, option, &guardTime, socklen_t(MemoryLayout<timeval>.size))
            }
            #expect(server.adopt(daemonEnd) != nil)
            let raw = clientEnd.rawValue
            let writer = try DedicatedThread(name: "test-writer") {
                let lines = Array(String(repeating: #"{"id":1,"cmd":"ping"}"# + "\n", count: 3000).utf8)
                while lines.withUnsafeBytes({ send(raw, $0.baseAddress, $0.count, CInt(MSG_NOSIGNAL)) }) > 0 {}
            }
            defer { writer.join() }
            // The writer is blocked once the socket holds more than a few of its sends (a full socket holds
            // 234,544 bytes with the default send buffer, 8 MB with 4 MiB).
            let deadline = MonotonicInstant.now() + .seconds(10)
            while (daemonEnd.queuedInputBytes ?? 0) < 150_000 && MonotonicInstant.now() < deadline { sched_yield() }
            server.shutDown(reason: "test")
            var buffer = [UInt8](repeating: 0, count: 4096)
            var received = 0
            repeat { received = recv(raw, &buffer, buffer.count, 0) } while received > 0
            let error = received < 0 ? errno : 0
            #expect(received == 0, "round \(round): the client read errno \(error), not end of file")
            if received != 0 { return }
        }
    }
}
