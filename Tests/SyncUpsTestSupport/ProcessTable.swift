import Glibc
import SyncUpsPOSIX

/// Finds processes by a unique argument (a marker in argv), wherever they run: a process in another PID
/// namespace writes a pid (`$$`) this one cannot use, but its arguments show in /proc all the same.
public enum ProcessTable {
    /// Whether this process may create a user and a PID namespace, as a supervised child's start tries to
    /// (CI may: it runs as root; most systems let ordinary users too).
    public static let userNamespacesWork =
        (try? Subprocess(
            executable: "unshare", arguments: ["-Urp", "--fork", "true"], standardOutput: .null, standardError: .null
        ).wait()) == .exited(0)

    /// A `sleep` argument no other process has: 1000 s and a random fraction.
    public static func uniqueSleep() -> String { "1000.\(UInt32.random(in: 1...UInt32.max))" }

    /// The running processes with `argument` among their arguments (a zombie has none).
    public static func processes(withArgument argument: String) -> [pid_t] {
        ((try? DirectoryListing.names(in: "/proc")) ?? []).compactMap { name in
            guard let pid = pid_t(name), let cmdline = Files.read("/proc/\(name)/cmdline") else { return nil }
            return cmdline.split(separator: 0).contains(where: { $0.elementsEqual(argument.utf8) }) ? pid : nil
        }
    }

    /// The names of `pid`'s threads (`syncups-asr-out`, …), from /proc.
    public static func threadNames(of pid: pid_t) -> [String] {
        ((try? DirectoryListing.names(in: "/proc/\(pid)/task")) ?? []).compactMap { task in
            Files.readString("/proc/\(pid)/task/\(task)/comm").map { String($0.prefix { $0 != "\n" }) }
        }
    }

    /// SIGKILLs the processes with `argument` (a test cleaning up after a failure).
    public static func kill(withArgument argument: String) {
        for pid in processes(withArgument: argument) { Glibc.kill(pid, SIGKILL) }
    }
}
