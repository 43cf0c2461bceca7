import FoundationEssentials

/// The recording session as a pure state machine: the SyncUps app's RecordMeeting reducer, with its bugs
/// fixed, and the whole of a meeting's lifecycle: the timer and the speakers, the transcript and who said
/// what, and the end (stopping the recording, letting the recognizer settle its last words, giving up on
/// it, saving). Facts in, effects out. It never reads a clock and never touches a file: the daemon's
/// `SessionController` feeds it events, with the meeting's time where a turn needs it, and performs the
/// effects it returns.
///
/// Requests a client makes can be refused: `request(_:atNanoseconds:)` throws. Everything else is a fact that
/// has already happened: `handle(_:atNanoseconds:)` never throws (a fact that no longer matters changes nothing).
public struct SessionMachine: Sendable, Equatable {
    /// Where the meeting is.
    public enum Phase: String, Sendable, Equatable {
        /// The timer counts.
        case running
        /// The timer is stopped (the app pauses while any alert shows); audio keeps recording.
        case paused
        /// `next` at the last speaker, or a save collecting the last words: waiting, timer stopped.
        case ending
    }

    /// How a meeting ends.
    public enum EndAction: String, Sendable, Equatable {
        case save
        case discard
    }

    /// What a client asks for; refused when it does not apply now.
    public enum Request: Sendable, Equatable {
        case next
        case pause
        case resume
        case end(EndAction)
        /// Marks an attendee (a name or an id, see `MeetingRoster`) absent for today: out of the rotation.
        case markAbsent(String)
        /// An attendee marked absent is here after all: back in the rotation among those still waiting.
        case markBack(String)
    }

    /// What happened: to the clock, the sync-up, the recording, the recognizer, the daemon.
    public enum Event: Sendable, Equatable {
        /// The recording asked for by `startRecorder` runs; `warnings` say what of it does not (the call).
        case recorderStarted(warnings: [String])
        /// The recording could not start (no microphone): the meeting goes on without audio.
        case recorderFailedToStart(String, warnings: [String])
        /// The speaker encoder asked for by `startVoiceListener` hears the recording.
        case voiceListenerStarted
        /// There is no speaker encoder (no voice model, or it did not start): words go to the floor alone.
        case voiceListenerUnavailable(String)
        /// The recognizer asked for by `startRecognizer` takes audio; `startedAhead`: it is the engine started
        /// before the meeting (a spare), taken at its start.
        case recognizerStarted(startedAhead: Bool)
        /// The recognizer could not start: the meeting goes on without a transcript.
        case recognizerFailedToStart(String)
        /// The recognizer said it is up: its start can no longer be what fails (`session start` waits for this).
        case recognizerReady
        /// One second of running time has passed.
        case timerTicked
        /// The sync-up was edited mid-meeting: renames show at once; the rotation follows removals and additions
        /// from the next turn (a removed speaker hands the floor on at once); the duration from the next tick.
        case syncUpEdited(SyncUp)
        /// The sync-up was deleted mid-meeting: the meeting is discarded.
        case syncUpDeleted
        /// The recognizer's latest result: a provisional tail, or settled text with its words.
        case speechRecognized(RecognizedSpeech)
        /// The speaker encoder matched the voice over a stretch of audio to an attendee, with confidence.
        case voiceHeard(VoiceEvidence)
        /// The recognizer failed; the meeting goes on without transcription, unless it was the engine started
        /// ahead and had given nothing yet (then a fresh one is started, once).
        case speechFailed(String)
        /// The recognizer gave its last words after `finishRecognizer`, and stopped.
        case recognizerFinished
        /// Audio trouble (capture or cue); reported, the meeting goes on.
        case audioTrouble(String)
        /// The meeting's journal (what a crash recovers it from) could not be written; said once a meeting.
        case journalFailed(String)
        /// The recording stopped after `stopRecorder`: its file is complete.
        case recorderStopped
        /// The settle timeout armed by `armSettleTimeout` passed: a save's or a stop's wait for the recording
        /// and the recognizer, or the capture devices' open deadline at the start (`SettleDeadline`).
        case settleTimedOut
        /// The daemon is stopping: save what there is, flagged as interrupted, within the shorter timeout.
        case daemonStopping
    }

    /// The call's side of the recording, as the daemon settled it from its configuration and the sound server
    /// before the start: the data the machine's `startRecorder` hands back.
    public enum CallSource: Sendable, Equatable {
        /// Not recorded: `--call-audio off`, `--no-call`, a meeting without audio.
        case off
        /// Asked for, but there is nothing to record it from; `warning`, when the meeting says so (a source
        /// asked for by name).
        case unavailable(warning: String?)
        /// Record this source of the sound server beside the microphone.
        case source(String)
    }

    /// Which wait `armSettleTimeout` starts.
    public enum SettleDeadline: Sendable, Equatable {
        /// An ordinary save: the recognizer gets the configured settle timeout.
        case saving
        /// The daemon is stopping: a few seconds, well inside systemd's time to stop.
        case stopping
        /// The capture devices' open at the start: a device that does not answer (hung in the kernel, a
        /// plug-in that waits forever) fails the recording once it passes, and the meeting starts without
        /// audio, as when the device is missing.
        case opening
    }

    /// How long each settle wait lasts, in nanoseconds: the daemon's configuration when the meeting started.
    public struct SettleTimeouts: Sendable, Equatable {
        public var saving: Int64
        public var stopping: Int64
        public var opening: Int64

        public init(saving: Int64 = 20_000_000_000, stopping: Int64 = 5_000_000_000, opening: Int64 = 10_000_000_000) {
            self.saving = saving
            self.stopping = stopping
            self.opening = opening
        }

        public subscript(_ deadline: SettleDeadline) -> Int64 {
            switch deadline {
            case .saving: saving
            case .stopping: stopping
            case .opening: opening
            }
        }
    }

    /// What the daemon must do, in the order returned: the jobs the effects queue on the clean-up worker run in
    /// that order. An effect whose fact the controller hands back at once (`startVoiceListener`, and
    /// `startRecognizer` without an engine) is the last of its list: that fact's effects are performed inside it.
    public enum Effect: Sendable, Equatable {
        /// Tell `session` subscribers; the daemon attaches the whole session object.
        case publish(Notification)
        /// Log this and tell `session` subscribers (as `session.error`): something the meeting goes on without.
        case warn(String)
        /// Start capturing the microphone (and the call from the sound server's source `call`, if any) into the
        /// meeting's files; `recorderStarted` or `recorderFailedToStart` follows.
        case startRecorder(call: String?)
        /// Start the speaker encoder on the recording's audio (it matches voices to this meeting's attendees);
        /// `voiceListenerStarted` or `voiceListenerUnavailable` follows.
        case startVoiceListener
        /// The recording has ended (queued on the clean-up worker after `stopRecorder` or `abandonRecorder`, so
        /// the encoder has heard the last audio): the speaker encoder finishes what it heard, and the voice
        /// profiles are written. `keepsLearning` is false when the meeting is discarded: what it taught is
        /// dropped, every profile put back as it was before the meeting (a discard saves nothing).
        case stopVoiceListener(keepsLearning: Bool)
        /// Start the recognizer on the recording's audio; `recognizerStarted` or `recognizerFailedToStart`
        /// follows.
        case startRecognizer
        /// Open the speaker-change cue (a cue that cannot play is reported when it is played).
        case startCue
        /// Close the cue opened by `startCue`: the meeting is over.
        case stopCue
        /// A new speaker has the floor from `at` (meeting time; the turn is recorded in `turns`): force an
        /// utterance boundary. `speaker` is nil when the sync-up has nobody at `speakerIndex`.
        case beginTurn(speakerIndex: Int, speaker: Attendee?, at: Double)
        /// Play the speaker-change cue (never at the meeting's end).
        case playCue
        /// Wake the machine with `timerTicked` at `at` (nanoseconds since the session started) and not before:
        /// the one timer, replacing any armed one.
        case armTimer(at: Int64)
        /// Cancel the armed timer.
        case disarmTimer
        /// Write the meeting's journal (what a crash recovers the meeting from) as the machine is now.
        case writeJournal
        /// Write the journal now, not within the second `writeJournal` allows: the last turn has ended, and a
        /// crash from here on must still find what the insights need.
        case flushJournal
        /// Stop capturing audio and complete the file; `recorderStopped` follows.
        case stopRecorder
        /// Stop capturing audio and delete the file (the meeting is discarded); no report follows.
        case abandonRecorder
        /// The recognizer has all the audio: let it settle its last words; `recognizerFinished` follows.
        case finishRecognizer
        /// Stop the recognizer now, without waiting for its last words (it failed, took too long, or the
        /// meeting was discarded): its input ends, and an external engine is killed.
        case cancelRecognizer
        /// Start the wait for the recording and the recognizer, replacing any armed one: `settleTimedOut` at
        /// `at` (nanoseconds since the session started, `settleDeadline`) unless cancelled.
        case armSettleTimeout(SettleDeadline, at: Int64)
        case cancelSettleTimeout
        /// Insert this meeting in the history of `syncUp` (as the meeting had it: its attendees and duration)
        /// and persist it now, with its details (from `record`) beside it.
        case saveMeeting(Meeting, MeetingRecord, of: SyncUp)
        /// Delete the meeting's audio and journal; nothing is saved.
        case discardMeeting
        /// The session is over, everything it ran stopped by the effects before: release what it held.
        case finish
    }

    /// The session events of protocol.md (`session.<name>`).
    public enum Notification: Sendable, Equatable {
        case started
        case tick
        case speaker
        case paused
        case resumed
        case ending
        case updated
        case transcript
        /// Segments attributed by the floor (or another voice) when their words came, and attributed again
        /// by the voice heard since, as they are now (`session.attribution`).
        case attributionCorrected([TranscriptSegment])
        case error(String)
        case ended(Ending)
    }

    /// How a session ended, for `session.ended`.
    public enum Ending: Sendable, Equatable {
        /// Time ran out and the meeting was saved.
        case finished(Meeting)
        /// `session.end save`.
        case saved(Meeting)
        /// The daemon stopped mid-meeting; what there was is saved.
        case interrupted(Meeting)
        /// `session.end discard`.
        case discarded
        /// The sync-up was deleted during its meeting.
        case syncUpDeleted
    }

    /// Where a part of the recording is in its life.
    public enum Part: Sendable, Equatable {
        /// Not used in this meeting (no audio, no transcription).
        case absent
        /// Asked to start; whether it did has not come yet.
        case starting
        case running
        /// Asked to stop; its last report has not come yet.
        case stopping
        case stopped
    }

    public private(set) var syncUp: SyncUp
    public let meetingID: Meeting.ID
    public let startDate: Date
    public private(set) var phase: Phase = .running
    public private(set) var secondsElapsed = 0
    /// The index in `roster.rotation` of whoever has the floor.
    public private(set) var speakerIndex = 0
    /// The meeting's own people: taken from the sync-up at the start, then following its edits by attendee id.
    public private(set) var roster: MeetingRoster
    /// Who had the floor when, and what was said: the transcript and its attribution, in one place.
    public private(set) var record: MeetingRecord
    /// The latest voice matched to an attendee: who is speaking now, beside who holds the floor. Voices never
    /// pass the floor: the timer alone does, as in the app.
    public private(set) var voiceHeard: VoiceEvidence?

    /// Who is heard speaking at `time`, if a voice was matched in the last 3.2 s (two windows of the encoder).
    public func speaking(at time: Double) -> Attendee? {
        guard let heard = voiceHeard, time - heard.end <= 3.2 else { return nil }
        return heard.speaker
    }
    public private(set) var isTranscribing: Bool
    public private(set) var recorder: Part
    public private(set) var recognizer: Part
    /// The recognizer said it is up (`recognizerReady`).
    public private(set) var isRecognizerReady = false
    /// Why the recognizer stopped mid-meeting (`transcription.error`), once it has.
    public private(set) var speechError: String?
    /// The running recognizer is the engine started ahead and has given no result since the meeting took it:
    /// if it fails now, it most likely died before it was taken (killed, out of memory) with its death not
    /// yet seen, and a fresh one is started (once) instead of the meeting going without a transcript.
    private var recognizerIsUntried = false
    /// The recognizer being started failed before its start was reported (its death came through first).
    private var recognizerFailedWhileStarting: String?
    /// The speaker encoder: started once the recording runs, stopped when the meeting is over.
    public private(set) var voiceListener: Part = .absent
    public private(set) var isOver = false
    /// Until the parts asked for at the start have said whether they run: no timer, no turn yet.
    public private(set) var isStarting = true
    /// What the meeting goes without, said when it started (the reply to `session.start` lists them).
    public private(set) var startWarnings: [String] = []
    /// Whether the meeting's subscribers were told that its journal cannot be written.
    public private(set) var hasReportedJournalFailure = false
    /// What the start still has to ask for.
    private var wantsTranscript: Bool
    private let playsCue: Bool
    /// Set while the save waits for the recording and the recognizer.
    public private(set) var pendingEnding: Ending?
    /// How the session ended, once it is over.
    public private(set) var ending: Ending?
    /// The settle timeout while it is armed (and must be cancelled when the parts are done first): which
    /// wait, since when (meeting time) the save has been waiting, and when it passes.
    private var armedSettle: ArmedSettle?
    private struct ArmedSettle: Equatable {
        var deadline: SettleDeadline
        var since: Double
        var at: Int64
    }
    /// How long the settle waits last.
    public let settleTimeouts: SettleTimeouts
    /// When the armed settle timeout passes (nanoseconds since the session started), and which wait it is:
    /// what the daemon waits for when it stops with its loop no longer running.
    public var settleDeadline: (at: Int64, deadline: SettleDeadline)? {
        armedSettle.map { ($0.at, $0.deadline) }
    }

    /// Arms the settle timeout `deadline` from now.
    private mutating func armSettle(_ deadline: SettleDeadline, since: Double) -> Effect {
        let at = clock.nanoseconds + settleTimeouts[deadline]
        armedSettle = ArmedSettle(deadline: deadline, since: since, at: at)
        return .armSettleTimeout(deadline, at: at)
    }

    /// The longest an ordinary save waits for a recognizer that keeps giving words, in seconds. Its queue
    /// holds 30 s of audio at most, which a recognizer at a quarter of real time works through in two minutes.
    public static let longestSettle = 300.0
    /// How far past the recorded audio's end a recognizer's word may end and still count as progress (the
    /// audio's last chunk and the meeting's clock are not to the sample).
    static let audioEndTolerance = 1.0
    /// The end of the latest word the recognizer gave within the meeting's audio: a result that does not go
    /// past it (or goes past the audio) does not extend a save's wait.
    private var recognizedUntil = 0.0
    /// The instant of the event or request being handled: where the timer's schedule pauses and resumes.
    var clock = InputInstant()
    /// When the one-second ticks fall due, in nanoseconds since the session started (handed in with the
    /// events): paused until the start's `armTimer`, which resumes it one second ahead.
    public internal(set) var schedule: TickSchedule = {
        var schedule = TickSchedule(startingAt: 0)
        schedule.pause(at: 0)
        return schedule
    }()

    /// A new session. It starts what it records with first (`records`: the microphone, and the call if
    /// `call` names a source; then the recognizer if `transcribes`; then the cue if `playsCue`), each reporting back
    /// whether it runs, and runs from its first second once they have: perform the returned effects and
    /// hand back the facts they produce. `warnings` are what the request already says the meeting goes without.
    public static func start(
        syncUp: SyncUp,
        meetingID: Meeting.ID,
        startDate: Date,
        records: Bool = false,
        call: CallSource = .off,
        transcribes: Bool,
        playsCue: Bool = false,
        warnings: [String] = [],
        roster: MeetingRoster? = nil,
        settleTimeouts: SettleTimeouts = SettleTimeouts(),
        atNanoseconds now: Int64 = 0
    ) -> (SessionMachine, [Effect]) {
        var machine = SessionMachine(
            syncUp: syncUp, meetingID: meetingID, startDate: startDate, records: records, transcribes: transcribes,
            playsCue: playsCue, roster: roster ?? MeetingRoster(syncUp.attendees), settleTimeouts: settleTimeouts)
        machine.startWarnings = warnings
        machine.clock.nanoseconds = now
        guard records else {
            let effects = machine.advanceStart()
            return (machine, effects)
        }
        var source: String?
        switch call {
        case .off, .unavailable(warning: nil): break
        case .unavailable(let warning?): machine.startWarnings.append(warning)
        case .source(let name): source = name
        }
        let effects: [Effect] = [.startRecorder(call: source), machine.armSettle(.opening, since: 0)]
        return (machine, effects)
    }

    private init(
        syncUp: SyncUp, meetingID: Meeting.ID, startDate: Date, records: Bool, transcribes: Bool, playsCue: Bool,
        roster: MeetingRoster, settleTimeouts: SettleTimeouts
    ) {
        self.settleTimeouts = settleTimeouts
        self.syncUp = syncUp
        self.roster = roster
        self.meetingID = meetingID
        self.startDate = startDate
        self.isTranscribing = false
        self.wantsTranscript = transcribes
        self.playsCue = playsCue
        self.recorder = records ? .starting : .absent
        self.recognizer = .absent
        self.record = MeetingRecord()
    }

    /// The next step of the start: the speaker encoder and the recognizer once the recording runs, then the
    /// timer and the first turn.
    private mutating func advanceStart() -> [Effect] {
        guard isStarting, recorder != .starting, voiceListener != .starting else { return [] }
        if wantsTranscript {
            wantsTranscript = false
            guard recorder == .running else {
                startWarnings.append("recording without a transcript: there is no audio to transcribe")
                return advanceStart()
            }
            recognizer = .starting
            return [.startRecognizer]
        }
        guard recognizer != .starting else { return [] }
        isStarting = false
        isTranscribing = recognizer == .running
        let turn = beginTurn(0, at: 0)
        return (playsCue ? [.startCue] : []) + [startTimer()] + turn + [.writeJournal, .publish(.started)]
            + startWarnings.map(Effect.warn)
    }

    // MARK: - Derived

    public var durationSeconds: Int { syncUp.durationSeconds }
    /// The app's share, over the people in the meeting's rotation (absent ones and those who left without
    /// having the floor do not count).
    public var secondsPerAttendee: Int { roster.share(of: durationSeconds) }
    public var durationRemaining: Int { durationSeconds - secondsElapsed }
    /// The seconds left of the floor holder's slot as `tick` passes the floor: each slot is
    /// `secondsPerAttendee`, the last one runs to the meeting's end (it takes what the share's rounding left).
    public var turnRemaining: Int {
        let slotEnd = speakerIndex >= lastSpeakerIndex ? durationSeconds : (speakerIndex + 1) * secondsPerAttendee
        return max(0, slotEnd - secondsElapsed)
    }
    public var lastSpeakerIndex: Int { max(0, roster.rotationCount - 1) }
    /// Whoever has the floor, as named now (a rename shows at once).
    public var speaker: Attendee? { roster.speakerID.flatMap(roster.attendee) }
    /// The transcript so far: settled text, the provisional tail, and ` ❌` where transcription failed.
    public var transcript: String { record.transcript }

    /// The meeting as it would be saved now.
    public var meeting: Meeting { Meeting(id: meetingID, date: startDate, transcript: transcript) }

    /// Why an edit of the sync-up, `edited`, is refused while this meeting runs; nil if it may be made (and
    /// then `syncUpEdited`). The app's rule (a blank attendee when the list is emptied) is for a sync-up at
    /// rest: a running meeting would hand the floor to nobody. Only a change of the attendees is refused: an
    /// outside edit of the file may have left nobody already, and the title must stay editable then.
    public func refusal(ofEdit edited: SyncUp) -> String? {
        guard edited.id == syncUp.id, edited.attendees != syncUp.attendees,
            !edited.attendees.contains(where: { !NameKey.of($0.name).isEmpty })
        else { return nil }
        return "attendees: the sync-up's meeting is running and this leaves it nobody with a name; "
            + "nothing changed (end the meeting first, or keep someone)"
    }

    // MARK: - Entry points: a request, a fact (the instant in nanoseconds since the start; in seconds, for tests)

    /// A client's request at `now`; refused (and nothing changed) when it does not apply in the current phase.
    public mutating func request(_ request: Request, atNanoseconds now: Int64) throws(SessionRejection) -> [Effect] {
        clock.nanoseconds = now
        return try respond(to: request, at: Self.seconds(now))
    }

    /// A fact at `now`. `timerTicked` is the timer's wake-up, caught up as `catchUp` does it, the effects of
    /// every tick due by then returned together: for the tests. The daemon's controller calls `catchUp` with
    /// `nextTick` itself, performing each tick's effects before the next; a tick's logic belongs in `nextTick`.
    public mutating func handle(_ event: Event, atNanoseconds now: Int64) -> [Effect] {
        guard event == .timerTicked else {
            clock.nanoseconds = now
            return apply(event, at: Self.seconds(now))
        }
        var effects: [Effect] = []
        Self.catchUp {
            nextTick(atNanoseconds: now)
        } perform: {
            effects += $0
            return true
        }
        return effects
    }

    /// A client's request at `time`, in seconds (the machine's tests).
    public mutating func request(_ request: Request, at time: Double) throws(SessionRejection) -> [Effect] {
        clock.nanoseconds = Self.nanoseconds(time)
        return try respond(to: request, at: time)
    }

    /// A fact at `time`, in seconds (the machine's tests): `handle(_:atNanoseconds:)` at that instant, the
    /// one path a tick takes (a `timerTicked` at `time` takes each tick due by then, none if it comes early).
    public mutating func handle(_ event: Event, at time: Double) -> [Effect] {
        handle(event, atNanoseconds: Self.nanoseconds(time))
    }

    // MARK: - Requests

    /// A client's request at `time` (seconds of meeting since it started; the timer's `clock` is set). One
    /// that does not apply in the current phase is refused and changes nothing.
    mutating func respond(to request: Request, at time: Double) throws(SessionRejection) -> [Effect] {
        guard !isOver else { throw SessionRejection("the session is over") }
        if isStarting { return try respondWhileStarting(to: request, at: time) }
        guard pendingEnding == nil else { throw SessionRejection("the meeting is being saved") }
        switch request {
        case .next:
            return next(at: time)
        case .pause:
            switch phase {
            case .running:
                phase = .paused
                record.stopTimer(at: time)
                return [stopTimer(), .publish(.paused)]
            case .paused: throw SessionRejection("the meeting is already paused")
            case .ending: throw SessionRejection("the meeting is ending: save it with session.end or resume it")
            }
        case .resume:
            guard phase != .running else { throw SessionRejection("the meeting is not paused") }
            // The speaker was removed from the sync-up while the meeting waited at its end: the clock runs
            // again only with someone to hold the floor.
            guard !roster.speakerIsGone || speakerIndex < lastSpeakerIndex else {
                throw SessionRejection(
                    "the last speaker was removed from the sync-up and nobody comes after them: "
                        + "end the meeting (session.end save or discard), or add someone first")
            }
            phase = .running
            record.startTimer(at: time)
            record.markEnded(at: nil)
            guard roster.speakerIsGone else { return [startTimer(), .publish(.resumed)] }
            return [startTimer(), .publish(.resumed)] + handOver(at: time)
        case .end(.save):
            return end(.saved(meeting), at: time)
        case .end(.discard):
            // Unlike the app (whose alert at the last speaker offers no "Discard"): what a client asks for.
            return complete(.discarded, at: time)
        case .markAbsent(let name), .markBack(let name):
            let isAbsent = if case .markAbsent = request { true } else { false }
            do {
                _ = try roster.mark(name, absent: isAbsent)
            } catch {
                throw SessionRejection(error.reason, isInvalidArgument: true)
            }
            return [.publish(.updated), .writeJournal]
        }
    }

    // MARK: - Events

    /// A fact at `time` (seconds of meeting since it started; the timer's `clock` is set). Facts about a
    /// session that is over change nothing.
    mutating func apply(_ event: Event, at time: Double) -> [Effect] {
        guard !isOver else { return [] }
        if isStarting, let effects = applyWhileStarting(event, at: time) { return effects }
        switch event {
        case .recorderStarted(let warnings):
            guard recorder == .starting else { return [] }
            recorder = .running
            startWarnings += warnings
            voiceListener = .starting
            return disarmOpening() + [.startVoiceListener]
        case .voiceListenerStarted:
            guard voiceListener == .starting else { return [] }
            voiceListener = .running
            return advanceStart()
        case .voiceListenerUnavailable:
            guard voiceListener == .starting else { return [] }
            voiceListener = .absent
            return advanceStart()
        case .recorderFailedToStart(let reason, let warnings):
            guard recorder == .starting else { return [] }
            recorder = .absent
            startWarnings += warnings + ["recording without audio: \(reason)"]
            return disarmOpening() + advanceStart()
        case .recognizerStarted(let startedAhead):
            guard recognizer == .starting else { return [] }
            if let failure = recognizerFailedWhileStarting {
                recognizerFailedWhileStarting = nil
                if startedAhead { return restartRecognizer(failure) }
                // `failure` is the engine's own words, already a speech failure's.
                return [.cancelRecognizer]
                    + recognizerDidNotStart(
                        startWarning: "recording without a transcript: \(failure)", error: failure, at: time)
            }
            recognizer = .running
            recognizerIsUntried = startedAhead
            guard !isStarting else { return advanceStart() }
            // A fresh engine for the one started ahead, mid-meeting: it transcribes from here; a save under
            // way waits for its last words.
            return [.publish(.updated)] + settle(at: time)
        case .recognizerFailedToStart(let reason):
            guard recognizer == .starting else { return [] }
            return recognizerDidNotStart(
                startWarning: "recording without a transcript: \(reason)",
                error: "speech recognition failed: \(reason)",
                at: time)
        case .recognizerReady:
            guard !isRecognizerReady else { return [] }
            isRecognizerReady = true
            return [.publish(.updated)]
        case .timerTicked:
            return pendingEnding == nil ? tick(at: time) : []
        case .syncUpEdited(let edited):
            // Once the meeting is being saved it is over: its attendees are the ones it had.
            guard pendingEnding == nil else { return [] }
            syncUp = edited
            roster.follow(edited.attendees)
            // No word goes to someone after they left: a removed speaker's turn ends now.
            guard roster.speakerIsGone else { return [.publish(.updated), .writeJournal] }
            guard phase != .ending else {
                // Waiting to be saved after the last speaker: their turn ends here, nobody has the floor after.
                record.endTurn(at: time)
                return [.publish(.updated), .flushJournal]
            }
            return handOver(at: time) + [.publish(.updated), .writeJournal]
        case .syncUpDeleted:
            pendingEnding = nil
            return complete(.syncUpDeleted, at: time)
        case .speechRecognized(let speech):
            guard isTranscribing, recognizer != .stopped else { return [] }
            recognizerIsUntried = false
            // No word lies past the audio recorded so far (or, once the meeting is being saved, its end).
            let audioEnd = armedSettle?.since ?? time
            let reached = speech.words.map(\.end).max() ?? speech.end
            guard record.add(speech.clamped(to: audioEnd)) else { return [] }
            // Every final goes to the journal, even one that only settles the provisional text as it was.
            let effects: [Effect] = speech.isFinal ? [.publish(.transcript), .writeJournal] : [.publish(.transcript)]
            // Only words that move the recognizer on within the meeting's audio say it is working through it.
            var movesOn = false
            if let reached, reached > recognizedUntil, reached <= audioEnd + Self.audioEndTolerance {
                recognizedUntil = reached
                movesOn = true
            }
            // A recognizer that is behind (a loaded machine) still works through the audio queued for it: an
            // ordinary save waits as long as it gives words, the timeout counting from its latest.
            guard movesOn, pendingEnding != nil, let armed = armedSettle, armed.deadline == .saving,
                time - armed.since < Self.longestSettle
            else { return effects }
            return effects + [armSettle(.saving, since: armed.since)]
        case .voiceHeard(let evidence):
            // Only an attendee of this meeting's sync-up, only while it runs: a voice is never someone else's.
            guard !isOver, syncUp.attendees.contains(where: { $0.id == evidence.speaker.id }) else { return [] }
            let previous = voiceHeard
            voiceHeard = evidence
            let corrected = record.addVoice(evidence)
            var effects: [Effect] = []
            if previous?.speaker.id != evidence.speaker.id || previous.map({ evidence.start - $0.end > 3.2 }) == true {
                effects.append(.publish(.updated))
            }
            if !corrected.isEmpty { effects += [.publish(.attributionCorrected(corrected)), .writeJournal] }
            return effects
        case .speechFailed(let message):
            guard isTranscribing else { return [] }
            if recognizer == .starting {
                // The fresh engine started for a failed one died before its start was reported.
                recognizerFailedWhileStarting = message
                return []
            }
            if recognizerIsUntried && pendingEnding == nil { return restartRecognizer(message) }
            return [.cancelRecognizer] + stopTranscribing(message, at: time)
        case .recognizerFinished:
            guard recognizer != .absent else { return [] }
            recognizer = .stopped
            return settle(at: time)
        case .audioTrouble(let message):
            return [.publish(.error(message))]
        case .journalFailed(let reason):
            guard !hasReportedJournalFailure else { return [] }
            hasReportedJournalFailure = true
            return [
                .publish(
                    .error(
                        "cannot write the meeting's journal (\(reason)): the meeting goes on, but a crash now would lose its transcript"
                    ))
            ]
        case .recorderStopped:
            guard recorder != .absent else { return [] }
            recorder = .stopped
            return settle(at: time)
        case .settleTimedOut:
            guard let ending = pendingEnding else { return [] }
            // The recognizer's last words are given up on: what it gave so far is saved.
            let cancel: [Effect] = recognizer == .stopped || recognizer == .absent ? [] : [.cancelRecognizer]
            recognizer = recognizer == .absent ? .absent : .stopped
            pendingEnding = nil
            armedSettle = nil
            return cancel + complete(ending, at: time)
        case .daemonStopping:
            guard pendingEnding != nil else { return end(.interrupted(meeting), at: time, deadline: .stopping) }
            // Already being saved as the user asked (or as time ran out): it stays that, with a shorter wait.
            guard let armed = armedSettle else { return [] }
            return [armSettle(.stopping, since: armed.since)]
        }
    }

    // MARK: - The recognizer's failures

    /// The engine started ahead failed before it gave anything (`recognizerIsUntried`): a fresh one is
    /// started. The meeting goes on meanwhile; what is said until the fresh one is up is not transcribed.
    private mutating func restartRecognizer(_ failure: String) -> [Effect] {
        recognizerIsUntried = false
        recognizer = .starting
        isRecognizerReady = false
        return [
            .cancelRecognizer,
            .warn(
                "the speech engine started ahead failed before it transcribed anything (\(failure)): starting a fresh one"
            ),
            .startRecognizer,
            .publish(.updated),
        ]
    }

    /// The recognizer being started did not start: a meeting still starting goes without a transcript and says
    /// so in its start's warnings; a running one (a fresh engine for a failed spare) stops transcribing.
    private mutating func recognizerDidNotStart(startWarning: String, error: String, at time: Double) -> [Effect] {
        recognizer = .absent
        guard !isStarting else {
            startWarnings.append(startWarning)
            return advanceStart()
        }
        return stopTranscribing(error, at: time)
    }

    /// The recognizer failed for good: the meeting goes on without a transcript.
    private mutating func stopTranscribing(_ message: String, at time: Double) -> [Effect] {
        isTranscribing = false
        recognizer = recognizer == .absent ? .absent : .stopped
        speechError = message
        // The app's `speechFailure`: mark where transcription stopped, if anything was transcribed.
        record.markFailure()
        return [.publish(.error(message)), .publish(.transcript)] + settle(at: time)
    }

    // MARK: - Ending

    /// Ends the session with a save: the recording stops first, so the recognizer has all the audio, then
    /// the recognizer settles its last words; the meeting is saved when both are done, or at the timeout.
    private mutating func end(_ ending: Ending, at time: Double, deadline: SettleDeadline = .saving) -> [Effect] {
        pendingEnding = ending
        let wasRunning = phase == .running
        let wasEnding = phase == .ending
        phase = .ending
        if wasRunning { record.stopTimer(at: time) }
        record.markEnded(at: time)
        var effects: [Effect] = (wasRunning ? [stopTimer()] : []) + (wasEnding ? [] : [.publish(.ending)])
        guard recorder == .running || recognizer == .running else { return effects + settle(at: time) }
        // The journal says when the meeting ended before the wait: a crash during it keeps the insights.
        effects += [.flushJournal, armSettle(deadline, since: time)]
        return effects + settle(at: time)
    }

    /// The next step of a save: stop the recorder, then finish the recognizer, then save.
    private mutating func settle(at time: Double) -> [Effect] {
        guard let ending = pendingEnding else { return [] }
        switch recorder {
        case .running:
            recorder = .stopping
            return [.stopRecorder]
        case .stopping, .starting:  // never starting here: nothing ends a meeting before it has started
            return []
        case .stopped, .absent:
            break
        }
        switch recognizer {
        case .running:
            recognizer = .stopping
            return [.finishRecognizer]
        case .stopping, .starting:
            return []
        case .stopped, .absent:
            pendingEnding = nil
            let wasWaiting = armedSettle != nil
            armedSettle = nil
            return (wasWaiting ? [.cancelSettleTimeout] : []) + complete(ending, at: time)
        }
    }

    private mutating func complete(_ ending: Ending, at time: Double) -> [Effect] {
        isOver = true
        self.ending = ending
        // Before the last turn closes: a tail at the very end is still its speaker's.
        if ending.keepsMeeting { record.settleProvisionalTail() }
        record.finish(at: time)
        var final = ending
        var effects: [Effect] = []
        switch ending {
        case .finished, .saved, .interrupted:
            if case .interrupted = ending { record.isInterrupted = true }
            final = ending.with(meeting)
            effects.append(.saveMeeting(meeting, record, of: syncUp))
        case .discarded, .syncUpDeleted:
            effects.append(.discardMeeting)
        }
        effects += stopEverything(keepsAudio: ending.keepsMeeting)
        // The speaker encoder stops after the capture that feeds it (queued after the recorder's stop).
        let voices: [Effect] =
            voiceListener == .running ? [.stopVoiceListener(keepsLearning: ending.keepsMeeting)] : []
        if voiceListener == .running { voiceListener = .stopped }
        return effects + [.finish] + voices + [.publish(.ended(final))]
    }

    /// The meeting is over: what it still runs is stopped. A save has stopped the recording and the
    /// recognizer before (or given up on the recognizer); a discard stops them here, the audio deleted.
    private mutating func stopEverything(keepsAudio: Bool) -> [Effect] {
        var effects: [Effect] = []
        if schedule.nextDeadline != nil { effects.append(stopTimer()) }
        if armedSettle != nil {
            armedSettle = nil
            effects.append(.cancelSettleTimeout)
        }
        // A recognizer still starting (off the loop) is stopped once it has: the start's report finds the
        // meeting over.
        if recognizer == .running || recognizer == .stopping || recognizer == .starting {
            recognizer = .stopped
            effects.append(.cancelRecognizer)
        }
        // A save has asked the recording to stop (it may still be completing when the wait times out); a
        // discard deletes its files, even those of a recording that stopped when the sync-up was deleted
        // during the save.
        if !keepsAudio, recorder != .absent {
            recorder = .stopped
            effects.append(.abandonRecorder)
        }
        if playsCue && !isStarting { effects.append(.stopCue) }  // the cue starts with the meeting's first second
        return effects
    }

    // MARK: - The clock and the floor

    /// The app's `timerTick`, fixed: the meeting ends when the elapsed time reaches the duration even when
    /// the duration does not divide evenly, and the speaker never passes the last attendee.
    private mutating func tick(at time: Double) -> [Effect] {
        guard phase == .running else { return [] }
        secondsElapsed += 1
        if secondsElapsed >= durationSeconds {
            return [.publish(.tick)] + end(.finished(meeting), at: time)
        }
        // The next speaker once the current one's share is used: at the boundary, as the app rotates, or at
        // once when a change of the rotation (someone absent, added) moved the boundary behind the clock.
        let share = secondsPerAttendee
        if share > 0 && secondsElapsed >= (speakerIndex + 1) * share && speakerIndex < lastSpeakerIndex {
            speakerIndex += 1
            return [.publish(.tick)] + beginTurn(speakerIndex, at: time) + [.playCue, .publish(.speaker)]
        }
        return [.publish(.tick)]
    }

    /// The app's `nextButtonTapped`: the next speaker takes the floor at the start of their slot; at the last
    /// speaker the meeting stops and waits to be saved.
    private mutating func next(at time: Double) -> [Effect] {
        guard phase != .ending else {
            return []  // already waiting for `end`, as a second tap on the app's button shows the same alert
        }
        return handOver(at: time)
    }

    /// The floor goes to the next of the rotation, the elapsed time to the start of their share (never back);
    /// after the last one the meeting stops and waits to be saved, its end marked (and journalled) there.
    private mutating func handOver(at time: Double) -> [Effect] {
        guard speakerIndex < lastSpeakerIndex else {
            let wasRunning = phase == .running
            phase = .ending
            if wasRunning { record.stopTimer(at: time) }
            // A speaker who left has no floor after: what is said from here is nobody's.
            if roster.speakerIsGone { record.endTurn(at: time) }
            record.markEnded(at: time)
            return (wasRunning ? [stopTimer()] : []) + [.publish(.ending), .flushJournal]
        }
        speakerIndex += 1
        secondsElapsed = max(secondsElapsed, speakerIndex * secondsPerAttendee)
        return beginTurn(speakerIndex, at: time) + [.playCue, .publish(.speaker)]
    }

    private mutating func beginTurn(_ index: Int, at time: Double) -> [Effect] {
        guard let attendee = roster.next else {
            return [.beginTurn(speakerIndex: index, speaker: nil, at: time)]
        }
        roster.giveFloor(to: attendee.id)
        record.beginTurn(attendee, at: time)
        return [.beginTurn(speakerIndex: index, speaker: attendee, at: record.turns.last!.start)]
    }
}

// MARK: - Starting

/// The start's wait for the capture device: `startRecorder` opens it off the event loop (an ALSA device, or the
/// sound server's stream, which may take up to 1.5 s to give up on a hung server), so until `recorderStarted`
/// or `recorderFailedToStart` comes back, everything else can arrive. Each input is decided here.
extension SessionMachine {
    /// A client's request while the meeting starts: only a discard applies (nothing is recorded yet, so there
    /// is nothing to save, to pause or to hand over); the recording, once open, is abandoned.
    mutating func respondWhileStarting(to request: Request, at time: Double) throws(SessionRejection) -> [Effect] {
        switch request {
        case .end(.discard):
            return complete(.discarded, at: time)
        case .end(.save):
            throw SessionRejection(
                "the meeting is starting and nothing is recorded yet: discard it (session.end discard), "
                    + "or save it once session.start has replied")
        case .next, .pause, .resume, .markAbsent, .markBack:
            throw SessionRejection("the meeting is starting: try again once session.start has replied")
        }
    }

    /// A fact while the meeting starts; nil for the start's own reports, which `apply` takes as ever.
    mutating func applyWhileStarting(_ event: Event, at time: Double) -> [Effect]? {
        switch event {
        case .recorderStarted, .recorderFailedToStart, .voiceListenerStarted, .voiceListenerUnavailable,
            .recognizerStarted, .recognizerFailedToStart:
            return nil
        case .syncUpEdited(let edited):
            // The first turn goes to the edited sync-up's first attendee: nothing to publish before `started`.
            syncUp = edited
            roster.follow(edited.attendees)
            return []
        case .syncUpDeleted:
            return complete(.syncUpDeleted, at: time)
        case .daemonStopping:
            // Nothing was recorded: there is no meeting to save.
            return complete(.discarded, at: time)
        case .audioTrouble(let message):
            // The capture thread runs as soon as the device is open, and may report before the open does.
            return [.publish(.error(message))]
        case .settleTimedOut:
            // The capture devices did not open in time: the meeting starts without audio; what the open
            // opens when it returns is stopped (`abandonRecorder`, queued after it), and its report ignored.
            guard armedSettle?.deadline == .opening, recorder == .starting else { return [] }
            armedSettle = nil
            recorder = .absent
            let seconds = settleTimeouts.opening / 1_000_000_000
            startWarnings.append("recording without audio: the capture device did not open within \(seconds) s")
            return [.abandonRecorder] + advanceStart()
        case .recognizerReady:
            // The engine may say it is up before its start is reported (a spare started ahead says so at once,
            // a fast engine's first line may win the race): it is kept, and counts once the meeting starts.
            guard recognizer == .starting else { return [] }
            isRecognizerReady = true
            return []
        case .speechFailed(let message):
            // The engine taken or started for the meeting died before its start was reported: its report
            // decides (`recognizerStarted`).
            guard recognizer == .starting else { return [] }
            recognizerFailedWhileStarting = message
            return []
        case .timerTicked, .speechRecognized, .voiceHeard, .recognizerFinished, .journalFailed, .recorderStopped:
            // Nothing that reports these runs yet.
            return []
        }
    }

    /// The capture devices answered: the wait for their open ends.
    private mutating func disarmOpening() -> [Effect] {
        guard armedSettle?.deadline == .opening else { return [] }
        armedSettle = nil
        return [.cancelSettleTimeout]
    }
}

extension SessionMachine.Ending {
    /// Whether the meeting is saved (its audio kept), not discarded.
    var keepsMeeting: Bool {
        switch self {
        case .finished, .saved, .interrupted: true
        case .discarded, .syncUpDeleted: false
        }
    }

    /// The same ending with the meeting as it is now (its transcript grew while the save settled).
    func with(_ meeting: Meeting) -> Self {
        switch self {
        case .finished: .finished(meeting)
        case .saved: .saved(meeting)
        case .interrupted: .interrupted(meeting)
        case .discarded, .syncUpDeleted: self
        }
    }
}

/// A session request that does not apply now, with the reason (→ `invalid_state` on the wire).
public struct SessionRejection: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    /// The request named something that is not so (→ `invalid_argument`), rather than coming at the wrong time.
    public var isInvalidArgument = false

    public init(_ reason: String, isInvalidArgument: Bool = false) {
        self.reason = reason
        self.isInvalidArgument = isInvalidArgument
    }

    public var description: String { reason }
}

extension RecognizedSpeech {
    /// The result with its times (and its words') no later than `end`, the meeting's audio so far: an
    /// engine's times past it are its mistake.
    func clamped(to end: Double) -> RecognizedSpeech {
        var speech = self
        speech.start = start.map { min($0, end) }
        speech.end = self.end.map { min($0, end) }
        if words.contains(where: { $0.end > end }) {
            speech.words = words.map { TranscriptWord(word: $0.word, start: min($0.start, end), end: min($0.end, end)) }
        }
        return speech
    }
}
