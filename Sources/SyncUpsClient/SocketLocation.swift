/// Where clients find the daemon: `$SYNCUPSD_SOCKET`, then `$XDG_RUNTIME_DIR/syncupsd/socket`.
public enum SocketLocation {
    public static func resolve(explicit: String?, environment: [String: String]) -> String? {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["SYNCUPSD_SOCKET"], !fromEnvironment.isEmpty { return fromEnvironment }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/syncupsd/socket" }
        return nil
    }
}
