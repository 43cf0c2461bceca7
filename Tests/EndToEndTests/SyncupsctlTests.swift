import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// syncupsctl as a user and a script see it: output, --json, exit codes.
@Suite struct SyncupsctlTests {
    @Test func createsListsShowsEditsAndDeletes() throws {
        let daemon = try DaemonProcess()
        let added = try daemon.ctl([
            "add", "Design & Product", "--duration", "15m", "--theme", "orange", "--attendee", "Blob", "--attendee",
            "Blob Jr",
        ])
        #expect(added.exitCode == 0)
        #expect(added.standardOutput.hasPrefix("created "))
        let id = String(added.standardOutput.split(separator: " ")[1])

        let list = try daemon.ctl(["list"])
        #expect(
            list.standardOutput == """
                ID        TITLE             LENGTH  ATTENDEES  MEETINGS  THEME
                \(id.prefix(8))  Design & Product  15 min          2         0  orange

                """)

        let edited = try daemon.ctl([
            "edit", String(id.prefix(5)), "--duration", "1h30m", "--rename-attendee", "Blob Jr=Blob Junior",
            "--add-attendee", "Blob Sr",
        ])
        #expect(edited.exitCode == 0)
        let shown = try daemon.ctl(["show", String(id.prefix(5))])
        #expect(
            shown.standardOutput == """
                Design & Product  (\(id))
                length:     1 hr, 30 min (30 min each)
                theme:      orange
                attendees:  Blob, Blob Junior, Blob Sr
                meetings:   none yet

                """)

        let json = try daemon.ctl(["--json", "show", id])
        let object = try JSONParser().parse(json.standardOutput)
        #expect(object["duration"] == 5400)
        #expect(object["attendees"]?[1]?["name"] == "Blob Junior")

        #expect(try daemon.ctl(["rm", id, "--yes"]).exitCode == 0)
        #expect(try daemon.ctl(["list"]).standardOutput.hasPrefix("no sync-ups yet"))
    }

    @Test func printsIdsWithOneLineLabelsForCompletionsAndScripts() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let first = try client.result("syncups.create", ["title": "Tabs\tand\nlines", "attendees": ["Ann"]])
        let second = try client.result("syncups.create", ["title": "Second", "attendees": ["Ann"]])
        let firstID = try #require(first["id"]?.stringValue)
        let secondID = try #require(second["id"]?.stringValue)
        #expect(try daemon.ctl(["ids"]).standardOutput == "\(firstID)\tTabs and lines\n\(secondID)\tSecond\n")

        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": .string(secondID), "audio": false])
        _ = try client.result("session.end", ["action": "save"])
        let ended = try client.nextEvent("session.ended")
        let meetingID = try #require(ended["data"]?["meeting"]?["id"]?.stringValue)
        // A prefix in any case names the sync-up; its meetings come with their dates (local, with the offset).
        let meetings = try daemon.ctl(["ids", String(secondID.prefix(6)).lowercased()], environment: ["TZ": "UTC"])
            .standardOutput
        #expect(meetings.hasPrefix(meetingID + "\t20"))
        #expect(meetings.hasSuffix(" +00:00\n"))
        #expect(try daemon.ctl(["ids", firstID]).standardOutput == "")
        #expect(try daemon.ctl(["ids", "FFFF"]).exitCode == 65)
    }

    @Test func keepsAttendeeIDsWhenTheListIsReplacedByName() throws {
        let daemon = try DaemonProcess()
        let created = try JSONParser().parse(
            try daemon.ctl(["--json", "add", "T", "--attendee", "Ann", "--attendee", "Bob"]).standardOutput)
        let id = try #require(created["id"]?.stringValue)
        _ = try daemon.ctl(["edit", id, "--attendee", "Bob", "--attendee", "Cy"])
        let after = try JSONParser().parse(try daemon.ctl(["--json", "show", id]).standardOutput)
        #expect(after["attendees"]?[0]?["id"] == created["attendees"]?[1]?["id"])
        #expect(after["attendees"]?[1]?["name"] == "Cy")
    }

    @Test(arguments: [
        (["bogus"], 64, "unknown command"),
        (["add"], 64, "missing argument; usage: syncupsctl add TITLE"),
        (["add", "x", "--duration", "soon"], 64, "is not a duration"),
        (["add", "x", "--colour", "red"], 64, "unknown option --colour"),
        (["show", "FFFFFFFF"], 65, "not_found: no sync-up with the id or title \"FFFFFFFF\""),
        (["add", "x", "--theme", "mauve"], 65, "invalid_argument: theme: unknown theme"),
        (["call", "dance"], 65, "unknown_command"),
        (["call", "ping", "[1]"], 64, "must be a JSON object"),
    ])
    func exitsWithTheRightStatusAndSaysWhy(arguments: [String], status: CInt, message: String) throws {
        let daemon = try DaemonProcess()
        let result = try daemon.ctl(arguments)
        #expect(result.exitCode == status)
        #expect(result.standardError.contains(message), "\(result.standardError)")
    }

    @Test func exitsUnavailableWithAHintWhenNoDaemonRuns() throws {
        let directory = TemporaryDirectory("nodaemon")
        let result = try CommandResult.run(
            BuiltProducts.path("syncupsctl"), ["status"],
            environment: ["SYNCUPSD_SOCKET": directory.appending("none.sock")])
        #expect(result.exitCode == 69)
        #expect(result.standardError.contains("cannot connect to syncupsd"))
        #expect(result.standardError.contains("hint: start the daemon"))
    }

    @Test func callsAnyCommandRaw() throws {
        let daemon = try DaemonProcess()
        let result = try daemon.ctl(["call", "syncups.create", #"{"title":"Raw","attendees":["A"]}"#])
        #expect(result.exitCode == 0)
        #expect(try JSONParser().parse(result.standardOutput)["title"] == "Raw")
    }

    @Test func printsHelpForEveryCommand() throws {
        let overview = try CommandResult.run(BuiltProducts.path("syncupsctl"), ["help"])
        #expect(overview.exitCode == 0)
        for name in [
            "status", "list", "show", "add", "edit", "rm", "meeting", "rm-meeting", "export", "start", "next", "pause",
            "resume", "end", "session", "call", "watch", "themes", "ping",
        ] {
            #expect(overview.standardOutput.contains("  \(name)"))
            let help = try CommandResult.run(BuiltProducts.path("syncupsctl"), [name, "--help"])
            #expect(help.exitCode == 0)
            #expect(help.standardOutput.hasPrefix("usage: syncupsctl \(name)"))
        }
    }

    @Test func followsEventsWithWatch() throws {
        let daemon = try DaemonProcess()
        let watch = try Subprocess(
            executable: BuiltProducts.path("syncupsctl"),
            arguments: ["--socket", daemon.socketPath, "watch", "--topic", "syncups"],
            standardOutput: .pipe
        )
        defer {
            watch.send(SIGTERM)
            _ = watch.wait()
            watch.closeStreams()
        }
        let lines = try OutputCollector(watch.standardOutput!)
        #expect(try waitFor { try daemon.client().result("status")["subscribers"] == 1 })
        _ = try daemon.ctl(["add", "Watched"])
        #expect(lines.wait { $0.contains("\"event\":\"syncup.created\"") && $0.hasSuffix("\n") })
        let event = try JSONParser().parse(String(lines.contents.split(separator: "\n")[0]))
        #expect(event["data"]?["syncup"]?["title"] == "Watched")
    }

    /// A status bar starts syncupsctl every second in some setups: it must not drag in the daemon's audio,
    /// speech and systemd libraries (ARCHITECTURE.md promises it).
    @Test func linksNoneOfTheDaemonsCLibraries() throws {
        let ctl = try CommandResult.run("/usr/bin/ldd", [BuiltProducts.path("syncupsctl")]).standardOutput
        for library in ["libasound", "libsystemd", "libpocketsphinx", "libsphinxbase"] {
            #expect(!ctl.contains(library), "syncupsctl links \(library)")
        }
        // And the check can tell: the daemon does link them.
        let daemon = try CommandResult.run("/usr/bin/ldd", [BuiltProducts.path("syncupsd")]).standardOutput
        #expect(daemon.contains("libasound") && daemon.contains("libpocketsphinx"))
    }
}
