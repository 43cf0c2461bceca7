import Glibc
import SyncUpsPOSIX

/// A blocking benchmark client for line protocols: syncupsd (one reply line) and MPD (lines up to `OK`).
final class LineClient {
    enum Dialect {
        case syncupsd
        case mpd
    }

    let fd: FileDescriptor
    let dialect: Dialect
    /// Received bytes; those before `start` are consumed. Compacted only when it runs out of room, so a
    /// pipelined burst costs no per-response copying: the client must not be what limits the daemon.
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0

    init(path: String, dialect: Dialect) throws {
        fd = try UnixSocket.connect(path: path)
        self.dialect = dialect
        _ = try readResponse(greeting: true)
    }

    deinit {
        fd.close()
    }

    /// The request line for `status`, the command both daemons answer.
    var statusRequest: [UInt8] { Array((dialect == .syncupsd ? #"{"cmd":"status"}"# : "status").utf8) + [0x0A] }
    var pingRequest: [UInt8] { Array((dialect == .syncupsd ? #"{"cmd":"ping"}"# : "ping").utf8) + [0x0A] }

    func send(_ bytes: [UInt8]) throws { try UnixSocket.sendAll(fd, bytes) }

    /// Reads one complete response (the greeting is one line for both) and returns its length.
    @discardableResult
    func readResponse(greeting: Bool = false) throws -> Int {
        try readResponseRange(greeting: greeting).count
    }

    /// Reads one complete response and returns it.
    func readResponseText(greeting: Bool = false) throws -> String {
        let range = try readResponseRange(greeting: greeting)
        return String(decoding: buffer[range], as: UTF8.self)
    }

    private func readResponseRange(greeting: Bool) throws -> Range<Int> {
        var scanned = start
        while true {
            if let responseEnd = completeResponse(greeting: greeting, from: &scanned) {
                let range = start..<responseEnd
                start = responseEnd
                return range
            }
            if end == buffer.count {
                // Out of room: move the unread bytes to the front.
                let unread = end - start
                buffer.withUnsafeMutableBufferPointer { bytes in
                    _ = memmove(bytes.baseAddress!, bytes.baseAddress! + start, unread)
                }
                scanned -= start
                start = 0
                end = unread
                if end == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
            }
            let count = buffer.withUnsafeMutableBytes { read(fd.rawValue, $0.baseAddress! + end, $0.count - end) }
            guard count > 0 else { throw SystemError("read", .current) }
            end += count
        }
    }

    /// The end of the first complete response after `start`, if it has arrived; `scanned` is where the
    /// search for its end resumes, so a response arriving in many reads is scanned once.
    private func completeResponse(greeting: Bool, from scanned: inout Int) -> Int? {
        while let newline = buffer[scanned..<end].firstIndex(of: 0x0A) {
            let lineStart = scanned
            scanned = newline + 1
            switch dialect {
            case .syncupsd:
                return newline + 1
            case .mpd:
                // The greeting is one line; a response is lines up to "OK" (or an "ACK" error line).
                let line = buffer[lineStart..<newline]
                if greeting || line.elementsEqual("OK".utf8) || line.starts(with: "ACK".utf8) { return newline + 1 }
            }
        }
        return nil
    }

    /// One request and its response, timed.
    func roundTrip(_ request: [UInt8]) throws -> Duration {
        let start = MonotonicInstant.now()
        try send(request)
        try readResponse()
        return .now() - start
    }
}
