/// Durations as people write and read them.
public enum DurationText {
    /// Parses `90`, `90s`, `15m`, `1h30m`, `2m30s`, `1h`, or a clock as `clock` prints it (`1:30`, `1:30:00`)
    /// into whole seconds; nil if it is not one of those.
    public static func parseSeconds(_ text: String) -> Int? {
        let trimmed = text.trimmingWhitespace().lowercased()
        guard !trimmed.isEmpty else { return nil }
        if let plain = Int(trimmed) { return plain >= 0 ? plain : nil }
        if trimmed.contains(":") { return parseClock(trimmed) }
        var total = 0
        var number = ""
        var lastUnitRank = 4  // h=3, m=2, s=1: units must come in decreasing order, once each
        for character in trimmed {
            if character.isASCII && character.isNumber {
                number.append(character)
                continue
            }
            let (multiplier, rank): (Int, Int)
            switch character {
            case "h": (multiplier, rank) = (3600, 3)
            case "m": (multiplier, rank) = (60, 2)
            case "s": (multiplier, rank) = (1, 1)
            default: return nil
            }
            guard let value = Int(number), rank < lastUnitRank else { return nil }
            let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
            guard !overflow else { return nil }
            total += product
            number = ""
            lastUnitRank = rank
        }
        return number.isEmpty ? total : nil
    }

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
