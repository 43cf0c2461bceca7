import SyncUpsPOSIX
import Synchronization

/// Holds threads at a point of a test's choosing: `pass()` blocks while the gate is closed (a stuck `fsync`,
/// say), and every thread held goes on once it is opened.
public final class Gate: Sendable {
    private let isClosed = Atomic<Bool>(false)
    private let opened: WakeSignal

    public init() throws {
        opened = try WakeSignal()
    }

    public func close() { isClosed.store(true, ordering: .sequentiallyConsistent) }

    public func open() {
        isClosed.store(false, ordering: .sequentiallyConsistent)
        opened.signal()
    }

    /// Returns at once if the gate is open, else when it opens.
    public func pass() {
        guard isClosed.load(ordering: .sequentiallyConsistent) else { return }
        while isClosed.load(ordering: .sequentiallyConsistent) { _ = opened.wait(timeout: .milliseconds(50)) }
        opened.signal()  // a wake-up reaches one waiter: pass it on
    }
}
