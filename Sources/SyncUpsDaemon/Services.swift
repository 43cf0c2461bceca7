import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// Everything that answers requests, built on one event loop: the store, the state, the session and the
/// command handler, wired to a `Server`. The daemon builds one around its socket; `InProcessDaemon` builds
/// one without a socket, for the fuzzer. The server keeps the command handler (it holds its `handle`).
final class Services {
    let store: SyncUpStore
    let state: DaemonState
    let session: SessionController

    /// Opens the data directory (loading, recovering interrupted meetings) and wires it all together.
    /// `onPublish` runs after every event is published.
    init(
        loop: EventLoop,
        server: Server,
        directory: DataDirectory,
        sessionSettings: SessionController.Settings,
        socketDescription: String,
        startedAt: MonotonicInstant,
        logger: Logger,
        uuid: UUIDGenerator = .random,
        wallClock: WallClock = .system,
        fileSystem: FileSystem = .live,
        onPublish: @escaping () -> Void = {}
    ) throws(StartupError) {
        let publish: PublishEvent = { topic, name, data in
            server.publish(topic, name, data())
            onPublish()
        }
        var state: DaemonState?
        let loaded: SyncUpStore.LoadResult
        do {
            store = try SyncUpStore(
                directory: directory, loop: loop, fileSystem: fileSystem, wallClock: wallClock
            ) { event in
                Self.handle(event, state: state, server: server, logger: logger)
            }
            loaded = try store.open()
        } catch {
            throw StartupError("cannot open the data directory \(directory.path): \(error)")
        }
        for warning in loaded.warnings { logger.error(warning) }
        for problem in loaded.formerProblems { logger.warning(problem) }
        let owner = DaemonState(
            syncUps: loaded.syncUps,
            former: loaded.former,
            store: store,
            uuid: uuid,
            now: wallClock,
            logger: logger,
            limits: server.limits,
            publish: publish
        )
        state = owner
        self.state = owner
        let shared = owner.sharedMeetingsWarning().map { [$0] } ?? []
        for warning in shared { logger.warning(warning) }
        let recovered = MeetingRecovery.run(state: owner, logger: logger)
        do {
            session = try SessionController(
                loop: loop, state: owner, settings: sessionSettings, logger: logger, publish: publish)
        } catch {
            throw StartupError("cannot set up sessions: \(error)")
        }
        owner.session = session
        let handler = CommandHandler(
            state: owner,
            server: server,
            store: store,
            session: session,
            status: CommandHandler.StatusInfo(
                version: SyncUpsVersion.current,
                socketPath: socketDescription,
                startedAt: startedAt,
                startDate: wallClock(),
                loadWarnings: loaded.warnings + shared + recovered + loaded.formerProblems
            )
        )
        server.handler = handler.handle
        server.replayGeneration = handler.replayGeneration
    }

    /// `idle · 3 sync-ups` or `recording "Design" 03:12 · Blob Jr 2/6`: systemd's status line.
    var statusLine: String {
        session.statusLine ?? "idle · \(state.syncUps.count) sync-up\(state.syncUps.count == 1 ? "" : "s")"
    }

    private static func handle(_ event: SyncUpStore.Event, state: DaemonState?, server: Server, logger: Logger) {
        switch event {
        case .reloaded(let syncUps):
            state?.replaceAll(with: syncUps)
        case .outsideEditRejected(let movedTo, let reason):
            logger.error(
                "another program wrote an invalid sync-ups.json (\(reason)); moved it to \(movedTo) and rewrote the current state"
            )
            server.publish(
                .daemon, "daemon.warning", ["message": .string("invalid outside edit moved to \(movedTo): \(reason)")])
        case .writeFailed(let message):
            logger.error("\(message); keeping the state in memory and retrying")
            server.publish(.daemon, "persistence.failed", ["error": .string(message)])
        case .writeRecovered:
            logger.notice("writing sync-ups.json works again")
            server.publish(.daemon, "persistence.recovered", [:])
        }
    }
}
