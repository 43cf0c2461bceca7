import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsTestSupport
import Testing

/// Attribution by voice where the speaker encoder is confident, by the floor otherwise: which speaker each
/// word goes to, where segments split, what each segment says of how it was attributed, and the corrections
/// when a voice is heard after its words were attributed.
@Suite struct VoiceAttributionTests {
    let syncUp = SyncUp.fixture(attendees: 3)
    var ann: Attendee { syncUp.attendees[0] }
    var ben: Attendee { syncUp.attendees[1] }
    var cat: Attendee { syncUp.attendees[2] }
    let meetingID = Meeting.ID(UUID(counting: 0))

    func words(_ text: String, from start: Double, every step: Double = 0.4) -> [TranscriptWord] {
        text.split(separator: " ").enumerated().map { index, word in
            TranscriptWord(
                word: String(word), start: start + Double(index) * step, end: start + Double(index) * step + 0.3)
        }
    }

    /// Ann's turn from 0, Ben's from 10.
    var turns: [SpeakerTurn] { [SpeakerTurn(speaker: ann, start: 0, end: 10), SpeakerTurn(speaker: ben, start: 10)] }

    @Test func withoutVoicesEverySegmentIsTheFloorsAsBefore() {
        let segments = Attribution.segments(utterances: [words("a b c d", from: 9)], turns: turns)
        #expect(segments.map(\.speaker) == [ann, ben])
        #expect(segments.map(\.attribution) == [.floor, .floor])
        #expect(segments[0].json["attribution"] == ["by": "floor"])
    }

    @Test func anOverrunGoesToTheVoiceHeardAndTheSegmentSplitsWhereTheVoiceChanges() {
        // Ann runs 1.6 s into Ben's turn; Ben starts at 11.6.
        let voices = [
            VoiceEvidence(speaker: ann, start: 8.4, end: 10, confidence: 0.86),
            VoiceEvidence(speaker: ann, start: 10, end: 11.6, confidence: 0.84),
            VoiceEvidence(speaker: ben, start: 11.6, end: 13.2, confidence: 0.9),
        ]
        let said = words("so that is it from me now ben", from: 9, every: 0.4)  // 9.0 … 11.8
        let segments = Attribution.segments(utterances: [said], turns: turns, voices: voices)
        #expect(segments.map(\.speaker) == [ann, ann, ben])
        #expect(segments.map(\.text) == ["so that is", "it from me now", "ben"])
        // The words Ann said in her own turn and in Ben's are two segments: one turn each, both by voice.
        #expect(
            segments.map(\.attribution) == [
                .voice(confidence: 0.86), .voice(confidence: 0.84), .voice(confidence: 0.9),
            ])
        #expect(segments[1].json["attribution"] == ["by": "voice", "confidence": 0.84])
    }

    @Test func whereNoVoiceIsConfidentTheFloorKeepsTheWords() {
        // A guest (no evidence: the encoder matched nobody) in Ann's turn, between two stretches of Ann.
        let voices = [
            VoiceEvidence(speaker: ann, start: 0, end: 1.6, confidence: 0.9),
            VoiceEvidence(speaker: ann, start: 3.2, end: 4.8, confidence: 0.9),
        ]
        let segments = Attribution.segments(
            utterances: [words("one two three four five six seven eight nine ten eleven", from: 0.2)], turns: turns,
            voices: voices)
        #expect(segments.map(\.speaker) == [ann, ann, ann])
        #expect(segments.map(\.attribution) == [.voice(confidence: 0.9), .floor, .voice(confidence: 0.9)])
    }

    @Test func aSegmentSavedBeforeVoicesReadsAsTheFloorsAndRoundTrips() throws {
        let old = try #require(
            TranscriptSegment(json: ["speaker": ann.json, "start": 1, "end": 2, "text": "hi", "words": []]))
        #expect(old.attribution == .floor)
        let byVoice = TranscriptSegment(
            speaker: cat, start: 1, end: 2, text: "hi", words: [], attribution: .voice(confidence: 0.8123))
        #expect(TranscriptSegment(json: byVoice.json)?.attribution == .voice(confidence: 0.812))
        // Nonsense from a hand-edited file is the floor's, not a crash or a confidence of 1e300.
        #expect(SpeakerSource(json: ["by": "voice"]) == .floor)
        #expect(SpeakerSource(json: ["by": "voice", "confidence": 1e300]) == .voice(confidence: 1))
    }

    @Test func aVoiceHeardAfterItsWordsCorrectsTheirSegments() {
        var record = MeetingRecord()
        record.beginTurn(ann, at: 0)
        record.beginTurn(ben, at: 10)
        // Cat asks a question in Ben's turn; the recognizer settles it before the encoder has the window.
        record.add(RecognizedSpeech(isFinal: true, text: "is staging up", words: words("is staging up", from: 12)))
        #expect(record.segments.map(\.speaker) == [ben])
        let corrected = record.addVoice(VoiceEvidence(speaker: cat, start: 11.6, end: 13.2, confidence: 0.88))
        #expect(corrected.map(\.speaker) == [cat])
        #expect(record.segments.map(\.speaker) == [cat])
        #expect(record.segments.map(\.attribution) == [.voice(confidence: 0.88)])
        // A voice that changes nothing corrects nothing; one far from every segment neither.
        #expect(record.addVoice(VoiceEvidence(speaker: cat, start: 11.6, end: 13.2, confidence: 0.88)).isEmpty)
        #expect(record.addVoice(VoiceEvidence(speaker: ann, start: 40, end: 41.6, confidence: 0.9)).isEmpty)
        // The next words go by the voices already heard.
        record.add(RecognizedSpeech(isFinal: true, text: "yes", words: words("yes", from: 40.5)))
        #expect(record.segments.last?.speaker == ann)
    }

    @Test func theRecordKeepsOnlyRecentVoices() {
        var record = MeetingRecord()
        record.beginTurn(ann, at: 0)
        for index in 0..<(MeetingRecord.keptVoices * 2) {
            record.addVoice(
                VoiceEvidence(speaker: ann, start: Double(index) * 1.6, end: Double(index + 1) * 1.6, confidence: 0.9))
        }
        #expect(record.voices.count == MeetingRecord.keptVoices)
    }

    func started() -> SessionMachine {
        var (machine, _) = SessionMachine.started(
            syncUp: syncUp, meetingID: meetingID, startDate: Date(timeIntervalSince1970: 0), transcribes: true)
        _ = machine.handle(.timerTicked, at: 1)
        return machine
    }

    @Test func theMachineSaysWhoIsSpeakingBesideTheFloorAndNeverPassesIt() {
        var machine = started()
        let heard = VoiceEvidence(speaker: cat, start: 1.6, end: 3.2, confidence: 0.9)
        #expect(machine.handle(.voiceHeard(heard), at: 3.5) == [.publish(.updated)])
        #expect(machine.speaking(at: 3.5) == cat)
        #expect(machine.speaker == ann, "a voice never passes the floor")
        // The same voice again: nothing new to say.
        #expect(
            machine.handle(.voiceHeard(VoiceEvidence(speaker: cat, start: 3.2, end: 4.8, confidence: 0.9)), at: 5) == []
        )
        // Silence for more than two windows: nobody is heard any more.
        #expect(machine.speaking(at: 8.1) == nil)
    }

    @Test func theMachinePublishesACorrectionAndJournalsIt() {
        var machine = started()
        _ = machine.handle(
            .speechRecognized(
                RecognizedSpeech(isFinal: true, text: "is staging up", words: words("is staging up", from: 2))),
            at: 4)
        let effects = machine.handle(
            .voiceHeard(VoiceEvidence(speaker: cat, start: 1.6, end: 3.2, confidence: 0.9)), at: 4.5)
        let said = words("is staging up", from: 2)
        let segment = TranscriptSegment(
            speaker: cat, start: 2, end: said[2].end, text: "is staging up", words: said,
            attribution: .voice(confidence: 0.9))
        #expect(effects == [.publish(.updated), .publish(.attributionCorrected([segment])), .writeJournal])
    }

    @Test func aVoiceOfAnotherSyncUpsAttendeeIsIgnored() {
        var machine = started()
        let stranger = Attendee(id: Attendee.ID(UUID(counting: 99)), name: "Stranger")
        let before = machine
        #expect(
            machine.handle(.voiceHeard(VoiceEvidence(speaker: stranger, start: 0, end: 1.6, confidence: 0.99)), at: 2)
                == [])
        #expect(machine == before)
    }
}

/// Speaking time by voice, time spoken in others' turns, and who spoke in whose turn.
@Suite struct VoiceInsightsTests {
    let syncUp = SyncUp.fixture(attendees: 3)

    @Test func interjectionsAndOverrunsAreCountedForWhoSpokeAndInWhoseTurn() throws {
        let (ann, ben, cat) = (syncUp.attendees[0], syncUp.attendees[1], syncUp.attendees[2])
        let timeline = MeetingTimeline(
            durationSeconds: 30,
            turns: [
                SpeakerTurn(speaker: ann, start: 0, end: 10), SpeakerTurn(speaker: ben, start: 10, end: 20),
                SpeakerTurn(speaker: cat, start: 20, end: 30),
            ], pauses: [])
        func segment(_ who: Attendee, _ start: Double, _ count: Int, by source: SpeakerSource) -> TranscriptSegment {
            let words = (0..<count).map {
                TranscriptWord(word: "w", start: start + Double($0) * 0.5, end: start + Double($0) * 0.5 + 0.25)
            }
            return TranscriptSegment(
                speaker: who, start: start, end: words.last!.end, text: "", words: words, attribution: source)
        }
        let segments = [
            segment(ann, 1, 4, by: .voice(confidence: 0.9)),  // 1 s in her own turn
            segment(ann, 10.5, 2, by: .voice(confidence: 0.85)),  // 0.5 s overrun into Ben's
            segment(cat, 12, 4, by: .voice(confidence: 0.9)),  // 1 s question in Ben's turn
            segment(ben, 14, 8, by: .floor),  // by the floor: not by voice
        ]
        let insights = MeetingInsights(timeline: timeline, attendees: syncUp.attendees, segments: segments)
        let rows = insights.attendees
        #expect(rows.map(\.speakingByVoice) == [1.5, 0, 1])
        #expect(rows.map(\.inOthersTurns) == [0.5, 0, 1])
        #expect(rows[1].othersInTurn.map(\.attendee) == [ann, cat])
        #expect(rows[1].othersInTurn.map(\.seconds) == [0.5, 1])
        #expect(rows[0].othersInTurn.isEmpty && rows[2].othersInTurn.isEmpty)
        // The wire form reads back the same.
        let back = try #require(MeetingInsights(json: insights.json))
        #expect(back == insights)
        #expect(insights.json["attendees"]?[1]?["othersInTurn"]?[1]?["seconds"] == .number(.double(1)))
    }
}
