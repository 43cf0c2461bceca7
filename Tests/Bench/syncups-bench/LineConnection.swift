import Glibc
import SyncUpsPOSIX

/// A blocking connection to syncupsd for the soak: whole lines out, whole lines in, and reads that give up
/// after a short timeout so that a thread waiting for a line still notices when the run is over.
final class LineConnection {
    let fd: FileDescriptor
    /// Received bytes; those before `start` are consumed.
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)

    /// Connects, makes reads time out after `receiveTimeout` (`SO_RCVTIMEO`), and reads the greeting.
    init(path: String, receiveTimeout: Duration = .seconds(1)) throws {
        fd = try UnixSocket.connect(path: path)
        var timeout = timeval(
            tv_sec: Int(receiveTimeout.nanoseconds / 1_000_000_000),
            tv_usec: Int(receiveTimeout.nanoseconds % 1_000_000_000 / 1000))
        setsockopt(fd.rawValue, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let deadline = MonotonicInstant.now() + .seconds(10)
        var greeting: [UInt8]?
        while greeting == nil && MonotonicInstant.now() < deadline { greeting = try readLine() }
        guard let greeting, greeting.starts(with: #"{"event":"hello""#.utf8) else {
            fd.close()
            throw SoakFailure("no greeting: \(String(decoding: greeting ?? [], as: UTF8.self).prefix(200))")
        }
    }

    deinit {
        fd.close()
    }

    /// Sends `line` and its newline.
    func send(_ line: String) throws {
        try UnixSocket.sendAll(fd, Array(line.utf8) + [0x0A])
    }

    /// The next line, without its newline, or nil when none was complete within the receive timeout.
    /// Throws when the daemon closed the connection.
    func readLine() throws -> [UInt8]? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                if start == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    start = 0
                }
                return line
            }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            let count = chunk.withUnsafeMutableBytes { read(fd.rawValue, $0.baseAddress, $0.count) }
            if count > 0 {
                buffer += chunk[0..<count]
                continue
            }
            if count == 0 { throw SoakFailure("the daemon closed the connection") }
            switch Errno.current {
            case .wouldBlock: return nil
            case .interrupted: continue
            case let error: throw SystemError("read", error)
            }
        }
    }

    /// Sends a request line and returns its reply, skipping the events that come before it (a connection
    /// may also be a subscriber). Throws when no reply comes within `timeout`.
    func request(_ line: String, timeout: Duration = .seconds(10), onEvent: ([UInt8]) -> Void = { _ in }) throws
        -> [UInt8]
    {
        try send(line)
        let deadline = MonotonicInstant.now() + timeout
        while MonotonicInstant.now() < deadline {
            guard let reply = try readLine() else { continue }
            if reply.starts(with: #"{"event":"#.utf8) {
                onEvent(reply)
                continue
            }
            return reply
        }
        throw SoakFailure("no reply within \(Int(timeout.seconds)) s to \(line.prefix(80))")
    }
}

/// Something the soak saw go wrong, said in a sentence.
struct SoakFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Cheap looks into a line of the protocol without parsing it all: the soak reads thousands a second on the
/// same two cores as the daemon.
enum LineScan {
    /// The integer after the first `"key":` in `line`. Inside a JSON string a quote is escaped, so the first
    /// match is a real key: for an event, `seq` is the envelope's.
    static func integer(_ key: String, in line: [UInt8]) -> Int? {
        let pattern = Array("\"\(key)\":".utf8)
        guard let range = line.firstRange(of: pattern) else { return nil }
        var value = 0
        var index = range.upperBound
        var sawDigit = false
        while index < line.count, line[index] >= 0x30, line[index] <= 0x39 {
            value = value * 10 + Int(line[index] - 0x30)
            sawDigit = true
            index += 1
        }
        return sawDigit ? value : nil
    }

    /// The event name of an event line (`{"event":"session.tick",…`), or nil for a reply.
    static func eventName(_ line: [UInt8]) -> String? {
        let prefix = #"{"event":""#.utf8
        guard line.starts(with: prefix) else { return nil }
        let nameStart = prefix.count
        guard let nameEnd = line[nameStart...].firstIndex(of: 0x22) else { return nil }
        return String(decoding: line[nameStart..<nameEnd], as: UTF8.self)
    }

    /// True for a successful reply: `{"id":…,"ok":true,…`.
    static func isSuccess(_ line: [UInt8]) -> Bool {
        line.prefix(48).firstRange(of: #","ok":true"#.utf8) != nil
    }
}
