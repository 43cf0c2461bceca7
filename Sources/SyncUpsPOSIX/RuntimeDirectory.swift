import Glibc

/// syncupsd's per-user runtime directory, which holds its socket: `$XDG_RUNTIME_DIR/syncupsd`, or where
/// `XDG_RUNTIME_DIR` is unset (a container, `su`, some SSH sessions) the replacement the XDG Base Directory
/// spec asks for, `/tmp/syncupsd-<uid>`: a directory with the same properties, owned by the user and 0700.
///
/// The daemon and `syncupsctl` both find the socket here, so they agree without configuration. A replacement
/// directory is never trusted by its name alone: `/tmp` is everyone's, so one that another user made first,
/// or with a looser mode, is refused, by the daemon (which would listen in it) and by clients (which would
/// talk to whoever listens there).
public struct RuntimeDirectory: Sendable, Equatable {
    /// The directory.
    public var path: String
    /// True for `/tmp/syncupsd-<uid>`, used because `XDG_RUNTIME_DIR` is unset.
    public var isReplacement: Bool
    /// The user it must belong to.
    public var owner: uid_t

    /// The socket the daemon listens on by default and clients connect to.
    public var socketPath: String { FilePath.join(path, "socket") }

    /// Why the directory cannot be used.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The directory for the user `uid` under `environment` (a relative `XDG_RUNTIME_DIR` counts as unset, as
    /// the spec says).
    public static func locate(environment: [String: String], uid: uid_t = getuid()) -> RuntimeDirectory {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return RuntimeDirectory(path: FilePath.join(runtime, "syncupsd"), isReplacement: false, owner: uid)
        }
        return RuntimeDirectory(path: "/tmp/syncupsd-\(uid)", isReplacement: true, owner: uid)
    }

    /// Creates the directory (0700) if it is missing and makes sure it is fit to listen in: for the daemon.
    public func prepare() throws(Refusal) {
        if mkdir(path, 0o700) == 0 {
            chmod(path, 0o700)  // whatever the umask took away
        } else {
            let error = Errno.current
            guard error == .fileExists else { throw Refusal(description: "cannot create \(path): \(error)") }
            // Ours, inside the user's own runtime directory: make sure nobody else can even look in it.
            if !isReplacement { chmod(path, 0o700) }
        }
        try check()
    }

    /// Refuses a replacement directory that is not a real directory of this user with mode 0700; a missing one
    /// passes (nothing listens there). Always passes under `XDG_RUNTIME_DIR`, which the system made private.
    public func check() throws(Refusal) {
        guard isReplacement else { return }
        switch OwnDirectory.problem(at: path, owner: owner, mode: 0o700) {
        case nil:
            return
        case .cannotExamine(let error):
            throw Refusal(description: "cannot examine \(path): \(error)")
        case .unfit(let reason):
            throw Refusal(
                description: "refusing \(path) (the socket's directory while XDG_RUNTIME_DIR is unset): \(reason)")
        }
    }
}
