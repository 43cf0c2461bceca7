import Glibc
import SyncUpsPOSIX

/// Reads `\n`-terminated lines from a blocking descriptor, with an optional timeout per line.
public struct LineReader {
    public let fd: FileDescriptor
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)

    public init(fd: FileDescriptor) {
        self.fd = fd
    }

    /// True when a complete line is waiting in the buffer.
    public var hasBufferedLine: Bool { buffer[start...].contains(0x0A) }

    public enum Failure: Error, Equatable {
        case closed
        case timedOut
        case system(SystemError)
    }

    /// The next line without its newline. `timeout` nil waits forever.
    public mutating func nextLine(timeout: Duration?) throws(Failure) -> ArraySlice<UInt8> {
        let deadline = timeout.map { MonotonicInstant.now() + $0 }
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = buffer[start..<newline]
                start = newline + 1
                return line
            }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            if let deadline {
                // A zero timeout still looks once: "is a line available right now?"
                let remaining = max(.zero, deadline - .now())
                var poller = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, CInt(remaining.nanoseconds / 1_000_000))
                if ready == 0 { throw .timedOut }
                if ready < 0 && Errno.current != .interrupted { throw .system(SystemError("poll", .current)) }
                if ready <= 0 { continue }
            }
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd.rawValue, $0.baseAddress, $0.count) }
            if count < 0 {
                if Errno.current == .interrupted { continue }
                throw .system(SystemError("read", .current))
            }
            if count == 0 { throw .closed }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }
}
