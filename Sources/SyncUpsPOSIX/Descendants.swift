import CSyncUpsShims
import Glibc
import Synchronization

/// The processes this one started, however they detached. As the subreaper of its descendants, this
/// process inherits any of them whose parent ends (a speech command's `setsid … &`, a double fork), instead
/// of init; `endOrphans` then ends them, so nothing a plug-in started outlives what started it.
public enum Descendants {
    /// Children this process waits for itself (a speech command that is still running): never ended here.
    /// Held while one is spawned, so a sweep cannot take a new child for an orphan.
    public static let supervised = Mutex<Set<pid_t>>([])

    private static let isSubreaper = Atomic(false)

    /// Asks the kernel to re-parent orphaned descendants to this process (PR_SET_CHILD_SUBREAPER). Only a
    /// process that owns all its children (the daemon) may: `endOrphans` does nothing anywhere else.
    @discardableResult
    public static func becomeSubreaper() -> Bool {
        let isSet = syncups_become_child_subreaper() == 0
        isSubreaper.store(isSet, ordering: .sequentiallyConsistent)
        return isSet
    }

    /// SIGKILLs and reaps every child of this process that is not `supervised`, round after round (ending
    /// one re-parents its own children here), until none is left or after 100 rounds. Only in a subreaper:
    /// a process that merely uses a speech command (a test, the benchmark) has children of its own.
    public static func endOrphans() {
        guard isSubreaper.load(ordering: .sequentiallyConsistent) else { return }
        for _ in 0..<100 {
            let orphans = supervised.withLock { supervised in
                let orphans = children().filter { !supervised.contains($0) }
                for pid in orphans { kill(pid, SIGKILL) }
                return orphans
            }
            if orphans.isEmpty { return }
            for pid in orphans {
                var status: CInt = 0
                _ = retryingInterrupts { waitpid(pid, &status, 0) }
            }
        }
    }

    /// The daemon's last act before it exits: waits up to `timeout` for each supervised child (a speech
    /// command, whose group was killed) to be reaped by its own thread, which ends what that child detached
    /// (`endOrphans`), then ends whatever is left re-parented here. Returns whether every supervised child was
    /// reaped in time. Without it a clean stop outran those threads: where no PID namespace holds the engine,
    /// what it detached from its group outlived the daemon (attack 92: a helper holding the engine's stdout
    /// 12 times in 12). Only in a subreaper.
    @discardableResult
    public static func endAll(waitingUpTo timeout: Duration) -> Bool {
        guard isSubreaper.load(ordering: .sequentiallyConsistent) else { return true }
        let isReaped = MonotonicInstant.poll(until: .now() + timeout) { supervised.withLock { $0.isEmpty } }
        endOrphans()
        return isReaped
    }

    /// The pids whose parent is this process, from /proc.
    static func children() -> [pid_t] {
        let me = getpid()
        var found: [pid_t] = []
        for name in (try? DirectoryListing.names(in: "/proc")) ?? [] {
            guard let pid = pid_t(name), pid != me,
                let stat = try? FileDescriptor.open("/proc/\(name)/stat", O_RDONLY)
            else { continue }
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = buffer.withUnsafeMutableBytes { Glibc.read(stat.rawValue, $0.baseAddress, $0.count) }
            stat.close()
            guard count > 0 else { continue }
            // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
            let line = buffer[..<count]
            guard let close = line.lastIndex(of: UInt8(ascii: ")")) else { continue }
            let fields = line[(close + 1)...].split(separator: UInt8(ascii: " "))
            guard fields.count > 1, let parent = pid_t(String(decoding: fields[1], as: UTF8.self)),
                parent == me
            else { continue }
            found.append(pid)
        }
        return found
    }
}
