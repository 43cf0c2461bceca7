import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol

extension Syncupsctl {
    /// Every sync-up, following `syncups.list`'s pages.
    static func allSyncUps(_ context: Context, on connection: DaemonConnection) throws(CLIError) -> [JSONValue] {
        var all: [JSONValue] = []
        var offset = 0
        while true {
            let page = try context.call(on: connection, CommandName.syncUpsList, ["offset": .int(offset)])
            all += page["syncups"]?.arrayValue ?? []
            guard let next = page["next"]?.numberValue?.int64 else { return all }
            offset = Int(next)
        }
    }

    static let syncUpCommands: [Subcommand] = [
        Subcommand(
            name: "list",
            aliases: ["ls"],
            usage: "list",
            summary: "List the sync-ups.",
            spec: ArgumentSpec()
        ) { context, _ throws(CLIError) in
            let all = try allSyncUps(context, on: try context.connect())
            context.show(.array(all)) { Format.list(all) }
        },
        Subcommand(
            name: "ids",
            usage: "ids [ID [--attendees]]",
            summary:
                "Print ids and a label, tab-separated: every sync-up and its title, or ID's meetings and their dates.",
            details: """
                One line each, full ids, the label on one line (tabs and newlines become spaces). Shell
                completions use it; so can scripts: syncupsctl ids | cut -f1. In JSON mode, an array of
                {"id","title"} or {"id","date"} (RFC 3339 UTC).
                --attendees   ID's attendees and their names instead ({"id","name"} in JSON mode)
                """,
            spec: ArgumentSpec(flagOptions: ["attendees"], positionals: 0...1)
        ) { context, arguments throws(CLIError) in
            let connection = try context.connect()
            let all = try allSyncUps(context, on: connection)
            // (id, label for people, the same for --json)
            var entries: [(id: String, label: String, json: JSONValue)] = []
            if arguments.has("attendees") {
                guard let wanted = arguments.positionals.first else { throw .usage("ids: --attendees needs an ID") }
                let id = try context.syncUpID(wanted, on: connection)
                for attendee in all.first(where: { $0["id"] == .string(id) })?["attendees"]?.arrayValue ?? [] {
                    let name = Format.string(attendee["name"])
                    let attendeeID = Format.string(attendee["id"])
                    entries.append(
                        (attendeeID, Format.oneLine(name), ["id": .string(attendeeID), "name": .string(name)]))
                }
            } else if let wanted = arguments.positionals.first {
                // The daemon resolves the prefix; the list already carries every meeting's id and date.
                let id = try context.syncUpID(wanted, on: connection)
                let meetings = all.first { $0["id"] == .string(id) }?["meetings"]?.arrayValue ?? []
                for meeting in meetings {
                    let id = Format.string(meeting["id"])
                    entries.append(
                        (id, Format.date(meeting["date"]), ["id": .string(id), "date": meeting["date"] ?? .null]))
                }
            } else {
                for syncUp in all {
                    let id = Format.string(syncUp["id"])
                    let title = Format.string(syncUp["title"])
                    entries.append((id, Format.oneLine(title), ["id": .string(id), "title": .string(title)]))
                }
            }
            context.show(.array(entries.map(\.json))) { entries.map { $0.id + "\t" + $0.label + "\n" }.joined() }
        },
        Subcommand(
            name: "show",
            usage: "show ID",
            summary:
                "Show one sync-up: length, theme, attendees and meetings. ID may be a unique prefix (4+ characters).",
            spec: ArgumentSpec(positionals: 1...1)
        ) { context, arguments throws(CLIError) in
            let connection = try context.connect()
            let id = try context.syncUpID(arguments.positionals[0], on: connection)
            let syncUp = try context.call(on: connection, CommandName.syncUpsGet, ["id": .string(id)])
            context.show(syncUp) { Format.syncUp(syncUp) }
        },
        Subcommand(
            name: "add",
            aliases: ["create"],
            usage: "add TITLE [--duration D] [--theme T] [--attendee NAME]…",
            summary: "Create a sync-up.",
            details: """
                --duration D     length: 15m, 15 min, 90s, 1h30m, 1 min 30 s, 1:30, 1:30:00, or a bare
                                 number of seconds (default 5m; from 1s to 24h, and at least a
                                 second for each attendee)
                --theme T        one of `syncupsctl themes` (default bubblegum)
                --attendee NAME  an attendee; repeat for each (blank names are dropped)
                """,
            spec: ArgumentSpec(valueOptions: ["duration", "theme", "attendee"], positionals: 1...1)
        ) { context, arguments throws(CLIError) in
            var request = JSONObject()
            request.append("title", .string(arguments.positionals[0]))
            if let duration = arguments.value("duration") {
                request.append("duration", .int(try parseDuration(duration, context)))
            }
            if let theme = arguments.value("theme") { request.append("theme", .string(theme)) }
            request.append("attendees", .array(arguments.all("attendee").map(JSONValue.string)))
            let connection = try context.connect()
            let syncUp = try context.call(on: connection, CommandName.syncUpsCreate, request)
            try context.warnAboutLookalikes(syncUp, on: connection)
            context.show(syncUp) { "created \(Format.string(syncUp["id"])) \"\(Format.name(syncUp["title"]))\"\n" }
        },
        Subcommand(
            name: "edit",
            usage:
                "edit ID [--title T] [--duration D] [--theme T] [--attendee NAME]… [--add-attendee NAME]… [--remove-attendee NAME]… [--rename-attendee OLD=NEW]…",
            summary: "Change a sync-up.",
            details: """
                --attendee NAME         the whole new attendee list (repeat); people keep their ids by name
                --add-attendee NAME     add someone at the end
                --remove-attendee NAME  remove someone (a sync-up keeps at least one attendee)
                --rename-attendee OLD=NEW  rename someone (neither name may be empty)
                """,
            spec: ArgumentSpec(
                valueOptions: [
                    "title", "duration", "theme", "attendee", "add-attendee", "remove-attendee", "rename-attendee",
                ],
                positionals: 1...1
            )
        ) { context, arguments throws(CLIError) in
            // Mistakes on the command line are usage errors before anything is asked of the daemon.
            for rename in arguments.all("rename-attendee") { _ = try parseRename(rename) }
            let connection = try context.connect()
            let id = try context.syncUpID(arguments.positionals[0], on: connection)
            var request = JSONObject()
            request.append("id", .string(id))
            if let title = arguments.value("title") { request.append("title", .string(title)) }
            if let duration = arguments.value("duration") {
                request.append("duration", .int(try parseDuration(duration, context)))
            }
            if let theme = arguments.value("theme") { request.append("theme", .string(theme)) }
            let editsAttendees = ["attendee", "add-attendee", "remove-attendee", "rename-attendee"].contains {
                !arguments.all($0).isEmpty
            }
            if editsAttendees {
                let current = try context.call(
                    on: connection,
                    CommandName.syncUpsGet,
                    ["id": .string(id), "meetingsLimit": 1]
                )
                let attendees = try attendeeEdits(current, arguments).map { attendee -> JSONValue in
                    var object = JSONObject()
                    if let id = attendee.id { object.append("id", .string(id)) }
                    object.append("name", .string(attendee.name))
                    return .object(object)
                }
                request.append("attendees", .array(attendees))
            }
            let syncUp = try context.call(on: connection, CommandName.syncUpsUpdate, request)
            try context.warnAboutLookalikes(syncUp, on: connection)
            context.show(syncUp) { "updated \(Format.string(syncUp["id"])) \"\(Format.name(syncUp["title"]))\"\n" }
        },
        Subcommand(
            name: "rm",
            aliases: ["delete"],
            usage: "rm ID [--yes]",
            summary: "Delete a sync-up with its meetings and their audio.",
            details: """
                ID: an id, an id prefix (4+ characters) or the whole title (never a title prefix).
                --yes   do not ask: needed when not on a terminal (on a terminal, rm asks)
                """,
            spec: ArgumentSpec(flagOptions: ["yes"], positionals: 1...1)
        ) { context, arguments throws(CLIError) in
            let connection = try context.connect()
            let id = try context.syncUpID(arguments.positionals[0], on: connection, titlePrefixes: false)
            if !arguments.has("yes") { try context.confirmDeletion(of: id, on: connection) }
            let result = try context.call(on: connection, CommandName.syncUpsDelete, ["id": .string(id)])
            context.show(result) { "deleted \(Format.string(result["id"])) \"\(Format.name(result["title"]))\"\n" }
        },
    ]

    /// A `--duration`. A bare number is seconds, as the daemon counts, but a stand-up lasts minutes: one
    /// under a minute gets a warning that names the minutes (`10 seconds; did you mean 10m?`).
    static func parseDuration(_ text: String, _ context: Context) throws(CLIError) -> Int {
        guard let seconds = DurationText.parseSeconds(text) else {
            throw .usage(
                "\"\(text)\" is not a duration; write 90 (seconds), 90s, 15m, 15 min, 1h30m, 1 min 30 s, 1:30 (m:ss) or 1:30:00 (h:mm:ss)"
            )
        }
        if let bare = Int(text.trimmingWhitespace()), (1..<60).contains(bare) {
            context.output.error("warning: \(bare) second\(bare == 1 ? "" : "s"); did you mean \(bare)m?\n")
        }
        return seconds
    }

    /// `OLD=NEW` of `--rename-attendee`. An empty name would silently drop the attendee (the daemon drops
    /// blank names), so it is a usage error that says how to remove someone.
    static func parseRename(_ text: String) throws(CLIError) -> (old: String, new: String) {
        guard let equals = text.firstIndex(of: "=") else { throw .usage("--rename-attendee takes OLD=NEW") }
        let old = String(text[..<equals])
        let new = String(text[text.index(after: equals)...])
        guard !old.allSatisfy(\.isWhitespace), !new.allSatisfy(\.isWhitespace) else {
            throw .usage(
                "--rename-attendee takes OLD=NEW, both names non-empty; to remove someone, use --remove-attendee NAME")
        }
        return (old, new)
    }

    /// The attendee `name` names in `attendees`: the one of exactly that name, else the only one whose name
    /// matches ignoring case, accents and spaces (`NameKey`), as sync-up titles match.
    static func attendeeIndex(_ name: String, in attendees: [(id: String?, name: String)]) throws(CLIError) -> Int {
        if let exact = attendees.firstIndex(where: { $0.name == name }) { return exact }
        let alike = attendees.indices.filter { NameKey.of(attendees[$0].name) == NameKey.of(name) }
        guard alike.count == 1 else {
            throw CLIError(
                .rejected,
                alike.isEmpty
                    ? "no attendee named \"\(name)\""
                    : "\"\(name)\" could be any of \(alike.count) attendees; write the name exactly",
                code: alike.isEmpty ? "not_found" : "invalid_argument")
        }
        return alike[0]
    }

    /// The attendee list an `edit` asks for, keeping existing people's ids by name.
    static func attendeeEdits(_ syncUp: JSONValue, _ arguments: ParsedArguments) throws(CLIError) -> [(
        id: String?, name: String
    )] {
        var attendees: [(id: String?, name: String)] = (syncUp["attendees"]?.arrayValue ?? []).map {
            (Format.string($0["id"]), Format.string($0["name"]))
        }
        let replacement = arguments.all("attendee")
        if !replacement.isEmpty {
            var available = attendees
            attendees = replacement.map { name in
                if let match = available.firstIndex(where: { $0.name == name }) {
                    return available.remove(at: match)
                }
                return (nil, name)
            }
        }
        for rename in arguments.all("rename-attendee") {
            let (old, new) = try parseRename(rename)
            attendees[try attendeeIndex(old, in: attendees)].name = new
        }
        for name in arguments.all("remove-attendee") {
            attendees.remove(at: try attendeeIndex(name, in: attendees))
        }
        for name in arguments.all("add-attendee") { attendees.append((nil, name)) }
        guard attendees.contains(where: { !NameKey.of($0.name).isEmpty }) || arguments.all("remove-attendee").isEmpty
        else {
            throw CLIError(
                .rejected,
                "a sync-up keeps at least one attendee: add someone (--add-attendee NAME) before removing the last",
                code: "invalid_argument")
        }
        return attendees
    }
}

extension Format {
    static func list(_ syncUps: [JSONValue]) -> String {
        guard !syncUps.isEmpty else {
            return "no sync-ups yet; create one with: syncupsctl add TITLE --attendee NAME\n"
        }
        var table = Table(headers: ["ID", "TITLE", "LENGTH", "ATTENDEES", "MEETINGS", "THEME"], rightAligned: [3, 4])
        for syncUp in syncUps {
            table.rows.append([
                shortID(string(syncUp["id"])),
                name(syncUp["title"]).excerpt(40),
                DurationText.units(int(syncUp["duration"])),
                String(syncUp["attendees"]?.arrayValue?.count ?? 0),
                String(syncUp["meetings"]?.arrayValue?.count ?? 0),
                string(syncUp["theme"]),
            ])
        }
        return table.text
    }

    static func syncUp(_ syncUp: JSONValue) -> String {
        let attendees = syncUp["attendees"]?.arrayValue ?? []
        let duration = int(syncUp["duration"])
        var text = "\(name(syncUp["title"]))  (\(string(syncUp["id"])))\n"
        let share = attendees.isEmpty ? "" : " (\(DurationText.units(duration / attendees.count)) each)"
        text += "length:     \(DurationText.units(duration))\(share)\n"
        text += "theme:      \(string(syncUp["theme"]))\n"
        text +=
            "attendees:  \(attendees.map { attendee($0["name"]) }.joined(separator: ", "))\n"
        let meetings = syncUp["meetings"]?.arrayValue ?? []
        let total = int(syncUp["meetingsTotal"])
        if meetings.isEmpty {
            text += "meetings:   none yet\n"
        } else {
            text += "meetings:   \(max(total, meetings.count))\n"
            for meeting in meetings {
                let transcript = string(meeting["transcript"])
                text +=
                    "  \(date(meeting["date"]))  \(shortID(string(meeting["id"])))  \(transcript.isEmpty ? "(no transcript)" : transcript.excerpt(60))\n"
            }
            if total > meetings.count { text += "  … \(total - meetings.count) more\n" }
        }
        return text
    }
}

extension Context {
    /// Warns about names a person will mix up (`NameKey`: differing only by case, accents or spaces):
    /// attendees of `syncUp`, and another sync-up with the same title (commands must then name each by id) or
    /// one differing only so (then named by its exact title or id, no longer loosely).
    func warnAboutLookalikes(_ syncUp: JSONValue, on connection: DaemonConnection) throws(CLIError) {
        var groups: [String: [String]] = [:]
        var order: [String] = []
        for attendee in syncUp["attendees"]?.arrayValue ?? [] {
            let name = Format.string(attendee["name"])
            let key = NameKey.of(name)
            guard !key.isEmpty else { continue }
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(name)
        }
        for key in order where groups[key]!.count > 1 {
            let names = groups[key]!.map { "\"\($0.visibleOnOneLine)\"" }
            output.error(
                "warning: the attendees \(names.joined(separator: ", ")) differ only by case, accents or spaces: one person twice?\n"
            )
        }
        let title = NameKey.of(Format.string(syncUp["title"]))
        let others = try Syncupsctl.allSyncUps(self, on: connection).filter {
            $0["id"] != syncUp["id"] && NameKey.of(Format.string($0["title"])) == title
        }
        // A title equal byte for byte can then only be named by id; one that differs in case, accents or
        // spaces still names its own sync-up when written exactly (`syncUpID`), but no longer loosely.
        let exact = Format.string(syncUp["title"])
        let (same, alike) = (
            others.filter { Format.string($0["title"]).utf8.elementsEqual(exact.utf8) },
            others.filter { !Format.string($0["title"]).utf8.elementsEqual(exact.utf8) }
        )
        func ids(_ syncUps: [JSONValue]) -> String {
            syncUps.map { Format.shortID(Format.string($0["id"])) }.joined(separator: ", ")
        }
        if !same.isEmpty {
            output.error(
                "warning: \(ids(same)) \(same.count == 1 ? "has" : "have") the same title; name each by its id (syncupsctl ids lists them)\n"
            )
        }
        if !alike.isEmpty {
            output.error(
                "warning: \(ids(alike)) \(alike.count == 1 ? "has a title that differs" : "have titles that differ") only by case, accents or spaces; write the title exactly, or name each by its id\n"
            )
        }
    }

    /// Asks before deleting a sync-up, naming what goes with it (its meetings, the meeting being recorded): on
    /// a terminal with a y/N question, elsewhere (a script) by refusing without `--yes`. Even one with
    /// nothing else to lose: its title, attendees and settings are gone too, and a slip of the shell (a
    /// history line run twice) must not delete quietly.
    func confirmDeletion(of id: String, on connection: DaemonConnection) throws(CLIError) {
        let syncUp = try call(on: connection, CommandName.syncUpsGet, ["id": .string(id), "meetingsLimit": 1])
        let session = try call(on: connection, CommandName.sessionGet)
        let meetings = Format.int(syncUp["meetingsTotal"])
        var losses: [String] = []
        if meetings > 0 {
            losses.append(meetings == 1 ? "1 meeting and its audio" : "\(meetings) meetings and their audio")
        }
        if session != .null && session["syncup"] == syncUp["id"] { losses.append("the meeting being recorded") }
        let with = losses.isEmpty ? "" : " with \(losses.joined(separator: " and "))"
        try confirm(deleting: "\"\(Format.name(syncUp["title"]))\" (\(Format.string(syncUp["id"])))\(with)", for: "rm")
    }

    /// Asks before deleting `what`: on a terminal with a y/N question (no answer, or any other, is no), elsewhere
    /// by refusing with a usage error that says to pass `--yes`.
    func confirm(deleting what: String, for command: String) throws(CLIError) {
        guard isatty(0) == 1 && isatty(2) == 1 else {
            throw .usage("\(command): this would delete \(what); pass --yes to do it")
        }
        output.error("delete \(what)? [y/N] ")
        guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
            throw CLIError(.failure, "\(command): nothing deleted", code: "cancelled")
        }
    }
}
