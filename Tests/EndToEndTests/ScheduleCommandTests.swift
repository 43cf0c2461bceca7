import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// `schedule.*` and `syncupsctl schedule` against the built daemon: precise errors that change nothing,
/// `syncups.schedule` beside `sync-ups.json`, and a reminder shown as a notification whose Start button
/// starts the meeting.
@Suite(.serialized) struct ScheduleCommandTests {
    func createDesign(_ client: RawClient) throws -> JSONValue {
        try #require(
            try client.result(
                "syncups.create", ["title": "Design", "duration": 360, "attendees": ["Blob", "Blob Jr"]])[
                    "id"])
    }

    @Test func refusesBadSchedulesPreciselyAndChangesNothing() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let id = try createDesign(client)
        let file = daemon.dataPath + "/syncups.schedule"
        for (schedule, zone, message) in [
            ("09:30", "UTC", "the schedule \"09:30\" names no day: give days before the time, as in \"mon-fri 09:30\""),
            ("mon-fri 25:00", "UTC", "25:00 is not a time of day: 00:00 to 23:59"),
            (
                "mon-fri 09:30", "Mars/Olympus",
                "no time zone \"Mars/Olympus\": give a tzdata name such as Europe/Berlin or UTC"
            ),
            (
                "mon-fri 09:30", "../../etc/passwd",
                "no time zone \"../../etc/passwd\": give a tzdata name such as Europe/Berlin or UTC"
            ),
            ("sun 02:30", "Europe/Berlin", "02:30 does not exist in Europe/Berlin on Sunday"),
            // The machine's zone by another name: it would change with the machine, not with the schedule.
            (
                "mon-fri 09:30", "localtime",
                "\"localtime\" is not a zone's name: give a tzdata name such as Europe/Berlin or UTC"
            ),
        ] {
            let reply = try client.request(
                "schedule.set", ["syncup": id, "schedule": .string(schedule), "timeZone": .string(zone)])
            #expect(reply["error"]?["code"] == "invalid_argument")
            #expect(reply["error"]?["message"]?.stringValue?.hasPrefix(message) == true, "\(reply)")
        }
        #expect(!Files.exists(file))

        let set = try client.result(
            "schedule.set", ["syncup": id, "schedule": "mon-fri 09:30", "timeZone": "Europe/Berlin", "reminder": 10])
        #expect(set["schedule"] == "mon-fri 09:30")
        #expect(set["reminderMinutes"] == 10)
        #expect(try client.result("status")["next"]?["title"] == "Design")
        #expect(daemon.log.wait { _ in Files.readString(file)?.contains("mon-fri 09:30") == true })
        let before = Files.readString(file)
        let refused = try client.request("schedule.set", ["syncup": id, "schedule": "mon-fri 24:00"])
        #expect(refused["error"]?["code"] == "invalid_argument")
        #expect(try client.result("schedule.list")[0]?["schedule"] == "mon-fri 09:30")
        #expect(Files.readString(file) == before)
        // The sync-ups file does not hold it.
        #expect(Files.readString(daemon.dataPath + "/sync-ups.json")?.contains("09:30") == false)

        // It survives a restart, and syncupsctl shows it.
        daemon.stop()
        let again = try DaemonProcess(directory: daemon.directory)
        let text = try CommandResult.run(BuiltProducts.path("syncupsctl"), ["--socket", again.socketPath, "schedule"])
        #expect(text.standardOutput.hasPrefix("Design: mon-fri 09:30 Europe/Berlin, reminder 10 min before · next in "))
        let cleared = try CommandResult.run(
            BuiltProducts.path("syncupsctl"), ["--socket", again.socketPath, "schedule", "Design", "--clear"])
        #expect(cleared.exitCode == 0)
        #expect(try again.client().result("status")["next"] == .null)
    }

    /// A bar (`watch --once`, what tmux runs) counts down to a stand-up less than an hour away. The countdown
    /// is read at the moment each command runs, which the test brackets by the clock before and after it: a
    /// start is a whole minute, so whatever the second now, the countdown may change during a command (when
    /// the seconds were past :45 it did within 14 s, and a loaded CI run saw "4 min" for "5 min").
    @Test func theBarCountsDownToTheNextStandUp() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let id = try createDesign(client)
        func now() -> Int {
            var spec = timespec()
            clock_gettime(CLOCK_REALTIME, &spec)
            return spec.tv_sec
        }
        // A start 3 to 4 minutes away.
        let start = (now() + 240) / 60 * 60
        func countdowns(during command: () throws -> CommandResult) throws -> (String, Set<String>) {
            let before = now()
            let output = try command().standardOutput
            return (output, [before, now()].reduce(into: []) { $0.insert("Design in \((start - $1 + 59) / 60) min") })
        }
        let minute = start % 86_400 / 60
        let clock = "\(minute / 60 < 10 ? "0" : "")\(minute / 60):\(minute % 60 < 10 ? "0" : "")\(minute % 60)"
        _ = try client.result(
            "schedule.set", ["syncup": id, "schedule": .string("daily \(clock)"), "timeZone": "UTC", "reminder": 0])
        let (bar, barCountdowns) = try countdowns {
            try CommandResult.run(
                BuiltProducts.path("syncupsctl"),
                ["--socket", daemon.socketPath, "watch", "--once", "--format", "tmux"])
        }
        #expect(barCountdowns.contains { bar.contains($0) }, "\(bar), expected one of \(barCountdowns)")
        let (status, statusCountdowns) = try countdowns {
            try CommandResult.run(BuiltProducts.path("syncupsctl"), ["--socket", daemon.socketPath, "status"])
        }
        #expect(
            statusCountdowns.contains { status.contains("next:      \($0) (daily \(clock) UTC)") },
            "\(status), expected one of \(statusCountdowns)")
    }

    /// The reminder of a start less than its lead away shows at once, on the session bus, and its Start button
    /// starts the meeting. (That a reminder shows at its lead, not before, is timed in virtual time:
    /// `VirtualTimeTests.aReminderShowsAtItsLeadOnTheWallClockNotASecondBefore`; the wall-clock timer itself
    /// in `WallClockTimerTests`.)
    @Test(.enabled(if: SessionBusFixture.unavailableReason == nil, "\(SessionBusFixture.unavailableReason ?? "")"))
    func aReminderIsShownOnTheBusAndItsStartButtonStartsTheMeeting() throws {
        let bus = try SessionBusFixture()
        let server = try NotificationServerFixture(bus: bus)
        let daemon = try MediaPlayerTests.daemon(on: bus)
        let client = try daemon.client()
        let id = try createDesign(client)
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["daemon", "session"], "snapshot": false])
        // A start one to two minutes away, with a two-minute lead: its reminder is due as the schedule is set.
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let start = (spec.tv_sec / 60 + 2) * 60
        let minute = Int(start % 86_400 / 60)
        let clock = "\(minute / 60 < 10 ? "0" : "")\(minute / 60):\(minute % 60 < 10 ? "0" : "")\(minute % 60)"
        _ = try client.result(
            "schedule.set", ["syncup": id, "schedule": .string("daily \(clock)"), "timeZone": "UTC", "reminder": 2])
        let reminder = try watcher.nextEvent("schedule.reminder")
        #expect(reminder["data"]?["startSeconds"] == .number(.int(Int64(start))))
        #expect(reminder["data"]?["late"] == false)
        let shown = try #require(server.wait { $0["summary"]?.stringValue?.hasPrefix("Design in ") == true })
        #expect(shown["actions"] == ["start", "Start", "snooze", "Snooze 5 min", "skip", "Skip today"])
        try server.invoke(try #require(shown["id"]), "start")
        let started = try watcher.nextEvent("session.started")
        #expect(started["data"]?["session"]?["title"] == "Design")
    }
}
