import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol

extension Syncupsctl {
    static let statsCommand = Subcommand(
        name: "stats",
        usage: "stats SYNCUP [--last N]",
        summary:
            "Each attendee's average floor and speaking time over a sync-up's meetings, and how often they ran over.",
        details: """
            --last N   only the N newest meetings (default: all)
            """,
        spec: ArgumentSpec(valueOptions: ["last"], positionals: 1...1)
    ) { context, arguments throws(CLIError) in
        var last: Int?
        if let text = arguments.value("last") {
            guard let count = Int(text), count > 0 else {
                throw .usage("--last must be a positive number, not \"\(text)\"")
            }
            last = count
        }
        let connection = try context.connect()
        let syncUpID = try context.syncUpID(arguments.positionals[0], on: connection)
        // Newest first, a page at a time, up to `last`.
        var meetings: [JSONValue] = []
        var title = ""
        var offset = 0
        while true {
            var request: JSONObject = ["id": .string(syncUpID), "meetingsOffset": .int(offset)]
            if let last { request.append("meetingsLimit", .int(min(last - meetings.count, 100))) }
            let page = try context.call(on: connection, CommandName.syncUpsGet, request)
            title = Format.string(page["title"])
            meetings += page["meetings"]?.arrayValue ?? []
            guard let next = page["meetingsNext"]?.numberValue?.int64, meetings.count < (last ?? Int.max) else { break }
            offset = Int(next)
        }
        var insights: [MeetingInsights] = []
        for meeting in meetings {
            let details = try context.call(
                on: connection, CommandName.meetingsGet,
                ["syncup": .string(syncUpID), "meeting": meeting["id"] ?? .null, "segmentsLimit": 1])
            if let found = details["insights"].flatMap(MeetingInsights.init(json:)) { insights.append(found) }
        }
        let stats = AttendeeStats.of(insights)
        let result: JSONValue = [
            "syncup": ["id": .string(syncUpID), "title": .string(title)],
            "meetings": .int(meetings.count),
            "withoutInsights": .int(meetings.count - insights.count),
            "attendees": .array(stats.map(\.json)),
        ]
        context.show(result) { Format.stats(title: title, meetings: meetings.count, insights: insights.count, stats) }
    }
}

extension Format {
    /// A left-aligned table, columns two spaces apart (names may be wide: counted in terminal columns).
    static func table(_ rows: [[String]], indent: String = "  ") -> String {
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].displayWidth }.max() ?? 0 }
        return rows.map { row in
            var line = indent
            for (column, cell) in row.enumerated() {
                line += column == row.count - 1 ? cell : cell.padded(to: widths[column] + 2)
            }
            return line
        }.joined(separator: "\n") + "\n"
    }

    /// How far a turn went past its share (`+00:12.0`, then `ranOver`) or stopped before it (`-00:03.5`):
    /// `on time` when that rounds to nothing (not `±00:00.0`), `no turn` without a turn.
    static func overtime(_ row: MeetingInsights.AttendeeInsights, ranOver: String) -> String {
        guard !row.isAbsent else { return "absent" }
        guard row.turns > 0 else { return "no turn" }
        guard abs(row.overtime) >= 0.05 else { return "on time" }
        return DurationText.tenths(row.overtime, sign: true) + (row.ranOver ? ranOver : "")
    }

    /// The insights block of `syncupsctl meeting`: the meeting's planned and real length, then a table.
    static func insights(_ meeting: JSONValue) -> String {
        guard let insights = meeting["insights"].flatMap(MeetingInsights.init(json:)) else {
            if let problem = meeting["detailsError"]?.stringValue {
                return "no insights: the meeting's details file is unreadable: \(oneLine(problem))\n"
            }
            return "no insights: this meeting was saved without its turns\n"
        }
        let cut = insights.turnsCutShort
        var text =
            "insights: planned \(DurationText.tenths(insights.plannedSeconds)), took \(DurationText.tenths(insights.realSeconds))"
        if insights.pausedSeconds > 0.05 { text += " (\(DurationText.tenths(insights.pausedSeconds)) paused)" }
        text += ", \(cut) turn\(cut == 1 ? "" : "s") cut short\n"
        var rows = [["attendee", "share", "floor", "spoke", "over"]]
        for row in insights.attendees {
            let name = oneLine(Attendee.shown(row.attendee.name))
            let over = overtime(row, ranOver: " ran over")
            rows.append([
                name, DurationText.tenths(row.share), DurationText.tenths(row.floor), DurationText.tenths(row.speaking),
                over,
            ])
        }
        return text + table(rows) + byVoice(insights).map { "by voice: \($0)\n" }.joined()
    }

    /// Per attendee heard by voice: `Ann spoke 1.5 s, 0.5 s of it in others' turns; in her turn: Cat 1.0 s`;
    /// nothing for a meeting without voices.
    static func byVoice(_ insights: MeetingInsights) -> [String] {
        guard insights.isAttributedByVoice else { return [] }
        return insights.attendees.map { row in
            let name = oneLine(Attendee.shown(row.attendee.name))
            var line = "\(name) spoke \(DurationText.tenths(row.speakingByVoice))"
            if row.inOthersTurns > 0 { line += ", \(DurationText.tenths(row.inOthersTurns)) of it in others' turns" }
            if !row.othersInTurn.isEmpty {
                line +=
                    "; in their turn: "
                    + row.othersInTurn.map {
                        "\(oneLine(Attendee.shown($0.attendee.name))) \(DurationText.tenths($0.seconds))"
                    }.joined(separator: ", ")
            }
            return line
        }
    }

    static func stats(title: String, meetings: Int, insights: Int, _ stats: [AttendeeStats]) -> String {
        var text = "\"\(oneLine(title))\": \(meetings) meeting\(meetings == 1 ? "" : "s")"
        if insights < meetings { text += " (\(meetings - insights) without insights)" }
        text += "\n"
        guard !stats.isEmpty else { return text + "no insights\n" }
        // The absences column only where someone was absent: the table stays as it was for everyone else.
        let showsAbsences = stats.contains { $0.absences > 0 }
        // The by-voice columns only where meetings were attributed by voice, averaged over those meetings.
        let showsVoices = stats.contains { $0.meetingsWithVoices > 0 }
        var rows = [
            ["attendee", "meetings", "avg floor", "avg spoke", "ran over"] + (showsAbsences ? ["absent"] : [])
                + (showsVoices ? ["by voice", "in others' turns"] : [])
        ]
        for row in stats {
            let voices =
                row.meetingsWithVoices == 0
                ? ["-", "-"]
                : [DurationText.tenths(row.averageSpeakingByVoice), DurationText.tenths(row.averageInOthersTurns)]
            rows.append(
                [
                    oneLine(Attendee.shown(row.attendee.name)), String(row.meetings),
                    DurationText.tenths(row.averageFloor), DurationText.tenths(row.averageSpeaking),
                    "\(row.ranOver) of \(row.meetings)",
                ] + (showsAbsences ? [String(row.absences)] : []) + (showsVoices ? voices : []))
        }
        var footer = ""
        if showsVoices {
            let counted = stats.map(\.meetingsWithVoices).max() ?? 0
            footer =
                "by voice: averages over the \(counted) meeting\(counted == 1 ? "" : "s") attributed by voice\n"
        }
        return text + table(rows) + footer
    }
}

extension TranscriptExport {
    /// The Markdown export's insights section: a table, or a line saying there are none.
    static func markdownInsights(_ meeting: JSONValue) -> String {
        guard let insights = meeting["insights"].flatMap(MeetingInsights.init(json:)) else {
            if let problem = meeting["detailsError"]?.stringValue {
                return "## Insights\n\n_No insights: the meeting's details file is unreadable: "
                    + Escape.markdown(problem) + "._\n"
            }
            return "## Insights\n\n_No insights: this meeting was saved without its turns._\n"
        }
        var text = "## Insights\n\n"
        text +=
            "Planned \(DurationText.tenths(insights.plannedSeconds)), took \(DurationText.tenths(insights.realSeconds))"
        if insights.pausedSeconds > 0.05 { text += " (\(DurationText.tenths(insights.pausedSeconds)) paused)" }
        text += "; \(insights.turnsCutShort) turn\(insights.turnsCutShort == 1 ? "" : "s") cut short.\n\n"
        text += "| Attendee | Share | Floor | Spoke | Over |\n| --- | ---: | ---: | ---: | ---: |\n"
        for row in insights.attendees {
            let name = Escape.markdown(row.attendee.name.isEmpty ? "Unknown" : row.attendee.name)
            let over = Format.overtime(row, ranOver: " (ran over)")
            text +=
                "| \(name) | \(DurationText.tenths(row.share)) | \(DurationText.tenths(row.floor)) | \(DurationText.tenths(row.speaking)) | \(over) |\n"
        }
        let voices = Format.byVoice(insights)
        if !voices.isEmpty {
            text += "\nBy voice:\n\n" + voices.map { "- " + Escape.markdown($0) + "\n" }.joined()
        }
        return text
    }
}
