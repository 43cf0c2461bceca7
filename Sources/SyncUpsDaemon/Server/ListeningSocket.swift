import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence

/// The daemon's socket: created safely, or taken from systemd; one daemon per socket.
///
/// A lock file beside the socket (`socket.lock`, held with `flock` for the daemon's life) makes a second
/// daemon refuse to start; a socket file left by a crashed daemon is found stale by a `connect` probe and
/// replaced, while one that answers is never touched.
struct ListeningSocket {
    let fd: FileDescriptor
    /// The path to remove at exit: nil when systemd owns the socket.
    let ownedPath: String?
    /// The socket file this daemon made there: at exit it removes that file and no other (a careless user
    /// who removed it, or the whole directory, and started another daemon there: attack 88).
    private let madeFile: FileIdentity?
    private let lock: LockFile?

    /// Wraps a socket passed by systemd; it is already bound and listening.
    init(passed fd: FileDescriptor) {
        self.fd = fd
        self.ownedPath = nil
        self.madeFile = nil
        self.lock = nil
    }

    private init(fd: FileDescriptor, ownedPath: String, lock: LockFile) {
        self.fd = fd
        self.ownedPath = ownedPath
        self.madeFile = FileIdentity(path: ownedPath)
        self.lock = lock
    }

    /// Creates the socket at `path` (0600); `directory`, the default location's, is created or checked first.
    static func create(at path: String, in directory: RuntimeDirectory?) throws(StartupError) -> ListeningSocket {
        do {
            try directory?.prepare()
        } catch {
            throw StartupError("cannot use the socket directory: \(error)")
        }

        let lock: LockFile
        do {
            lock = try LockFile(path: path + ".lock")
        } catch {
            if case .held(let pid) = error {
                throw StartupError(
                    "another syncupsd\(pid.map { " (pid \($0))" } ?? "") is already running on \(path)")
            }
            throw StartupError("cannot lock \(path).lock: \(error)")
        }

        do throws(StartupError) {
            try removeStaleSocket(at: path)
            let fd: FileDescriptor
            do {
                fd = try UnixSocket.listen(path: path)
            } catch {
                throw StartupError("cannot listen on \(path): \(error)")
            }
            return ListeningSocket(fd: fd, ownedPath: path, lock: lock)
        } catch {
            lock.release()
            throw error
        }
    }

    private static func removeStaleSocket(at path: String) throws(StartupError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        switch info.st_mode & S_IFMT {
        case S_IFSOCK:
            if let fd = try? UnixSocket.connect(path: path) {
                fd.close()
                throw StartupError("a daemon is already answering on \(path)")
            }
            unlink(path)
        case S_IFLNK:
            throw StartupError("\(path) is a symbolic link; refusing to follow or replace it")
        default:
            throw StartupError("\(path) exists and is not a socket; refusing to replace it")
        }
    }

    /// Removes the socket file, when this daemon created it and it is still that file (not another daemon's
    /// socket, a file or a link put there since), and lets go of its lock. The descriptor is not
    /// closed here: the server that serves it closes it (`Server.stopAccepting`). The lock file stays: removed while held, a
    /// daemon that had just opened it would lock a file the next one does not see, and both would serve the
    /// socket.
    func removeFile() {
        if let ownedPath, let madeFile, let now = FileIdentity(path: ownedPath),
            now.device == madeFile.device && now.inode == madeFile.inode
        {
            unlink(ownedPath)
        }
        lock?.release()
    }
}

/// Why the daemon cannot start; printed as is, and the daemon exits with `exitStatus` (1 unless said).
public struct StartupError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public var exitStatus: CInt

    /// sysexits' EX_TEMPFAIL: another daemon is using the data directory; try again once it has stopped.
    public static let dataDirectoryInUse: CInt = 75

    public init(_ description: String, exitStatus: CInt = 1) {
        self.description = description
        self.exitStatus = exitStatus
    }
}
