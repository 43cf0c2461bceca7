import Glibc
import SyncUpsJSON
import SyncUpsPOSIX

/// A protocol client that sends raw lines and reads raw lines, for tests that check the wire itself.
public final class RawClient {
    public let fd: FileDescriptor
    private var buffer: [UInt8] = []
    public private(set) var greeting: JSONValue = .null
    /// Events that arrived before a reply `request` waited for, handed out first by `readJSON`.
    private var heldEvents: [JSONValue] = []

    public init(path: String, readGreeting: Bool = true) throws {
        fd = try UnixSocket.connect(path: path)
        if readGreeting { greeting = try readJSON() }
    }

    private var isClosed = false

    deinit {
        close()
    }

    /// Closes the connection now (once: `deinit` then closes nothing, where a second close could close another
    /// test's descriptor of the same number).
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        fd.close()
    }

    public func send(_ text: String) throws {
        try UnixSocket.sendAll(fd, Array(text.utf8))
    }

    public func send(bytes: [UInt8]) throws {
        try UnixSocket.sendAll(fd, bytes)
    }

    /// The next line, or nil at end of stream; fails after `timeout`.
    public func readLine(timeout: Duration = .seconds(10)) throws -> String? {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeFirst(newline + 1)
                return line
            }
            let remaining = deadline - .now()
            guard remaining > .zero else { throw TestFailure("no line within \(timeout); have \(buffer.count) bytes") }
            var poller = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, CInt(max(1, remaining.nanoseconds / 1_000_000))) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd.rawValue, $0.baseAddress, $0.count) }
            if count <= 0 { return nil }
            buffer += chunk[0..<count]
        }
    }

    public func readJSON(timeout: Duration = .seconds(10)) throws -> JSONValue {
        if !heldEvents.isEmpty { return heldEvents.removeFirst() }
        guard let line = try readLine(timeout: timeout) else { throw TestFailure("connection closed") }
        return try JSONParser().parse(line)
    }

    /// How long a request waits for its reply: a guard against a hang, not a measure. The daemon is a real
    /// process, and on two loaded cores a debug daemon taking in a 600 KB transcript answered `session.get`
    /// after more than 10 s.
    public static let replyDeadline = Duration.seconds(60)

    /// Sends a request and returns the next line that is not an event (the reply).
    public func request(_ command: String, _ arguments: JSONValue? = nil, id: JSONValue = 1) throws -> JSONValue {
        var object: JSONObject = ["id": id, "cmd": .string(command)]
        if let arguments { object.append("args", arguments) }
        try send(JSONWriter().string(.object(object)) + "\n")
        let deadline = MonotonicInstant.now() + Self.replyDeadline
        while true {
            guard let text = try readLine(timeout: max(.zero, deadline - .now())) else {
                throw TestFailure("connection closed")
            }
            let line = try JSONParser().parse(text)
            if line["event"] == nil { return line }
            heldEvents.append(line)
        }
    }

    /// The result of a successful request; fails the test with the error otherwise.
    public func result(_ command: String, _ arguments: JSONValue? = nil) throws -> JSONValue {
        let reply = try request(command, arguments)
        guard reply["ok"] == true, let result = reply["result"] else {
            throw TestFailure("\(command) failed: \(JSONWriter().string(reply))")
        }
        return result
    }

    /// The next event named `name`, skipping others; fails after `timeout` in all.
    public func nextEvent(_ name: String, timeout: Duration = .seconds(15)) throws -> JSONValue {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            let remaining = deadline - .now()
            guard remaining > .zero else { throw TestFailure("no \(name) event within \(timeout)") }
            let event = try readJSON(timeout: remaining)
            if event["event"]?.stringValue == name { return event }
        }
    }

    /// Reads events until one's session (a `session` subscriber's) is `seconds` into the meeting.
    public func waitUntilElapsed(_ seconds: Int) throws {
        let deadline = MonotonicInstant.now() + .seconds(seconds + 10)
        while MonotonicInstant.now() < deadline {
            let event = try readJSON(timeout: .seconds(5))
            if let elapsed = event["data"]?["session"]?["secondsElapsed"]?.numberValue?.int64, elapsed >= seconds {
                return
            }
        }
        throw TestFailure("the meeting did not reach \(seconds) s")
    }

    /// Reads (and drops) lines until the daemon closes the connection; false if it is still open at `timeout`.
    public func waitUntilClosed(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            let remaining = deadline - .now()
            guard remaining > .zero else { return false }
            do {
                if try readLine(timeout: remaining) == nil { return true }
            } catch {
                return false
            }
        }
    }
}
