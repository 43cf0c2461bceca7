import Glibc
import SyncUpsPOSIX
import Testing

@testable import SyncUpsDaemon

@Suite struct OutputBufferTests {
    /// A connected socket pair, non-blocking, with a small send buffer: the buffer's end, then the reader's.
    final class Pair {
        let sender: FileDescriptor
        let reader: FileDescriptor

        init() throws {
            var fds: [CInt] = [-1, -1]
            let flags = CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue) | CInt(SOCK_NONBLOCK.rawValue)
            try #require(socketpair(AF_UNIX, flags, 0, &fds) == 0)
            (sender, reader) = (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
        }

        deinit {
            sender.close()
            reader.close()
        }

        /// Everything the reader has been sent so far.
        func received() -> [UInt8] {
            var all: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(reader.rawValue, $0.baseAddress, $0.count) }
                if count <= 0 { return all }
                all += chunk[0..<count]
            }
        }
    }

    /// Sends until the buffer is empty, reading as it goes; returns the bytes that arrived.
    static func drain(_ buffer: inout OutputBuffer, through pair: Pair) throws -> [UInt8] {
        var arrived: [UInt8] = []
        while !buffer.isEmpty {
            _ = try buffer.send(to: pair.sender)
            arrived += pair.received()
        }
        return arrived
    }

    /// A buffer with `capacity` bytes of room, empty (grown by one append, then sent).
    static func buffer(capacity: Int, through pair: Pair) throws -> OutputBuffer {
        var buffer = OutputBuffer()
        buffer.append(Array(repeating: 0x2E, count: capacity))
        _ = try drain(&buffer, through: pair)
        return buffer
    }

    @Test func sendsWhatWasAppendedInOrderRunsOfRepliesIncluded() throws {
        let pair = try Pair()
        var buffer = OutputBuffer()
        let event = Array(#"{"event":"x"}"#.utf8) + [0x0A]
        let reply = Array(#"{"id":1,"result":{}}"#.utf8) + [0x0A]
        buffer.append(event)
        buffer.append(reply, times: 1000)
        buffer.append([])
        buffer.append(reply, times: 0)
        buffer.append(event)
        #expect(buffer.count == 2 * event.count + 1000 * reply.count)
        let arrived = try Self.drain(&buffer, through: pair)
        #expect(arrived == event + Array([[UInt8]](repeating: reply, count: 1000).joined()) + event)
        #expect(buffer.isEmpty && buffer.count == 0)
    }

    /// A subscriber that reads slowly: what was sent makes room at the front, and the buffer does not grow
    /// while what waits still fits (32 KiB wait all along here, in a 64 KiB buffer).
    @Test func aPartlySentBufferMovesWhatIsLeftToTheFrontInsteadOfGrowing() throws {
        let pair = try Pair()
        var size: CInt = 4096
        _ = setsockopt(pair.sender.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        var buffer = try Self.buffer(capacity: 64 * 1024, through: pair)
        let capacity = buffer.capacity
        var expected = Array(repeating: UInt8(0x40), count: 32 * 1024)
        buffer.append(expected)
        var arrived: [UInt8] = []
        var sentInAll = 0
        for round in 0..<1000 {
            let sent = try buffer.send(to: pair.sender)  // the socket takes a few kilobytes
            try #require(sent > 0 && sent < 16 * 1024, "the socket took \(sent) bytes")
            sentInAll += sent
            arrived += pair.received()
            let more = Array(repeating: UInt8(0x41 + round % 26), count: sent)  // as much as went
            buffer.append(more)
            expected += more
            #expect(buffer.count == 32 * 1024)
        }
        arrived += try Self.drain(&buffer, through: pair)
        #expect(sentInAll > 4 * capacity)
        #expect(arrived == expected)
        #expect(buffer.capacity == capacity, "the buffer grew though what waited always fit")
    }

    @Test func anEmptiedBigBufferBecomesTheSpareAndASmallOneStays() throws {
        let pair = try Pair()
        var spare = OutputBuffer()
        var big = try Self.buffer(capacity: 256 * 1024, through: pair)
        let bigCapacity = big.capacity
        big.releaseCapacity(into: &spare)
        #expect(spare.capacity == bigCapacity)
        #expect(big.capacity == 0)

        var small = try Self.buffer(capacity: 4096, through: pair)
        let smallCapacity = small.capacity
        small.releaseCapacity(into: &spare)
        #expect(small.capacity == smallCapacity)
        #expect(spare.capacity == bigCapacity)

        // A deep batch takes the spare, and gives the spare its own small buffer.
        small.adopt(&spare)
        #expect(small.capacity == bigCapacity)
        #expect(spare.capacity == smallCapacity)
        // A buffer with bytes waiting never swaps.
        small.append([1, 2, 3])
        var other = try Self.buffer(capacity: 512 * 1024, through: pair)
        small.adopt(&other)
        #expect(small.capacity == bigCapacity && small.count == 3)
    }

    @Test func aBufferOverTheLargestSpareIsFreedNotKept() throws {
        let pair = try Pair()
        var spare = OutputBuffer()
        var huge = try Self.buffer(capacity: OutputBuffer.largestSpare + 1, through: pair)
        huge.releaseCapacity(into: &spare)
        #expect(huge.capacity == 0)
        #expect(spare.capacity == 0)
    }
}
