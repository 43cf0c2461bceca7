import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// The syncupsctl command line: parses arguments, talks to the daemon, prints for people or (`--json`) for
/// programs, and returns a sysexits status. `main.swift` only calls `run`.
public struct Syncupsctl {
    public var environment: [String: String]
    public var output: Output

    public init(environment: [String: String], output: Output = .standard) {
        self.environment = environment
        self.output = output
    }

    /// Global options, accepted before or after the subcommand.
    struct Globals {
        var socket: String?
        var json = false
        var timeout: Duration? = .seconds(10)
    }

    public func run(_ arguments: [String]) -> ExitCode {
        do {
            return try runThrowing(arguments)
        } catch {
            output.error("syncupsctl: \(error.message)\n")
            // A program reading --json gets one document on stdout whatever happened (`--json` counts
            // wherever it is, as runThrowing reads it).
            if arguments.contains("--json") { _ = output.out(JSONWriter().string(error.document) + "\n") }
            if error.suggestsStartingDaemon {
                let namesSocket = arguments.contains { $0 == "--socket" || $0.hasPrefix("--socket=") }
                let searched = namesSocket ? "" : " (looked for: \(searchedSockets.joined(separator: ", ")))"
                output.error(
                    "hint: start the daemon with `syncupsd` (or `systemctl --user start syncupsd.socket`), or point SYNCUPSD_SOCKET at its socket\(searched)\n"
                )
            }
            return error.exitCode
        }
    }

    /// The sockets a connection tries, for the hint when none answers.
    private var searchedSockets: [String] {
        if let socket = environment["SYNCUPSD_SOCKET"], !socket.isEmpty { return [socket] }
        let located = RuntimeDirectory.locate(environment: environment).socketPath
        return [located] + [SocketLocation.fallback(explicit: nil, environment: environment)].compactMap { $0 }
    }

    private func runThrowing(_ given: [String]) throws(CLIError) -> ExitCode {
        // `--socket=PATH` and `--timeout=N` too, as every command's own options and the completions write them.
        let arguments = given.flatMap { argument -> [String] in
            guard let equals = argument.firstIndex(of: "="), ["--socket", "--timeout"].contains(argument[..<equals])
            else { return [argument] }
            return [String(argument[..<equals]), String(argument[argument.index(after: equals)...])]
        }
        var globals = Globals()
        var rest: [String] = []
        var versionAsked = false
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch argument {
            case "--json": globals.json = true
            case "--socket":
                guard index < arguments.count else { throw .usage("--socket needs a path") }
                globals.socket = arguments[index]
                index += 1
            case "--timeout":
                // At most a day: poll(2) takes milliseconds in a C int, which 2147484 s overflows.
                guard index < arguments.count, let seconds = Double(arguments[index]), seconds >= 0,
                    seconds <= Self.maximumTimeout
                else {
                    throw .usage(
                        "--timeout needs a number of seconds up to \(Int(Self.maximumTimeout)) (a day); 0 waits as long as it takes"
                    )
                }
                globals.timeout = seconds == 0 ? nil : .milliseconds(Int64(seconds * 1000))
                index += 1
            case "-V" where rest.isEmpty, "--version" where rest.isEmpty:
                versionAsked = true
            default:
                rest.append(argument)
            }
        }
        if versionAsked {
            let version = SyncUpsVersion.current
            _ = output.out(
                globals.json ? JSONWriter().string(["version": .string(version)]) + "\n" : "syncupsctl \(version)\n")
            return .success
        }
        guard let name = rest.first else {
            // As mpc does: what is going on (`help` lists the commands).
            try Self.showCurrent(Context(globals: globals, environment: environment, output: output))
            return .success
        }
        if name == "help" || name == "-h" || name == "--help" {
            if let topic = rest.dropFirst().first {
                guard let command = Self.command(topic) else { throw Self.unknownCommand(topic) }
                printHelp(command.helpText, json: globals.json)
            } else {
                printHelp(Self.overview, json: globals.json)
            }
            return .success
        }
        guard let command = Self.command(name) else { throw Self.unknownCommand(name) }
        let commandArguments = Array(rest.dropFirst())
        if commandArguments.contains("--help") || commandArguments.contains("-h") {
            printHelp(command.helpText, json: globals.json)
            return .success
        }
        let parsed = try command.spec.parse(commandArguments, command: command.name, usage: command.usage)
        let context = Context(globals: globals, environment: environment, output: output)
        try command.run(context, parsed)
        return .success
    }

    /// `syncupsctl` alone: the meeting being recorded, else the sync-ups.
    static func showCurrent(_ context: Context) throws(CLIError) {
        let connection = try context.connect()
        let session = try context.call(on: connection, CommandName.sessionGet)
        if session != .null {
            context.show(session) { Format.session(session) }
        } else {
            let all = try allSyncUps(context, on: connection)
            context.show(.array(all)) { Format.list(all) }
        }
    }

    /// Help as text, or with `--json` as `{"help": text}`.
    private func printHelp(_ text: String, json: Bool) {
        _ = output.out(json ? JSONWriter().string(["help": .string(text)]) + "\n" : text)
    }

    /// The longest `--timeout`, in seconds; `0` is the way to wait without end.
    static let maximumTimeout: Double = 86400

    /// The options every command takes (`Globals`), as the command line writes them.
    static let globalOptions = ["--socket", "--json", "--timeout", "--version", "--help"]

    /// `strat` (did you mean "start"?), or `--jsno` before any command: an unknown option, not a command.
    static func unknownCommand(_ name: String) -> CLIError {
        if name.hasPrefix("-") {
            return .usage(
                "unknown option \(name)\(Suggestion.phrase(for: name, among: globalOptions)); run syncupsctl help")
        }
        let names = allCommands.flatMap { [$0.name] + $0.aliases }
        return .usage("unknown command \"\(name)\"\(Suggestion.phrase(for: name, among: names)); run syncupsctl help")
    }

    static func command(_ name: String) -> Subcommand? {
        allCommands.first { $0.name == name || $0.aliases.contains(name) }
    }

    static var overview: String {
        var text = """
            usage: syncupsctl [--socket PATH] [--json] [--timeout SECONDS] [COMMAND [ARGS]]

            Drives syncupsd, the SyncUps daemon. Without a command, shows the meeting being recorded, else
            the sync-ups. Commands:

            """
        for command in allCommands {
            text += "  " + command.usage.padded(to: 44) + command.summary + "\n"
        }
        text += """

            --json prints the daemon's raw result, or {"ok":false,"error":{"code","message"}}: always one JSON
            document. Exit status: 0 ok, 64 usage, 65 request rejected, 69 daemon unavailable, 73 a file
            could not be written, 75 try again later (the daemon refused the connection at its limit, or `end`:
            the meeting is still being saved). --timeout takes up to 86400 seconds; 0 waits as long as it takes.
            The socket is $SYNCUPSD_SOCKET, else $XDG_RUNTIME_DIR/syncupsd/socket
            (/tmp/syncupsd-UID/socket, which must be yours and 0700, where XDG_RUNTIME_DIR is unset).
            Run `syncupsctl COMMAND --help` for a command's options.

            """
        return text
    }
}

/// What a running subcommand needs: the options and a way to reach the daemon.
struct Context {
    var globals: Syncupsctl.Globals
    var environment: [String: String]
    var output: Output

    func connect() throws(CLIError) -> DaemonConnection {
        let path: String
        do {
            path = try SocketLocation.resolve(explicit: globals.socket, environment: environment)
        } catch {
            throw .notReached("\(error); pass --socket PATH or set SYNCUPSD_SOCKET")
        }
        do {
            return try DaemonConnection(path: path, timeout: globals.timeout)
        } catch {
            if case .unavailable = error,
                let fallback = SocketLocation.fallback(explicit: globals.socket, environment: environment),
                let connection = try? DaemonConnection(path: fallback, timeout: globals.timeout)
            {
                return connection
            }
            throw Self.cliError(error)
        }
    }

    static func cliError(_ failure: DaemonConnection.Failure) -> CLIError {
        switch failure {
        case .unavailable(let message): .notReached(message)
        case .rejected(let error):
            .rejected(code: error.code.rawValue, message: error.message, forPeople: Self.inCLITerms(error.message))
        case .broken(let message): CLIError(.unavailable, message)
        case .turnedAway(let error): .turnedAway(failure.description, daemonSays: error)
        }
    }

    /// The daemon's messages name protocol requests (`end it first (session.end)`); a person at the shell
    /// needs the syncupsctl command. `--json` keeps the daemon's own words.
    static let cliTerms: [(String, String)] = [
        ("session.next gives", "syncupsctl next gives"),
        ("once session.ended says it is saved", "in a moment (syncupsctl end waits for the save)"),
        ("(session.end)", "(syncupsctl end)"),
        ("with session.end", "with syncupsctl end"),
        ("with session.start", "with syncupsctl start SYNCUP"),
    ]

    static func inCLITerms(_ message: String) -> String {
        cliTerms.reduce(message) { $0.replacing($1.0, with: $1.1) }
    }

    /// Sends one request on a fresh connection.
    func call(_ command: String, _ arguments: JSONObject = JSONObject()) throws(CLIError) -> JSONValue {
        try call(on: try connect(), command, arguments)
    }

    /// Sends one request on `connection`.
    func call(on connection: DaemonConnection, _ command: String, _ arguments: JSONObject = JSONObject())
        throws(CLIError) -> JSONValue
    {
        do {
            return try connection.call(command, arguments)
        } catch {
            throw Self.cliError(error)
        }
    }

    func print(_ text: String) {
        _ = output.out(text)
    }

    /// Prints the raw result for `--json`, or the human form.
    func show(_ result: JSONValue, human: () -> String) {
        print(globals.json ? JSONWriter().string(result) + "\n" : human())
    }
}

extension String {
    /// The text and spaces up to `width` terminal columns (`displayWidth`), or one space if it is wider.
    func padded(to width: Int) -> String {
        let columns = displayWidth
        return columns >= width ? self + " " : self + String(repeating: " ", count: width - columns)
    }
}
