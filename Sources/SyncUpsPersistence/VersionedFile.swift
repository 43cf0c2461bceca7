import Glibc
import SyncUpsPOSIX
import Synchronization

/// `sync-ups.json` and its fallback `.prev`, replaced in two steps so that neither a killed daemon nor a
/// power cut loses more than it must, however slow the disk is:
///
/// 1. `put` writes the new version to a temporary file and renames it in place at once, without `fsync`:
///    the bytes are in the kernel's cache, so a daemon killed a moment later has lost nothing. (With the
///    `fsync` first, every change made during a slow one, seconds on a busy disk, waited for it.)
/// 2. `makeDurable`, on another thread, `fsync`s the version and the directory. A version that was replaced
///    before it got there becomes `.prev`; one still in place becomes `.prev` at the next `put`.
///
/// So `.prev` only ever names a version whose `fsync` completed (or a file another program wrote). A power
/// cut that catches `sync-ups.json` before its `fsync` leaves an earlier version there or one whose blocks
/// never reached the device, which does not parse: the loader then moves it aside and falls back to
/// `.prev`. For the process alone, a version in place is always whole, written and renamed as one file.
///
/// Both steps may run at the same time on different threads; a lock orders what they do to the names.
public final class VersionedFile: Sendable {
    /// A version in place whose bytes may not be on the device yet. Hand it to `makeDurable` or `abandon`.
    public struct Version: Sendable {
        public let identity: FileIdentity
        /// A second name for the version (so it can become `.prev` once durable) and its open descriptor.
        let temporary: String
        let fd: FileDescriptor
    }

    public let path: String
    public let previousPath: String
    public let fileSystem: FileSystem
    /// Bytes per `write` call; small enough that a crash test can land between two of them.
    public let chunkSize: Int
    /// The version in place that `makeDurable` has not finished: it must not become `.prev`.
    private let undurable = Mutex<FileIdentity?>(nil)

    public init(path: String, previousPath: String, fileSystem: FileSystem = .live, chunkSize: Int = 1 << 20) {
        self.path = path
        self.previousPath = previousPath
        self.fileSystem = fileSystem
        self.chunkSize = chunkSize
    }

    /// The temporary names it shares with the one-step `AtomicFile`.
    private var names: AtomicFile { AtomicFile(path: path, fileSystem: fileSystem) }

    /// The prefix of every temporary name, so start-up can remove the ones a crash left behind.
    public var temporaryPrefix: String { names.temporaryPrefix }

    /// Where the version `.prev` held is kept, a second name, until `deleteRetiredVersion()`.
    private var retiredPath: String { previousPath + ".old" }

    private enum Placement {
        case placed
        case conflict(FileIdentity?)
    }

    /// Writes the concatenation of `pieces` as the new version and puts it in place. `eachChunk` sees every
    /// chunk, in order, just before it is written; `isExpected` sees the identity of the file in place (nil
    /// if none) and the new version's, just before the replacement, and returning false aborts with
    /// `.conflict`, changing nothing.
    public func put(
        pieces: [[UInt8]],
        eachChunk: (UnsafeRawBufferPointer) -> Void = { _ in },
        replacingIf isExpected: (_ current: FileIdentity?, _ new: FileIdentity) -> Bool = { _, _ in true }
    ) throws(AtomicFileError) -> Version {
        let fs = fileSystem
        let temporary = names.newTemporaryPath()
        let fd: FileDescriptor
        do {
            fd = try fs.open(temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        } catch {
            throw .system(names.naming(error, temporary: temporary))
        }
        let outcome: Result<Version, AtomicFileError>
        do throws(SystemError) {
            try writeAll(pieces, to: fd, eachChunk)
            guard let identity = fs.identity(temporary) else { throw SystemError("stat(\(temporary))", .noSuchFile) }
            let placement = try undurable.withLock { undurable throws(SystemError) -> Placement in
                let current = fs.identity(path)
                guard isExpected(current, identity) else { return .conflict(current) }
                if let current, current != undurable { try keepAsPrevious() }
                try replace(with: temporary)
                undurable = identity
                return .placed
            }
            switch placement {
            case .placed: outcome = .success(Version(identity: identity, temporary: temporary, fd: fd))
            case .conflict(let current): outcome = .failure(.conflict(current))
            }
        } catch {
            outcome = .failure(.system(names.naming(error, temporary: temporary)))
        }
        if case .failure = outcome {
            try? fs.close(fd)
            fs.unlink(temporary)
            deleteRetiredVersion()  // a second name of what `.prev` still holds, if it got that far
        }
        return try outcome.get()
    }

    /// `fsync`s `version` and the directory (so its rename is durable too), then gives it its place: `.prev`
    /// if a newer version has replaced it, else it stays in place, marked durable. On failure it is left
    /// undurable (never `.prev`); write a fresh version rather than retry the `fsync` (Linux forgets a failed
    /// writeback).
    public func makeDurable(_ version: Version) throws(SystemError) {
        let fs = fileSystem
        defer { try? fs.close(version.fd) }
        do {
            try fs.sync(version.fd)
            try fs.syncDirectory(names.directory)
        } catch {
            fs.unlink(version.temporary)
            throw error
        }
        undurable.withLock { undurable in
            if undurable == version.identity {
                undurable = nil
                fs.unlink(version.temporary)
            } else {
                // Replaced while it was being synced: the newest durable version, so the best fallback. The
                // version `.prev` held keeps a name until `deleteRetiredVersion`.
                retirePrevious()
                do { try fs.rename(version.temporary, previousPath) } catch { fs.unlink(version.temporary) }
            }
        }
    }

    /// Syncs the file found in place at start-up: it may be a version a killed daemon put in place but never
    /// synced, and the first `put` makes it `.prev`, which must be on the device. Syncing a file that already
    /// is costs next to nothing.
    public func syncFileInPlace() {
        guard let (fd, _) = try? FileDescriptor.openRegularFile(path) else { return }
        try? fileSystem.sync(fd)
        fd.close()
        try? fileSystem.syncDirectory(names.directory)
    }

    /// Drops a version that a newer one replaced before it was made durable.
    public func abandon(_ version: Version) {
        try? fileSystem.close(version.fd)
        fileSystem.unlink(version.temporary)
    }

    /// Frees the version a `put` or `makeDurable` moved out of `.prev`: deleting a file of 100 MB takes ~25 ms
    /// on ext4, which the step itself need not wait for.
    public func deleteRetiredVersion() {
        fileSystem.unlink(retiredPath)
    }

    /// Makes the version in place (durable) the new `.prev`, through a staging name so `.prev` is never missing.
    private func keepAsPrevious() throws(SystemError) {
        retirePrevious()
        try fileSystem.replace(previousPath, withLinkTo: path, via: previousPath + ".tmp")
    }

    /// Gives the version `.prev` holds a second name, so renaming over `.prev` only drops a name.
    private func retirePrevious() {
        fileSystem.unlink(retiredPath)
        try? fileSystem.link(previousPath, retiredPath)
    }

    /// Renames `temporary` over the file, keeping `temporary` as a second name of the new version.
    private func replace(with temporary: String) throws(SystemError) {
        try fileSystem.replace(
            path, withLinkTo: temporary, via: FilePath.join(names.directory, temporaryPrefix + "link"))
    }

    /// Writes the pieces in `chunkSize` writes: straight from a piece when a whole chunk of it is left,
    /// otherwise gathered in a staging buffer (the encoder's pieces are about 12 KB each). `eachChunk` sees
    /// each chunk just before it is written (to hash the file while its bytes are in the cache). No writeback
    /// hints: they can block on a busy disk, and `fsync` is step two.
    private func writeAll(
        _ pieces: [[UInt8]], to fd: FileDescriptor, _ eachChunk: (UnsafeRawBufferPointer) -> Void
    ) throws(SystemError) {
        func write(_ chunk: ArraySlice<UInt8>) throws(SystemError) {
            chunk.withUnsafeBytes { eachChunk($0) }
            try fileSystem.writeAll(chunk, to: fd)
        }
        var staging: [UInt8] = []
        for piece in pieces {
            var start = 0
            while start < piece.count {
                if staging.isEmpty && piece.count - start >= chunkSize {
                    try write(piece[start..<(start + chunkSize)])
                    start += chunkSize
                    continue
                }
                if staging.capacity < chunkSize { staging.reserveCapacity(chunkSize) }
                let end = min(piece.count, start + chunkSize - staging.count)
                staging.append(contentsOf: piece[start..<end])
                start = end
                if staging.count == chunkSize {
                    try write(staging[...])
                    staging.removeAll(keepingCapacity: true)
                }
            }
        }
        if !staging.isEmpty { try write(staging[...]) }
    }
}
