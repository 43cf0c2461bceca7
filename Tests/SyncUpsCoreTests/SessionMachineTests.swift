import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// The SyncUps app's RecordMeeting tests, replayed one to one against the pure session machine, with every
/// state change and every effect stated.
@Suite struct SessionMachineTests {
    /// The app's tests use `Date(timeIntervalSince1970: 1_234_567_890)` and `UUID(0)` for the meeting.
    let now = Date(timeIntervalSince1970: 1_234_567_890)
    let meetingID = Meeting.ID(UUID(counting: 0))

    func start(_ syncUp: SyncUp, transcribes: Bool = false) -> SessionMachine {
        let (machine, effects) = SessionMachine.start(
            syncUp: syncUp, meetingID: meetingID, startDate: now, transcribes: transcribes)
        #expect(effects == [.startTimer, .beginTurn(speakerIndex: 0), .publish(.started)])
        #expect(machine.phase == .running && machine.secondsElapsed == 0 && machine.speakerIndex == 0)
        return machine
    }

    func meeting(_ transcript: String) -> Meeting { Meeting(id: meetingID, date: now, transcript: transcript) }

    /// `RecordMeetingTests.timer`: 3 attendees, 6 seconds.
    @Test func timerRotatesSpeakersAndSavesWhenTimeIsUp() throws {
        var machine = start(.fixture(attendees: 3, seconds: 6))
        let expected: [(speaker: Int, elapsed: Int, remaining: Int, effects: [SessionMachine.Effect])] = [
            (0, 1, 5, [.publish(.tick)]),
            (1, 2, 4, [.publish(.tick), .beginTurn(speakerIndex: 1), .playCue, .publish(.speaker)]),
            (1, 3, 3, [.publish(.tick)]),
            (2, 4, 2, [.publish(.tick), .beginTurn(speakerIndex: 2), .playCue, .publish(.speaker)]),
            (2, 5, 1, [.publish(.tick)]),
        ]
        for step in expected {
            #expect(try machine.handle(.timerTicked) == step.effects)
            #expect(
                (machine.speakerIndex, machine.secondsElapsed, machine.durationRemaining) == (
                    step.speaker, step.elapsed, step.remaining
                ))
        }
        #expect(try machine.handle(.timerTicked) == [.publish(.tick), .stopTimer, .publish(.ending), .settle])
        #expect((machine.speakerIndex, machine.secondsElapsed, machine.durationRemaining) == (2, 6, 0))
        let saved = meeting("")
        #expect(try machine.handle(.settled) == [.saveMeeting(saved), .finish, .publish(.ended(.finished(saved)))])
        #expect(machine.isOver)
        #expect(throws: SessionRejection.self) { try machine.handle(.timerTicked) }
    }

    /// `RecordMeetingTests.recordTranscript`; saving waits for the recognizer's last words.
    @Test func recordsTheTranscriptIntoTheSavedMeeting() throws {
        var machine = start(.fixture(attendees: 3, seconds: 6), transcribes: true)
        #expect(try machine.handle(.transcriptChanged("I completed")) == [.publish(.transcript)])
        for _ in 0..<5 { _ = try machine.handle(.timerTicked) }
        #expect(try machine.handle(.timerTicked) == [.publish(.tick), .stopTimer, .publish(.ending), .settle])
        #expect(machine.phase == .ending && !machine.isOver)
        #expect(throws: SessionRejection("the meeting is being saved")) { try machine.handle(.nextRequested) }
        #expect(try machine.handle(.timerTicked) == [])
        #expect(try machine.handle(.transcriptChanged("I completed the project")) == [.publish(.transcript)])
        let saved = meeting("I completed the project")
        #expect(try machine.handle(.settled) == [.saveMeeting(saved), .finish, .publish(.ended(.finished(saved)))])
    }

    @Test func savingByHandSettlesTheTranscriptToo() throws {
        var machine = start(.fixture(), transcribes: true)
        _ = try machine.handle(.pauseRequested)
        #expect(try machine.handle(.endRequested(.save)) == [.publish(.ending), .settle])
        let saved = meeting("")
        #expect(try machine.handle(.settled) == [.saveMeeting(saved), .finish, .publish(.ended(.saved(saved)))])
    }

    @Test func discardingNeedsNoSettledTranscript() throws {
        var machine = start(.fixture(), transcribes: true)
        #expect(
            try machine.handle(.endRequested(.discard)) == [.discardMeeting, .finish, .publish(.ended(.discarded))])
    }

    /// `RecordMeetingTests.endMeetingSave`: the "End meeting?" alert pauses the timer; saving inserts the meeting.
    @Test func endingEarlyAndSavingKeepsTheMeeting() throws {
        var machine = start(.fixture(attendees: 6, seconds: 60))
        #expect(try machine.handle(.pauseRequested) == [.stopTimer, .publish(.paused)])
        let paused = machine
        for _ in 0..<3 { #expect(try machine.handle(.timerTicked) == []) }
        #expect(machine == paused)
        #expect(try machine.handle(.endRequested(.save)) == [.publish(.ending), .settle])
        let saved = meeting("")
        #expect(try machine.handle(.settled) == [.saveMeeting(saved), .finish, .publish(.ended(.saved(saved)))])
    }

    /// `RecordMeetingTests.endMeetingDiscard`.
    @Test func endingEarlyAndDiscardingSavesNothing() throws {
        var machine = start(.fixture(attendees: 6, seconds: 60))
        _ = try machine.handle(.pauseRequested)
        #expect(
            try machine.handle(.endRequested(.discard)) == [.discardMeeting, .finish, .publish(.ended(.discarded))])
    }

    /// `RecordMeetingTests.nextSpeaker` (with the PF port's sound counts).
    @Test func nextSpeakerJumpsToTheSlotAndAtTheLastSpeakerWaitsToBeSaved() throws {
        var machine = start(.fixture(attendees: 3, seconds: 6))
        #expect(try machine.handle(.nextRequested) == [.beginTurn(speakerIndex: 1), .playCue, .publish(.speaker)])
        #expect((machine.speakerIndex, machine.secondsElapsed) == (1, 2))
        #expect(try machine.handle(.nextRequested) == [.beginTurn(speakerIndex: 2), .playCue, .publish(.speaker)])
        #expect((machine.speakerIndex, machine.secondsElapsed) == (2, 4))
        #expect(try machine.handle(.nextRequested) == [.stopTimer, .publish(.ending)])
        #expect(machine.phase == .ending)
        for _ in 0..<5 { #expect(try machine.handle(.timerTicked) == []) }
        #expect(machine.secondsElapsed == 4)
        #expect(throws: SessionRejection.self) { try machine.handle(.endRequested(.discard)) }
        #expect(try machine.handle(.endRequested(.save)) == [.settle])
        let saved = meeting("")
        #expect(try machine.handle(.settled) == [.saveMeeting(saved), .finish, .publish(.ended(.saved(saved)))])
    }

    /// The app's "Resume" button in the non-discardable alert: the timer runs again to the end.
    @Test func resumingFromTheLastSpeakersAlertRunsToTheEnd() throws {
        var machine = start(.fixture(attendees: 2, seconds: 4))
        _ = try machine.handle(.nextRequested)
        _ = try machine.handle(.nextRequested)
        #expect(machine.phase == .ending)
        #expect(try machine.handle(.resumeRequested) == [.startTimer, .publish(.resumed)])
        #expect(try machine.handle(.timerTicked) == [.publish(.tick)])
        #expect(try machine.handle(.timerTicked).contains(.settle))
        #expect(try machine.handle(.settled).contains(.saveMeeting(meeting(""))))
    }

    /// `RecordMeetingTests.continueAfterSpeechRecognitionFailure`.
    @Test func speechFailureMarksTheTranscriptAndTheMeetingGoesOn() throws {
        var machine = start(.fixture(attendees: 1, seconds: 6), transcribes: true)
        _ = try machine.handle(.transcriptChanged("I completed the project"))
        #expect(
            try machine.handle(.speechFailed("the recognizer crashed"))
                == [.stopTranscribing, .publish(.error("the recognizer crashed")), .publish(.transcript)]
        )
        #expect(machine.transcript == "I completed the project ❌")
        #expect(!machine.isTranscribing)
        #expect(try machine.handle(.transcriptChanged("late words")) == [])
        for _ in 0..<6 { _ = try machine.handle(.timerTicked) }
        #expect(try machine.handle(.settled).contains(.saveMeeting(meeting("I completed the project ❌"))))
    }

    /// `RecordMeetingTests.discardAfterSpeechRecognitionFailure`.
    @Test func speechFailureBeforeAnyWordLeavesTheTranscriptEmpty() throws {
        var machine = start(.fixture(attendees: 1, seconds: 6), transcribes: true)
        _ = try machine.handle(.speechFailed("no model"))
        #expect(machine.transcript == "")
        #expect(
            try machine.handle(.endRequested(.discard)) == [.discardMeeting, .finish, .publish(.ended(.discarded))])
    }

    /// PF's `timer` test: 3 attendees, 3 seconds; a cue at each change, none at the end.
    @Test func playsACueAtEachSpeakerChangeButNotAtTheEnd() throws {
        var machine = start(.fixture(attendees: 3, seconds: 3))
        var cues = 0
        for _ in 0..<3 { cues += try machine.handle(.timerTicked).filter { $0 == .playCue }.count }
        #expect(cues == 2)
        #expect(machine.speakerIndex == 2)
    }

    // MARK: - The app's bugs, fixed

    @Test func endsWhenTheDurationDoesNotDivideByTheAttendees() throws {
        var machine = start(.fixture(attendees: 7, seconds: 300))  // 42 s each, 294 s of slots
        var ticks = 0
        // Bounded, so a machine that never ends (the app's bug) fails the test instead of hanging it.
        while machine.pendingEnding == nil && ticks < 400 {
            _ = try machine.handle(.timerTicked)
            ticks += 1
            #expect(machine.speakerIndex <= 6)
        }
        #expect(ticks == 300)
        #expect(machine.speakerIndex == 6)
    }

    @Test func endsOnTimeWithMoreAttendeesThanSeconds() throws {
        var machine = start(.fixture(attendees: 5, seconds: 3))
        for _ in 0..<2 { #expect(try machine.handle(.timerTicked) == [.publish(.tick)]) }
        #expect(try machine.handle(.timerTicked).contains(.settle))
        #expect(machine.speakerIndex == 0)
    }

    // MARK: - Edits and requests

    @Test func appliesAttendeeAndDurationEditsFromTheNextTick() throws {
        var machine = start(.fixture(attendees: 3, seconds: 30))  // 10 s each
        for _ in 0..<4 { _ = try machine.handle(.timerTicked) }
        var edited = SyncUp.fixture(attendees: 2, seconds: 8)  // 4 s each: the 4 s already run ends slot 0
        edited.title = "Renamed"
        #expect(try machine.handle(.syncUpEdited(edited)) == [.publish(.updated)])
        #expect(machine.syncUp.title == "Renamed")
        #expect(try machine.handle(.timerTicked) == [.publish(.tick)])  // 5: not a multiple of 4
        for _ in 0..<2 { _ = try machine.handle(.timerTicked) }
        #expect(try machine.handle(.timerTicked).contains(.settle))  // 8: the new duration
    }

    @Test func keepsTheSpeakerInRangeWhenAttendeesAreRemoved() throws {
        var machine = start(.fixture(attendees: 3, seconds: 30))
        _ = try machine.handle(.nextRequested)
        _ = try machine.handle(.nextRequested)
        _ = try machine.handle(.syncUpEdited(.fixture(attendees: 1, seconds: 30)))
        #expect(machine.speakerIndex == 0)
        #expect(machine.speaker?.name == "Blob 1")
    }

    @Test func discardsTheMeetingWhenItsSyncUpIsDeleted() throws {
        var machine = start(.fixture())
        #expect(try machine.handle(.syncUpDeleted) == [.discardMeeting, .finish, .publish(.ended(.syncUpDeleted))])
    }

    @Test func refusesRequestsThatDoNotApply() throws {
        var machine = start(.fixture())
        #expect(throws: SessionRejection("the meeting is not paused")) { try machine.handle(.resumeRequested) }
        _ = try machine.handle(.pauseRequested)
        #expect(throws: SessionRejection("the meeting is already paused")) { try machine.handle(.pauseRequested) }
        #expect(try machine.handle(.nextRequested) == [.beginTurn(speakerIndex: 1), .playCue, .publish(.speaker)])
        #expect(machine.phase == .paused)
    }

    @Test func reportsAudioTroubleAndGoesOn() throws {
        var machine = start(.fixture())
        #expect(try machine.handle(.audioTrouble("microphone unplugged")) == [.publish(.error("microphone unplugged"))])
        #expect(machine.phase == .running)
    }
}

@Suite struct TickScheduleTests {
    let second: Int64 = 1_000_000_000

    @Test func countsExactlyOneTickPerSecondOverAnHourOfLateWakeUps() {
        var schedule = TickSchedule(startingAt: 0)
        var now: Int64 = 0
        var ticks = 0
        var generator = SystemRandomNumberGenerator()
        while now < 3600 * second {
            // Wake up at the deadline plus up to 300 ms of scheduling delay, sometimes seconds late.
            now = schedule.nextDeadline! + Int64.random(in: 0...300_000_000, using: &generator)
            if Int.random(in: 0..<100, using: &generator) == 0 { now += 3 * second }
            ticks += schedule.ticksDue(at: min(now, 3600 * second))
        }
        #expect(ticks == 3600)
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
