import Glibc
import SyncUpsPOSIX
import Synchronization

/// Replaces a file so that, whatever moment the process or machine dies at, the path holds either the whole
/// old content or the whole new content.
///
/// The recipe: a temporary file in the same directory, created exclusively (a planted symlink makes it fail
/// rather than be followed), written in full, `fsync`ed and closed with every result checked; the old file
/// hard-linked to `<name>.prev`; `rename` over the old name; `fsync` of the directory so the rename itself
/// survives a power cut. On any failure the temporary file is removed and nothing visible has changed. A
/// failed `fsync` is never retried on the same file (Linux forgets the error): the next attempt starts over
/// with a new temporary file.
///
/// Speed, for files of 100 MB: writeback of each chunk starts as soon as it is written, so the device works
/// while the rest is written and the `fsync` has little left to wait for; and the version `.prev` held keeps
/// a second name until `deleteRetiredVersion()`, so freeing its blocks is not part of the write.
public struct AtomicFile: Sendable {
    public let path: String
    public let previousPath: String?
    public var fileSystem: FileSystem
    /// Bytes per `write` call; small enough that a crash test can land between two of them.
    public var chunkSize = 1 << 20
    /// False skips both `fsync`s: the replacement is still atomic for a process crash, but not across a
    /// power cut. For small, frequently rewritten files whose loss a power cut would excuse (the meeting journal).
    public var isDurable = true

    public init(path: String, previousPath: String? = nil, fileSystem: FileSystem = .live) {
        self.path = path
        self.previousPath = previousPath
        self.fileSystem = fileSystem
    }

    var directory: String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    var baseName: String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    private static let counter = Atomic<Int>(0)

    /// Where the version `previousPath` held before the last write is kept until `deleteRetiredVersion()`.
    public var retiredPath: String? { previousPath.map { $0 + ".old" } }

    /// Frees the version that the last write moved out of `previousPath`. Deleting a file of 100 MB takes
    /// ~25 ms on ext4, which the write itself need not wait for: call this once the write has been reported.
    public func deleteRetiredVersion() {
        if let retiredPath { fileSystem.unlink(retiredPath) }
    }

    /// The prefix of temporary files, so start-up can remove ones a crash left behind.
    public var temporaryPrefix: String { "." + baseName + ".tmp-" }

    /// Writes `bytes` as the new content. `isExpected` sees the identity of the file currently at `path` (nil
    /// if none) just before it is replaced; returning false aborts with `AtomicFileError.conflict` and leaves
    /// everything as it was. Returns the identity of the new file.
    @discardableResult
    public func write(
        _ bytes: [UInt8],
        replacingIf isExpected: (FileIdentity?) -> Bool = { _ in true }
    ) throws(AtomicFileError) -> FileIdentity {
        try write(pieces: [bytes], replacingIf: isExpected)
    }

    /// Writes the concatenation of `pieces` as the new content, without making it in memory: pieces are
    /// gathered into `chunkSize` writes, and `eachChunk` sees every chunk, in order, just before it is
    /// written (to hash the file while its bytes are in the cache).
    @discardableResult
    public func write(
        pieces: [[UInt8]],
        eachChunk: (UnsafeRawBufferPointer) -> Void = { _ in },
        replacingIf isExpected: (FileIdentity?) -> Bool = { _ in true }
    ) throws(AtomicFileError) -> FileIdentity {
        let number = Self.counter.wrappingAdd(1, ordering: .relaxed).oldValue
        let temporary = directory + "/" + temporaryPrefix + "\(getpid())-\(number)"
        var isTemporaryPresent = false
        let outcome: Outcome
        do {
            outcome = try replace(
                with: pieces, via: temporary, isTemporaryPresent: &isTemporaryPresent, eachChunk, isExpected)
        } catch {
            if isTemporaryPresent { fileSystem.unlink(temporary) }
            deleteRetiredVersion()
            throw .system(error)
        }
        switch outcome {
        case .written(let identity): return identity
        case .conflict(let current):
            fileSystem.unlink(temporary)
            throw .conflict(current)
        }
    }

    private enum Outcome {
        case written(FileIdentity)
        case conflict(FileIdentity?)
    }

    private func replace(
        with pieces: [[UInt8]],
        via temporary: String,
        isTemporaryPresent: inout Bool,
        _ eachChunk: (UnsafeRawBufferPointer) -> Void,
        _ isExpected: (FileIdentity?) -> Bool
    ) throws(SystemError) -> Outcome {
        let fs = fileSystem
        let fd = try fs.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        isTemporaryPresent = true
        do {
            try writeAll(pieces, to: fd, eachChunk)
            if isDurable { try fs.sync(fd) }
        } catch {
            try? fs.close(fd)
            throw error
        }
        try fs.close(fd)
        guard let identity = fs.identity(temporary) else { throw SystemError("stat(\(temporary))", .noSuchFile) }
        let current = fs.identity(path)
        guard isExpected(current) else { return .conflict(current) }
        if let previousPath, current != nil {
            if let retiredPath {
                // A second name for the version `.prev` holds, so the rename below only drops a name and
                // freeing that version (tens of milliseconds for a large file) can wait until after the write.
                fs.unlink(retiredPath)
                try? fs.link(previousPath, retiredPath)
            }
            try fs.replace(previousPath, withLinkTo: path, via: previousPath + ".tmp")
        }
        try fs.rename(temporary, path)
        isTemporaryPresent = false
        if isDurable { try fileSystem.syncDirectory(directory) }
        return .written(identity)
    }

    /// Writes the pieces in `chunkSize` writes: straight from a piece when a whole chunk of it is left,
    /// otherwise gathered in a staging buffer (the encoder's pieces are about 12 KB each).
    func writeAll(_ pieces: [[UInt8]], to fd: FileDescriptor, _ eachChunk: (UnsafeRawBufferPointer) -> Void)
        throws(SystemError)
    {
        var offset = 0
        var staging: [UInt8] = []
        for piece in pieces {
            var start = 0
            while start < piece.count {
                if staging.isEmpty && piece.count - start >= chunkSize {
                    try writeChunk(piece, start..<(start + chunkSize), to: fd, at: &offset, eachChunk)
                    start += chunkSize
                    continue
                }
                if staging.capacity < chunkSize { staging.reserveCapacity(chunkSize) }
                let end = min(piece.count, start + chunkSize - staging.count)
                staging.append(contentsOf: piece[start..<end])
                start = end
                if staging.count == chunkSize {
                    try writeChunk(staging, staging.indices, to: fd, at: &offset, eachChunk)
                    staging.removeAll(keepingCapacity: true)
                }
            }
        }
        if !staging.isEmpty {
            try writeChunk(staging, staging.indices, to: fd, at: &offset, eachChunk)
        }
    }

    /// Writes all of `bytes[range]` at `offset` (the file's end), then starts its writeback.
    private func writeChunk(
        _ bytes: [UInt8],
        _ range: Range<Int>,
        to fd: FileDescriptor,
        at offset: inout Int,
        _ eachChunk: (UnsafeRawBufferPointer) -> Void
    ) throws(SystemError) {
        bytes.withUnsafeBytes { eachChunk(UnsafeRawBufferPointer(rebasing: $0[range])) }
        var start = range.lowerBound
        while start < range.upperBound {
            let result = bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in
                    try fileSystem.write(fd, UnsafeRawBufferPointer(rebasing: buffer[start..<range.upperBound]))
                }
            }
            start += try result.get()
        }
        if isDurable { fileSystem.startWriteback(fd, offset, range.count) }
        offset += range.count
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
