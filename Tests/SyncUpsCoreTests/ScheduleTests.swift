import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// Stand-up schedules: parsing with precise errors, occurrences across daylight saving in real tzdata
/// zones, and the reminder planner on a virtual wall clock (suspend, missed starts, a changed zone).
@Suite struct ScheduleTests {
    static func zone(_ name: String) throws -> TimeZoneRules {
        let bytes = try #require(Files.read("/usr/share/zoneinfo/" + name), "tzdata's \(name)")
        return try TimeZoneRules(name: name, tzif: bytes)
    }

    /// UTC seconds of a UTC date and time.
    static func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int = 0) -> Int64 {
        CivilDate.days(year: year, month: month, day: day) * 86_400 + Int64(hour * 3600 + minute * 60)
    }

    static let design = SyncUp.ID(uuidString: "00000000-0000-0000-0000-00000000D351")!
    static let ops = SyncUp.ID(uuidString: "00000000-0000-0000-0000-0000000000B5")!

    @Test(arguments: [
        ("09:30", "the schedule \"09:30\" names no day: give days before the time, as in \"mon-fri 09:30\""),
        ("mon-fri 25:00", "25:00 is not a time of day: 00:00 to 23:59"),
        ("mon-fri 09:60", "09:60 is not a time of day: 00:00 to 23:59"),
        (
            "mun 09:30",
            "\"mun\" is not a day: use mon, tue, wed, thu, fri, sat, sun or their full names, daily, weekdays, weekends (or mon-fri)"
        ),
        // Words that merely begin with a day, or days joined by something that is not a list or a range.
        (
            "monkey 09:30",
            "\"monkey\" is not a day: use mon, tue, wed, thu, fri, sat, sun or their full names, daily, weekdays, weekends (or mon-fri)"
        ),
        (
            "mon/fri 09:30",
            "\"mon/fri\" is not a day: use mon, tue, wed, thu, fri, sat, sun or their full names, daily, weekdays, weekends (or mon-fri)"
        ),
        (
            "sunny,fries 10:00",
            "\"sunny\" is not a day: use mon, tue, wed, thu, fri, sat, sun or their full names, daily, weekdays, weekends (or mon-fri)"
        ),
        ("mon-fri +9:30", "\"+9:30\" is not a time: give HH:MM, as in 09:30"),
        ("mon-fri -0:30", "\"-0:30\" is not a time: give HH:MM, as in 09:30"),
        ("mon-fri", "the schedule \"mon-fri\" has no time: end it with one, as in \"mon-fri 09:30\""),
        ("mon-fri 9h30", "the schedule \"mon-fri 9h30\" has no time: end it with one, as in \"mon-fri 09:30\""),
        // A hand-edited schedule of any length is quoted cut short (B10: every parse error is bounded).
        (
            String(repeating: "x", count: 100_000),
            "the schedule \"\(String(repeating: "x", count: 80))…\" has no time: end it with one, as in \"mon-fri 09:30\""
        ),
    ])
    func refusesWhatIsNotASchedule(text: String, message: String) {
        #expect(
            performing: { try StandupSchedule.parse(text, timeZone: "UTC") },
            throws: { error in
                (error as? StandupSchedule.ParseError)?.description == message
            })
    }

    @Test func parsesDaysRangesAndListsAndWritesThemBack() throws {
        #expect(try StandupSchedule.parse("mon-fri 09:30", timeZone: "UTC").days == [0, 1, 2, 3, 4])
        #expect(try StandupSchedule.parse("Mon-Fri 9:30", timeZone: "UTC").text == "mon-fri 09:30")
        #expect(try StandupSchedule.parse("mon,wed,fri 10:00", timeZone: "UTC").text == "mon,wed,fri 10:00")
        #expect(try StandupSchedule.parse("fri-mon 08:05", timeZone: "UTC").days == [4, 5, 6, 0])
        #expect(try StandupSchedule.parse("daily 00:00", timeZone: "UTC").days.count == 7)
        #expect(try StandupSchedule.parse("mon-sun 00:00", timeZone: "UTC").text == "daily 00:00")
        // An en dash (what a word processor makes of "-") is a range; full names are days.
        #expect(try StandupSchedule.parse("Mon\u{2013}Fri 09:30", timeZone: "UTC").text == "mon-fri 09:30")
        #expect(try StandupSchedule.parse("Monday,Friday 09:30", timeZone: "UTC").text == "mon,fri 09:30")
    }

    /// 02:30 does not exist in Berlin on the night clocks go forward (Sunday 2027-03-28): refused with the date.
    @Test func refusesATimeTheClocksSkipOnADaylightSavingNight() throws {
        let berlin = try Self.zone("Europe/Berlin")
        let sunday = try StandupSchedule.parse("sun 02:30", timeZone: "Europe/Berlin")
        #expect(
            sunday.nonexistentTime(from: Self.utc(2027, 1, 4, 12), rules: berlin)
                == "02:30 does not exist in Europe/Berlin on Sunday 2027-03-28: the clocks go from 02:00 to 03:00")
        // The same time on weekdays always exists; so does Sunday 03:30.
        #expect(
            try StandupSchedule.parse("mon-fri 02:30", timeZone: "Europe/Berlin")
                .nonexistentTime(from: Self.utc(2027, 1, 4, 12), rules: berlin) == nil)
        #expect(
            try StandupSchedule.parse("sun 03:30", timeZone: "Europe/Berlin")
                .nonexistentTime(from: Self.utc(2027, 1, 4, 12), rules: berlin) == nil)
    }

    /// 09:30 in Berlin is 08:30 UTC before the change and 07:30 after; in New York, 14:30 / 13:30 UTC.
    @Test func keepsTheLocalTimeAcrossDaylightSaving() throws {
        let berlin = try Self.zone("Europe/Berlin")
        let schedule = try StandupSchedule.parse("mon-fri 09:30", timeZone: "Europe/Berlin")
        let friday = Self.utc(2027, 3, 26, 8, 30)
        #expect(schedule.next(after: Self.utc(2027, 3, 26, 6), rules: berlin) == friday)
        #expect(schedule.next(after: friday, rules: berlin) == Self.utc(2027, 3, 29, 7, 30))
        #expect(schedule.previous(atOrBefore: Self.utc(2027, 3, 29, 7, 29), rules: berlin) == friday)
        // Autumn: the clocks go back on Sunday 2027-10-31.
        #expect(schedule.next(after: Self.utc(2027, 10, 29, 9), rules: berlin) == Self.utc(2027, 11, 1, 8, 30))
        let newYork = try Self.zone("America/New_York")
        let east = try StandupSchedule.parse("mon-fri 09:30", timeZone: "America/New_York")
        #expect(east.next(after: Self.utc(2027, 3, 12, 15), rules: newYork) == Self.utc(2027, 3, 15, 13, 30))
    }

    /// A start the clocks pass twice (01:30 on a fall-back night in New York) is the first.
    @Test func takesTheFirstOfARepeatedTime() throws {
        let newYork = try Self.zone("America/New_York")
        let schedule = try StandupSchedule.parse("sun 01:30", timeZone: "America/New_York")
        #expect(schedule.next(after: Self.utc(2027, 11, 6, 12), rules: newYork) == Self.utc(2027, 11, 7, 5, 30))
    }

    func entries(_ schedule: StandupSchedule, _ rules: TimeZoneRules) -> [SyncUp.ID: ReminderPlanner.Entry] {
        [Self.design: ReminderPlanner.Entry(schedule: schedule, rules: rules, meetingSeconds: 900)]
    }

    /// On time: the reminder 5 minutes before, once; then the next working day's.
    @Test func remindsOnceAtTheLeadAndPlansTheNext() throws {
        let berlin = try Self.zone("Europe/Berlin")
        let all = entries(try StandupSchedule.parse("mon-fri 09:30", timeZone: "Europe/Berlin"), berlin)
        var planner = ReminderPlanner()
        let (none, wake) = planner.evaluate(now: Self.utc(2027, 3, 26, 6), entries: all)
        #expect(none.isEmpty)
        #expect(wake == Self.utc(2027, 3, 26, 8, 25))
        let (due, next) = planner.evaluate(now: Self.utc(2027, 3, 26, 8, 25), entries: all)
        #expect(due == [.remind(Self.design, start: Self.utc(2027, 3, 26, 8, 30), isLate: false)])
        #expect(next == Self.utc(2027, 3, 29, 7, 25))  // Monday, after the change to summer time
        #expect(planner.evaluate(now: Self.utc(2027, 3, 26, 8, 26), entries: all).actions.isEmpty)
    }

    /// Suspended from Friday evening to Tuesday 09:40: one late reminder, Tuesday's; Monday's is not replayed.
    @Test func showsAMissedReminderLateOnceAfterASuspend() throws {
        let berlin = try Self.zone("Europe/Berlin")
        let all = entries(try StandupSchedule.parse("mon-fri 09:30", timeZone: "Europe/Berlin"), berlin)
        var planner = ReminderPlanner()
        _ = planner.evaluate(now: Self.utc(2027, 3, 26, 17), entries: all)
        let (late, wake) = planner.evaluate(now: Self.utc(2027, 3, 30, 7, 40), entries: all)
        #expect(late == [.remind(Self.design, start: Self.utc(2027, 3, 30, 7, 30), isLate: true)])
        #expect(wake == Self.utc(2027, 3, 31, 7, 25))
        #expect(planner.evaluate(now: Self.utc(2027, 3, 30, 7, 41), entries: all).actions.isEmpty)
        // Woken after the meeting could have ended: nothing, not even late.
        var other = ReminderPlanner()
        _ = other.evaluate(now: Self.utc(2027, 3, 26, 17), entries: all)
        #expect(other.evaluate(now: Self.utc(2027, 3, 30, 12), entries: all).actions.isEmpty)
    }

    /// A schedule set inside its lead (the daemon running) reminds at once, and not as "late": nothing was missed.
    @Test func aScheduleSetInsideItsLeadRemindsAtOnceNotLate() throws {
        let all = entries(try StandupSchedule.parse("daily 09:30", timeZone: "UTC"), TimeZoneRules.utc())
        var planner = ReminderPlanner()
        _ = planner.evaluate(now: Self.utc(2027, 5, 3, 9), entries: [:])
        #expect(
            planner.evaluate(now: Self.utc(2027, 5, 3, 9, 28), entries: all).actions == [
                .remind(Self.design, start: Self.utc(2027, 5, 3, 9, 30), isLate: false)
            ])
    }

    /// The daemon starts (at login) 7½ min after Design's 03:10 and 5½ after Ops' 03:12, both automatic with a
    /// 1-min reminder: neither starts late; each is reminded of once, marked late. Within the grace it starts.
    @Test func neverStartsAMissedMeetingLateWhenTheDaemonStarts() throws {
        let utc = TimeZoneRules.utc()
        let design = try StandupSchedule.parse("daily 03:10", timeZone: "UTC", reminderMinutes: 1, autoStart: true)
        let ops = try StandupSchedule.parse("daily 03:12", timeZone: "UTC", reminderMinutes: 1, autoStart: true)
        let all: [SyncUp.ID: ReminderPlanner.Entry] = [
            Self.design: .init(schedule: design, rules: utc, meetingSeconds: 900),
            Self.ops: .init(schedule: ops, rules: utc, meetingSeconds: 900),
        ]
        var planner = ReminderPlanner()
        let (actions, _) = planner.evaluate(now: Self.utc(2027, 5, 3, 3, 17) + 31, entries: all)
        #expect(
            Set(actions.map { "\($0)" }) == [
                "\(ReminderPlanner.Action.remind(Self.design, start: Self.utc(2027, 5, 3, 3, 10), isLate: true))",
                "\(ReminderPlanner.Action.remind(Self.ops, start: Self.utc(2027, 5, 3, 3, 12), isLate: true))",
            ])
        #expect(planner.evaluate(now: Self.utc(2027, 5, 3, 3, 18), entries: all).actions.isEmpty)
        // Started 30 s after Design's time: inside the grace, it starts.
        var onTime = ReminderPlanner()
        #expect(
            onTime.evaluate(now: Self.utc(2027, 5, 3, 3, 10) + 30, entries: all).actions.contains(
                .start(Self.design, start: Self.utc(2027, 5, 3, 3, 10))))
    }

    @Test func snoozesAndSkipsAndStartsByItself() throws {
        let utc = TimeZoneRules.utc()
        var schedule = try StandupSchedule.parse("daily 09:30", timeZone: "UTC")
        schedule.autoStart = true
        let all = entries(schedule, utc)
        var planner = ReminderPlanner()
        let start = Self.utc(2027, 5, 3, 9, 30)
        #expect(
            planner.evaluate(now: start - 300, entries: all).actions == [
                .remind(Self.design, start: start, isLate: false)
            ])
        planner.snooze(Self.design, start: start, until: start - 300 + 300)
        let (snoozed, wake) = planner.evaluate(now: start - 299, entries: all)
        #expect(snoozed.isEmpty)
        #expect(wake == start)
        #expect(
            planner.evaluate(now: start, entries: all).actions == [
                .remind(Self.design, start: start, isLate: false), .start(Self.design, start: start),
            ])
        // Skip today: tomorrow's reminder, but no start today.
        var skipping = ReminderPlanner()
        _ = skipping.evaluate(now: start - 300, entries: all)
        skipping.skip(Self.design, start: start)
        #expect(skipping.evaluate(now: start, entries: all).actions.isEmpty)
        #expect(
            skipping.evaluate(now: start + 86_400 - 300, entries: all).actions == [
                .remind(Self.design, start: start + 86_400, isLate: false)
            ])
    }

    /// The schedule moves to another zone: the next wake follows the new zone at once.
    @Test func followsAChangedTimeZone() throws {
        let berlin = try Self.zone("Europe/Berlin")
        let newYork = try Self.zone("America/New_York")
        var planner = ReminderPlanner()
        let now = Self.utc(2027, 5, 3, 6)
        let inBerlin = planner.evaluate(
            now: now, entries: entries(try StandupSchedule.parse("mon-fri 09:30", timeZone: "Europe/Berlin"), berlin))
        #expect(inBerlin.wake == Self.utc(2027, 5, 3, 7, 25))
        let inNewYork = planner.evaluate(
            now: now,
            entries: entries(try StandupSchedule.parse("mon-fri 09:30", timeZone: "America/New_York"), newYork))
        #expect(inNewYork.wake == Self.utc(2027, 5, 3, 13, 25))
        #expect(inNewYork.actions.isEmpty)
    }
}
