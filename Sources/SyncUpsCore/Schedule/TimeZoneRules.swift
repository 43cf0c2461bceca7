/// A time zone's offsets from UTC over time, read from a TZif file (`/usr/share/zoneinfo/NAME`, RFC 8536):
/// its transitions, no clock and no IO (the caller reads the bytes). Past the last transition (2037 in
/// Debian's "fat" files) the last offset holds.
public struct TimeZoneRules: Sendable, Equatable {
    public let name: String
    /// UTC seconds of each transition, ascending, and the offset (seconds east of UTC) from then on.
    let transitions: [Int64]
    let offsets: [Int]
    /// The offset before the first transition.
    let initialOffset: Int

    public init(name: String, transitions: [(Int64, Int)], initialOffset: Int) {
        self.name = name
        self.transitions = transitions.map(\.0)
        self.offsets = transitions.map(\.1)
        self.initialOffset = initialOffset
    }

    public static func utc() -> TimeZoneRules { TimeZoneRules(name: "UTC", transitions: [], initialOffset: 0) }

    public struct ParseError: Error, Equatable, Sendable {
        public let reason: String
    }

    /// Parses a TZif file (version 2 or later: its 64-bit block; version 1: its 32-bit one).
    public init(name: String, tzif bytes: [UInt8]) throws(ParseError) {
        func integer(_ offset: Int, _ size: Int) throws(ParseError) -> Int64 {
            guard offset >= 0, offset + size <= bytes.count else { throw ParseError(reason: "truncated TZif data") }
            var value: UInt64 = 0
            for index in 0..<size { value = value << 8 | UInt64(bytes[offset + index]) }
            let shift = UInt64(64 - size * 8)
            return Int64(bitPattern: value << shift) >> Int64(shift)
        }
        guard bytes.count >= 44, bytes[0] == 0x54, bytes[1] == 0x5A, bytes[2] == 0x69, bytes[3] == 0x66 else {
            throw ParseError(reason: "not a TZif file")
        }
        func counts(_ at: Int) throws(ParseError) -> [Int] {
            var values: [Int] = []
            for index in 0..<6 { values.append(Int(try integer(at + 20 + index * 4, 4))) }
            return values
        }
        var header = 0
        var timeSize = 4
        var c = try counts(0)
        if bytes[4] >= 0x32 {
            // Skip the version 1 block to the 64-bit one.
            header = 44 + c[3] * 5 + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0]
            c = try counts(header)
            timeSize = 8
        }
        let (timeCount, typeCount) = (c[3], c[4])
        guard typeCount > 0 else { throw ParseError(reason: "a TZif file without local time types") }
        var position = header + 44
        var times: [Int64] = []
        for index in 0..<timeCount { times.append(try integer(position + index * timeSize, timeSize)) }
        position += timeCount * timeSize
        var typeIndices: [Int] = []
        for index in 0..<timeCount { typeIndices.append(Int(try integer(position + index, 1) & 0xFF)) }
        position += timeCount
        var typeOffsets: [Int] = []
        for index in 0..<typeCount { typeOffsets.append(Int(try integer(position + index * 6, 4))) }
        guard typeIndices.allSatisfy({ $0 < typeCount }) else { throw ParseError(reason: "a bad TZif type index") }
        self.init(
            name: name, transitions: zip(times, typeIndices.map { typeOffsets[$0] }).map { ($0, $1) },
            initialOffset: typeOffsets[0])
    }

    /// The offset from UTC (seconds east) at UTC second `time`.
    public func offset(at time: Int64) -> Int {
        let count = transitionsUpTo(time)
        return count == 0 ? initialOffset : offsets[count - 1]
    }

    /// How many transitions happen at or before `time`.
    private func transitionsUpTo(_ time: Int64) -> Int {
        var low = 0
        var high = transitions.count
        while low < high {
            let middle = (low + high) / 2
            if transitions[middle] <= time { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// What a local wall-clock time (seconds since 1970-01-01 00:00 local) is in UTC.
    public enum Resolution: Equatable, Sendable {
        case unique(Int64)
        /// The clocks skip it (spring forward): the gap's local start and end, and the UTC instant it ends at.
        case skipped(gapStart: Int64, gapEnd: Int64, transition: Int64)
        /// The clocks pass it twice (fall back): both instants, the earlier first.
        case repeated(Int64, Int64)
    }

    public func resolve(local: Int64) -> Resolution {
        let before = offset(at: local - 86_400)
        let after = offset(at: local + 86_400)
        var valid: [Int64] = []
        for candidate in [before, after] {
            let utc = local - Int64(candidate)
            if offset(at: utc) == candidate, !valid.contains(utc) { valid.append(utc) }
        }
        valid.sort()
        switch valid.count {
        case 1: return .unique(valid[0])
        case 2: return .repeated(valid[0], valid[1])
        default:
            // In the gap: from the transition's local time on the old offset to it on the new one.
            let count = transitionsUpTo(local - Int64(before))
            let transition = count == 0 ? local - Int64(before) : transitions[count - 1]
            return .skipped(
                gapStart: transition + Int64(before), gapEnd: transition + Int64(after), transition: transition)
        }
    }
}

/// Days since 1970-01-01 and civil dates (proleptic Gregorian), for local wall-clock arithmetic.
public enum CivilDate {
    /// The day number of a date.
    public static func days(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day number.
    public static func date(days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0)), Int(month), Int(day))
    }

    /// 0 Monday … 6 Sunday.
    public static func weekday(days: Int64) -> Int { Int(((days + 3) % 7 + 7) % 7) }

    /// "2027-03-28"
    public static func text(days: Int64) -> String {
        let (year, month, day) = date(days: days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))"
    }
}
