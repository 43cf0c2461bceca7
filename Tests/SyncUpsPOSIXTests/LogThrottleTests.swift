import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization
import Testing

/// The log throttle on a clock the test moves: no sleeps.
@Suite struct LogThrottleTests {
    /// What a logger wrote.
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        func withLock<Result>(_ body: ([String]) -> Result) -> Result { lines.withLock { body($0) } }
    }

    /// A logger on `clock` that collects what it writes.
    static func logger(_ clock: ManualClock) -> (Logger, Lines) {
        let lines = Lines()
        let logger = Logger(throttle: LogThrottle(clock: { clock.now })) { level, message, _ in
            lines.append("\(level.name): \(message)")
        }
        return (logger, lines)
    }

    @Test func logsAKindOnceASecondAndSumsUpTheRestInOneLine() {
        let clock = ManualClock()
        let (logger, lines) = Self.logger(clock)
        for number in 0..<100_000 {
            logger.throttled(.warning, "accept", "accepting a connection failed (\(number))")
            if number % 1000 == 0 { clock.advance(by: .microseconds(1)) }  // 100,000 in a tenth of a millisecond
        }
        #expect(lines.withLock { $0 } == ["warning: accepting a connection failed (0)"])
        clock.advance(by: .seconds(1))
        logger.throttled(.warning, "accept", "accepting a connection failed (again)")
        #expect(
            lines.withLock { $0 } == [
                "warning: accepting a connection failed (0)",
                "warning: … repeated 99999 times: accepting a connection failed (99999)",
                "warning: accepting a connection failed (again)",
            ])
    }

    @Test func aDueSummaryComesWithTheNextLineOfAnyKind() {
        let clock = ManualClock()
        let (logger, lines) = Self.logger(clock)
        for _ in 0..<3 { logger.throttled(.notice, "client.line", "a client sent a line over the limit") }
        logger.info("not throttled")
        #expect(lines.withLock { $0.count } == 2, "the summary waits for the end of the second")
        clock.advance(by: .milliseconds(1001))
        logger.info("started a meeting")
        #expect(
            lines.withLock { $0 } == [
                "notice: a client sent a line over the limit", "info: not throttled",
                "notice: … repeated 2 times: a client sent a line over the limit", "info: started a meeting",
            ])
    }

    @Test func kindsAreThrottledApartAndABurstPassesWhole() {
        let clock = ManualClock()
        let (logger, lines) = Self.logger(clock)
        for number in 0..<30 {
            logger.throttled(.info, "speech.stderr", "engine line \(number)", burst: 20)
            logger.throttled(.warning, "audio", "audio overrun \(number)")
        }
        let logged = lines.withLock { $0 }
        #expect(logged.filter { $0.hasPrefix("info: engine line") }.count == 20)
        #expect(logged.filter { $0.hasPrefix("warning: audio overrun") } == ["warning: audio overrun 0"])
        logger.flushThrottled()
        #expect(
            Array(lines.withLock { $0 }.suffix(2)) == [
                "warning: … repeated 29 times: audio overrun 29",
                "info: … repeated 10 times: engine line 29",
            ])
    }

    @Test func aKindQuietForASecondIsLoggedAgainWithoutASummary() {
        let clock = ManualClock()
        let (logger, lines) = Self.logger(clock)
        logger.throttled(.warning, "accept", "one")
        clock.advance(by: .seconds(2))
        logger.throttled(.warning, "accept", "two")
        #expect(lines.withLock { $0 } == ["warning: one", "warning: two"])
    }
}

/// A debug line's text is made only when debug lines are logged: per-window traces cost nothing otherwise.
@Suite struct LoggerLevelTests {
    @Test func aDebugMessageIsBuiltOnlyWhenDebugIsLogged() {
        let built = Atomic<Int>(0)
        func message() -> String {
            built.add(1, ordering: .relaxed)
            return "a window"
        }
        let lines = LogThrottleTests.Lines()
        let logger = Logger(minimumLevel: .info) { level, message, _ in lines.append("\(level.name): \(message)") }
        logger.debug(message())
        #expect(built.load(ordering: .relaxed) == 0)
        logger.changeMinimumLevel(to: .debug)
        logger.debug(message())
        #expect(built.load(ordering: .relaxed) == 1)
        #expect(lines.withLock { $0 } == ["debug: a window"])
    }
}
