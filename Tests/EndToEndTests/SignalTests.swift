import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// SIGHUP reloads the configuration; a second SIGTERM ends a slow stop.
@Suite struct SignalTests {
    /// A daemon reading `config` from its default config file (flags set the socket, the data directory and
    /// the log level), subscribed to `daemon` events.
    static func daemon(config: String) throws -> (DaemonProcess, RawClient, String) {
        let directory = TemporaryDirectory("daemon")
        let file = directory.appending("config/syncups/syncupsd.conf")
        mkdir(directory.appending("config"), 0o700)
        mkdir(directory.appending("config/syncups"), 0o700)
        Files.write(file, config)
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"], directory: directory)
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["daemon"], "snapshot": false])
        return (daemon, watcher, file)
    }

    /// A file value the command line overrides is not "nothing changed" without a word: the log says which.
    @Test func saysWhichOptionsTheCommandLineOverridesOnSIGHUP() throws {
        let (daemon, _, file) = try Self.daemon(config: "")
        Files.write(file, "audio-device = hw:9\n")
        daemon.process.send(SIGHUP)
        #expect(
            daemon.log.wait {
                $0.contains(
                    "SIGHUP: reloaded the configuration: nothing changed; the command line overrides audio-device (the file says hw:9, it stays null)"
                )
            }, "\(daemon.log.contents)")
    }

    @Test func reloadsTheSpeechEngineOnSIGHUPAndSaysWhatNeedsARestart() throws {
        let (daemon, watcher, file) = try Self.daemon(config: "speech-engine = none\n")
        let client = try daemon.client()
        #expect(try client.result("status")["speechEngine"] == .null)

        Files.write(file, "speech-engine = command\nspeech-command = cat > /dev/null\nmax-connections = 7\n")
        daemon.process.send(SIGHUP)
        let warning = try watcher.nextEvent("daemon.warning")
        let message = warning["data"]?["message"]?.stringValue ?? ""
        #expect(message.contains("max-connections: 256 -> 7 needs a restart"), "\(message)")
        // Applied before the warning was sent: the next meeting would transcribe with the command.
        #expect(try client.result("status")["speechEngine"] == "command")
        // Logged before the warning was sent, but read from the pipe by the collector's thread, which a loaded
        // machine may not have run yet: wait for the line rather than read what has arrived so far.
        #expect(
            daemon.log.wait {
                $0.contains(
                    "SIGHUP: reloaded the configuration: speech-engine: none -> command (from the next meeting); speech-command: unset -> cat > /dev/null (from the next meeting)"
                )
            }, "\(daemon.log.contents)")
        let syncUp = try client.result("syncups.create", ["title": "Solo", "attendees": ["Ann"]])
        let started = try client.result("session.start", ["syncup": syncUp["id"]!, "audio": true])
        #expect(started["transcription"]?["engine"] == "command", "\(started)")
    }

    @Test func keepsTheRunningConfigurationWhenTheReloadedFileIsBad() throws {
        let (daemon, watcher, file) = try Self.daemon(config: "speech-engine = none\n")
        Files.write(file, "speech-engine = command\nspeech-command = cat\nspeech-engine = bogus\nno-such-option = 1\n")
        daemon.process.send(SIGHUP)
        let warning = try watcher.nextEvent("daemon.warning")
        let message = warning["data"]?["message"]?.stringValue ?? ""
        #expect(message.hasPrefix("SIGHUP: the configuration was not reloaded, the running one stays: "), "\(message)")
        #expect(message.contains("\(file):3: \"bogus\" is not one of"), "\(message)")
        #expect(message.contains("\(file):4: unknown option \"no-such-option\""), "\(message)")
        #expect(try daemon.client().result("status")["speechEngine"] == .null)
        #expect(try daemon.client().result("ping") == "pong")
    }

    /// A huge config file on SIGHUP: the warning says why in a line every subscriber can take (quoting the
    /// whole line cut each one off), and the daemon answers on.
    @Test(arguments: [16 << 20, 512 << 10])
    func refusesAHugeConfigFileOnSIGHUPInAShortWarning(zeros: Int) throws {
        let (daemon, watcher, file) = try Self.daemon(config: "speech-engine = none\n")
        Files.write(file, [UInt8](repeating: 0, count: zeros))
        daemon.process.send(SIGHUP)
        let warning = try watcher.nextEvent("daemon.warning")
        let message = warning["data"]?["message"]?.stringValue ?? ""
        #expect(message.hasPrefix("SIGHUP: the configuration was not reloaded, the running one stays: "), "\(message)")
        #expect(message.utf8.count < 1_000, "\(message.prefix(300))")
        let reason =
            zeros > 1 << 20
            ? "\(file): over 1 MiB, more than a config file may hold"
            : "\(file):1: expected \"key = value\", got \"" + String(repeating: "\\u0000", count: 80) + "…\""
        #expect(message.hasSuffix(reason), "\(message.prefix(300))")
        #expect(try watcher.result("ping") == "pong")
        #expect(try daemon.client().result("status")["speechEngine"] == .null)
    }

    /// A stop held up by a recognizer that ignores its EOF waits up to 5 s for its last words; a second
    /// SIGTERM ends that wait at once, the meeting is saved with what there is, and the next start has it.
    @Test func aSecondSIGTERMEndsASlowStopAndTheMeetingIsKept() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 600) { directory in
            "cat > /dev/null\ntouch '\(directory.appending("eof"))'\nexec sleep 60\n"
        }
        let daemon = meeting.daemon
        let syncUp = try #require(meeting.started["syncup"]?.stringValue)
        let meetingID = try #require(meeting.started["meeting"]?.stringValue)
        _ = try meeting.client.nextEvent("session.tick")
        daemon.process.send(SIGTERM)
        #expect(daemon.log.wait { $0.contains("saving the running meeting before stopping") })
        // The engine has its EOF: the daemon now waits for words that never come.
        #expect(try waitFor { Files.exists(meeting.alsa.directory.appending("eof")) })
        daemon.process.send(SIGTERM)
        #expect(daemon.waitForExit() == .exited(0))
        let log = daemon.log.contents
        #expect(log.contains("SIGTERM again: not waiting any longer"), "\(log)")
        #expect(log.contains("asked again to stop: saving the meeting now"), "\(log)")
        #expect(!log.contains("the recognizer did not finish within"), "the 5 s wait ran out instead:\n\(log)")

        let next = try DaemonProcess(
            arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"],
            directory: daemon.directory)
        let saved = try next.client().result(
            "meetings.get", ["syncup": .string(syncUp), "meeting": .string(meetingID)])
        #expect(saved["interrupted"] == true, "\(saved)")
    }
}
