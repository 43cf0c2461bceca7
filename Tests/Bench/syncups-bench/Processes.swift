import Glibc
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization

/// The daemons under test, started with throwaway configurations and stopped at the end.
final class Daemon: Sendable {
    let process: Subprocess
    let socketPath: String
    let directory: String

    /// Starts `executable` and waits (up to 10 s) until `socketPath` accepts a connection. Its standard error
    /// (the daemon's log) goes to `standardError`.
    init(
        executable: String, arguments: [String], socketPath: String, directory: String,
        environment: [String: String] = [:], wrapper: [String] = [], standardError: Subprocess.Stream = .null
    ) throws {
        var fullEnvironment = Subprocess.currentEnvironment()
        for (key, value) in environment { fullEnvironment[key] = value }
        process = try Subprocess(
            executable: wrapper.first ?? executable,
            arguments: wrapper.isEmpty ? arguments : Array(wrapper.dropFirst()) + [executable] + arguments,
            environment: fullEnvironment,
            standardInput: .null,
            standardOutput: .null,
            standardError: standardError
        )
        self.socketPath = socketPath
        self.directory = directory
        let deadline = MonotonicInstant.now() + .seconds(wrapper.isEmpty ? 10 : 120)
        while MonotonicInstant.now() < deadline {
            if let fd = try? UnixSocket.connect(path: socketPath) {
                fd.close()
                return
            }
            var pause = timespec(tv_sec: 0, tv_nsec: 200_000)
            nanosleep(&pause, nil)
        }
        throw SystemError("\(executable) did not start listening on \(socketPath)", .connectionRefused)
    }

    /// Asks the daemon to stop (SIGTERM) and waits for it; returns how it ended.
    @discardableResult
    func stop() -> Subprocess.Termination {
        process.send(SIGTERM)
        return process.wait()
    }

    var pid: pid_t { process.pid }

    /// syncupsd from the same build as this benchmark.
    static func syncupsd(
        _ extra: [String] = [], dataDirectory: String? = nil, environment: [String: String] = [:],
        wrapper: [String] = []
    ) throws -> Daemon {
        let directory = temporaryDirectory("syncupsd")
        let socket = directory + "/socket"
        return try Daemon(
            executable: productsDirectory + "/syncupsd",
            arguments: [
                "--socket", socket, "--data-dir", dataDirectory ?? directory + "/data", "--no-config", "--log-level",
                "error", "--no-cue", "--speech-engine", "none",
            ] + extra,
            socketPath: socket,
            directory: directory,
            environment: environment,
            wrapper: wrapper
        )
    }

    /// MPD with a null output, an empty music directory, on a Unix socket.
    static func mpd(wrapper: [String] = []) throws -> Daemon {
        let directory = temporaryDirectory("mpd")
        mkdir(directory + "/music", 0o700)
        let config = directory + "/mpd.conf"
        let text = """
            music_directory "\(directory)/music"
            db_file "\(directory)/db"
            state_file "\(directory)/state"
            pid_file "\(directory)/pid"
            bind_to_address "\(directory)/socket"
            audio_output {
                type "null"
                name "null"
            }

            """
        let fd = try FileDescriptor.open(config, O_WRONLY | O_CREAT | O_TRUNC)
        try fd.writeAll(Array(text.utf8))
        fd.close()
        return try Daemon(
            executable: "mpd",
            arguments: ["--no-daemon", "--stderr", config],
            socketPath: directory + "/socket",
            directory: directory,
            wrapper: wrapper
        )
    }
}

/// Where the benchmark's sibling executables are.
let productsDirectory: String = {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let path = String(decoding: buffer[0..<max(0, count)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
}()

/// A fresh directory under /tmp, removed with everything in it when the benchmark exits: a full run writes
/// several hundred megabytes of data files and daemon state.
func temporaryDirectory(_ label: String) -> String {
    var template = Array("/tmp/syncups-bench-\(label)-XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    let isFirst = temporaryDirectories.withLock { directories in
        directories.append(path)
        return directories.count == 1
    }
    if isFirst { atexit { removeTemporaryDirectories() } }
    return path
}

private let temporaryDirectories = Mutex<[String]>([])

private func removeTemporaryDirectories() {
    for path in temporaryDirectories.withLock({ $0 }) { TemporaryDirectory.removeTree(path) }
}

/// What /proc says about a process: resident memory, context switches (all threads), CPU time.
struct ProcessSample {
    var residentKiB: Int
    var contextSwitches: Int
    var cpuSeconds: Double

    init(pid: pid_t) {
        residentKiB = Self.statusField(pid, "VmRSS:") ?? 0
        var switches = 0
        for task in (try? DirectoryListing.names(in: "/proc/\(pid)/task")) ?? [] {
            let path = "/proc/\(pid)/task/\(task)/status"
            switches +=
                (Self.field(path, "voluntary_ctxt_switches:") ?? 0)
                + (Self.field(path, "nonvoluntary_ctxt_switches:") ?? 0)
        }
        contextSwitches = switches
        cpuSeconds = Self.cpuSeconds(pid)
    }

    static func statusField(_ pid: pid_t, _ name: String) -> Int? { field("/proc/\(pid)/status", name) }

    static func field(_ path: String, _ name: String) -> Int? {
        guard let fd = try? FileDescriptor.open(path, O_RDONLY), let bytes = try? fd.readToEnd() else { return nil }
        fd.close()
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name) {
            return Int(line.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let fd = try? FileDescriptor.open("/proc/\(pid)/stat", O_RDONLY), let bytes = try? fd.readToEnd() else {
            return 0
        }
        fd.close()
        let text = String(decoding: bytes, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // utime and stime are fields 14 and 15 of the whole line: 12th and 13th after the command.
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
