import Glibc

/// The per-process limit on open descriptors (`RLIMIT_NOFILE`).
public enum FileDescriptorLimit {
    /// Raises the soft limit to the hard one, so many clients do not run the daemon out of descriptors
    /// (the soft default is often 1024). Returns the new soft limit.
    @discardableResult
    public static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(limit.rlim_cur)
    }
}
