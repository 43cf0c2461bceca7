import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

extension SessionMachine.Effect {
    /// The settle wait `deadline` armed at `time` (seconds of meeting), with the default timeouts.
    static func settle(_ deadline: SessionMachine.SettleDeadline, from time: Double) -> Self {
        .armSettleTimeout(deadline, at: Int64((time * 1e9).rounded()) + SessionMachine.SettleTimeouts()[deadline])
    }
}

/// The meeting's time in these tests: a fact at the elapsed seconds, and the timer firing where it is armed
/// (as the daemon's does: at its deadline, whatever `next` did to the elapsed time).
extension SessionMachine {
    mutating func handle(_ event: Event) -> [Effect] {
        if event == .timerTicked, let deadline = nextTickDeadline { return handle(event, atNanoseconds: deadline) }
        return handle(event, at: Double(secondsElapsed))
    }
    mutating func request(_ request: Request) throws(SessionRejection) -> [Effect] {
        try self.request(request, at: Double(secondsElapsed))
    }

    /// A session whose recorder (if `records`, or to transcribe) and recognizer (if `transcribes`) started.
    static func started(
        syncUp: SyncUp, meetingID: Meeting.ID, startDate: Date, records: Bool = false, transcribes: Bool
    ) -> (SessionMachine, [Effect]) {
        var (machine, effects) = start(
            syncUp: syncUp, meetingID: meetingID, startDate: startDate, records: records || transcribes,
            transcribes: transcribes)
        if effects.contains(.startRecorder(call: nil)) {
            effects = machine.handle(.recorderStarted(warnings: []), at: 0)
            if effects == [.cancelSettleTimeout, .startVoiceListener] {
                effects = machine.handle(.voiceListenerUnavailable("voices off"), at: 0)
            }
        }
        if effects == [.startRecognizer] { effects = machine.handle(.recognizerStarted(startedAhead: false), at: 0) }
        return (machine, effects)
    }
}

/// The SyncUps app's RecordMeeting tests, replayed one to one against the pure session machine, with every
/// state change and every effect stated; then the lifecycle the app does not have (the recording, the
/// recognizer's last words, timeouts, failures, the daemon stopping), over every order the facts can come in.
@Suite struct SessionMachineTests {
    /// The app's tests use `Date(timeIntervalSince1970: 1_234_567_890)` and `UUID(0)` for the meeting.
    let now = Date(timeIntervalSince1970: 1_234_567_890)
    let meetingID = Meeting.ID(UUID(counting: 0))

    /// A session whose parts all start: the recorder first, then the recognizer, then the timer and the turn.
    func start(_ syncUp: SyncUp, records: Bool = false, transcribes: Bool = false) -> SessionMachine {
        var (machine, effects) = SessionMachine.start(
            syncUp: syncUp, meetingID: meetingID, startDate: now, records: records, transcribes: transcribes)
        let started: [SessionMachine.Effect] = [
            .armTimer(at: 1_000_000_000), .beginTurn(speakerIndex: 0, speaker: syncUp.attendees.first, at: 0),
            .writeJournal,
            .publish(.started),
        ]
        if records {
            #expect(effects == [.startRecorder(call: nil), .settle(.opening, from: 0)])
            #expect(machine.isStarting && machine.recorder == .starting)
            effects = machine.handle(.recorderStarted(warnings: []))
            #expect(effects == [.cancelSettleTimeout, .startVoiceListener])
            #expect(machine.isStarting && machine.voiceListener == .starting)
            effects = machine.handle(.voiceListenerUnavailable("voices off: no voice model configured"))
            #expect(machine.voiceListener == .absent)
            if transcribes {
                #expect(effects == [.startRecognizer])
                #expect(machine.isStarting && machine.recognizer == .starting)
                effects = machine.handle(.recognizerStarted(startedAhead: false))
            }
        }
        #expect(effects == started)
        #expect(!machine.isStarting && machine.startWarnings.isEmpty)
        #expect(machine.phase == .running && machine.secondsElapsed == 0 && machine.speakerIndex == 0)
        #expect(machine.recorder == (records ? .running : .absent))
        #expect(machine.recognizer == (transcribes ? .running : .absent))
        return machine
    }

    /// `beginTurn` for the attendee at `index` of the machine's sync-up, from `time`.
    func turn(_ index: Int, of machine: SessionMachine, at time: Double) -> SessionMachine.Effect {
        .beginTurn(speakerIndex: index, speaker: machine.syncUp.attendees[index], at: time)
    }

    func meeting(_ transcript: String) -> Meeting { Meeting(id: meetingID, date: now, transcript: transcript) }

    /// What a completed save returns, with the record as the machine holds it at the end.
    func saved(_ ending: SessionMachine.Ending, _ machine: SessionMachine, waited: Bool = false) -> [SessionMachine
        .Effect]
    {
        let meeting = machine.meeting
        return (waited ? [.cancelSettleTimeout] : []) + [
            .saveMeeting(meeting, machine.record, of: machine.syncUp), .finish, .publish(.ended(ending)),
        ]
    }

    /// The timer armed for the end of second `second`.
    func arm(_ second: Int) -> SessionMachine.Effect { .armTimer(at: Int64(second) * 1_000_000_000) }

    /// `RecordMeetingTests.timer`: 3 attendees, 6 seconds.
    @Test func timerRotatesSpeakersAndSavesWhenTimeIsUp() throws {
        var machine = start(.fixture(attendees: 3, seconds: 6))
        let expected: [(speaker: Int, elapsed: Int, remaining: Int, effects: [SessionMachine.Effect])] = [
            (0, 1, 5, [.publish(.tick), arm(2)]),
            (1, 2, 4, [.publish(.tick), turn(1, of: machine, at: 2), .playCue, .publish(.speaker), arm(3)]),
            (1, 3, 3, [.publish(.tick), arm(4)]),
            (2, 4, 2, [.publish(.tick), turn(2, of: machine, at: 4), .playCue, .publish(.speaker), arm(5)]),
            (2, 5, 1, [.publish(.tick), arm(6)]),
        ]
        for step in expected {
            #expect(machine.handle(.timerTicked) == step.effects)
            #expect(
                (machine.speakerIndex, machine.secondsElapsed, machine.durationRemaining) == (
                    step.speaker, step.elapsed, step.remaining
                ))
        }
        // Nothing records or transcribes: nothing to wait for.
        let effects = machine.handle(.timerTicked)
        #expect(effects == [.publish(.tick), .disarmTimer, .publish(.ending)] + saved(.finished(meeting("")), machine))
        #expect((machine.speakerIndex, machine.secondsElapsed, machine.durationRemaining) == (2, 6, 0))
        #expect(machine.isOver)
        #expect(machine.record.turns.map(\.start) == [0, 2, 4])
        #expect(machine.record.turns.map(\.end) == [2, 4, 6])
        #expect(machine.handle(.timerTicked) == [])
        #expect(throws: SessionRejection("the session is over")) { try machine.request(.next) }
    }

    /// `RecordMeetingTests.recordTranscript`; saving stops the recording, then waits for the recognizer's
    /// last words.
    @Test func recordsTheTranscriptIntoTheSavedMeeting() throws {
        var machine = start(.fixture(attendees: 3, seconds: 6), records: true, transcribes: true)
        #expect(
            machine.handle(.speechRecognized(.init(isFinal: false, text: "I completed"))) == [.publish(.transcript)])
        for _ in 0..<5 { _ = machine.handle(.timerTicked) }
        #expect(
            machine.handle(.timerTicked) == [
                .publish(.tick), .disarmTimer, .publish(.ending), .flushJournal, .settle(.saving, from: 6),
                .stopRecorder,
            ])
        #expect(machine.phase == .ending && !machine.isOver && machine.recorder == .stopping)
        #expect(throws: SessionRejection("the meeting is being saved")) { try machine.request(.next) }
        #expect(machine.handle(.timerTicked) == [])
        #expect(machine.handle(.recorderStopped) == [.finishRecognizer])
        #expect(machine.recognizer == .stopping)
        #expect(
            machine.handle(.speechRecognized(.init(isFinal: true, text: "I completed the project", start: 4, end: 5.5)))
                == [.publish(.transcript), .writeJournal, .settle(.saving, from: 6)])
        let effects = machine.handle(.recognizerFinished)
        #expect(effects == saved(.finished(meeting("I completed the project")), machine, waited: true))
    }

    @Test func savingByHandSettlesTheTranscriptToo() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        _ = try machine.request(.pause)
        #expect(
            try machine.request(.end(.save)) == [
                .publish(.ending), .flushJournal, .settle(.saving, from: 0), .stopRecorder,
            ])
        #expect(machine.handle(.recorderStopped) == [.finishRecognizer])
        #expect(machine.handle(.recognizerFinished) == saved(.saved(meeting("")), machine, waited: true))
    }

    @Test func discardingNeedsNoSettledTranscript() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        // The timer, the recognizer and the recording are stopped by the machine, the audio deleted.
        #expect(
            try machine.request(.end(.discard)) == [
                .discardMeeting, .disarmTimer, .cancelRecognizer, .abandonRecorder, .finish,
                .publish(.ended(.discarded)),
            ])
        #expect(machine.recorder == .stopped && machine.recognizer == .stopped && machine.schedule.nextDeadline == nil)
    }

    /// `RecordMeetingTests.endMeetingSave`: the "End meeting?" alert pauses the timer; saving inserts the meeting.
    @Test func endingEarlyAndSavingKeepsTheMeeting() throws {
        var machine = start(.fixture(attendees: 6, seconds: 60))
        #expect(try machine.request(.pause) == [.disarmTimer, .publish(.paused)])
        let paused = machine
        for _ in 0..<3 { #expect(machine.handle(.timerTicked) == []) }
        #expect(machine == paused)
        let effects = try machine.request(.end(.save))
        #expect(effects == [.publish(.ending)] + saved(.saved(meeting("")), machine))
    }

    /// `RecordMeetingTests.endMeetingDiscard`.
    @Test func endingEarlyAndDiscardingSavesNothing() throws {
        var machine = start(.fixture(attendees: 6, seconds: 60))
        _ = try machine.request(.pause)
        #expect(try machine.request(.end(.discard)) == [.discardMeeting, .finish, .publish(.ended(.discarded))])
    }

    /// `RecordMeetingTests.nextSpeaker` (with the PF port's sound counts).
    @Test func nextSpeakerJumpsToTheSlotAndAtTheLastSpeakerWaitsToBeSaved() throws {
        var machine = start(.fixture(attendees: 3, seconds: 6))
        #expect(try machine.request(.next) == [turn(1, of: machine, at: 0), .playCue, .publish(.speaker)])
        #expect((machine.speakerIndex, machine.secondsElapsed) == (1, 2))
        #expect(try machine.request(.next) == [turn(2, of: machine, at: 2), .playCue, .publish(.speaker)])
        #expect((machine.speakerIndex, machine.secondsElapsed) == (2, 4))
        // The journal says at once when the meeting ended: a crash while it waits keeps its insights.
        #expect(try machine.request(.next) == [.disarmTimer, .publish(.ending), .flushJournal])
        #expect(machine.phase == .ending && machine.record.endedAt == 4)
        for _ in 0..<5 { #expect(machine.handle(.timerTicked) == []) }
        #expect(machine.secondsElapsed == 4)
        let effects = try machine.request(.end(.save))
        #expect(effects == saved(.saved(meeting("")), machine))
    }

    /// The app's "Resume" button in the non-discardable alert: the timer runs again to the end.
    @Test func resumingFromTheLastSpeakersAlertRunsToTheEnd() throws {
        var machine = start(.fixture(attendees: 2, seconds: 4))
        _ = try machine.request(.next)
        _ = try machine.request(.next)
        #expect(machine.phase == .ending)
        // The schedule stood at the first second's deadline, long past: the timer is due at once.
        #expect(try machine.request(.resume) == [.armTimer(at: 2_000_000_000), .publish(.resumed)])
        #expect(machine.handle(.timerTicked) == [.publish(.tick), arm(3)])
        #expect(machine.handle(.timerTicked).contains(.saveMeeting(meeting(""), machine.record, of: machine.syncUp)))
    }

    /// `RecordMeetingTests.continueAfterSpeechRecognitionFailure`.
    @Test func speechFailureMarksTheTranscriptAndTheMeetingGoesOn() throws {
        var machine = start(.fixture(attendees: 1, seconds: 6), records: true, transcribes: true)
        _ = machine.handle(.speechRecognized(.init(isFinal: true, text: "I completed the project")))
        #expect(
            machine.handle(.speechFailed("the recognizer crashed"))
                == [.cancelRecognizer, .publish(.error("the recognizer crashed")), .publish(.transcript)]
        )
        #expect(machine.transcript == "I completed the project ❌")
        #expect(!machine.isTranscribing && machine.recognizer == .stopped)
        #expect(machine.handle(.speechRecognized(.init(isFinal: true, text: "late words"))) == [])
        for _ in 0..<5 { _ = machine.handle(.timerTicked) }
        #expect(machine.handle(.timerTicked).last == .stopRecorder)
        // The recognizer is gone: the save needs only the recording.
        let effects = machine.handle(.recorderStopped)
        #expect(effects == saved(.finished(meeting("I completed the project ❌")), machine, waited: true))
    }

    /// `RecordMeetingTests.discardAfterSpeechRecognitionFailure`.
    @Test func speechFailureBeforeAnyWordLeavesTheTranscriptEmpty() throws {
        var machine = start(.fixture(attendees: 1, seconds: 6), records: true, transcribes: true)
        _ = machine.handle(.speechFailed("no model"))
        #expect(machine.transcript == "")
        // The failed recognizer was cancelled when it failed: only the timer and the recording are left.
        #expect(
            try machine.request(.end(.discard)) == [
                .discardMeeting, .disarmTimer, .abandonRecorder, .finish, .publish(.ended(.discarded)),
            ])
    }

    /// PF's `timer` test: 3 attendees, 3 seconds; a cue at each change, none at the end.
    @Test func playsACueAtEachSpeakerChangeButNotAtTheEnd() throws {
        var machine = start(.fixture(attendees: 3, seconds: 3))
        var cues = 0
        for _ in 0..<3 { cues += machine.handle(.timerTicked).filter { $0 == .playCue }.count }
        #expect(cues == 2)
        #expect(machine.speakerIndex == 2)
    }

    // MARK: - The app's bugs, fixed

    @Test func endsWhenTheDurationDoesNotDivideByTheAttendees() throws {
        var machine = start(.fixture(attendees: 7, seconds: 300), records: true)  // 42 s each, 294 s of slots
        var ticks = 0
        // Bounded, so a machine that never ends (the app's bug) fails the test instead of hanging it.
        while machine.pendingEnding == nil && ticks < 400 {
            _ = machine.handle(.timerTicked)
            ticks += 1
            #expect(machine.speakerIndex <= 6)
        }
        #expect(ticks == 300)
        #expect(machine.speakerIndex == 6)
    }

    @Test func endsOnTimeWithMoreAttendeesThanSeconds() throws {
        var machine = start(.fixture(attendees: 5, seconds: 3))
        for second in 1...2 { #expect(machine.handle(.timerTicked) == [.publish(.tick), arm(second + 1)]) }
        #expect(machine.handle(.timerTicked).contains(.finish))
        #expect(machine.speakerIndex == 0)
    }

    // MARK: - Edits and requests

    @Test func appliesAttendeeAndDurationEditsFromTheNextTick() throws {
        var machine = start(.fixture(attendees: 3, seconds: 30))  // 10 s each
        for _ in 0..<4 { _ = machine.handle(.timerTicked) }
        var edited = SyncUp.fixture(attendees: 2, seconds: 8)  // 4 s each: the 4 s already run ends slot 0
        edited.title = "Renamed"
        // Blob 3 leaves the rotation: 4 s each, and the 4 s Blob 1 has had are their share.
        #expect(machine.handle(.syncUpEdited(edited)) == [.publish(.updated), .writeJournal])
        #expect(machine.syncUp.title == "Renamed")
        #expect(
            machine.handle(.timerTicked) == [
                .publish(.tick), turn(1, of: machine, at: 5), .playCue, .publish(.speaker), arm(6),
            ])
        for _ in 0..<2 { _ = machine.handle(.timerTicked) }
        #expect(machine.handle(.timerTicked).contains(.finish))  // 8: the new duration
    }

    /// The last speaker removed: their turn ends there and the meeting waits to be saved, as after `next`;
    /// everyone who had the floor stays in the meeting.
    @Test func removingTheLastSpeakerEndsTheirTurnAndKeepsWhoHadTheFloor() throws {
        var machine = start(.fixture(attendees: 3, seconds: 30))
        _ = try machine.request(.next)
        _ = try machine.request(.next)
        #expect(
            machine.handle(.syncUpEdited(.fixture(attendees: 1, seconds: 30)))
                == [.disarmTimer, .publish(.ending), .flushJournal, .publish(.updated), .writeJournal])
        #expect(machine.phase == .ending && machine.speakerIndex == 2 && machine.speaker?.name == "Blob 3")
        #expect(machine.record.turns.last?.end == 20)
        #expect(machine.roster.meetingAttendees.map(\.name) == ["Blob 1", "Blob 2", "Blob 3"])
    }

    @Test func discardsTheMeetingWhenItsSyncUpIsDeleted() throws {
        var machine = start(.fixture(), records: true)
        #expect(
            machine.handle(.syncUpDeleted) == [
                .discardMeeting, .disarmTimer, .abandonRecorder, .finish, .publish(.ended(.syncUpDeleted)),
            ])
    }

    // MARK: - The start: the machine starts what it stops

    /// Every way the parts can come up, and what the meeting is then: it always starts (timer, first turn,
    /// journal, `started`), asks for the recognizer only once there is audio, transcribes only with a
    /// recognizer that started, and says each thing it goes without once, after `started`.
    @Test(arguments: [false, true], [false, true])
    func startsWhateverItsPartsDo(microphoneOpens: Bool, recognizerStarts: Bool) throws {
        for voiceListenerStarts in [false, true] {
            try startsWhateverItsPartsDo(
                microphoneOpens: microphoneOpens, recognizerStarts: recognizerStarts,
                voiceListenerStarts: voiceListenerStarts)
        }
    }

    func startsWhateverItsPartsDo(microphoneOpens: Bool, recognizerStarts: Bool, voiceListenerStarts: Bool) throws {
        let syncUp = SyncUp.fixture()
        var (machine, effects) = SessionMachine.start(
            syncUp: syncUp, meetingID: meetingID, startDate: now, records: true, call: .source("default.monitor"),
            transcribes: true, playsCue: true)
        #expect(effects == [.startRecorder(call: "default.monitor"), .settle(.opening, from: 0)])
        var warnings = ["recording without the call: no sound server"]
        if microphoneOpens {
            effects = machine.handle(.recorderStarted(warnings: warnings))
            // The speaker encoder hears the recording: asked for once it runs, before the recognizer. Without
            // it the meeting goes on as before, its words to the floor alone, and says nothing of it.
            #expect(effects == [.cancelSettleTimeout, .startVoiceListener])
            effects = machine.handle(
                voiceListenerStarts ? .voiceListenerStarted : .voiceListenerUnavailable("voices off: no voice model"))
            #expect(effects == [.startRecognizer])
            effects = machine.handle(
                recognizerStarts
                    ? .recognizerStarted(startedAhead: false) : .recognizerFailedToStart("sphinx: no model"))
            if !recognizerStarts { warnings.append("recording without a transcript: sphinx: no model") }
        } else {
            effects = machine.handle(.recorderFailedToStart("cannot open the microphone", warnings: warnings))
            warnings += [
                "recording without audio: cannot open the microphone",
                "recording without a transcript: there is no audio to transcribe",
            ]
        }
        #expect(
            effects
                == (microphoneOpens ? [] : [.cancelSettleTimeout]) + [
                    .startCue, .armTimer(at: 1_000_000_000),
                    .beginTurn(speakerIndex: 0, speaker: syncUp.attendees[0], at: 0),
                    .writeJournal, .publish(.started),
                ] + warnings.map(SessionMachine.Effect.warn))
        #expect(machine.startWarnings == warnings)
        #expect(!machine.isStarting && machine.phase == .running)
        #expect(machine.recorder == (microphoneOpens ? .running : .absent))
        #expect(machine.recognizer == (microphoneOpens && recognizerStarts ? .running : .absent))
        #expect(machine.isTranscribing == (microphoneOpens && recognizerStarts))
        let listens = microphoneOpens && voiceListenerStarts
        #expect(machine.voiceListener == (listens ? .running : .absent))
        // The save waits for exactly the parts that run; the speaker encoder stops after the capture that feeds
        // it (`finish` queues that first), and only if it started.
        let stopsVoices: [SessionMachine.Effect] = listens ? [.stopVoiceListener(keepsLearning: true)] : []
        var save = try machine.request(.end(.save))
        if microphoneOpens {
            #expect(
                save == [.disarmTimer, .publish(.ending), .flushJournal, .settle(.saving, from: 0), .stopRecorder])
            save = machine.handle(.recorderStopped)
            if recognizerStarts {
                #expect(save == [.finishRecognizer])
                save = machine.handle(.recognizerFinished)
            }
            #expect(
                save == [
                    .cancelSettleTimeout, .saveMeeting(machine.meeting, machine.record, of: machine.syncUp), .stopCue,
                    .finish,
                ]
                    + stopsVoices + [.publish(.ended(.saved(meeting(""))))])
        } else {
            #expect(
                save == [
                    .disarmTimer, .publish(.ending), .saveMeeting(machine.meeting, machine.record, of: machine.syncUp),
                    .stopCue, .finish, .publish(.ended(.saved(meeting("")))),
                ])
        }
        #expect(machine.voiceListener == (listens ? .stopped : .absent))
    }

    /// A capture device whose open does not return (hung in the kernel, a plug-in that waits forever): at the
    /// open's deadline the meeting starts without audio, as when the device is missing, and what the open
    /// opens when it returns is stopped (`abandonRecorder`, queued after it); its late report changes nothing.
    /// Before, the meeting stayed `starting` until the device answered, and its start was never replied to.
    @Test func aCaptureDeviceThatDoesNotOpenInTimeStartsTheMeetingWithoutAudio() throws {
        let syncUp = SyncUp.fixture()
        var (machine, effects) = SessionMachine.start(
            syncUp: syncUp, meetingID: meetingID, startDate: now, records: true, transcribes: true)
        #expect(effects == [.startRecorder(call: nil), .settle(.opening, from: 0)])
        #expect(machine.settleDeadline?.at == 10_000_000_000)
        effects = machine.handle(.settleTimedOut, at: 10)
        let warnings = [
            "recording without audio: the capture device did not open within 10 s",
            "recording without a transcript: there is no audio to transcribe",
        ]
        #expect(effects.first == .abandonRecorder)
        #expect(effects.contains(.publish(.started)))
        #expect(Array(effects.suffix(2)) == warnings.map(SessionMachine.Effect.warn))
        #expect(!machine.isStarting && machine.recorder == .absent && machine.settleDeadline == nil)
        #expect(machine.handle(.recorderStarted(warnings: []), at: 11) == [])
        #expect(machine.recorder == .absent)
    }

    /// While its parts start, it is not running: requests other than a discard are refused (the discard and
    /// every other input are `SessionMachineStartingTests`'), other facts change nothing, and a fact about a
    /// part that is not starting is ignored.
    @Test func isNotRunningBeforeItsPartsHaveStarted() throws {
        var (machine, _) = SessionMachine.start(
            syncUp: .fixture(), meetingID: meetingID, startDate: now, records: true, transcribes: true)
        let starting = machine
        for request in [SessionMachine.Request.next, .pause, .resume, .end(.save)] {
            #expect(throws: SessionRejection.self) { try machine.request(request, at: 0) }
        }
        for event in [
            SessionMachine.Event.timerTicked, .recognizerStarted(startedAhead: false), .recognizerFailedToStart("x"),
            .recorderStopped,
            .recognizerFinished, .speechRecognized(.init(isFinal: true, text: "early")),
            .voiceListenerStarted, .voiceListenerUnavailable("x"), .recognizerReady,
        ] {
            #expect(machine.handle(event, at: 0) == [])
        }
        #expect(machine == starting)
        #expect(machine.handle(.recorderStarted(warnings: []), at: 0) == [.cancelSettleTimeout, .startVoiceListener])
        // Its open answered: the open's deadline is no more.
        #expect(machine.handle(.settleTimedOut, at: 0) == [])
        #expect(machine.handle(.recorderStarted(warnings: ["again"]), at: 0) == [])
        #expect(machine.handle(.recognizerStarted(startedAhead: false), at: 0) == [])
        #expect(machine.handle(.voiceListenerStarted, at: 0) == [.startRecognizer])
        #expect(machine.handle(.voiceListenerUnavailable("late"), at: 0) == [])
        #expect(machine.voiceListener == .running)
        #expect(machine.handle(.recognizerStarted(startedAhead: false), at: 0).contains(.publish(.started)))
        #expect(machine.handle(.recognizerFailedToStart("late"), at: 0) == [])
        #expect(machine.isTranscribing && machine.startWarnings.isEmpty)
    }

    /// A disk that fills at the first journal write (or any later one): the meeting goes on, and its
    /// subscribers hear once that a crash would now lose it.
    @Test func saysOnceThatTheJournalCannotBeWritten() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        let error =
            "cannot write the meeting's journal (write: No space left on device): the meeting goes on, but a crash now would lose its transcript"
        #expect(machine.handle(.journalFailed("write: No space left on device")) == [.publish(.error(error))])
        #expect(machine.hasReportedJournalFailure)
        #expect(machine.handle(.journalFailed("write: No space left on device")) == [])
        #expect(machine.phase == .running && machine.recorder == .running && machine.recognizer == .running)
    }

    @Test func refusesRequestsThatDoNotApply() throws {
        var machine = start(.fixture())
        #expect(throws: SessionRejection("the meeting is not paused")) { try machine.request(.resume) }
        _ = try machine.request(.pause)
        #expect(throws: SessionRejection("the meeting is already paused")) { try machine.request(.pause) }
        #expect(try machine.request(.next) == [turn(1, of: machine, at: 0), .playCue, .publish(.speaker)])
        #expect(machine.phase == .paused)
    }

    @Test func aRefusedRequestChangesNothing() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        _ = try machine.request(.end(.save))
        let saving = machine
        for request in [SessionMachine.Request.next, .pause, .resume, .end(.save), .end(.discard)] {
            #expect(throws: SessionRejection("the meeting is being saved")) { try machine.request(request) }
            #expect(machine == saving)
        }
    }

    @Test func reportsAudioTroubleAndGoesOn() throws {
        var machine = start(.fixture())
        #expect(machine.handle(.audioTrouble("microphone unplugged")) == [.publish(.error("microphone unplugged"))])
        #expect(machine.phase == .running)
    }

    // MARK: - Who said what

    @Test func attributesEachSettledUtteranceToWhoHadTheFloorAsItComes() throws {
        var machine = start(.fixture(attendees: 2, seconds: 4), records: true, transcribes: true)
        func words(_ text: String, from start: Double) -> [TranscriptWord] {
            text.split(separator: " ").enumerated().map {
                TranscriptWord(word: String($1), start: start + Double($0) * 0.3, end: start + Double($0) * 0.3 + 0.2)
            }
        }
        _ = machine.handle(
            .speechRecognized(.init(isFinal: true, text: "hello there", words: words("hello there", from: 0.5))))
        _ = machine.handle(.timerTicked)
        _ = machine.handle(.timerTicked)  // Blob 2 from 2 s
        _ = machine.handle(.speechRecognized(.init(isFinal: true, text: "my turn", words: words("my turn", from: 2.4))))
        #expect(machine.record.segments.map { $0.speaker?.name } == ["Blob 1", "Blob 2"])
        #expect(machine.record.segments.map(\.text) == ["hello there", "my turn"])
        #expect(machine.transcript == "hello there my turn")
    }

    // MARK: - The end of a meeting, in every order

    /// The facts that may come while a save waits, and the order they come in: the save completes once the
    /// recording and the recognizer are both done (or the timeout passes), exactly once, whatever the order.
    static let settleOrders: [[SessionMachine.Event]] = [
        [.recorderStopped, .recognizerFinished],
        [.recorderStopped, .speechFailed("crashed")],
        [.speechFailed("crashed"), .recorderStopped],
        [.recognizerFinished, .recorderStopped],
        [.recorderStopped, .settleTimedOut],
        [.settleTimedOut],
        [.settleTimedOut, .recorderStopped, .recognizerFinished],
        [.recorderStopped, .audioTrouble("overrun"), .timerTicked, .recognizerFinished],
    ]

    @Test(arguments: settleOrders)
    func aSaveCompletesOnceWhateverOrderTheFactsComeIn(order: [SessionMachine.Event]) throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        _ = try machine.request(.end(.save))
        var completions = 0
        var effects: [SessionMachine.Effect] = []
        for event in order {
            let step = machine.handle(event)
            effects += step
            completions += step.filter { if case .saveMeeting = $0 { true } else { false } }.count
        }
        #expect(completions == 1)
        #expect(machine.isOver)
        #expect(effects.last == .publish(.ended(.saved(machine.meeting))))
        // A recognizer still running when the save gives up on it is stopped, never left running.
        if order.first == .settleTimedOut { #expect(effects.contains(.cancelRecognizer)) }
        // Done before the timeout: the timeout is cancelled.
        if !order.contains(.settleTimedOut) { #expect(effects.contains(.cancelSettleTimeout)) }
    }

    /// An engine that never reads its audio but keeps writing finals timed past the meeting's end (or not
    /// past its latest word) does not hold the save open: only words that move it on within the audio do,
    /// and its times are brought within the meeting.
    @Test func aSaveWaitsOnlyForWordsThatMoveTheRecognizerOnWithinTheAudio() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        _ = try machine.request(.end(.save), at: 15)
        #expect(machine.handle(.recorderStopped) == [.finishRecognizer])
        let last = RecognizedSpeech(
            isFinal: true, text: "done", words: [TranscriptWord(word: "done", start: 14, end: 14.5)], start: 14,
            end: 14.5)
        #expect(
            machine.handle(.speechRecognized(last), at: 16)
                == [.publish(.transcript), .writeJournal, .settle(.saving, from: 16)])
        let earlier = RecognizedSpeech(isFinal: true, text: "again", start: 12, end: 13)
        #expect(machine.handle(.speechRecognized(earlier), at: 17) == [.publish(.transcript), .writeJournal])
        let beyond = RecognizedSpeech(
            isFinal: true, text: "w18", words: [TranscriptWord(word: "w18", start: 18, end: 18.5)], start: 18, end: 18.5
        )
        #expect(machine.handle(.speechRecognized(beyond), at: 18) == [.publish(.transcript), .writeJournal])
        #expect(machine.record.segments.last?.words == [TranscriptWord(word: "w18", start: 15, end: 15)])
        #expect(machine.record.segments.allSatisfy { $0.end <= 15 })
    }

    @Test func theRecognizerIsFinishedOnlyOnceTheRecordingHasStopped() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        let ending = try machine.request(.end(.save))
        #expect(!ending.contains(.finishRecognizer))
        #expect(machine.handle(.recorderStopped) == [.finishRecognizer])
    }

    /// A recognizer behind the meeting (a loaded machine: 28 s behind in `syncups-bench --only callaudio`)
    /// still holds the end of the meeting in its queue when the save begins: each word it gives re-arms the
    /// wait, so the last speaker's words are not cut off 20 s after the end while it works through them.
    @Test func aSaveWaitsForARecognizerThatKeepsGivingWordsAndNoLongerThanTheLongestSettle() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        _ = try machine.request(.end(.save), at: 10)
        #expect(machine.handle(.recorderStopped) == [.finishRecognizer])
        let late = RecognizedSpeech(isFinal: true, text: "the remote side", start: 1, end: 2)
        #expect(
            machine.handle(.speechRecognized(late), at: 15)
                == [.publish(.transcript), .writeJournal, .settle(.saving, from: 15)])
        let partial = RecognizedSpeech(isFinal: false, text: "still", start: 3, end: 4)
        #expect(
            machine.handle(.speechRecognized(partial), at: 30) == [.publish(.transcript), .settle(.saving, from: 30)])
        // A recognizer that talks on forever does not hold the save past the longest settle.
        let endless = RecognizedSpeech(isFinal: false, text: "still going", start: 3, end: 5)
        #expect(
            machine.handle(.speechRecognized(endless), at: 10 + SessionMachine.longestSettle + 1) == [
                .publish(.transcript)
            ])
        #expect(machine.pendingEnding != nil)
        let effects = machine.handle(.recognizerFinished)
        #expect(effects.last == .publish(.ended(.saved(machine.meeting))))
        #expect(machine.transcript == "the remote side still going")
    }

    /// The daemon stopping keeps its few seconds: systemd's stop timeout does not wait for a slow recognizer.
    @Test func theWaitOfAStoppingDaemonIsNotExtendedByWords() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        _ = try machine.request(.end(.save))
        _ = machine.handle(.daemonStopping)
        _ = machine.handle(.recorderStopped)
        let late = RecognizedSpeech(isFinal: true, text: "late", start: 1, end: 2)
        #expect(machine.handle(.speechRecognized(late), at: 3) == [.publish(.transcript), .writeJournal])
    }

    /// During the meeting, words re-arm nothing: there is no wait.
    @Test func wordsDuringTheMeetingArmNoWait() {
        var machine = start(.fixture(), records: true, transcribes: true)
        let words = RecognizedSpeech(isFinal: true, text: "hello", start: 0, end: 1)
        #expect(machine.handle(.speechRecognized(words)) == [.publish(.transcript), .writeJournal])
    }

    @Test func theDaemonStoppingSavesTheMeetingAsInterruptedWithinTheShorterWait() throws {
        var machine = start(.fixture(attendees: 2, seconds: 60), records: true, transcribes: true)
        _ = machine.handle(.timerTicked)
        _ = machine.handle(.speechRecognized(.init(isFinal: false, text: "half a sen")))
        #expect(
            machine.handle(.daemonStopping) == [
                .disarmTimer, .publish(.ending), .flushJournal, .settle(.stopping, from: 1), .stopRecorder,
            ])
        #expect(machine.handle(.recorderStopped) == [.finishRecognizer])
        // The recognizer does not finish in time: its provisional words are saved as they stand.
        let effects = machine.handle(.settleTimedOut)
        #expect(machine.record.isInterrupted)
        #expect(machine.transcript == "half a sen")
        #expect(effects == [.cancelRecognizer] + saved(.interrupted(meeting("half a sen")), machine))
    }

    /// A save the user asked for stays a save (not "interrupted", which is for a meeting the stop cut
    /// short); it only gets the shorter wait.
    @Test func theDaemonStoppingDuringASaveShortensItsWaitAndKeepsItASave() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        _ = try machine.request(.end(.save))
        #expect(machine.handle(.daemonStopping) == [.settle(.stopping, from: 0)])
        _ = machine.handle(.recorderStopped)
        let effects = machine.handle(.recognizerFinished)
        #expect(effects.last == .publish(.ended(.saved(machine.meeting))))
        #expect(!machine.record.isInterrupted)
    }

    @Test func everyFinalGoesToTheJournalEvenOneThatOnlySettlesThePartialAsItWas() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        #expect(
            machine.handle(.speechRecognized(.init(isFinal: false, text: "the last thing"))) == [.publish(.transcript)])
        #expect(
            machine.handle(.speechRecognized(.init(isFinal: true, text: "the last thing")))
                == [.publish(.transcript), .writeJournal])
        #expect(machine.record.finalText == "the last thing")
        #expect(machine.handle(.speechRecognized(.init(isFinal: false, text: ""))) == [])
    }

    @Test func anEditDuringTheSaveDoesNotChangeTheMeetingsAttendees() throws {
        var machine = start(.fixture(attendees: 2), records: true)
        _ = try machine.request(.end(.save))
        #expect(machine.handle(.syncUpEdited(.fixture(attendees: 1))) == [])
        #expect(machine.syncUp.attendees.count == 2)
    }

    @Test func theDaemonStoppingWithNothingToWaitForSavesAtOnce() throws {
        var machine = start(.fixture())
        let effects = machine.handle(.daemonStopping)
        #expect(effects == [.disarmTimer, .publish(.ending)] + saved(.interrupted(meeting("")), machine))
    }

    @Test func aDeletedSyncUpDiscardsEvenASaveInProgress() throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        _ = try machine.request(.end(.save))
        #expect(machine.settleDeadline?.at == 20_000_000_000)
        // The wait, the recognizer and the recording still completing are stopped; the timer already was.
        #expect(
            machine.handle(.syncUpDeleted) == [
                .discardMeeting, .cancelSettleTimeout, .cancelRecognizer, .abandonRecorder, .finish,
                .publish(.ended(.syncUpDeleted)),
            ])
        #expect(machine.settleDeadline == nil)
        #expect(machine.handle(.recorderStopped) == [])
    }

    /// Every fact, in every phase, after the end: nothing happens.
    @Test(arguments: [
        SessionMachine.Event.timerTicked, .syncUpDeleted, .speechFailed("x"), .recognizerFinished,
        .audioTrouble("x"), .recorderStopped, .settleTimedOut, .daemonStopping,
        .speechRecognized(.init(isFinal: true, text: "x")),
    ])
    func factsAfterTheEndChangeNothing(event: SessionMachine.Event) throws {
        var machine = start(.fixture(), records: true, transcribes: true)
        _ = try machine.request(.end(.discard))
        let over = machine
        #expect(machine.handle(event) == [])
        #expect(machine == over)
    }
}

extension TickSchedule {
    /// How many ticks are due at `now`, taken one at a time as the machine's catch-up takes them.
    mutating func ticksDue(at now: Instant) -> Int {
        var count = 0
        while takeTick(at: now) != nil { count += 1 }
        return count
    }
}

@Suite struct TickScheduleTests {
    let second: Int64 = 1_000_000_000

    @Test func countsExactlyOneTickPerSecondOverAnHourOfLateWakeUps() {
        var schedule = TickSchedule(startingAt: 0)
        var now: Int64 = 0
        var ticks = 0
        var generator = SplitMix64.forTest()
        while now < 3600 * second {
            // Wake up at the deadline plus up to 300 ms of scheduling delay, sometimes seconds late.
            now = schedule.nextDeadline! + Int64.random(in: 0...300_000_000, using: &generator)
            if Int.random(in: 0..<100, using: &generator) == 0 { now += 3 * second }
            ticks += schedule.ticksDue(at: min(now, 3600 * second))
        }
        #expect(ticks == 3600, "\(generator)")
    }

    @Test func keepsTheFractionOfASecondAcrossAPause() {
        var schedule = TickSchedule(startingAt: 0)
        #expect(schedule.ticksDue(at: 1_000_000_000) == 1)
        schedule.pause(at: 1_700_000_000)  // 300 ms of this second left
        #expect(schedule.ticksDue(at: 9 * second) == 0)
        schedule.resume(at: 10 * second)
        #expect(schedule.nextDeadline == 10 * second + 300_000_000)
        #expect(schedule.ticksDue(at: 10 * second + 299_999_999) == 0)
        #expect(schedule.ticksDue(at: 10 * second + 300_000_000) == 1)
    }
}
