import Glibc
import SyncUpsPOSIX

/// A tmpfs of a few hundred KiB on a temporary directory, to fill. Needs root.
public struct SmallDisk {
    public let directory = TemporaryDirectory("full")

    public init(size: String) throws {
        guard mount("tmpfs", directory.path, "tmpfs", 0, "size=\(size),mode=0700") == 0 else {
            throw TestFailure("cannot mount a tmpfs: \(Errno.current)")
        }
    }

    public func unmount() { umount2(directory.path, Int32(MNT_DETACH)) }

    public var path: String { directory.path }
    public func appending(_ name: String) -> String { directory.appending(name) }
}
