import SyncUpsCore
import SyncUpsJSON
import SyncUpsTestSupport
import Testing

/// The transcript is built in place from partials and finals, and each settled utterance is attributed once.
@Suite struct MeetingRecordTests {
    @Test func buildsTheTranscriptFromPartialsAndFinals() {
        var record = MeetingRecord()
        record.add(RecognizedSpeech(isFinal: false, text: " hel "))
        #expect(record.transcript == "hel" && record.partial == "hel" && record.finalText == "")
        record.add(RecognizedSpeech(isFinal: true, text: "hello there"))
        #expect(record.transcript == "hello there" && record.partial == "")
        record.add(RecognizedSpeech(isFinal: false, text: "Zoë ❌ 東"))
        #expect(record.transcript == "hello there Zoë ❌ 東")
        #expect(record.finalText == "hello there")
        record.add(RecognizedSpeech(isFinal: false, text: ""))
        #expect(record.transcript == "hello there")
        record.add(RecognizedSpeech(isFinal: true, text: "   "))
        #expect(record.transcript == "hello there")
        record.add(RecognizedSpeech(isFinal: false, text: "half"))
        record.markFailure()
        #expect(record.transcript == "hello there half ❌")
        // Attack 101: the provisional words before the ❌ are a segment too.
        #expect(record.segments.map(\.text) == ["hello there", "half"])
        let isChanged = record.add(RecognizedSpeech(isFinal: true, text: "late"))
        #expect(!isChanged)
        #expect(record.transcript == "hello there half ❌")
    }

    @Test func aFinalWithoutWordsStillGoesToWhoeverHadTheFloor() {
        var record = MeetingRecord()
        let ann = SyncUp.fixture(attendees: 2).attendees[0]
        let bo = SyncUp.fixture(attendees: 2).attendees[1]
        record.beginTurn(ann, at: 0)
        record.beginTurn(bo, at: 10)
        record.add(RecognizedSpeech(isFinal: true, text: "no timings here", start: 11, end: 12))
        #expect(record.segments.map(\.speaker) == [bo])
        #expect(record.segments.map(\.text) == ["no timings here"])
        // Attack 101: an end before the start is put in order, not saved as it came.
        record.add(RecognizedSpeech(isFinal: true, text: "backwards", start: 12.5, end: 12.2))
        #expect(record.segments.last.map { [$0.start, $0.end] } == [12.2, 12.5])
    }

    /// Attack 101: the same provisional words again, later (no final between: an utterance that settled to
    /// nothing), are settled where they came last.
    @Test func aRepeatedTailIsSettledWhereItCameLast() {
        var record = MeetingRecord()
        let (ann, bo) = (SyncUp.fixture(attendees: 2).attendees[0], SyncUp.fixture(attendees: 2).attendees[1])
        record.beginTurn(ann, at: 0)
        record.add(RecognizedSpeech(isFinal: false, text: "no blockers", start: 1.1, end: 1.3))
        record.beginTurn(bo, at: 2)
        record.add(RecognizedSpeech(isFinal: false, text: "no blockers", start: 2.6, end: 3.0))
        record.settleProvisionalTail()
        #expect(record.segments.map(\.speaker) == [bo])
        #expect(record.segments.map { [$0.start, $0.end] } == [[2.6, 3.0]])
    }

    /// Found by an attack: an engine's word time of 1e300 crashed the SRT export; times stay within a week.
    @Test func wordTimesFromFilesAndEnginesAreBroughtIntoRange() throws {
        let word = try #require(TranscriptWord(json: ["word": "x", "start": 1e300, "end": -5]))
        #expect(word.start == TranscriptWord.maximumTime && word.end == 0)
        #expect(TranscriptWord.clamped(.infinity) == 0 && TranscriptWord.clamped(.nan) == 0)
        #expect(TranscriptWord.clamped(12.5) == 12.5)
    }

    @Test func aLongStretchOfOneSpeakerIsSplitIntoSegmentsOneReplyCanHold() {
        var record = MeetingRecord()
        record.beginTurn(SyncUp.fixture().attendees[0], at: 0)
        let words = (0..<1_200).map { TranscriptWord(word: "w\($0)", start: Double($0) * 0.01, end: Double($0) * 0.01) }
        record.add(RecognizedSpeech(isFinal: true, text: words.map(\.word).joined(separator: " "), words: words))
        #expect(record.segments.map(\.words.count) == [500, 500, 200])
        #expect(record.segments.map(\.text).joined(separator: " ") == record.transcript)
    }

    /// A pause begun the instant the last one ended continues it.
    @Test func pausesThatTouchBecomeOne() {
        var record = MeetingRecord()
        record.stopTimer(at: 10)
        record.startTimer(at: 11)
        record.stopTimer(at: 11)
        record.startTimer(at: 11)
        record.stopTimer(at: 11)
        record.startTimer(at: 12)
        record.stopTimer(at: 14)
        record.finish(at: 15)
        #expect(record.pauses == [TimerPause(start: 10, end: 12), TimerPause(start: 14, end: 15)])
    }

    /// A client pausing and resuming in a loop: the record keeps at most a thousand pauses, and the time the
    /// timer stood still stays what it was.
    @Test func aFloodOfPausesKeepsTheRecordBoundedAndItsTotalsRight() {
        var record = MeetingRecord()
        let ann = SyncUp.fixture(attendees: 1).attendees[0]
        record.beginTurn(ann, at: 0)
        for index in 0..<30_000 {
            let time = 1 + Double(index) / 1_000
            record.stopTimer(at: time)
            record.startTimer(at: time + 0.000_25)
        }
        record.finish(at: 40)
        #expect(record.pauses.count <= 1_000)
        let stood = record.pauses.reduce(0) { $0 + ($1.end ?? $1.start) - $1.start }
        #expect(abs(stood - 7.5) < 0.000_001)
        #expect(record.pauses.allSatisfy { $0.start >= 1 && ($0.end ?? 0) <= 31 })
        let insights = MeetingInsights(timeline: record.timeline(durationSeconds: 60), attendees: [ann], segments: [])
        #expect(abs(insights.pausedSeconds - 7.5) < 0.000_001)
        #expect(abs((insights.attendees.first?.floor ?? 0) - 32.5) < 0.000_001)
    }

    /// B8: thousands of pauses in each turn of three, one across a turn's change: each floor is exactly the
    /// time the timer ran in that turn, and the record stays bounded. Before, merging the older pauses in
    /// pairs moved paused time across turns (8 bursts of 2000 pause+resume pairs gave 12.86/7.14/10 for 10/10/10).
    @Test func floorsStayExactWhateverThePausesAndTheRecordBounded() {
        var record = MeetingRecord()
        let people = SyncUp.fixture(attendees: 3).attendees
        var time = 0.0
        var floors: [Double] = []
        for (index, person) in people.enumerated() {
            record.beginTurn(person, at: time)
            if index > 0 { record.startTimer(at: time + 1.5) }  // the pause across the change ends in this turn
            time += index > 0 ? 1.5 : 0
            var ran = 0.0
            for step in 0..<(6_000 + 1_000 * index) {
                time += 0.000_7 + Double(step % 3) * 0.000_1
                ran += 0.000_7 + Double(step % 3) * 0.000_1
                record.stopTimer(at: time)
                time += 0.000_3
                record.startTimer(at: time)
            }
            time += 10 - ran - (index == people.count - 1 ? 0 : 0.25)
            if index < people.count - 1 {
                // The timer stops with a quarter second of the share left, and stands still into the next turn.
                record.stopTimer(at: time)
                time += 0.25 + 1.5
                floors.append(10 - 0.25)
            } else {
                floors.append(10)
            }
        }
        record.finish(at: time)
        #expect(record.pauses.count <= MeetingRecord.maxPauses + 6)
        let insights = MeetingInsights(timeline: record.timeline(durationSeconds: 30), attendees: people, segments: [])
        for (row, floor) in zip(insights.attendees, floors) {
            #expect(abs(row.floor - floor) < 0.000_001, "\(row.attendee.name): \(row.floor), not \(floor)")
        }
    }
}
