import Glibc
import SyncUpsPOSIX

/// A datagram socket standing in for systemd's `$NOTIFY_SOCKET`: what the daemon sends with `sd_notify`.
public final class NotifyListener {
    public let path: String
    private let fd: FileDescriptor
    private let directory = TemporaryDirectory("notify")

    public init() throws {
        path = directory.appending("notify.sock")
        fd = FileDescriptor(rawValue: socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd.rawValue, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { throw TestFailure("bind \(path): \(Errno.current)") }
    }

    deinit {
        fd.close()
    }

    /// The next notification, or nil after `timeout`.
    public func next(timeout: Duration = .seconds(10)) -> String? {
        var poller = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, CInt(timeout.nanoseconds / 1_000_000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd.rawValue, $0.baseAddress, $0.count, 0) }
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }

    /// Skips notifications until one satisfies `condition`.
    public func wait(timeout: Duration = .seconds(10), for condition: (String) -> Bool) -> String? {
        let deadline = MonotonicInstant.now() + timeout
        while MonotonicInstant.now() < deadline {
            guard let message = next(timeout: deadline - .now()) else { return nil }
            if condition(message) { return message }
        }
        return nil
    }
}
