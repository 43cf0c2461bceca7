import SyncUpsPOSIX

/// Where clients find the daemon: `--socket`, then `$SYNCUPSD_SOCKET`, then the socket in syncupsd's
/// `RuntimeDirectory` (`$XDG_RUNTIME_DIR/syncupsd/socket`, else `/tmp/syncupsd-<uid>/socket`), by the
/// daemon's own rule.
public enum SocketLocation {
    /// The path to connect to; refuses a replacement runtime directory that is not the user's own.
    public static func resolve(explicit: String?, environment: [String: String]) throws(RuntimeDirectory.Refusal)
        -> String
    {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["SYNCUPSD_SOCKET"], !fromEnvironment.isEmpty { return fromEnvironment }
        let directory = RuntimeDirectory.locate(environment: environment)
        try directory.check()
        return directory.socketPath
    }

    /// Where else a daemon of this user may listen when nothing answers at `resolve`'s path: one started
    /// where `XDG_RUNTIME_DIR` was unset (a `su` shell, a container) uses `/tmp/syncupsd-<uid>/socket` while
    /// this client's `XDG_RUNTIME_DIR` points elsewhere. Nil when a socket was named (`--socket`,
    /// `$SYNCUPSD_SOCKET`), when there is no such other place, or when it is not the user's own.
    public static func fallback(explicit: String?, environment: [String: String]) -> String? {
        guard explicit?.isEmpty ?? true, environment["SYNCUPSD_SOCKET"]?.isEmpty ?? true else { return nil }
        let located = RuntimeDirectory.locate(environment: environment)
        guard !located.isReplacement else { return nil }
        var without = environment
        without["XDG_RUNTIME_DIR"] = nil
        let replacement = RuntimeDirectory.locate(environment: without)
        guard (try? replacement.check()) != nil else { return nil }
        return replacement.socketPath
    }
}
