import CSyncUpsShims
import Glibc

/// Linux file-system change notifications (inotify), read as events on the loop.
public final class Inotify {
    /// One change: which watch, what happened, and the file name inside the watched directory.
    public struct Event: Sendable, Equatable {
        public var watch: CInt
        public var mask: UInt32
        public var name: String
    }

    public let descriptor: FileDescriptor

    public init() throws(SystemError) {
        descriptor = FileDescriptor(
            rawValue: try syscall("inotify_init1") { inotify_init1(CInt(IN_CLOEXEC) | CInt(IN_NONBLOCK)) }
        )
    }

    deinit {
        descriptor.close()
    }

    /// Watches `path` for the events in `mask` (`IN_CLOSE_WRITE`, `IN_MOVED_TO`, …); returns the watch number.
    public func add(_ path: String, mask: UInt32) throws(SystemError) -> CInt {
        try syscall("inotify_add_watch(\(path))") { inotify_add_watch(descriptor.rawValue, path, mask) }
    }

    /// Reads every pending event.
    public func drain() -> [Event] {
        var events: [Event] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor.rawValue, $0.baseAddress, $0.count) }
            guard count > 0 else { return events }
            buffer.withUnsafeBytes { bytes in
                var offset = 0
                let headerSize = MemoryLayout<inotify_event>.size
                while offset + headerSize <= count {
                    let watch = bytes.loadUnaligned(fromByteOffset: offset, as: CInt.self)
                    let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let nameLength = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    let nameBytes = bytes[(offset + headerSize)..<(offset + headerSize + nameLength)]
                    let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                    events.append(Event(watch: watch, mask: mask, name: name))
                    offset += headerSize + nameLength
                }
            }
        }
    }
}
