import Glibc
import SyncUpsPOSIX

/// The file operations the store performs, as a struct of closures so tests can make any of them fail with a
/// real errno (`ENOSPC`, `EIO`) at a chosen moment; `.live` calls the kernel.
public struct FileSystem: Sendable {
    public var open: @Sendable (_ path: String, _ flags: CInt, _ mode: mode_t) throws(SystemError) -> FileDescriptor
    public var write: @Sendable (_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> Int
    public var sync: @Sendable (_ fd: FileDescriptor) throws(SystemError) -> Void
    public var close: @Sendable (_ fd: FileDescriptor) throws(SystemError) -> Void
    public var rename: @Sendable (_ from: String, _ to: String) throws(SystemError) -> Void
    public var link: @Sendable (_ from: String, _ to: String) throws(SystemError) -> Void
    public var unlink: @Sendable (_ path: String) -> Void
    public var identity: @Sendable (_ path: String) -> FileIdentity?

    public init(
        open: @escaping @Sendable (String, CInt, mode_t) throws(SystemError) -> FileDescriptor,
        write: @escaping @Sendable (FileDescriptor, UnsafeRawBufferPointer) throws(SystemError) -> Int,
        sync: @escaping @Sendable (FileDescriptor) throws(SystemError) -> Void,
        close: @escaping @Sendable (FileDescriptor) throws(SystemError) -> Void,
        rename: @escaping @Sendable (String, String) throws(SystemError) -> Void,
        link: @escaping @Sendable (String, String) throws(SystemError) -> Void,
        unlink: @escaping @Sendable (String) -> Void,
        identity: @escaping @Sendable (String) -> FileIdentity?
    ) {
        self.open = open
        self.write = write
        self.sync = sync
        self.close = close
        self.rename = rename
        self.link = link
        self.unlink = unlink
        self.identity = identity
    }

    public static let live = FileSystem(
        open: { (path, flags, mode) throws(SystemError) in try FileDescriptor.open(path, flags, mode: mode) },
        write: { (fd, bytes) throws(SystemError) in try fd.write(bytes) },
        sync: { (fd) throws(SystemError) in try fd.sync() },
        close: { (fd) throws(SystemError) in try syscall("close") { Glibc.close(fd.rawValue) } },
        rename: { (from, to) throws(SystemError) in try syscall("rename(\(from), \(to))") { Glibc.rename(from, to) } },
        link: { (from, to) throws(SystemError) in try syscall("link(\(from), \(to))") { Glibc.link(from, to) } },
        unlink: { path in _ = Glibc.unlink(path) },
        identity: { path in FileIdentity(path: path) }
    )
}

extension FileSystem {
    /// Writes all of `bytes` at the file's offset, however many `write` calls that takes.
    func writeAll(_ bytes: ArraySlice<UInt8>, to fd: FileDescriptor) throws(SystemError) {
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let result = bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in
                    try write(fd, UnsafeRawBufferPointer(rebasing: buffer[(start - bytes.startIndex)...]))
                }
            }
            start += try result.get()
        }
    }

    /// `fsync`s the directory at `path`, so the renames and links in it survive a power cut.
    func syncDirectory(_ path: String) throws(SystemError) {
        let fd = try open(path, O_RDONLY | O_DIRECTORY, 0)
        defer { try? close(fd) }
        try sync(fd)
    }

    /// Makes `target` a name of the file `source` names, atomically: a hard link at `staging`, renamed over
    /// `target` (which is never missing meanwhile). Leaves no `staging` behind on failure.
    func replace(_ target: String, withLinkTo source: String, via staging: String) throws(SystemError) {
        unlink(staging)
        do {
            try link(source, staging)
            try rename(staging, target)
        } catch {
            unlink(staging)
            throw error
        }
    }
}

/// Enough of `stat` to tell whether a file is still the one this process wrote: same inode, size and mtime.
public struct FileIdentity: Sendable, Hashable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var modified: Int64

    public init(device: UInt64, inode: UInt64, size: Int64, modified: Int64) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modified = modified
    }

    /// The identity of the file at `path` (not following a final symlink), or nil if there is none.
    public init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The identity of the file open at `fd`.
    public init?(fd: FileDescriptor) {
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else { return nil }
        self.init(info)
    }

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }
}
