import Glibc

/// How long a thread has waited for a core, runnable but not running, since it started: the run queue's delay
/// the kernel keeps (`/proc/thread-self/schedstat`, its second field). A wait that this grew by as much as the
/// wait itself lasted was the machine's load, not the thing waited for: a capture thread starved on a busy
/// machine, not a sound server that stopped delivering. Nil where the kernel keeps no such count.
///
/// Made on the thread it counts for, which keeps the file open and reads it again from its start with `pread`
/// at each `read()`: one system call a read, where opening the file each time cost four (the capture thread
/// reads it twice per chunk). Not `Sendable`: one thread's.
public final class SchedulingDelay {
    /// `/proc/thread-self/schedstat` as it resolved on the thread that made this (nil: no such count).
    private let file: FileDescriptor?
    private var buffer = [UInt8](repeating: 0, count: 128)

    /// Opens the calling thread's count.
    public init() {
        file = try? FileDescriptor.open("/proc/thread-self/schedstat", O_RDONLY)
    }

    deinit {
        file?.close()
    }

    /// The time the thread that made this has waited for a core so far.
    public func read() -> Duration? {
        guard let file else { return nil }
        let count = buffer.withUnsafeMutableBytes { bytes in
            retryingInterrupts { pread(file.rawValue, bytes.baseAddress, bytes.count, 0) }
        }
        guard count > 0 else { return nil }
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count >= 2, let nanoseconds = Int64(String(decoding: fields[1], as: UTF8.self)) else {
            return nil
        }
        return .nanoseconds(nanoseconds)
    }
}
