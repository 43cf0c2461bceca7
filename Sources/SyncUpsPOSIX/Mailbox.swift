import CSyncUpsShims
import Glibc
import Synchronization

/// A queue from any thread to the event loop: `post` from anywhere, the loop drains it on its own thread.
///
/// An eventfd makes the loop wake; it is written only when the queue goes from empty to non-empty, so a
/// burst of messages costs one wake-up.
public final class Mailbox<Message: Sendable>: Sendable {
    private let queue = Mutex<[Message]>([])
    private let eventFD: FileDescriptor

    public init() throws(SystemError) {
        eventFD = FileDescriptor(
            rawValue: try syscall("eventfd") { eventfd(0, CInt(EFD_CLOEXEC) | CInt(EFD_NONBLOCK)) }
        )
    }

    deinit {
        eventFD.close()
    }

    /// Queues `message` for the loop. Safe from any thread; never blocks on the loop.
    public func post(_ message: Message) {
        let wasEmpty = queue.withLock { messages in
            messages.append(message)
            return messages.count == 1
        }
        if wasEmpty {
            var one: UInt64 = 1
            _ = Glibc.write(eventFD.rawValue, &one, 8)
        }
    }

    /// Takes every queued message now, on the loop's thread (for a synchronous drain at shutdown).
    public func takeAll() -> [Message] {
        queue.withLock { messages in
            let taken = messages
            messages.removeAll(keepingCapacity: true)
            return taken
        }
    }

    /// Waits up to `timeout` for a message, without taking it; returns whether one is queued. For the loop's
    /// own thread while the loop is not running (at shutdown, waiting for a helper's last report).
    public func wait(timeout: Duration) -> Bool {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            var count: UInt64 = 0
            _ = Glibc.read(eventFD.rawValue, &count, 8)  // non-blocking: clears a signal already acted on
            if queue.withLock({ !$0.isEmpty }) { return true }
            let remaining = deadline - MonotonicInstant.now()
            guard remaining > .zero else { return false }
            var poller = pollfd(fd: eventFD.rawValue, events: Int16(POLLIN), revents: 0)
            // Rounded up, so the last fraction of a millisecond is slept rather than spun.
            _ = poll(&poller, 1, CInt(clamping: (remaining.nanoseconds + 999_999) / 1_000_000))
        }
    }

    /// Registers the mailbox with `loop`, which then calls `handler` with each batch of messages, in order.
    public func attach(to loop: EventLoop, handler: @escaping ([Message]) -> Void) throws(SystemError)
        -> EventLoop.Watch
    {
        try loop.watch(eventFD, for: .readable) { [self] _ in
            var count: UInt64 = 0
            _ = Glibc.read(eventFD.rawValue, &count, 8)
            let messages = takeAll()
            if !messages.isEmpty { handler(messages) }
        }
    }
}
