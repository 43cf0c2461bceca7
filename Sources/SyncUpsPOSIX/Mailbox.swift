import CSyncUpsShims
import Glibc
import Synchronization

/// A bounded queue from any thread to the event loop: `post` from anywhere, the loop drains it on its own
/// thread.
///
/// An eventfd makes the loop wake; it is written only when the queue goes from empty to non-empty, so a
/// burst of messages costs one wake-up. At `capacity` a helper thread's `post` waits for the loop to take
/// what is queued (backpressure: a flooding recognizer is slowed down, not buffered without end), for a
/// second at most: a loop that is itself waiting for that thread (joining it at shutdown) is never
/// deadlocked, and a stuck loop lets each thread add at most one message a second. The loop's own thread
/// never waits on itself.
public final class Mailbox<Message: Sendable>: Sendable {
    private let queue = Mutex<[Message]>([])
    private let eventFD: FileDescriptor
    /// Signalled when the loop takes the queue, for posters waiting for room.
    private let room: WakeSignal
    public let capacity: Int
    /// The thread the mailbox is attached to (0 before `attach`).
    private let loopThread = Atomic<UInt>(0)

    public init(capacity: Int = 4096) throws(SystemError) {
        self.capacity = capacity
        eventFD = FileDescriptor(
            rawValue: try syscall("eventfd") { eventfd(0, CInt(EFD_CLOEXEC) | CInt(EFD_NONBLOCK)) }
        )
        room = try WakeSignal()
    }

    deinit {
        eventFD.close()
    }

    /// Queues `message` for the loop. Safe from any thread; never blocks on the loop's own thread. From any
    /// other thread it waits while `capacity` messages are queued, up to a second.
    public func post(_ message: Message) {
        let isLoop = loopThread.load(ordering: .relaxed) == UInt(pthread_self())
        let giveUp = MonotonicInstant.now() + .seconds(1)
        while true {
            let mayOverflow = isLoop || MonotonicInstant.now() >= giveUp
            let (isQueued, wasEmpty) = queue.withLock { messages -> (Bool, Bool) in
                guard messages.count < capacity || mayOverflow else { return (false, false) }
                messages.append(message)
                return (true, messages.count == 1)
            }
            if isQueued {
                if wasEmpty {
                    var one: UInt64 = 1
                    _ = Glibc.write(eventFD.rawValue, &one, 8)
                }
                return
            }
            // Full: wait for the loop to drain it (rechecked every 100 ms, whoever the signal woke).
            _ = room.wait(timeout: .milliseconds(100))
        }
    }

    /// How many messages wait for the loop now.
    public var pendingCount: Int { queue.withLock { $0.count } }

    /// Takes every queued message now, on the loop's thread (for a synchronous drain at shutdown).
    public func takeAll() -> [Message] {
        let (taken, wasFull) = queue.withLock { messages in
            let taken = messages
            messages.removeAll(keepingCapacity: true)
            return (taken, taken.count >= capacity)
        }
        if wasFull { room.signal() }
        return taken
    }

    /// How a wait for a message ended.
    public enum WaitOutcome: Sendable, Equatable {
        /// A message is queued (not taken).
        case message
        /// The time given passed with none.
        case timedOut
        /// The other descriptor became readable first (the daemon's signals).
        case interrupted
    }

    /// Waits up to `timeout` for a message, without taking it. For the loop's own thread while the loop is
    /// not running (at shutdown, waiting for a helper's last report): `EventLoop.wait(for:until:orUntilReadable:)`
    /// waits on the loop's clock. The wait also ends, without a message, as soon as `other` is readable.
    public func wait(timeout: Duration, orUntilReadable other: FileDescriptor? = nil) -> WaitOutcome {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            var count: UInt64 = 0
            _ = Glibc.read(eventFD.rawValue, &count, 8)  // non-blocking: clears a signal already acted on
            if queue.withLock({ !$0.isEmpty }) { return .message }
            let remaining = deadline - MonotonicInstant.now()
            guard remaining > .zero else { return .timedOut }
            var pollers = [pollfd(fd: eventFD.rawValue, events: Int16(POLLIN), revents: 0)]
            if let other { pollers.append(pollfd(fd: other.rawValue, events: Int16(POLLIN), revents: 0)) }
            // Rounded up, so the last fraction of a millisecond is slept rather than spun.
            _ = poll(&pollers, nfds_t(pollers.count), CInt(clamping: (remaining.nanoseconds + 999_999) / 1_000_000))
            if pollers.count > 1 && pollers[1].revents != 0 {
                return queue.withLock { !$0.isEmpty } ? .message : .interrupted
            }
        }
    }

    /// Registers the mailbox with `loop`, which then calls `handler` with each batch of messages, in order.
    /// At most `batchLimit` messages go to the handler per turn; the rest wait for the next, after the
    /// loop has polled its other inputs (a flooding helper cannot hold up a client's request).
    public func attach(to loop: EventLoop, batchLimit: Int = 512, handler: @escaping ([Message]) -> Void)
        throws(SystemError) -> EventLoop.Watch
    {
        loopThread.store(UInt(pthread_self()), ordering: .relaxed)
        return try loop.watch(eventFD, for: .readable) { [self] _ in
            var count: UInt64 = 0
            _ = Glibc.read(eventFD.rawValue, &count, 8)
            let (messages, isMore) = take(upTo: batchLimit)
            if isMore {
                var one: UInt64 = 1
                _ = Glibc.write(eventFD.rawValue, &one, 8)  // come back on the next turn
            }
            if !messages.isEmpty { handler(messages) }
        }
    }

    private func take(upTo limit: Int) -> ([Message], Bool) {
        let (taken, wasFull, isMore) = queue.withLock { messages in
            let wasFull = messages.count >= capacity
            guard messages.count > limit else {
                let taken = messages
                messages.removeAll(keepingCapacity: true)
                return (taken, wasFull, false)
            }
            let taken = Array(messages.prefix(limit))
            messages.removeFirst(limit)
            return (taken, wasFull, true)
        }
        if wasFull { room.signal() }
        return (taken, isMore)
    }
}
