/// Durations as people write and read them.
public enum DurationText {
    /// Parses `90`, `90s`, `15m`, `1h30m`, `2m30s`, `1h`, what `units` prints (`15 min`, `1 hr, 30 min`,
    /// `42 secs`) and its spellings (`1 min 30 s`, `2 hours`), or a clock as `clock` prints it (`1:30`,
    /// `1:30:00`) into whole seconds; nil if it is not one of those.
    public static func parseSeconds(_ text: String) -> Int? {
        let trimmed = text.trimmingWhitespace().lowercased()
        guard !trimmed.isEmpty else { return nil }
        if let plain = Int(trimmed) { return plain >= 0 ? plain : nil }
        if trimmed.contains(":") { return parseClock(trimmed) }
        var total = 0
        var number = ""
        var unit = ""
        var lastUnitRank = 4  // h=3, m=2, s=1: units must come in decreasing order, once each
        func addPart() -> Bool {
            guard let (multiplier, rank) = unitWords[unit], let value = Int(number), rank < lastUnitRank else {
                return false
            }
            let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
            guard !overflow else { return false }
            total += product
            (number, unit, lastUnitRank) = ("", "", rank)
            return true
        }
        // Spaces and commas only separate: `1 hr, 30 min` reads as `1hr30min`.
        for character in trimmed where character != " " && character != "," {
            if character.isASCII && character.isNumber {
                guard unit.isEmpty || addPart() else { return nil }
                number.append(character)
            } else if character.isASCII && character.isLetter && !number.isEmpty {
                unit.append(character)
            } else {
                return nil
            }
        }
        return number.isEmpty || addPart() ? total : nil
    }

    /// The unit words `parseSeconds` reads: each unit's seconds and rank.
    private static let unitWords: [String: (Int, Int)] = {
        var words: [String: (Int, Int)] = [:]
        for word in ["h", "hr", "hrs", "hour", "hours"] { words[word] = (3600, 3) }
        for word in ["m", "min", "mins", "minute", "minutes"] { words[word] = (60, 2) }
        for word in ["s", "sec", "secs", "second", "seconds"] { words[word] = (1, 1) }
        return words
    }()

    /// `m:ss` or `h:mm:ss`, as `clock` prints them (minutes alone may pass 59: `90:00`).
    private static func parseClock(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3,
            parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            parts.dropFirst().allSatisfy({ $0.count == 2 }), parts[0].count <= 5
        else { return nil }
        let values = parts.compactMap { Int($0) }
        guard values.dropFirst().allSatisfy({ $0 < 60 }) else { return nil }
        return values.reduce(0) { $0 * 60 + $1 }
    }

    /// The app's `Duration.formatted(.units())`: "5 min", "1 min, 30 secs", "42 secs", "1 hr", "0 secs".
    public static func units(_ seconds: Int) -> String {
        let sign = seconds < 0 ? "-" : ""
        let magnitude = abs(seconds)
        let hours = magnitude / 3600
        let minutes = magnitude % 3600 / 60
        let rest = magnitude % 60
        var parts: [String] = []
        if hours > 0 { parts.append("\(hours) hr" + (hours == 1 ? "" : "s")) }
        if minutes > 0 { parts.append("\(minutes) min") }
        if rest > 0 || parts.isEmpty { parts.append("\(rest) sec" + (rest == 1 ? "" : "s")) }
        return sign + parts.joined(separator: ", ")
    }

    /// A clock: `03:12`, or `1:03:12` past an hour; negative with a leading minus.
    public static func clock(_ seconds: Int) -> String {
        let sign = seconds < 0 ? "-" : ""
        let magnitude = abs(seconds)
        let hours = magnitude / 3600
        let minutes = magnitude % 3600 / 60
        let rest = magnitude % 60
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return sign + (hours > 0 ? "\(hours):\(two(minutes)):\(two(rest))" : "\(two(minutes)):\(two(rest))")
    }

    /// A clock to the tenth of a second: `03:12.4`; `sign` puts a `+` before a positive one too.
    public static func tenths(_ seconds: Double, sign: Bool = false) -> String {
        // Tenths of at most a year: whatever a file said, the conversion cannot trap.
        let total = seconds.isFinite ? Int((min(abs(seconds), 366 * 86_400) * 10).rounded()) : 0
        let prefix = total == 0 ? (sign ? "±" : "") : seconds < 0 ? "-" : sign ? "+" : ""
        return prefix + clock(total / 10) + ".\(total % 10)"
    }
}
