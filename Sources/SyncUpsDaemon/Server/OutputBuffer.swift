import SyncUpsPOSIX

/// Bytes waiting to be sent to one client, consumed from the front without copying on every send.
struct OutputBuffer {
    private var bytes: [UInt8] = []
    private var start = 0

    /// The most capacity an emptied buffer keeps for itself. A larger one goes back to the server's one
    /// spare (`Server.spareOutput`, see `releaseCapacity(into:)`) or is freed: 1,000 idle connections that
    /// once pipelined deep batches held 300 MB when each kept what it had grown to.
    static let keptCapacity = 64 * 1024
    /// The largest buffer kept as the server's spare.
    static let largestSpare = 1024 * 1024

    var count: Int { bytes.count - start }
    var isEmpty: Bool { start == bytes.count }
    /// How many bytes the buffer holds without growing (sent bytes at the front included).
    var capacity: Int { bytes.capacity }

    mutating func append(_ more: [UInt8]) {
        withAppendableBytes { $0.append(contentsOf: more) }
    }

    /// Appends `more` `times` times: the replies to a run of identical request lines.
    mutating func append(_ more: [UInt8], times: Int) {
        withAppendableBytes { bytes in
            let needed = bytes.count + more.count * times
            if needed > bytes.capacity { bytes.reserveCapacity(max(needed, 2 * bytes.capacity)) }
            more.withUnsafeBufferPointer { reply in
                for _ in 0..<times { bytes.append(contentsOf: reply) }
            }
        }
    }

    /// Lets `body` append to the unsent bytes in place (a reply is encoded straight into the buffer).
    mutating func withAppendableBytes(_ body: (inout [UInt8]) -> Void) {
        if isEmpty {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        }
        body(&bytes)
    }

    /// A copy of the unsent bytes from the `offset`-th on (offsets as `count` counts them). Always a copy:
    /// `Array(bytes[...])` of a slice that spans the whole array shares its storage, and a replayed reply
    /// taken that way kept the buffer shared, so the next append copied all of it (a new, slightly larger
    /// mapping at every deep batch) and the replay held on to a connection's buffer.
    func suffix(from offset: Int) -> [UInt8] {
        bytes.withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[(start + offset)...])) }
    }

    /// Sends as much as the non-blocking socket takes; returns the count sent (0 if it would block). An
    /// emptied buffer keeps its capacity until `releaseCapacity(into:)`.
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
            bytes.removeAll(keepingCapacity: true)
            self.start = 0
        } else if self.start >= 64 * 1024 && self.start * 2 >= bytes.count {
            bytes.removeFirst(self.start)
            self.start = 0
        }
        return sent
    }

    /// Takes `spare`'s capacity for an empty buffer about to hold a deep batch's replies, if it is larger: the
    /// batch then never grows the buffer (each growth a copy of everything so far, past 128 KiB an mmap).
    mutating func adopt(_ spare: inout [UInt8]) {
        guard isEmpty, spare.capacity > bytes.capacity else { return }
        swap(&bytes, &spare)
        bytes.removeAll(keepingCapacity: true)
        start = 0
    }

    /// Called once the buffer is empty: up to `keptCapacity` stays; more goes to `spare` when it is larger
    /// than the spare already there (and not over `largestSpare`), else back to the allocator. So between
    /// batches a pipelining client's big buffer waits as the spare instead of being freed and grown again, and
    /// however many connections once pipelined, they hold one big buffer between them.
    mutating func releaseCapacity(into spare: inout [UInt8]) {
        guard isEmpty, bytes.capacity > Self.keptCapacity else { return }
        if bytes.capacity > spare.capacity && bytes.capacity <= Self.largestSpare {
            swap(&bytes, &spare)
            spare.removeAll(keepingCapacity: true)
        }
        bytes = []
        start = 0
    }
}
