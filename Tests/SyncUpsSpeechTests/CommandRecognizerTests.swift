import Foundation
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsSpeech
import SyncUpsTestSupport
import Testing

/// The `command` engine against a scripted recognizer that speaks the protocol, behaves, or misbehaves.
@Suite struct CommandRecognizerTests {
    /// The engine's clock stands still unless a test gives one: `silenceLimit` is 10 s of the real clock from
    /// the engine's start, and on a loaded machine a python3 that has not yet been scheduled wrote nothing for
    /// 10 s (seven tests here failed so, each with "wrote nothing for 10 s"). The limit is
    /// `killsAnEngineThatHangs`'s to test, on a clock it moves; elsewhere a test waits for the engine's output
    /// itself, with the harness's deadline.
    static func recognizer(
        _ mode: String, clock: @escaping @Sendable () -> MonotonicInstant = { ManualClock.standingStill.now }
    ) -> SpeechRecognizer {
        let script = Bundle.module.url(forResource: "Fixtures/fake-recognizer", withExtension: "py")!.path
        return CommandRecognizer.recognizer(command: "python3 '\(script)' \(mode)", clock: clock)
    }

    func failure(_ harness: RecognizerHarness) -> String? {
        for event in harness.events { if case .failed(let message) = event { return message } }
        return nil
    }

    @Test func streamsAudioAndTurnsAndReadsResults() throws {
        let harness = try RecognizerHarness(Self.recognizer("echo"))
        let alice = Attendee(id: Attendee.ID(UUID()), name: "Alice")
        harness.stream.turn(0, alice)
        let frame = harness.feed(SpeechFixture.silence(seconds: 1.5))
        harness.stream.turn(frame, Attendee(id: Attendee.ID(UUID()), name: "Bob"))
        harness.feed(SpeechFixture.silence(seconds: 1), from: frame)
        #expect(harness.finish())
        #expect(failure(harness) == nil)
        let texts = harness.finals.map(\.text)
        #expect(texts.contains("turn Alice at 0.00"))
        #expect(texts.contains("turn Bob at 1.50"))
        #expect(texts.filter { $0.hasPrefix("second ") } == ["second 1", "second 2"])
        let second = try #require(harness.finals.first { $0.text == "second 2" })
        #expect(
            second.words == [
                TranscriptWord(word: "second", start: 1, end: 1.5), TranscriptWord(word: "2", start: 1.5, end: 2),
            ])
    }

    /// Audio the recognizer's queue dropped leaves a gap in the frames; the engine's stdin gets silence for
    /// it, so its times stay meeting times.
    @Test func fillsAGapInTheAudioWithSilence() throws {
        let harness = try RecognizerHarness(Self.recognizer("echo"))
        harness.stream.turn(0, Attendee(id: Attendee.ID(UUID()), name: "Alice"))
        harness.feed(SpeechFixture.silence(seconds: 1))
        harness.feed(SpeechFixture.silence(seconds: 1), from: 32_000)  // one second missing
        #expect(harness.finish())
        #expect(harness.finals.map(\.text).filter { $0.hasPrefix("second ") } == ["second 1", "second 2", "second 3"])
    }

    @Test func reportsACrashMidMeeting() throws {
        let harness = try RecognizerHarness(Self.recognizer("crash"))
        harness.feed(SpeechFixture.silence(seconds: 2))
        #expect(harness.wait { if case .failed = $0 { true } else { false } })
        #expect(failure(harness) == "the speech command exited with status 3")
        #expect(harness.finals.map(\.text) == ["second 1"])
        #expect(harness.finish())
    }

    /// A real engine that reads its audio and writes nothing, on a clock the test moves: alive a moment before
    /// the silence limit (several polls of its output later), killed at it. Before, the test waited 10 real s.
    @Test func killsAnEngineThatHangs() throws {
        let clock = ManualClock()
        let harness = try RecognizerHarness(Self.recognizer("hang", clock: { clock.now }))
        harness.feed(SpeechFixture.silence(seconds: 1))
        let failed: (RecognizerEvent) -> Bool = { if case .failed = $0 { true } else { false } }
        clock.advance(by: CommandRecognizer.silenceLimit - .milliseconds(1))
        #expect(!harness.wait(timeout: .seconds(1), for: failed))
        clock.advance(by: .milliseconds(1))
        #expect(harness.wait(timeout: RecognizerHarness.deadline, for: failed))
        #expect(failure(harness) == "the speech command wrote nothing for 10 s; killed it")
        #expect(harness.finish())
    }

    /// The clock of the output budgets stands still: however slowly a loaded machine reads the flood, its
    /// first 4 MiB fall in one window.
    @Test func killsAnEngineThatFloodsItsOutput() throws {
        let still = MonotonicInstant.now()
        let harness = try RecognizerHarness(Self.recognizer("flood", clock: { still }))
        #expect(harness.wait { if case .failed = $0 { true } else { false } })
        #expect(failure(harness)?.hasPrefix("the speech command flooded its output") == true)
        #expect(harness.finish())
    }

    /// Its log is read as its output is, on the same budget: an engine (or a spare waiting for its meeting)
    /// that floods its stderr is killed, not read at the cost of a core of the daemon for as long as it runs
    /// (attack 40: a flooding spare kept the idle daemon at 100 % CPU).
    @Test func killsAnEngineThatFloodsItsLog() throws {
        let still = MonotonicInstant.now()
        let harness = try RecognizerHarness(Self.recognizer("logflood", clock: { still }))
        #expect(harness.wait { if case .failed = $0 { true } else { false } })
        #expect(failure(harness)?.hasPrefix("the speech command flooded its log") == true, "\(harness.events)")
        #expect(harness.finish())
    }

    @Test func refusesALineOverOneMebibyte() throws {
        let harness = try RecognizerHarness(Self.recognizer("longline"))
        #expect(harness.wait { if case .failed = $0 { true } else { false } })
        #expect(failure(harness) == "the speech command wrote a line over 1048576 bytes; killed it")
        #expect(harness.finish())
    }

    @Test func passesOnTheEnginesOwnError() throws {
        let harness = try RecognizerHarness(Self.recognizer("error"))
        #expect(harness.wait { if case .failed = $0 { true } else { false } })
        #expect(failure(harness) == "the speech command reported: no model found")
        #expect(harness.finish())
    }

    @Test func logsLinesThatAreNotJSONAndGoesOn() throws {
        let harness = try RecognizerHarness(Self.recognizer("garbage"))
        harness.feed(SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        #expect(failure(harness) == nil)
        #expect(harness.events.contains(.log("ignored a line that is not a JSON object, e.g.: this is not json")))
        #expect(harness.finals.map(\.text) == ["second 1"])
    }

    /// More settled text a second than anyone speaks is dropped, counted, not passed on without end.
    @Test func dropsResultsPastTheTextASecondATranscriptTakes() throws {
        // The whole burst in one window, however long this machine takes to read it.
        let start = MonotonicInstant.now()
        let harness = try RecognizerHarness(Self.recognizer("chatty", clock: { start }))
        harness.feed(SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        #expect(failure(harness) == nil)
        let kept = harness.finals.filter { $0.text.hasSuffix("w") }.reduce(0) { $0 + $1.text.utf8.count }
        #expect(kept <= CommandRecognizer.maxTextPerSecond)
        #expect(kept > CommandRecognizer.maxTextPerSecond / 2)
        #expect(harness.events.contains { if case .log(let line) = $0 { line.hasPrefix("dropped ") } else { false } })
    }

    @Test func treatsAnExitBeforeTheEndAsAFailure() throws {
        let harness = try RecognizerHarness(Self.recognizer("early"))
        harness.feed(SpeechFixture.silence(seconds: 2))
        #expect(harness.wait { if case .failed = $0 { true } else { false } })
        #expect(failure(harness) == "the speech command exited before the meeting ended")
        #expect(harness.finish())
    }

    /// The engine writes 100 partials in about a second (one every 10 ms); at most ten a second of them go on,
    /// however long a loaded machine takes to read them: the bound is ten for each second the run took.
    @Test func passesOnAtMostTenPartialsASecondAndEveryFinal() throws {
        let started = MonotonicInstant.now()
        let harness = try RecognizerHarness(Self.recognizer("partials"))
        harness.feed(SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        let seconds = (MonotonicInstant.now() - started).seconds
        let partials = harness.results.filter { $0.kind == .partial }
        #expect(!partials.isEmpty && partials.count <= Int(seconds * 10) + 2, "\(partials.count) in \(seconds) s")
        #expect(partials.count < 100)
        #expect(harness.finals.map(\.text) == ["after partials"])
    }

    /// Attack 101: the partial held back by the ten a second when the engine's output ends is passed on: an
    /// engine's last words, written 20 ms after the ones before, were lost (now that a save keeps provisional
    /// words, they are what the meeting ends with).
    @Test func passesOnTheLastPartialWhenTheOutputEnds() throws {
        let harness = try RecognizerHarness(Self.recognizer("lastpartials"))
        harness.feed(SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        #expect(harness.results.last?.text == "one two three", "\(harness.results)")
    }

    /// A partial is shown whole in `status` and events: only its tail is kept, on a character boundary.
    @Test func keepsOnlyTheTailOfAHugePartial() throws {
        let harness = try RecognizerHarness(Self.recognizer("bigpartial"))
        // Passed on before any audio goes in: the fake's final for it would replace a partial not yet passed on
        // (waiting half a second for it instead failed under load).
        #expect(harness.wait { if case .result(let result) = $0 { result.kind == .partial } else { false } })
        harness.feed(SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        let partial = try #require(harness.results.first { $0.kind == .partial })
        #expect(partial.text.utf8.count <= 4096)
        #expect(partial.text.utf8.count > 4096 - 4)
        #expect(partial.text.hasSuffix("éé end"))
        #expect(partial.text.first == "é")
    }

    @Test func reportsAnExcerptOfAHugeErrorMessage() throws {
        let harness = try RecognizerHarness(Self.recognizer("bigerror"))
        #expect(harness.wait { if case .failed = $0 { true } else { false } })
        let message = try #require(failure(harness))
        #expect(message.hasPrefix("the speech command reported: éé"))
        #expect(message.hasSuffix("… (300000 bytes in all)"))
        #expect(message.utf8.count < 1024 + 100)
        #expect(harness.finish())
    }

    /// A result's words beyond its text's own are dropped, and that said once.
    @Test func dropsTheWordsOfAResultBeyondItsText() throws {
        let harness = try RecognizerHarness(Self.recognizer("wordflood"))
        harness.feed(SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        #expect(failure(harness) == nil)
        let flooded = harness.finals.filter { $0.text.isEmpty }
        #expect(flooded.count == 4)
        #expect(flooded.allSatisfy { $0.words.count == 16 })
        let logs = harness.events.filter {
            if case .log(let line) = $0 { line.hasPrefix("dropped 14984 words") } else { false }
        }
        #expect(logs.count == 1)
    }

    /// Words take memory and disk as text does: they count against the text a second a transcript takes.
    @Test func countsTheWordsAgainstTheTextASecondATranscriptTakes() throws {
        let start = MonotonicInstant.now()
        let harness = try RecognizerHarness(Self.recognizer("wordytext", clock: { start }))
        harness.feed(SpeechFixture.silence(seconds: 1))
        #expect(harness.finish())
        let kept = harness.finals.filter { $0.text == "long words" }
        // 20 finals of 10 bytes of text fit the budget; with their 4 KB of words each, 80 KB do not.
        #expect(kept.count < 20)
        #expect(kept.count >= 10)
        #expect(kept.allSatisfy { $0.words.count == 2 })
    }

    @Test func reportsACommandThatCannotRun() throws {
        let harness = try RecognizerHarness(CommandRecognizer.recognizer(command: "exec /nonexistent/recognizer"))
        #expect(harness.wait { if case .failed = $0 { true } else { false } })
        #expect(failure(harness) == "the speech command exited with status 127")
        #expect(harness.finish())
    }
}
