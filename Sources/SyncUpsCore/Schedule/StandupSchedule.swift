import SyncUpsJSON

/// When a sync-up meets: days of the week, a time of day, in a named time zone, with a reminder lead and an
/// optional automatic start. Pure: the zone's rules are handed in (`TimeZoneRules`).
public struct StandupSchedule: Sendable, Equatable {
    /// 0 Monday … 6 Sunday.
    public var days: Set<Int>
    /// Minutes after local midnight.
    public var minuteOfDay: Int
    /// An IANA name ("Europe/Berlin").
    public var timeZone: String
    /// Minutes before the start the reminder shows (0: at the start).
    public var reminderMinutes: Int
    public var autoStart: Bool

    public static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    public init(days: Set<Int>, minuteOfDay: Int, timeZone: String, reminderMinutes: Int = 5, autoStart: Bool = false) {
        self.days = days
        self.minuteOfDay = minuteOfDay
        self.timeZone = timeZone
        self.reminderMinutes = reminderMinutes
        self.autoStart = autoStart
    }

    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Parses "mon-fri 09:30", "mon,wed,fri 9:30", "daily 09:30", "weekdays 10:00": days, then the time.
    public static func parse(
        _ text: String, timeZone: String, reminderMinutes: Int = 5, autoStart: Bool = false
    ) throws(ParseError) -> StandupSchedule {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map { String($0).lowercased() }
        guard let timeWord = words.last, timeWord.contains(":") else {
            throw ParseError(
                description:
                    "the schedule \(ErrorQuote.quoted(text)) has no time: end it with one, as in \"mon-fri 09:30\"")
        }
        let dayWords = words.dropLast()
        guard !dayWords.isEmpty else {
            throw ParseError(
                description:
                    "the schedule \(ErrorQuote.quoted(text)) names no day: give days before the time, as in \"mon-fri 09:30\""
            )
        }
        var days = Set<Int>()
        for word in dayWords {
            for part in word.split(separator: ",") {
                days.formUnion(try dayRange(String(part)))
            }
        }
        guard !days.isEmpty else {
            throw ParseError(description: "the schedule \(ErrorQuote.quoted(text)) names no day")
        }
        let minute = try minuteOfDay(timeWord)
        guard (0...1440).contains(reminderMinutes) else {
            throw ParseError(description: "a reminder \(reminderMinutes) minutes before: give 0 to 1440")
        }
        return StandupSchedule(
            days: days, minuteOfDay: minute, timeZone: timeZone, reminderMinutes: reminderMinutes, autoStart: autoStart)
    }

    /// The days' full names, which are taken as well as the short ones (`dayNames`), and nothing else: no
    /// other word that merely begins with a day ("monkey", "sunny").
    static let fullDayNames = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    private static func day(_ name: String) throws(ParseError) -> Int {
        guard let index = dayNames.firstIndex(of: name) ?? fullDayNames.firstIndex(of: name) else {
            throw ParseError(
                description:
                    "\(ErrorQuote.quoted(name)) is not a day: use mon, tue, wed, thu, fri, sat, sun or their full names, daily, weekdays, weekends (or mon-fri)"
            )
        }
        return index
    }

    private static func dayRange(_ part: String) throws(ParseError) -> Set<Int> {
        switch part {
        case "daily", "everyday": return Set(0..<7)
        case "weekdays": return Set(0..<5)
        case "weekends": return [5, 6]
        default: break
        }
        // An en dash (or another dash a keyboard or word processor makes of "-") is a range like "-".
        let dashes: Set<Character> = ["-", "\u{2010}", "\u{2011}", "\u{2012}", "\u{2013}", "\u{2014}", "\u{2212}"]
        let ends = part.split(omittingEmptySubsequences: false, whereSeparator: { dashes.contains($0) })
            .map(String.init)
        guard ends.count <= 2, !ends.contains(where: \.isEmpty) else {
            throw ParseError(description: "\(ErrorQuote.quoted(part)) is not a day or a range of days (mon-fri)")
        }
        let first = try day(ends[0])
        guard ends.count == 2 else { return [first] }
        let last = try day(ends[1])
        var result = Set<Int>()
        var index = first
        while true {
            result.insert(index)
            if index == last { break }
            index = (index + 1) % 7
        }
        return result
    }

    private static func minuteOfDay(_ word: String) throws(ParseError) -> Int {
        let parts = word.split(separator: ":", omittingEmptySubsequences: false)
        let isDigits = parts.allSatisfy { $0.allSatisfy { $0.isASCII && $0.isNumber } }  // no sign: "+9:30"
        guard isDigits, parts.count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]), parts[1].count == 2,
            (1...2).contains(parts[0].count)
        else { throw ParseError(description: "\(ErrorQuote.quoted(word)) is not a time: give HH:MM, as in 09:30") }
        guard (0...23).contains(hour), (0...59).contains(minute) else {
            throw ParseError(description: "\(word) is not a time of day: 00:00 to 23:59")
        }
        return hour * 60 + minute
    }

    /// "mon-fri 09:30"
    public var text: String {
        let sorted = days.sorted()
        if sorted.count == 7 { return "daily \(Self.clock(minuteOfDay))" }
        let isRun = sorted.count > 2 && sorted.last! - sorted.first! == sorted.count - 1
        let dayText =
            isRun
            ? "\(Self.dayNames[sorted.first!])-\(Self.dayNames[sorted.last!])"
            : sorted.map { Self.dayNames[$0] }.joined(separator: ",")
        return "\(dayText) \(Self.clock(minuteOfDay))"
    }

    static func clock(_ minute: Int) -> String {
        let hour = minute / 60
        let rest = minute % 60
        return "\(hour < 10 ? "0" : "")\(hour):\(rest < 10 ? "0" : "")\(rest)"
    }

    // MARK: - Occurrences

    /// The start (UTC seconds) on local day `day`, if the schedule meets that day. A start the clocks skip
    /// (spring forward) moves to the gap's end; one they pass twice is the first.
    func start(onDay day: Int64, rules: TimeZoneRules) -> Int64? {
        guard days.contains(CivilDate.weekday(days: day)) else { return nil }
        let local = day * 86_400 + Int64(minuteOfDay) * 60
        switch rules.resolve(local: local) {
        case .unique(let utc): return utc
        case .repeated(let first, _): return first
        case .skipped(_, _, let transition): return transition
        }
    }

    /// The first start strictly after `time`.
    public func next(after time: Int64, rules: TimeZoneRules) -> Int64? {
        let today = Self.localDay(time, rules: rules)
        for day in (today - 1)...(today + 8) {
            if let start = start(onDay: day, rules: rules), start > time { return start }
        }
        return nil
    }

    /// The last start at or before `time`.
    public func previous(atOrBefore time: Int64, rules: TimeZoneRules) -> Int64? {
        let today = Self.localDay(time, rules: rules)
        for day in stride(from: today + 1, through: today - 8, by: -1) {
            if let start = start(onDay: day, rules: rules), start <= time { return start }
        }
        return nil
    }

    static func localDay(_ time: Int64, rules: TimeZoneRules) -> Int64 {
        let local = time + Int64(rules.offset(at: time))
        return local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
    }

    /// Why the schedule cannot be kept in the year from `now`: a day on which its time does not exist
    /// (the clocks skip it), or nil.
    public func nonexistentTime(from now: Int64, rules: TimeZoneRules) -> String? {
        let today = Self.localDay(now, rules: rules)
        for day in today...(today + 366) where days.contains(CivilDate.weekday(days: day)) {
            let local = day * 86_400 + Int64(minuteOfDay) * 60
            if case .skipped(let gapStart, let gapEnd, _) = rules.resolve(local: local) {
                let weekday = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"][
                    CivilDate.weekday(days: day)]
                return
                    "\(Self.clock(minuteOfDay)) does not exist in \(timeZone) on \(weekday) \(CivilDate.text(days: day)): the clocks go from \(Self.clock(Int(gapStart % 86_400 / 60))) to \(Self.clock(Int(gapEnd % 86_400 / 60)))"
            }
        }
        return nil
    }
}
