import SyncUpsPOSIX

/// Bytes waiting to be sent to one client, consumed from the front without copying on every send.
struct OutputBuffer {
    private var bytes: [UInt8] = []
    private var start = 0

    /// The most capacity an emptied buffer keeps.
    static let keptCapacity = 64 * 1024

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

    /// The unsent bytes from the `offset`-th on (offsets as `count` counts them).
    func suffix(from offset: Int) -> [UInt8] { Array(bytes[(start + offset)...]) }

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
            // Small buffers are kept for the next replies; a large one goes, or 1,000 idle connections that
            // once pipelined deep batches held 300 MB (keeping 512 KiB saved an mmap per drain at B=4096, but
            // memory held by idle connections matters more).
            bytes.removeAll(keepingCapacity: bytes.capacity <= Self.keptCapacity)
            self.start = 0
        } else if self.start >= 64 * 1024 && self.start * 2 >= bytes.count {
            bytes.removeFirst(self.start)
            self.start = 0
        }
        return sent
    }
}
