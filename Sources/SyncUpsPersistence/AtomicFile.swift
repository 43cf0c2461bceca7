import Glibc
import SyncUpsPOSIX
import Synchronization

/// Replaces a small file (a meeting's details, its journal) so that, whatever moment the process or machine
/// dies at, the path holds either the whole old content or the whole new content. `sync-ups.json`, large and
/// with a fallback, has `VersionedFile` instead.
///
/// The recipe: a temporary file in the same directory, created exclusively (a planted symlink makes it fail
/// rather than be followed), written in full, `fsync`ed and closed with every result checked; `rename` over
/// the old name; `fsync` of the directory so the rename itself survives a power cut. On any failure the
/// temporary file is removed and nothing visible has changed. A failed `fsync` is never retried on the same
/// file (Linux forgets the error): the next attempt starts over with a new temporary file.
public struct AtomicFile: Sendable {
    public let path: String
    public var fileSystem: FileSystem
    /// False skips both `fsync`s: the replacement is still atomic for a process crash, but not across a
    /// power cut. For small, frequently rewritten files whose loss a power cut would excuse (the meeting journal).
    public var isDurable = true

    public init(path: String, fileSystem: FileSystem = .live) {
        self.path = path
        self.fileSystem = fileSystem
    }

    var directory: String { FilePath.directory(of: path) }

    var baseName: String { FilePath.name(of: path) }

    private static let counter = Atomic<Int>(0)

    /// The prefix of temporary files, so start-up can remove ones a crash left behind.
    public var temporaryPrefix: String { "." + baseName + ".tmp-" }

    /// Whether `name` (a file name, no directory) is one of this naming's temporary files, of any file.
    public static func isTemporaryName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.contains(".tmp-")
    }

    /// A name for a new temporary file next to the file, unique in this process.
    func newTemporaryPath() -> String {
        let number = Self.counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return FilePath.join(directory, temporaryPrefix + "\(getpid())-\(number)")
    }

    /// `error` with `temporary` named by the pattern of this file's temporaries: each try makes one of another
    /// name, and a retry that fails the same way must fail with the same error (`FailingWrites` says a failure
    /// once, not at each retry).
    func naming(_ error: SystemError, temporary: String) -> SystemError {
        SystemError(
            error.operation.replacing(temporary, with: FilePath.join(directory, temporaryPrefix + "*")), error.errno)
    }

    /// Writes `bytes` as the new content.
    public func write(_ bytes: [UInt8]) throws(SystemError) {
        let temporary = newTemporaryPath()
        do {
            try write(bytes, through: temporary)
        } catch {
            throw naming(error, temporary: temporary)
        }
    }

    private func write(_ bytes: [UInt8], through temporary: String) throws(SystemError) {
        let fs = fileSystem
        let fd = try fs.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        do {
            try fs.writeAll(bytes[...], to: fd)
            if isDurable { try fs.sync(fd) }
            try fs.close(fd)
        } catch {
            try? fs.close(fd)
            fs.unlink(temporary)
            throw error
        }
        do {
            try fs.rename(temporary, path)
        } catch {
            fs.unlink(temporary)
            throw error
        }
        if isDurable { try fs.syncDirectory(directory) }
    }
}

/// Why an atomic write did not happen.
public enum AtomicFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed; the old file is untouched.
    case system(SystemError)
    /// The file on disk is not the one expected (someone else changed it); nothing was written.
    case conflict(FileIdentity?)

    public var description: String {
        switch self {
        case .system(let error): error.description
        case .conflict: "the file was changed by another program"
        }
    }
}
