import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// `syncupsctl watch` as status bars run it, checked line by line against a scripted meeting.
@Suite struct StatusBarTests {
    final class Watcher {
        let process: Subprocess
        let output: OutputCollector

        convenience init(_ daemon: DaemonProcess, _ arguments: [String], clicks: Bool = false) throws {
            try self.init(socket: daemon.socketPath, arguments, clicks: clicks)
        }

        init(socket: String, _ arguments: [String], clicks: Bool = false) throws {
            process = try Subprocess(
                executable: BuiltProducts.path("syncupsctl"),
                arguments: ["--socket", socket, "watch"] + arguments,
                standardInput: clicks ? .pipe : .null,
                standardOutput: .pipe,
                standardError: .null
            )
            output = try OutputCollector(process.standardOutput!)
        }

        deinit {
            process.send(SIGTERM)
            _ = process.wait()
            output.join()
            process.closeStreams()
        }

        var lines: [String] {
            output.contents.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }

        func waitForLines(_ count: Int, timeout: Duration = .seconds(20)) -> Bool {
            output.wait(timeout: timeout) { $0.split(separator: "\n", omittingEmptySubsequences: false).count > count }
        }

        func waitForLine(_ matching: @escaping (String) -> Bool) -> Bool {
            output.wait { $0.split(separator: "\n").contains { matching(String($0)) } }
        }
    }

    @Test func followsAMeetingAndADaemonRestartInEveryBarFormat() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let waybar = try Watcher(daemon, ["--format", "waybar"])
        let polybar = try Watcher(daemon, ["--format", "polybar"])
        let i3blocks = try Watcher(daemon, ["--format", "i3blocks"])
        let template = try Watcher(
            daemon, ["--format", "{title}|{speaker}|{elapsed}|{progress}%", "--idle-text", "nothing"])
        let watchers = [waybar, polybar, i3blocks, template]
        for watcher in watchers { #expect(watcher.waitForLines(1)) }

        let client = try daemon.client()
        let created = try client.result(
            "syncups.create",
            ["title": "R&D <Core>", "duration": 4, "attendees": ["Ann & Bob", "Cy"], "theme": "navy"])
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": created["id"]!, "audio": false])
        _ = try client.nextEvent("session.ended")
        for watcher in watchers { #expect(watcher.waitForLines(7)) }

        #expect(
            waybar.lines == [
                #"{"text":"no meeting","alt":"idle","tooltip":"No meeting is being recorded","class":"idle","percentage":0}"#,
                #"{"text":"Ann &amp; Bob 1/2 · 00:04","alt":"running","tooltip":"R&amp;D &lt;Core&gt;\rAnn &amp; Bob is speaking, 1 of 2\r00:00 elapsed, 00:04 left","class":"running","percentage":0}"#,
                #"{"text":"Ann &amp; Bob 1/2 · 00:03","alt":"running","tooltip":"R&amp;D &lt;Core&gt;\rAnn &amp; Bob is speaking, 1 of 2\r00:01 elapsed, 00:03 left","class":"running","percentage":25}"#,
                #"{"text":"Cy 2/2 · 00:02","alt":"running","tooltip":"R&amp;D &lt;Core&gt;\rCy is speaking, 2 of 2\r00:02 elapsed, 00:02 left","class":"running","percentage":50}"#,
                #"{"text":"Cy 2/2 · 00:01","alt":"running","tooltip":"R&amp;D &lt;Core&gt;\rCy is speaking, 2 of 2\r00:03 elapsed, 00:01 left","class":"running","percentage":75}"#,
                #"{"text":"Cy 2/2 · 00:00 (ending)","alt":"ending","tooltip":"R&amp;D &lt;Core&gt;\rCy has the floor (ending), 2 of 2\r00:04 elapsed, 00:00 left","class":"ending","percentage":100}"#,
                #"{"text":"no meeting","alt":"idle","tooltip":"No meeting is being recorded","class":"idle","percentage":0}"#,
            ]
        )
        #expect(
            polybar.lines == [
                "no meeting",
                "%{B#001441}%{F#FFFFFF} Ann & Bob 1/2 · 00:04 %{F-}%{B-}",
                "%{B#001441}%{F#FFFFFF} Ann & Bob 1/2 · 00:03 %{F-}%{B-}",
                "%{B#001441}%{F#FFFFFF} Cy 2/2 · 00:02 %{F-}%{B-}",
                "%{B#001441}%{F#FFFFFF} Cy 2/2 · 00:01 %{F-}%{B-}",
                "%{B#001441}%{F#FFFFFF} Cy 2/2 · 00:00 (ending) %{F-}%{B-}",
                "no meeting",
            ]
        )
        #expect(i3blocks.lines.count == 7)
        #expect(
            i3blocks.lines[3]
                == ##"{"full_text":"<span background='#001441' foreground='#FFFFFF'> Cy 2/2 · 00:02 </span>","short_text":"<span background='#001441' foreground='#FFFFFF'> 00:02 </span>","markup":"pango","urgent":false}"##
        )
        #expect(i3blocks.lines[5].hasSuffix(#""urgent":true}"#))
        #expect(
            template.lines == [
                "nothing", "R&D <Core>|Ann & Bob|00:00|0%", "R&D <Core>|Ann & Bob|00:01|25%", "R&D <Core>|Cy|00:02|50%",
                "R&D <Core>|Cy|00:03|75%", "R&D <Core>|Cy|00:04|100%", "nothing",
            ])

        // The daemon goes away: a visible offline line, then back to normal once it returns.
        #expect(daemon.stop() == .exited(0))
        for watcher in watchers { #expect(watcher.waitForLines(8)) }
        #expect(
            waybar.lines[7]
                == #"{"text":"syncupsd offline","alt":"offline","tooltip":"syncupsd is not running","class":"offline","percentage":0}"#
        )
        #expect(polybar.lines[7] == "syncupsd offline")
        let restarted = try DaemonProcess(
            arguments: ["--audio-device", "null", "--no-cue"], directory: daemon.directory)
        _ = restarted
        for watcher in watchers { #expect(watcher.waitForLines(9)) }
        #expect(waybar.lines[8] == waybar.lines[0])
        #expect(template.lines[8] == "nothing")
        #expect(waybar.lines.allSatisfy { !$0.isEmpty })
    }

    @Test func takesClicksFromI3blocksOnStdin() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let block = try Watcher(daemon, ["--format", "i3blocks"], clicks: true)
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create", ["title": "Design", "duration": 600, "attendees": ["Ann", "Cy"]])
        _ = try client.result("session.start", ["syncup": created["id"]!, "audio": false])
        #expect(block.waitForLine { $0.contains("Ann 1/2") })
        try block.process.standardInput!.writeAll(Array(#"{"name":"syncups","button":1,"x":10,"y":5}"#.utf8) + [0x0A])
        #expect(block.waitForLine { $0.contains("Cy 2/2") })
        try block.process.standardInput!.writeAll(Array("3\n".utf8))
        #expect(try waitFor { try client.result("session.get")["state"] == "paused" })
        try block.process.standardInput!.writeAll(Array("3\n".utf8))
        #expect(try waitFor { try client.result("session.get")["state"] == "running" })
        // Two clicks in one read: pause, then pass the floor at the last speaker, which asks to end. (`next`
        // alone ends too: the pause on the way shows the first click was handled.)
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["session"], "snapshot": false])
        try block.process.standardInput!.writeAll(Array("3\n1\n".utf8))
        var events: [String] = []
        while events.last != "session.ending" {
            if let name = try watcher.readJSON()["event"]?.stringValue, name != "session.tick" { events.append(name) }
        }
        #expect(events == ["session.paused", "session.ending"])
    }

    @Test func printsOneLineWithOnceForTmux() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        #expect(try daemon.ctl(["watch", "--format", "tmux", "--once"]).standardOutput == "no meeting\n")
        let offline = try CommandResult.run(
            BuiltProducts.path("syncupsctl"), ["--socket", "/nonexistent", "watch", "--format", "waybar", "--once"])
        #expect(offline.exitCode == 0)
        #expect(offline.standardOutput.contains(#""class":"offline""#))
        // The global options in the --name=value form the completions offer.
        let pinged = try CommandResult.run(
            BuiltProducts.path("syncupsctl"), ["--socket=" + daemon.socketPath, "--timeout=5", "ping"])
        #expect(pinged.exitCode == 0, "\(pinged.standardError)")
        // The event stream has no one-line form: it printed the word "events" as a template.
        let events = try daemon.ctl(["watch", "--once"])
        #expect(events.exitCode == 64)
        #expect(events.standardOutput == "")
    }

    @Test func saysOfflineInTheUsersWords() throws {
        let offline = try CommandResult.run(
            BuiltProducts.path("syncupsctl"),
            ["--socket", "/nonexistent", "watch", "--format", "polybar", "--once", "--offline-text", "—"])
        #expect(offline.standardOutput == "—\n")
    }

    @Test func togglesPauseAndResumeWithOneCommand() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        #expect(try daemon.ctl(["toggle"]).standardError.contains("no_session"))
        let created = try client.result("syncups.create", ["title": "Design", "duration": 600, "attendees": ["Ann"]])
        _ = try client.result("session.start", ["syncup": created["id"]!, "audio": false])
        #expect(try daemon.ctl(["--json", "toggle"]).standardOutput.contains(#""state":"paused""#))
        #expect(try client.result("session.get")["state"] == "paused")
        #expect(try daemon.ctl(["--json", "toggle"]).standardOutput.contains(#""state":"running""#))
        #expect(try client.result("session.get")["state"] == "running")
    }

    /// The README's main block in the real i3blocks (Debian 12 ships 1.4, which drops `background`): the line it
    /// hands i3bar still carries the theme's colours and the markup flag, so the text is not black on black.
    @Test(.enabled(if: Files.exists("/usr/bin/i3blocks"), "i3blocks is not installed (make deps-test installs it)"))
    func theMainI3blocksBlockKeepsTheThemeColoursInTheRealI3blocks() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create", ["title": "Design", "duration": 600, "attendees": ["Ann", "Cy"], "theme": "orange"])
        _ = try client.result("session.start", ["syncup": created["id"]!, "audio": false])

        // The first block of contrib/i3blocks/syncups, as shipped, pointed at this daemon.
        let shipped = Files.readString(BuiltProducts.repositoryRoot + "/contrib/i3blocks/syncups") ?? ""
        let block = shipped.split(separator: "\n").drop { $0 != "[syncups]" }.prefix { !$0.isEmpty }
            .filter { !$0.hasPrefix("#") }.joined(separator: "\n")
        #expect(block.contains("command=exec syncupsctl watch --format i3blocks --no-clicks"))
        let directory = TemporaryDirectory("i3blocks")
        let config = directory.appending("config")
        let command = "'\(BuiltProducts.path("syncupsctl"))' --socket '\(daemon.socketPath)' watch"
        Files.write(config, block.replacing("syncupsctl watch", with: command) + "\n")
        let i3blocks = try Subprocess(
            executable: "/usr/bin/i3blocks", arguments: ["-c", config], standardInput: .pipe, standardOutput: .pipe,
            standardError: .null)
        let bar = try OutputCollector(i3blocks.standardOutput!)
        defer {
            i3blocks.send(SIGTERM)
            _ = i3blocks.wait()
            bar.join()
            i3blocks.closeStreams()
        }
        let colours = "<span background='#FF8B42' foreground='#000000'> Ann 1/2 · "
        #expect(bar.wait { $0.contains(colours) }, "\(bar.contents)")
        let line = bar.contents.split(separator: "\n").last { $0.contains(colours) }.map(String.init) ?? ""
        #expect(line.contains(#""markup":"pango""#))
        #expect(line.contains(#""name":"syncups""#))
    }
}
