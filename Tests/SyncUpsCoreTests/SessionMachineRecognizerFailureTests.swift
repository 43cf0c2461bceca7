import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// A recognizer's failure, and the one case the meeting does not simply go on without a transcript: the
/// engine started ahead (a spare) that fails before it has given anything. It most likely died just before
/// the meeting took it, its death not yet seen (attack 92 killed spares within 5 ms of `session.start`: 8 of 8
/// meetings had no transcript); a fresh engine is started, once.
@Suite struct SessionMachineRecognizerFailureTests {
    let now = Date(timeIntervalSince1970: 1_234_567_890)
    let meetingID = Meeting.ID(UUID(counting: 0))
    let syncUp = SyncUp.fixture(attendees: 2, seconds: 60)
    static let restartWarning = SessionMachine.Effect.warn(
        "the speech engine started ahead failed before it transcribed anything (killed): starting a fresh one")

    /// A meeting that records and transcribes, its recognizer about to report its start.
    func startingRecognizer() -> SessionMachine {
        var (machine, _) = SessionMachine.start(
            syncUp: syncUp, meetingID: meetingID, startDate: now, records: true, transcribes: true)
        _ = machine.handle(.recorderStarted(warnings: []), at: 0)
        #expect(machine.handle(.voiceListenerUnavailable("voices off"), at: 0) == [.startRecognizer])
        return machine
    }

    /// A running meeting whose recognizer started ahead (`startedAhead`) or fresh.
    func running(startedAhead: Bool) -> SessionMachine {
        var machine = startingRecognizer()
        #expect(machine.handle(.recognizerStarted(startedAhead: startedAhead), at: 0).contains(.publish(.started)))
        #expect(!machine.isStarting && machine.isTranscribing)
        return machine
    }

    static func saves(_ effects: [SessionMachine.Effect]) -> Bool {
        effects.contains { if case .saveMeeting = $0 { true } else { false } }
    }

    func words(_ text: String) -> SessionMachine.Event {
        .speechRecognized(RecognizedSpeech(isFinal: true, text: text))
    }

    @Test func aSpareThatFailsBeforeItsFirstResultIsReplacedOnceAndTheFreshOneTranscribes() {
        var machine = running(startedAhead: true)
        #expect(
            machine.handle(.speechFailed("killed"), at: 2) == [
                .cancelRecognizer, Self.restartWarning, .startRecognizer, .publish(.updated),
            ])
        #expect(machine.recognizer == .starting && machine.isTranscribing && !machine.isRecognizerReady)
        #expect(machine.speechError == nil && machine.transcript == "", "no failure mark: transcription goes on")
        #expect(machine.handle(.recognizerStarted(startedAhead: false), at: 3) == [.publish(.updated)])
        #expect(machine.recognizer == .running)
        _ = machine.handle(words("today i deploy"), at: 4)
        #expect(machine.transcript == "today i deploy")
        // The fresh one failing is a failure for good: no second restart.
        #expect(
            machine.handle(.speechFailed("crashed"), at: 5) == [
                .cancelRecognizer, .publish(.error("crashed")), .publish(.transcript),
            ])
        #expect(!machine.isTranscribing && machine.recognizer == .stopped && machine.speechError == "crashed")
        #expect(machine.transcript == "today i deploy ❌")
    }

    /// A spare that gave words, then failed, was working: the meeting goes on without a transcript, as with
    /// any engine.
    @Test func aSpareThatGaveWordsThenFailedIsNotReplaced() {
        var machine = running(startedAhead: true)
        _ = machine.handle(words("hello"), at: 1)
        #expect(
            machine.handle(.speechFailed("crashed"), at: 2) == [
                .cancelRecognizer, .publish(.error("crashed")), .publish(.transcript),
            ])
        #expect(machine.speechError == "crashed" && machine.recognizer == .stopped)
    }

    /// A fresh engine failing before its first result is a failure for good (a second fresh start would fail
    /// the same way: its model, its command).
    @Test func aFreshEngineThatFailsBeforeItsFirstResultIsNotReplaced() {
        var machine = running(startedAhead: false)
        #expect(
            machine.handle(.speechFailed("no model"), at: 1) == [
                .cancelRecognizer, .publish(.error("no model")), .publish(.transcript),
            ])
        #expect(machine.speechError == "no model" && !machine.isTranscribing)
    }

    /// The spare's death can come through before its start's report: the meeting, still starting, starts a
    /// fresh engine and waits for it as for any.
    @Test func aSpareThatDiedBeforeItsStartWasReportedIsReplacedBeforeTheMeetingStarts() {
        var machine = startingRecognizer()
        #expect(machine.handle(.speechFailed("killed"), at: 0) == [])
        #expect(
            machine.handle(.recognizerStarted(startedAhead: true), at: 0) == [
                .cancelRecognizer, Self.restartWarning, .startRecognizer, .publish(.updated),
            ])
        #expect(machine.isStarting && machine.recognizer == .starting)
        let started = machine.handle(.recognizerStarted(startedAhead: false), at: 0.5)
        #expect(started.contains(.publish(.started)) && machine.isTranscribing && machine.startWarnings.isEmpty)
    }

    /// A fresh engine that died before its start was reported did not start: the meeting starts without a
    /// transcript and says so, and the dead engine's stream is let go.
    @Test func aFreshEngineThatDiedBeforeItsStartWasReportedDidNotStart() {
        var machine = startingRecognizer()
        _ = machine.handle(.speechFailed("exit 3"), at: 0)
        let effects = machine.handle(.recognizerStarted(startedAhead: false), at: 0)
        #expect(effects.first == .cancelRecognizer && effects.contains(.publish(.started)))
        #expect(machine.startWarnings == ["recording without a transcript: exit 3"])
        #expect(!machine.isTranscribing && machine.recognizer == .absent)
    }

    /// The fresh engine does not start: the meeting goes on without a transcript and says why.
    @Test func aFreshEngineThatDoesNotStartMidMeetingStopsTheTranscript() throws {
        var machine = running(startedAhead: true)
        _ = machine.handle(.speechFailed("killed"), at: 1)
        #expect(
            machine.handle(.recognizerFailedToStart("exec failed"), at: 2) == [
                .publish(.error("speech recognition failed: exec failed")), .publish(.transcript),
            ])
        #expect(!machine.isTranscribing && machine.recognizer == .absent)
        #expect(machine.speechError == "speech recognition failed: exec failed")
        // The meeting goes on, and its save needs only the recording.
        _ = machine.handle(.timerTicked, at: 3)
        #expect(try machine.request(.end(.save), at: 3).contains(.stopRecorder))
        #expect(Self.saves(machine.handle(.recorderStopped, at: 3)))
    }

    /// The fresh engine dies before its start is reported: the meeting goes on without a transcript, the
    /// failure said in the engine's own words (before, "speech recognition failed: " came twice).
    @Test func aFreshEngineThatDiesBeforeItsStartIsReportedMidMeetingStopsTheTranscript() {
        var machine = running(startedAhead: true)
        _ = machine.handle(.speechFailed("killed"), at: 1)
        #expect(machine.handle(.speechFailed("speech recognition failed: exit 3"), at: 1.5) == [])
        #expect(
            machine.handle(.recognizerStarted(startedAhead: false), at: 2) == [
                .cancelRecognizer, .publish(.error("speech recognition failed: exit 3")), .publish(.transcript),
            ])
        #expect(!machine.isTranscribing && machine.recognizer == .absent)
        #expect(machine.speechError == "speech recognition failed: exit 3")
    }

    /// A save asked for while the fresh engine starts waits for it, then lets it settle its last words.
    @Test func aSaveDuringTheRestartWaitsForTheFreshEngine() throws {
        var machine = running(startedAhead: true)
        _ = machine.handle(.speechFailed("killed"), at: 1)
        let ending = try machine.request(.end(.save), at: 2)
        #expect(ending.contains(.stopRecorder) && machine.pendingEnding != nil)
        #expect(machine.handle(.recorderStopped, at: 2) == [], "the recognizer is still starting")
        #expect(
            machine.handle(.recognizerStarted(startedAhead: false), at: 2.5) == [.publish(.updated), .finishRecognizer])
        #expect(Self.saves(machine.handle(.recognizerFinished, at: 3)))
    }

    /// A spare failing while the meeting is being saved is not replaced: there is nothing left to transcribe.
    @Test func aSpareThatFailsDuringTheSaveIsNotReplaced() throws {
        var machine = running(startedAhead: true)
        _ = try machine.request(.end(.save), at: 2)
        let effects = machine.handle(.speechFailed("killed"), at: 2)
        #expect(!effects.contains(.startRecognizer) && machine.speechError == "killed")
    }

    /// A discard while the fresh engine starts stops it once its start reports.
    @Test func aDiscardDuringTheRestartStopsTheFreshEngine() throws {
        var machine = running(startedAhead: true)
        _ = machine.handle(.speechFailed("killed"), at: 1)
        #expect(try machine.request(.end(.discard), at: 2).contains(.cancelRecognizer))
        #expect(machine.recognizer == .stopped && machine.isOver)
        #expect(machine.handle(.recognizerStarted(startedAhead: false), at: 2.5) == [])
    }
}
