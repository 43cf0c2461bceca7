import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// Builds a `Configuration` from the config file and then the command line (flags win).
public enum ConfigurationLoader {
    /// What the command line asked for besides running.
    public enum Action: Sendable, Equatable {
        case run(Configuration)
        case help
        case version
    }

    /// The largest config file read, in bytes: a few dozen options need a few kilobytes, and a larger file
    /// (16 MB of zeros, say) is refused before it is read rather than stall the event loop on SIGHUP.
    public static let maximumFileSize: Int64 = 1 << 20

    /// Parses `arguments` (without argv[0]) and the config file they point at (or the default one).
    public static func load(arguments: [String], environment: [String: String]) throws(ConfigurationError) -> Action {
        // First pass: find --help, --version, --config and --no-config, which decide what else is read.
        var configFile: String? = nil
        var readsConfigFile = true
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "-h", "--help": return .help
            case "-V", "--version": return .version
            case "--no-config": readsConfigFile = false
            case "--config":
                guard index + 1 < arguments.count else {
                    throw ConfigurationError(location: "the command line", reason: .missingValue("--config"))
                }
                configFile = arguments[index + 1]
                index += 1
            default: break
            }
            index += 1
        }

        var configuration = Configuration()
        if readsConfigFile {
            let explicit = configFile != nil
            if let path = configFile ?? defaultConfigFile(environment: environment) {
                try applyFile(path, to: &configuration, mustExist: explicit)
            }
        }
        configuration.configFile = configFile
        configuration.readsConfigFile = readsConfigFile
        try applyFlags(arguments, to: &configuration)
        return .run(configuration)
    }

    /// The arguments that choose the file (`--config PATH`, `--no-config`), without the options: loading them
    /// gives what the file alone says.
    public static func fileArguments(_ arguments: [String]) -> [String] {
        var kept: [String] = []
        var index = 0
        while index < arguments.count {
            if arguments[index] == "--no-config" { kept.append("--no-config") }
            if arguments[index] == "--config" { kept += arguments[index..<min(index + 2, arguments.count)] }
            index += 1
        }
        return kept
    }

    /// `$XDG_CONFIG_HOME/syncups/syncupsd.conf`, else `~/.config/syncups/syncupsd.conf`.
    public static func defaultConfigFile(environment: [String: String]) -> String? {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return FilePath.join(config, "syncups/syncupsd.conf")
        }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return FilePath.join(home, ".config/syncups/syncupsd.conf")
        }
        return nil
    }

    static func applyFlags(_ arguments: [String], to configuration: inout Configuration) throws(ConfigurationError) {
        let location = "the command line"
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--no-config" { continue }
            if argument == "--config" {
                index += 1
                continue
            }
            guard argument.hasPrefix("--") else {
                throw ConfigurationError(location: location, reason: .syntax("unexpected argument \"\(argument)\""))
            }
            var name = String(argument.dropFirst(2))
            var value: String? = nil
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            // --no-NAME switches a flag option off.
            if name.hasPrefix("no-"), let option = option(String(name.dropFirst(3))), case .flag = option.kind {
                try apply(option, "false", &configuration, location)
                continue
            }
            guard let option = option(name) else {
                throw ConfigurationError(location: location, reason: .unknownOption("--" + name))
            }
            if case .flag = option.kind {
                try apply(option, value ?? "true", &configuration, location)
                continue
            }
            if value == nil {
                guard index < arguments.count else {
                    throw ConfigurationError(location: location, reason: .missingValue("--" + name))
                }
                value = arguments[index]
                index += 1
            }
            try apply(option, value!, &configuration, location)
        }
    }

    static func applyFile(_ path: String, to configuration: inout Configuration, mustExist: Bool)
        throws(ConfigurationError)
    {
        let bytes: [UInt8]
        let size: Int64
        do {
            let (fd, info) = try FileDescriptor.openRegularFile(path)
            defer { fd.close() }
            size = Int64(info.st_size)
            // One byte past the limit at most, even from a file that grows while it is read: SIGHUP reads it
            // on the event loop.
            bytes = size > maximumFileSize ? [] : try fd.readToEnd(limit: maximumFileSize + 1)
        } catch {
            if error.errno == .noSuchFile && !mustExist { return }
            throw ConfigurationError(location: path, reason: .unreadable(error.description))
        }
        guard size <= maximumFileSize, bytes.count <= maximumFileSize else {
            throw ConfigurationError(
                location: path, reason: .unreadable("over 1 MiB, more than a config file may hold"))
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError(location: path, reason: .unreadable("not UTF-8 text"))
        }
        // Every bad line, not just the first: fixing a file one error per start is slow. (The first few are
        // described, the rest counted: the message goes to every `daemon` subscriber.)
        var errors: [ConfigurationError] = []
        var unreported = 0
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let location = "\(path):\(number + 1)"
            do throws(ConfigurationError) {
                try applyLine(rawLine, to: &configuration, location)
            } catch {
                if errors.count < ConfigurationError.maximumReported { errors.append(error) } else { unreported += 1 }
            }
        }
        guard var first = errors.first else { return }
        first.following = Array(errors.dropFirst())
        first.unreported = unreported
        throw first
    }

    private static func applyLine(_ line: Substring, to configuration: inout Configuration, _ location: String)
        throws(ConfigurationError)
    {
        let parsed: (key: String, value: String)?
        do throws(ConfigurationError.Reason) {
            parsed = try ConfigurationLine.parse(line)
        } catch {
            throw ConfigurationError(location: location, reason: error)
        }
        guard let (key, value) = parsed else { return }
        guard let option = option(key) else {
            throw ConfigurationError(location: location, reason: .unknownOption(key))
        }
        try apply(option, value, &configuration, location)
    }

    static func option(_ name: String) -> ConfigurationOption? {
        ConfigurationOption.all.first { $0.name == name }
    }

    /// The usual ways to write a flag's value in a file (`cue = no`), as `true` or `false`.
    static let booleans = [
        "true": "true", "yes": "true", "on": "true", "1": "true",
        "false": "false", "no": "false", "off": "false", "0": "false",
    ]

    static func apply(
        _ option: ConfigurationOption,
        _ value: String,
        _ configuration: inout Configuration,
        _ location: String
    ) throws(ConfigurationError) {
        do throws(ConfigurationError.Reason) {
            switch option.kind {
            case .flag:
                guard let truth = booleans[value.lowercased()] else {
                    throw ConfigurationError.Reason.invalidValue(value, "true or false (or yes/no, on/off, 1/0)")
                }
                try option.apply(&configuration, truth)
                return
            case .choice(let choices):
                guard choices.contains(value) else {
                    throw ConfigurationError.Reason.invalidValue(value, "one of " + choices.joined(separator: ", "))
                }
            case .path, .text:
                guard !value.isEmpty else { throw ConfigurationError.Reason.missingValue(option.name) }
            }
            try option.apply(&configuration, value)
        } catch {
            throw ConfigurationError(location: location, reason: error)
        }
    }

    /// Every option's name (a flag without `--`, a config-file key).
    public static var optionNames: [String] { ConfigurationOption.all.map(\.name) }

    /// The text of `syncupsd --help`.
    public static var helpText: String {
        var text = """
            usage: syncupsd [options]

            The SyncUps daemon: keeps your sync-ups in sync-ups.json and runs the one meeting being recorded.
            Clients (syncupsctl, status bars) talk to it over a Unix socket; see protocol.md.

            options (each also works as "name = value" in the config file):

            """
        for option in ConfigurationOption.all {
            let flag =
                switch option.kind {
                case .flag: "--\(option.name), --no-\(option.name)"
                default: "--\(option.name) \(option.placeholder)"
                }
            text += "  " + flag.padding(toLength: 34) + option.help + " (default: \(option.defaultDescription))\n"
        }
        text += """
              --config FILE                     read this config file instead of the default one
              --no-config                       read no config file
              -h, --help                        show this help
              -V, --version                     show the version

            config file: $XDG_CONFIG_HOME/syncups/syncupsd.conf (optional; flags override it)

            """
        return text
    }
}

extension String {
    /// Pads with spaces to `length` characters (and always at least one space after).
    func padding(toLength length: Int) -> String {
        count >= length ? self + " " : self + String(repeating: " ", count: length - count)
    }
}
