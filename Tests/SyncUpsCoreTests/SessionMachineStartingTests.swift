import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// The start's wait for the capture device, which the daemon opens off its loop: between `startRecorder` and
/// its report (`recorderStarted` or `recorderFailedToStart`) any request and any fact can arrive. Each is
/// decided here, with every effect and the state it leaves; `everyFactWhileStartingIsDecided` names every
/// fact, so a new one does not compile until it is decided for this phase too.
@Suite struct SessionMachineStartingTests {
    let now = Date(timeIntervalSince1970: 1_234_567_890)
    let meetingID = Meeting.ID(UUID(counting: 0))
    let syncUp = SyncUp.fixture(attendees: 2, seconds: 4)

    /// A meeting that records, transcribes and plays the cue, waiting for its capture device.
    func starting() -> SessionMachine {
        let (machine, effects) = SessionMachine.start(
            syncUp: syncUp, meetingID: meetingID, startDate: now, records: true, transcribes: true, playsCue: true)
        #expect(effects == [.startRecorder(call: nil), .settle(.opening, from: 0)])
        #expect(machine.isStarting && machine.recorder == .starting && machine.recognizer == .absent)
        return machine
    }

    /// The recording and the recognizer report in: the meeting starts as it always did.
    func finishStart(_ machine: inout SessionMachine, at time: Double) -> [SessionMachine.Effect] {
        #expect(
            machine.handle(.recorderStarted(warnings: []), at: time) == [.cancelSettleTimeout, .startVoiceListener])
        #expect(machine.handle(.voiceListenerUnavailable("voices off"), at: time) == [.startRecognizer])
        return machine.handle(.recognizerStarted(startedAhead: false), at: time)
    }

    /// What a discard before the start returns: the meeting's files removed, the recording abandoned once
    /// open (the daemon queues that after the open), no timer, no recognizer, no cue to stop, `ended`.
    func discarded(_ ending: SessionMachine.Ending) -> [SessionMachine.Effect] {
        [.discardMeeting, .cancelSettleTimeout, .abandonRecorder, .finish, .publish(.ended(ending))]
    }

    /// `session.end discard` from another client while the device opens: the meeting ends there; the open's
    /// report, whichever it is, changes nothing after.
    @Test func aDiscardEndsTheMeetingAndAbandonsTheRecordingOnceOpen() throws {
        var machine = starting()
        #expect(try machine.request(.end(.discard), at: 0.2) == discarded(.discarded))
        #expect(machine.isOver && machine.ending == .discarded && machine.recorder == .stopped)
        let over = machine
        #expect(machine.handle(.recorderStarted(warnings: []), at: 0.5) == [])
        #expect(machine.handle(.recorderFailedToStart("busy", warnings: []), at: 0.5) == [])
        #expect(machine == over)
    }

    /// The recognizer starts off the loop too (a speech command's spawn, or the engine started ahead taken on
    /// the clean-up worker): a meeting that ends while it starts stops it once it has (`cancelRecognizer`, which
    /// the daemon applies to the start's report when it comes), whichever way it ends; the report then changes
    /// nothing. On the old machine the recognizer was left to run: no `cancelRecognizer`.
    @Test(arguments: ["discard", "syncUpDeleted", "daemonStopping"])
    func aMeetingEndedWhileItsRecognizerStartsStopsIt(ending: String) throws {
        var machine = starting()
        #expect(machine.handle(.recorderStarted(warnings: []), at: 0.1) == [.cancelSettleTimeout, .startVoiceListener])
        #expect(machine.handle(.voiceListenerUnavailable("voices off"), at: 0.1) == [.startRecognizer])
        #expect(machine.isStarting && machine.recognizer == .starting)
        let effects: [SessionMachine.Effect]
        let expected: SessionMachine.Ending
        switch ending {
        case "discard":
            effects = try machine.request(.end(.discard), at: 0.2)
            expected = .discarded
        case "syncUpDeleted":
            effects = machine.handle(.syncUpDeleted, at: 0.2)
            expected = .syncUpDeleted
        default:
            effects = machine.handle(.daemonStopping, at: 0.2)
            expected = .discarded
        }
        #expect(effects == [.discardMeeting, .cancelRecognizer, .abandonRecorder, .finish, .publish(.ended(expected))])
        #expect(machine.isOver && machine.recognizer == .stopped)
        let over = machine
        #expect(machine.handle(.recognizerStarted(startedAhead: false), at: 0.3) == [])
        #expect(machine.handle(.recognizerReady, at: 0.3) == [])
        #expect(machine == over)
    }

    /// The engine says it is up before its start is reported: a spare started ahead replays `ready` as it is
    /// taken, before the worker posts its start. Dropped there, the meeting's transcription said "starting" for
    /// good, the engine saying `ready` only once (attack 37b's E4).
    @Test func aRecognizerReadyBeforeItsStartIsReportedCountsOnceItStarts() {
        var machine = starting()
        #expect(
            machine.handle(.recorderStarted(warnings: []), at: 0.1) == [.cancelSettleTimeout, .startVoiceListener])
        #expect(machine.handle(.voiceListenerUnavailable("voices off"), at: 0.1) == [.startRecognizer])
        #expect(machine.handle(.recognizerReady, at: 0.2) == [])
        let started = machine.handle(.recognizerStarted(startedAhead: false), at: 0.2)
        #expect(started.contains(.publish(.started)))
        #expect(machine.isRecognizerReady && machine.recognizer == .running)
    }

    /// `session.end save` while the device opens: refused (nothing is recorded yet), nothing changed, and the
    /// start goes on; the save works once the meeting has started.
    @Test func aSaveIsRefusedAndTheStartGoesOn() throws {
        var machine = starting()
        let before = machine
        #expect(throws: SessionRejection.self) { try machine.request(.end(.save), at: 0.2) }
        #expect(machine == before)
        let started = finishStart(&machine, at: 0.3)
        #expect(started.contains(.publish(.started)) && !machine.isStarting)
        #expect(try machine.request(.end(.save), at: 1).contains(.stopRecorder))
    }

    /// `next`, `pause`, `resume`, marking someone absent or back while the device opens: refused with the
    /// reason, nothing changed.
    @Test(arguments: [
        SessionMachine.Request.next, .pause, .resume, .markAbsent("Blob"), .markBack("Blob"),
    ])
    func otherRequestsAreRefused(request: SessionMachine.Request) {
        var machine = starting()
        let before = machine
        #expect {
            try machine.request(request, at: 0.2)
        } throws: {
            ($0 as? SessionRejection)?.reason == "the meeting is starting: try again once session.start has replied"
        }
        #expect(machine == before)
    }

    /// Another `session.start` while the device opens is refused, and says the meeting is starting.
    @Test func anotherStartIsRefusedSayingTheMeetingIsStarting() {
        let machine = starting()
        #expect(
            StartRequest.refusal(whileRunning: machine)
                == "a meeting of \"Design\" is starting; end it first (session.end) once it has, or discard it now")
    }

    /// The sync-up deleted while its meeting's device opens: discarded, as during the meeting.
    @Test func theSyncUpDeletedDiscardsTheMeeting() {
        var machine = starting()
        #expect(machine.handle(.syncUpDeleted, at: 0.2) == discarded(.syncUpDeleted))
        #expect(machine.isOver && machine.ending == .syncUpDeleted)
        #expect(machine.handle(.recorderStarted(warnings: []), at: 0.5) == [])
    }

    /// SIGTERM while the device opens: nothing was recorded, so nothing is saved; the meeting is discarded and
    /// the daemon's stop waits for nothing of it.
    @Test func theDaemonStoppingDiscardsTheMeeting() {
        var machine = starting()
        #expect(machine.handle(.daemonStopping, at: 0.2) == discarded(.discarded))
        #expect(machine.isOver && machine.settleDeadline == nil)
    }

    /// The sync-up edited while the device opens (a rename, an attendee removed, the duration): followed in
    /// silence, and the meeting starts with the edited sync-up (its first turn to the first attendee left).
    @Test func theSyncUpEditedIsFollowedAndTheMeetingStartsWithIt() {
        var machine = starting()
        var edited = syncUp
        edited.attendees.removeFirst()
        edited.attendees[0].name = "Renamed"
        edited.duration = .seconds(10)
        #expect(machine.handle(.syncUpEdited(edited), at: 0.2) == [])
        #expect(machine.syncUp == edited && machine.isStarting)
        let started = finishStart(&machine, at: 0.3)
        #expect(started.contains(.beginTurn(speakerIndex: 0, speaker: edited.attendees[0], at: 0)))
        #expect(machine.durationSeconds == 10 && machine.roster.rotationCount == 1)
    }

    /// Audio trouble while the device opens (the capture thread runs as soon as it is open and may report
    /// before the open does): said, not lost.
    @Test func audioTroubleIsSaid() {
        var machine = starting()
        #expect(
            machine.handle(.audioTrouble("the microphone went away"), at: 0.2) == [
                .publish(.error("the microphone went away"))
            ])
        #expect(machine.isStarting)
    }

    /// Every fact, while the device opens: what each does. The switch has no `default`, so a new fact does
    /// not compile until it is decided for this phase.
    @Test func everyFactWhileStartingIsDecided() {
        let attendee = syncUp.attendees[0]
        let facts: [SessionMachine.Event] = [
            .recorderStarted(warnings: []), .recorderFailedToStart("no device", warnings: []),
            .voiceListenerStarted, .voiceListenerUnavailable("off"), .recognizerStarted(startedAhead: false),
            .recognizerFailedToStart("no engine"), .recognizerReady, .timerTicked, .syncUpEdited(syncUp),
            .syncUpDeleted, .speechRecognized(RecognizedSpeech(isFinal: true, text: "early")),
            .voiceHeard(VoiceEvidence(speaker: attendee, start: 0, end: 0.2, confidence: 0.9)),
            .speechFailed("gone"), .recognizerFinished, .audioTrouble("overrun"), .journalFailed("full"),
            .recorderStopped, .settleTimedOut, .daemonStopping,
        ]
        for fact in facts {
            var machine = starting()
            let before = machine
            let effects = machine.handle(fact, at: 0.2)
            switch fact {
            case .recorderStarted:
                #expect(effects == [.cancelSettleTimeout, .startVoiceListener] && machine.recorder == .running)
            case .recorderFailedToStart:
                #expect(effects.contains(.publish(.started)) && machine.recorder == .absent && !machine.isStarting)
            case .syncUpDeleted:
                #expect(effects == discarded(.syncUpDeleted))
            case .daemonStopping:
                #expect(effects == discarded(.discarded))
            case .audioTrouble(let text):
                #expect(effects == [.publish(.error(text))] && machine == before)
            case .syncUpEdited:
                #expect(effects == [] && machine.isStarting)
            case .settleTimedOut:
                // The open's deadline: the meeting starts without audio (`SessionMachineTests`).
                #expect(effects.first == .abandonRecorder && machine.recorder == .absent && !machine.isStarting)
            case .recognizerReady:
                // Before the recognizer starts, nobody said so: nothing changes (kept once it starts, above).
                #expect(effects == [] && machine == before, "\(fact)")
            case .voiceListenerStarted, .voiceListenerUnavailable, .recognizerStarted, .recognizerFailedToStart,
                .timerTicked, .speechRecognized, .voiceHeard, .speechFailed, .recognizerFinished,
                .journalFailed, .recorderStopped:
                // Nothing that reports these runs yet: a stray report changes nothing.
                #expect(effects == [] && machine == before, "\(fact)")
            }
        }
    }
}
