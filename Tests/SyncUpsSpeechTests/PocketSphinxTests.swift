import Foundation
import SyncUpsCore
import SyncUpsSpeech
import SyncUpsTestSupport
import Testing

/// PocketSphinx as Debian ships it, on real speech: recorded (pocketsphinx-testdata) and synthesized.
@Suite(.enabled(if: PocketSphinxRecognizer.Model.debian.isInstalled, "needs pocketsphinx-en-us"))
struct PocketSphinxTests {
    static var grammar: String { Bundle.module.url(forResource: "Fixtures/standup", withExtension: "gram")!.path }
    static var grammarModel: PocketSphinxRecognizer.Model {
        var model = PocketSphinxRecognizer.Model.debian
        model.grammar = grammar
        return model
    }

    @Test func transcribesGoForwardWithTheFullLanguageModel() throws {
        let audio = try #require(Files.read("/usr/share/pocketsphinx/test/data/goforward.raw"))
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer())
        harness.feed(audio + SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        #expect(harness.finals.map(\.text) == ["go forward ten meters"])
        let words = harness.finals.first?.words ?? []
        #expect(words.map(\.word) == ["go", "forward", "ten", "meters"])
        #expect(words.allSatisfy { $0.start < $0.end && $0.end <= 2.8 })
    }

    @Test(arguments: ["yesterday i finished the review", "today i will deploy the service", "no blockers for me"])
    func transcribesSynthesizedSpeechExactlyWithAGrammar(sentence: String) throws {
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer(model: Self.grammarModel))
        harness.feed(
            SpeechFixture.silence(seconds: 0.5) + (try SpeechFixture.say(sentence)) + SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        #expect(harness.finals.map(\.text) == [sentence])
    }

    @Test func publishesPartialsWhileSomeoneSpeaks() throws {
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer())
        let speech = try SpeechFixture.say(
            "yesterday I finished the review of the quarterly report and today I will deploy it", rate: 130)
        harness.feed(speech)
        #expect(harness.wait { if case .result(let result) = $0 { result.kind == .partial } else { false } })
        #expect(harness.finish())
        #expect(!harness.finals.isEmpty)
    }

    /// The endpointing rule: 0.3 s without speech ends an utterance (the library's 0.5 s made the final
    /// wait 0.2 s longer, and ran these two sentences together).
    @Test func aPauseOfFourTenthsOfASecondEndsTheUtterance() throws {
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer(model: Self.grammarModel))
        harness.feed(
            SpeechFixture.silence(seconds: 0.5)
                + SpeechFixture.trimmingTrailingSilence(try SpeechFixture.say("no blockers for me"))
                + SpeechFixture.silence(seconds: 0.4) + (try SpeechFixture.say("yesterday i finished the review"))
                + SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        #expect(harness.finals.map(\.text) == ["no blockers for me", "yesterday i finished the review"])
    }

    /// Words after a long pause are timed where they were said: the library does not count the silence it
    /// drops, so times counted from the end of the last utterance came out 2.5 s early.
    @Test func timesWordsAfterAPauseWhereTheyWereSaid() throws {
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer(model: Self.grammarModel))
        let first = SpeechFixture.trimmingTrailingSilence(try SpeechFixture.say("no blockers for me"))
        let second = try SpeechFixture.say("yesterday i finished the review")
        let secondStarts = Double(SpeechFixture.silence(seconds: 0.5).count + first.count) / 32_000 + 2.5
        harness.feed(
            SpeechFixture.silence(seconds: 0.5) + first + SpeechFixture.silence(seconds: 2.5) + second
                + SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        try #require(harness.finals.map(\.text) == ["no blockers for me", "yesterday i finished the review"])
        let firstWord = try #require(harness.finals[0].words.first)
        #expect(abs(firstWord.start - 0.5) < 0.3, "\(harness.finals[0].words)")
        let word = try #require(harness.finals[1].words.first)
        #expect(abs(word.start - secondStarts) < 0.3, "\(word) vs \(secondStarts)")
        #expect(abs(harness.finals[1].start - secondStarts) < 0.3)
    }

    @Test func endsTheUtteranceAtEachTurnSoNoResultSpansTwoSpeakers() throws {
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer(model: Self.grammarModel))
        let first = try SpeechFixture.say("no blockers for me")
        let second = try SpeechFixture.say("i am working on the report", voice: "en-gb")
        let alice = Attendee(id: Attendee.ID(UUID()), name: "Alice")
        let bob = Attendee(id: Attendee.ID(UUID()), name: "Bob")
        harness.stream.turn(0, alice)
        var frame = harness.feed(SpeechFixture.silence(seconds: 0.3) + first)
        // Bob's turn starts right after Alice's last word, with no pause for voice activity to end on.
        harness.stream.turn(frame, bob)
        let bobStarts = Double(frame) / 16_000
        frame = harness.feed(second + SpeechFixture.silence(seconds: 1), from: frame)
        #expect(harness.finish())
        #expect(harness.finals.map(\.text) == ["no blockers for me", "i am working on the report"])
        try #require(harness.finals.count == 2 && harness.finals.allSatisfy { !$0.words.isEmpty })
        #expect(harness.finals[0].words.allSatisfy { $0.end <= bobStarts + 0.05 })
        #expect(harness.finals[1].words.allSatisfy { $0.start >= bobStarts - 0.05 })
    }

    /// The loop decides a turn on its clock, and the audio before it can reach the recognizer later: the mixer
    /// waits up to 2 s for the call's, and a loaded machine delays both. A turn that comes first must wait for
    /// its frame. Filled with silence at once instead, it cut Alice's sentence in two (a grammar then finds
    /// neither half: her words were lost), and her audio that came after was
    /// decoded past Bob's start, so her words were his.
    @Test(arguments: [0.5, 0.0])
    func aTurnAheadOfTheAudioBeforeItWaitsForItsFrame(fedBeforeTheTurn: Double) throws {
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer(model: Self.grammarModel))
        let first = SpeechFixture.silence(seconds: 0.3) + (try SpeechFixture.say("yesterday i finished the review"))
        let second = try SpeechFixture.say("today i will deploy the service", voice: "en-gb")
        let alice = Attendee(id: Attendee.ID(UUID()), name: "Alice")
        let bob = Attendee(id: Attendee.ID(UUID()), name: "Bob")
        harness.stream.turn(0, alice)
        // Part of Alice's audio has reached the recognizer when Bob's turn, 1 s after her sentence, does.
        let before = Int(Double(first.count / 2) * fedBeforeTheTurn) * 2
        var frame = harness.feed(Array(first[..<before]))
        let bobFrame = Int64(first.count / 2 + 16_000)
        harness.stream.turn(bobFrame, bob)
        frame = harness.feed(Array(first[before...]) + SpeechFixture.silence(seconds: 1), from: frame)
        #expect(frame == bobFrame)
        frame = harness.feed(second + SpeechFixture.silence(seconds: 1), from: frame)
        #expect(harness.finish())
        let bobStarts = Double(bobFrame) / 16_000
        #expect(harness.finals.map(\.text) == ["yesterday i finished the review", "today i will deploy the service"])
        try #require(harness.finals.count == 2 && harness.finals.allSatisfy { !$0.words.isEmpty })
        #expect(harness.finals[0].words.allSatisfy { $0.end <= bobStarts }, "\(harness.finals[0].words)")
        #expect(harness.finals[1].words.allSatisfy { $0.start >= bobStarts - 0.05 }, "\(harness.finals[1].words)")
    }

    /// Each meeting loads a decoder; none may leave a descriptor behind (the soak found one per meeting: the
    /// `-logfn /dev/null` log file, dropped unclosed by `err_set_logfp`).
    @Test func leavesNoDescriptorBehindMeetingAfterMeeting() throws {
        for _ in 0..<2 {
            let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer(model: Self.grammarModel))
            harness.feed(SpeechFixture.silence(seconds: 0.5))
            #expect(harness.finish())
        }
        #expect(Self.logFilesOpen() == 0)
    }

    /// Descriptors of this process open on /dev/null for appending: what a `-logfn` log file looks like.
    static func logFilesOpen() -> Int {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter { fd in
            guard (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)) == "/dev/null",
                let info = try? String(contentsOfFile: "/proc/self/fdinfo/" + fd, encoding: .utf8),
                let flags = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") })?.split(separator: "\t")
                    .last,
                let value = Int(flags, radix: 8)
            else { return false }
            return value & Int(O_APPEND) != 0
        }.count
    }

    @Test func reportsAModelThatCannotBeLoaded() throws {
        var model = PocketSphinxRecognizer.Model.debian
        model.acousticModel = "/nonexistent"
        let harness = try RecognizerHarness(PocketSphinxRecognizer.recognizer(model: model))
        #expect(harness.wait { if case .failed = $0 { true } else { false } })
        #expect(harness.finish())
    }
}
