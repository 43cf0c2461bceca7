import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// syncupsctl as a shell script uses it: commands that can be chained, `--json` that a program can read
/// whatever happens, and input mistakes caught as usage errors.
@Suite struct ScriptingTests {
    // MARK: - end, then start

    /// A speech command that, once the audio ends, takes a while over its last words (as a real recognizer
    /// does): the save is still in progress when `session.end` has answered.
    /// It says it is up at once, so that `start` does not wait for it (`Context.speechEngineDeadline`).
    static let slowEngine = "echo '{\"type\":\"progress\",\"time\":0}'\ncat > /dev/null\nsleep 1\n"

    @Test func endWaitsForTheSaveSoThatStartCanFollowAtOnce() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in Self.slowEngine }
        let syncUp = try #require(meeting.started["syncup"]?.stringValue)
        let ended = try meeting.daemon.ctl(["end", "--save"])
        #expect(ended.exitCode == 0, "\(ended.standardError)")
        let meetingID = ended.standardOutput.trimmingSuffix("\n")
        // It printed the id of the meeting that is now saved.
        let saved = try meeting.daemon.ctl(["ids", syncUp]).standardOutput
        #expect(meetingID.count == 36 && saved.hasPrefix(meetingID + "\t"), "end printed \(ended.standardOutput)")
        let started = try meeting.daemon.ctl(["start", syncUp])
        #expect(started.exitCode == 0, "\(started.standardError)")
    }

    @Test func endPrintsTheSavedMeetingAsJSON() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in Self.slowEngine }
        let ended = try meeting.daemon.ctl(["--json", "end"])
        #expect(ended.exitCode == 0, "\(ended.standardError)")
        let document = try JSONParser().parse(ended.standardOutput)
        #expect(document["outcome"] == "saved")
        #expect(document["meeting"]?["id"] == meeting.started["meeting"])
    }

    /// A client connecting while the daemon stops (here waiting for the recognizer's last words) is refused at
    /// once, not accepted into a listener nobody reads: syncupsctl waited 4.5 s for a reset (attack 86).
    @Test func aClientConnectingWhileTheDaemonStopsIsRefusedAtOnce() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 600) { directory in
            mkfifo(directory.appending("release"), 0o600)
            return
                "echo '{\"type\":\"progress\",\"time\":0}'\ncat > /dev/null\nread line < '\(directory.appending("release"))'\n"
        }
        meeting.daemon.process.send(SIGTERM)
        #expect(meeting.daemon.log.wait(until: { $0.contains("stopping (SIGTERM)") }), "\(meeting.daemon.log.contents)")
        #expect(throws: SystemError.self, "the stopping daemon's socket still accepted") {
            let fd = try UnixSocket.connect(path: meeting.daemon.socketPath)
            fd.close()
        }
        Files.write(meeting.alsa.directory.appending("release"), "go\n")  // waits for the engine to open it
        #expect(meeting.daemon.waitForExit() == .exited(0))
    }

    @Test func startDuringASaveSaysTheLastMeetingIsStillBeingSaved() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 600) { directory in
            // The recognizer finishes only when the test says so: it waits for a line on a FIFO.
            mkfifo(directory.appending("release"), 0o600)
            return
                "echo '{\"type\":\"progress\",\"time\":0}'\ncat > /dev/null\nread line < '\(directory.appending("release"))'\n"
        }
        let syncUp = try #require(meeting.started["syncup"]?.stringValue)
        let ended = try meeting.daemon.ctl(["end", "--no-wait"])
        #expect(ended.exitCode == 0, "\(ended.standardError)")
        #expect(ended.standardOutput.hasPrefix("saving meeting "))
        let refused = try meeting.daemon.ctl(["start", syncUp])
        #expect(refused.exitCode == 65)
        #expect(
            refused.standardError.contains("the last meeting of \"Solo\" is still being saved"),
            "\(refused.standardError)")
        #expect(!refused.standardError.contains("end it first"))
        Files.write(meeting.alsa.directory.appending("release"), "go\n")  // waits for the engine to open it
        _ = try meeting.client.nextEvent("session.ended", timeout: .seconds(30))
        #expect(try meeting.daemon.ctl(["start", syncUp]).exitCode == 0)
    }

    // MARK: - A broken speech engine

    @Test func sessionAndStatusSayWhyTranscriptionStopped() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in "exec syncups-no-such-engine\n" }
        let error = try meeting.client.nextEvent("session.error", timeout: .seconds(20))
        #expect(error["data"]?["message"]?.stringValue?.contains("127") == true, "\(error)")
        let session = try meeting.daemon.ctl(["session"]).standardOutput
        #expect(session.contains("\ntranscript: stopped: speech recognition failed: "), "\(session)")
        #expect(session.contains("127"), "\(session)")
        let json = try JSONParser().parse(try meeting.daemon.ctl(["--json", "session"]).standardOutput)
        #expect(json["transcription"]?["error"]?.stringValue?.contains("127") == true)
        let status = try meeting.daemon.ctl(["status"]).standardOutput
        #expect(status.contains("\nspeech:    command, stopped: speech recognition failed"), "\(status)")
        #expect(status.contains("\naudio:     virtmic"), "\(status)")
    }

    /// `start` with a speech command that does not exist: the engine fails (status 127) just after the start
    /// reply; `start` says so on stderr and still exits 0, for the meeting goes on.
    @Test(arguments: [false, true]) func startWarnsWhenTheSpeechEngineCannotStart(json: Bool) throws {
        let alsa = try ALSAFixture(microphone: SpeechFixture.silence(seconds: 20))
        let daemon = try DaemonProcess(
            arguments: ["--audio-device", "virtmic", "--no-cue", "--speech-command", "syncups-no-such-engine"],
            environment: alsa.environment)
        let created = try daemon.client().result(
            "syncups.create", ["title": "Solo", "duration": 600, "attendees": ["Ann"]])
        let syncUp = try #require(created["id"]?.stringValue)
        let started = try daemon.ctl((json ? ["--json"] : []) + ["start", syncUp])
        #expect(started.exitCode == 0, "\(started.standardError)")
        #expect(started.standardError.hasPrefix("warning: speech recognition failed: "), "\(started.standardError)")
        #expect(started.standardError.contains("127"), "\(started.standardError)")
        if json {
            let session = try JSONParser().parse(started.standardOutput)
            #expect(session["transcription"]?["state"] == "stopped", "\(started.standardOutput)")
            #expect(session["warnings"]?[0]?.stringValue?.contains("127") == true, "\(started.standardOutput)")
        }
        let status = try daemon.ctl(["status"]).standardOutput
        #expect(status.contains("\naudio:     virtmic, recording\n"), "\(status)")
    }

    @Test func startWaitsForAWorkingEngineOnlyUntilItsFirstLine() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in
            "echo '{\"type\":\"progress\",\"time\":0}'\nexec cat > /dev/null\n"
        }
        let syncUp = try #require(meeting.started["syncup"]?.stringValue)
        #expect(try meeting.daemon.ctl(["end", "--discard"]).exitCode == 0)
        let started = try meeting.daemon.ctl(["--json", "start", syncUp])
        #expect(started.exitCode == 0 && started.standardError.isEmpty, "\(started.standardError)")
        #expect(try JSONParser().parse(started.standardOutput)["transcription"]?["state"] == "running")
        let status = try meeting.daemon.ctl(["status"]).standardOutput
        #expect(status.contains("\nspeech:    command, running\n"), "\(status)")
    }

    @Test func statusWithoutAMeetingNamesTheAudioDeviceAndTheSpeechEngine() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "virtmic", "--speech-command", "cat"])
        let status = try daemon.ctl(["status"]).standardOutput
        #expect(status.contains("\naudio:     virtmic, idle\nspeech:    command, idle\n"), "\(status)")
    }

    // MARK: - Attendee edits

    @Test(arguments: [["Blob="], ["=Blob Jr"], ["Blob=  "]])
    func refusesARenameToOrFromAnEmptyName(rename: [String]) throws {
        let daemon = try DaemonProcess()
        let created = try JSONParser().parse(
            try daemon.ctl(["--json", "add", "T", "--attendee", "Blob", "--attendee", "Ann"]).standardOutput)
        let id = try #require(created["id"]?.stringValue)
        let result = try daemon.ctl(["edit", id, "--rename-attendee"] + rename)
        #expect(result.exitCode == 64, "\(result.standardError)")
        #expect(result.standardError.contains("--rename-attendee"))
        let after = try JSONParser().parse(try daemon.ctl(["--json", "show", id]).standardOutput)
        #expect(after["attendees"]?.arrayValue?.map { $0["name"]?.stringValue } == ["Blob", "Ann"])
    }

    // MARK: - Durations

    @Test func acceptsTheClockItPrintsAndRefusesSharesUnderASecond() throws {
        let daemon = try DaemonProcess()
        let created = try daemon.ctl(["--json", "add", "Clock", "--duration", "1:30", "--attendee", "A"])
        #expect(try JSONParser().parse(created.standardOutput)["duration"] == 90)
        let long = try daemon.ctl(["--json", "add", "Long", "--duration", "1:30:00"])
        #expect(try JSONParser().parse(long.standardOutput)["duration"] == 5400)
        let short = try daemon.ctl([
            "add", "Short", "--duration", "2", "--attendee", "A", "--attendee", "B", "--attendee", "C",
        ])
        #expect(short.exitCode == 65)
        #expect(short.standardError.contains("at least 3 seconds"), "\(short.standardError)")
    }

    // MARK: - watch

    @Test(arguments: [
        (["--format", "waybat"], "waybar"),
        (["--format", "{speakr} left"], "{speaker}"),
        (["--format", "waybar", "--text", "{title} {bogus}"], "{remaining}"),
        (["--format", "json", "--text", "{nope}"], "{title}"),
    ])
    func refusesUnknownWatchFormatsAndPlaceholdersListingTheValidOnes(arguments: [String], listed: String) throws {
        let directory = TemporaryDirectory("nodaemon")
        let result = try CommandResult.run(
            BuiltProducts.path("syncupsctl"), ["watch", "--once"] + arguments,
            environment: ["SYNCUPSD_SOCKET": directory.appending("none.sock")])
        #expect(result.exitCode == 64, "\(result.standardOutput)")
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.contains(listed), "\(result.standardError)")
    }

    @Test func watchFormatNamesIgnoreCase() throws {
        let directory = TemporaryDirectory("nodaemon")
        let result = try CommandResult.run(
            BuiltProducts.path("syncupsctl"), ["watch", "--once", "--format", "WayBar"],
            environment: ["SYNCUPSD_SOCKET": directory.appending("none.sock")])
        #expect(result.exitCode == 0)
        #expect(try JSONParser().parse(result.standardOutput)["class"] == "offline")
    }

    @Test func theEventStreamSaysWhenTheDaemonIsOffline() throws {
        let directory = TemporaryDirectory("nodaemon")
        let watch = try StatusBarTests.Watcher(socket: directory.appending("none.sock"), [])
        #expect(watch.waitForLines(1))
        let event = try JSONParser().parse(try #require(watch.lines.first))
        #expect(event["event"] == "watch.offline")
        #expect(event["data"]?["message"]?.stringValue?.contains("cannot connect") == true, "\(watch.lines)")
    }

    // MARK: - Names

    @Test func namesSyncUpsByTitleAndMeetingsAsLatest() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let design = try #require(
            try client.result("syncups.create", ["title": "Design Review", "attendees": ["Ann"]])["id"]?.stringValue)
        _ = try client.result("syncups.create", ["title": "Daily", "attendees": ["Bob"]])
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        var meetings: [String] = []
        for _ in 0..<2 {
            _ = try client.result("session.start", ["syncup": .string(design), "audio": false])
            _ = try client.result("session.end", ["action": "save"])
            meetings.append(try #require(try client.nextEvent("session.ended")["data"]?["meeting"]?["id"]?.stringValue))
        }
        // A title in any case, or a unique prefix of one.
        #expect(try daemon.ctl(["show", "design review"]).standardOutput.hasPrefix("Design Review  ("))
        #expect(try daemon.ctl(["show", "Des"]).standardOutput.hasPrefix("Design Review  ("))
        let latest = try daemon.ctl(["--json", "meeting", "Design", "latest"])
        #expect(try JSONParser().parse(latest.standardOutput)["id"] == .string(meetings[1]), "\(latest.standardError)")
        let before = try daemon.ctl(["--json", "meeting", "Design", "latest~1"])
        #expect(try JSONParser().parse(before.standardOutput)["id"] == .string(meetings[0]))
        let tooFar = try daemon.ctl(["meeting", "Design", "latest~2"])
        #expect(tooFar.exitCode == 65)
        #expect(tooFar.standardError.contains("has 2 meetings"), "\(tooFar.standardError)")
        // The largest N is an unknown meeting, not an overflow.
        let farthest = try daemon.ctl(["--json", "meeting", "Design", "latest~\(Int.max)"])
        #expect(farthest.exitCode == 65, "\(farthest.standardError)")
        #expect(try JSONParser().parse(farthest.standardOutput)["error"]?["code"] == "not_found")
        // Ambiguous: both titles start with D; the message lists them.
        let ambiguous = try daemon.ctl(["show", "D"])
        #expect(ambiguous.exitCode == 65)
        #expect(ambiguous.standardError.contains("\"Design Review\"") && ambiguous.standardError.contains("\"Daily\""))
        #expect(try daemon.ctl(["start", "daily", "--no-audio"]).exitCode == 0)
        // Deleting takes the whole title (in any case), never its start.
        #expect(try daemon.ctl(["rm-meeting", "Design", "latest", "--yes"]).exitCode == 65)
        #expect(try daemon.ctl(["rm-meeting", "design review", "latest", "--yes"]).exitCode == 0)
        #expect(try daemon.ctl(["ids", "Design"]).standardOutput.hasPrefix(meetings[0] + "\t"))
    }

    // MARK: - rm

    @Test func rmOfASyncUpWithMeetingsOrBeingRecordedNeedsYesInAScript() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let saved = try Self.savedMeeting(daemon)
        let refused = try daemon.ctl(["rm", saved.syncUp])
        #expect(refused.exitCode == 64)
        #expect(refused.standardError.contains("with 1 meeting and its audio; pass --yes"), "\(refused.standardError)")
        #expect(try daemon.ctl(["show", saved.syncUp]).exitCode == 0)
        #expect(try daemon.ctl(["rm", saved.syncUp, "--yes"]).exitCode == 0)

        let created = try JSONParser().parse(
            try daemon.ctl(["--json", "add", "Live", "--attendee", "A"]).standardOutput)
        let live = try #require(created["id"]?.stringValue)
        #expect(try daemon.ctl(["start", live, "--no-audio"]).exitCode == 0)
        #expect(try daemon.ctl(["rm", live]).standardError.contains("the meeting being recorded"))
        // Nothing more to lose: still asked (a history line run twice must not delete quietly).
        let spare = try JSONParser().parse(try daemon.ctl(["--json", "add", "Spare"]).standardOutput)
        let spareRefused = try daemon.ctl(["rm", try #require(spare["id"]?.stringValue)])
        #expect(spareRefused.exitCode == 64)
        #expect(spareRefused.standardError.contains("\"Spare\""), "\(spareRefused.standardError)")
    }

    // MARK: - Small things a user trips on

    @Test func messagesNameTheCommandsOfTheCLI() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let next = try daemon.ctl(["next"])
        #expect(next.standardError.contains("start one with syncupsctl start SYNCUP"), "\(next.standardError)")
        let created = try JSONParser().parse(
            try daemon.ctl(["--json", "add", "Two", "--attendee", "A"]).standardOutput)
        let id = try #require(created["id"]?.stringValue)
        #expect(try daemon.ctl(["start", id, "--no-audio"]).exitCode == 0)
        let again = try daemon.ctl(["start", id, "--no-audio"])
        #expect(again.standardError.contains("end it first (syncupsctl end)"), "\(again.standardError)")
        let absent = try daemon.ctl(["absent", "A"])
        #expect(absent.standardError.contains("syncupsctl next gives it"), "\(absent.standardError)")
        // Programs get the daemon's own words.
        let json = try JSONParser().parse(try daemon.ctl(["--json", "absent", "A"]).standardOutput)
        #expect(json["error"]?["message"]?.stringValue?.contains("session.next gives it") == true)
    }

    @Test func helpForAnUnknownCommandIsAUsageError() throws {
        let result = try CommandResult.run(BuiltProducts.path("syncupsctl"), ["help", "bogus"])
        #expect(result.exitCode == 64)
        #expect(result.standardError.contains("unknown command \"bogus\""))
    }

    @Test func exportFormatsIgnoreCaseAndAnUnwritableOutputExitsCannotCreate() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let saved = try Self.savedMeeting(daemon)
        let upper = try daemon.ctl(["export", saved.syncUp, saved.meeting, "--format", "MD"])
        #expect(upper.exitCode == 0, "\(upper.standardError)")
        #expect(upper.standardOutput.hasPrefix("# Zoned, "))
        let unwritable = try daemon.ctl(["export", saved.syncUp, saved.meeting, "--output", "/nonexistent/x"])
        #expect(unwritable.exitCode == 73, "EX_CANTCREAT")
        #expect(unwritable.standardError.contains("cannot write /nonexistent/x"))
    }

    @Test(arguments: [["add", "Null\u{0}title"], ["add", "Bell", "--attendee", "A\u{7}B"]])
    func refusesControlCharactersInTitlesAndNames(arguments: [String]) throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let reply = try client.request(
            "syncups.create",
            ["title": .string(arguments[1]), "attendees": .array(arguments.dropFirst(3).map(JSONValue.string))])
        #expect(reply["error"]?["code"] == "invalid_argument", "\(reply)")
        #expect(reply["error"]?["message"]?.stringValue?.contains("control character") == true)
    }

    @Test func bareSyncupsctlShowsWhatIsRecordingElseTheSyncUps() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let empty = try daemon.ctl([])
        #expect(empty.exitCode == 0)
        #expect(empty.standardOutput.hasPrefix("no sync-ups yet"))
        let created = try JSONParser().parse(
            try daemon.ctl(["--json", "add", "Design", "--attendee", "Ann"]).standardOutput)
        let id = try #require(created["id"]?.stringValue)
        #expect(try daemon.ctl([]).standardOutput.hasPrefix("ID        TITLE"))
        #expect(try daemon.ctl(["start", id, "--no-audio"]).exitCode == 0)
        let recording = try daemon.ctl([])
        #expect(recording.standardOutput.hasPrefix("recording \"Design\" 00:0"), "\(recording.standardOutput)")
    }

    // MARK: - Time zones

    /// A saved meeting, its sync-up's id and the meeting's date as the daemon sends it (RFC 3339 UTC).
    static func savedMeeting(_ daemon: DaemonProcess) throws -> (syncUp: String, meeting: String, date: String) {
        let client = try daemon.client()
        let created = try client.result("syncups.create", ["title": "Zoned", "attendees": ["Ann"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        _ = try client.result("session.end", ["action": "save"])
        let meeting = try client.nextEvent("session.ended")["data"]?["meeting"]
        return (id, try #require(meeting?["id"]?.stringValue), try #require(meeting?["date"]?.stringValue))
    }

    /// `2026-12-01 15:04 +05:30`: the RFC 3339 UTC instant moved by `offsetMinutes`.
    static func local(_ rfc3339: String, offsetMinutes: Int) throws -> String {
        let instant = try #require(UTCTime.parseRFC3339(rfc3339))
        let shifted = UTCTime(instant.addingTimeInterval(Double(offsetMinutes * 60)))
        let sign = offsetMinutes < 0 ? "-" : "+"
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(shifted.year)-\(two(shifted.month))-\(two(shifted.day)) \(two(shifted.hour)):\(two(shifted.minute)) \(sign)\(two(abs(offsetMinutes) / 60)):\(two(abs(offsetMinutes) % 60))"
    }

    @Test(
        .enabled(if: Files.exists("/usr/share/zoneinfo/Asia/Kolkata")),
        arguments: [("Asia/Kolkata", 330), ("UTC", 0), ("XYZ+3", -180), (":Asia/Kolkata", 330)])
    func printsDatesInTheLocalTimeZoneWithItsOffset(zone: String, offsetMinutes: Int) throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let saved = try Self.savedMeeting(daemon)
        let expected = try Self.local(saved.date, offsetMinutes: offsetMinutes)
        let environment = ["TZ": zone]
        let shown = try daemon.ctl(["show", saved.syncUp], environment: environment).standardOutput
        #expect(shown.contains("  \(expected)  "), "\(shown)")
        let meeting = try daemon.ctl(["meeting", saved.syncUp, saved.meeting], environment: environment)
        #expect(meeting.standardOutput.hasPrefix("Zoned, \(expected)  ("), "\(meeting.standardOutput)")
        let ids = try daemon.ctl(["ids", saved.syncUp], environment: environment).standardOutput
        #expect(ids == "\(saved.meeting)\t\(expected)\n")
        let markdown = try daemon.ctl(["export", saved.syncUp, saved.meeting], environment: environment)
        #expect(markdown.standardOutput.hasPrefix("# Zoned, \(expected)\n"), "\(markdown.standardOutput)")
        // Programs keep RFC 3339 UTC.
        let json = try JSONParser().parse(
            try daemon.ctl(["--json", "meeting", saved.syncUp, saved.meeting], environment: environment)
                .standardOutput)
        #expect(json["date"]?.stringValue == saved.date)
    }

    // MARK: - --json whatever happens

    @Test(arguments: [
        (["bogus"], 64, "usage"),
        (["show"], 64, "usage"),
        (["add", "x", "--duration", "soon"], 64, "usage"),
        (["show", "FFFFFFFF"], 65, "not_found"),
        (["add", "x", "--theme", "mauve"], 65, "invalid_argument"),
        (["call", "dance"], 65, "unknown_command"),
        (["next"], 65, "no_session"),
        (["--timeout"], 64, "usage"),
    ])
    func printsOneJSONErrorDocumentWithTheSameExitStatus(arguments: [String], status: CInt, code: String) throws {
        let daemon = try DaemonProcess()
        let result = try daemon.ctl(["--json"] + arguments)
        #expect(result.exitCode == status)
        let document = try JSONParser().parse(result.standardOutput)
        #expect(document["ok"] == false)
        #expect(document["error"]?["code"]?.stringValue == code, "\(result.standardOutput)")
        #expect(document["error"]?["message"]?.stringValue?.isEmpty == false)
    }

    @Test func printsAJSONErrorWhenNoDaemonRuns() throws {
        let directory = TemporaryDirectory("nodaemon")
        let result = try CommandResult.run(
            BuiltProducts.path("syncupsctl"), ["status", "--json"],
            environment: ["SYNCUPSD_SOCKET": directory.appending("none.sock")])
        #expect(result.exitCode == 69)
        let document = try JSONParser().parse(result.standardOutput)
        #expect(document["ok"] == false)
        #expect(document["error"]?["code"] == "unavailable")
    }

    @Test func printsIdsAsJSON() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let saved = try Self.savedMeeting(daemon)
        let syncUps = try JSONParser().parse(try daemon.ctl(["--json", "ids"]).standardOutput)
        #expect(syncUps == [["id": .string(saved.syncUp), "title": "Zoned"]])
        let meetings = try JSONParser().parse(try daemon.ctl(["--json", "ids", saved.syncUp]).standardOutput)
        #expect(meetings == [["id": .string(saved.meeting), "date": .string(saved.date)]])
    }

    @Test func printsOneJSONDocumentForHelpAndVersion() throws {
        for arguments in [["--json", "--version"], ["--json", "help"], ["--json", "help", "end"]] {
            let result = try CommandResult.run(BuiltProducts.path("syncupsctl"), arguments)
            #expect(result.exitCode == 0)
            #expect(throws: Never.self, "\(arguments)") { try JSONParser().parse(result.standardOutput) }
        }
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
