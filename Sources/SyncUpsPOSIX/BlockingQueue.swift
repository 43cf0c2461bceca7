import CSyncUpsShims
import Glibc
import Synchronization

/// A bounded queue between threads: `push` never blocks (it reports a full queue, so the producer decides
/// what to drop and can say so), `pop` sleeps until an element arrives or the queue is closed.
public final class BlockingQueue<Element: Sendable>: Sendable {
    private struct State {
        /// Popped slots are set to nil at once: an audio chunk must not outlive its consumer's use of it
        /// (the soak saw queues keeping 100 s of processed audio alive).
        var elements: [Element?] = []
        var head = 0
        var isClosed = false
        var count: Int { elements.count - head }
    }

    public let capacity: Int
    private let state = Mutex(State())
    private let available: FileDescriptor  // an eventfd semaphore counting queued elements

    public init(capacity: Int) throws(SystemError) {
        self.capacity = capacity
        available = FileDescriptor(
            rawValue: try syscall("eventfd") { eventfd(0, CInt(EFD_CLOEXEC) | CInt(EFD_SEMAPHORE)) }
        )
    }

    deinit {
        available.close()
    }

    /// Adds `element` unless the queue is full or closed; returns whether it was added.
    @discardableResult
    public func push(_ element: Element) -> Bool {
        let added = state.withLock { state in
            guard !state.isClosed, state.count < capacity else { return false }
            state.elements.append(element)
            return true
        }
        if added {
            var one: UInt64 = 1
            _ = write(available.rawValue, &one, 8)
        }
        return added
    }

    /// The oldest element, waiting for one; nil once the queue is closed and empty.
    public func pop() -> Element? {
        while true {
            var token: UInt64 = 0
            _ = retryingInterrupts { read(available.rawValue, &token, 8) }
            let (element, isClosed): (Element?, Bool) = state.withLock { state in
                guard state.count > 0 else { return (nil, state.isClosed) }
                let element = state.elements[state.head].take()
                state.head += 1
                if state.head == state.elements.count {
                    state.elements.removeAll(keepingCapacity: true)
                    state.head = 0
                } else if state.head >= 1024 && state.head * 2 >= state.elements.count {
                    state.elements.removeFirst(state.head)
                    state.head = 0
                }
                return (element, state.isClosed)
            }
            if let element { return element }
            if isClosed {
                var more: UInt64 = 1  // keep other poppers waking up
                _ = write(available.rawValue, &more, 8)
                return nil
            }
        }
    }

    /// Refuses further pushes; `pop` returns what is left, then nil.
    public func close() {
        state.withLock { $0.isClosed = true }
        var one: UInt64 = 1
        _ = write(available.rawValue, &one, 8)
    }

    public var count: Int { state.withLock { $0.count } }
}
