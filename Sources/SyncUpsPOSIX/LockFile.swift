import Glibc

/// An exclusive `flock` on a file, taken without waiting and held until `release` or the process's exit
/// (the kernel drops it then, even after SIGKILL). The file holds the owner's pid, so whoever is refused
/// can say by whom. The file is never removed while held: a process that opened it just before would
/// lock a file nobody else sees.
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
    public init(path: String) throws(Failure) {
        self.path = path
        do {
            fd = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600)
        } catch {
            throw .system(error)
        }
        do {
            try syscall("flock(\(path))") { flock(fd.rawValue, LOCK_EX | LOCK_NB) }
        } catch {
            let owner = Self.pid(in: fd)
            fd.close()
            throw error.errno == .wouldBlock ? .held(byPID: owner) : .system(error)
        }
        // Ours now. A failure to write loses only the pid in someone else's message.
        _ = ftruncate(fd.rawValue, 0)
        try? fd.pwriteAll(Array("\(getpid())\n".utf8), at: 0)
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

    private static func pid(in fd: FileDescriptor) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { pread(fd.rawValue, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let digits = bytes[..<count].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        return Int32(String(decoding: digits, as: UTF8.self))
    }
}
