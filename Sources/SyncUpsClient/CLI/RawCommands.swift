import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol

extension Syncupsctl {
    static let rawCommands: [Subcommand] = [
        Subcommand(
            name: "call",
            usage: "call COMMAND [JSON-ARGS]",
            summary: "Send any request and print its raw result, e.g. syncupsctl call syncups.get '{\"id\":\"5FD1\"}'.",
            spec: ArgumentSpec(positionals: 1...2)
        ) { context, arguments throws(CLIError) in
            var request = JSONObject()
            if arguments.positionals.count == 2 {
                guard case .object(let object)? = try? JSONParser().parse(arguments.positionals[1]) else {
                    throw .usage("the arguments must be a JSON object, e.g. '{\"id\":\"5FD1\"}'")
                }
                request = object
            }
            let result = try context.call(arguments.positionals[0], request)
            context.print(JSONWriter().string(result) + "\n")
        },
        Subcommand(
            name: "watch",
            usage: "watch [--format FORMAT] [--text T] [--idle-text T] [--offline-text T] [--topic TOPIC]… [--once]",
            summary: "Follow the daemon: every event as a JSON line, or one status line per change for a bar.",
            details: """
                --format events    every event as it comes, one JSON line each (the default); while
                                   the daemon is down, {"event":"watch.offline","data":{"message"}}
                --format json      {"state","text","session"} per change
                --format waybar    {"text","alt","tooltip","class","percentage"}, Pango-escaped
                --format polybar   text with %{B…}%{F…} theme colours
                --format i3blocks  {"full_text","short_text","markup","urgent"}, the theme colours as a
                                   Pango span; reads clicks on stdin (button 1: next speaker,
                                   button 3: pause/resume)
                --format tmux      text with #[fg=…,bg=…] theme colours, # doubled for tmux's #(…)
                --format 'TEXT'    a template (below), printed as it is (a line break in a
                                   name shows as ⏎: one line per change, in every bar format)
                --text TEMPLATE    the text bar formats show during a meeting
                                   (default "\(StatusLine().textTemplate)")
                --idle-text TEXT   what they show with no meeting (default "\(StatusLine().idleText)")
                --offline-text T   what they show while syncupsd is down (default "\(StatusLine().offlineText)")
                --topic TOPIC      with --format events: syncups, session or daemon (repeat; default all);
                                   one the daemon does not know is a usage error (status 64)

                --text, --idle-text and --offline-text need a status format (not events), --text a named
                one (a template is the meeting's text itself), --topic the events format: an option the
                format would ignore is a usage error (status 64).
                --once             print the current line and exit (for tmux's #(…) and polling bars)
                --clicks           read click events on stdin (on by default for i3blocks)
                --no-clicks        do not read stdin, even for i3blocks

                Template placeholders: \(StatusLine.placeholders.map { "{\($0)}" }.joined(separator: " ")).
                {stateSuffix} is empty while the timer runs, " (paused)" or " (ending)" otherwise;
                {callAudioSuffix} is empty unless the call source has carried nothing for 10 s
                (" · call audio: silent"), {callAudio} the same without the separator;
                {{ and }} are literal braces. Format names may be in any case; an unknown name or
                placeholder is a usage error.

                Lines are flushed one by one. While the daemon turns connections away (too_many_connections)
                the status formats show "\(StatusLine().busyText)" (state and class busy) and the events format
                {"event":"watch.busy","data":{"message"}}. When the daemon is down it prints the offline line and
                reconnects, waiting 0.25 s, then twice as long each time up to 5 s. It prints an empty line only
                when you chose an empty text (--idle-text '' hides a bar's module while no meeting runs).
                """,
            spec: ArgumentSpec(
                valueOptions: ["format", "topic", "text", "idle-text", "offline-text"],
                flagOptions: ["once", "clicks", "no-clicks"])
        ) { context, arguments throws(CLIError) in
            if arguments.has("clicks") && arguments.has("no-clicks") {
                throw .usage("watch: choose --clicks or --no-clicks")
            }
            let format = try Watch.checkedFormat(arguments.value("format") ?? "events")
            if let text = arguments.value("text") { try Watch.checkTemplate(text, option: "--text") }
            try Watch.checkOptionsFit(format: format, arguments)
            if arguments.has("once") && format == "events" {
                throw .usage("watch: --once prints one status line; choose a --format other than events")
            }
            var watch = Watch(context: context, format: format, topics: arguments.all("topic"))
            if let text = arguments.value("text") { watch.line.textTemplate = text }
            if let idle = arguments.value("idle-text") { watch.line.idleText = idle }
            if let offline = arguments.value("offline-text") { watch.line.offlineText = offline }
            watch.readsClicks = !arguments.has("no-clicks") && (arguments.has("clicks") || watch.format == "i3blocks")
            if arguments.has("once") { try watch.printOnce() } else { try watch.run() }
        },
    ]
}
