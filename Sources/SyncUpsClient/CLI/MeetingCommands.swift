import SyncUpsCore
import SyncUpsJSON

extension Syncupsctl {
    static let meetingCommands: [Subcommand] = [
        Subcommand(
            name: "meeting",
            usage: "meeting SYNCUP MEETING",
            summary: "Show a past meeting and its transcript (ids may be unique prefixes).",
            spec: ArgumentSpec(positionals: 2...2)
        ) { context, arguments throws(CLIError) in
            let meeting = try context.call(
                "meetings.get",
                ["syncup": .string(arguments.positionals[0]), "meeting": .string(arguments.positionals[1])]
            )
            context.show(meeting) { Format.meeting(meeting) }
        },
        Subcommand(
            name: "rm-meeting",
            usage: "rm-meeting SYNCUP MEETING",
            summary: "Delete a past meeting and its audio.",
            spec: ArgumentSpec(positionals: 2...2)
        ) { context, arguments throws(CLIError) in
            let result = try context.call(
                "meetings.delete",
                ["syncup": .string(arguments.positionals[0]), "meeting": .string(arguments.positionals[1])]
            )
            context.show(result) { "deleted meeting \(Format.string(result["meeting"]))\n" }
        },
    ]
}

extension Format {
    static func meeting(_ meeting: JSONValue) -> String {
        var text = "\(string(meeting["syncup"]?["title"])), \(date(meeting["date"])) UTC  (\(string(meeting["id"])))\n"
        if meeting["interrupted"] == .bool(true) { text += "(recovered after the daemon stopped mid-meeting)\n" }
        if let segments = meeting["segments"]?.arrayValue, !segments.isEmpty {
            text += "\n"
            for segment in segments {
                let name = string(segment["speaker"]?["name"])
                text += "\(name.isEmpty ? "(unknown)" : name): \(string(segment["text"]))\n"
            }
        } else {
            let transcript = string(meeting["transcript"])
            text += "\n" + (transcript.isEmpty ? "(no transcript)" : transcript) + "\n"
        }
        return text
    }
}
