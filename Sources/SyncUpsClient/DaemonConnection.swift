import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// A client's connection to syncupsd: sends requests, waits for their replies, and keeps the events that
/// arrive in between for whoever wants them (`watch`).
public final class DaemonConnection {
    /// Why talking to the daemon failed.
    public enum Failure: Error, CustomStringConvertible {
        /// Nothing is listening (or the socket cannot be reached); `syncupsctl` exits 69.
        case unavailable(String)
        /// The daemon refused the request; exits 65.
        case rejected(ProtocolError)
        /// The daemon went away or sent something unreadable mid-conversation.
        case broken(String)
        /// The daemon is running but turned this connection away instead of greeting it
        /// (`too_many_connections`: at its connection limit, or out of file descriptors); exits 75.
        case turnedAway(ProtocolError)

        public var description: String {
            switch self {
            case .unavailable(let message), .broken(let message): message
            case .rejected(let error): "\(error.code): \(error.message)"
            case .turnedAway(let error): "syncupsd refused the connection (\(error.code)): \(error.message)"
            }
        }
    }

    public let path: String
    private let fd: FileDescriptor
    /// The socket, for `poll` alongside other descriptors.
    public var descriptor: FileDescriptor { fd }
    /// True when a whole line is already buffered (so `poll` on the socket would not say so).
    public var hasBufferedLine: Bool { reader.hasBufferedLine }
    private var reader: LineReader
    public private(set) var greeting: JSONValue = .null
    /// Events received while waiting for replies, oldest first.
    public var pendingEvents: [(name: String, seq: Int?, data: JSONValue)] = []
    private var nextID = 1
    public var timeout: Duration?

    /// Connects and reads the greeting.
    public init(path: String, timeout: Duration? = .seconds(10)) throws(Failure) {
        self.path = path
        self.timeout = timeout
        do {
            fd = try UnixSocket.connect(path: path)
        } catch {
            throw .unavailable("cannot connect to syncupsd at \(path): \(error.errno)")
        }
        reader = LineReader(fd: fd)
        // From here on a throw runs `deinit` (every property is set), which closes the socket: closed here too,
        // it was closed twice.
        switch try nextMessage() {
        case .event(EventName.hello, _, let data):
            greeting = data
        case .reply(_, .failure(let error)):
            // A daemon at its limits says why instead of greeting (protocol.md: too_many_connections).
            throw .turnedAway(error)
        default:
            throw .broken("the daemon at \(path) did not greet (not syncupsd?)")
        }
    }

    deinit {
        fd.close()
    }

    /// Sends one request and returns its result, keeping any events that come first.
    public func call(_ command: String, _ arguments: JSONObject = JSONObject()) throws(Failure) -> JSONValue {
        let id = nextID
        nextID += 1
        var line = Request(id: .int(id), command: command, arguments: arguments).encoded()
        line.append(0x0A)
        do {
            try UnixSocket.sendAll(fd, line)
        } catch {
            throw .broken("sending to syncupsd failed: \(error)")
        }
        while true {
            switch try nextMessage() {
            case .event(let name, let seq, let data):
                pendingEvents.append((name, seq, data))
            case .reply(let replyID, let outcome):
                guard replyID == .int(id) else {
                    if case .failure(let error) = outcome { throw .rejected(error) }
                    continue
                }
                switch outcome {
                case .success(let result): return result
                case .failure(let error): throw .rejected(error)
                }
            }
        }
    }

    /// The next event: a kept one first, else one read from the socket (waiting up to `timeout`).
    public func nextEvent(timeout: Duration?) throws(Failure) -> (name: String, seq: Int?, data: JSONValue) {
        if !pendingEvents.isEmpty { return pendingEvents.removeFirst() }
        while true {
            if case .event(let name, let seq, let data) = try nextMessage(timeout: timeout) { return (name, seq, data) }
        }
    }

    private func nextMessage(timeout: Duration?? = nil) throws(Failure) -> IncomingMessage {
        let line: ArraySlice<UInt8>
        do {
            line = try reader.nextLine(timeout: timeout ?? self.timeout)
        } catch {
            switch error {
            case .closed: throw .broken("syncupsd closed the connection")
            case .timedOut:
                throw .broken("syncupsd did not answer within \(self.timeout?.description ?? "the timeout")")
            case .system(let error): throw .broken("reading from syncupsd failed: \(error)")
            case .tooLong: throw .broken("syncupsd sent a line longer than this client reads")
            }
        }
        do {
            return try IncomingMessage.decode(line)
        } catch {
            throw .broken(error.message)
        }
    }
}
