import Synchronization

/// Keeps each kind of message an outsider can repeat at will (a refused connection, a client's bad line, a
/// device's error, a speech engine's stderr) to at most `burst` lines an `interval`, as journald's rate limit
/// and MPD's log throttling do: what it holds back is counted, and summed up in one line, "… repeated N
/// times: <the last one>", by the first log call of any kind once that kind's interval is over.
///
/// One per `Logger` (its copies share it), used from any thread; time comes from `clock`, so a test drives
/// it without sleeping.
public final class LogThrottle: Sendable {
    /// What to do with a message.
    public struct Decision: Equatable, Sendable {
        /// Whether the message itself is logged.
        public var logsMessage: Bool
        /// The summaries of held-back messages due now, of any kind, to log before it.
        public var summaries: [Summary]
    }

    /// Messages of one kind that were not logged.
    public struct Summary: Equatable, Sendable {
        public var kind: String
        public var count: Int
        public var lastMessage: String
        public var level: Logger.Level

        /// "… repeated 3 times: <the last one>".
        public var line: String { "… repeated \(count) time\(count == 1 ? "" : "s"): \(lastMessage)" }
    }

    public let interval: Duration
    private let clock: @Sendable () -> MonotonicInstant
    private let state = Mutex(State())

    fileprivate struct Window {
        var start: MonotonicInstant
        var logged = 0
        var held = 0
        var lastHeld = ""
        var level = Logger.Level.debug
    }

    private struct State {
        var windows: [String: Window] = [:]
        /// The earliest end of a window that held messages back: no summary is due before it.
        var nextSummary: MonotonicInstant?
    }

    public init(interval: Duration = .seconds(1), clock: @escaping @Sendable () -> MonotonicInstant = { .now() }) {
        self.interval = interval
        self.clock = clock
    }

    /// Counts a message of `kind` (nil for one that is never held back) and says whether to log it, and which
    /// summaries are due.
    public func admit(_ kind: String?, _ message: String, level: Logger.Level, burst: Int = 1) -> Decision {
        let now = clock()
        return state.withLock { state in
            var decision = Decision(logsMessage: true, summaries: [])
            if let due = state.nextSummary, now >= due {
                decision.summaries = Self.takeSummaries(&state, now, interval)
            }
            guard let kind else { return decision }
            var window = state.windows[kind] ?? Window(start: now)
            if now - window.start >= interval {
                if window.held > 0 {
                    decision.summaries.append(Summary(kind: kind, window))
                }
                window = Window(start: now)
            }
            if window.logged < burst {
                window.logged += 1
            } else {
                decision.logsMessage = false
                window.held += 1
                window.lastHeld = message
                window.level = max(window.level, level)
                let end = window.start + interval
                state.nextSummary = min(state.nextSummary ?? end, end)
            }
            state.windows[kind] = window
            return decision
        }
    }

    /// The summaries of every window that held messages back, whether or not it is over (a daemon stopping).
    public func takeAllSummaries() -> [Summary] {
        state.withLock { state in
            let summaries = state.windows.sorted { $0.key < $1.key }.compactMap { kind, window in
                window.held > 0 ? Summary(kind: kind, window) : nil
            }
            state.windows = [:]
            state.nextSummary = nil
            return summaries
        }
    }

    /// Takes the summaries of the windows over at `now` that held messages back.
    private static func takeSummaries(_ state: inout State, _ now: MonotonicInstant, _ interval: Duration) -> [Summary]
    {
        var summaries: [Summary] = []
        var next: MonotonicInstant?
        for (kind, window) in state.windows.sorted(by: { $0.key < $1.key }) where window.held > 0 {
            let end = window.start + interval
            if now >= end {
                summaries.append(Summary(kind: kind, window))
                state.windows[kind] = nil
            } else {
                next = min(next ?? end, end)
            }
        }
        state.nextSummary = next
        return summaries
    }
}

extension LogThrottle.Summary {
    fileprivate init(kind: String, _ window: LogThrottle.Window) {
        self.init(kind: kind, count: window.held, lastMessage: window.lastHeld, level: window.level)
    }
}
