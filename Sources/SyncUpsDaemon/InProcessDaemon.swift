import Glibc
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// The daemon's request handling without a listening socket: request lines in, reply lines out, through
/// the same decoder, command handler, state and store as the real daemon. For the fuzzer, which must not
/// need a socket per input.
public final class InProcessDaemon {
    private let loop: EventLoop
    private let server: Server
    private let services: Services
    private var connection: Connection?
    private var peer: FileDescriptor?

    /// A daemon on `dataDirectory` with no audio, no cue and no speech engine.
    public init(dataDirectory: String, logger: Logger = .discarding) throws {
        loop = try EventLoop()
        server = Server(loop: loop, limits: Limits(), version: SyncUpsVersion.current, logger: logger)
        var settings = SessionController.Settings()
        settings.audioDeviceName = "null"
        settings.cueDeviceName = nil
        services = try Services(
            loop: loop,
            server: server,
            directory: DataDirectory(path: dataDirectory),
            sessionSettings: settings,
            socketDescription: "(in process)",
            startedAt: .now(),
            logger: logger
        )
    }

    deinit {
        peer?.close()
        _ = services.store.close()
    }

    /// Answers one request line (without its newline) and lets the loop catch up (timers, the store's
    /// results). Events for a subscribed client are discarded.
    public func handle(_ line: UnsafeRawBufferPointer) -> [UInt8] {
        let connection = currentConnection()
        let reply = connection.map { server.reply(to: line, from: $0) } ?? []
        loop.runOnce(timeoutMilliseconds: 0)
        drainPeer()
        return reply
    }

    private func currentConnection() -> Connection? {
        if let connection, !connection.isClosed { return connection }
        peer?.close()
        var fds: [CInt] = [-1, -1]
        guard
            socketpair(
                AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue) | CInt(SOCK_NONBLOCK.rawValue), 0,
                &fds) == 0
        else { return nil }
        peer = FileDescriptor(rawValue: fds[1])
        connection = server.adopt(FileDescriptor(rawValue: fds[0]))
        return connection
    }

    private func drainPeer() {
        guard let peer else { return }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while buffer.withUnsafeMutableBytes({ Glibc.read(peer.rawValue, $0.baseAddress, $0.count) }) > 0 {}
    }
}
