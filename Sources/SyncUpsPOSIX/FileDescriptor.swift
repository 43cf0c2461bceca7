import CSyncUpsShims
import Glibc

/// A file descriptor number with typed, EINTR-safe operations.
///
/// Like swift-system's `FileDescriptor` it does not own the descriptor: the type that opened it closes it,
/// exactly once, in one place.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public var rawValue: CInt

    public init(rawValue: CInt) {
        self.rawValue = rawValue
    }

    public static let standardInput = FileDescriptor(rawValue: 0)
    public static let standardOutput = FileDescriptor(rawValue: 1)
    public static let standardError = FileDescriptor(rawValue: 2)

    /// Opens `path`; always with `O_CLOEXEC` so no descriptor leaks into a spawned recognizer.
    public static func open(
        _ path: String,
        _ flags: CInt,
        mode: mode_t = 0o600,
        relativeTo directory: FileDescriptor? = nil
    ) throws(SystemError) -> FileDescriptor {
        let fd = try syscall("open(\(path))") {
            openat(directory?.rawValue ?? AT_FDCWD, path, flags | O_CLOEXEC, mode)
        }
        return FileDescriptor(rawValue: fd)
    }

    /// Opens `path` for reading only if it is a regular file (through symlinks): a FIFO or a device planted
    /// there would otherwise block the `open` or the reads forever (`/dev/zero` never ends). Fails with
    /// `EINVAL` for anything else. Returns the file's `stat` too, from the same descriptor.
    public static func openRegularFile(_ path: String) throws(SystemError) -> (fd: FileDescriptor, info: stat) {
        // Non-blocking, so opening a FIFO with no writer returns at once instead of waiting for one.
        let fd = try open(path, O_RDONLY | O_NONBLOCK)
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            fd.close()
            throw SystemError("open(\(path)): not a regular file", Errno(rawValue: EINVAL))
        }
        return (fd, info)
    }

    /// A new pipe, both ends close-on-exec.
    public static func pipe() throws(SystemError) -> (read: FileDescriptor, write: FileDescriptor) {
        var fds: [CInt] = [-1, -1]
        try syscall("pipe2") { syncups_pipe_cloexec(&fds) }
        return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
    }

    /// Closes the descriptor. `EINTR` from close is not retried: on Linux the descriptor is gone either way.
    public func close() {
        _ = Glibc.close(rawValue)
    }

    /// Reads up to `buffer.count` bytes; 0 means end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try syscall("read") { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads up to `buffer.count` bytes from a non-blocking descriptor; 0 means end of file, nil that
    /// nothing is available now (`EAGAIN`).
    public func readAvailable(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int? {
        let count = retryingInterrupts { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
        if count >= 0 { return count }
        if Errno.current == .wouldBlock { return nil }
        throw SystemError("read", .current)
    }

    /// Shuts a socket's reading side (`shutdown(SHUT_RD)`): what is queued can still be read, and on a Unix
    /// socket the peer's further writes fail (`EPIPE`). Errors (not a socket, not connected) are ignored.
    public func shutDownReading() {
        _ = Glibc.shutdown(rawValue, CInt(SHUT_RD))
    }

    /// How many bytes wait to be read now (`FIONREAD`), or nil if that cannot be known.
    public var queuedInputBytes: Int? {
        var count: CInt = 0
        return ioctl(rawValue, UInt(FIONREAD), &count) == 0 ? Int(count) : nil
    }

    /// Writes some of `buffer`, returning how much was written (possibly less than all).
    public func write(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        try syscall("write") { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Writes all of `bytes`, looping over short writes.
    public func writeAll(_ bytes: some Collection<UInt8>) throws(SystemError) {
        let result: Result<Void, SystemError> =
            bytes.withContiguousStorageIfAvailable { buffer in
                writeAll(UnsafeRawBufferPointer(buffer))
            } ?? Array(bytes).withUnsafeBytes { writeAll($0) }
        try result.get()
    }

    private func writeAll(_ buffer: UnsafeRawBufferPointer) -> Result<Void, SystemError> {
        var offset = 0
        while offset < buffer.count {
            do {
                offset += try write(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
            } catch {
                return .failure(error)
            }
        }
        return .success(())
    }

    /// Writes `bytes` at `offset` without moving the file position (used to patch WAV headers in place).
    public func pwriteAll(_ bytes: [UInt8], at offset: Int64) throws(SystemError) {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in
                    try syscall("pwrite") {
                        Glibc.pwrite(
                            rawValue, buffer.baseAddress! + written, buffer.count - written,
                            off_t(offset) + off_t(written))
                    }
                }
            }
            written += try result.get()
        }
    }

    /// Reads everything from the current position to the end of the file (or until the writer closes a pipe),
    /// or its first `limit` bytes.
    public func readToEnd(sizeHint: Int = 64 * 1024, limit: Int64 = .max) throws(SystemError) -> [UInt8] {
        var result: [UInt8] = []
        var capacity = max(sizeHint, 4096)
        while Int64(result.count) < limit {
            capacity = Int(min(Int64(capacity), limit - Int64(result.count)))
            var count = 0
            var error = Errno(rawValue: 0)
            let chunk = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
                count = retryingInterrupts { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
                if count < 0 { error = .current }
                initialized = max(count, 0)
            }
            if count < 0 { throw SystemError("read", error) }
            if count == 0 { return result }
            if result.isEmpty { result = chunk } else { result.append(contentsOf: chunk) }
            capacity = min(capacity * 2, 16 * 1024 * 1024)
        }
        return result
    }

    /// Flushes the file's data and metadata to the device.
    public func sync() throws(SystemError) {
        try syscall("fsync") { fsync(rawValue) }
    }

    /// Flushes the file's data (and the metadata needed to read it) to the device.
    public func dataSync() throws(SystemError) {
        try syscall("fdatasync") { fdatasync(rawValue) }
    }

    /// The file's size in bytes.
    public func size() throws(SystemError) -> Int64 {
        var info = stat()
        try syscall("fstat") { fstat(rawValue, &info) }
        return Int64(info.st_size)
    }

    /// Switches blocking mode on or off.
    public func setNonBlocking(_ isNonBlocking: Bool = true) throws(SystemError) {
        let flags = try syscall("fcntl(F_GETFL)") { fcntl(rawValue, F_GETFL) }
        let newFlags = isNonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if newFlags != flags { try syscall("fcntl(F_SETFL)") { fcntl(rawValue, F_SETFL, newFlags) } }
    }
}
