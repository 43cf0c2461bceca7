import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol

extension Syncupsctl {
    static let daemonCommands: [Subcommand] = [
        Subcommand(
            name: "status",
            usage: "status",
            summary: "Show the daemon's state: version, data file, counts, the session, persistence errors.",
            spec: ArgumentSpec()
        ) { context, _ throws(CLIError) in
            let status = try context.call(CommandName.status)
            context.show(status) { Format.status(status) }
        },
        Subcommand(
            name: "ping",
            usage: "ping",
            summary: "Check that the daemon answers.",
            spec: ArgumentSpec()
        ) { context, _ throws(CLIError) in
            let result = try context.call(CommandName.ping)
            context.show(result) { "pong\n" }
        },
        Subcommand(
            name: "devices",
            usage: "devices",
            summary: "List the sound server's capture sources (microphones and monitors), the defaults marked.",
            details: """
                The default microphone is marked mic, the default output's monitor (what call-audio auto
                records) call. Name a source as the daemon's call-audio setting to record it instead.
                """,
            spec: ArgumentSpec()
        ) { context, _ throws(CLIError) in
            let devices = try context.call(CommandName.devices)
            context.show(devices) { Format.devices(devices) }
        },
        Subcommand(
            name: "voices",
            usage: "voices [forget ATTENDEE]",
            summary: "Show what the daemon knows of each attendee's voice, or forget one.",
            details: """
                Profiles are learned from each attendee's own floor time, nothing to enrol: the seconds of their
                speech learned and when. forget takes an attendee's id or a unique start of it (the first
                column); the voice is then learned again from the next meeting.
                """,
            spec: ArgumentSpec(positionals: 0...2)
        ) { context, arguments throws(CLIError) in
            switch arguments.positionals.first {
            case nil:
                let voices = try context.call(CommandName.voices)
                context.show(voices) { Format.voices(voices) }
            case "forget" where arguments.positionals.count == 2:
                var request = JSONObject()
                request.append("attendee", .string(arguments.positionals[1]))
                let forgotten = try context.call(CommandName.voicesForget, request)
                context.show(forgotten) { "forgot the voice of \(Format.name(forgotten["name"]))\n" }
            default:
                throw .usage("voices [forget ATTENDEE]")
            }
        },
        Subcommand(
            name: "themes",
            usage: "themes",
            summary: "List the sixteen themes with their colours.",
            spec: ArgumentSpec()
        ) { context, _ throws(CLIError) in
            let themes = try context.call(CommandName.themesList)
            context.show(themes) {
                var table = Table(headers: ["THEME", "MAIN", "ACCENT"])
                for theme in themes.arrayValue ?? [] {
                    table.rows.append([
                        theme["name"]?.stringValue ?? "", theme["main"]?.stringValue ?? "",
                        theme["accent"]?.stringValue ?? "",
                    ])
                }
                return table.text
            }
        },
    ]
}

/// Human renderings of daemon results.
enum Format {
    static func string(_ value: JSONValue?) -> String { value?.stringValue ?? "" }
    static func int(_ value: JSONValue?) -> Int { value?.numberValue?.int64.map(Int.init) ?? 0 }
    /// A title or name for a person to read: on one line, its control characters visible, so that it cannot
    /// fake a line of the output (`visibleOnOneLine`).
    static func name(_ value: JSONValue?) -> String { string(value).visibleOnOneLine }
    /// An attendee's name so: `(no name)` for a blank one (`Attendee.shown`), judged before a line break in it
    /// becomes a visible `⏎`.
    static func attendee(_ value: JSONValue?) -> String { Attendee.shown(string(value)).visibleOnOneLine }

    static func status(_ status: JSONValue) -> String {
        let uptime = Int(status["uptime"]?.numberValue?.double ?? 0)
        var text =
            "syncupsd \(string(status["version"])), up \(DurationText.units(uptime)) (pid \(int(status["pid"])))\n"
        text += "socket:    \(string(status["socket"]))\n"
        text += "data:      \(string(status["dataFile"]))\n"
        text +=
            "sync-ups:  \(int(status["syncups"] ?? status["syncUps"])) (\(counted(int(status["meetings"]), "meeting")))\n"
        text += "clients:   \(int(status["connections"])) (\(int(status["subscribers"])) subscribed)\n"
        let engine = status["speechEngine"]?.stringValue ?? "none"
        if let session = status["session"], session != .null {
            text += "session:   \(Format.sessionLine(session))\n"
            text += "audio:     \(audioState(session))\n"
            if let call = callAudioState(session) { text += "call:      \(call)\n" }
            text += "speech:    \(engine), \(speechState(session))\n"
        } else {
            text += "session:   none\n"
            if let device = status["audioDevice"]?.stringValue { text += "audio:     \(device), idle\n" }
            text += "speech:    \(engine)\(status["speechEngine"]?.stringValue == nil ? "" : ", idle")\n"
        }
        if let voices = status["voices"]?.stringValue { text += "voices:    \(voices)\n" }
        if let next = status["next"], next != .null {
            text +=
                "next:      \(string(next["title"])) \(inTime(int(next["inSeconds"]))) (\(string(next["schedule"])) \(string(next["timeZone"])))\n"
        }
        if let desktop = status["desktop"], desktop != .null {
            text += "desktop:   \(desktopState(desktop))\n"
        }
        if let persistence = status["persistence"] {
            if let error = persistence["lastError"]?.stringValue { text += "ERROR:     \(error)\n" }
            for warning in persistence["warnings"]?.arrayValue ?? [] { text += "warning:   \(string(warning))\n" }
        }
        return text
    }

    /// Each attendee's voice profile as a table, under the model's state.
    static func voices(_ voices: JSONValue) -> String {
        var table = Table(headers: ["ATTENDEE", "NAME", "SYNC-UP", "LEARNED", "UPDATED"])
        for attendee in voices["attendees"]?.arrayValue ?? [] {
            let seconds = attendee["seconds"]?.numberValue?.double ?? 0
            table.rows.append([
                String(string(attendee["id"]).prefix(8)), name(attendee["name"]), name(attendee["syncup"]?["title"]),
                seconds > 0 ? "\((seconds * 10).rounded() / 10) s" : "-",
                string(attendee["updated"]).isEmpty ? "-" : string(attendee["updated"]),
            ])
        }
        var text = "voices: \(string(voices["model"]))\n"
        if let error = voices["writeError"]?.stringValue {
            let unsaved = voices["unsaved"]?.numberValue?.int64 ?? 0
            text += "ERROR:  \(unsaved) profiles not written (\(error)); trying again\n"
        }
        return text + table.text
    }

    /// `MPRIS org.mpris.MediaPlayer2.syncupsd, notifications all`, or why the session bus is off.
    static func desktopState(_ desktop: JSONValue) -> String {
        switch desktop["sessionBus"]?.stringValue {
        case "connected":
            let mpris = desktop["mpris"]?.stringValue.map { "MPRIS \($0)" } ?? "MPRIS name not taken yet"
            return "\(mpris), notifications \(string(desktop["notify"]))"
        case "connecting": return "connecting to the session bus"
        default: return "MPRIS and notifications off: \(string(desktop["reason"]))"
        }
    }

    /// The sound server and its sources as a table, or why there is none.
    static func devices(_ devices: JSONValue) -> String {
        var text = "call audio: \(string(devices["callAudio"]))\n"
        guard let server = devices["server"]?.stringValue else {
            text += "sound server: none (\(string(devices["serverError"])))\n"
            text += "microphone: ALSA \(string(devices["alsaDevice"]))\n"
            return text
        }
        text += "sound server: \(server)\n"
        var table = Table(headers: ["DEFAULT", "SOURCE", "KIND", "DESCRIPTION"])
        for source in devices["sources"]?.arrayValue ?? [] {
            let marks = [
                source["isDefaultMicrophone"] == true ? "mic" : nil, source["isDefaultCall"] == true ? "call" : nil,
            ].compactMap { $0 }
            let kind = source["monitorOf"]?.stringValue.map { "monitor of \($0)" } ?? "microphone"
            table.rows.append([
                marks.isEmpty ? "-" : marks.joined(separator: ","), string(source["name"]), kind,
                oneLine(string(source["description"])),
            ])
        }
        return text + table.text
    }

    /// `recording "Design" 03:12 · Blob Jr 2/6` (or paused, ending).
    static func sessionLine(_ session: JSONValue) -> String {
        let state = string(session["state"])
        let verb = state == "running" ? "recording" : state
        let elapsed = DurationText.clock(int(session["secondsElapsed"]))
        let speaker = attendee(session["speaker"]?["name"])
        let index = int(session["speakerIndex"]) + 1
        let count = int(session["attendeeCount"])
        return
            "\(verb) \"\(name(session["title"]))\" \(elapsed) · \(speaker) \(index)/\(count)"
    }

    static func shortID(_ id: String) -> String { String(id.prefix(8)) }

    /// `1 meeting`, `2 meetings`.
    static func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

    /// The text on one line: tabs and line breaks become spaces (for tab-separated output).
    static func oneLine(_ text: String) -> String {
        String(text.map { $0 == "\t" || $0.isNewline ? " " : $0 })
    }

    /// An RFC 3339 date from the daemon in the local time zone, with its offset: `2026-12-01 15:04 +05:30`.
    static func date(_ value: JSONValue?) -> String {
        guard let text = value?.stringValue, let date = UTCTime.parseRFC3339(text) else { return string(value) }
        return LocalTime.short(date)
    }
}
