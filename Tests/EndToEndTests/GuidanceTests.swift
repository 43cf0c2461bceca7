import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// syncupsctl for a person (issue 31): what a new user trips on, each through the built binaries.
@Suite struct GuidanceTests {
    /// A saved meeting of "Quick" (audio off), for the commands that name one.
    static func quickMeeting(_ daemon: DaemonProcess) throws -> String {
        let client = try daemon.client()
        let syncUp = try client.result("syncups.create", ["title": "Quick", "attendees": ["Ann"]])
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": syncUp["id"] ?? .null, "audio": false])
        _ = try client.result("session.end", ["action": "save"])
        return try #require(client.nextEvent("session.ended")["data"]?["meeting"]?["id"]?.stringValue)
    }

    /// A topic the daemon refuses is a usage error at once, not an endless wait that looks like an outage.
    @Test func aMistypedWatchTopicExitsAsAUsageError() throws {
        let daemon = try DaemonProcess()
        let watch = try Subprocess(
            executable: BuiltProducts.path("syncupsctl"),
            arguments: ["--socket", daemon.socketPath, "watch", "--topic", "sesion"],
            standardOutput: .pipe, standardError: .pipe)
        let output = try OutputCollector(watch.standardOutput!, name: "watch-out")
        let errors = try OutputCollector(watch.standardError!, name: "watch-err")
        let ended = try waitFor(timeout: .seconds(10)) { watch.hasEnded }
        if !ended { watch.send(SIGTERM) }
        let status = watch.wait()
        output.join()
        errors.join()
        watch.closeStreams()
        #expect(ended, "watch kept waiting")
        #expect(status == .exited(64))
        #expect(errors.contents.contains("unknown topic \"sesion\""), "\(errors.contents)")
        #expect(!output.contents.contains("watch.offline"))
    }

    /// `rm-meeting` asks on a terminal, as `rm` does, and needs `--yes` elsewhere.
    @Test func rmMeetingAsksOnATerminalAndNeedsYesElsewhere() throws {
        let daemon = try DaemonProcess()
        let meeting = try Self.quickMeeting(daemon)
        let refused = try daemon.ctl(["rm-meeting", "Quick", "latest"])
        #expect(refused.exitCode == 64)
        #expect(refused.standardError.contains("pass --yes"), "\(refused.standardError)")
        let declined = try daemon.ctlOnTerminal(["rm-meeting", "Quick", "latest"], input: "n\n")
        #expect(declined.exitCode == 1)
        #expect(declined.standardOutput.contains("[y/N]"), "\(declined.standardOutput)")
        #expect(declined.standardOutput.contains("nothing deleted"))
        #expect(try daemon.ctl(["ids", "Quick"]).standardOutput.hasPrefix(meeting))
        let accepted = try daemon.ctlOnTerminal(["rm-meeting", "Quick", "latest"], input: "y\n")
        #expect(accepted.exitCode == 0, "\(accepted.standardOutput)")
        #expect(try daemon.ctl(["ids", "Quick"]).standardOutput == "")
    }

    /// The export's format follows the output file's extension; a contradicting `--format` is a usage error.
    @Test func exportTakesItsFormatFromTheOutputsExtension() throws {
        let daemon = try DaemonProcess()
        _ = try Self.quickMeeting(daemon)
        let directory = TemporaryDirectory("export")
        let json = directory.appending("out.json")
        #expect(try daemon.ctl(["export", "quick", "latest", "--output", json]).exitCode == 0)
        #expect(try JSONParser().parse(try #require(Files.readString(json)))["id"] != nil)
        let conflicting = try daemon.ctl([
            "export", "quick", "latest", "--format", "md", "--output", directory.appending("out.vtt"),
        ])
        #expect(conflicting.exitCode == 64)
        #expect(conflicting.standardError.contains("contradicts --output"), "\(conflicting.standardError)")
        let markdown = directory.appending("notes.txt")
        #expect(try daemon.ctl(["export", "quick", "latest", "--output", markdown]).exitCode == 0)
        #expect(try #require(Files.readString(markdown)).hasPrefix("# Quick, "))
    }

    /// The keys `watch --help` and the man page give for each JSON format are the keys it prints.
    @Test(arguments: ["json", "waybar", "i3blocks"])
    func theDocumentedKeysOfEachJSONFormatAreTheOnesPrinted(format: String) throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let syncUp = try client.result("syncups.create", ["title": "Keys", "attendees": ["Ann"]])
        _ = try client.result("session.start", ["syncup": syncUp["id"] ?? .null, "audio": false])
        let line = try daemon.ctl(["watch", "--once", "--format", format]).standardOutput
        guard case .object(let object) = try JSONParser().parse(line) else {
            throw TestFailure("not an object: \(line)")
        }
        let printed = Set(object.keys)

        func quotedKeys(_ text: Substring) -> Set<String> {
            guard let open = text.firstIndex(of: "{"), let close = text[open...].firstIndex(of: "}") else { return [] }
            return Set(
                text[open...close].split(separator: "\"").enumerated().filter { $0.offset % 2 == 1 }.map {
                    String($0.element)
                })
        }
        let help = try CommandResult.run(BuiltProducts.path("syncupsctl"), ["watch", "--help"]).standardOutput
        let helpLine = try #require(help.split(separator: "\n").first { $0.contains("--format \(format) ") })
        #expect(quotedKeys(helpLine) == printed, "watch --help: \(helpLine)")
        let man = try #require(Files.readString(BuiltProducts.repositoryRoot + "/man/syncupsctl.1.scd"))
        let section = try #require(man.range(of: "\n*\(format)*\n"))
        #expect(quotedKeys(man[section.upperBound...]) == printed, "syncupsctl(1) on \(format)")
    }

    /// `make` renders the man pages (man -l on the scdoc sources shows raw markup).
    @Test func makeRendersTheManPages() throws {
        let dryRun = try CommandResult.run(
            "/usr/bin/make", ["-C", BuiltProducts.repositoryRoot, "--dry-run", "--always-make"])
        for page in ["syncupsctl.1", "syncupsd.8", "syncupsd.conf.5"] {
            #expect(dryRun.standardOutput.contains("scdoc < man/\(page).scd > .build/man/\(page)"), "\(page)")
        }
    }

    /// A near miss gets the nearest command, option or theme, as git suggests.
    @Test(arguments: [
        (["strat", "Design"], 64, "did you mean \"start\"?"),
        (["lsit"], 64, "did you mean \"list\"?"),
        (["--jsno", "list"], 64, "unknown option --jsno (did you mean \"--json\"?)"),
        (["edit", "Design", "--them", "orange"], 64, "did you mean \"--theme\"?"),
        (["add", "Design", "--theme", "oragne"], 65, "did you mean \"orange\"?"),
    ])
    func suggestsTheNearestName(arguments: [String], status: CInt, suggestion: String) throws {
        let daemon = try DaemonProcess()
        let result = try daemon.ctl(arguments)
        #expect(result.exitCode == status)
        #expect(result.standardError.contains(suggestion), "\(result.standardError)")
    }

    /// The daemon's flags and configuration keys get the same suggestion.
    @Test func suggestsTheNearestOptionOrKeyOfTheDaemon() throws {
        let flag = try CommandResult.run(BuiltProducts.path("syncupsd"), ["--no-config", "--audio-devcie", "null"])
        #expect(flag.exitCode != 0)
        #expect(flag.standardError.contains("did you mean \"--audio-device\"?"), "\(flag.standardError)")
        let directory = TemporaryDirectory("config")
        let file = directory.appending("syncupsd.conf")
        Files.write(file, "audio-devcie = null\n")
        let key = try CommandResult.run(BuiltProducts.path("syncupsd"), ["--config", file])
        #expect(key.exitCode != 0)
        #expect(key.standardError.contains("did you mean \"audio-device\"?"), "\(key.standardError)")
    }

    /// Durations as `list` prints them are accepted; a bare number under a minute is seconds, with a warning.
    @Test func acceptsDurationsAsListPrintsThemAndWarnsOnSeconds() throws {
        let daemon = try DaemonProcess()
        #expect(try daemon.ctl(["add", "Fifteen", "--duration", "15 min"]).exitCode == 0)
        #expect(try daemon.ctl(["show", "Fifteen"]).standardOutput.contains("length:     15 min"))
        #expect(try daemon.ctl(["add", "Ninety", "--duration", "1 min 30 s"]).exitCode == 0)
        #expect(try daemon.ctl(["show", "Ninety"]).standardOutput.contains("length:     1 min, 30 secs"))
        #expect(try daemon.ctl(["edit", "Ninety", "--duration", "1 hr, 30 min"]).exitCode == 0)
        let seconds = try daemon.ctl(["add", "Ten", "--duration", "10"])
        #expect(seconds.exitCode == 0)
        #expect(seconds.standardError.contains("warning: 10 seconds; did you mean 10m?"), "\(seconds.standardError)")
        let zero = try daemon.ctl(["add", "Zero", "--duration", "0"])
        #expect(zero.exitCode == 65)
        #expect(!zero.standardError.contains("warning"), "no minutes to suggest: \(zero.standardError)")
    }

    /// The small things of item 13: `meeting` defaults to the latest, `status` counts in the singular,
    /// `--timeout 0` waits as long as it takes, `end` says a sentence on a terminal, and the log says a
    /// meeting was discarded as it says one was saved.
    @Test func smallThingsAPersonNotices() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let meeting = try Self.quickMeeting(daemon)
        let latest = try daemon.ctl(["meeting", "Quick"])
        #expect(latest.exitCode == 0, "\(latest.standardError)")
        #expect(latest.standardOutput.hasPrefix("Quick, ") && latest.standardOutput.contains(meeting))
        #expect(try daemon.ctl(["status"]).standardOutput.contains("(1 meeting)\n"))
        let unlimited = try daemon.ctl(["--timeout", "0", "ping"])
        #expect(unlimited.exitCode == 0, "\(unlimited.standardError)")
        #expect(try daemon.ctl(["start", "Quick"]).exitCode == 0)
        let saved = try daemon.ctlOnTerminal(["end"])
        #expect(saved.exitCode == 0)
        #expect(saved.standardOutput.contains("saved meeting "), "\(saved.standardOutput)")
        #expect(try daemon.ctl(["start", "Quick"]).exitCode == 0)
        #expect(try daemon.ctl(["end", "--discard"]).exitCode == 0)
        #expect(daemon.log.wait { $0.contains("discarded a meeting of \"Quick\"") })
    }

    /// `cue = no` in the file is a flag's usual spelling, not an error.
    @Test(arguments: ["no", "off", "Yes", "1"])
    func acceptsTheUsualSpellingsOfAFlagInTheFile(value: String) throws {
        let config = TemporaryDirectory("config")
        let file = config.appending("syncupsd.conf")
        Files.write(file, "cue = \(value)\n")
        let daemon = try DaemonProcess(arguments: ["--config", file])
        #expect(try daemon.ctl(["ping"]).exitCode == 0)
    }

    /// Blanks are refused by the daemon (for every client); look-alike names and titles get a warning.
    @Test func refusesBlanksAndWarnsAboutLookalikes() throws {
        let daemon = try DaemonProcess()
        let blank = try daemon.ctl(["add", "  "])
        #expect(blank.exitCode == 65)
        #expect(blank.standardError.contains("title: is blank"), "\(blank.standardError)")
        #expect(try daemon.ctl(["add", "Design", "--attendee", "Bob"]).exitCode == 0)
        let blankTitle = try daemon.ctl(["edit", "Design", "--title", ""])
        #expect(blankTitle.exitCode == 65)
        #expect(try daemon.ctl(["show", "Design"]).exitCode == 0)
        let blankName = try daemon.ctl(["edit", "Design", "--add-attendee", ""])
        #expect(blankName.exitCode == 65)
        #expect(blankName.standardError.contains("is blank"), "\(blankName.standardError)")

        let anns = try daemon.ctl(["add", "Anns", "--attendee", "Ann", "--attendee", "ann", "--attendee", "Ann "])
        #expect(anns.exitCode == 0)
        #expect(anns.standardError.contains("differ only by case, accents or spaces"), "\(anns.standardError)")
        let twin = try daemon.ctl(["add", "design"])
        #expect(twin.exitCode == 0)
        #expect(
            twin.standardError.contains("differs only by case, accents or spaces; write the title exactly"),
            "\(twin.standardError)")
        let same = try daemon.ctl(["add", "design"])
        #expect(same.standardError.contains("has the same title; name each by its id"), "\(same.standardError)")
    }

    /// Wide characters take two columns: the columns after a title line up however it is written.
    @Test func tablesLineUpWithWideCharacters() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let titles = ["Abcd", "日本", "🚀🚀"]
        for title in titles {
            _ = try client.result("syncups.create", ["title": .string(title), "attendees": ["Ann"]])
        }
        let lines = try daemon.ctl(["list"]).standardOutput.split(separator: "\n").dropFirst()
        let rests = titles.map { title in
            lines.first { $0.contains(title) }.map { String($0.split(separator: title)[1]) }
        }
        #expect(Set(rests).count == 1, "\(lines)")
    }

    /// `{turnRemaining}` is the current speaker's time left; `{remaining}` the meeting's.
    @Test func aTemplateShowsTheSpeakersTimeLeft() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let syncUp = try client.result(
            "syncups.create", ["title": "Turns", "duration": 540, "attendees": ["Ann", "Bob", "Cy"]])
        _ = try client.result("session.start", ["syncup": syncUp["id"] ?? .null, "audio": false])
        let paused = try client.result("session.pause")
        // However many ticks came before the pause.
        let elapsed = Int(try #require(paused["secondsElapsed"]?.numberValue?.int64))
        let line = try daemon.ctl(["watch", "--once", "--format", "{speaker} {turnRemaining} of {remaining}"])
        #expect(
            line.standardOutput
                == "Ann \(DurationText.clock(180 - elapsed)) of \(DurationText.clock(540 - elapsed))\n",
            "\(line.standardOutput)")
        _ = try client.result("session.next")
        _ = try client.result("session.next")
        let last = try daemon.ctl(["watch", "--once", "--format", "{speaker} {turnRemaining} of {remaining}"])
        #expect(last.standardOutput == "Cy 03:00 of 03:00\n", "\(last.standardOutput)")
    }

    /// What a new user tripped on in a week of stand-ups: `export` without a meeting exports the latest, and
    /// an attendee is named as loosely as a sync-up (`--remove-attendee ann`).
    @Test func exportDefaultsToTheLatestAndAttendeesMatchLoosely() throws {
        let daemon = try DaemonProcess()
        _ = try Self.quickMeeting(daemon)
        let exported = try daemon.ctl(["export", "quick"])
        #expect(exported.exitCode == 0, "\(exported.standardError)")
        #expect(exported.standardOutput.hasPrefix("# Quick, "))
        #expect(try daemon.ctl(["edit", "quick", "--add-attendee", "Chloé"]).exitCode == 0)
        let removed = try daemon.ctl(["edit", "quick", "--remove-attendee", "chloe", "--rename-attendee", "ann=Anna"])
        #expect(removed.exitCode == 0, "\(removed.standardError)")
        #expect(try daemon.ctl(["show", "quick"]).standardOutput.contains("attendees:  Anna\n"))
    }

    // MARK: - What an attacker and a new user found

    /// A `--timeout` past a day (poll's milliseconds overflow at 2147484 s) is a usage error, never a crash.
    @Test(arguments: ["2147484", "1e10", "inf", "nan", "86401", "-1"])
    func aTimeoutPastADayIsAUsageError(timeout: String) throws {
        let daemon = try DaemonProcess()
        let result = try daemon.ctl(["--timeout", timeout, "ping"])
        #expect(result.exitCode == 64, "\(result.status) \(result.standardError)")
        #expect(result.standardError.contains("--timeout needs a number of seconds up to 86400"))
        #expect(try daemon.ctl(["--timeout=86400", "ping"]).exitCode == 0)
    }

    /// A daemon at its connection limit is busy, not gone: syncupsctl says it refused and why (status 75, no
    /// hint to start it), and the bars show it busy.
    @Test func aDaemonAtItsConnectionLimitIsBusyNotOffline() throws {
        let daemon = try DaemonProcess(arguments: ["--max-connections", "1"])
        let holder = try daemon.client()
        _ = try holder.result("ping")
        let refused = try daemon.ctl(["ping"])
        #expect(refused.exitCode == 75, "\(refused.standardError)")
        #expect(refused.standardError.contains("refused the connection"), "\(refused.standardError)")
        #expect(refused.standardError.contains("already serves 1 connection"), "\(refused.standardError)")
        #expect(!refused.standardError.contains("start the daemon"), "\(refused.standardError)")
        let json = try JSONParser().parse(try daemon.ctl(["--json", "ping"]).standardOutput)
        #expect(json["error"]?["code"] == "too_many_connections", "\(json)")
        let bar = try daemon.ctl(["watch", "--format", "waybar", "--once"])
        let line = try JSONParser().parse(bar.standardOutput)
        #expect(line["class"] == "busy", "\(bar.standardOutput)")
        #expect(
            line["tooltip"] == "syncupsd refused the connection: the daemon already serves 1 connection",
            "\(bar.standardOutput)")
        #expect(!bar.standardOutput.contains("not running"))
    }

    /// The daemon answered nothing in time, but the socket connected: it runs, so no hint to start it.
    @Test func aTimeoutAfterConnectingGivesNoHintToStartTheDaemon() throws {
        let directory = TemporaryDirectory("silent")
        let path = directory.appending("socket")
        let listener = try UnixSocket.listen(path: path)
        defer { listener.close() }
        let result = try CommandResult.run(
            BuiltProducts.path("syncupsctl"), ["--socket", path, "--timeout", "0.001", "ping"])
        #expect(result.exitCode == 69, "\(result.standardError)")
        #expect(result.standardError.contains("did not answer within"), "\(result.standardError)")
        #expect(!result.standardError.contains("start the daemon"), "\(result.standardError)")
        let missing = try CommandResult.run(
            BuiltProducts.path("syncupsctl"), ["--socket", directory.appending("none"), "ping"])
        #expect(missing.standardError.contains("hint: start the daemon"), "\(missing.standardError)")
    }

    /// `watch` options the chosen format would ignore are usage errors naming the conflict.
    @Test(arguments: [
        (["watch", "--text", "{title}"], "--text"),
        (["watch", "--idle-text", "free"], "--idle-text"),
        (["watch", "--offline-text", "down"], "--offline-text"),
        (["watch", "--topic", "session", "--format", "tmux"], "--topic"),
        (["watch", "--format", "{title}", "--text", "{speaker}"], "--text"),
    ])
    func watchOptionsTheFormatIgnoresAreUsageErrors(arguments: [String], option: String) throws {
        let daemon = try DaemonProcess()
        // --once: the old code, ignoring the option, printed one line (or refused --once) instead of waiting.
        let result = try daemon.ctl(arguments + ["--once"])
        #expect(result.exitCode == 64, "\(arguments): \(result.standardOutput)")
        #expect(result.standardError.contains(option), "\(result.standardError)")
    }

    /// `export --output -` writes to standard output, not to a file named `-`.
    @Test func exportToDashIsStandardOutput() throws {
        let daemon = try DaemonProcess()
        _ = try Self.quickMeeting(daemon)
        let directory = TemporaryDirectory("dash")
        let result = try CommandResult.run(
            "/bin/sh",
            [
                "-c", "cd \"$1\" && exec \"$2\" export quick --output -", "sh", directory.path,
                BuiltProducts.path("syncupsctl"),
            ],
            environment: ["SYNCUPSD_SOCKET": daemon.socketPath])
        #expect(result.exitCode == 0, "\(result.standardError)")
        #expect(result.standardOutput.hasPrefix("# Quick, "), "\(result.standardOutput)")
        #expect(!Files.exists(directory.appending("-")))
    }

    /// The Markdown export has one paragraph per speaker turn, as the man page says: a speaker's consecutive
    /// phrases together.
    @Test func markdownHasOneParagraphPerSpeakerTurn() throws {
        let directory = TemporaryDirectory("paragraphs")
        let syncUp = SyncUp.realistic(index: 0, meetingCount: 1, transcriptBytes: 16)
        let meeting = syncUp.meetings[0].id
        let data = directory.dataDirectory(holding: [syncUp])
        let ann = #"{"id":"A0000000-0000-0000-0000-000000000001","name":"Ann"}"#
        let bob = #"{"id":"B0000000-0000-0000-0000-000000000002","name":"Bob"}"#
        let segments = [(ann, "yesterday i finished"), (ann, "the review"), (bob, "no blockers"), (ann, "one more")]
            .enumerated().map { index, segment in
                #"{"speaker":\#(segment.0),"start":\#(index),"end":\#(index + 1),"text":"\#(segment.1)","words":[]}"#
            }
        Files.write(
            data + "/meetings/\(meeting).json",
            #"{"meeting":"\#(meeting)","syncup":"\#(syncUp.id)","interrupted":false,"attendees":[],"segments":["#
                + segments.joined(separator: ",") + "]}")
        let daemon = try DaemonProcess(arguments: ["--speech-engine", "none"], directory: directory)
        let markdown = try daemon.ctl(["export", syncUp.id.description, "latest"]).standardOutput
        #expect(
            markdown.contains(
                "\n\n**Ann:** yesterday i finished the review\n\n**Bob:** no blockers\n\n**Ann:** one more\n\n"),
            "\(markdown)")
    }

    /// The man page shows `ids`' meeting dates as `ids` prints them: local time with its offset, not UTC.
    @Test(.enabled(if: Files.exists("/usr/share/zoneinfo/Asia/Kolkata")))
    func idsDatesAreDocumentedAsPrinted() throws {
        let man = try #require(Files.readString(BuiltProducts.repositoryRoot + "/man/syncupsctl.1.scd"))
        let entry = try #require(man.firstRange(of: "*ids* [_ID_").map { man[$0.lowerBound...].prefix(600) })
        let documented = try #require(entry.firstMatch(of: /\d{4}-\d\d-\d\d \d\d:\d\d [+-]\d\d:\d\d/), "\(entry)")
        #expect(!entry.contains("UTC_"), "\(entry)")
        let daemon = try DaemonProcess()
        let meeting = try Self.quickMeeting(daemon)
        let ids = try daemon.ctl(["ids", "Quick"], environment: ["TZ": "Asia/Kolkata"]).standardOutput
        let printed = try #require(ids.firstMatch(of: /\t(.+)\n/)?.1, "\(ids)")
        #expect(ids.hasPrefix(meeting + "\t"))
        #expect(printed.wholeMatch(of: /\d{4}-\d\d-\d\d \d\d:\d\d \+05:30/) != nil, "\(ids)")
        #expect(documented.output.count == printed.count, "the documented example has the printed shape")
    }

    /// `show` escapes bidirectional controls (U+202E would reorder the rest of the line) as other controls.
    @Test func showEscapesBidiControls() throws {
        let daemon = try DaemonProcess()
        _ = try daemon.client().result(
            "syncups.create", ["title": "Pay\u{202E}lmth.exe", "attendees": ["Ann\u{2067}x"]])
        let shown = try daemon.ctl(["show", "Pay"])
        #expect(shown.exitCode == 0, "\(shown.standardError)")
        #expect(!shown.standardOutput.unicodeScalars.contains { [0x202E, 0x2067].contains($0.value) })
        #expect(shown.standardOutput.hasPrefix("Pay\u{FFFD}lmth.exe  ("), "\(shown.standardOutput)")
    }
}
