import Glibc

/// A file mapped read-only into memory: its bytes without copying them out of the page cache (start-up
/// reads a `sync-ups.json` of many megabytes this way).
public final class MappedFile {
    public let bytes: UnsafeRawBufferPointer

    /// Maps the first `size` bytes of the file open at `fd` (the caller keeps and closes it; the mapping
    /// outlives it); a size of 0 maps to an empty buffer.
    public init(fd: FileDescriptor, size: Int) throws(SystemError) {
        guard size > 0 else {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        guard let address = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd.rawValue, 0), address != MAP_FAILED else {
            throw SystemError("mmap", .current)
        }
        bytes = UnsafeRawBufferPointer(start: address, count: size)
    }

    deinit {
        if let address = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: address), bytes.count) }
    }
}
