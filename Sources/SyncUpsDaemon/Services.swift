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
    let voices: VoiceService
    let scheduler: Scheduler
    let meetingsSweep: MeetingSweep

    /// Opens the data directory (loading, recovering interrupted meetings) and wires it all together.
    /// `onPublish` runs after every event is published, with its topic, name and data.
    init(
        loop: EventLoop,
        server: Server,
        directory: DataDirectory,
        sessionSettings: SessionController.Settings,
        voiceModel: VoiceService.Model = .unavailable("voices off: no voice model configured"),
        socketDescription: String,
        startedAt: MonotonicInstant,
        logger: Logger,
        uuid: UUIDGenerator = .random,
        wallClock: WallClock = .system,
        desktop: DesktopStatus = DesktopStatus(),
        environment: [String: String] = [:],
        fileSystem: FileSystem = .live,
        onPublish: @escaping PublishEvent = { _, _, _ in }
    ) throws(StartupError) {
        let publish: PublishEvent = { topic, name, data in
            server.publish(topic, name, data())
            onPublish(topic, name, data)
        }
        var state: DaemonState?
        var voicesOfReload: VoiceService?
        var meetingsOfReload: MeetingSweep?
        let loaded: SyncUpStore.LoadResult
        do {
            store = try SyncUpStore(
                directory: directory, loop: loop, fileSystem: fileSystem, wallClock: wallClock
            ) { event in
                Self.handle(event, state: state, publish: publish, logger: logger)
                // A sync-up put back by an outside edit (a restored backup) finds its people's voices again.
                if case .reloaded(let syncUps) = event {
                    voicesOfReload?.bringBack(syncUps.attendeeIDs)
                    meetingsOfReload?.bringBack(syncUps.meetingIDs)
                }
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
        // A deletion recorded in deleted-meetings.json of a meeting sync-ups.json (read whole) names was undone
        // by the user while the daemon was down (a backup restored): the meeting is theirs again. Not after a
        // fallback: `.prev`, one write behind, may name a meeting deleted since.
        let named = loaded.isFromFile ? loaded.syncUps.meetingIDs : []
        let recovered = MeetingRecovery.run(state: owner, keeping: named, logger: logger)
        do {
            session = try SessionController(
                loop: loop, state: owner, settings: sessionSettings, keeping: named, fileSystem: fileSystem,
                logger: logger, publish: publish)
        } catch {
            throw StartupError("cannot set up sessions: \(error)")
        }
        owner.session = session
        session.retryFailedWrites()
        let sweep = MeetingSweep(directory: directory, fileSystem: fileSystem, wallClock: wallClock, logger: logger)
        meetingsSweep = sweep
        meetingsOfReload = sweep
        let keptMeetings = sweep.sweep(
            known: owner.syncUps.meetingIDs, rosterIsFromFile: loaded.isFromFile)
        do {
            voices = try VoiceService(
                loop: loop, directory: directory, model: voiceModel, logger: logger, wallClock: wallClock,
                fileSystem: fileSystem)
        } catch {
            throw StartupError("cannot set up voices: \(error)")
        }
        logger.info(voices.model.status)
        voicesOfReload = voices
        let keptProfiles = Self.sweepOrphanedProfiles(
            of: voices, in: owner.syncUps, rosterIsFromFile: loaded.isFromFile, logger: logger)
        session.voices = voices
        voices.onEvidence = { [unowned session] evidence, meeting in session.voiceHeard(evidence, in: meeting) }
        // A profile that cannot be written is a failed write of the user's data like sync-ups.json's: the
        // daemon's subscribers (and the desktop's notification) hear of it, and of its end.
        voices.writer.onErrorChange = { [unowned voices, unowned owner] in
            if let error = voices.writeError {
                owner.writeFailed(.voiceProfiles, error)
            } else {
                owner.writesWorked([.voiceProfiles])
            }
        }
        scheduler = Scheduler(
            loop: loop, directory: directory, state: owner, logger: logger, wallClock: wallClock,
            environment: environment, fileSystem: fileSystem)
        let scheduleWarnings = scheduler.load(rosterIsFromFile: loaded.isFromFile)
        for warning in scheduleWarnings { logger.warning(warning) }
        scheduler.onAction = { [unowned owner, unowned session, unowned scheduler] action in
            // The stand-up is near: its first words need not wait for the engine's start.
            if case .remind = action { session.prepareSpare(because: "a stand-up's reminder") }
            Self.perform(action, state: owner, session: session, scheduler: scheduler, logger: logger, publish: publish)
        }
        let handler = CommandHandler(
            state: owner,
            server: server,
            store: store,
            session: session,
            voices: voices,
            status: CommandHandler.StatusInfo(
                version: SyncUpsVersion.current,
                socketPath: socketDescription,
                startedAt: startedAt,
                startDate: wallClock(),
                loadWarnings: loaded.warnings + shared + recovered + keptMeetings + loaded.formerProblems + keptProfiles
                    + scheduleWarnings,
                desktop: desktop,
                scheduler: scheduler
            )
        )
        server.handler = handler.handle
        server.replayGeneration = handler.replayGeneration
    }

    /// A profile of someone in no sync-up (removed while a write of theirs raced the removal, or while the
    /// daemon was down) is a voice print no command can reach: it is set aside (`VoiceProfileStore.setAside`,
    /// `voices/orphaned/`, the longest aside deleted beyond 100 once they waited 30 days), each named in the
    /// log, not deleted: the roster may lack a sync-up the user will restore from a `.corrupt-*` file, and a
    /// set-aside profile whose person a roster names again comes back (`VoiceService.bringBack`, here and at
    /// each outside edit). Only against the roster of a `sync-ups.json` read whole: after a fallback (`.prev`,
    /// one write behind) or an empty start (the file missing, empty or damaged) the people missing from the
    /// roster may well exist, and nothing is moved; they are judged again at the next start that reads the
    /// file. Nor into a `voices/orphaned` that is not the daemon's own directory (a symbolic link, never
    /// followed). Returns the warning for `status` when profiles were kept or set aside.
    static func sweepOrphanedProfiles(
        of voices: VoiceService, in syncUps: [SyncUp], rosterIsFromFile: Bool, logger: Logger
    ) -> [String] {
        let known = syncUps.attendeeIDs
        voices.bringBack(known)
        let orphans = voices.profiles.keys.filter { !known.contains($0) }.sorted { $0.description < $1.description }
        guard !orphans.isEmpty else { return [] }
        let profiles: (Int) -> String = { "\($0) profiles of people" }
        if let kept = voices.store.aside.keptInPlace(
            topic: "voices", items: profiles, of: orphans.count, rosterIsFromFile: rosterIsFromFile, logger: logger)
        {
            return kept
        }
        for id in orphans { logger.notice("voices: setting aside the profile of \(id), who is in no sync-up") }
        let (moved, failure) = voices.setAside(orphans)
        return voices.store.aside.report(
            topic: "voices", items: profiles, of: orphans.count, moved: moved.count,
            failure: failure, kept: voices.store.directory, logger: logger)
    }

    /// `idle · 3 sync-ups` or `recording "Design" 03:12 · Blob Jr 2/6`: systemd's status line.
    var statusLine: String {
        session.statusLine ?? "idle · \(state.syncUps.count) sync-up\(state.syncUps.count == 1 ? "" : "s")"
    }

    /// A reminder is a `schedule.reminder` event (the desktop shows it as a notification); an automatic
    /// start starts the meeting as `session.start` would, or says why it could not.
    private static func perform(
        _ action: ReminderPlanner.Action, state: DaemonState, session: SessionController, scheduler: Scheduler,
        logger: Logger, publish: PublishEvent
    ) {
        switch action {
        case .remind(let id, let start, let isLate):
            guard let syncUp = state.syncUps.first(where: { $0.id == id }) else { return }
            logger.info(
                "reminder: \(syncUp.title) at \(start)\(isLate ? " (late: missed while the machine slept or the daemon was not running)" : "")"
            )
            publish(.daemon, EventName.scheduleReminder) {
                [
                    "syncup": .string(id.description), "title": .string(syncUp.title),
                    "start": .string(UTCTime(Date(timeIntervalSince1970: Double(start))).rfc3339),
                    "startSeconds": .int(Int(start)), "late": .bool(isLate),
                    "schedule": .string(scheduler.schedules[id]?.text ?? ""),
                    "timeZone": .string(scheduler.schedules[id]?.timeZone ?? ""),
                ]
            }
        case .start(let id, _):
            do {
                _ = try session.start(syncUp: id.description, audio: nil, transcribe: nil)
            } catch {
                publish(.daemon, EventName.daemonWarning) {
                    ["message": .string("the scheduled start did not happen: \(error.message)")]
                }
            }
        }
    }

    private static func handle(
        _ event: SyncUpStore.Event, state: DaemonState?, publish: PublishEvent, logger: Logger
    ) {
        switch event {
        case .reloaded(let syncUps):
            state?.replaceAll(with: syncUps)
        case .outsideEditRejected(let movedTo, let reason):
            logger.error(
                "another program wrote an invalid sync-ups.json (\(reason)); moved it to \(movedTo) and rewrote the current state"
            )
            publish(.daemon, EventName.daemonWarning) {
                ["message": .string("invalid outside edit moved to \(movedTo): \(reason)")]
            }
        case .writeFailed(let message):
            logger.error("\(message); keeping the state in memory and retrying")
            state?.writeFailed(.syncUps, message)
        case .writeRecovered:
            logger.notice("writing sync-ups.json works again")
            state?.writesWorked([.syncUps])
        }
    }
}

extension [SyncUp] {
    /// Everybody the sync-ups name.
    var attendeeIDs: Set<Attendee.ID> { Set(lazy.flatMap { $0.attendees.map(\.id) }) }

    /// Every meeting the sync-ups hold.
    var meetingIDs: Set<Meeting.ID> { Set(lazy.flatMap { $0.meetings.map(\.id) }) }
}
