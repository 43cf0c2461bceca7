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
    /// How sessions record and transcribe; fixed at start-up from the configuration.
    struct Settings {
        var captureDevice: CaptureDevice = .alsa
        var audioDeviceName = "default"
        /// Nil plays no cue (`--no-cue`).
        var cueDeviceName: String? = "default"
        /// Nil when no speech engine is available.
        var recognizer: SpeechRecognizer?
        /// How long saving waits for the recognizer's last words before giving up on them.
        var settleTimeout: Duration = .seconds(20)
        /// The same wait when the daemon is stopping: shorter, well inside systemd's 30 s to stop.
        var shutdownSettleTimeout: Duration = .seconds(5)
    }

    /// What the helper threads report.
    enum Message: Sendable {
        case recorder(MeetingRecorder.Trouble, Meeting.ID)
        case recorderStopped(Meeting.ID)
        case recognizer(RecognizerEvent, Meeting.ID)
        case cueFailed(ALSAError, Meeting.ID)
        /// A saved meeting's details file was written (or failed to be, with the error).
        case detailsWritten(Meeting.ID, error: String?)
        /// The meeting's journal could not be written.
        case journalFailed(Meeting.ID, SystemError)
    }

    private let loop: EventLoop
    private let state: DaemonState
    private let publishEvent: PublishEvent
    private let logger: Logger
    private let settings: Settings
    private let mailbox: Mailbox<Message>
    /// Blocking clean-up (joining the audio and cue threads, writing a meeting's details) off the loop.
    private let cleanup: SerialWorker
    /// The running meeting's journal, written off the loop.
    private let journals: JournalWriter
    private var active: ActiveSession?

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
            for message in messages { receive(message) }
        }
    }

    /// The sync-up being recorded, if any.
    var syncUpID: SyncUp.ID? { active?.machine.syncUp.id }
    var engineName: String? { settings.recognizer?.name }

    /// `recording "Design" 03:12 · Blob Jr 2/6` for systemd's status line, or nil when no session runs.
    var statusLine: String? {
        guard let machine = active?.machine else { return nil }
        let verb = machine.phase == .running ? "recording" : machine.phase.rawValue
        let speaker = machine.speaker.map { $0.name.isEmpty ? "(no name)" : $0.name } ?? "nobody"
        return
            "\(verb) \"\(machine.syncUp.title)\" \(DurationText.clock(machine.secondsElapsed)) · \(speaker) \(machine.speakerIndex + 1)/\(machine.syncUp.attendees.count)"
    }

    /// The running meeting's whole transcript so far (settled text, then the provisional tail), or nil.
    var transcript: String? { active?.machine.transcript }

    /// The session object, or null when no session runs.
    var json: JSONValue { active.map(sessionJSON) ?? .null }

    // MARK: - Requests

    func start(syncUp text: String, audio: Bool?, transcribe: Bool?) throws(ProtocolError) -> JSONValue {
        if let active {
            throw ProtocolError(
                .sessionActive,
                "a meeting of \"\(active.machine.syncUp.title)\" is being recorded; end it first (session.end)")
        }
        let syncUp = state.syncUps[try state.index(of: text)]
        let recordsAudio = audio ?? true
        let wantsTranscript = transcribe ?? recordsAudio
        if wantsTranscript && !recordsAudio {
            throw .invalidArgument("transcribing needs audio: pass \"transcribe\": false with \"audio\": false")
        }
        if wantsTranscript && settings.recognizer == nil {
            throw ProtocolError(
                .speechUnavailable,
                "no speech engine is available (install pocketsphinx-en-us or set --speech-command); start with \"transcribe\": false to record without a transcript"
            )
        }

        let meetingID = Meeting.ID(state.uuid())
        let session = ActiveSession(machine: nil, meetingID: meetingID, start: loop.now())
        var warnings: [String] = []
        if recordsAudio {
            do {
                session.recorder = try MeetingRecorder(
                    device: settings.captureDevice,
                    deviceName: settings.audioDeviceName,
                    wavPath: state.dataDirectory.sidecar(meetingID, MeetingFiles.audio),
                    onTrouble: { [mailbox] trouble in mailbox.post(.recorder(trouble, meetingID)) },
                    onAudio: { [relay = session.relay] chunk in relay.feed(chunk.bytes, chunk.startFrame) }
                )
            } catch {
                warnings.append("recording without audio: \(error)")
                session.audioError = error.description
            }
        }
        var transcribes = false
        if wantsTranscript, session.recorder != nil, let recognizer = settings.recognizer {
            do {
                session.recognition = try recognizer.start { [mailbox] event in
                    mailbox.post(.recognizer(event, meetingID))
                }
                session.runningRecognizer = session.recognition
                transcribes = true
            } catch {
                warnings.append("recording without a transcript: \(recognizer.name) did not start: \(error)")
            }
        } else if wantsTranscript {
            warnings.append("recording without a transcript: there is no audio to transcribe")
        }
        if let cueDevice = settings.cueDeviceName {
            session.cue = try? CuePlayer(deviceName: cueDevice) { [mailbox] error in
                mailbox.post(.cueFailed(error, meetingID))
            }
        }

        let (machine, effects) = SessionMachine.start(
            syncUp: syncUp,
            meetingID: meetingID,
            startDate: state.now(),
            transcribes: transcribes
        )
        session.machine = machine
        active = session
        // The journal refers to the sync-up: make sure the sync-up itself is on disk too.
        state.flush()
        writeJournal(session, isFirst: true)
        logger.info("started a meeting of \"\(syncUp.title)\"", .syncUp(syncUp.id), .meeting(meetingID))
        perform(effects, in: session)
        for warning in warnings {
            logger.warning(warning, .syncUp(syncUp.id), .meeting(meetingID))
            publish(.error(warning), session)
        }
        guard case .object(var reply) = sessionJSON(session) else { return .null }
        reply["warnings"] = .array(warnings.map(JSONValue.string))
        return .object(reply)
    }

    /// `session.next`, `pause`, `resume`, `end`: the session object after the request (for `end`, the outcome).
    func request(_ event: SessionMachine.Event) throws(ProtocolError) -> JSONValue {
        guard let session = active else {
            throw ProtocolError(.noSession, "no meeting is being recorded; start one with session.start")
        }
        do {
            let effects = try session.machine.handle(event)
            perform(effects, in: session)
        } catch {
            throw ProtocolError(.invalidState, error.reason)
        }
        return sessionJSON(session)
    }

    // MARK: - Sync-up changes

    /// The session's sync-up was edited (or replaced by an outside edit): attendees and duration apply from the next tick.
    func syncUpChanged(_ syncUp: SyncUp) {
        guard let session = active, session.machine.syncUp.id == syncUp.id, session.machine.syncUp != syncUp else {
            return
        }
        perform((try? session.machine.handle(.syncUpEdited(syncUp))) ?? [], in: session)
    }

    func syncUpDeleted(_ id: SyncUp.ID) {
        guard let session = active, session.machine.syncUp.id == id else { return }
        logger.notice(
            "the sync-up of the running meeting was deleted; discarding the meeting", .syncUp(id),
            .meeting(session.meetingID))
        perform((try? session.machine.handle(.syncUpDeleted)) ?? [], in: session)
    }

    /// The daemon is stopping: save the meeting so far, synchronously, flagged as interrupted.
    func shutDown() {
        defer {
            // What is still being cleaned up (a meeting saved just before, its details being written) ends
            // before the process does, and its report is handled (removing that meeting's journal).
            cleanup.finish()
            drainMailboxNow()
        }
        guard let session = active else { return }
        logger.notice("saving the running meeting before stopping", .meeting(session.meetingID))
        session.timer.map(loop.cancel)
        // The recording stops first, so the recognizer has all the audio; then it gets a few seconds to turn the
        // last utterance into settled text. (Its results, or a save that was already settling, come through
        // the mailbox while it is waited for.)
        session.recorder?.stop(keepsFile: true)
        session.recognition?.finish()
        session.recognition = nil
        let deadline = loop.now() + settings.shutdownSettleTimeout
        while active === session && session.runningRecognizer != nil
            && mailbox.wait(timeout: deadline - loop.now())
        {
            drainMailboxNow()
        }
        drainMailboxNow()
        guard active === session else { return }
        if let recognizer = session.runningRecognizer {
            logger.warning(
                "the recognizer did not finish within \(settings.shutdownSettleTimeout); saving without its last words",
                .meeting(session.meetingID))
            recognizer.cancel()
        }
        let meeting = session.machine.meeting
        state.insertMeeting(meeting, into: session.machine.syncUp.id)
        let error = Self.writeDetails(
            details(of: session, meeting: meeting, isInterrupted: true), in: state.dataDirectory)
        detailsWritten(meeting.id, error: error)
        session.cue?.stop()
        active = nil
    }

    // MARK: - Effects

    private func perform(_ effects: [SessionMachine.Effect], in session: ActiveSession) {
        for effect in effects {
            switch effect {
            case .publish(let notification):
                publish(notification, session)
            case .beginTurn(let index):
                let time = session.elapsedSeconds(now: loop.now())
                if !session.turns.isEmpty { session.turns[session.turns.count - 1].end = time }
                let attendees = session.machine.syncUp.attendees
                let speaker =
                    attendees.indices.contains(index) ? attendees[index] : Attendee(id: Attendee.ID(UUID()), name: "")
                session.turns.append(SpeakerTurn(speaker: speaker, start: time))
                session.recognition?.turn(Int64(time * Double(AudioFormat.sampleRate)), speaker)
            case .playCue:
                session.cue?.play()
            case .startTimer:
                session.schedule.resume(at: loop.now().nanoseconds)
                armTimer(session)
            case .stopTimer:
                session.schedule.pause(at: loop.now().nanoseconds)
                session.timer.map(loop.cancel)
                session.timer = nil
            case .stopTranscribing:
                session.recognition?.finish()
                session.recognition = nil
            case .settle:
                settle(session)
            case .saveMeeting(let meeting):
                if !session.turns.isEmpty {
                    session.turns[session.turns.count - 1].end = session.elapsedSeconds(now: loop.now())
                }
                state.insertMeeting(meeting, into: session.machine.syncUp.id)
                let details = details(of: session, meeting: meeting, isInterrupted: false)
                let directory = state.dataDirectory
                state.detailsBeingWritten[meeting.id] = details
                cleanup.run { [mailbox] in
                    let error = Self.writeDetails(details, in: directory)
                    mailbox.post(.detailsWritten(meeting.id, error: error))
                }
            case .discardMeeting:
                session.discardsAudio = true
                state.dataDirectory.removeSidecars(of: session.meetingID)
                journals.remove(session.meetingID)  // after a write that may still be in progress
            case .finish:
                finish(session)
            }
        }
    }

    private func armTimer(_ session: ActiveSession) {
        session.timer.map(loop.cancel)
        guard let deadline = session.schedule.nextDeadline else { return }
        session.timer = loop.schedule(at: MonotonicInstant(nanoseconds: deadline)) { [unowned self, session] in
            session.timer = nil
            let due = session.schedule.ticksDue(at: loop.now().nanoseconds)
            for _ in 0..<due where active === session {
                perform((try? session.machine.handle(.timerTicked)) ?? [], in: session)
            }
            if active === session && session.machine.phase == .running { armTimer(session) }
        }
    }

    /// Stops the recording, lets the recognizer finish, then tells the machine the transcript is settled.
    private func settle(_ session: ActiveSession) {
        session.settleTimer = loop.schedule(after: settings.settleTimeout) { [unowned self, session] in
            guard active === session else { return }
            logger.warning(
                "the recognizer did not finish within \(settings.settleTimeout); saving without its last words",
                .meeting(session.meetingID))
            // Not left running (an external engine in its own process group would outlive the daemon).
            session.runningRecognizer?.cancel()
            session.runningRecognizer = nil
            settled(session)
        }
        let recorder = session.recorder
        let meetingID = session.meetingID
        cleanup.run { [mailbox] in
            recorder?.stop(keepsFile: true)
            mailbox.post(.recorderStopped(meetingID))
        }
    }

    private func settled(_ session: ActiveSession) {
        session.settleTimer.map(loop.cancel)
        session.settleTimer = nil
        perform((try? session.machine.handle(.settled)) ?? [], in: session)
    }

    private func finish(_ session: ActiveSession) {
        session.timer.map(loop.cancel)
        session.settleTimer.map(loop.cancel)
        let recorder = session.recorder
        let recognition = session.recognition
        let cue = session.cue
        let keepsAudio = !session.discardsAudio
        session.recognition = nil
        cleanup.run {
            recorder?.stop(keepsFile: keepsAudio)
            recognition?.finish()
            cue?.stop()
        }
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
            case .capture(.dropped(let frames)): text = "the audio writer fell behind: \(frames) frames dropped"
            case .writeFailed(let error): text = "writing the meeting's audio failed: \(error); recording goes on"
            case .writeRecovered: text = "writing the meeting's audio works again"
            }
            logger.warning(text, .meeting(meeting))
            perform((try? session.machine.handle(.audioTrouble(text))) ?? [], in: session)
        case .recorderStopped(let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            if let recognition = session.recognition {
                recognition.finish()
                session.recognition = nil
            }
            // A recognizer still running settles the meeting with its `.finished`; `finish` must not end it again.
            if session.runningRecognizer == nil { settled(session) }
        case .recognizer(let event, let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            handle(event, in: session)
        case .cueFailed(let error, let meeting):
            guard let session = active, session.meetingID == meeting, !session.hasReportedCueFailure else { return }
            session.hasReportedCueFailure = true
            let text = "the speaker-change cue did not play: \(error)"
            logger.warning(text, .meeting(meeting))
            perform((try? session.machine.handle(.audioTrouble(text))) ?? [], in: session)
        case .detailsWritten(let meeting, let error):
            detailsWritten(meeting, error: error)
        case .journalFailed(let meeting, let error):
            logger.warning("cannot write the meeting journal: \(error)", .meeting(meeting))
        }
    }

    private func handle(_ event: RecognizerEvent, in session: ActiveSession) {
        switch event {
        case .result(let result):
            session.transcript.add(kind: result.kind == .final, text: result.text, words: result.words)
            if result.kind == .final {
                // Attributed once, as it settles: the turns up to now are all the turns its words can be in.
                session.segments += Attribution.segments(utterances: [result.words], turns: session.turns)
            }
            perform((try? session.machine.handle(.transcriptChanged(session.transcript.text))) ?? [], in: session)
            if result.kind == .final { writeJournal(session) }
        case .failed(let message):
            logger.warning(
                "speech recognition failed: \(message); the meeting goes on without a transcript",
                .meeting(session.meetingID))
            session.recognition = nil
            session.runningRecognizer = nil
            perform(
                (try? session.machine.handle(.speechFailed("speech recognition failed: \(message)"))) ?? [], in: session
            )
            if session.machine.pendingEnding != nil { settled(session) }
        case .finished:
            session.runningRecognizer = nil
            if session.machine.pendingEnding != nil { settled(session) }
        case .log(let line):
            logger.info("speech: \(line)", .meeting(session.meetingID))
        case .fallingBehind(let seconds):
            let text = "speech recognition is \(Int(seconds)) s behind the meeting"
            logger.warning(text, .meeting(session.meetingID))
            perform((try? session.machine.handle(.audioTrouble(text))) ?? [], in: session)
        case .dropped(let seconds):
            let text =
                "speech recognition could not keep up: \(String(format1: seconds)) s of audio were not transcribed"
            logger.warning(text, .meeting(session.meetingID))
            perform((try? session.machine.handle(.audioTrouble(text))) ?? [], in: session)
        }
    }

    /// Handles what is already in the mailbox now, without the loop (at shutdown).
    private func drainMailboxNow() {
        for message in mailbox.takeAll() { receive(message) }
    }

    // MARK: - Output

    private func publish(_ notification: SessionMachine.Notification, _ session: ActiveSession) {
        let name: String
        var data = JSONObject()  // after the session object, which is built only for subscribers
        switch notification {
        case .started: name = "started"
        case .tick: name = "tick"
        case .speaker: name = "speaker"
        case .paused: name = "paused"
        case .resumed: name = "resumed"
        case .ending: name = "ending"
        case .updated: name = "updated"
        case .transcript: name = "transcript"
        case .error(let message):
            name = "error"
            data.append("message", .string(message))
        case .ended(let ending):
            name = "ended"
            switch ending {
            case .finished(let meeting), .saved(let meeting):
                data.append("outcome", .string("saved"))
                data.append("reason", .string(ending == .finished(meeting) ? "time is up" : "ended"))
                data.append("meeting", WireFormat.meeting(meeting, includesTranscript: true))
            case .discarded:
                data.append("outcome", .string("discarded"))
                data.append("reason", .string("ended"))
            case .syncUpDeleted:
                data.append("outcome", .string("discarded"))
                data.append("reason", .string("the sync-up was deleted"))
            }
        }
        publishEvent(.session, "session." + name) { [self] in
            .object(JSONObject([JSONObject.Member(key: "session", value: sessionJSON(session))] + data.members))
        }
    }

    private func sessionJSON(_ session: ActiveSession) -> JSONValue {
        var audio = JSONObject()
        audio.append("device", .string(settings.audioDeviceName))
        if let recorder = session.recorder {
            let statistics = recorder.statistics
            audio.append("recording", .bool(statistics.capture.isDeviceOpen))
            audio.append("seconds", .double((statistics.writtenSeconds * 10).rounded() / 10))
            audio.append("overruns", .int(statistics.capture.overruns))
            audio.append("reconnects", .int(statistics.capture.reconnects))
            audio.append("error", .optional(statistics.writeError))
        } else {
            audio.append("recording", false)
            audio.append("error", .optional(session.audioError))
        }
        var transcription = JSONObject()
        transcription.append("engine", .optional(session.machine.isTranscribing ? settings.recognizer?.name : nil))
        transcription.append("partial", .string(session.transcript.partial))
        return WireFormat.session(session.machine, audio: .object(audio), transcription: .object(transcription))
    }

    // MARK: - Files

    private func writeJournal(_ session: ActiveSession, isFirst: Bool = false) {
        let journal = MeetingJournal(
            syncUp: session.machine.syncUp.id,
            title: session.machine.syncUp.title,
            theme: session.machine.syncUp.theme,
            durationSeconds: session.machine.durationSeconds,
            meeting: session.meetingID,
            date: session.machine.startDate,
            transcript: session.transcript.finalText,
            hasAudio: session.recorder != nil,
            attendees: session.machine.syncUp.attendees,
            segments: session.segments
        )
        if isFirst { journals.writeFirst(journal) } else { journals.write(journal) }
    }

    private func details(of session: ActiveSession, meeting: Meeting, isInterrupted: Bool) -> MeetingDetails {
        MeetingDetails(
            meeting: meeting.id,
            syncUp: session.machine.syncUp.id,
            isInterrupted: isInterrupted,
            attendees: session.machine.syncUp.attendees,
            segments: session.segments
        )
    }

    /// Writes `meetings/<id>.json` (with two fsyncs: on the clean-up thread, except at shutdown); returns
    /// the error, if any.
    private static func writeDetails(_ details: MeetingDetails, in directory: DataDirectory) -> String? {
        do {
            try details.write(in: directory)
            return nil
        } catch {
            return error.description
        }
    }

    /// The last step of saving a meeting. Its journal (what a crash recovers the meeting from) goes only once
    /// the details are written and the meeting is in sync-ups.json: a crash before that, or a write that
    /// keeps failing, still finds the journal and recovers the meeting. (A discarded meeting's journal went
    /// with its other files.)
    private func detailsWritten(_ meeting: Meeting.ID, error: String?) {
        state.detailsBeingWritten[meeting] = nil
        if let error { logger.error("cannot write the meeting's details: \(error)", .meeting(meeting)) }
        state.whenSaved { [journals] in journals.remove(meeting) }
    }

    /// Finishes the journal writes still queued (the last removals come from the store's final write); call
    /// after the store is closed.
    func close() {
        journals.finish()
    }
}

/// Everything one running meeting holds.
final class ActiveSession {
    var machine: SessionMachine!
    let meetingID: Meeting.ID
    let start: MonotonicInstant
    var schedule: TickSchedule
    var timer: EventLoop.Timer?
    var settleTimer: EventLoop.Timer?
    var recorder: MeetingRecorder?
    var audioError: String?
    /// The recognizer's input; also reachable from the audio writer thread through `relay`.
    var recognition: RecognitionStream? {
        didSet { relay.stream.withLock { $0 = recognition } }
    }
    let relay = RecognitionRelay()
    var cue: CuePlayer?
    var hasReportedCueFailure = false
    var discardsAudio = false
    /// The recognizer from its start until its `.finished` or `.failed` (`recognition` goes as soon as it is
    /// told to finish): its last words may still come, and it is what to cancel when they are given up on.
    var runningRecognizer: RecognitionStream?
    var turns: [SpeakerTurn] = []
    var transcript = TranscriptAssembly()
    /// The attributed transcript, one utterance's segments added as each settles.
    var segments: [TranscriptSegment] = []

    init(machine: SessionMachine?, meetingID: Meeting.ID, start: MonotonicInstant) {
        self.machine = machine
        self.meetingID = meetingID
        self.start = start
        // Paused until the machine's first `startTimer`, which resumes it one second ahead.
        var schedule = TickSchedule(startingAt: start.nanoseconds)
        schedule.pause(at: start.nanoseconds)
        self.schedule = schedule
    }

    /// Seconds of meeting (and audio) time since the session started.
    func elapsedSeconds(now: MonotonicInstant) -> Double { (now - start).seconds }
}

/// Hands captured audio from the recorder's writer thread to the current recognizer, if any.
final class RecognitionRelay: Sendable {
    let stream = Mutex<RecognitionStream?>(nil)

    func feed(_ bytes: [UInt8], _ startFrame: Int64) {
        stream.withLock { $0 }?.feed(bytes, startFrame)
    }
}

extension String {
    init(format1 value: Double) {
        self = String((value * 10).rounded() / 10)
    }
}
