import SyncUpsCore
import SyncUpsJSON

/// What a status bar shows about the meeting: rendered from the session object (or its absence) in the
/// formats `syncupsctl watch --format` offers. Pure: a value in, a line out.
public struct StatusLine: Sendable, Equatable {
    /// The output formats.
    public enum Format: Sendable, Equatable {
        case json
        case waybar
        case polybar
        case i3blocks
        case tmux
        /// A template such as `"{speaker} {remaining}"` (see `StatusLine.placeholders`).
        case template(String)

        public init(_ name: String) {
            switch name {
            case "json": self = .json
            case "waybar": self = .waybar
            case "polybar": self = .polybar
            case "i3blocks": self = .i3blocks
            case "tmux": self = .tmux
            default: self = .template(name)
            }
        }
    }

    /// Where the daemon is: no meeting, a meeting, not reachable, or running but turning connections away
    /// (`too_many_connections`, with its message).
    public enum Situation: Sendable, Equatable {
        case idle
        case meeting(JSONValue)
        case offline
        case busy(String)
    }

    /// The text for bars that show one: `Blob Jr 2/6 · 11:48` by default, `Blob Jr 2/6 · 11:48 (paused)` paused,
    /// `Blob Jr 2/6 · 11:48 · call audio: silent` while the call source has carried nothing for 10 s.
    public static let defaultTextTemplate =
        "{speaker} {speakerNumber}/{speakerCount} · {remaining}{stateSuffix}{callAudioSuffix}"
    public var textTemplate = defaultTextTemplate
    public var idleText = "no meeting"
    public var offlineText = "syncupsd offline"
    public var busyText = "syncupsd busy"
    /// The next scheduled stand-up (`schedule.list`'s first), for the idle line.
    public var upcoming: Upcoming?

    /// A scheduled start: the sync-up's title and when (UTC seconds).
    public struct Upcoming: Sendable, Equatable {
        public var title: String
        public var start: Int64

        public init(title: String, start: Int64) {
            self.title = title
            self.start = start
        }
    }

    /// How long before a scheduled start the idle line counts down to it instead of `idleText`.
    public static let countdownSeconds: Int64 = 3600

    public init() {}

    /// `Design in 4 min` within the hour before the next scheduled start (at `now`, UTC seconds), else nil.
    public func countdown(now: Int64) -> String? {
        guard let upcoming, upcoming.start > now, upcoming.start - now <= Self.countdownSeconds else { return nil }
        return "\(upcoming.title) in \((upcoming.start - now + 59) / 60) min"
    }

    /// Every placeholder a template may use.
    public static let placeholders = [
        "title", "speaker", "speakerNumber", "speakerCount", "elapsed", "remaining", "turnRemaining", "duration",
        "progress",
        "state", "stateSuffix", "theme", "main", "accent", "transcript", "callAudio",
        "callAudioSuffix", "speaking", "speakingSuffix",
    ]

    /// The values of the placeholders for a session object, each on one line (`visibleOnOneLine`): a name
    /// holding a line break must not make a bar print two lines for one change.
    public static func values(_ session: JSONValue) -> [String: String] {
        rawValues(session).mapValues(\.visibleOnOneLine)
    }

    private static func rawValues(_ session: JSONValue) -> [String: String] {
        func int(_ key: String) -> Int { session[key]?.numberValue?.int64.map(Int.init) ?? 0 }
        let speaker = session["speaker"]?["name"]?.stringValue ?? ""
        let state = session["state"]?.stringValue ?? ""
        let isCallSilent = session["callAudio"]?["silent"] == true
        let speaking = session["speaking"]?["name"]?.stringValue ?? ""
        return [
            "title": session["title"]?.stringValue ?? "",
            "speaker": Attendee.shown(speaker),
            "speakerNumber": String(int("speakerIndex") + 1),
            "speakerCount": String(int("attendeeCount")),
            "elapsed": DurationText.clock(int("secondsElapsed")),
            "remaining": DurationText.clock(int("durationRemaining")),
            "turnRemaining": DurationText.clock(turnRemaining(session)),
            "duration": DurationText.clock(int("duration")),
            "progress": String(progress(session)),
            "state": state,
            "stateSuffix": state.isEmpty || state == "running" ? "" : " (\(state))",
            "theme": session["theme"]?["name"]?.stringValue ?? "",
            "main": session["theme"]?["main"]?.stringValue ?? "",
            "accent": session["theme"]?["accent"]?.stringValue ?? "",
            "transcript": session["transcript"]?.stringValue ?? "",
            // Empty unless the call source has carried nothing for 10 s: the usual sign of a wrong device.
            "callAudio": isCallSilent ? "call audio: silent" : "",
            "callAudioSuffix": isCallSilent ? " · call audio: silent" : "",
            // Who is heard by voice now (empty: no confident voice); the suffix only when it is not the floor's.
            "speaking": speaking,
            "speakingSuffix": speakingInTurn(session).map { " · \($0)" } ?? "",
        ]
    }

    /// "Cat speaking in Ben's turn" while a confident voice other than the floor holder's is heard (the
    /// session object's `speaking`), else nil: for the bars and `syncupsctl session`.
    public static func speakingInTurn(_ session: JSONValue) -> String? {
        guard let speaking = session["speaking"]?["name"]?.stringValue, !speaking.isEmpty,
            session["speaking"]?["id"] != session["speaker"]?["id"]
        else { return nil }
        let speaker = session["speaker"]?["name"]?.stringValue ?? ""
        return "\(speaking) speaking in \(Attendee.shown(speaker))'s turn"
    }

    /// The seconds left of the current speaker's slot, as the daemon's timer passes the floor: each slot is
    /// `secondsPerAttendee`, the last one runs to the end of the meeting.
    public static func turnRemaining(_ session: JSONValue) -> Int {
        func int(_ key: String) -> Int { session[key]?.numberValue?.int64.map(Int.init) ?? 0 }
        let index = int("speakerIndex")
        let isLast = index + 1 >= int("attendeeCount")
        let slotEnd = isLast ? int("duration") : (index + 1) * int("secondsPerAttendee")
        return max(0, slotEnd - int("secondsElapsed"))
    }

    /// Meeting progress in percent, as the app's progress bar: elapsed / (elapsed + remaining).
    public static func progress(_ session: JSONValue) -> Int {
        let elapsed = session["secondsElapsed"]?.numberValue?.double ?? 0
        let remaining = session["durationRemaining"]?.numberValue?.double ?? 0
        let total = elapsed + remaining
        return total > 0 ? Int((elapsed / total * 100).rounded()) : 0
    }

    /// Fills `{name}` placeholders; `{{` and `}}` are literal braces; unknown names are left as written.
    public static func fill(_ template: String, _ values: [String: String]) -> String {
        scan(template) { values[$0] ?? "{\($0)}" }
    }

    /// The `{name}`s of a template that are not placeholders, in order.
    public static func unknownPlaceholders(in template: String) -> [String] {
        var unknown: [String] = []
        _ = scan(template) { name in
            if !placeholders.contains(name) { unknown.append(name) }
            return ""
        }
        return unknown
    }

    /// The template with each `{name}` replaced by `replacement(name)` and `{{`, `}}` by single braces.
    private static func scan(_ template: String, _ replacement: (String) -> String) -> String {
        var output = ""
        var index = template.startIndex
        while index < template.endIndex {
            let character = template[index]
            let next = template.index(after: index)
            if character == "{", next < template.endIndex, template[next] == "{" {
                output.append("{")
                index = template.index(after: next)
            } else if character == "}", next < template.endIndex, template[next] == "}" {
                output.append("}")
                index = template.index(after: next)
            } else if character == "{", let close = template[next...].firstIndex(of: "}") {
                output += replacement(String(template[next..<close]))
                index = template.index(after: close)
            } else {
                output.append(character)
                index = next
            }
        }
        return output
    }

    /// The line for `situation`, without the newline. Empty only when the user chose an empty text: bars hide
    /// a module on an empty line, which `--idle-text ''` uses on purpose and an outage must never cause.
    public func render(_ situation: Situation, format: Format, now: Int64? = nil) -> String {
        let state: String
        var values: [String: String] = [:]
        let text: String
        switch situation {
        case .idle:
            state = "idle"
            text = (now.flatMap(countdown(now:)) ?? idleText).visibleOnOneLine
        case .offline:
            state = "offline"
            text = offlineText.visibleOnOneLine
        case .busy:
            state = "busy"
            text = busyText.visibleOnOneLine
        case .meeting(let session):
            values = Self.values(session)
            state = values["state"] ?? "running"
            text = Self.fill(textTemplate, values)
        }
        switch format {
        case .json:
            return JSONWriter().string([
                "state": .string(state), "text": .string(text), "session": situationJSON(situation),
            ])
        case .template(let template):
            if case .meeting = situation { return Self.fill(template, values) }
            return text
        case .waybar:
            var object = JSONObject()
            object.append("text", .string(Self.pangoEscaped(text)))
            object.append("alt", .string(state))
            object.append("tooltip", .string(Self.pangoEscaped(tooltip(situation, values))))
            object.append("class", .string(state))
            object.append("percentage", .int(Int(values["progress"] ?? "0") ?? 0))
            return JSONWriter().string(.object(object))
        case .i3blocks:
            // The theme colours as a Pango span, not as `background` and `color`: i3blocks 1.4 (Debian 12) drops
            // `background`, which left the accent (often black) on the bar's own black; every version passes
            // `markup` on to i3bar. 1.4's JSON reader also ends a string at any \" and copies escapes as they
            // are, so the text has neither: Pango's entities stand for quotes and backslashes.
            func markup(_ text: String) -> String {
                let escaped = Self.pangoEscaped(text).replacing("\\", with: "&#92;")
                guard let main = values["main"], !main.isEmpty else { return escaped }
                return "<span background='\(main)' foreground='\(values["accent"] ?? "#000000")'> \(escaped) </span>"
            }
            var object = JSONObject()
            object.append("full_text", .string(markup(text)))
            object.append("short_text", .string(markup(values["remaining"] ?? text)))
            object.append("markup", "pango")
            object.append("urgent", .bool(state == "ending"))
            return JSONWriter().string(.object(object))
        case .polybar:
            // Polybar has no escape for its %{…} tags; a name holding "%{" gets a space so it stays text.
            let escaped = text.replacing("%{", with: "% {")
            guard let main = values["main"], !main.isEmpty else { return escaped }
            return "%{B\(main)}%{F\(values["accent"] ?? "#000000")} \(escaped) %{F-}%{B-}"
        case .tmux:
            // tmux expands a #(…) command's output as a format again: every # must be doubled, the ones
            // in colours too (a single "#FF8B42" inside #[…] makes tmux drop the whole style).
            let escaped = text.replacing("#", with: "##")
            guard let main = values["main"], !main.isEmpty else { return escaped }
            let accent = values["accent"] ?? "#000000"
            return "#[fg=#\(accent),bg=#\(main)] \(escaped) #[default]"
        }
    }

    private func situationJSON(_ situation: Situation) -> JSONValue {
        if case .meeting(let session) = situation { return session }
        return .null
    }

    private func tooltip(_ situation: Situation, _ values: [String: String]) -> String {
        switch situation {
        case .idle: return "No meeting is being recorded"
        case .offline: return "syncupsd is not running"
        case .busy(let message): return "syncupsd refused the connection: \(message.visibleOnOneLine)"
        case .meeting:
            let verb = values["state"] == "running" ? "is speaking" : "has the floor (\(values["state"] ?? ""))"
            return Self.fill(
                "{title}\r{speaker} \(verb), {speakerNumber} of {speakerCount}\r{elapsed} elapsed, {remaining} left",
                values
            )
        }
    }

    /// Waybar renders text as Pango markup: `&`, `<` and `>` in a name must not break the bar.
    public static func pangoEscaped(_ text: String) -> String {
        var output = ""
        for character in text {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            default: output.append(character)
            }
        }
        return output
    }
}
