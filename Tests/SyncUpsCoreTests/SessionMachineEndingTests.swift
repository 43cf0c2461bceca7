import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// Every way a meeting ends, with everything running (the recording, the speaker encoder, the recognizer,
/// the cue, the timer): each input's effects in full. The machine stops what it started and nothing else
/// does: after the end nothing it knows of still runs, and the daemon's `finish` only releases.
@Suite struct SessionMachineEndingTests {
    static let second: Int64 = 1_000_000_000
    let meetingID = Meeting.ID(UUID(counting: 0))
    let date = Date(timeIntervalSince1970: 1_234_567_890)

    /// A meeting of 3 attendees, 6 seconds, everything started at 0, its first second ticked.
    func running() -> SessionMachine {
        var (machine, effects) = SessionMachine.start(
            syncUp: .fixture(attendees: 3, seconds: 6), meetingID: meetingID, startDate: date, records: true,
            transcribes: true, playsCue: true)
        #expect(effects == [.startRecorder(call: nil), .settle(.opening, from: 0)])
        #expect(machine.handle(.recorderStarted(warnings: []), at: 0) == [.cancelSettleTimeout, .startVoiceListener])
        #expect(machine.handle(.voiceListenerStarted, at: 0) == [.startRecognizer])
        effects = machine.handle(.recognizerStarted(startedAhead: false), at: 0)
        #expect(effects.first == .startCue && effects.contains(.armTimer(at: Self.second)))
        #expect(machine.handle(.timerTicked, at: 1) == [.publish(.tick), .armTimer(at: 2 * Self.second)])
        return machine
    }

    /// The end of a save once its parts are done: the meeting saved, the cue closed, the speaker encoder
    /// stopped after the capture that feeds it.
    func saved(_ machine: SessionMachine, _ ending: SessionMachine.Ending, waited: [SessionMachine.Effect])
        -> [SessionMachine.Effect]
    {
        waited + [
            .saveMeeting(machine.meeting, machine.record, of: machine.syncUp), .stopCue, .finish,
            .stopVoiceListener(keepsLearning: true),
            .publish(.ended(ending)),
        ]
    }

    /// Nothing the machine started runs any more, and no wait is armed.
    func expectAllStopped(_ machine: SessionMachine) {
        #expect(machine.isOver)
        #expect(machine.schedule.nextDeadline == nil)
        #expect(machine.settleDeadline == nil)
        #expect(machine.recorder != .running && machine.recognizer != .running && machine.recognizer != .stopping)
        #expect(machine.voiceListener == .stopped)
    }

    @Test func saved() throws {
        var machine = running()
        #expect(
            try machine.request(.end(.save), at: 1.5) == [
                .disarmTimer, .publish(.ending), .flushJournal,
                .armSettleTimeout(.saving, at: 1_500_000_000 + 20 * Self.second), .stopRecorder,
            ])
        #expect(machine.settleDeadline?.at == 21_500_000_000 && machine.settleDeadline?.deadline == .saving)
        #expect(machine.handle(.recorderStopped, at: 2) == [.finishRecognizer])
        let effects = machine.handle(.recognizerFinished, at: 3)
        #expect(effects == saved(machine, .saved(machine.meeting), waited: [.cancelSettleTimeout]))
        expectAllStopped(machine)
    }

    @Test func pausedThenSaved() throws {
        var machine = running()
        #expect(try machine.request(.pause, at: 1.5) == [.disarmTimer, .publish(.paused)])
        // The timer is already stopped: the save does not disarm it again.
        #expect(
            try machine.request(.end(.save), at: 2.5) == [
                .publish(.ending), .flushJournal, .armSettleTimeout(.saving, at: 22_500_000_000), .stopRecorder,
            ])
        #expect(machine.handle(.recorderStopped, at: 3) == [.finishRecognizer])
        let effects = machine.handle(.recognizerFinished, at: 3.5)
        #expect(effects == saved(machine, .saved(machine.meeting), waited: [.cancelSettleTimeout]))
        expectAllStopped(machine)
    }

    @Test func discarded() throws {
        var machine = running()
        #expect(
            try machine.request(.end(.discard), at: 1.5) == [
                .discardMeeting, .disarmTimer, .cancelRecognizer, .abandonRecorder, .stopCue, .finish,
                .stopVoiceListener(keepsLearning: false), .publish(.ended(.discarded)),
            ])
        expectAllStopped(machine)
        #expect(machine.recorder == .stopped && machine.recognizer == .stopped)
    }

    @Test func syncUpDeleted() {
        var machine = running()
        #expect(
            machine.handle(.syncUpDeleted, at: 1.5) == [
                .discardMeeting, .disarmTimer, .cancelRecognizer, .abandonRecorder, .stopCue, .finish,
                .stopVoiceListener(keepsLearning: false), .publish(.ended(.syncUpDeleted)),
            ])
        expectAllStopped(machine)
    }

    /// The sync-up deleted while the save waits for the recognizer: the wait and the recognizer are stopped,
    /// the recording, stopped already, deleted.
    @Test func syncUpDeletedDuringTheSave() throws {
        var machine = running()
        _ = try machine.request(.end(.save), at: 1.5)
        #expect(machine.handle(.recorderStopped, at: 2) == [.finishRecognizer])
        #expect(
            machine.handle(.syncUpDeleted, at: 2.5) == [
                .discardMeeting, .cancelSettleTimeout, .cancelRecognizer, .abandonRecorder, .stopCue, .finish,
                .stopVoiceListener(keepsLearning: false), .publish(.ended(.syncUpDeleted)),
            ])
        expectAllStopped(machine)
    }

    @Test func daemonStopping() {
        var machine = running()
        #expect(
            machine.handle(.daemonStopping, at: 1.5) == [
                .disarmTimer, .publish(.ending), .flushJournal, .armSettleTimeout(.stopping, at: 6_500_000_000),
                .stopRecorder,
            ])
        #expect(machine.settleDeadline?.at == 6_500_000_000 && machine.settleDeadline?.deadline == .stopping)
        #expect(machine.handle(.recorderStopped, at: 2) == [.finishRecognizer])
        let effects = machine.handle(.recognizerFinished, at: 2.5)
        #expect(machine.record.isInterrupted)
        #expect(effects == saved(machine, .interrupted(machine.meeting), waited: [.cancelSettleTimeout]))
        expectAllStopped(machine)
    }

    /// The recognizer never gives its last words: at the deadline it is cancelled and the meeting saved.
    @Test func settleTimeout() throws {
        var machine = running()
        _ = try machine.request(.end(.save), at: 1.5)
        #expect(machine.handle(.recorderStopped, at: 2) == [.finishRecognizer])
        let effects = machine.handle(.settleTimedOut, at: 21.5)
        #expect(effects == saved(machine, .saved(machine.meeting), waited: [.cancelRecognizer]))
        expectAllStopped(machine)
    }

    /// Found by an attack: a meeting saved while its recognizer's last words were provisional (cut off by the
    /// end, or an utterance the grammar search settled to nothing) kept them in its transcript and not in its
    /// segments. They are settled as they stand, to whoever had the floor where they lie; a discard keeps
    /// nothing.
    @Test func aProvisionalTailIsSavedAsASegmentOfItsTurn() throws {
        for ending in ["finished", "timeout", "stopping", "discard"] {
            var machine = running()
            _ = try machine.request(.next, at: 1.2)
            _ = machine.handle(
                .speechRecognized(.init(isFinal: true, text: "first words", start: 0.2, end: 0.9)), at: 1.3)
            _ = machine.handle(
                .speechRecognized(.init(isFinal: false, text: "today i will", start: 1.4, end: 1.9)), at: 2)
            switch ending {
            case "timeout":
                _ = try machine.request(.end(.save), at: 2.1)
                _ = machine.handle(.recorderStopped, at: 2.2)
                _ = machine.handle(.settleTimedOut, at: 22.1)
            case "stopping":
                _ = machine.handle(.daemonStopping, at: 2.1)
                _ = machine.handle(.recorderStopped, at: 2.2)
                _ = machine.handle(.recognizerFinished, at: 2.3)
            case "discard":
                _ = try machine.request(.end(.discard), at: 2.1)
            default:
                _ = try machine.request(.end(.save), at: 2.1)
                _ = machine.handle(.recorderStopped, at: 2.2)
                _ = machine.handle(.recognizerFinished, at: 2.3)
            }
            expectAllStopped(machine)
            guard ending != "discard" else {
                #expect(machine.record.segments.map(\.text) == ["first words"])
                continue
            }
            #expect(machine.record.transcript == "first words today i will", "\(ending)")
            #expect(machine.record.partial == "", "\(ending)")
            let segments = machine.record.segments
            #expect(segments.map(\.text) == ["first words", "today i will"], "\(ending)")
            #expect(segments.map(\.speaker) == Array(machine.syncUp.attendees.prefix(2)), "\(ending)")
            #expect(segments.last.map { ($0.start, $0.end) } ?? (0, 0) == (1.4, 1.9), "\(ending)")
        }
        // Attack 101: a tail placed past the end (pulled back to it) is still the last speaker's: it is settled
        // before the last turn closes, not after (it went to nobody).
        var machine = running()
        _ = try machine.request(.next, at: 1.2)
        _ = try machine.request(.end(.save), at: 2.1)
        _ = machine.handle(.speechRecognized(.init(isFinal: false, text: "last words", start: 30, end: 31)), at: 2.15)
        _ = machine.handle(.recorderStopped, at: 2.2)
        _ = machine.handle(.recognizerFinished, at: 2.3)
        #expect(machine.record.segments.map(\.speaker) == [machine.syncUp.attendees[1]])
    }

    /// The timeouts are the daemon's, handed in at the start; a word that moves the recognizer on re-arms the
    /// ordinary wait from its own instant, and the daemon stopping shortens it from then.
    @Test func theSettleDeadlineIsTheMachinesState() throws {
        var (machine, _) = SessionMachine.start(
            syncUp: .fixture(), meetingID: meetingID, startDate: date, records: true, transcribes: true,
            settleTimeouts: .init(saving: 7 * Self.second, stopping: 2 * Self.second))
        _ = machine.handle(.recorderStarted(warnings: []), at: 0)
        _ = machine.handle(.voiceListenerUnavailable("voices off"), at: 0)
        _ = machine.handle(.recognizerStarted(startedAhead: false), at: 0)
        #expect(machine.settleDeadline == nil)
        #expect(try machine.request(.end(.save), at: 10).contains(.armSettleTimeout(.saving, at: 17 * Self.second)))
        _ = machine.handle(.recorderStopped, at: 10.5)
        let words = RecognizedSpeech(
            isFinal: true, text: "done", words: [TranscriptWord(word: "done", start: 9, end: 9.5)], start: 9, end: 9.5)
        #expect(
            machine.handle(.speechRecognized(words), at: 12).last == .armSettleTimeout(.saving, at: 19 * Self.second))
        #expect(machine.settleDeadline?.at == 19 * Self.second)
        #expect(machine.handle(.daemonStopping, at: 13) == [.armSettleTimeout(.stopping, at: 15 * Self.second)])
        #expect(machine.settleDeadline?.at == 15 * Self.second && machine.settleDeadline?.deadline == .stopping)
    }
}
