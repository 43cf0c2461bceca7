import Glibc
import Synchronization

/// Where the daemon's log lines go: plain standard error, the systemd journal (SyncUpsSystemd), or a
/// test's collector. A struct of closures, so every part of the daemon logs the same way.
public struct Logger: Sendable {
    /// syslog priorities, as the journal takes them.
    public enum Level: Int, Comparable, Sendable, CaseIterable {
        case error = 3
        case warning = 4
        case notice = 5
        case info = 6
        case debug = 7

        public var name: String {
            switch self {
            case .error: "error"
            case .warning: "warning"
            case .notice: "notice"
            case .info: "info"
            case .debug: "debug"
            }
        }

        public init?(name: String) {
            guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
            self = level
        }

        /// Ordered by importance: `.debug < .info < … < .error`.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue > rhs.rawValue }
    }

    /// A structured field: `SYNCUPS_SYNCUP_ID=…` in the journal, `syncup=…` on plain stderr.
    public struct Field: Sendable, Equatable {
        public var journalName: String
        public var value: String

        public init(_ journalName: String, _ value: String) {
            self.journalName = journalName
            self.value = value
        }

        public static func syncUp(_ id: CustomStringConvertible) -> Field { Field("SYNCUPS_SYNCUP_ID", id.description) }
        public static func meeting(_ id: CustomStringConvertible) -> Field {
            Field("SYNCUPS_MEETING_ID", id.description)
        }
    }

    /// The least important level logged. Every copy of a logger shares it, so `changeMinimumLevel` (a
    /// configuration reloaded on SIGHUP) reaches every part of the daemon and its threads at once.
    public var minimumLevel: Level { Level(rawValue: level.value.load(ordering: .relaxed)) ?? .info }
    private let level: SharedLevel
    /// Holds back the repeats of each kind of message an outsider can trigger (`throttled`); shared by copies.
    public let throttle: LogThrottle
    private let sink: @Sendable (Level, String, [Field]) -> Void

    public init(
        minimumLevel: Level = .info, throttle: LogThrottle = LogThrottle(),
        sink: @escaping @Sendable (Level, String, [Field]) -> Void
    ) {
        self.level = SharedLevel(minimumLevel.rawValue)
        self.throttle = throttle
        self.sink = sink
    }

    /// Logs messages from `level` up, from now on, in this logger and all its copies.
    public func changeMinimumLevel(to level: Level) {
        self.level.value.store(level.rawValue, ordering: .relaxed)
    }

    public func log(_ level: Level, _ message: String, _ fields: [Field] = []) {
        log(level, kind: nil, message, fields)
    }

    /// Logs `message` unless `burst` messages of `kind` were logged within the throttle's interval already; the
    /// ones held back are summed up later in one line ("… repeated N times: …"). For every message an outsider
    /// can make the daemon log again and again: a client, a device, the sound server, a speech engine.
    public func throttled(_ level: Level, _ kind: String, _ message: String, burst: Int = 1, _ fields: Field...) {
        log(level, kind: kind, message, fields, burst: burst)
    }

    /// Logs the summaries of every message held back so far (the daemon is stopping).
    public func flushThrottled() {
        for summary in throttle.takeAllSummaries() where summary.level >= minimumLevel {
            sink(summary.level, summary.line, [])
        }
    }

    private func log(_ level: Level, kind: String?, _ message: String, _ fields: [Field], burst: Int = 1) {
        guard level >= minimumLevel else { return }
        let decision = throttle.admit(kind, message, level: level, burst: burst)
        for summary in decision.summaries where summary.level >= minimumLevel { sink(summary.level, summary.line, []) }
        if decision.logsMessage { sink(level, message, fields) }
    }

    private final class SharedLevel: Sendable {
        let value: Atomic<Int>
        init(_ value: Int) { self.value = Atomic(value) }
    }

    public func error(_ message: String, _ fields: Field...) { log(.error, message, fields) }
    public func warning(_ message: String, _ fields: Field...) { log(.warning, message, fields) }
    public func notice(_ message: String, _ fields: Field...) { log(.notice, message, fields) }
    public func info(_ message: String, _ fields: Field...) { log(.info, message, fields) }
    /// The message is built only when debug messages are logged: a per-window or per-chunk trace costs nothing
    /// otherwise.
    public func debug(_ message: @autoclosure () -> String, _ fields: Field...) {
        guard Level.debug >= minimumLevel else { return }
        log(.debug, message(), fields)
    }

    /// One line per message on standard error: `warning: message (syncup=…)`.
    public static func standardError(minimumLevel: Level = .info) -> Logger {
        Logger(minimumLevel: minimumLevel) { level, message, fields in
            var line = "\(level.name): \(message)"
            if !fields.isEmpty {
                line += " (" + fields.map { "\(shortName($0.journalName))=\($0.value)" }.joined(separator: ", ") + ")"
            }
            Console.error(line + "\n")
        }
    }

    /// Drops everything.
    public static let discarding = Logger(minimumLevel: .error) { _, _, _ in }

    /// `SYNCUPS_SYNCUP_ID` → `syncup`.
    private static func shortName(_ journalName: String) -> String {
        var name = journalName.hasPrefix("SYNCUPS_") ? journalName.dropFirst(8) : journalName[...]
        if name.hasSuffix("_ID") { name = name.dropLast(3) }
        return name.lowercased()
    }
}
