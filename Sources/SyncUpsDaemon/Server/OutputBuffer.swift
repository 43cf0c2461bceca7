import Glibc
import SyncUpsPOSIX

/// Bytes waiting to be sent to one client, consumed from the front without copying on every send.
///
/// In memory of its own (malloc'd, grown by realloc), as `make bench`'s C limit server keeps its output:
/// appending a reply is one `memcpy`. With an `[UInt8]`, each append(contentsOf:) cost about 70 instructions
/// of checks around the copy; for a run of replayed `status` replies that was a fifth of the daemon's own
/// instructions per request (callgrind, B=512). Noncopyable: one owner frees it.
struct OutputBuffer: ~Copyable {
    private var base: UnsafeMutableRawPointer?
    /// How many bytes the buffer holds without growing (sent bytes at the front included).
    private(set) var capacity = 0
    /// The unsent bytes are `start..<end`.
    private var start = 0
    private var end = 0
    /// How many unsent bytes have been moved to the front in all (for tests: what the moves cost).
    private(set) var movedBytes = 0

    /// The most capacity an emptied buffer keeps for itself. A larger one goes back to the server's one
    /// spare (`Server.spareOutput`, see `releaseCapacity(into:)`) or is freed: 1,000 idle connections that
    /// once pipelined deep batches held 300 MB when each kept what it had grown to.
    static let keptCapacity = 64 * 1024
    /// The largest buffer kept as the server's spare.
    static let largestSpare = 1024 * 1024
    /// The smallest allocation: a reply or an event line or two.
    private static let smallestCapacity = 4096

    init() {}

    deinit { free(base) }

    var count: Int { end - start }
    var isEmpty: Bool { start == end }

    mutating func append(_ more: UnsafeRawBufferPointer) {
        guard let source = more.baseAddress, more.count > 0 else { return }
        memcpy(room(for: more.count), source, more.count)
        end += more.count
    }

    mutating func append(_ more: [UInt8]) {
        more.withUnsafeBytes { append($0) }
    }

    /// Appends `more` `times` times: the replies to a run of identical request lines.
    mutating func append(_ more: [UInt8], times: Int) {
        guard times > 0 else { return }
        more.withUnsafeBytes { reply in
            guard let source = reply.baseAddress, reply.count > 0 else { return }
            var target = room(for: reply.count * times)
            for _ in 0..<times {
                memcpy(target, source, reply.count)
                target += reply.count
            }
        }
        end += more.count * times
    }

    /// Where `more` bytes go after the unsent ones: the unsent bytes move to the front first when at least as
    /// many were sent (one `memmove` of what is left, never of what went out), and the buffer grows to at
    /// least twice its size when that is not room enough.
    ///
    /// Moving only then keeps the moves paid for by the sends: a slow subscriber with most of a megabyte
    /// waiting takes about 36 KiB per wake-up, and moving what waited whenever the next event did not fit
    /// after it moved the 800 KB each time (200 such subscribers: 160 MB moved at every twentieth event or
    /// so, another client's `ping` p99 24 ms instead of 4). So the buffer may grow to twice what waits, as
    /// the `[UInt8]` before it did.
    private mutating func room(for more: Int) -> UnsafeMutableRawPointer {
        if start == end {
            start = 0
            end = 0
        }
        if end + more > capacity {
            if start > 0, start >= end - start, let base {
                memmove(base, base + start, end - start)
                movedBytes += end - start
                end -= start
                start = 0
            }
            if end + more > capacity {
                let grown = max(end + more, 2 * capacity, Self.smallestCapacity)
                guard let moved = realloc(base, grown) else {
                    fatalError("out of memory growing a client's output to \(grown) bytes")
                }
                base = moved
                capacity = grown
            }
        }
        return base! + end
    }

    /// Sends as much as the non-blocking socket takes; returns the count sent (0 if it would block). An
    /// emptied buffer keeps its capacity until `releaseCapacity(into:)`.
    mutating func send(to fd: FileDescriptor) throws(SystemError) -> Int {
        guard !isEmpty, let base else { return 0 }
        let sent = try UnixSocket.send(fd, UnsafeRawBufferPointer(start: base + start, count: end - start))
        start += sent
        if start == end {
            start = 0
            end = 0
        }
        return sent
    }

    /// Drops what is queued (its client is gone); the capacity stays until `releaseCapacity(into:)`.
    mutating func discardAll() {
        start = 0
        end = 0
    }

    /// Takes `spare`'s capacity for an empty buffer about to hold a deep batch's replies, if it is larger: the
    /// batch then never grows the buffer (each growth a copy of everything so far, past 128 KiB an mmap).
    mutating func adopt(_ spare: inout OutputBuffer) {
        guard isEmpty, spare.isEmpty, spare.capacity > capacity else { return }
        swap(&self, &spare)
    }

    /// Called once the buffer is empty: up to `keptCapacity` stays; more goes to `spare` when it is larger
    /// than the spare already there (and not over `largestSpare`), else back to the allocator. So between
    /// batches a pipelining client's big buffer waits as the spare instead of being freed and grown again, and
    /// however many connections once pipelined, they hold one big buffer between them.
    /// Returns how many bytes went back to the allocator.
    @discardableResult
    mutating func releaseCapacity(into spare: inout OutputBuffer) -> Int {
        guard isEmpty, capacity > Self.keptCapacity else { return 0 }
        if spare.isEmpty && capacity > spare.capacity && capacity <= Self.largestSpare {
            swap(&self, &spare)
        }
        let freed = capacity
        self = OutputBuffer()
        return freed
    }
}
