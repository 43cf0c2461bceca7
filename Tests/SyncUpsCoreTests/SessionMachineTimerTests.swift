import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// The machine's timer on nanoseconds handed in with the events: where it asks the one timer to be armed,
/// the ticks a late wake-up catches up (each at its own deadline), a pause that keeps the part of the second
/// already run, the last speaker's end and the save, after which nothing is armed again.
@Suite struct SessionMachineTimerTests {
    static let second: Int64 = 1_000_000_000
    let meetingID = Meeting.ID(UUID(counting: 0))

    /// A running session of 3 attendees, 6 seconds (2 each), started at 0, and its first effects.
    func start(records: Bool = false) -> (SessionMachine, [SessionMachine.Effect]) {
        var (machine, effects) = SessionMachine.start(
            syncUp: .fixture(attendees: 3, seconds: 6), meetingID: meetingID, startDate: Date(timeIntervalSince1970: 0),
            records: records, transcribes: false)
        if records {
            effects = machine.handle(.recorderStarted(warnings: []), atNanoseconds: 0)
            effects = machine.handle(.voiceListenerUnavailable("voices off"), atNanoseconds: 0)
        }
        return (machine, effects)
    }

    @Test func theStartArmsTheTimerOneSecondAhead() {
        let (machine, effects) = start()
        #expect(effects.first == .armTimer(at: Self.second))
        #expect(effects.filter { if case .armTimer = $0 { true } else { false } }.count == 1)
        #expect(!effects.contains(.disarmTimer))
        #expect(machine.schedule.nextDeadline == Self.second)
    }

    @Test func aLateWakeUpCatchesUpEveryTickAtItsOwnDeadline() {
        var (machine, _) = start()
        // Woken 1.5 s late: the ticks of seconds 1 and 2, the turn handed over at exactly 2 s, not 2.5.
        let effects = machine.handle(.timerTicked, atNanoseconds: 2 * Self.second + Self.second / 2)
        let next = SessionMachine.Effect.beginTurn(speakerIndex: 1, speaker: machine.syncUp.attendees[1], at: 2)
        #expect(
            effects == [
                .publish(.tick), .publish(.tick), next, .playCue, .publish(.speaker), .armTimer(at: 3 * Self.second),
            ])
        #expect(machine.secondsElapsed == 2 && machine.record.turns.map(\.end) == [2, nil])
        // Early (a timer is never early, but a wake-up with nothing due changes nothing and re-arms).
        #expect(machine.handle(.timerTicked, atNanoseconds: 3 * Self.second - 1) == [.armTimer(at: 3 * Self.second)])
        #expect(machine.secondsElapsed == 2)
    }

    @Test func aPauseKeepsThePartOfTheSecondAlreadyRun() throws {
        var (machine, _) = start()
        #expect(
            machine.handle(.timerTicked, atNanoseconds: Self.second) == [
                .publish(.tick), .armTimer(at: 2 * Self.second),
            ])
        #expect(try machine.request(.pause, atNanoseconds: 1_700_000_000) == [.disarmTimer, .publish(.paused)])
        #expect(machine.schedule.nextDeadline == nil)
        // A wake-up while paused (an armed timer raced the pause) ticks nothing and arms nothing.
        #expect(machine.handle(.timerTicked, atNanoseconds: 5 * Self.second) == [])
        #expect(
            try machine.request(.resume, atNanoseconds: 10 * Self.second) == [
                .armTimer(at: 10 * Self.second + 300_000_000), .publish(.resumed),
            ])
        #expect(machine.handle(.timerTicked, atNanoseconds: 10 * Self.second + 300_000_000).first == .publish(.tick))
        #expect(machine.secondsElapsed == 2)
    }

    @Test func theLastTickDisarmsAndSavesAndLaterDeadlinesAreNotTicked() {
        var (machine, _) = start()
        // Woken 9 s late: six ticks end the meeting; the catch-up stops at the save, nothing is armed again.
        let effects = machine.handle(.timerTicked, atNanoseconds: 10 * Self.second)
        #expect(effects.filter { $0 == .publish(.tick) }.count == 6)
        #expect(effects.contains(.disarmTimer) && effects.contains(.finish))
        #expect(!effects.contains { if case .armTimer = $0 { true } else { false } })
        #expect(machine.isOver && machine.secondsElapsed == 6 && machine.record.turns.map(\.end) == [2, 4, 6])
        #expect(machine.handle(.timerTicked, atNanoseconds: 11 * Self.second) == [])
    }

    @Test func endingWhileTheRecordingStopsArmsNothingAgain() {
        var (machine, _) = start(records: true)
        let effects = machine.handle(.timerTicked, atNanoseconds: 6 * Self.second)
        #expect(effects.contains(.disarmTimer) && effects.last == .stopRecorder)
        #expect(!effects.contains { if case .armTimer = $0 { true } else { false } })
        #expect(machine.phase == .ending && !machine.isOver && machine.schedule.nextDeadline == nil)
        #expect(machine.handle(.timerTicked, atNanoseconds: 7 * Self.second) == [])
    }

    /// The machine's seconds are the ones `Duration.seconds` gives the controller, to the bit.
    @Test func secondsAreDurationSecondsExactly() {
        var generator = SystemRandomNumberGenerator()
        for nanoseconds in [0, 1, 999_999_999, 1_000_000_000, 3_600_000_000_001]
            + (0..<1000).map({ _ in
                Int64.random(in: 0...86_400 * Self.second, using: &generator)
            })
        {
            let (seconds, attoseconds) = Duration.nanoseconds(nanoseconds).components
            #expect(SessionMachine.seconds(nanoseconds) == Double(seconds) + Double(attoseconds) / 1e18)
        }
    }
}
