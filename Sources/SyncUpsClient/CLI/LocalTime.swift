import FoundationEssentials
import Glibc
import SyncUpsCore

/// An instant as a person reads it: the wall clock of the local time zone and its offset from UTC,
/// `2026-12-01 15:04 +05:30`.
///
/// The zone is glibc's, as `date(1)` has it: `TZ` (a zone name such as `Europe/Berlin`, `:NAME`, a file, or a
/// POSIX rule such as `EST5EDT`), else `/etc/localtime`, else UTC. FoundationEssentials has no time zone
/// database on Linux (its `TimeZone` knows fixed offsets only), so `localtime_r` does the work.
enum LocalTime {
    /// The wall-clock fields and offset of `date` in the local zone.
    static func fields(_ date: Date) -> (time: UTCTime, offsetSeconds: Int) {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var broken = tm()
        tzset()
        guard localtime_r(&seconds, &broken) != nil else { return (UTCTime(date), 0) }
        let offset = Int(broken.tm_gmtoff)
        // The same fields, computed by the UTC arithmetic from the instant moved by the offset.
        return (UTCTime(Date(timeIntervalSince1970: Double(seconds) + Double(offset))), offset)
    }

    /// `2026-12-01 15:04 +05:30` (`+00:00` in UTC).
    static func short(_ date: Date) -> String {
        let (time, offset) = fields(date)
        return time.shortDateTime + " " + Self.offset(offset)
    }

    /// `+05:30`, `-03:00`.
    static func offset(_ seconds: Int) -> String {
        let minutes = abs(seconds) / 60
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
        return (seconds < 0 ? "-" : "+") + two(minutes / 60) + ":" + two(minutes % 60)
    }
}
