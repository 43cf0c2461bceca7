import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// `syncupsctl watch`: follows the daemon for as long as it runs, printing events or status lines, and
/// reconnecting with back-off when the daemon goes away.
///
/// It ends as soon as nobody reads it any more, so a bar's watcher never outlives the bar: when standard
/// output is closed (a failed write, or POLLERR/POLLHUP on it while idle or while the daemon is down) and,
/// when standard output is a pipe or a socket (a reader following it live, as bars do), when the process that
/// started it exits: bars signal only the `sh -c` that runs the command (see `ParentWatch`). Written to a
/// file or a terminal, it does not follow its parent, so `nohup syncupsctl watch >> log &` outlives the shell.
struct Watch {
    var context: Context
    var format: String
    var topics: [String]
    var line = StatusLine()
    var readsClicks = false

    /// The first wait after losing the daemon, doubled each time up to `maximumBackoff`.
    static let initialBackoff = Duration.milliseconds(250)
    static let maximumBackoff = Duration.seconds(5)

    init(context: Context, format: String, topics: [String]) {
        self.context = context
        self.format = format
        self.topics = topics
    }

    /// The bar formats by name (besides `events`); anything else with a `{` is a template.
    static let formatNames = ["events", "json", "waybar", "polybar", "i3blocks", "tmux"]

    /// A `--format` as given: a name in any case (returned in lower case), or a template whose placeholders
    /// all exist. A word that is neither (`waybat`) is a usage error listing what is valid.
    static func checkedFormat(_ given: String) throws(CLIError) -> String {
        if formatNames.contains(given.lowercased()) { return given.lowercased() }
        guard given.contains("{") else {
            throw .usage(
                "unknown --format \"\(given)\"; use \(formatNames.joined(separator: ", ")), or a template with placeholders: \(placeholderList)"
            )
        }
        try checkTemplate(given, option: "--format")
        return given
    }

    /// Options the format would ignore are usage errors, as `--once` with events is: `--text` and the idle
    /// and offline texts are for status lines (`--text` for a named format: a template is its own meeting
    /// text), `--topic` for the events format (the status formats follow the session).
    static func checkOptionsFit(format: String, _ arguments: ParsedArguments) throws(CLIError) {
        if format == "events" {
            for option in ["text", "idle-text", "offline-text"] where arguments.value(option) != nil {
                throw .usage(
                    "watch: --\(option) is for status lines, which --format events does not print; choose a --format such as waybar or a template"
                )
            }
        } else {
            if !arguments.all("topic").isEmpty {
                throw .usage(
                    "watch: --topic chooses events for --format events; --format \(format) follows the session only")
            }
            if arguments.value("text") != nil && !formatNames.contains(format) {
                throw .usage(
                    "watch: --text and a --format template both say the meeting's text; put the template in one of them"
                )
            }
        }
    }

    /// A template's placeholders all exist, or a usage error lists the valid ones.
    static func checkTemplate(_ template: String, option: String) throws(CLIError) {
        let unknown = StatusLine.unknownPlaceholders(in: template)
        guard unknown.isEmpty else {
            throw .usage(
                "unknown placeholder\(unknown.count == 1 ? "" : "s") \(unknown.map { "{\($0)}" }.joined(separator: " ")) in \(option); valid: \(placeholderList) ({{ and }} are literal braces)"
            )
        }
    }

    static var placeholderList: String { StatusLine.placeholders.map { "{\($0)}" }.joined(separator: " ") }

    private var isEventStream: Bool { format == "events" }
    private var statusFormat: StatusLine.Format { StatusLine.Format(format) }

    /// Prints the current status line once.
    func printOnce() throws(CLIError) {
        do {
            let connection = try context.connect()
            let session = try context.call(on: connection, CommandName.sessionGet)
            var bar = line
            if session == .null { bar.upcoming = fetchUpcoming() }
            context.print(
                bar.render(session == .null ? .idle : .meeting(session), format: statusFormat, now: Self.wallSeconds())
                    + "\n")
        } catch let error where error.exitCode == .unavailable {
            context.print(line.render(.offline, format: statusFormat) + "\n")
        } catch let error where error.exitCode == .temporaryFailure {
            context.print(line.render(.busy(error.detail), format: statusFormat) + "\n")
        }
    }

    /// Runs until standard output or the parent goes away. A subscription the daemon refuses (`--topic
    /// sesion`) is a usage error at once: waiting for a daemon that is up would make a typo look like an outage.
    func run() throws(CLIError) {
        let parent = Self.isOutputFollowedLive ? ParentWatch.start() : nil
        var backoff = Backoff(initial: Self.initialBackoff, maximum: Self.maximumBackoff)
        var lastLine: String?
        while parent?.isParentGone != true {
            let ending = follow(lastLine: &lastLine, parent: parent, onConnected: { backoff.reset() })
            switch ending {
            case .outputClosed: return
            case .refused(let error): throw CLIError(.usage, error.message, code: error.code)
            case .disconnected(let reason), .turnedAway(let reason):
                let isBusy: Bool
                if case .turnedAway = ending { isBusy = true } else { isBusy = false }
                if isEventStream {
                    // Said once per outage (and again when it turns from busy to down), as the bar formats do.
                    let name = isBusy ? "watch.busy" : "watch.offline"
                    if lastLine != name {
                        let event: JSONValue = ["event": .string(name), "data": ["message": .string(reason)]]
                        guard context.output.out(JSONWriter().string(event) + "\n") else { return }
                        lastLine = name
                    }
                } else {
                    let offline = line.render(isBusy ? .busy(reason) : .offline, format: statusFormat)
                    if offline != lastLine {
                        guard context.output.out(offline + "\n") else { return }
                        lastLine = offline
                    }
                }
                guard waitForReconnect(backoff.next()) else { return }
            }
        }
    }

    private enum Ending {
        case outputClosed
        /// The daemon refused the subscription: retrying cannot help.
        case refused(CLIError)
        /// The daemon is not reachable, or went away; why.
        case disconnected(String)
        /// The daemon runs but turned the connection away (`too_many_connections`); its message.
        case turnedAway(String)
    }

    /// One connection's worth of following.
    private func follow(lastLine: inout String?, parent: ParentWatch?, onConnected: () -> Void) -> Ending {
        let connection: DaemonConnection
        do {
            connection = try context.connect()
        } catch {
            return error.exitCode == .temporaryFailure ? .turnedAway(error.detail) : .disconnected(error.message)
        }
        connection.timeout = .seconds(10)
        var arguments = JSONObject()
        if isEventStream {
            if !topics.isEmpty { arguments.append("topics", .array(topics.map(JSONValue.string))) }
            arguments.append("snapshot", false)
        } else {
            arguments.append("topics", ["session"])
        }
        let subscribed: JSONValue
        do {
            subscribed = try connection.call(CommandName.subscribe, arguments)
        } catch .rejected(let error) {
            return .refused(Context.cliError(.rejected(error)))
        } catch {
            return .disconnected(error.description)
        }
        onConnected()
        if isEventStream { lastLine = nil }
        connection.timeout = nil
        var situation = StatusLine.Situation.idle
        if let session = subscribed["snapshot"]?["session"], session != .null { situation = .meeting(session) }

        var bar = line
        if !isEventStream { bar.upcoming = fetchUpcoming() }
        func emitStatus() -> Bool {
            let rendered = bar.render(situation, format: statusFormat, now: Self.wallSeconds())
            guard rendered != lastLine else { return true }
            lastLine = rendered
            return context.output.out(rendered + "\n")
        }
        if !isEventStream && !emitStatus() { return .outputClosed }

        var clicks = readsClicks ? LineReader(fd: .standardInput) : nil
        while true {
            // Wait for the daemon, for a click on stdin, or for the reader of stdout to go away (no events
            // asked for it: POLLERR and POLLHUP are always reported).
            var pollers = [
                pollfd(fd: connection.descriptor.rawValue, events: Int16(POLLIN), revents: 0),
                pollfd(fd: FileDescriptor.standardOutput.rawValue, events: 0, revents: 0),
            ]
            if clicks != nil { pollers.append(pollfd(fd: 0, events: Int16(POLLIN), revents: 0)) }
            if connection.pendingEvents.isEmpty && !connection.hasBufferedLine {
                let timeout = isEventStream ? -1 : Self.countdownTimeout(bar.upcoming)
                let ready = retryingInterrupts({ poll(&pollers, nfds_t(pollers.count), timeout) })
                if ready < 0 { return .disconnected("poll failed: \(Errno.current)") }
                if ready == 0 {
                    // The idle line's countdown moved on a minute (or its hour began): the schedules again.
                    bar.upcoming = fetchUpcoming()
                    if !emitStatus() { return .outputClosed }
                    continue
                }
            }
            if Self.isClosed(pollers[1]) || parent?.isParentGone == true { return .outputClosed }
            if pollers.count > 2 && pollers[2].revents != 0 {
                switch Result(catching: { try clicks?.nextLine(timeout: .zero) }) {
                case .success(let click?):
                    handleClick(click)
                    // Clicks that came in the same read: now, not when the next click wakes the poll.
                    while clicks?.hasBufferedLine == true, let click = try? clicks?.nextLine(timeout: .zero) {
                        handleClick(click)
                    }
                case .failure(LineReader.Failure.timedOut), .success(nil): break  // half a line so far
                case .failure: clicks = nil  // closed or failing: stop polling it, or poll returns at once forever
                }
            }
            guard connection.pendingEvents.count > 0 || connection.hasBufferedLine || pollers[0].revents != 0 else {
                continue
            }
            let event: (name: String, seq: Int?, data: JSONValue)
            do {
                event = try connection.nextEvent(timeout: .seconds(10))
            } catch {
                return .disconnected(error.description)
            }
            if isEventStream {
                var object = JSONObject()
                object.append("event", .string(event.name))
                if let seq = event.seq { object.append("seq", .int(seq)) }
                object.append("data", event.data)
                guard context.output.out(JSONWriter().string(.object(object)) + "\n") else { return .outputClosed }
                continue
            }
            if event.name == EventName.sessionEnded {
                situation = .idle
            } else if event.name.hasPrefix(EventName.sessionPrefix), let session = event.data["session"] {
                situation = .meeting(session)
            }
            if !emitStatus() { return .outputClosed }
        }
    }

    /// The next scheduled start for the idle line's countdown (`schedule.list`; none from a daemon without it).
    private func fetchUpcoming() -> StatusLine.Upcoming? {
        guard let list = try? context.call(CommandName.scheduleList), let first = list[0],
            let seconds = first["inSeconds"]?.numberValue?.int64, let title = first["title"]?.stringValue
        else { return nil }
        return StatusLine.Upcoming(title: title, start: Self.wallSeconds() + seconds)
    }

    /// How long the poll may wait before the idle countdown changes (milliseconds), or -1 with none ahead;
    /// at most half an hour, so that a schedule set meanwhile shows.
    static func countdownTimeout(_ upcoming: StatusLine.Upcoming?) -> CInt {
        guard let upcoming else { return -1 }
        let now = Self.wallSeconds()
        let untilStart = upcoming.start - now
        let wait: Int64
        if untilStart > StatusLine.countdownSeconds {
            wait = min(untilStart - StatusLine.countdownSeconds, 1800)
        } else if untilStart > 0 {
            wait = (untilStart - 1) % 60 + 1  // to the next whole minute of the countdown
        } else {
            wait = 1800
        }
        return CInt(wait * 1000)
    }

    static func wallSeconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec)
    }

    /// i3blocks sends `{"button": N, …}` per click (or just the number): 1 passes the floor, 3 pauses or resumes.
    private func handleClick(_ line: ArraySlice<UInt8>) {
        let button: Int?
        if let value = try? JSONParser().parse(line), case .object = value {
            button = value["button"]?.numberValue?.int64.map(Int.init)
        } else {
            button = Int(String(decoding: line, as: UTF8.self).trimmingWhitespace())
        }
        switch button {
        case 1: _ = try? context.call(CommandName.sessionNext)
        case 3: _ = try? context.toggleSession(on: context.connect())
        default: break
        }
    }

    /// Waits `delay` before the next attempt; false if standard output was closed meanwhile, so that a
    /// watcher whose reader is gone stops retrying a daemon that is down.
    private func waitForReconnect(_ delay: Duration) -> Bool {
        let deadline = MonotonicInstant.now() + delay
        while true {
            let remaining = deadline - MonotonicInstant.now()
            guard remaining > .zero else { return true }
            var output = pollfd(fd: FileDescriptor.standardOutput.rawValue, events: 0, revents: 0)
            let milliseconds =
                remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
            if poll(&output, 1, CInt(max(1, milliseconds))) > 0 && Self.isClosed(output) { return false }
        }
    }

    /// Standard output is a pipe or a socket: someone reads it as it comes.
    private static var isOutputFollowedLive: Bool {
        var info = stat()
        guard fstat(FileDescriptor.standardOutput.rawValue, &info) == 0 else { return false }
        return info.st_mode & S_IFMT == S_IFIFO || info.st_mode & S_IFMT == S_IFSOCK
    }

    /// POLLERR on a pipe's write end: the read end is closed; POLLHUP: a terminal hung up, a socket shut down;
    /// POLLNVAL: there is no standard output at all.
    private static func isClosed(_ output: pollfd) -> Bool {
        output.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
    }
}
