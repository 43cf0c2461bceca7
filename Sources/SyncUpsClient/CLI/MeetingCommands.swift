import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol

extension Syncupsctl {
    static let meetingCommands: [Subcommand] = [
        Subcommand(
            name: "meeting",
            usage: "meeting SYNCUP [MEETING]",
            summary:
                "Show a past meeting and its transcript. SYNCUP: an id, id prefix, title or title prefix; MEETING: an id, id prefix, latest (the default) or latest~N.",
            spec: ArgumentSpec(positionals: 1...2)
        ) { context, arguments throws(CLIError) in
            let meeting = try context.wholeMeeting(
                syncUp: arguments.positionals[0], meeting: arguments.positionals.dropFirst().first ?? "latest")
            context.show(meeting) { Format.meeting(meeting) }
        },
        Subcommand(
            name: "rm-meeting",
            usage: "rm-meeting SYNCUP MEETING [--yes]",
            summary: "Delete a past meeting and its audio.",
            details: """
                SYNCUP: an id, an id prefix (4+ characters) or the whole title (never a title prefix);
                MEETING: an id, an id prefix, latest or latest~N.
                --yes   do not ask: needed when not on a terminal (on a terminal, rm-meeting asks, as rm does)
                """,
            spec: ArgumentSpec(flagOptions: ["yes"], positionals: 2...2)
        ) { context, arguments throws(CLIError) in
            let connection = try context.connect()
            // What a deletion names must be meant: an id, an id prefix or a whole title, never a title's start.
            let ids = try context.meetingIDs(
                arguments.positionals[0], arguments.positionals[1], on: connection, titlePrefixes: false)
            if !arguments.has("yes") {
                let meeting = try context.call(
                    on: connection, CommandName.meetingsGet,
                    ["syncup": .string(ids.syncUp), "meeting": .string(ids.meeting), "segmentsLimit": 1])
                try context.confirm(
                    deleting:
                        "the meeting of \"\(Format.name(meeting["syncup"]?["title"]))\" on \(Format.date(meeting["date"])) (\(Format.string(meeting["id"]))) and its audio",
                    for: "rm-meeting")
            }
            let result = try context.call(
                on: connection, CommandName.meetingsDelete,
                ["syncup": .string(ids.syncUp), "meeting": .string(ids.meeting)])
            context.show(result) { "deleted meeting \(Format.string(result["meeting"]))\n" }
        },
    ]
}

extension Context {
    /// `meetings.get`, with every page of its segments and its transcript fetched and put together: the
    /// object then holds the whole meeting, however long (`transcriptOffset` 0, `segmentsNext` null).
    func wholeMeeting(syncUp: String, meeting: String) throws(CLIError) -> JSONValue {
        let connection = try connect()
        let named = try meetingIDs(syncUp, meeting, on: connection)
        let ids: JSONObject = ["syncup": .string(named.syncUp), "meeting": .string(named.meeting)]
        guard case .object(var object) = try call(on: connection, CommandName.meetingsGet, ids) else { return .null }
        // The ids as the daemon resolved them: the prefixes given could match another meeting by now.
        let exact: JSONObject = ["syncup": object["syncup"]?["id"] ?? .null, "meeting": object["id"] ?? .null]
        var segments = object["segments"]?.arrayValue ?? []
        while let next = object["segmentsNext"]?.numberValue?.int64 {
            var page = exact
            page.append("segmentsOffset", .int(Int(next)))
            let more = try call(on: connection, CommandName.meetingsGet, page)
            segments += more["segments"]?.arrayValue ?? []
            object["segmentsNext"] = more["segmentsNext"] ?? .null
        }
        object["segments"] = .array(segments)
        var transcript = object["transcript"]?.stringValue ?? ""
        let total = Int(object["transcriptBytes"]?.numberValue?.int64 ?? 0)
        while transcript.utf8.count < total {
            var page = exact
            page.append("offset", .int(transcript.utf8.count))
            let more = try call(on: connection, CommandName.transcriptGet, page)
            guard let text = more["text"]?.stringValue, !text.isEmpty else { break }
            transcript += text
        }
        object["transcript"] = .string(transcript)
        return .object(object)
    }
}

extension Format {
    static func meeting(_ meeting: JSONValue) -> String {
        var text = "\(name(meeting["syncup"]?["title"])), \(date(meeting["date"]))  (\(string(meeting["id"])))\n"
        if meeting["interrupted"] == .bool(true) { text += "(recovered after the daemon stopped mid-meeting)\n" }
        text += insights(meeting)
        if let segments = meeting["segments"]?.arrayValue, !segments.isEmpty {
            text += "\n"
            for segment in segments {
                let speaker = segment["speaker"]?["name"].map { attendee($0) } ?? "(unknown)"
                text += "\(speaker): \(name(segment["text"]))\n"
            }
        } else {
            let transcript = string(meeting["transcript"])
            text += "\n" + (transcript.isEmpty ? "(no transcript)" : transcript) + "\n"
        }
        return text
    }
}
