import Testing

@testable import SyncUpsDaemon

@Suite struct OutputBufferTests {
    /// A buffer holding `bytes`, in storage of `capacity` bytes (taken as a spare).
    static func buffer(capacity: Int, holding bytes: [UInt8]) -> OutputBuffer {
        var spare: [UInt8] = []
        spare.reserveCapacity(capacity)
        var buffer = OutputBuffer()
        buffer.adopt(&spare)
        buffer.append(bytes)
        return buffer
    }

    /// The replay keeps a copy of a reply; before, a reply that was the whole buffer shared its storage, so
    /// the next append copied the buffer into new storage just big enough, at every deep batch.
    @Test func aReplyTakenForReplayLeavesTheBufferItsOwnStorage() {
        var buffer = Self.buffer(capacity: 256 * 1024, holding: Array(repeating: 0x61, count: 500))
        let capacity = buffer.capacity
        let reply = buffer.suffix(from: 0)
        buffer.append(reply, times: 100)
        #expect(reply.count == 500)
        #expect(buffer.count == 101 * 500)
        #expect(buffer.capacity == capacity, "the buffer was copied into new storage")
    }

    @Test func anEmptiedBigBufferBecomesTheSpareAndASmallOneStays() {
        var spare: [UInt8] = []
        var big = Self.buffer(capacity: 256 * 1024, holding: [1, 2, 3])
        let bigCapacity = big.capacity
        big.withAppendableBytes { $0.removeAll(keepingCapacity: true) }
        big.releaseCapacity(into: &spare)
        #expect(spare.capacity == bigCapacity)
        #expect(big.capacity == 0)
        var small = Self.buffer(capacity: 4096, holding: [1])
        small.withAppendableBytes { $0.removeAll(keepingCapacity: true) }
        let smallCapacity = small.capacity
        small.releaseCapacity(into: &spare)
        #expect(small.capacity == smallCapacity)
        #expect(spare.capacity == bigCapacity)
    }
}
