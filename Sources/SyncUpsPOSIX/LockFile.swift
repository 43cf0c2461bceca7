import Glibc

/// An exclusive `flock` on a file or a directory, taken without waiting and held until `release` or the
/// process's exit (the kernel drops it then, even after SIGKILL). The file (or a pid file beside a locked
/// directory) holds the owner's pid, so whoever is refused can say by whom. A lock file is never removed
/// while held: a process that opened it just before would lock a file nobody else sees.
public final class LockFile {
    /// Why the lock was not taken.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// Another process holds it; its pid if the file says.
        case held(byPID: Int32?)
        case system(SystemError)

        public var description: String {
            switch self {
            case .held(let pid): "it is locked by pid \(pid.map(String.init) ?? "unknown")"
            case .system(let error): error.description
            }
        }
    }

    public let path: String
    private let fd: FileDescriptor
    private var isReleased = false

    /// Opens (creating, mode 0600) and locks `path`, then writes this process's pid into it.
    public convenience init(path: String) throws(Failure) {
        try self.init(locking: path, flags: O_RDWR | O_CREAT | O_NOFOLLOW, pidFile: nil)
    }

    /// Locks the directory `path` itself, which needs no file created in it (a read-only directory can still
    /// be locked), and writes this process's pid into `pidFile` where it can.
    public convenience init(directory path: String, pidFile: String) throws(Failure) {
        try self.init(locking: path, flags: O_RDONLY | O_DIRECTORY, pidFile: pidFile)
    }

    private init(locking path: String, flags: CInt, pidFile: String?) throws(Failure) {
        self.path = path
        do {
            fd = try FileDescriptor.open(path, flags)
        } catch {
            throw .system(error)
        }
        let pidPath = pidFile ?? path
        do {
            try syscall("flock(\(path))") { flock(fd.rawValue, LOCK_EX | LOCK_NB) }
        } catch {
            let owner = pidFile == nil ? Self.pid(in: fd) : Self.pid(at: pidPath)
            release()  // as `deinit` would, which runs too (every property is set): the file is closed once
            throw error.errno == .wouldBlock ? .held(byPID: owner) : .system(error)
        }
        // Ours now. A failure to write loses only the pid in someone else's message.
        let pid = Array("\(getpid())\n".utf8)
        if pidFile == nil {
            _ = ftruncate(fd.rawValue, 0)
            try? fd.pwriteAll(pid, at: 0)
        } else if let file = try? FileDescriptor.open(pidPath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW) {
            try? file.writeAll(pid)
            file.close()
        }
    }

    deinit {
        release()
    }

    /// Drops the lock (closing the file) now rather than at exit.
    public func release() {
        guard !isReleased else { return }
        isReleased = true
        fd.close()
    }

    private static func pid(at path: String) -> Int32? {
        guard let fd = try? FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW) else { return nil }
        defer { fd.close() }
        return pid(in: fd)
    }

    private static func pid(in fd: FileDescriptor) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { pread(fd.rawValue, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let digits = bytes[..<count].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        return Int32(String(decoding: digits, as: UTF8.self))
    }
}
