import FoundationEssentials
import Glibc
import SyncUpsAudio
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol
import SyncUpsSpeech
import Synchronization

/// Runs the daemon's one recording session: feeds the pure `SessionMachine` its events (ticks, requests,
/// recognised speech, audio trouble) and performs the effects it returns (timer, recording, cue, speech,
/// saving, publishing). Lives on the event loop; its helpers' threads report through a mailbox.
final class SessionController {
    /// How sessions record and transcribe: from the configuration at start-up, and again when it is reloaded
    /// (a meeting uses what was set when it started).
    struct Settings {
        var captureDevice: CaptureDevice = .alsa
        var audioDeviceName = "default"
        /// Whether meetings record the call too; `off` unless the configuration says (tests, the fuzzer).
        var callAudio = CallAudio.off
        /// The sound server's watcher, running unless `callAudio` is off; with a server connected, the
        /// microphone `default` is recorded through it as well (its default source), so both sides follow it.
        var soundServer: PulseMonitor?
        /// How streams of the sound server are opened (`CaptureDevice.pulse` of `soundServer`).
        var serverCaptureDevice: CaptureDevice?
        /// Nil plays no cue (`--no-cue`).
        var cueDeviceName: String? = "default"
        /// Nil when no speech engine is available.
        var recognizer: SpeechRecognizer?
        /// The configuration turned transcription off (`--speech-engine none`): a start that does not ask for a
        /// transcript records without one, rather than failing for want of an engine.
        var isTranscriptionOff = false
        /// How long the machine waits for the parts of a meeting (the recognizer's last words when saving, 20 s;
        /// the same wait when the daemon is stopping, 5 s, well inside systemd's 30 s to stop; a capture
        /// device's open, 10 s): the machine's own defaults, one copy of them.
        var settleTimeouts = SessionMachine.SettleTimeouts()
        /// How long stopping waits, after that, for the clean-up worker's work (a saved meeting's details being
        /// written, a capture device being closed; an open is not waited for, `finishCleanup`): with both, well
        /// inside systemd's 30 s.
        var shutdownCleanupTimeout: Duration = .seconds(10)
        /// How long the next meeting's engine, started ahead (`SpareEngine`), waits unused before it is ended;
        /// zero starts none.
        var spareIdleTimeout: Duration = .seconds(600)
        /// Start the next meeting's engine ahead at start-up (and after a reload), not only after a meeting or
        /// at a stand-up's reminder.
        var preparesSpareAtStart = false
    }

    /// What the helper threads report.
    enum Message: Sendable {
        /// The meeting's recording was opened, or failed to be (`startRecorder`).
        case recorderOpened(OpenedRecording, session: Meeting.ID)
        case recorder(MeetingRecorder.Trouble, Meeting.ID)
        case callRecorder(MeetingRecorder.Trouble, Meeting.ID)
        case recorderStopped(Meeting.ID)
        /// The mixer dropped `frames` of `input` (0: the microphone, 1: the call) from what the recognizer hears:
        /// they came more than `AudioMixer.maxLag` after the other input's.
        case mixerLate(input: Int, frames: Int64, Meeting.ID)
        /// What the meeting's recognizer `engine` (its count of starts: `ActiveSession.recognizerStarts`) said.
        case recognizer(RecognizerEvent, Meeting.ID, engine: Int)
        /// The meeting's recognizer was started (or taken from the spare), or failed to (`startRecognizer`).
        case recognizerOpened(OpenedRecognizer, Meeting.ID)
        /// The next meeting's engine, started ahead.
        case spare(SpareReport)
        case cueFailed(AudioError, Meeting.ID)
        /// A saved meeting's details file was written (or failed to be, with the error).
        case detailsWritten(Meeting.ID, error: String?)
        /// The meeting's journal could not be written.
        case journalWritten(Meeting.ID, error: SystemError?)
        /// A journal's removal went (error nil) or failed, and is retried.
        case journalRemoved(Meeting.ID, error: SystemError?)
        /// The clean-up worker has done what was queued before the daemon began to stop.
        case cleanupCaughtUp
    }

    let loop: EventLoop
    let state: DaemonState
    let publishEvent: PublishEvent
    let logger: Logger
    var settings: Settings {
        didSet {
            settingsGeneration &+= 1
            speechSettingsChanged()
        }
    }
    /// The next meeting's speech engine, started ahead: its phases, its engine (where the clean-up worker puts
    /// it and a meeting's start, on the same worker, takes it), and its idle timer.
    var spare = SpareEngine(isOn: false)
    let spareSlot = SpareSlot()
    var spareIdleTimer: EventLoop.Timer?
    /// `shutDown` has begun: no engine is started ahead any more.
    private(set) var isStopping = false
    /// Counts the changes of `settings` (a SIGHUP): what depends on them, such as the idle `status` reply,
    /// compares this number instead of the settings themselves.
    private(set) var settingsGeneration = 0
    let mailbox: Mailbox<Message>
    /// Blocking work of a meeting's devices and files (handing its capture devices' open to `opener`, joining
    /// the audio and cue threads, writing its details, removing a discarded meeting's files), in order, off the
    /// loop while its queue has room: a meeting queues a handful of jobs and there is one meeting at a time, so
    /// its 256 places do not fill; if they ever did, `SerialWorker.run` would do the job on the loop rather than
    /// lose a meeting's files.
    let cleanup: SerialWorker
    /// Opens a meeting's capture devices, handed each open by the clean-up worker (`startRecorder`): an open
    /// that never returns holds up only the opens behind it, at most `openerCapacity`.
    let opener: SerialWorker
    static let openerCapacity = 4
    /// The clean-up worker has done what was queued before the stop (`finishCleanup`).
    var isCleanupCaughtUp = false
    /// The running meeting's journal, written off the loop.
    let journals: JournalWriter
    private(set) var active: ActiveSession?
    /// A start has said that meetings record without a transcript (`Settings.isTranscriptionOff`).
    private var hasSaidTranscriptionIsOff = false
    /// Ended meetings' cues still in their devices (`stopCue`), one a device at most: no other thread waits there.
    var stuckCues: [CuePlayer] = []
    /// The speaker encoder and the voice profiles (nil in the fuzzer's daemon).
    var voices: VoiceService?
    /// The next try of each meeting's failed details write or journal removal (`retry`).
    var retries: [Meeting.ID: EventLoop.Timer] = [:]
    /// While a mailbox batch is handled, `session.transcript` waits for its end (`publish`).
    var transcriptCoalescing = TranscriptCoalescing.off

    enum TranscriptCoalescing {
        case off
        case collecting
        /// A transcript change of this session is waiting to be published.
        case pending(ActiveSession)
    }

    init(
        loop: EventLoop,
        state: DaemonState,
        settings: Settings,
        keeping named: Set<Meeting.ID> = [],
        fileSystem: FileSystem = .live,
        logger: Logger,
        publish: @escaping PublishEvent
    ) throws(SystemError) {
        self.loop = loop
        self.state = state
        self.settings = settings
        self.logger = logger
        self.publishEvent = publish
        let mailbox = try Mailbox<Message>()
        self.mailbox = mailbox
        cleanup = try SerialWorker(name: "syncups-cleanup")
        opener = try SerialWorker(name: "syncups-open", capacity: Self.openerCapacity)
        journals = try JournalWriter(
            directory: state.dataDirectory,
            keeping: named,
            fileSystem: fileSystem,
            onWrite: { meeting, error in mailbox.post(.journalWritten(meeting, error: error)) },
            onRemoval: { meeting, error in mailbox.post(.journalRemoved(meeting, error: error)) })
        _ = try mailbox.attach(to: loop) { [unowned self] messages in
            // A batch of recognizer results publishes the transcript once, at its end.
            transcriptCoalescing = .collecting
            for message in messages { receive(message) }
            let pending = transcriptCoalescing
            transcriptCoalescing = .off
            if case .pending(let session) = pending, active === session { self.publish(.transcript, session) }
        }
        spare = SpareEngine(isOn: sparesAreOn)
        if settings.preparesSpareAtStart { prepareSpare(because: "syncupsd started") }
    }

    /// The sync-up being recorded, if any.
    var syncUpID: SyncUp.ID? { active?.machine.syncUp.id }
    /// Why the running meeting refuses this edit of a sync-up (nil: it may be made, or none is running).
    func refusal(ofEdit syncUp: SyncUp) -> String? { active?.machine.refusal(ofEdit: syncUp) }
    var engineName: String? { settings.recognizer?.name }

    /// The running meeting's whole transcript so far (settled text, then the provisional tail), or nil.
    var transcript: String? { active?.machine.transcript }

    // MARK: - Requests

    /// `session.start`: replied to once the meeting has started (the machine publishes `started`); that is
    /// within the request for a meeting without audio, and for one with, once its capture device is open (off
    /// the loop), its speaker encoder started and its recognizer started (on the clean-up worker).
    func start(syncUp text: String, audio: Bool?, transcribe: Bool?, call: Bool? = nil, absent: [String] = [])
        throws(ProtocolError) -> ReplyBody
    {
        if let active { throw ProtocolError(.sessionActive, StartRequest.refusal(whileRunning: active.machine)) }
        let syncUp = state.syncUps[try state.index(of: text)]
        let roster: MeetingRoster
        do { roster = try MeetingRoster(syncUp.attendees, absent: absent) } catch {
            throw .invalidArgument(error.reason)
        }
        let speech = StartRequest.Speech(
            hasRecognizer: settings.recognizer != nil, isOff: settings.isTranscriptionOff,
            hasSaidItIsOff: hasSaidTranscriptionIsOff)
        let request: StartRequest
        do { request = try StartRequest.settle(audio: audio, transcribe: transcribe, call: call, speech: speech) } catch
        {
            switch error {
            case .invalidArgument(let text): throw .invalidArgument(text)
            case .speechUnavailable(let text): throw ProtocolError(.speechUnavailable, text)
            }
        }
        hasSaidTranscriptionIsOff = request.hasSaidTranscriptionIsOff

        let meetingID = Meeting.ID(state.uuid())
        let session = ActiveSession(
            machine: nil, meetingID: meetingID, start: loop.now(), audioDeviceName: settings.audioDeviceName,
            recognizer: settings.recognizer, cueDeviceName: settings.cueDeviceName)
        let call: SessionMachine.CallSource
        if request.records {
            call = callSource(wanted: request.recordsCall, for: session)
        } else {
            call = .off
            session.callAudio = .off("the meeting records no audio")
        }
        let (machine, effects) = SessionMachine.start(
            syncUp: syncUp,
            meetingID: meetingID,
            startDate: state.now(),
            records: request.records,
            call: call,
            transcribes: request.transcribes,
            playsCue: settings.cueDeviceName != nil,
            warnings: request.warnings,
            roster: roster,
            settleTimeouts: settings.settleTimeouts,
            atNanoseconds: elapsed(session)
        )
        session.machine = machine
        active = session
        // The journal refers to the sync-up: make sure the sync-up itself is on disk too.
        state.flush()
        logger.info("started a meeting of \"\(syncUp.title)\"", .syncUp(syncUp.id), .meeting(meetingID))
        // The machine starts the recording, the recognizer and the cue, then the timer and the first turn.
        perform(effects, in: session)
        guard session.machine.isStarting else { return .value(startReplyJSON(session)) }
        // The capture device opens off the loop, then the recognizer starts: the reply waits for `started` (no
        // thread does), the client's later lines for the reply.
        let reply = PendingReply()
        session.startReply = reply
        return .awaited(reply)
    }

    /// `session.next`, `pause`, `resume`, `end`: the session object after the request (for `end`, the outcome).
    func request(_ request: SessionMachine.Request) throws(ProtocolError) -> JSONValue {
        guard let session = active else {
            throw ProtocolError(.noSession, "no meeting is being recorded; start one with session.start")
        }
        do {
            perform(try session.machine.request(request, atNanoseconds: elapsed(session)), in: session)
        } catch {
            throw ProtocolError(error.isInvalidArgument ? .invalidArgument : .invalidState, error.reason)
        }
        return sessionJSON(session)
    }

    /// Hands a fact to the running session's machine and performs what it says.
    func handle(_ event: SessionMachine.Event, in session: ActiveSession) {
        guard event == .timerTicked else {
            return perform(session.machine.handle(event, atNanoseconds: elapsed(session)), in: session)
        }
        // A late wake-up (the daemon stopped or starved) catches up tick by tick: each tick's events are
        // published from its own state, not all from the last one's.
        let now = elapsed(session)
        SessionMachine.catchUp {
            session.machine.nextTick(atNanoseconds: now)
        } perform: { effects in
            perform(effects, in: session)
            return active === session
        }
    }

    /// A voice matched by the speaker encoder (`VoiceService`), for the running meeting.
    func voiceHeard(_ evidence: VoiceEvidence, in meeting: Meeting.ID) {
        guard let session = active, session.meetingID == meeting else { return }
        handle(.voiceHeard(evidence), in: session)
    }

    /// The meeting's time in nanoseconds, the machine's clock.
    func elapsed(_ session: ActiveSession) -> Int64 { (loop.now() - session.start).nanoseconds }

    /// The daemon stops: the engine started ahead is ended (its process group killed), and none is started again.
    func endSparesForGood() {
        isStopping = true
        endSpare("syncupsd is stopping")
    }

    /// The session is over: the machine's effects have stopped what it ran; what it held is released (the
    /// journal's throttle is the controller's own).
    func finish(_ session: ActiveSession) {
        refuseStart(session)
        session.journalTimer.map(loop.cancel)
        session.journalTimer = nil
        session.recognition = nil
        if active === session { active = nil }
        // The next meeting's engine, unless the daemon is stopping.
        if !isStopping { prepareSpare(because: "a meeting ended") }
    }
}
