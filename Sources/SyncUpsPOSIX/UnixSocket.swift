import CSyncUpsShims
import Glibc

/// Who is on the other end of a Unix socket, from the kernel (`SO_PEERCRED`), not from anything the peer says.
public struct PeerCredentials: Sendable, Equatable {
    public var pid: pid_t
    public var uid: uid_t
    public var gid: gid_t

    public init(pid: pid_t, uid: uid_t, gid: gid_t) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// Unix-domain stream sockets: the daemon's listener and accepted connections, and the clients' connections.
public enum UnixSocket {
    /// The longest path `sockaddr_un` holds, without its terminating NUL.
    public static let maxPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    private static func withAddress<Result>(
        _ path: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
    ) throws(SystemError) -> Result {
        let bytes = Array(path.utf8)
        guard bytes.count <= maxPathLength else {
            throw SystemError(
                "socket path \(path) is \(bytes.count) bytes, longer than \(maxPathLength)",
                Errno(rawValue: ENAMETOOLONG))
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { pathBytes in
            pathBytes.copyBytes(from: bytes)
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    private static func makeSocket(nonBlocking: Bool) throws(SystemError) -> FileDescriptor {
        let type =
            CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue) | (nonBlocking ? CInt(SOCK_NONBLOCK.rawValue) : 0)
        return FileDescriptor(rawValue: try syscall("socket(AF_UNIX)") { socket(AF_UNIX, type, 0) })
    }

    /// Binds and listens at `path` with mode 0600: the umask is 177 *during* `bind`, so the socket never
    /// exists with looser permissions, not even for an instant. The socket is non-blocking.
    public static func listen(path: String, backlog: CInt = 128) throws(SystemError) -> FileDescriptor {
        let fd = try makeSocket(nonBlocking: true)
        do throws(SystemError) {
            let oldMask = umask(0o177)
            defer { umask(oldMask) }
            let result = try withAddress(path) { address, length in Glibc.bind(fd.rawValue, address, length) }
            if result != 0 { throw SystemError("bind(\(path))", .current) }
            try syscall("listen(\(path))") { Glibc.listen(fd.rawValue, backlog) }
        } catch {
            fd.close()
            throw error
        }
        return fd
    }

    /// Connects to the socket at `path`; the returned descriptor is blocking.
    public static func connect(path: String) throws(SystemError) -> FileDescriptor {
        let fd = try makeSocket(nonBlocking: false)
        do throws(SystemError) {
            let result = try withAddress(path) { address, length in
                retryingInterrupts { Glibc.connect(fd.rawValue, address, length) }
            }
            if result != 0 { throw SystemError("connect(\(path))", .current) }
        } catch {
            fd.close()
            throw error
        }
        return fd
    }

    /// Accepts one pending connection as a non-blocking descriptor, or nil when none is pending.
    public static func accept(_ listener: FileDescriptor) throws(SystemError) -> FileDescriptor? {
        let fd = retryingInterrupts { syncups_accept_nonblocking(listener.rawValue) }
        if fd >= 0 { return FileDescriptor(rawValue: fd) }
        switch Errno.current {
        case .wouldBlock, Errno(rawValue: ECONNABORTED): return nil
        case let error: throw SystemError("accept4", error)
        }
    }

    /// The peer's pid, uid and gid.
    public static func peerCredentials(_ fd: FileDescriptor) throws(SystemError) -> PeerCredentials {
        var credentials = PeerCredentials(pid: 0, uid: 0, gid: 0)
        try syscall("getsockopt(SO_PEERCRED)") {
            syncups_peer_credentials(fd.rawValue, &credentials.pid, &credentials.uid, &credentials.gid)
        }
        return credentials
    }

    /// Sends what the socket takes without blocking and without `SIGPIPE`; returns the count sent, 0 if it
    /// would block.
    public static func send(_ fd: FileDescriptor, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        let count = retryingInterrupts {
            Glibc.send(fd.rawValue, buffer.baseAddress, buffer.count, CInt(MSG_NOSIGNAL) | CInt(MSG_DONTWAIT))
        }
        if count >= 0 { return count }
        switch Errno.current {
        case .wouldBlock: return 0
        case let error: throw SystemError("send", error)
        }
    }

    /// Sends all of `bytes` on a blocking socket, without `SIGPIPE` if the peer has gone.
    public static func sendAll(_ fd: FileDescriptor, _ bytes: [UInt8]) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in
                    try syscall("send") {
                        Glibc.send(fd.rawValue, buffer.baseAddress! + offset, buffer.count - offset, CInt(MSG_NOSIGNAL))
                    }
                }
            }
            offset += try result.get()
        }
    }

    /// True when `fd` is a listening Unix stream socket (a check on descriptors passed by systemd).
    public static func isListeningUnixStream(_ fd: FileDescriptor) -> Bool {
        var value: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        guard getsockopt(fd.rawValue, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) == 0, value != 0 else { return false }
        guard getsockopt(fd.rawValue, SOL_SOCKET, SO_DOMAIN, &value, &length) == 0, value == AF_UNIX else {
            return false
        }
        guard getsockopt(fd.rawValue, SOL_SOCKET, SO_TYPE, &value, &length) == 0 else { return false }
        return value == CInt(SOCK_STREAM.rawValue)
    }
}
