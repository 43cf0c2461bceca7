import CSyncUpsShims
import Glibc

/// Lets one thread sleep until another says "there is work": an eventfd in blocking mode. Signals sent while
/// nobody waits are remembered (and merged), so a wake-up is never lost.
public final class WakeSignal: Sendable {
    private let eventFD: FileDescriptor

    public init() throws(SystemError) {
        eventFD = FileDescriptor(rawValue: try syscall("eventfd") { eventfd(0, CInt(EFD_CLOEXEC)) })
    }

    deinit {
        eventFD.close()
    }

    /// Wakes the waiter (now, or at its next `wait`).
    public func signal() {
        var one: UInt64 = 1
        _ = Glibc.write(eventFD.rawValue, &one, 8)
    }

    /// Sleeps until at least one `signal` has arrived since the last `wait` returned.
    public func wait() {
        var count: UInt64 = 0
        _ = retryingInterrupts { Glibc.read(eventFD.rawValue, &count, 8) }
    }

    /// Like `wait`, but gives up after `timeout`; returns whether a signal came.
    public func wait(timeout: Duration) -> Bool {
        var poller = pollfd(fd: eventFD.rawValue, events: Int16(POLLIN), revents: 0)
        let deadline = MonotonicInstant.now() + timeout
        let ready = retryingInterrupts {
            poll(&poller, 1, CInt(clamping: max(0, (deadline - .now()).nanoseconds / 1_000_000)))
        }
        guard ready > 0 else { return false }
        wait()
        return true
    }
}
