import FoundationEssentials
import Glibc
import SyncUpsAudio
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// The daemon without a listening socket: its clients are socket pairs adopted by the same server, so a
/// request line takes the path of every client's (framing, replay cache, decoder, command handler, state and
/// store, output limits). For the fuzzer, which must not need a listener per input (`handle`), and for tests
/// that drive the owner turn by turn (`connect`, `turn`): the loop then runs only when the test says, so
/// what one turn did is exactly what a test sees.
public final class InProcessDaemon {
    private let loop: EventLoop
    private let server: Server
    private let services: Services
    private let logger: Logger
    /// The schedules' owner, for tests that press a reminder's buttons without a desktop.
    var scheduler: Scheduler { services.scheduler }
    /// The voice profiles' owner, for tests that learn a profile without a meeting's audio.
    var voices: VoiceService { services.voices }
    /// `Server.laterReplyCheckpoint`, for tests that hold a details read midway.
    var laterReplyCheckpoint: (@Sendable () -> Void)? {
        get { server.laterReplyCheckpoint }
        set { server.laterReplyCheckpoint = newValue }
    }
    /// The session's owner, for tests that hold its clean-up worker.
    var session: SessionController { services.session }
    /// The daemon's parts, for the test that checks none outlives the daemon.
    var parts: [AnyObject] {
        [loop, server, services, services.store, services.state, services.session, services.voices, services.scheduler]
    }
    private var connection: Connection?
    private var peer: FileDescriptor?

    /// A daemon on `dataDirectory` with no audio, no cue (unless `cueDevice`) and no speech engine. `readPauseThreshold` is the
    /// unsent output at which a client's reading pauses (nil: the server's own default), and `limits` the
    /// server's (smaller in tests, to reach them with little data); `uuid` and `wallClock` make new ids and
    /// dates (fixed in tests); `clock` is the loop's (`.manual`: time moves only by `advanceTime(by:)`, so a meeting's seconds pass in microseconds,
    /// and the wall clock moves with it: `wallClock()` plus the virtual time passed, which the schedules'
    /// reminders are timed by);
    /// `fileSystem` the data files' (a `FaultyFileSystem` in tests, to fill the disk at a chosen moment);
    /// `captureDevice` opens the microphone of a meeting with audio (ALSA's `null` device unless given);
    /// `cueDevice` is the ALSA playback device of the speaker-change cue (none unless given).
    public init(
        dataDirectory: String, logger: Logger = .discarding, readPauseThreshold: Int? = nil,
        limits: Limits = Limits(), uuid: UUIDGenerator = .random, wallClock: WallClock = .system,
        clock: EventLoop.Clock = .monotonic, fileSystem: FileSystem = .live, captureDevice: CaptureDevice = .alsa,
        cueDevice: String? = nil
    ) throws {
        let loop = try EventLoop(clock: clock)
        self.loop = loop
        self.logger = logger
        var wallClock = wallClock
        if case .manual(let start) = clock {
            let given = wallClock
            let time = LoopTime(loop: loop)
            wallClock = WallClock { given().addingTimeInterval((time.loop.now() - start).seconds) }
        }
        server = Server(
            loop: loop, limits: limits, version: SyncUpsVersion.current, logger: logger,
            readPauseThreshold: readPauseThreshold ?? Server.defaultReadPauseThreshold)
        var settings = SessionController.Settings()
        settings.audioDeviceName = "null"
        settings.captureDevice = captureDevice
        settings.cueDeviceName = cueDevice
        services = try Services(
            loop: loop,
            server: server,
            directory: DataDirectory(path: dataDirectory),
            sessionSettings: settings,
            socketDescription: "(in process)",
            startedAt: loop.now(),
            logger: logger,
            uuid: uuid,
            wallClock: wallClock,
            fileSystem: fileSystem
        )
    }

    /// Ends as the daemon's `run` does, without waiting for a meeting's end, then lets go of everything: the
    /// daemon's parts hold one another (the loop's handlers, the server's command handler, the store's event
    /// handler), so what the loop and the server hold is dropped, and the whole graph goes with its threads,
    /// descriptors and inotify instance. A test process makes hundreds of daemons: kept, they held 20
    /// descriptors and 2 threads each, and 117 inotify instances of the user's 128 in one run of the suite.
    deinit {
        server.shutDown(reason: "the in-process daemon ended")
        peer?.close()
        services.scheduler.close()
        _ = services.store.close()
        services.session.close()
        finishCleanup()
        services.meetingsSweep.finish()
        loop.close()
        server.handler = { _, _ in .failure(ProtocolError(.internalError, "the daemon has stopped")) }
        server.replayGeneration = { _ in nil }
    }

    /// Waits for what the clean-up worker is doing (a saved meeting's details being written, a device
    /// closing), as the daemon's stop does (`SessionController.shutDown`), bounded the same way: a test's
    /// directory goes once its daemon does, and a write still under way would make it again.
    private func finishCleanup() {
        let cleanup = services.session.cleanup
        guard !cleanup.isIdle else { return }
        logger.debug("waiting for the clean-up worker (a meeting's details, a device's close) before ending")
        let timeout = services.session.settings.shutdownCleanupTimeout
        if !MonotonicInstant.poll(until: .now() + timeout, { cleanup.isIdle }) {
            logger.warning("ended without waiting any longer for the clean-up worker, still busy after \(timeout)")
        }
    }

    /// Answers one request line (without its newline) and lets the loop catch up (timers, the store's
    /// results). The line takes the path of every client's: written to a socket, read, framed, replayed or
    /// decoded and run, its reply under the size and output limits; events for a subscribed client are
    /// discarded. Empty for a line the server answers with nothing (blank, or a lone `\r`).
    public func handle(_ line: UnsafeRawBufferPointer) -> [UInt8] {
        guard let connection = currentConnection(), let peer else { return [] }
        var request = Array(line)
        request.append(0x0A)
        var written = 0
        var received: [UInt8] = []
        while true {
            if written < request.count {
                written += max(
                    0, request[written...].withUnsafeBytes { Glibc.write(peer.rawValue, $0.baseAddress, $0.count) })
            }
            // Wait for a reply made off the loop (`meetings.get`), not for an idle client.
            let isWaiting = connection.state.isAwaitingReply
            loop.runOnce(timeoutMilliseconds: isWaiting ? 10 : 0)
            drainPeer(into: &received)
            if let reply = Self.firstReply(in: &received) {
                loop.runOnce(timeoutMilliseconds: 0)
                drainPeer(into: &received)
                return reply
            }
            let isAnswered =
                written == request.count && !connection.hasPendingInput && connection.output.isEmpty
                && !connection.state.isAwaitingReply
            if connection.isClosed || isAnswered { return [] }
        }
    }

    /// Takes the first reply line from `received`, dropping the event lines before it.
    private static func firstReply(in received: inout [UInt8]) -> [UInt8]? {
        while let newline = received.firstIndex(of: 0x0A) {
            let line = Array(received[...newline])
            received.removeFirst(newline + 1)
            if !line.starts(with: Array(#"{"event":"#.utf8)) { return line }
        }
        return nil
    }

    /// A new client, as if accepted (without the greeting); returns the client's end of the socket pair,
    /// non-blocking. `sendBufferBytes` shrinks the daemon's send buffer for it, so a test fills it with little.
    public func connect(sendBufferBytes: CInt? = nil) throws -> FileDescriptor {
        let (daemonEnd, clientEnd) = try Self.socketPair(sendBufferBytes: sendBufferBytes)
        guard server.adopt(daemonEnd) != nil else {
            daemonEnd.close()
            clientEnd.close()
            throw SystemError("epoll_ctl(ADD)", .current)
        }
        return clientEnd
    }

    /// A connected, non-blocking socket pair: the daemon's end, then the client's.
    private static func socketPair(sendBufferBytes: CInt? = nil) throws(SystemError) -> (FileDescriptor, FileDescriptor)
    {
        var fds: [CInt] = [-1, -1]
        let flags = CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue) | CInt(SOCK_NONBLOCK.rawValue)
        try syscall("socketpair") { socketpair(AF_UNIX, flags, 0, &fds) }
        if var size = sendBufferBytes {
            _ = setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        }
        return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
    }

    /// One turn of the loop: the inputs ready now (waiting up to `timeoutMilliseconds` for one, for a helper
    /// thread's report), then the work they deferred. Returns how many inputs and deferred tasks it handled.
    @discardableResult
    public func turn(waitingUpTo timeoutMilliseconds: CInt = 0) -> Int {
        loop.runOnce(timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Moves a manual clock on by `duration`, firing every timer due by then at its own deadline (the
    /// session's ticks, the settle wait, the stall limit), then turns the loop once for what they caused.
    public func advanceTime(by duration: Duration) {
        loop.advanceTime(by: duration)
        loop.runOnce(timeoutMilliseconds: 0)
    }

    /// Moves a manual clock on by `duration` as if the loop had been busy meanwhile: nothing fires until the
    /// loop turns, and then what fell due fires between the turn's handlers (`EventLoop`).
    public func skipTime(by duration: Duration) {
        loop.skipTime(by: duration)
    }

    /// Moves a manual clock on by `duration` while the daemon "sleeps" (stopped, starved), then lets it wake:
    /// the timers that fell due meanwhile fire late, all at the later time, as after a SIGSTOP.
    public func wakeLate(after duration: Duration) {
        loop.skipTime(by: duration)
        advanceTime(by: .zero)
    }

    /// What the server holds in buffers: each connection's input and output capacity, in bytes, and its
    /// one spare output buffer's.
    public var bufferCapacities: (connections: [(input: Int, output: Int)], spareOutput: Int) {
        let connections = server.connections.values.sorted { $0.number < $1.number }
        return (connections.map { ($0.input.capacity, $0.output.capacity) }, server.spareOutputCapacity)
    }

    /// How many connections are of clients still there (not gone, not closed).
    var presentConnections: Int { server.connections.values.count { !$0.state.isPeerGone } }
    /// How many connections are of clients gone (`ConnectionState.Input.gone`), their lines still carried out.
    var goneConnections: Int { server.connections.values.count { $0.state.isPeerGone } }

    /// How many `send` calls the server has made to its clients so far.
    public var sendCalls: Int { server.sendCalls }
    /// How many times a connection's reading was paused for its unsent output.
    public var pauses: Int { server.readPauses }
    /// How many times the server trimmed the heap after freeing buffers.
    public var heapTrims: Int { server.heapTrims }

    /// Where each timer of the loop waiting to fire was scheduled (`EventLoop.scheduledTimerOrigins`; empty in
    /// a release build).
    public var timerOrigins: [String] { loop.scheduledTimerOrigins }

    /// The sync-ups' ids, in order, as the owner holds them now.
    public var syncUpIDs: [String] { services.state.syncUps.map(\.id.description) }

    /// The session's journal writer: a test holds its thread (`whenDone`) to widen a race.
    var journals: JournalWriter { services.session.journals }

    private func currentConnection() -> Connection? {
        if let connection, !connection.isClosed { return connection }
        peer?.close()
        guard let (daemonEnd, clientEnd) = try? Self.socketPair() else { return nil }
        peer = clientEnd
        connection = server.adopt(daemonEnd)
        return connection
    }

    private func drainPeer(into received: inout [UInt8]) {
        guard let peer else { return }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(peer.rawValue, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            received.append(contentsOf: buffer[0..<count])
        }
    }
}

/// The loop, for a wall clock that reads its manual time: `WallClock` is `Sendable`, the loop is not, but the
/// daemon reads its wall clock on the loop's thread only (an `InProcessDaemon` runs on its test's).
private final class LoopTime: @unchecked Sendable {
    let loop: EventLoop
    init(loop: EventLoop) { self.loop = loop }
}
