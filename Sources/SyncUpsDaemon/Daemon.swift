import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol
import SyncUpsSpeech
import SyncUpsSystemd

/// The daemon: wires the store, the state, the socket server and the signals onto one event loop and runs
/// it until SIGTERM or SIGINT.
public final class Daemon {
    let configuration: Configuration
    let environment: [String: String]
    let logger: Logger
    let loop: EventLoop
    private let signals: SignalReader
    private var stopReason: String?
    private let serviceManager = ServiceManager.live
    private var lastStatus = ""

    /// Blocks the signals the daemon handles itself; call on the main thread before any thread starts.
    public init(configuration: Configuration, environment: [String: String], logger: Logger) throws(StartupError) {
        self.configuration = configuration
        self.environment = environment
        self.logger = logger
        SignalReader.ignoreBrokenPipes()
        do {
            signals = try SignalReader([SIGTERM, SIGINT, SIGHUP])
            loop = try EventLoop()
        } catch {
            throw StartupError("cannot set up the event loop: \(error)")
        }
    }

    /// Starts everything and runs until asked to stop; returns the exit status.
    public func run() throws(StartupError) -> CInt {
        let startedAt = MonotonicInstant.now()
        guard let dataPath = configuration.dataDirectory ?? DataDirectory.defaultPath(environment: environment) else {
            throw StartupError("neither XDG_DATA_HOME nor HOME is set; pass --data-dir DIR")
        }
        let directory = DataDirectory(path: dataPath)

        // The socket first: a second daemon must fail before it touches the data.
        let socket = try openSocket()
        defer { socket.close() }

        let server = Server(loop: loop, limits: Limits(), version: SyncUpsVersion.current, logger: logger)
        // Every published event may change the one-line status systemd shows.
        var updateStatus: () -> Void = {}
        let publish: (Topic, String, JSONValue) -> Void = { topic, name, data in
            server.publish(topic, name, data)
            updateStatus()
        }
        var state: DaemonState!
        let store: SyncUpStore
        let loaded: SyncUpStore.LoadResult
        do {
            store = try SyncUpStore(directory: directory, loop: loop) { [logger] event in
                Self.handle(event, state: state, server: server, logger: logger)
            }
            loaded = try store.open()
        } catch {
            throw StartupError("cannot open the data directory \(directory.path): \(error)")
        }
        for warning in loaded.warnings { logger.error(warning) }
        state = DaemonState(
            syncUps: loaded.syncUps,
            store: store,
            uuid: .random,
            now: { Date() },
            logger: logger,
            publish: publish
        )
        let recovered = MeetingRecovery.run(state: state, logger: logger)
        let session: SessionController
        do {
            session = try SessionController(
                loop: loop,
                state: state,
                settings: sessionSettings(),
                logger: logger,
                publish: publish
            )
        } catch {
            throw StartupError("cannot set up sessions: \(error)")
        }
        state.session = session
        let handler = CommandHandler(
            state: state,
            server: server,
            store: store,
            session: session,
            status: CommandHandler.StatusInfo(
                version: SyncUpsVersion.current,
                socketPath: socket.ownedPath ?? configuration.socketPath ?? "(from systemd)",
                startedAt: startedAt,
                startDate: Date(),
                loadWarnings: loaded.warnings + recovered
            )
        )
        server.handler = handler.handle

        do {
            try server.start(listener: socket.fd)
            _ = try loop.watch(signals.descriptor, for: .readable) { [unowned self] _ in
                for signal in signals.drain() { received(signal) }
            }
        } catch {
            throw StartupError("cannot start serving: \(error)")
        }
        logger.notice(
            "syncupsd \(SyncUpsVersion.current) ready on \(socket.ownedPath ?? "a socket from systemd") with \(loaded.syncUps.count) sync-ups in \(directory.path)"
        )
        let owner: DaemonState = state
        func statusLine() -> String {
            session.statusLine ?? "idle · \(owner.syncUps.count) sync-up\(owner.syncUps.count == 1 ? "" : "s")"
        }
        updateStatus = { [unowned self] in
            let line = statusLine()
            guard line != lastStatus else { return }
            lastStatus = line
            serviceManager.status(line)
        }
        lastStatus = statusLine()
        serviceManager.ready(status: lastStatus)
        startWatchdog()

        loop.run()

        logger.notice("stopping (\(stopReason ?? "asked to"))")
        serviceManager.stopping()
        session.shutDown()
        server.shutDown(reason: stopReason ?? "stopping")
        if let failure = store.close() {
            logger.error(failure)
            return 1
        }
        return 0
    }

    private func sessionSettings() -> SessionController.Settings {
        var settings = SessionController.Settings()
        settings.audioDeviceName = configuration.audioDevice
        settings.cueDeviceName = configuration.playsCue ? configuration.cueDevice : nil
        let model = PocketSphinxRecognizer.Model(
            acousticModel: configuration.speechModel,
            languageModel: configuration.speechLanguageModel,
            grammar: configuration.speechGrammar,
            dictionary: configuration.speechDictionary
        )
        let engine = SpeechEngine(rawValue: configuration.speechEngine) ?? .auto
        let (recognizer, description) = engine.recognizer(command: configuration.speechCommand, model: model)
        settings.recognizer = recognizer
        logger.info("speech: \(description)")
        return settings
    }

    /// Pings systemd's watchdog at half the interval it asked for; with no watchdog, no timer (an idle
    /// daemon wakes up zero times a second).
    private func startWatchdog() {
        guard let interval = ServiceManager.watchdogInterval() else { return }
        let period = interval / 2
        func ping() {
            serviceManager.watchdog()
            loop.schedule(after: period, ping)
        }
        ping()
    }

    private func openSocket() throws(StartupError) -> ListeningSocket {
        do {
            if let passed = try SocketActivation.passedSocket() {
                logger.info("using the socket passed by systemd")
                return ListeningSocket(passed: passed)
            }
        } catch {
            throw StartupError("socket activation failed: \(error)")
        }
        if let path = configuration.socketPath {
            return try ListeningSocket.create(at: path, isDefaultLocation: false)
        }
        guard let path = ListeningSocket.defaultPath(environment: environment) else {
            throw StartupError("XDG_RUNTIME_DIR is not set, so there is no default socket; pass --socket PATH")
        }
        return try ListeningSocket.create(at: path, isDefaultLocation: true)
    }

    private func received(_ signal: CInt) {
        switch signal {
        case SIGTERM, SIGINT:
            stopReason = signal == SIGTERM ? "SIGTERM" : "SIGINT"
            loop.stop()
        default:
            logger.info("ignoring signal \(signal)")
        }
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
