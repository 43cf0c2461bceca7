import FoundationEssentials

/// Calendar fields of an instant in UTC, computed directly (`CivilDate`: Howard Hinnant's civil-from-days) so the
/// daemon needs neither ICU nor a locale to print a date.
public struct UTCTime: Sendable, Equatable {
    public var year: Int
    public var month: Int
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int
    public var nanosecond: Int

    /// The first and last second shown (0001-01-01 and 9999-12-31): a date outside, which a hand-edited file
    /// can hold (the app takes any `Double`), is shown as the nearer end rather than trap.
    static let shownRange = -62_135_596_800.0...253_402_300_799.0

    public init(_ date: Date) {
        let raw = date.timeIntervalSince1970
        let total = raw.isNaN ? 0 : min(max(raw, Self.shownRange.lowerBound), Self.shownRange.upperBound)
        var seconds = Int(total.rounded(.down))
        nanosecond = min(999_999_999, Int(((total - Double(seconds)) * 1e9).rounded()))
        var days = seconds / 86_400
        seconds -= days * 86_400
        if seconds < 0 {
            seconds += 86_400
            days -= 1
        }
        hour = seconds / 3600
        minute = seconds % 3600 / 60
        second = seconds % 60
        (year, month, day) = CivilDate.date(days: Int64(days))
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// RFC 3339 in UTC, with milliseconds only when the instant has them: `2009-02-13T23:31:30Z`,
    /// `2026-11-30T02:03:04.250Z`.
    public var rfc3339: String {
        var text = "\(Self.pad(year, 4))-\(Self.pad(month, 2))-\(Self.pad(day, 2))T"
        text += "\(Self.pad(hour, 2)):\(Self.pad(minute, 2)):\(Self.pad(second, 2))"
        let milliseconds = nanosecond / 1_000_000
        if milliseconds > 0 { text += "." + Self.pad(milliseconds, 3) }
        return text + "Z"
    }

    /// A compact form for file names, without colons: `20261130T020304Z`.
    public var compactStamp: String {
        "\(Self.pad(year, 4))\(Self.pad(month, 2))\(Self.pad(day, 2))T"
            + "\(Self.pad(hour, 2))\(Self.pad(minute, 2))\(Self.pad(second, 2))Z"
    }

    /// `2009-02-13 23:31` for people.
    public var shortDateTime: String {
        "\(Self.pad(year, 4))-\(Self.pad(month, 2))-\(Self.pad(day, 2)) \(Self.pad(hour, 2)):\(Self.pad(minute, 2))"
    }

    /// Parses RFC 3339 (`2009-02-13T23:31:30Z`, fractions and `+hh:mm` offsets allowed).
    public static func parseRFC3339(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54 || bytes[10] == 0x74,
            bytes[13] == 0x3A, bytes[16] == 0x3A,
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == 0x2E {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 0x30 && bytes[index] <= 0x39 {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        switch bytes[index] {
        case 0x5A, 0x7A:  // Z
            guard index + 1 == bytes.count else { return nil }
        case 0x2B, 0x2D:  // + -
            guard index + 6 == bytes.count, bytes[index + 3] == 0x3A,
                let hours = number((index + 1)..<(index + 3)), let minutes = number((index + 4)..<(index + 6))
            else { return nil }
            offsetSeconds = (hours * 3600 + minutes * 60) * (bytes[index] == 0x2B ? 1 : -1)
        default: return nil
        }
        let days = Int(CivilDate.days(year: year, month: month, day: day))
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }
}
