import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsSpeech

/// One setting of the daemon, the same as a flag (`--name value`) and as a config-file key (`name = value`).
///
/// One table drives flag parsing, the config file, `--help` and `contrib/syncupsd.conf`, so they cannot
/// disagree.
struct ConfigurationOption: Sendable {
    enum Kind: Sendable {
        case path
        case text
        case flag
        case choice([String])
    }

    /// When a changed value takes effect on a configuration reloaded on SIGHUP.
    enum Reload: Sendable {
        /// Only at the next start (the socket, the data directory, limits set up once).
        case never
        /// At once.
        case atOnce
        /// From the next meeting on; the running one keeps what it started with.
        case nextMeeting
    }

    let name: String
    let kind: Kind
    let placeholder: String
    let defaultDescription: String
    let help: String
    let reload: Reload
    /// The option's value in a configuration, as the config file writes it (nil when unset), to tell what a
    /// reload changed.
    let value: @Sendable (Configuration) -> String?
    let apply: @Sendable (inout Configuration, String) throws(ConfigurationError.Reason) -> Void

    static let all: [ConfigurationOption] = [
        ConfigurationOption(
            name: "socket",
            kind: .path,
            placeholder: "PATH",
            defaultDescription: "$XDG_RUNTIME_DIR/syncupsd/socket, else /tmp/syncupsd-UID/socket",
            help: "the Unix socket to listen on",
            reload: .never,
            value: { $0.socketPath },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.socketPath = try absolutePath(value)
            }
        ),
        ConfigurationOption(
            name: "data-dir",
            kind: .path,
            placeholder: "DIR",
            defaultDescription: "$XDG_DATA_HOME/syncups",
            help: "where sync-ups.json and meeting audio live",
            reload: .never,
            value: { $0.dataDirectory },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.dataDirectory = try absolutePath(value)
            }
        ),
        ConfigurationOption(
            name: "audio-device",
            kind: .text,
            placeholder: "NAME",
            defaultDescription: "default",
            help: "the ALSA capture device meetings are recorded from",
            reload: .nextMeeting,
            value: { $0.audioDevice },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.audioDevice = value
            }
        ),
        ConfigurationOption(
            name: "call-audio",
            kind: .text,
            placeholder: "auto|off|SOURCE",
            defaultDescription: "auto",
            help:
                "record the call too: auto (the default sink's monitor, when a sound server is reachable), off, or a source named by syncupsctl devices",
            reload: .nextMeeting,
            value: { $0.callAudio.text },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                guard !value.isEmpty else { throw .invalidValue(value, "auto, off or a source name") }
                configuration.callAudio = CallAudio(value)
            }
        ),
        ConfigurationOption(
            name: "cue-device",
            kind: .text,
            placeholder: "NAME",
            defaultDescription: "default",
            help: "the ALSA playback device for the speaker-change cue",
            reload: .nextMeeting,
            value: { $0.cueDevice },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.cueDevice = value
            }
        ),
        ConfigurationOption(
            name: "cue",
            kind: .flag,
            placeholder: "",
            defaultDescription: "true",
            help: "play a cue when the speaker changes",
            reload: .nextMeeting,
            value: { String($0.playsCue) },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.playsCue = value == "true"
            }
        ),
        ConfigurationOption(
            name: "speech-engine",
            kind: .choice(SpeechEngine.allCases.map(\.rawValue)),
            placeholder: "ENGINE",
            defaultDescription: Configuration().speechEngine.rawValue,
            help: "auto (command if set, else PocketSphinx if installed), pocketsphinx, command or none",
            reload: .nextMeeting,
            value: { $0.speechEngine.rawValue },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                guard let engine = SpeechEngine(rawValue: value) else { throw .invalidValue(value, "a speech engine") }
                configuration.speechEngine = engine
            }
        ),
        ConfigurationOption(
            name: "speech-command",
            kind: .text,
            placeholder: "COMMAND",
            defaultDescription: "none",
            help: "an external recognizer run with /bin/sh -c per meeting (protocol.md)",
            reload: .nextMeeting,
            value: { $0.speechCommand },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.speechCommand = value
            }
        ),
        ConfigurationOption(
            name: "speech-spare-idle",
            kind: .text,
            placeholder: "SECONDS",
            defaultDescription: String(Configuration().speechSpareIdleSeconds),
            help:
                "how long the next meeting's speech command, started ahead when a meeting ends or a stand-up's reminder shows, waits unused before it is ended (0: never started ahead)",
            reload: .nextMeeting,
            value: { String($0.speechSpareIdleSeconds) },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.speechSpareIdleSeconds = try integer(
                    value, in: 0...86_400, "a number of seconds from 0 to 86400")
            }
        ),
        ConfigurationOption(
            name: "speech-spare-at-start",
            kind: .flag,
            placeholder: "",
            defaultDescription: "false",
            help: "start the first meeting's speech command ahead when syncupsd starts, too",
            reload: .nextMeeting,
            value: { String($0.speechSpareAtStart) },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.speechSpareAtStart = value == "true"
            }
        ),
        ConfigurationOption(
            name: "voice-model",
            kind: .text,
            placeholder: "FILE",
            defaultDescription: "$XDG_DATA_HOME/syncups/voice/ge2e.weights",
            help:
                "the speaker encoder's weights (syncupsd-voice-model installs them), or none: attribution by the floor alone",
            reload: .nextMeeting,
            value: { $0.voiceModel },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.voiceModel = value == "none" ? value : try absolutePath(value)
            }
        ),
        ConfigurationOption(
            name: "speech-model",
            kind: .path,
            placeholder: "DIR",
            defaultDescription: Configuration().speechModel,
            help: "PocketSphinx's acoustic model",
            reload: .nextMeeting,
            value: { $0.speechModel },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.speechModel = try absolutePath(value)
            }
        ),
        ConfigurationOption(
            name: "speech-dictionary",
            kind: .path,
            placeholder: "FILE",
            defaultDescription: Configuration().speechDictionary,
            help: "PocketSphinx's pronunciation dictionary",
            reload: .nextMeeting,
            value: { $0.speechDictionary },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.speechDictionary = try absolutePath(value)
            }
        ),
        ConfigurationOption(
            name: "speech-language-model",
            kind: .path,
            placeholder: "FILE",
            defaultDescription: Configuration().speechLanguageModel,
            help: "PocketSphinx's language model",
            reload: .nextMeeting,
            value: { $0.speechLanguageModel },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.speechLanguageModel = try absolutePath(value)
            }
        ),
        ConfigurationOption(
            name: "speech-grammar",
            kind: .path,
            placeholder: "FILE",
            defaultDescription: "none",
            help: "a JSGF grammar for PocketSphinx instead of the language model",
            reload: .nextMeeting,
            value: { $0.speechGrammar },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.speechGrammar = try absolutePath(value)
            }
        ),
        ConfigurationOption(
            name: "max-connections",
            kind: .text,
            placeholder: "N",
            defaultDescription: String(Configuration().maxConnections),
            help: "the most clients connected at once (each status bar and watch is one)",
            reload: .never,
            value: { String($0.maxConnections) },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.maxConnections = try integer(value, in: 1...100_000, "a number from 1 to 100000")
            }
        ),
        ConfigurationOption(
            name: "busy-poll",
            kind: .text,
            placeholder: "MICROSECONDS",
            defaultDescription: String(Configuration().busyPollMicroseconds),
            help: "how long the event loop polls for the next request before sleeping (0: never)",
            reload: .never,
            value: { String($0.busyPollMicroseconds) },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                configuration.busyPollMicroseconds = try integer(
                    value, in: 0...1000, "a number of microseconds from 0 to 1000")
            }
        ),
        ConfigurationOption(
            name: "notify",
            kind: .choice(NotificationLevel.allCases.map(\.rawValue)),
            placeholder: "all|important|none",
            defaultDescription: "all",
            help:
                "desktop notifications: all (the floor passes, a pause, the meeting saved, failures), important (saved and failures) or none",
            reload: .atOnce,
            value: { $0.notifications.rawValue },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                guard let level = NotificationLevel(rawValue: value) else {
                    throw .invalidValue(value, "all, important or none")
                }
                configuration.notifications = level
            }
        ),
        ConfigurationOption(
            name: "log-level",
            kind: .choice(Logger.Level.allCases.reversed().map(\.name)),
            placeholder: "LEVEL",
            defaultDescription: "info",
            help: "the least important messages logged",
            reload: .atOnce,
            value: { $0.logLevel.name },
            apply: { configuration, value throws(ConfigurationError.Reason) in
                guard let level = Logger.Level(name: value) else { throw .invalidValue(value, "a log level") }
                configuration.logLevel = level
            }
        ),
    ]

    static func integer(_ value: String, in range: ClosedRange<Int>, _ expected: String)
        throws(ConfigurationError.Reason) -> Int
    {
        guard let number = Int(value), range.contains(number) else { throw .invalidValue(value, expected) }
        return number
    }

    static func absolutePath(_ value: String) throws(ConfigurationError.Reason) -> String {
        guard value.hasPrefix("/") else { throw .invalidValue(value, "an absolute path") }
        return value
    }
}

/// A bad flag or config line, with where it came from.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Error, Sendable, Equatable {
        case unknownOption(String)
        case missingValue(String)
        case invalidValue(String, String)
        case syntax(String)
        case unreadable(String)
    }

    /// The most errors of one file described; the rest are counted.
    public static let maximumReported = 10

    /// "the command line", or "FILE:LINE".
    public var location: String
    public var reason: Reason
    /// The errors of the file's later lines, reported with this one (at most `maximumReported` in all).
    public var following: [ConfigurationError] = []
    /// How many more lines had errors.
    public var unreported = 0

    public init(location: String, reason: Reason) {
        self.location = location
        self.reason = reason
    }

    public var description: String {
        let detail =
            switch reason {
            case .unknownOption(let name):
                // A flag (`--audio-devcie`) or a key of the file (`audio-devcie`), each among its own kind.
                "unknown option \(ErrorQuote.quoted(name))"
                    + Suggestion.phrase(
                        for: name,
                        among: ConfigurationOption.all.map { name.hasPrefix("--") ? "--" + $0.name : $0.name })
            case .missingValue(let name): "\(ErrorQuote.quoted(name)) needs a value"
            case .invalidValue(let value, let expected): "\(ErrorQuote.quoted(value)) is not \(expected)"
            case .syntax(let text): text
            case .unreadable(let text): text
            }
        // One line per error (main prints them under one "syncupsd:").
        let more = unreported > 0 ? ["and \(unreported) more lines with errors"] : []
        return (["\(location): \(detail)"] + following.map(\.description) + more).joined(separator: "\n")
    }
}
