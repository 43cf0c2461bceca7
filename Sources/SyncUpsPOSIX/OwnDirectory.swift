import Glibc

/// A directory the daemon keeps its own things in and must not be tricked out of: its socket's replacement
/// runtime directory in `/tmp` (`RuntimeDirectory`), the voice profiles set aside (`voices/orphaned`).
public enum OwnDirectory {
    /// Why `path` is not a real directory of `owner` (with the permission bits `mode`, when given), as `lstat`
    /// sees it: a symbolic link is never followed, whatever it points to. Nil when it is one, or is missing
    /// (the caller makes it).
    public enum Problem: Sendable, Equatable {
        /// `lstat` itself failed.
        case cannotExamine(Errno)
        /// It is there, and not fit: the reason, for a message ("it belongs to uid 0, not to uid 1000").
        case unfit(String)
    }

    public static func problem(at path: String, owner: uid_t, mode: mode_t? = nil) -> Problem? {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let error = Errno.current
            return error == .noSuchFile ? nil : .cannotExamine(error)
        }
        if info.st_mode & S_IFMT == S_IFLNK { return .unfit("it is not a directory (a symbolic link, never followed)") }
        if info.st_mode & S_IFMT != S_IFDIR { return .unfit("it is not a directory") }
        if info.st_uid != owner { return .unfit("it belongs to uid \(info.st_uid), not to uid \(owner)") }
        if let mode, info.st_mode & 0o7777 != mode {
            return .unfit("its mode is \(String(info.st_mode & 0o7777, radix: 8)), not \(String(mode, radix: 8))")
        }
        return nil
    }
}
