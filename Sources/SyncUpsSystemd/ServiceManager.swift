import CSystemd
import Glibc
import SyncUpsPOSIX

/// What the daemon tells systemd through libsystemd's sd-daemon: readiness, a status line, stopping, and
/// watchdog pings. Outside systemd (no `$NOTIFY_SOCKET`) every call is a cheap no-op.
public struct ServiceManager: Sendable {
    /// Sends one notification (`READY=1`, `STATUS=…`); returns false when nobody listens.
    public var notify: @Sendable (_ state: String) -> Bool

    public init(notify: @escaping @Sendable (String) -> Bool) {
        self.notify = notify
    }

    /// libsystemd's `sd_notify`.
    public static let live = ServiceManager { state in sd_notify(0, state) > 0 }

    /// Data loaded, socket accepting: `READY=1` with the first status line.
    @discardableResult
    public func ready(status: String) -> Bool { notify("READY=1\nSTATUS=\(status)") }

    /// The one-line status `systemctl status` shows (`STATUS=`; newlines would end it, so they become spaces).
    @discardableResult
    public func status(_ line: String) -> Bool {
        notify("STATUS=" + String(line.map { $0 == "\n" ? " " : $0 }))
    }

    @discardableResult
    public func stopping() -> Bool { notify("STOPPING=1") }

    @discardableResult
    public func watchdog() -> Bool { notify("WATCHDOG=1") }

    /// The watchdog interval systemd asks for (`WatchdogSec=`), or nil when it is off: libsystemd's
    /// `sd_watchdog_enabled`. Ping at half of it.
    public static func watchdogInterval() -> Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(microseconds))
    }
}

/// Sockets passed by systemd's socket activation (`sd_listen_fds`).
public enum SocketActivation {
    /// The listening Unix stream socket systemd passed, if any (fd 3, `LISTEN_FDS=1`); the variables are
    /// removed from the environment so children do not inherit them. Throws if systemd passed something
    /// that is not a listening Unix stream socket.
    public static func passedSocket() throws(SystemError) -> FileDescriptor? {
        let count = sd_listen_fds(1)
        if count < 0 { throw SystemError("sd_listen_fds", Errno(rawValue: -count)) }
        guard count > 0 else { return nil }
        for index in 0..<count {
            let fd = SD_LISTEN_FDS_START + index
            if sd_is_socket_unix(fd, CInt(SOCK_STREAM.rawValue), 1, nil, 0) > 0 {
                let descriptor = FileDescriptor(rawValue: fd)
                try descriptor.setNonBlocking()
                return descriptor
            }
        }
        throw SystemError(
            "systemd passed \(count) descriptor(s), none a listening Unix stream socket", Errno(rawValue: EINVAL))
    }
}
