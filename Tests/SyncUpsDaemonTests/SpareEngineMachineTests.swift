import SyncUpsSpeech
import Testing

@testable import SyncUpsDaemon

/// The spare's machine alone (`SpareEngine`): each input's phase and actions, without a daemon, an engine or
/// a clock. `SpareEngineTests` runs the same through the whole daemon with a real command.
@Suite struct SpareEngineMachineTests {
    /// A spare whose start was asked for and queued: generation 1, starting.
    static func starting() -> SpareEngine {
        var spare = SpareEngine(isOn: true)
        #expect(spare.want(whileAMeetingRuns: false) == [.start(generation: 1)])
        spare.queued(true)
        #expect(spare.phase == .starting)
        return spare
    }

    @Test func anEngineThatCannotStartAheadIsNeverStarted() {
        var spare = SpareEngine(isOn: false)
        #expect(spare.want(whileAMeetingRuns: false) == [])
        #expect(spare.phase == .off)
        #expect(spare.settingsChanged(isOn: false) == [.cancelIdleTimer, .discardEngine])
        #expect(spare.phase == .off)
        #expect(spare.want(whileAMeetingRuns: false) == [])
    }

    @Test func oneSpareAtMostAndNoneWhileAMeetingRuns() {
        var spare = SpareEngine(isOn: true)
        #expect(spare.want(whileAMeetingRuns: true) == [])
        var starting = Self.starting()
        #expect(starting.want(whileAMeetingRuns: false) == [], "one is being started")
        spare = starting
        _ = spare.receive(.said(1, .ready))
        #expect(spare.want(whileAMeetingRuns: false) == [], "one is up")
    }

    /// A start the clean-up worker had no room for: none is being started, and the next want asks again.
    @Test func aStartNotQueuedLeavesNone() {
        var spare = SpareEngine(isOn: true)
        #expect(spare.want(whileAMeetingRuns: false) == [.start(generation: 1)])
        spare.queued(false)
        #expect(spare.phase == .none)
        #expect(spare.want(whileAMeetingRuns: false) == [.start(generation: 2)])
    }

    @Test func startedThenUpArmsTheIdleTimerAndIsWarm() {
        var spare = Self.starting()
        #expect(spare.receive(.started(1, error: nil)) == [.armIdleTimer])
        #expect(spare.phase == .starting, "started, not up yet (loading its model)")
        #expect(spare.receive(.said(1, .ready)) == [])
        #expect(spare.phase == .warm)
    }

    /// The engine's first line can be handled before the worker's report of the start that launched it (both
    /// go through the mailbox, from two threads): the idle timer is armed all the same. Before, the report was
    /// dropped as the spare was warm already, and the spare ran until a meeting or the daemon's stop.
    @Test func upBeforeItsStartIsReportedStillArmsTheIdleTimer() {
        var spare = Self.starting()
        #expect(spare.receive(.said(1, .ready)) == [])
        #expect(spare.phase == .warm)
        #expect(spare.receive(.started(1, error: nil)) == [.armIdleTimer])
        #expect(spare.phase == .warm)
    }

    @Test func aFailedStartLeavesNoneAndSaysWhy() {
        var spare = Self.starting()
        #expect(
            spare.receive(.started(1, error: SpeechError("no such engine"))) == [.reportStartFailure("no such engine")])
        #expect(spare.phase == .none)
        #expect(spare.want(whileAMeetingRuns: false) == [.start(generation: 2)])
    }

    @Test func aDeadSpareIsEnded() {
        var spare = Self.starting()
        _ = spare.receive(.started(1, error: nil))
        _ = spare.receive(.said(1, .ready))
        #expect(
            spare.receive(.said(1, .failed("exited with status 3")))
                == [.reportDeath("exited with status 3"), .cancelIdleTimer, .discardEngine, .reportEnded])
        #expect(spare.phase == .none)
    }

    /// What an ended spare's start and engine report later is old news: the next spare is not touched.
    @Test func reportsAboutAnEndedSpareAreIgnored() {
        var spare = Self.starting()
        #expect(spare.end() == [.cancelIdleTimer, .discardEngine, .reportEnded])
        #expect(spare.want(whileAMeetingRuns: false) == [.start(generation: 2)])
        spare.queued(true)
        #expect(spare.receive(.started(1, error: nil)) == [])
        #expect(spare.receive(.said(1, .ready)) == [])
        #expect(spare.receive(.said(1, .failed("gone"))) == [])
        #expect(spare.phase == .starting, "the second spare is still being started")
        #expect(spare.receive(.said(1, .log("loading"))) == [.reportLog("loading")], "its log is still logged")
    }

    /// A meeting took the spare while it was being started: its start's report arms no idle timer.
    @Test func aSpareTakenByAMeetingIsNotTimedOrEnded() {
        var spare = Self.starting()
        #expect(spare.taken() == [.cancelIdleTimer])
        #expect(spare.phase == .none)
        #expect(spare.receive(.started(1, error: nil)) == [])
        #expect(spare.receive(.said(1, .failed("the meeting's now"))) == [])
    }

    @Test func endingWhenNoneIsThereReportsNothing() {
        var spare = SpareEngine(isOn: true)
        #expect(spare.end() == [.cancelIdleTimer, .discardEngine])
        #expect(spare.phaseChanges == 0)
    }

    /// New speech settings end the spare (it runs the old ones) and turn spares on or off.
    @Test func newSettingsEndTheSpareAndTurnSparesOnOrOff() {
        var spare = Self.starting()
        _ = spare.receive(.said(1, .ready))
        #expect(spare.settingsChanged(isOn: false) == [.cancelIdleTimer, .discardEngine, .reportEnded])
        #expect(spare.phase == .off)
        #expect(spare.settingsChanged(isOn: true) == [.cancelIdleTimer, .discardEngine])
        #expect(spare.phase == .none)
    }

    /// A meeting's start, on the worker, takes only the spare there when the meeting began: a later one, wanted
    /// meanwhile (the meeting ended before its start's turn), stays wanted, and its start goes ahead.
    @Test func aHandOverTakesOnlyItsOwnSpare() {
        let slot = SpareSlot()
        slot.want(1)
        #expect(slot.offer(PreparedRecognition(attach: { _ in nil }, discard: {}), as: 1))
        slot.want(2)
        #expect(slot.take(1) != nil)
        #expect(slot.isWanted(2))
        #expect(slot.take(1) == nil, "taken once")
        #expect(slot.offer(PreparedRecognition(attach: { _ in nil }, discard: {}), as: 2))
        #expect(slot.takeAll() != nil && !slot.isWanted(2), "the spare ended: none is wanted")
    }

    /// `status`'s replay stamp counts the phase's changes: each change counts once, a non-change not at all.
    @Test func eachChangeOfPhaseIsCounted() {
        var spare = Self.starting()  // none → starting
        _ = spare.receive(.said(1, .ready))  // → warm
        _ = spare.receive(.said(1, .ready))  // no change
        _ = spare.taken()  // → none
        _ = spare.taken()  // no change
        #expect(spare.phaseChanges == 3)
    }
}
