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
        /// How long saving waits for the recognizer's last words before giving up on them.
        var settleTimeout: Duration = .seconds(20)
        /// The same wait when the daemon is stopping: shorter, well inside systemd's 30 s to stop.
        var shutdownSettleTimeout: Duration = .seconds(5)
    }

    /// What the helper threads report.
    enum Message: Sendable {
        case recorder(MeetingRecorder.Trouble, Meeting.ID)
        case callRecorder(MeetingRecorder.Trouble, Meeting.ID)
        case recorderStopped(Meeting.ID)
        case recognizer(RecognizerEvent, Meeting.ID)
        case cueFailed(AudioError, Meeting.ID)
        /// A saved meeting's details file was written (or failed to be, with the error).
        case detailsWritten(Meeting.ID, error: String?)
        /// The meeting's journal could not be written.
        case journalFailed(Meeting.ID, SystemError)
    }

    let loop: EventLoop
    let state: DaemonState
    let publishEvent: PublishEvent
    let logger: Logger
    var settings: Settings { didSet { settingsGeneration &+= 1 } }
    /// Counts the changes of `settings` (a SIGHUP): what depends on them, such as the idle `status` reply,
    /// compares this number instead of the settings themselves.
    private(set) var settingsGeneration = 0
    let mailbox: Mailbox<Message>
    /// Blocking clean-up (joining the audio and cue threads, writing a meeting's details), off the loop while
    /// its queue has room: a meeting queues two or three jobs and there is one meeting at a time, so its 256
    /// places do not fill; if they ever did, `SerialWorker.run` would do the job on the loop rather than lose
    /// a meeting's files.
    let cleanup: SerialWorker
    /// The running meeting's journal, written off the loop.
    let journals: JournalWriter
    private(set) var active: ActiveSession?
    /// A start has said that meetings record without a transcript (`Settings.isTranscriptionOff`).
    private var hasSaidTranscriptionIsOff = false
    /// Saved meetings whose details file is not written yet (`saveDetails`).
    var pendingDetails: [Meeting.ID: PendingDetails] = [:]
    /// Why writing a meeting's details fails, while it does (for `status` and the snapshot).
    var detailsError: String?
    /// The speaker encoder and the voice profiles (nil in the fuzzer's daemon).
    var voices: VoiceService?
    /// The last journal write that failed, per meeting (until it is saved or deleted): the log must not say a
    /// meeting is kept in a journal that cannot be written.
    var journalErrors: [Meeting.ID: String] = [:]
    /// While a mailbox batch is handled, `session.transcript` waits for its end (`publish`).
    var transcriptCoalescing = TranscriptCoalescing.off

    enum TranscriptCoalescing {
        case off
        case collecting
        /// A transcript change of this session is waiting to be published.
        case pending(ActiveSession)
    }

    /// A saved meeting's details waiting to be written: the journal to keep meanwhile, the next retry's delay.
    struct PendingDetails {
        var journal: MeetingJournal
        var retryDelay: Duration
        var hasFailed = false
    }

    init(
        loop: EventLoop,
        state: DaemonState,
        settings: Settings,
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
        journals = try JournalWriter(directory: state.dataDirectory) { meeting, error in
            mailbox.post(.journalFailed(meeting, error))
        }
        _ = try mailbox.attach(to: loop) { [unowned self] messages in
            // A batch of recognizer results publishes the transcript once, at its end.
            transcriptCoalescing = .collecting
            for message in messages { receive(message) }
            let pending = transcriptCoalescing
            transcriptCoalescing = .off
            if case .pending(let session) = pending, active === session { self.publish(.transcript, session) }
        }
    }

    /// The sync-up being recorded, if any.
    var syncUpID: SyncUp.ID? { active?.machine.syncUp.id }
    var engineName: String? { settings.recognizer?.name }

    /// The running meeting's whole transcript so far (settled text, then the provisional tail), or nil.
    var transcript: String? { active?.machine.transcript }

    // MARK: - Requests

    func start(syncUp text: String, audio: Bool?, transcribe: Bool?, call: Bool? = nil, absent: [String] = [])
        throws(ProtocolError) -> JSONValue
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
        let session = ActiveSession(machine: nil, meetingID: meetingID, start: loop.now())
        if !request.records { session.callAudio = .off("the meeting records no audio") }
        let (machine, effects) = SessionMachine.start(
            syncUp: syncUp,
            meetingID: meetingID,
            startDate: state.now(),
            records: request.records,
            recordsCall: request.recordsCall,
            transcribes: request.transcribes,
            playsCue: settings.cueDeviceName != nil,
            warnings: request.warnings,
            roster: roster
        )
        session.machine = machine
        active = session
        // The journal refers to the sync-up: make sure the sync-up itself is on disk too.
        state.flush()
        logger.info("started a meeting of \"\(syncUp.title)\"", .syncUp(syncUp.id), .meeting(meetingID))
        // The machine starts the recording, the recognizer and the cue, then the timer and the first turn.
        perform(session.machine.timing(effects, at: elapsed(session)), in: session)
        guard case .object(var reply) = sessionJSON(session) else { return .null }
        reply["warnings"] = .array(session.machine.startWarnings.map(JSONValue.string))
        return .object(reply)
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
    private func handle(_ event: SessionMachine.Event, in session: ActiveSession) {
        perform(session.machine.handle(event, atNanoseconds: elapsed(session)), in: session)
    }

    /// A voice matched by the speaker encoder (`VoiceService`), for the running meeting.
    func voiceHeard(_ evidence: VoiceEvidence, in meeting: Meeting.ID) {
        guard let session = active, session.meetingID == meeting else { return }
        handle(.voiceHeard(evidence), in: session)
    }

    /// The meeting's time: seconds (of audio) since it started.
    private func now(_ session: ActiveSession) -> Double { session.elapsedSeconds(now: loop.now()) }

    /// The meeting's time in nanoseconds, the machine's clock.
    private func elapsed(_ session: ActiveSession) -> Int64 { (loop.now() - session.start).nanoseconds }

    // MARK: - Sync-up changes

    /// The session's sync-up was edited (or replaced by an outside edit): attendees and duration apply from the next tick.
    func syncUpChanged(_ syncUp: SyncUp) {
        guard let session = active, session.machine.syncUp.id == syncUp.id, session.machine.syncUp != syncUp else {
            return
        }
        handle(.syncUpEdited(syncUp), in: session)
    }

    /// Another program's edit of sync-ups.json no longer has the running meeting's sync-up. The meeting goes
    /// on (the machine keeps its copy of the sync-up) and is saved with the sync-up restored.
    func syncUpRemovedByOutsideEdit() {
        guard let session = active else { return }
        state.warn(
            "another program's edit of sync-ups.json removed \"\(session.machine.syncUp.title)\" while its meeting is being recorded; the meeting goes on, and is saved with the sync-up restored"
        )
    }

    func syncUpDeleted(_ id: SyncUp.ID) {
        guard let session = active, session.machine.syncUp.id == id else { return }
        logger.notice(
            "the sync-up of the running meeting was deleted; discarding the meeting", .syncUp(id),
            .meeting(session.meetingID))
        handle(.syncUpDeleted, in: session)
    }

    /// What ends the wait at shutdown early: a descriptor that becomes readable when it may have happened
    /// (the daemon's signalfd), and the check (a second SIGTERM or SIGINT, as swift-service-lifecycle does).
    struct ShutdownInterrupt {
        var descriptor: FileDescriptor
        var hasHappened: () -> Bool
    }

    /// The daemon is stopping: the machine saves the meeting so far, flagged as interrupted. The loop no
    /// longer runs, so this waits here for the helpers' reports (the recording's end, the recognizer's last
    /// words) until the machine is done or its shorter settle timeout passes, or until `interrupt` happens:
    /// then the meeting is saved at once with what the recognizer gave so far.
    func shutDown(interrupt: ShutdownInterrupt? = nil) {
        defer {
            // What is still being cleaned up (a meeting saved just before, its details being written) ends
            // before the process does, and its report is handled (removing that meeting's journal).
            cleanup.finish()
            drainMailboxNow()
        }
        guard let session = active else { return }
        logger.notice("saving the running meeting before stopping", .meeting(session.meetingID))
        handle(.daemonStopping, in: session)
        while active === session {
            if let interrupt, interrupt.hasHappened() {
                logger.warning(
                    "asked again to stop: saving the meeting now, without waiting for the recognizer's last words",
                    .meeting(session.meetingID))
                handle(.settleTimedOut, in: session)
                break
            }
            let remaining = (session.settleDeadline?.instant ?? loop.now()) - loop.now()
            guard remaining > .zero else {
                settleTimedOut(session)
                break
            }
            if mailbox.wait(timeout: remaining, orUntilReadable: interrupt?.descriptor) { drainMailboxNow() }
        }
    }

    // MARK: - Effects

    private func perform(_ effects: [SessionMachine.Effect], in session: ActiveSession) {
        for effect in effects {
            switch effect {
            case .publish(let notification):
                publish(notification, session)
            case .warn(let text):
                logger.warning(text, .syncUp(session.machine.syncUp.id), .meeting(session.meetingID))
                publish(.error(text), session)
            case .startRecorder(let call):
                handle(startRecorder(session, call: call), in: session)
            case .startRecognizer:
                handle(startRecognizer(session), in: session)
            case .startCue:
                guard let cueDevice = settings.cueDeviceName else { continue }
                let meetingID = session.meetingID
                session.cue = try? CuePlayer(deviceName: cueDevice) { [mailbox] error in
                    mailbox.post(.cueFailed(error, meetingID))
                }
            case .beginTurn(_, let speaker, let start):
                // The recognizer ends its utterance where the turn starts.
                guard let speaker else { continue }  // a sync-up without attendees (an outside edit) has no turns
                session.recognition?.turn(Int64(start * Double(AudioFormat.sampleRate)), speaker)
            case .playCue:
                session.cue?.play()
            case .startTimer, .stopTimer:
                break  // the machine's own: `handle(_:atNanoseconds:)` gives `armTimer`/`disarmTimer` instead
            case .armTimer(let deadline):
                armTimer(session, at: deadline)
            case .disarmTimer:
                session.timer.map(loop.cancel)
                session.timer = nil
            case .writeJournal:
                writeJournal(session)
            case .flushJournal:
                flushJournal(session)
            case .stopRecorder:
                let recorder = session.recorder
                let callRecorder = session.callRecorder
                let mixer = session.mixer
                let meetingID = session.meetingID
                cleanup.run { [mailbox] in
                    recorder?.stop(keepsFile: true)
                    callRecorder?.stop(keepsFile: true)
                    // The recognizer hears the last of both before it is told to finish.
                    mixer?.flush()
                    mailbox.post(.recorderStopped(meetingID))
                }
            case .finishRecognizer:
                session.recognition?.finish()
            case .cancelRecognizer:
                // Not left running (an external engine in its own process group would outlive the daemon).
                session.recognition?.cancel()
                session.recognition = nil
            case .armSettleTimeout(let deadline):
                let timeout = deadline == .saving ? settings.settleTimeout : settings.shutdownSettleTimeout
                armSettleTimeout(session, after: timeout)
            case .cancelSettleTimeout:
                session.settleTimer.map(loop.cancel)
                session.settleTimer = nil
                session.settleDeadline = nil
            case .saveMeeting(let meeting, let record, let syncUp):
                saveMeeting(meeting, record, of: syncUp, in: session)
            case .discardMeeting:
                // Logged as a start and a save are: the log then says where every meeting went.
                logger.info(
                    "discarded a meeting of \"\(session.machine.syncUp.title)\"", .syncUp(session.machine.syncUp.id),
                    .meeting(session.meetingID))
                session.discardsAudio = true
                // Lists `meetings/` for temporary files: on the clean-up worker, before `finish` queues the
                // recorders' stop there, the order it had on the loop.
                let (directory, meetingID) = (state.dataDirectory, session.meetingID)
                cleanup.run { directory.removeSidecars(of: meetingID) }
                journals.remove(meetingID)  // after a write that may still be in progress
            case .finish:
                finish(session)
            }
        }
    }

    /// `startRecorder`: the microphone (through the sound server when it follows the default there), the call
    /// if asked for and there is one, and the mixer that gives the recognizer both.
    private func startRecorder(_ session: ActiveSession, call: Bool) -> SessionMachine.Event {
        var warnings: [String] = []
        // `meetings/` (or the whole directory) may have been removed while the daemon ran: the audio and
        // the journal go there, so it comes back as the store brings back the directory itself.
        try? state.dataDirectory.create()
        startCallRecorder(session, wanted: call, warnings: &warnings)
        let server = settings.soundServer?.snapshot != nil ? settings.serverCaptureDevice : nil
        session.microphoneThroughServer =
            settings.audioDeviceName == "default" && server != nil && settings.callAudio != .off
        let relay = session.relay
        let mixer = session.mixer
        let meetingID = session.meetingID
        do {
            session.recorder = try MeetingRecorder(
                device: session.microphoneThroughServer ? server! : settings.captureDevice,
                deviceName: session.microphoneThroughServer ? CaptureDevice.defaultSource : settings.audioDeviceName,
                wavPath: state.dataDirectory.sidecar(meetingID, MeetingFiles.audio),
                start: session.start,
                onTrouble: { [mailbox] trouble in mailbox.post(.recorder(trouble, meetingID)) },
                onAudio: { chunk in
                    if let mixer {
                        mixer.feed(0, chunk.bytes, startFrame: chunk.startFrame)
                    } else {
                        relay.feed(chunk.bytes, chunk.startFrame)
                    }
                }
            )
        } catch {
            session.audioError = error.description
            // The call alone is not a meeting's recording.
            session.callRecorder?.stop(keepsFile: false)
            session.callRecorder = nil
            session.mixer = nil
            return .recorderFailedToStart(error.description, warnings: warnings)
        }
        let listener = voices?.begin(meetingID, attendees: session.machine.syncUp.attendees) { [session] in
            session.machine.record.turns
        }
        session.relay.voice.withLock { $0 = listener }
        if let source = session.callRecorder?.statistics.capture.device,
            source == session.recorder?.statistics.capture.device
        {
            // `--call-audio` naming the default microphone: recorded twice, and the call not at all.
            warnings.append(
                "the call's source \(source) is the microphone itself: the call is not recorded (syncupsctl devices lists the monitors)"
            )
        }
        return .recorderStarted(warnings: warnings)
    }

    /// `startRecognizer`: the configured engine (the one the request was checked against).
    private func startRecognizer(_ session: ActiveSession) -> SessionMachine.Event {
        guard let recognizer = settings.recognizer else {
            return .recognizerFailedToStart("no speech engine is available")
        }
        let meetingID = session.meetingID
        do {
            session.recognition = try recognizer.start { [mailbox] event in
                mailbox.post(.recognizer(event, meetingID))
            }
        } catch {
            return .recognizerFailedToStart("\(recognizer.name) did not start: \(error)")
        }
        session.engineName = recognizer.name
        return .recognizerStarted
    }

    /// The one timer: `timerTicked` at `deadline` (the machine's nanoseconds); the machine says what is due.
    private func armTimer(_ session: ActiveSession, at deadline: Int64) {
        session.timer.map(loop.cancel)
        session.timer = loop.schedule(at: MonotonicInstant(nanoseconds: session.start.nanoseconds + deadline)) {
            [unowned self, session] in
            session.timer = nil
            guard active === session else { return }
            handle(.timerTicked, in: session)
        }
    }

    private func armSettleTimeout(_ session: ActiveSession, after timeout: Duration) {
        session.settleTimer.map(loop.cancel)
        let deadline = loop.now() + timeout
        session.settleDeadline = (deadline, timeout)
        session.settleTimer = loop.schedule(at: deadline) { [unowned self, session] in
            session.settleTimer = nil
            guard active === session else { return }
            settleTimedOut(session)
        }
    }

    /// The wait armed by `armSettleTimeout` is over (on the loop, or in the wait at shutdown).
    private func settleTimedOut(_ session: ActiveSession) {
        let timeout = session.settleDeadline?.timeout ?? .zero
        logger.warning(
            "the recognizer did not finish within \(timeout); saving without its last words",
            .meeting(session.meetingID))
        handle(.settleTimedOut, in: session)
    }

    private func finish(_ session: ActiveSession) {
        session.timer.map(loop.cancel)
        session.settleTimer.map(loop.cancel)
        session.journalTimer.map(loop.cancel)
        let recorder = session.recorder
        let callRecorder = session.callRecorder
        let recognition = session.recognition
        let cue = session.cue
        let keepsAudio = !session.discardsAudio
        session.recognition = nil
        // A recognizer still running here (the meeting was discarded) is of no use any more: stopped, not
        // left to run on in its own process group.
        recognition?.finish()
        recognition?.cancel()
        cleanup.run {
            recorder?.stop(keepsFile: keepsAudio)
            callRecorder?.stop(keepsFile: keepsAudio)
            cue?.stop()
        }
        // After the recorder's stop (the same worker, in order): the encoder has heard the last audio.
        voices?.end(session.meetingID, cleanup: cleanup)
        if active === session { active = nil }
    }

    // MARK: - Messages from the helper threads

    private func receive(_ message: Message) {
        switch message {
        case .recorder(let trouble, let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            let text: String
            switch trouble {
            case .capture(.overrun(let count)): text = "audio overrun (\(count) so far): some audio was lost"
            case .capture(.disconnected(let error)): text = "the microphone went away (\(error)); retrying every second"
            case .capture(.reconnected): text = "the microphone is back"
            case .capture(.switched(let device)): text = "the microphone is now \(device), the new default"
            case .capture(.dropped(let frames)): text = "the audio writer fell behind: \(frames) frames dropped"
            case .writeFailed(let error): text = "writing the meeting's audio failed: \(error); recording goes on"
            case .writeRecovered: text = "writing the meeting's audio works again"
            }
            logger.throttled(.warning, "audio.microphone", text, .meeting(meeting))
            handle(.audioTrouble(text), in: session)
        case .callRecorder(let trouble, let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            let text =
                switch trouble {
                case .capture(.overrun(let count)): "call audio overrun (\(count) so far): some audio was lost"
                case .capture(.disconnected(let error)):
                    "the call audio went away (\(error)); retrying every second, silence meanwhile"
                case .capture(.reconnected): "the call audio is back"
                case .capture(.switched(let device)): "the call audio follows the new default output: \(device)"
                case .capture(.dropped(let frames)): "the call audio writer fell behind: \(frames) frames dropped"
                case .writeFailed(let error): "writing the call audio failed: \(error); recording goes on"
                case .writeRecovered: "writing the call audio works again"
                }
            logger.throttled(.warning, "audio.call", text, .meeting(meeting))
            handle(.audioTrouble(text), in: session)
        case .recorderStopped(let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            handle(.recorderStopped, in: session)
        case .recognizer(let event, let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            receive(event, in: session)
        case .cueFailed(let error, let meeting):
            guard let session = active, session.meetingID == meeting, !session.hasReportedCueFailure else { return }
            session.hasReportedCueFailure = true
            let text = "the speaker-change cue did not play: \(error)"
            logger.warning(text, .meeting(meeting))
            handle(.audioTrouble(text), in: session)
        case .detailsWritten(let meeting, let error):
            detailsWritten(meeting, error: error)
        case .journalFailed(let meeting, let error):
            logger.throttled(.warning, "journal", "cannot write the meeting journal: \(error)", .meeting(meeting))
            journalErrors[meeting] = error.description
            guard let session = active, session.meetingID == meeting else { return }
            handle(.journalFailed(error.description), in: session)
        }
    }

    private func receive(_ event: RecognizerEvent, in session: ActiveSession) {
        switch event {
        case .result(let result):
            let speech = RecognizedSpeech(
                isFinal: result.kind == .final, text: result.text, words: result.words, start: result.start,
                end: result.end)
            handle(.speechRecognized(speech), in: session)
        case .ready:
            guard !session.isSpeechReady else { return }
            session.isSpeechReady = true
            publish(.updated, session)  // `session start` waits for this (or an error) before it returns
        case .failed(let message):
            logger.warning(
                "speech recognition failed: \(message); the meeting goes on without a transcript",
                .meeting(session.meetingID))
            session.recognition = nil  // gone already: nothing to cancel
            session.speechError = "speech recognition failed: \(message)"
            handle(.speechFailed("speech recognition failed: \(message)"), in: session)
        case .finished:
            handle(.recognizerFinished, in: session)
        case .log(let line):
            logger.info("speech: \(line)", .meeting(session.meetingID))
        case .fallingBehind(let seconds):
            let text = "speech recognition is \(Int(seconds)) s behind the meeting"
            logger.throttled(.warning, "speech.behind", text, .meeting(session.meetingID))
            handle(.audioTrouble(text), in: session)
        case .dropped(let seconds):
            let text =
                "speech recognition could not keep up: \(String(format1: seconds)) s of audio were not transcribed"
            logger.throttled(.warning, "speech.dropped", text, .meeting(session.meetingID))
            handle(.audioTrouble(text), in: session)
        }
    }

    /// Handles what is already in the mailbox now, without the loop (at shutdown).
    private func drainMailboxNow() {
        for message in mailbox.takeAll() { receive(message) }
    }

}
