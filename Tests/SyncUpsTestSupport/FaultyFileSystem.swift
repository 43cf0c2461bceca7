import SyncUpsPOSIX
import SyncUpsPersistence
import Synchronization

/// The live file system with switchable faults: make `write`, `sync` or `rename` fail with a real errno
/// (`ENOSPC`, `EIO`) until told otherwise, and count the operations that happened.
public final class FaultyFileSystem: Sendable {
    public enum Operation: Hashable, Sendable {
        case open, write, sync, close, rename, link, unlink
    }

    private let faults = Mutex<[Operation: Errno]>([:])
    private let counts = Mutex<[Operation: Int]>([:])
    private let renameTargets = Mutex<[String]>([])

    /// Called before every counted operation, on the thread doing it (the crash writer kills itself here).
    private let beforeEach: @Sendable (Operation) -> Void

    public init(beforeEach: @escaping @Sendable (Operation) -> Void = { _ in }) {
        self.beforeEach = beforeEach
    }

    public func fail(_ operation: Operation, with errno: Errno) {
        faults.withLock { $0[operation] = errno }
    }

    public func heal() {
        faults.withLock { $0.removeAll() }
    }

    public func count(_ operation: Operation) -> Int {
        counts.withLock { $0[operation] ?? 0 }
    }

    /// How many successful renames replaced `path`: the number of completed atomic writes of that file.
    public func replacements(of path: String) -> Int {
        renameTargets.withLock { $0.filter { $0 == path }.count }
    }

    private func check(_ operation: Operation, _ name: String) throws(SystemError) {
        beforeEach(operation)
        counts.withLock { $0[operation, default: 0] += 1 }
        if let errno = faults.withLock({ $0[operation] }) { throw SystemError(name, errno) }
    }

    public var fileSystem: FileSystem {
        let live = FileSystem.live
        return FileSystem(
            open: { (path, flags, mode) throws(SystemError) in
                try self.check(.open, "open(\(path))")
                return try live.open(path, flags, mode)
            },
            write: { (fd, bytes) throws(SystemError) in
                try self.check(.write, "write")
                return try live.write(fd, bytes)
            },
            sync: { (fd) throws(SystemError) in
                try self.check(.sync, "fsync")
                try live.sync(fd)
            },
            close: { (fd) throws(SystemError) in
                try self.check(.close, "close")
                try live.close(fd)
            },
            rename: { (from, to) throws(SystemError) in
                try self.check(.rename, "rename(\(from), \(to))")
                try live.rename(from, to)
                self.renameTargets.withLock { $0.append(to) }
            },
            link: { (from, to) throws(SystemError) in
                try self.check(.link, "link(\(from), \(to))")
                try live.link(from, to)
            },
            unlink: { path in
                self.beforeEach(.unlink)
                live.unlink(path)
            },
            identity: live.identity
        )
    }
}

/// Whether `body` fails with `AtomicFileError.system` carrying `errno`: a fault injected by
/// `FaultyFileSystem` came out as itself.
public func failsWithSystemError(_ errno: Errno, _ body: () throws -> Void) -> Bool {
    do {
        try body()
        return false
    } catch {
        guard case .system(let failure) = error as? AtomicFileError else { return false }
        return failure.errno == errno
    }
}
