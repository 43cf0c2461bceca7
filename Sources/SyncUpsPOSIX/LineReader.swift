import Glibc

/// Reads `\n`-terminated lines from a blocking descriptor, with an optional timeout per line: the client's
/// replies and events, a speech command's results and log. Lines are slices of one buffer that is consumed
/// from the front by an index, so a burst of short lines costs no copying per line.
public struct LineReader {
    public let fd: FileDescriptor
    /// A longer line fails with `tooLong` and the rest of it is skipped.
    public let maxLineBytes: Int
    /// At the end of the stream, a last line without its newline is returned (once) instead of lost.
    public let keepsUnterminatedLastLine: Bool
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    private var isSkippingLongLine = false
    private var isAtEnd = false

    public init(fd: FileDescriptor, maxLineBytes: Int = .max, keepsUnterminatedLastLine: Bool = false) {
        self.fd = fd
        self.maxLineBytes = maxLineBytes
        self.keepsUnterminatedLastLine = keepsUnterminatedLastLine
    }

    /// True when a complete line is waiting in the buffer.
    public var hasBufferedLine: Bool { buffer[start...].contains(0x0A) }

    public enum Failure: Error, Equatable {
        case closed
        case timedOut
        /// The line passed `maxLineBytes`; what is left of it is skipped.
        case tooLong
        case system(SystemError)
    }

    /// The next line without its newline. `timeout` nil waits forever.
    public mutating func nextLine(timeout: Duration?) throws(Failure) -> ArraySlice<UInt8> {
        let deadline = timeout.map { MonotonicInstant.now() + $0 }
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = buffer[start..<newline]
                start = newline + 1
                if isSkippingLongLine {
                    isSkippingLongLine = false
                    continue
                }
                guard line.count <= maxLineBytes else { throw .tooLong }
                return line
            }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            if buffer.count > maxLineBytes {
                buffer.removeAll(keepingCapacity: true)
                guard !isSkippingLongLine else { continue }
                isSkippingLongLine = true
                throw .tooLong
            }
            if isAtEnd {
                guard keepsUnterminatedLastLine, !buffer.isEmpty, !isSkippingLongLine else { throw .closed }
                let last = buffer[...]
                buffer = []
                return last
            }
            if let deadline {
                // A zero timeout still looks once: "is a line available right now?"
                var poller = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
                let ready: CInt
                do {
                    ready = try syscall("poll") {
                        poll(&poller, 1, CInt(max(.zero, deadline - .now()).nanoseconds / 1_000_000))
                    }
                } catch {
                    throw .system(error)
                }
                if ready == 0 { throw .timedOut }
            }
            let read = chunk.withUnsafeMutableBytes { bytes in
                Result { () throws(SystemError) in try fd.read(into: bytes) }
            }
            let count: Int
            switch read {
            case .success(let value): count = value
            case .failure(let error): throw .system(error)
            }
            if count == 0 {
                isAtEnd = true
                continue
            }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }
}
