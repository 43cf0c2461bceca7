import Foundation
import SyncUpsCore
import SyncUpsJSON
import SyncUpsTestSupport
import Testing

/// Insights from meetings driven through the session machine at stated times, so every number is known.
@Suite struct MeetingInsightsTests {
    static let date = Date(timeIntervalSince1970: 1_234_567_890)
    let meetingID = Meeting.ID(UUID(counting: 0))

    func words(_ spans: [(Double, Double)]) -> RecognizedSpeech {
        let words = spans.map { TranscriptWord(word: "word", start: $0.0, end: $0.1) }
        return RecognizedSpeech(isFinal: true, text: words.map(\.word).joined(separator: " "), words: words)
    }

    /// 3 attendees, 9 s: shares of 3 s. The first speaker is rotated out by the timer; the second is paused
    /// for 7 s and then rotated out; the third says `next` 1.25 s into the turn, and the meeting is saved later.
    func pausedAndCutShort() -> (SessionMachine, MeetingInsights) {
        let syncUp = SyncUp.fixture(attendees: 3, seconds: 9)
        var (machine, _) = SessionMachine.started(
            syncUp: syncUp, meetingID: meetingID, startDate: Self.date, transcribes: true)
        for second in 1...3 { _ = machine.handle(.timerTicked, at: Double(second)) }
        _ = try? machine.request(.pause, at: 3.5)
        _ = try? machine.request(.resume, at: 10.5)
        for second in 11...13 { _ = machine.handle(.timerTicked, at: Double(second)) }
        #expect(machine.speakerIndex == 2)
        _ = try? machine.request(.next, at: 14.25)
        _ = machine.handle(.speechRecognized(words([(0.5, 1.0), (1.2, 1.5)])), at: 15)
        _ = machine.handle(.speechRecognized(words([(3.2, 3.4)])), at: 15)
        _ = try? machine.request(.end(.save), at: 20)
        _ = machine.handle(.recorderStopped, at: 20.1)
        _ = machine.handle(.recognizerFinished, at: 20.3)
        #expect(machine.isOver)
        let record = machine.record
        let insights = MeetingInsights(
            timeline: record.timeline(durationSeconds: machine.durationSeconds), attendees: syncUp.attendees,
            segments: record.segments)
        return (machine, insights)
    }

    @Test func floorTimeExcludesPausesAndTheWaitForTheSave() {
        let (_, insights) = pausedAndCutShort()
        #expect(insights.plannedSeconds == 9)
        #expect(insights.realSeconds == 14.25)
        #expect(insights.pausedSeconds == 7)
        #expect(insights.turnsCutShort == 1)
        #expect(insights.attendees.map(\.share) == [3, 3, 3])
        #expect(insights.attendees.map(\.floor) == [3, 3, 1.25])
        #expect(insights.attendees.map(\.overtime) == [0, 0, -1.75])
        #expect(insights.attendees.map(\.turns) == [1, 1, 1])
        #expect(insights.attendees.allSatisfy { !$0.ranOver })
    }

    @Test func speakingTimeIsTheRecognizersWordTimesPerSpeaker() {
        let (_, insights) = pausedAndCutShort()
        let speaking = insights.attendees.map { ($0.speaking * 1000).rounded() / 1000 }
        #expect(speaking == [0.8, 0.2, 0])
    }

    @Test func anAttendeeRunsOverWhenTheSyncUpIsShortenedDuringTheirTurn() {
        var syncUp = SyncUp.fixture(attendees: 3, seconds: 9)
        var (machine, _) = SessionMachine.started(
            syncUp: syncUp, meetingID: meetingID, startDate: Self.date, transcribes: false)
        _ = machine.handle(.timerTicked, at: 1)
        syncUp.duration = .seconds(4)  // shares of 1 s from now on
        _ = machine.handle(.syncUpEdited(syncUp), at: 1.5)
        for second in 2...4 { _ = machine.handle(.timerTicked, at: Double(second)) }
        #expect(machine.isOver)
        let insights = MeetingInsights(
            timeline: machine.record.timeline(durationSeconds: machine.durationSeconds), attendees: syncUp.attendees,
            segments: [])
        #expect(insights.attendees.map(\.share) == [1, 1, 2])
        #expect(insights.attendees.map(\.floor) == [2, 1, 1])
        #expect(insights.attendees.map(\.ranOver) == [true, false, false])
        #expect(insights.turnsCutShort == 1)  // the last: its 2 s slot, but time was up after 1
        #expect(insights.realSeconds == 4)
    }

    @Test func anAttendeeWhoseTurnNeverCameHasNoTurnsAndIsNotCounted() {
        let syncUp = SyncUp.fixture(attendees: 3, seconds: 9)
        var (machine, _) = SessionMachine.started(
            syncUp: syncUp, meetingID: meetingID, startDate: Self.date, transcribes: false)
        _ = try? machine.request(.end(.save), at: 2)
        let insights = MeetingInsights(
            timeline: machine.record.timeline(durationSeconds: 9), attendees: syncUp.attendees, segments: [])
        #expect(insights.attendees.map(\.turns) == [1, 0, 0])
        #expect(insights.attendees.map(\.floor) == [2, 0, 0])
        #expect(insights.turnsCutShort == 1)
        #expect(AttendeeStats.of([insights]).map(\.attendee) == [syncUp.attendees[0]])
    }

    /// A hand-edited details file lists Ann three times: she gets one row, with her floor, and the shares are
    /// the timer's over the three attendees there really were.
    @Test func anAttendeeListedTwiceHasOneRow() {
        let (machine, _) = pausedAndCutShort()
        let attendees = SyncUp.fixture(attendees: 3, seconds: 9).attendees
        let insights = MeetingInsights(
            timeline: machine.record.timeline(durationSeconds: 9),
            attendees: [attendees[0], attendees[1], attendees[0], attendees[2], attendees[0]], segments: [])
        #expect(insights.attendees.map(\.attendee) == attendees)
        #expect(insights.attendees.map(\.share) == [3, 3, 3])
        #expect(insights.attendees.map(\.floor) == [3, 3, 1.25])
    }

    @Test func statsAverageOverTheMeetingsEachAttendeeSpokeIn() {
        let (_, first) = pausedAndCutShort()
        var second = first
        second.attendees[0].floor = 4  // ran over by 1 s
        second.attendees[0].speaking = 1.2
        second.attendees[2].turns = 0
        second.attendees[2].floor = 0
        let stats = AttendeeStats.of([second, first])
        #expect(stats.map(\.meetings) == [2, 2, 1])
        #expect(stats.map(\.averageFloor) == [3.5, 3, 1.25])
        #expect(abs(stats[0].averageSpeaking - 1.0) < 1e-9)
        #expect(stats.map(\.ranOver) == [1, 0, 0])
    }

    /// The by-voice averages count only the meetings attributed by voice: an older meeting (floor only) is
    /// no zero in them, and a sync-up without voices has none.
    @Test func statsAverageTheByVoiceFiguresOverTheMeetingsWithVoices() {
        let (_, floorOnly) = pausedAndCutShort()
        #expect(AttendeeStats.of([floorOnly]).allSatisfy { $0.meetingsWithVoices == 0 && $0.json["byVoice"] == .null })
        var first = floorOnly
        first.attendees[0].speakingByVoice = 2.4
        first.attendees[0].inOthersTurns = 0.8
        first.attendees[1].speakingByVoice = 3
        var second = first
        second.attendees[0].speakingByVoice = 3.6
        second.attendees[0].inOthersTurns = 0
        second.attendees[1].othersInTurn = [(first.attendees[0].attendee, 0.8)]
        let stats = AttendeeStats.of([second, first, floorOnly])
        #expect(stats.map(\.meetings) == [3, 3, 3])
        #expect(stats.map(\.meetingsWithVoices) == [2, 2, 2])
        #expect(stats.map(\.averageSpeakingByVoice) == [3, 3, 0])
        #expect(stats.map(\.averageInOthersTurns) == [0.4, 0, 0])
        #expect(
            stats[0].json["byVoice"] == ["meetings": 2, "averageSpeaking": 3.0, "averageInOthersTurns": 0.4],
            "\(stats[0].json)")
    }

    /// A tick stamped with its deadline (2.0) handled after a `next` that came at 2.03: the record's times do
    /// not go back, so no turn ends before it began.
    @Test func aRecordsTimesNeverGoBack() {
        let syncUp = SyncUp.fixture(attendees: 3, seconds: 9)
        var record = MeetingRecord()
        record.beginTurn(syncUp.attendees[0], at: 0)
        record.beginTurn(syncUp.attendees[1], at: 2.03)
        record.beginTurn(syncUp.attendees[2], at: 2.0)
        record.stopTimer(at: 1.5)
        record.finish(at: 1.0)
        #expect(record.turns.map(\.start) == [0, 2.03, 2.03])
        #expect(record.turns.map(\.end) == [2.03, 2.03, 2.03])
        #expect(record.pauses == [TimerPause(start: 2.03, end: 2.03)])
    }

    @Test func timelineAndInsightsSurviveTheirJSON() throws {
        let (machine, insights) = pausedAndCutShort()
        let timeline = machine.record.timeline(durationSeconds: 9)
        let timelineJSON = try JSONParser().parse(JSONWriter().encode(timeline.json))
        #expect(MeetingTimeline(json: timelineJSON) == timeline)
        let insightsJSON = try JSONParser().parse(JSONWriter().encode(insights.json))
        let decoded = try #require(MeetingInsights(json: insightsJSON))
        #expect(decoded.attendees.map(\.floor) == insights.attendees.map(\.floor))
        #expect(decoded.realSeconds == insights.realSeconds && decoded.turnsCutShort == 1)
        #expect(MeetingTimeline(json: ["turns": []]) == nil)
    }
}

@Suite struct TenthsTests {
    @Test(arguments: [
        (0.0, false, "00:00.0"), (0.04, true, "±00:00.0"), (61.25, true, "+01:01.3"), (-1.75, true, "-00:01.8"),
        (3725.0, false, "1:02:05.0"), (Double.infinity, false, "00:00.0"), (1e300, false, "8784:00:00.0"),
    ])
    func tenthsOfASecondOnAClock(seconds: Double, sign: Bool, text: String) {
        #expect(DurationText.tenths(seconds, sign: sign) == text)
    }

    @Test func aTimelineReadBackKeepsItsDurationInRange() throws {
        let json = try JSONParser().parse(Array(#"{"duration":1e30,"turns":[],"pauses":[]}"#.utf8))
        #expect(MeetingTimeline(json: json)?.durationSeconds == Int(TranscriptWord.maximumTime))
    }

    /// A hand-edited timeline: pauses out of order and overlapping count once, and a file of many turns and
    /// many pauses is computed in n log n (the naive sum over every pause for every turn held the daemon's
    /// loop for tens of seconds at 100,000 of each), with the same numbers.
    @Test func overlappingPausesCountOnceAndManyOfThemStayCheap() {
        let syncUp = SyncUp.fixture(attendees: 2, seconds: 20)
        let (ann, bob) = (syncUp.attendees[0], syncUp.attendees[1])
        // Ann 0–10 with pauses 2–4, 3–5 (overlapping) and 8–9 given first: 10 − 3 − 1 = 6 s of floor.
        let timeline = MeetingTimeline(
            durationSeconds: 20,
            turns: [SpeakerTurn(speaker: ann, start: 0, end: 10), SpeakerTurn(speaker: bob, start: 10, end: 20)],
            pauses: [TimerPause(start: 8, end: 9), TimerPause(start: 3, end: 5), TimerPause(start: 2, end: 4)])
        let insights = MeetingInsights(timeline: timeline, attendees: syncUp.attendees, segments: [])
        #expect(insights.attendees.map(\.floor) == [6, 10])
        #expect(insights.pausedSeconds == 4)

        let count = 100_000
        var turns: [SpeakerTurn] = []
        var pauses: [TimerPause] = []
        for index in 0..<count {
            let start = Double(2 * index)
            turns.append(SpeakerTurn(speaker: index % 2 == 0 ? ann : bob, start: start, end: start + 2))
            pauses.append(TimerPause(start: start + 0.5, end: start + 1))
        }
        let many = MeetingTimeline(durationSeconds: 2 * count, turns: turns, pauses: pauses)
        let big = MeetingInsights(timeline: many, attendees: syncUp.attendees, segments: [])
        let expected = Double(count) * 0.75
        #expect(big.attendees.map(\.floor) == [expected, expected])
    }
}
