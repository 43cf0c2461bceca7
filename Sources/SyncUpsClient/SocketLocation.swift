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
}
