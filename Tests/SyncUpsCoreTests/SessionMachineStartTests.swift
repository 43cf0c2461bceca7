import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// Each way a meeting's start can fail, one by one, with every effect the machine asks for and the state (the
/// parts, the phase, the warnings `session.start` replies with) it is left in; then how the meeting that
/// started without that part ends.
@Suite struct SessionMachineStartTests {
    let now = Date(timeIntervalSince1970: 1_234_567_890)
    let meetingID = Meeting.ID(UUID(counting: 0))
    let syncUp = SyncUp.fixture(attendees: 2, seconds: 4)

    func begin(records: Bool = true, call: SessionMachine.CallSource = .off, transcribes: Bool = true) -> (
        SessionMachine, [SessionMachine.Effect]
    ) {
        SessionMachine.start(
            syncUp: syncUp, meetingID: meetingID, startDate: now, records: records, call: call,
            transcribes: transcribes)
    }

    /// What every start ends with: the timer armed a second ahead, the first turn, the journal, `started`.
    var started: [SessionMachine.Effect] {
        [
            .armTimer(at: 1_000_000_000), .beginTurn(speakerIndex: 0, speaker: syncUp.attendees[0], at: 0),
            .writeJournal, .publish(.started),
        ]
    }

    func ended(_ machine: SessionMachine, _ ending: SessionMachine.Ending) -> [SessionMachine.Effect] {
        [.saveMeeting(machine.meeting, machine.record, of: machine.syncUp), .finish, .publish(.ended(ending))]
    }

    /// No microphone (`audio-device` names a device that is not there): nothing else is asked for (no
    /// speaker encoder, no recognizer: there is no audio), the meeting runs, says both things it goes
    /// without, and its save waits for nothing.
    @Test func theMicrophoneMissing() throws {
        var (machine, effects) = begin()
        #expect(effects == [.startRecorder(call: nil), .settle(.opening, from: 0)])
        let reason = "cannot open the audio device virtmic: ALSA: No such file or directory"
        effects = machine.handle(.recorderFailedToStart(reason, warnings: []), at: 0)
        let warnings = [
            "recording without audio: \(reason)", "recording without a transcript: there is no audio to transcribe",
        ]
        #expect(effects == [.cancelSettleTimeout] + started + warnings.map(SessionMachine.Effect.warn))
        #expect(machine.startWarnings == warnings)
        #expect(!machine.isStarting && machine.phase == .running)
        #expect(machine.recorder == .absent && machine.recognizer == .absent && machine.voiceListener == .absent)
        #expect(!machine.isTranscribing)
        let save = try machine.request(.end(.save), at: 1)
        #expect(save == [.disarmTimer, .publish(.ending)] + ended(machine, .saved(machine.meeting)))
    }

    /// The recognizer does not start (no model, the speech command exits): the recording runs without a
    /// transcript; the save stops the recording and asks nothing of a recognizer.
    @Test func theRecognizerFailingToStart() throws {
        var (machine, _) = begin()
        #expect(machine.handle(.recorderStarted(warnings: []), at: 0) == [.cancelSettleTimeout, .startVoiceListener])
        #expect(machine.handle(.voiceListenerUnavailable("voices off"), at: 0) == [.startRecognizer])
        #expect(machine.recognizer == .starting)
        let reason = "whisper did not start: the command exited with status 127"
        let effects = machine.handle(.recognizerFailedToStart(reason), at: 0)
        #expect(effects == started + [.warn("recording without a transcript: \(reason)")])
        #expect(machine.startWarnings == ["recording without a transcript: \(reason)"])
        #expect(machine.recorder == .running && machine.recognizer == .absent && !machine.isTranscribing)
        // What a recognizer that did not start might still report changes nothing.
        let running = machine
        #expect(machine.handle(.speechRecognized(.init(isFinal: true, text: "ghost")), at: 0.5) == [])
        #expect(machine.handle(.recognizerFinished, at: 0.5) == [])
        #expect(machine == running)
        let save = try machine.request(.end(.save), at: 1)
        #expect(save == [.disarmTimer, .publish(.ending), .flushJournal, .settle(.saving, from: 1), .stopRecorder])
        let done = machine.handle(.recorderStopped, at: 1.2)
        #expect(done == [.cancelSettleTimeout] + ended(machine, .saved(machine.meeting)))
    }

    /// The disk is full at the first journal write (the one `session.start` makes before replying): the
    /// meeting runs on, and its subscribers hear once that a crash would now lose it.
    @Test func aFullDiskAtTheFirstJournalWrite() throws {
        var (machine, effects) = begin(records: false, transcribes: false)
        #expect(effects == started)
        let full = "meetings/x.recording.json: No space left on device"
        #expect(
            machine.handle(.journalFailed(full), at: 0) == [
                .publish(
                    .error(
                        "cannot write the meeting's journal (\(full)): the meeting goes on, but a crash now would lose its transcript"
                    ))
            ])
        #expect(machine.hasReportedJournalFailure && machine.phase == .running && machine.startWarnings.isEmpty)
        #expect(machine.handle(.journalFailed(full), at: 0.5) == [])
        #expect(machine.handle(.timerTicked, at: 1) == [.publish(.tick), .armTimer(at: 2_000_000_000)])
        #expect(machine.secondsElapsed == 1)
    }

    /// No speaker encoder (no voice model, or it did not start): the start goes on to the recognizer and
    /// warns of nothing (words go to the floor, as before voices), and nothing is stopped at the end.
    @Test func theVoiceListenerUnavailable() throws {
        var (machine, _) = begin()
        _ = machine.handle(.recorderStarted(warnings: []), at: 0)
        #expect(machine.voiceListener == .starting)
        #expect(
            machine.handle(.voiceListenerUnavailable("voices off: no voice model configured"), at: 0) == [
                .startRecognizer
            ])
        #expect(machine.voiceListener == .absent)
        #expect(machine.handle(.recognizerStarted(startedAhead: false), at: 0) == started)
        #expect(machine.startWarnings.isEmpty && machine.isTranscribing)
        let discard = try machine.request(.end(.discard), at: 1)
        #expect(
            discard == [
                .discardMeeting, .disarmTimer, .cancelRecognizer, .abandonRecorder, .finish,
                .publish(.ended(.discarded)),
            ])
    }

    /// A speaker encoder that started is stopped once, after `finish` (which stops the capture feeding it),
    /// however the meeting ends.
    @Test(arguments: ["discard", "syncUpDeleted", "daemonStopping"])
    func theVoiceListenerIsStoppedAfterTheCaptureHoweverTheMeetingEnds(ending: String) throws {
        var (machine, _) = begin(transcribes: false)
        #expect(machine.handle(.recorderStarted(warnings: []), at: 0) == [.cancelSettleTimeout, .startVoiceListener])
        #expect(machine.handle(.voiceListenerStarted, at: 0) == started)
        #expect(machine.voiceListener == .running)
        var effects: [SessionMachine.Effect]
        switch ending {
        case "discard":
            effects = try machine.request(.end(.discard), at: 1)
        case "syncUpDeleted":
            effects = machine.handle(.syncUpDeleted, at: 1)
        default:
            #expect(
                machine.handle(.daemonStopping, at: 1) == [
                    .disarmTimer, .publish(.ending), .flushJournal, .settle(.stopping, from: 1), .stopRecorder,
                ])
            effects = machine.handle(.recorderStopped, at: 1.1)
        }
        let finish = try #require(effects.firstIndex(of: .finish))
        // A discarded meeting's learning is dropped with it; one the daemon's stop interrupts is kept, as it is.
        let stop = SessionMachine.Effect.stopVoiceListener(
            keepsLearning: ending != "discard" && ending != "syncUpDeleted")
        #expect(effects.filter { $0 == stop }.count == 1, "\(effects)")
        #expect(effects.firstIndex(of: stop) == finish + 1)
        #expect(machine.voiceListener == .stopped && machine.isOver)
        #expect(machine.handle(.voiceListenerStarted, at: 2) == [])
    }

    /// The call's source is missing (a `--call-audio` source that is not there, or no sound server): the
    /// microphone records, the meeting says it goes without the call, after `started`.
    @Test func theCallDeviceMissing() throws {
        var (machine, effects) = begin(call: .source("meet.monitor"), transcribes: false)
        #expect(effects == [.startRecorder(call: "meet.monitor"), .settle(.opening, from: 0)])
        let warning = "recording without the call: cannot open the call's source: pulse: No such entity"
        #expect(
            machine.handle(.recorderStarted(warnings: [warning]), at: 0) == [.cancelSettleTimeout, .startVoiceListener])
        effects = machine.handle(.voiceListenerUnavailable("voices off"), at: 0)
        #expect(effects == started + [.warn(warning)])
        #expect(machine.startWarnings == [warning])
        #expect(machine.recorder == .running && machine.recognizer == .absent && machine.phase == .running)
    }

    /// No sound server to record the call from: the recorder is asked for the microphone alone; a source asked
    /// for by name says so after `started`, `auto` only in the session object.
    @Test(arguments: [true, false])
    func theCallUnavailable(askedByName: Bool) throws {
        let warning = "recording without the call: no sound server (none): recording the microphone through ALSA alone"
        var (machine, effects) = begin(
            call: .unavailable(warning: askedByName ? warning : nil), transcribes: false)
        #expect(effects == [.startRecorder(call: nil), .settle(.opening, from: 0)])
        #expect(machine.startWarnings == (askedByName ? [warning] : []))
        #expect(machine.handle(.recorderStarted(warnings: []), at: 0) == [.cancelSettleTimeout, .startVoiceListener])
        effects = machine.handle(.voiceListenerUnavailable("voices off"), at: 0)
        #expect(effects == started + (askedByName ? [.warn(warning)] : []))
        #expect(machine.recorder == .running && machine.phase == .running)
    }

    /// A meeting without audio records no call, whatever it was handed: nothing is started, nothing said of it.
    @Test func noAudioNoCall() {
        let (machine, effects) = begin(
            records: false, call: .unavailable(warning: "recording without the call: x"), transcribes: false)
        #expect(effects == started)
        #expect(machine.startWarnings.isEmpty && machine.recorder == .absent)
    }

    /// The recognizer's readiness (what `session start` waits for) is the machine's: said once, as `updated`.
    @Test func theRecognizerSaysItIsReadyOnce() throws {
        var (machine, _) = begin()
        _ = machine.handle(.recorderStarted(warnings: []), at: 0)
        _ = machine.handle(.voiceListenerUnavailable("voices off"), at: 0)
        _ = machine.handle(.recognizerStarted(startedAhead: false), at: 0)
        #expect(!machine.isRecognizerReady)
        #expect(machine.handle(.recognizerReady, at: 0.3) == [.publish(.updated)])
        #expect(machine.isRecognizerReady)
        #expect(machine.handle(.recognizerReady, at: 0.4) == [])
    }
}
