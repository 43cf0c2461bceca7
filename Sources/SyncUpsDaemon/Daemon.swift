import FoundationEssentials
import Glibc
import SyncUpsAudio
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol
import SyncUpsSpeech
import SyncUpsSystemd

/// The daemon: wires the store, the state, the socket server and the signals onto one event loop and runs
/// it until SIGTERM or SIGINT. SIGHUP reads the configuration again (`reloadConfiguration`).
public final class Daemon {
    /// The configuration the daemon started with; the socket, the data directory and the limits stay so.
    let configuration: Configuration
    /// The configuration read last (at start or on SIGHUP): what the options that change at run time follow.
    private var current: Configuration
    /// The command line (without argv[0]), read again with the config file on SIGHUP: flags still win.
    let arguments: [String]
    let environment: [String: String]
    let logger: Logger
    let loop: EventLoop
    private let signals: SignalReader
    private var stopReason: String?
    private let serviceManager = ServiceManager.live
    private var lastStatus = ""
    /// The MPRIS player and notifications, once started.
    private var desktop: DesktopSurfaces?
    /// How long the stop waits for the speech commands it killed to be reaped, and what they detached ended
    /// with them (`Descendants.endAll`), before it ends what is left itself.
    static let descendantsGrace = Duration.seconds(2)

    /// Blocks the signals the daemon handles itself; call on the main thread before any thread starts.
    public init(
        configuration: Configuration, arguments: [String], environment: [String: String], logger: Logger
    ) throws(StartupError) {
        self.configuration = configuration
        self.current = configuration
        self.arguments = arguments
        self.environment = environment
        self.logger = logger
        SignalReader.ignoreBrokenPipes()
        // Whatever a speech command detaches comes back to the daemon when its parent ends, to be ended too.
        Descendants.becomeSubreaper()
        do {
            signals = try SignalReader([SIGTERM, SIGINT, SIGHUP])
            loop = try EventLoop(busyPollWindow: .microseconds(configuration.busyPollMicroseconds))
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

        // One daemon per data directory, decided before anything in it is read (the journal of a live meeting
        // above all); then one per socket.
        let lock = try lockDataDirectory(directory)
        defer { lock.release() }
        let socket = try openSocket()
        // Its descriptor is the server's once `start(listener:)` took it, and `stopAccepting` closes it: closed
        // here too, the second close closed whatever the daemon had opened since under that number.
        var isServing = false
        defer {
            if !isServing { socket.fd.close() }
            socket.removeFile()
        }

        var limits = Limits()
        limits.maxConnections = configuration.maxConnections
        limits.maxSubscribers = max(limits.maxSubscribers, configuration.maxConnections)
        FileDescriptorLimit.raiseToHardLimit()
        Memory.mapLargeBlocksSeparately()
        let server = Server(loop: loop, limits: limits, version: SyncUpsVersion.current, logger: logger)
        // Every published event may change the one-line status systemd shows, and the MPRIS player.
        var updateStatus: () -> Void = {}
        var updateDesktop: PublishEvent = { _, _, _ in }
        let desktopStatus = DesktopStatus(reason: "connecting to the session bus")
        let services = try Services(
            loop: loop,
            server: server,
            directory: directory,
            sessionSettings: sessionSettings(configuration),
            voiceModel: .load(voiceModelPath(configuration)),
            socketDescription: socket.ownedPath ?? "(from systemd)",
            startedAt: startedAt,
            logger: logger,
            desktop: desktopStatus,
            environment: environment,
            onPublish: { topic, name, data in
                updateStatus()
                updateDesktop(topic, name, data)
            }
        )
        let desktop = DesktopSurfaces(
            loop: loop, environment: environment, logger: logger, session: services.session,
            scheduler: services.scheduler, status: desktopStatus)
        desktop.notificationLevel = configuration.notifications
        updateDesktop = { topic, name, data in desktop.published(topic, name, data) }
        self.desktop = desktop

        do {
            try server.start(listener: socket.fd)
            isServing = true
            _ = try loop.watch(signals.descriptor, for: .readable) { [unowned self] _ in
                for signal in signals.drain() { received(signal, services: services) }
            }
        } catch {
            throw StartupError("cannot start serving: \(error)")
        }
        logger.notice(
            "syncupsd \(SyncUpsVersion.current) ready on \(socket.ownedPath ?? "a socket from systemd") with \(services.state.syncUps.count) sync-ups in \(directory.path)"
        )
        lastStatus = services.statusLine
        // Only when systemd listens ($NOTIFY_SOCKET): a meeting changes the line every second.
        if serviceManager.ready(status: lastStatus) {
            updateStatus = { [unowned self] in
                let line = services.statusLine
                guard line != lastStatus else { return }
                lastStatus = line
                serviceManager.status(line)
            }
        }
        startWatchdog()
        desktop.start()
        services.scheduler.start()

        loop.run()

        server.stopAccepting()
        logger.notice("stopping (\(stopReason ?? "asked to"))")
        serviceManager.stopping()
        // A second SIGTERM or SIGINT ends the wait for the meeting's last words; what is saved is saved.
        services.session.shutDown(
            interrupt: .init(descriptor: signals.descriptor) { [unowned self] in
                var isStopRequested = false
                for signal in signals.drain() {
                    if signal == SIGTERM || signal == SIGINT {
                        logger.notice("\(signal == SIGTERM ? "SIGTERM" : "SIGINT") again: not waiting any longer")
                        isStopRequested = true
                    } else {
                        logger.info("ignoring signal \(signal) while stopping")
                    }
                }
                return isStopRequested
            })
        services.voices.shutDown()
        server.shutDown(reason: stopReason ?? "stopping")
        desktop.close()
        services.scheduler.close()
        let failure = services.store.close()
        services.session.close()
        services.meetingsSweep.finish()
        // Last: what a speech command detached from its group, where no PID namespace ends it with the engine.
        if !Descendants.endAll(waitingUpTo: Self.descendantsGrace) {
            logger.notice(
                "a speech command had not ended \(Int(Self.descendantsGrace.seconds)) s after it was killed; ended what it left running"
            )
        }
        logger.flushThrottled()
        if let failure {
            logger.error(failure)
            return 1
        }
        return 0
    }

    /// The session's settings from `configuration`; a reload keeps the sound server's watcher it started
    /// (`soundServer`), which a running meeting's streams may be using. A watcher started by a reload
    /// (`--call-audio off` before) does not wait for the server's first answer: that is the loop's time, and a
    /// server that accepts and never answers held it for the whole wait (1 s).
    private func sessionSettings(
        _ configuration: Configuration, soundServer: PulseMonitor? = nil, isReload: Bool = false
    ) -> SessionController.Settings {
        var settings = SessionController.Settings()
        settings.audioDeviceName = configuration.audioDevice
        settings.cueDeviceName = configuration.playsCue ? configuration.cueDevice : nil
        settings.callAudio = configuration.callAudio
        if let soundServer {
            settings.soundServer = soundServer
            settings.serverCaptureDevice = .pulse(soundServer)
        } else if configuration.callAudio != .off {
            do {
                let monitor = try PulseMonitor(waitForFirstAttempt: !isReload)
                settings.soundServer = monitor
                settings.serverCaptureDevice = .pulse(monitor)
                logger.info(
                    "sound server: \(monitor.snapshot.map { "\($0.server), default output \($0.defaultSink ?? "none")" } ?? "none reachable (\(monitor.error ?? "?")); retrying")"
                )
            } catch {
                logger.warning("cannot watch the sound server: \(error); meetings record the microphone alone")
            }
        }
        let model = PocketSphinxRecognizer.Model(
            acousticModel: configuration.speechModel,
            languageModel: configuration.speechLanguageModel,
            grammar: configuration.speechGrammar,
            dictionary: configuration.speechDictionary
        )
        let engine = configuration.speechEngine
        let (recognizer, description) = engine.recognizer(command: configuration.speechCommand, model: model)
        settings.recognizer = recognizer
        settings.isTranscriptionOff = engine == .none
        settings.spareIdleTimeout = .seconds(configuration.speechSpareIdleSeconds)
        settings.preparesSpareAtStart = configuration.speechSpareAtStart
        logger.info("speech: \(description)")
        return settings
    }

    /// The speaker encoder's weights file: configured, else beside the default data directory's place.
    private func voiceModelPath(_ configuration: Configuration) -> String? {
        if let path = configuration.voiceModel { return path == "none" ? nil : path }
        return DataDirectory.defaultPath(environment: environment).map { FilePath.join($0, "voice/ge2e.weights") }
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

    /// Locks the data directory (creating it if missing; `syncupsd.lock` in it names the owner's pid); held
    /// until the process exits.
    private func lockDataDirectory(_ directory: DataDirectory) throws(StartupError) -> LockFile {
        do {
            // Only the directory itself, if missing: nothing in it is touched before the lock is ours.
            try directory.createTopLevel()
            return try LockFile(directory: directory.path, pidFile: directory.lockFile)
        } catch let error as LockFile.Failure {
            if case .held(let pid) = error {
                throw StartupError(
                    "another syncupsd (pid \(pid.map(String.init) ?? "unknown")) is using \(directory.path)",
                    exitStatus: StartupError.dataDirectoryInUse)
            }
            throw StartupError("cannot lock the data directory \(directory.path): \(error)")
        } catch {
            throw StartupError("cannot create the data directory \(directory.path): \(error)")
        }
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
            return try ListeningSocket.create(at: path, in: nil)
        }
        let directory = RuntimeDirectory.locate(environment: environment)
        if directory.isReplacement {
            logger.warning(
                "XDG_RUNTIME_DIR is not set: the socket goes in \(directory.path) instead (the user's own, mode 0700), where syncupsctl looks too"
            )
        }
        return try ListeningSocket.create(at: directory.socketPath, in: directory)
    }

    private func received(_ signal: CInt, services: Services) {
        switch signal {
        case SIGTERM, SIGINT:
            stopReason = signal == SIGTERM ? "SIGTERM" : "SIGINT"
            loop.stop()
        case SIGHUP:
            reloadConfiguration(services)
        default:
            logger.info("ignoring signal \(signal)")
        }
    }

    /// SIGHUP: reads the config file and the command line again, as at start (flags still win). The log level
    /// changes at once; the audio, cue and speech options apply from the next meeting; the socket, the data
    /// directory and the connection limit need a restart, and a `daemon.warning` says so. A file that does
    /// not load changes nothing, and the warning says why.
    private func reloadConfiguration(_ services: Services) {
        let new: Configuration
        do {
            // --help and --version ended the process at start: the same arguments always mean run.
            guard case .run(let loaded) = try ConfigurationLoader.load(arguments: arguments, environment: environment)
            else { return }
            new = loaded
        } catch {
            let reasons = error.description.split(separator: "\n").joined(separator: "; ")
            services.state.warn("SIGHUP: the configuration was not reloaded, the running one stays: \(reasons)")
            return
        }
        let reload = ConfigurationReload(started: configuration, current: current, new: new)
        current = new
        logger.changeMinimumLevel(to: new.logLevel)
        desktop?.notificationLevel = new.notifications
        // Read again even when the option is unchanged: `make voice-model` may have installed it meanwhile.
        services.voices.reloadModel(from: voiceModelPath(new))
        if !reload.appliedFromNextMeeting.isEmpty {
            services.session.settings = sessionSettings(
                new, soundServer: services.session.settings.soundServer, isReload: true)
        }
        // What the file says but the command line overrides: "nothing changed" alone would hide why.
        var overridden = ""
        if case .run(let fileAlone)? = try? ConfigurationLoader.load(
            arguments: ConfigurationLoader.fileArguments(arguments), environment: environment)
        {
            let shadowed = ConfigurationReload.shadowed(file: fileAlone, effective: new)
            if !shadowed.isEmpty {
                overridden =
                    "; the command line overrides "
                    + shadowed.map {
                        "\($0.option) (the file says \($0.old ?? "unset"), it stays \($0.new ?? "unset"))"
                    }
                    .joined(separator: ", ")
            }
        }
        if reload.changesAnything {
            let changes =
                reload.appliedAtOnce.map(\.description)
                + reload.appliedFromNextMeeting.map { "\($0) (from the next meeting)" }
            logger.notice("SIGHUP: reloaded the configuration: \(changes.joined(separator: "; "))\(overridden)")
        } else if reload.needsRestart.isEmpty || !overridden.isEmpty {
            logger.notice("SIGHUP: reloaded the configuration: nothing changed\(overridden)")
        }
        for change in reload.needsRestart {
            services.state.warn(
                "SIGHUP: \(change) needs a restart of syncupsd; until then it keeps \(change.old ?? "its default")")
        }
    }
}
