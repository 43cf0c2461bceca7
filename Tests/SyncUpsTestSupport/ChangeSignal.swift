import Glibc
import SyncUpsPOSIX

/// Lets a test wait, with a deadline, for what other threads do: the code under test calls `changed()` from
/// its callbacks, and `wait(until:)` checks its condition again after each call, never on a timer.
public final class ChangeSignal: Sendable {
    private let signal: WakeSignal

    public init() throws {
        signal = try WakeSignal()
    }

    /// Something the waiter may be waiting for has happened.
    public func changed() { signal.signal() }

    /// Whether `condition` came true before `timeout` passed.
    public func wait(timeout: Duration = .seconds(10), until condition: () throws -> Bool) rethrows -> Bool {
        let deadline = MonotonicInstant.now() + timeout
        while try !condition() {
            let remaining = deadline - .now()
            guard remaining > .zero else { return false }
            _ = signal.wait(timeout: remaining + .milliseconds(1))
        }
        return true
    }
}

extension Files {
    /// Whether `condition` came true before `timeout` passed, checked again at every change in `directory`
    /// (inotify: a file created, written, closed, moved or deleted), for files another process writes.
    public static func wait(
        forChangesIn directory: String, timeout: Duration = .seconds(10), until condition: () throws -> Bool
    ) throws -> Bool {
        let inotify = try Inotify()
        let mask = IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE
        _ = try inotify.add(directory, mask: UInt32(mask))
        let deadline = MonotonicInstant.now() + timeout
        while try !condition() {
            let remaining = deadline - .now()
            guard remaining > .zero else { return false }
            var poller = pollfd(fd: inotify.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, CInt(clamping: remaining.nanoseconds / 1_000_000 + 1))
            _ = inotify.drain()
        }
        return true
    }
}
