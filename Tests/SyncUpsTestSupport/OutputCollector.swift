import SyncUpsPOSIX
import Synchronization

/// Drains a pipe on its own thread (so the writer never blocks on a full pipe) and lets a test wait, with a
/// deadline, for what it expects to appear.
public final class OutputCollector: Sendable {
    private final class Shared: Sendable {
        let text = Mutex("")
        let isFinished = Mutex(false)
        let changed: WakeSignal

        init() throws {
            changed = try WakeSignal()
        }
    }

    private let shared: Shared
    private let thread: DedicatedThread

    public init(_ fd: FileDescriptor, name: String = "test-collector") throws {
        let shared = try Shared()
        self.shared = shared
        thread = try DedicatedThread(name: name) {
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { (try? fd.read(into: $0)) ?? 0 }
                if count <= 0 { break }
                shared.text.withLock { $0 += String(decoding: buffer[0..<count], as: UTF8.self) }
                shared.changed.signal()
            }
            shared.isFinished.withLock { $0 = true }
            shared.changed.signal()
        }
    }

    /// Everything read so far.
    public var contents: String { shared.text.withLock { $0 } }

    /// Waits until `condition` holds for the text read so far; false if `timeout` passes first.
    @discardableResult
    public func wait(timeout: Duration = .seconds(10), until condition: (String) -> Bool) -> Bool {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            if condition(contents) { return true }
            if shared.isFinished.withLock({ $0 }) { return condition(contents) }
            let remaining = deadline - .now()
            guard remaining > .zero else { return false }
            _ = shared.changed.wait(timeout: remaining)
        }
    }

    /// Waits for the writer to close the pipe.
    public func join() { thread.join() }
}
