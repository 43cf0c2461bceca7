import SyncUpsPOSIX
import Testing

@Suite struct BlockingQueueTests {
    final class Chunk: Sendable {
        let number: Int
        init(_ number: Int) { self.number = number }
    }

    @Test func keepsOrderRefusesWhenFullAndDrainsAfterClose() throws {
        let queue = try BlockingQueue<Chunk>(capacity: 2)
        #expect(queue.push(Chunk(1)))
        #expect(queue.push(Chunk(2)))
        #expect(!queue.push(Chunk(3)), "a full queue refuses, so the producer can say what it dropped")
        #expect(queue.pop()?.number == 1)
        #expect(queue.push(Chunk(4)))
        queue.close()
        #expect(!queue.push(Chunk(5)))
        #expect(queue.pop()?.number == 2)
        #expect(queue.pop()?.number == 4)
        #expect(queue.pop() == nil)
    }

    /// A popped element belongs to whoever popped it: the queue must not keep it alive (audio chunks would
    /// pile up for minutes).
    @Test func releasesAnElementOnceItIsPopped() throws {
        let queue = try BlockingQueue<Chunk>(capacity: 8)
        weak var first: Chunk?
        do {
            let chunk = Chunk(1)
            first = chunk
            queue.push(chunk)
            queue.push(Chunk(2))
        }
        #expect(first != nil)
        _ = queue.pop()
        #expect(first == nil)
        #expect(queue.count == 1)
    }

    @Test func wakesAPopperOnAnotherThread() throws {
        let queue = try BlockingQueue<Chunk>(capacity: 1)
        let thread = try DedicatedThread(name: "producer") { queue.push(Chunk(7)) }
        #expect(queue.pop()?.number == 7)
        thread.join()
    }
}
