import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol

extension Syncupsctl {
    static let scheduleCommand = Subcommand(
        name: "schedule",
        usage:
            "schedule [SYNCUP [\"DAYS HH:MM\"] [--tz ZONE] [--reminder MIN] [--auto-start | --no-auto-start] | SYNCUP --clear]",
        summary: "Show the stand-ups' schedules, or set or clear one's: a reminder before each, and an optional start.",
        details: """
            DAYS HH:MM       e.g. "mon-fri 09:30", "mon,wed,fri 10:00", "daily 08:45"
            --tz ZONE        a tzdata zone (Europe/Berlin); default: the machine's, or the schedule's
            --reminder MIN   minutes before the start the reminder shows (default 5)
            --auto-start     start the meeting at its time by itself
            --clear          remove the schedule
            """,
        spec: ArgumentSpec(
            valueOptions: ["tz", "reminder"], flagOptions: ["auto-start", "no-auto-start", "clear"], positionals: 0...2)
    ) { context, arguments throws(CLIError) in
        let connection = try context.connect()
        guard let syncUp = arguments.positionals.first else {
            let list = try context.call(on: connection, CommandName.scheduleList)
            context.show(list) {
                let lines = (list.arrayValue ?? []).map(Format.scheduleLine)
                return lines.isEmpty ? "no schedules\n" : lines.joined(separator: "\n") + "\n"
            }
            return
        }
        let id = try context.syncUpID(syncUp, on: connection)
        if arguments.has("clear") {
            let result = try context.call(on: connection, CommandName.scheduleClear, ["syncup": .string(id)])
            context.show(result) { "cleared\n" }
            return
        }
        guard arguments.positionals.count == 2 else {
            throw CLIError.usage(
                "schedule: give the days and time, as in: syncupsctl schedule Design \"mon-fri 09:30\"")
        }
        var request: JSONObject = ["syncup": .string(id), "schedule": .string(arguments.positionals[1])]
        if let zone = arguments.value("tz") { request.append("timeZone", .string(zone)) }
        if let text = arguments.value("reminder") {
            guard let minutes = Int(text) else {
                throw CLIError.usage("--reminder: \"\(text)\" is not a number of minutes")
            }
            request.append("reminder", .int(minutes))
        }
        if arguments.has("auto-start") { request.append("autoStart", true) }
        if arguments.has("no-auto-start") { request.append("autoStart", false) }
        let result = try context.call(on: connection, CommandName.scheduleSet, request)
        context.show(result) { Format.scheduleLine(result) + "\n" }
    }
}

extension Format {
    /// `Design: mon-fri 09:30 Europe/Berlin, reminder 5 min before · next in 4 min`
    static func scheduleLine(_ schedule: JSONValue) -> String {
        var line = "\(string(schedule["title"])): \(string(schedule["schedule"])) \(string(schedule["timeZone"]))"
        line += ", reminder \(int(schedule["reminderMinutes"])) min before"
        if schedule["autoStart"] == true { line += ", starts by itself" }
        if let seconds = schedule["inSeconds"]?.numberValue?.int64 { line += " · next \(inTime(Int(seconds)))" }
        return line
    }

    /// "in 4 min", "in 2 h 5 min", "in 3 days"
    static func inTime(_ seconds: Int) -> String {
        let minutes = (seconds + 59) / 60
        if minutes < 60 { return "in \(minutes) min" }
        if minutes < 48 * 60 { return "in \(minutes / 60) h" + (minutes % 60 == 0 ? "" : " \(minutes % 60) min") }
        return "in \(minutes / 1440) days"
    }
}
