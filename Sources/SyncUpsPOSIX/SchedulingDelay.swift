import Glibc

/// How long the calling thread has waited for a core, runnable but not running, since it started: the run
/// queue's delay the kernel keeps (`/proc/thread-self/schedstat`, its second field). A wait that this grew by
/// as much as the wait itself lasted was the machine's load, not the thing waited for: a capture thread
/// starved on a busy machine, not a sound server that stopped delivering. Nil where the kernel keeps no such
/// count.
public enum SchedulingDelay {
    public static func ofCurrentThread() -> Duration? {
        guard let fd = try? FileDescriptor.open("/proc/thread-self/schedstat", O_RDONLY) else { return nil }
        defer { fd.close() }
        guard let bytes = try? fd.readToEnd(sizeHint: 64, limit: 128) else { return nil }
        let fields = bytes.split(separator: UInt8(ascii: " "))
        guard fields.count >= 2, let nanoseconds = Int64(String(decoding: fields[1], as: UTF8.self)) else {
            return nil
        }
        return .nanoseconds(nanoseconds)
    }
}
