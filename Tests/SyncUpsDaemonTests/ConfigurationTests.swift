import Glibc
import SyncUpsDaemon
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization
import Testing

@Suite struct ConfigurationTests {
    let directory = TemporaryDirectory("config")
    var environment: [String: String] { ["XDG_CONFIG_HOME": directory.path, "HOME": directory.path] }

    func load(_ arguments: [String], file: String? = nil) throws(ConfigurationError) -> Configuration {
        if let file {
            mkdir(directory.appending("syncups"), 0o700)
            Files.write(directory.appending("syncups/syncupsd.conf"), file)
        }
        guard
            case .run(let configuration) = try ConfigurationLoader.load(arguments: arguments, environment: environment)
        else {
            throw ConfigurationError(location: "test", reason: .syntax("not a run"))
        }
        return configuration
    }

    // MARK: - Reloading (SIGHUP)

    @Test func aReloadSortsWhatChangedByWhenItApplies() throws {
        let started = try load([], file: "log-level = info\ncue = true\n")
        let new = try load([], file: "log-level = debug\ncue = false\nmax-connections = 9\n")
        let reload = ConfigurationReload(started: started, current: started, new: new)
        #expect(reload.appliedAtOnce.map(\.description) == ["log-level: info -> debug"])
        #expect(reload.appliedFromNextMeeting.map(\.description) == ["cue: true -> false"])
        #expect(reload.needsRestart.map(\.description) == ["max-connections: 256 -> 9"])
        #expect(reload.changesAnything)
        // What needs a restart is compared with the start, so every reload says it again; the rest with the
        // last reload, so a value is reported once.
        let again = ConfigurationReload(started: started, current: new, new: new)
        #expect(!again.changesAnything)
        #expect(again.needsRestart.map(\.option) == ["max-connections"])
        // A flag wins over the file on a reload as at start.
        let flagged = try load(["--log-level", "info"], file: "log-level = debug\n")
        #expect(!ConfigurationReload(started: started, current: started, new: flagged).changesAnything)
    }

    @Test func everyCopyOfALoggerFollowsANewLevel() {
        let lines = Mutex<[String]>([])
        let logger = Logger(minimumLevel: .notice) { _, message, _ in lines.withLock { $0.append(message) } }
        let copy = logger
        copy.debug("dropped")
        logger.changeMinimumLevel(to: .debug)
        copy.debug("logged")
        #expect(lines.withLock { $0 } == ["logged"])
        #expect(copy.minimumLevel == .debug)
    }

    @Test func needsNoFileForTheDefaults() throws {
        let configuration = try load([])
        #expect(configuration == Configuration())
        #expect(configuration.audioDevice == "default")
        #expect(configuration.playsCue)
        #expect(configuration.speechEngine.rawValue == "auto")
    }

    @Test func callAudioIsAutoOffOrASourceByNameFromTheFileOrAFlag() throws {
        #expect(try load([]).callAudio == .auto)
        #expect(try load(["--call-audio", "off"]).callAudio == .off)
        #expect(try load([], file: "call-audio = headset.monitor\n").callAudio == .source("headset.monitor"))
        #expect(try load(["--call-audio", "auto"], file: "call-audio = off\n").callAudio == .auto)
        #expect(throws: ConfigurationError.self) { try load(["--call-audio", ""]) }
    }

    @Test func readsTheFileThenLetsFlagsWin() throws {
        let configuration = try load(
            ["--audio-device", "hw:2", "--no-cue"],
            file: """
                # my setup
                audio-device = hw:1        # the USB mic
                cue-device = "plughw:0"
                speech-command = "/opt/whisper --model tiny"
                data-dir = /srv/syncups

                log-level=debug
                busy-poll = 0
                """
        )
        #expect(configuration.busyPollMicroseconds == 0)
        #expect(configuration.audioDevice == "hw:2")
        #expect(configuration.cueDevice == "plughw:0")
        #expect(configuration.speechCommand == "/opt/whisper --model tiny")
        #expect(configuration.dataDirectory == "/srv/syncups")
        #expect(configuration.logLevel == .debug)
        #expect(!configuration.playsCue)
    }

    @Test(arguments: [
        ("colour = red\n", "syncupsd.conf:1: unknown option \"colour\""),
        ("\n\nlog-level = loud\n", "syncupsd.conf:3: \"loud\" is not one of debug, info, notice, warning, error"),
        ("cue = maybe\n", "syncupsd.conf:1: \"maybe\" is not true or false (or yes/no, on/off, 1/0)"),
        ("data-dir = relative/path\n", "syncupsd.conf:1: \"relative/path\" is not an absolute path"),
        ("just words\n", "syncupsd.conf:1: expected \"key = value\", got \"just words\""),
        ("just words # a = b\n", "syncupsd.conf:1: expected \"key = value\", got \"just words\""),
        (
            "speech-command = \"run --fast\n",
            "syncupsd.conf:1: the value of speech-command opens a \" quote that is never closed"
        ),
        ("audio-device = 'hw:1' hw:2\n", "syncupsd.conf:1: unexpected \"hw:2\" after the quoted value of audio-device"),
        ("max-connections = lots\n", "syncupsd.conf:1: \"lots\" is not a number from 1 to 100000"),
        ("max-connections = 0\n", "syncupsd.conf:1: \"0\" is not a number from 1 to 100000"),
        ("busy-poll = 2000\n", "syncupsd.conf:1: \"2000\" is not a number of microseconds from 0 to 1000"),
    ])
    func rejectsBadLinesNamingFileAndLine(text: String, message: String) {
        do {
            _ = try load([], file: text)
            Issue.record("expected an error for \(text)")
        } catch {
            #expect(error.description.hasSuffix(message), "\(error.description)")
            #expect(error.description.hasPrefix(directory.path))
        }
    }

    /// Fixing a file one error per start is slow: every bad line is reported, in order, one per line.
    @Test func reportsEveryBadLineOfTheFileAtOnce() {
        do {
            _ = try load([], file: "colour = red\naudio-device = hw:1\nlog-level = loud\njust words\n")
            Issue.record("expected an error")
        } catch {
            let lines = error.description.split(separator: "\n")
            #expect(lines.count == 3, "\(error.description)")
            #expect(lines.first?.hasSuffix("syncupsd.conf:1: unknown option \"colour\"") == true)
            #expect(lines.dropFirst().first?.contains("syncupsd.conf:3: \"loud\" is not one of") == true)
            #expect(lines.last?.hasSuffix("syncupsd.conf:4: expected \"key = value\", got \"just words\"") == true)
        }
    }

    /// Reported in full, 500,000 bad lines would make a message of megabytes for the log and every `daemon`
    /// subscriber: the first ten are described, the rest counted.
    @Test func describesTheFirstTenBadLinesAndCountsTheRest() {
        do {
            _ = try load([], file: String(repeating: "nonsense\n", count: 25))
            Issue.record("expected an error")
        } catch {
            let lines = error.description.split(separator: "\n")
            #expect(lines.count == 11, "\(error.description)")
            #expect(lines[9].hasSuffix("syncupsd.conf:10: expected \"key = value\", got \"nonsense\""))
            #expect(lines.last == "and 15 more lines with errors")
        }
    }

    /// A line of any size or content is quoted as a short excerpt on one line: its first 80 characters, control
    /// characters escaped.
    @Test(arguments: [
        (String(repeating: "\0", count: 100_000), "got \"" + String(repeating: "\\u0000", count: 80) + "…\""),
        (
            String(repeating: "x", count: 100_000) + " = 1",
            "unknown option \"" + String(repeating: "x", count: 80) + "…\""
        ),
        ("cue = yes\u{1B}[2J", "\"yes\\u001b[2J\" is not true or false (or yes/no, on/off, 1/0)"),
        ("ann\tbo", "got \"ann\\tbo\""),
    ])
    func quotesAShortEscapedExcerptOfABadLine(line: String, quoted: String) {
        do {
            _ = try load([], file: line + "\n")
            Issue.record("expected an error")
        } catch {
            #expect(error.description.hasSuffix(quoted), "\(error.description.prefix(300))")
            #expect(error.description.utf8.count < 600)
        }
    }

    /// 16 MB of zeros on SIGHUP stalled the event loop for seconds: a file over 1 MiB is refused unread.
    @Test func refusesAFileOverOneMebibyteWithoutReadingIt() {
        do {
            _ = try load([], file: String(repeating: "# comment line.\n", count: 65_537))
            Issue.record("expected an error")
        } catch {
            #expect(error.description.hasSuffix("syncupsd.conf: over 1 MiB, more than a config file may hold"))
        }
        #expect(throws: Never.self) { try load([], file: String(repeating: "# comment line.\n", count: 65_536)) }
    }

    /// What is not a regular file is refused without reading: a FIFO would block the loop, /dev/zero never end.
    @Test(arguments: ["fifo", "directory", "symlink to /dev/zero"])
    func refusesAConfigFileThatIsNotARegularFile(kind: String) {
        mkdir(directory.appending("syncups"), 0o700)
        let path = directory.appending("syncups/syncupsd.conf")
        switch kind {
        case "fifo": mkfifo(path, 0o600)
        case "directory": mkdir(path, 0o700)
        default: symlink("/dev/zero", path)
        }
        do {
            _ = try load([])
            Issue.record("expected an error")
        } catch {
            #expect(error.description.hasSuffix("not a regular file: Invalid argument"), "\(error.description)")
        }
    }

    @Test func keepsHashesAndEscapesInsideQuotes() throws {
        let configuration = try load(
            [],
            file: #"""
                speech-command = "/opt/run --tag #1 --say \"hi\" C:\\x"   # the comment starts here
                audio-device = 'plughw:CARD=USB,DEV=0 #2'
                max-connections = 4096
                """#
        )
        #expect(configuration.speechCommand == #"/opt/run --tag #1 --say "hi" C:\x"#)
        #expect(configuration.audioDevice == "plughw:CARD=USB,DEV=0 #2")
        #expect(configuration.maxConnections == 4096)
    }

    @Test func rejectsUnknownFlagsAndMissingValues() {
        #expect(throws: ConfigurationError(location: "the command line", reason: .unknownOption("--colour"))) {
            try load(["--colour", "red"])
        }
        #expect(throws: ConfigurationError(location: "the command line", reason: .missingValue("--socket"))) {
            try load(["--socket"])
        }
    }

    @Test func readsAnotherFileWithConfigAndNoneWithNoConfig() throws {
        Files.write(directory.appending("other.conf"), "audio-device = other\n")
        #expect(try load(["--config", directory.appending("other.conf")]).audioDevice == "other")
        #expect(try load(["--no-config"], file: "audio-device = ignored\n").audioDevice == "default")
        #expect(throws: ConfigurationError.self) { try load(["--config", directory.appending("missing.conf")]) }
        // A FIFO given as the file is refused at once rather than waited on forever.
        mkfifo(directory.appending("fifo.conf"), 0o600)
        #expect(throws: ConfigurationError.self) { try load(["--config", directory.appending("fifo.conf")]) }
    }

    @Test func documentsEveryOptionInHelpAndInTheSampleConfig() throws {
        let help = ConfigurationLoader.helpText
        let sample = Files.readString(BuiltProducts.repositoryRoot + "/contrib/syncupsd.conf") ?? ""
        for name in ConfigurationLoader.optionNames {
            #expect(help.contains("--\(name)"), "\(name) is missing from --help")
            #expect(sample.contains("# \(name) = "), "\(name) is missing from contrib/syncupsd.conf")
        }
    }
}
