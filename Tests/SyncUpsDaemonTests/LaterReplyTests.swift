import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol
import Synchronization
import Testing

@testable import SyncUpsDaemon

/// Replies made off the loop (`ReplyBody.later`, a `meetings.get` of a large details file): one at a time on
/// the reply thread, and none for a client that is gone.
@Suite struct LaterReplyTests {
    static let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)

    /// What the reply thread made, in order, and the gate that holds each job until the test opens it.
    final class Jobs: Sendable {
        let made = Mutex<[String]>([])
        let gate: BlockingQueue<Bool>

        init() throws { gate = try BlockingQueue(capacity: 16) }

        var names: [String] { made.withLock { $0 } }
    }

    /// A server on the manual clock whose `slow` request is answered off the loop with its id, once the
    /// test opens the gate.
    static func server(_ jobs: Jobs) throws -> (EventLoop, Server) {
        let loop = try EventLoop(clock: .manual(startingAt: Self.start))
        let server = Server(loop: loop, limits: Limits(), version: "test", logger: .discarding)
        server.handler = { request, _ in
            guard request.command == "slow" else { return .success(.value("pong")) }
            let name = request.id.stringValue ?? "?"
            return .success(
                .later {
                    jobs.made.withLock { $0.append(name) }
                    _ = jobs.gate.pop()
                    return .success(.value(.string(name)))
                })
        }
        return (loop, server)
    }

    static func client(of server: Server) throws -> (Connection, FileDescriptor) {
        let (daemonEnd, clientEnd) = try ServerTurnTests.socketPair()
        return (try #require(server.adopt(daemonEnd)), clientEnd)
    }

    static func send(_ line: String, to client: FileDescriptor) {
        let bytes = Array((line + "\n").utf8)
        #expect(bytes.withUnsafeBytes { Glibc.write(client.rawValue, $0.baseAddress, $0.count) } == bytes.count)
    }

    /// Turns the loop (waiting up to 10 ms each turn for the reply thread) until `done`, for 10 s at most.
    static func turn(_ loop: EventLoop, until done: () -> Bool) -> Bool {
        let deadline = MonotonicInstant.now() + .seconds(10)
        while !done() {
            guard MonotonicInstant.now() < deadline else { return false }
            loop.runOnce(timeoutMilliseconds: 10)
        }
        return true
    }

    /// The next reply line a client reads, turning the loop meanwhile.
    static func reply(on client: FileDescriptor, _ loop: EventLoop) throws -> JSONValue {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let isComplete = turn(loop) {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(client.rawValue, $0.baseAddress, $0.count) }
            if count > 0 { received += buffer[0..<count] }
            return received.contains(0x0A)
        }
        try #require(isComplete, "no reply")
        return try JSONParser().parse(received.prefix { $0 != 0x0A })
    }

    /// Opens the gate, reads the reply to "a" on `client`, then asks for "d" and reads its reply: the reply
    /// thread runs its jobs in order, so by then every job queued before "d" was made or skipped. Returns
    /// the jobs made.
    static func namesMade(_ jobs: Jobs, answering client: FileDescriptor, _ loop: EventLoop) throws -> [String] {
        for _ in 0..<4 { _ = jobs.gate.push(true) }
        #expect(try reply(on: client, loop)["result"] == "a")
        send(#"{"id":"d","cmd":"slow"}"#, to: client)
        #expect(try reply(on: client, loop)["result"] == "d")
        return jobs.names
    }

    /// B3 of the attack on issue 25: five clients asked for a 22 MB meeting and hung up; each read was
    /// still made, one after the other, for nobody, and another client's small read waited 33 s behind them.
    /// A job not yet started when its client goes is skipped: here the two queued behind the running one.
    @Test func aReplyQueuedForAClientThatHungUpIsNotMade() throws {
        let jobs = try Jobs()
        let (loop, server) = try Self.server(jobs)
        let (first, firstEnd) = try Self.client(of: server)
        defer { firstEnd.close() }
        let (second, secondEnd) = try Self.client(of: server)
        let (third, thirdEnd) = try Self.client(of: server)
        Self.send(#"{"id":"a","cmd":"slow"}"#, to: firstEnd)
        Self.send(#"{"id":"b","cmd":"slow"}"#, to: secondEnd)
        Self.send(#"{"id":"c","cmd":"slow"}"#, to: thirdEnd)
        // "a" runs (held at the gate); "b" and "c" wait behind it on the reply thread.
        #expect(
            Self.turn(loop) {
                jobs.names == ["a"] && [first, second, third].allSatisfy(\.state.isAwaitingReply)
            })
        secondEnd.close()
        thirdEnd.close()
        #expect(Self.turn(loop) { second.isClosed && third.isClosed })
        #expect(try Self.namesMade(jobs, answering: firstEnd, loop) == ["a", "d"])
        #expect(server.connections.count == 1)
    }

    /// A client cut off while its reply waits to be made (an event it subscribed to overflowed its output)
    /// gets no reply made for it either.
    @Test func aReplyQueuedForAClientCutOffIsNotMade() throws {
        let jobs = try Jobs()
        let (loop, server) = try Self.server(jobs)
        let (first, firstEnd) = try Self.client(of: server)
        defer { firstEnd.close() }
        let (second, secondEnd) = try Self.client(of: server)
        defer { secondEnd.close() }
        try server.setTopics([.syncups], for: second)
        Self.send(#"{"id":"a","cmd":"slow"}"#, to: firstEnd)
        Self.send(#"{"id":"b","cmd":"slow"}"#, to: secondEnd)
        #expect(Self.turn(loop) { jobs.names == ["a"] && second.state.isAwaitingReply })
        let payload: JSONValue = ["padding": .string(String(repeating: "p", count: 64 * 1024))]
        while second.state.phase != .cutOff { server.publish(.syncups, "syncup.updated", payload) }
        #expect(Self.turn(loop) { second.isClosed })
        #expect(try Self.namesMade(jobs, answering: firstEnd, loop) == ["a", "d"])
        #expect(!first.isClosed)
    }
}
