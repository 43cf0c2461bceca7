import SyncUpsPOSIX

/// Bytes waiting to be sent to one client, consumed from the front without copying on every send.
struct OutputBuffer {
    private var bytes: [UInt8] = []
    private var start = 0

    var count: Int { bytes.count - start }
    var isEmpty: Bool { start == bytes.count }

    mutating func append(_ more: [UInt8]) {
        withAppendableBytes { $0.append(contentsOf: more) }
    }

    /// Lets `body` append to the unsent bytes in place (a reply is encoded straight into the buffer).
    mutating func withAppendableBytes(_ body: (inout [UInt8]) -> Void) {
        if isEmpty {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        }
        body(&bytes)
    }

    /// Sends as much as the non-blocking socket takes; returns the count sent (0 if it would block).
    mutating func send(to fd: FileDescriptor) throws(SystemError) -> Int {
        guard !isEmpty else { return 0 }
        let start = self.start
        let result = bytes.withUnsafeBytes { all in
            Result { () throws(SystemError) in try UnixSocket.send(fd, UnsafeRawBufferPointer(rebasing: all[start...]))
            }
        }
        let sent = try result.get()
        self.start += sent
        if self.start == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 64 * 1024)
            self.start = 0
        } else if self.start >= 64 * 1024 && self.start * 2 >= bytes.count {
            bytes.removeFirst(self.start)
            self.start = 0
        }
        return sent
    }
}
