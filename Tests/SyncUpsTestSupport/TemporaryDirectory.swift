import Glibc
import SyncUpsPOSIX

/// A fresh directory under `$TMPDIR` (or /tmp), removed with everything in it when the value goes away.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(_ label: String = "test") {
        let base = Subprocess.currentEnvironment()["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/syncups-\(label)-XXXXXX".utf8CString)
        let result = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(result != nil, "mkdtemp failed: \(Errno.current)")
        path = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
    }

    deinit {
        Self.removeTree(path)
    }

    /// `path/name`.
    public func appending(_ name: String) -> String { path + "/" + name }

    /// Deletes `path` and everything below it, not following symlinks.
    public static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            for name in (try? DirectoryListing.names(in: path)) ?? [] { removeTree(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
