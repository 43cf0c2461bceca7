import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// The MPRIS player on a real private session bus, driven and read by the real `playerctl` (and `busctl`).
/// Serialized: each test's dbus-daemon takes one of the user's inotify instances (128 for every process of
/// the user), which parallel test runs exhausted.
@Suite(
    .serialized,
    .enabled(if: SessionBusFixture.unavailableReason == nil, "\(SessionBusFixture.unavailableReason ?? "")"))
struct MediaPlayerTests {
    /// A daemon on `bus`, once it owns the MPRIS name.
    static func daemon(on bus: SessionBusFixture, directory: TemporaryDirectory? = nil) throws -> DaemonProcess {
        let daemon = try DaemonProcess(environment: bus.environment, directory: directory)
        guard daemon.log.wait(until: { $0.contains("MPRIS: org.mpris.MediaPlayer2.syncupsd on the session bus") })
        else { throw TestFailure("the daemon did not take the MPRIS name:\n\(daemon.log.contents)") }
        return daemon
    }

    /// A 6-minute sync-up of three, its meeting started (no audio), and a subscriber to its events.
    static func startMeeting(_ daemon: DaemonProcess) throws -> (client: RawClient, watcher: RawClient) {
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create",
            ["title": "Design", "duration": 360, "theme": "bubblegum", "attendees": ["Blob", "Blob Jr", "Blob Sr"]])
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result(
            "session.start", ["syncup": try #require(created["id"]), "audio": false, "transcribe": false])
        _ = try watcher.nextEvent("session.started")
        return (client, watcher)
    }

    func output(_ result: CommandResult) -> String {
        var text = result.standardOutput
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }

    @Test func playerctlPassesTheFloorPausesAndEndsTheMeetingAndShowsWhoSpeaks() throws {
        let bus = try SessionBusFixture()
        let daemon = try Self.daemon(on: bus)
        #expect(output(try bus.playerctl(["status"])) == "Stopped")
        let (client, watcher) = try Self.startMeeting(daemon)

        let format = "{{xesam:title}}|{{xesam:album}}|{{xesam:artist}}|{{mpris:length}}"
        #expect(output(try bus.playerctl(["metadata", "--format", format])) == "Blob · 1/3|Design|Blob|120000000")
        #expect(output(try bus.playerctl(["status"])) == "Playing")
        #expect(output(try bus.playerctl(["metadata", "syncupsd:themeColor"])).hasPrefix("#"))

        #expect(try bus.playerctl(["next"]).exitCode == 0)
        let speaker = try watcher.nextEvent("session.speaker")
        #expect(speaker["data"]?["session"]?["speaker"]?["name"] == "Blob Jr")
        #expect(
            output(try bus.playerctl(["metadata", "--format", format])) == "Blob Jr · 2/3|Design|Blob Jr|120000000")

        #expect(try bus.playerctl(["play-pause"]).exitCode == 0)
        _ = try watcher.nextEvent("session.paused")
        #expect(output(try bus.playerctl(["status"])) == "Paused")
        #expect(try bus.playerctl(["play"]).exitCode == 0)
        _ = try watcher.nextEvent("session.resumed")
        #expect(output(try bus.playerctl(["status"])) == "Playing")

        // The floor never goes back: Previous is refused and changes nothing.
        #expect(try bus.playerctl(["previous"]).exitCode != 0)
        #expect(try client.result("session.get")["speaker"]?["name"] == "Blob Jr")

        // Stop ends the meeting and saves it, as `end --save` does.
        #expect(try bus.playerctl(["stop"]).exitCode == 0)
        let ended = try watcher.nextEvent("session.ended")
        #expect(ended["data"]?["outcome"] == "saved")
        #expect(output(try bus.playerctl(["status"])) == "Stopped")
        #expect(try bus.playerctl(["next"]).exitCode != 0)
    }

    /// `playerctl --follow` prints a line for each `PropertiesChanged`: a floor passed through the socket
    /// reaches the desktop's panel without its asking.
    @Test func sendsPropertiesChangedWhenTheSessionChanges() throws {
        let bus = try SessionBusFixture()
        let daemon = try Self.daemon(on: bus)
        let (client, watcher) = try Self.startMeeting(daemon)
        var environment = Subprocess.currentEnvironment()
        for (key, value) in bus.environment { environment[key] = value }
        let follower = try Subprocess(
            executable: "/usr/bin/playerctl",
            arguments: ["--player=syncupsd", "--follow", "metadata", "--format", "{{status}} {{xesam:title}}"],
            environment: environment, standardInput: .null, standardOutput: .pipe, standardError: .null)
        defer {
            follower.send(SIGTERM)
            _ = follower.wait()
            follower.closeStreams()
        }
        let lines = try OutputCollector(follower.standardOutput!, name: "playerctl-follow")
        #expect(lines.wait(until: { $0.contains("Playing Blob · 1/3\n") }))
        _ = try client.result("session.next")
        #expect(lines.wait(until: { $0.contains("Playing Blob Jr · 2/3\n") }))
        _ = try client.result("session.pause")
        #expect(lines.wait(until: { $0.contains("Paused Blob Jr · 2/3\n") }))
        _ = try client.result("session.end", ["action": "discard"])
        _ = try watcher.nextEvent("session.ended")
        // No meeting, no track: playerctl's format has nothing left to print.
        #expect(lines.wait(until: { $0.hasSuffix("Paused Blob Jr · 2/3\n\n") }), "\(lines.contents)")
    }

    /// Wrong argument types, unknown methods and properties get D-Bus errors; the daemon and the player go on.
    @Test func answersWrongCallsWithDBusErrors() throws {
        let bus = try SessionBusFixture()
        let daemon = try Self.daemon(on: bus)
        let (client, _) = try Self.startMeeting(daemon)
        let target = ["org.mpris.MediaPlayer2.syncupsd", "/org/mpris/MediaPlayer2"]
        let wrongType = try bus.busctl(["call"] + target + ["org.mpris.MediaPlayer2.Player", "Next", "s", "x"])
        #expect(wrongType.exitCode != 0)
        #expect(wrongType.standardError.contains("Next takes arguments of type \"\", not \"s\""))
        let unknown = try bus.busctl(["call"] + target + ["org.mpris.MediaPlayer2.Player", "Rewind"])
        #expect(unknown.exitCode != 0)
        #expect(unknown.standardError.contains("Unknown method Rewind"))
        let property = try bus.busctl(["get-property"] + target + ["org.mpris.MediaPlayer2.Player", "Colour"])
        #expect(property.exitCode != 0)
        #expect(property.standardError.contains("no property Colour"))
        let readOnly = try bus.busctl(["set-property"] + target + ["org.mpris.MediaPlayer2.Player", "Rate", "d", "2"])
        #expect(readOnly.exitCode != 0)
        #expect(readOnly.standardError.contains("Rate is read-only"))
        // OpenUri is refused for what it is: no URI scheme is supported (not a turn's time, as for seeking).
        let open = try bus.busctl(["call"] + target + ["org.mpris.MediaPlayer2.Player", "OpenUri", "s", "file:///x"])
        #expect(open.exitCode != 0)
        #expect(open.standardError.contains("SupportedUriSchemes is empty"), "\(open.standardError)")
        // Nothing changed, and both sides still answer.
        #expect(try client.result("session.get")["speaker"]?["name"] == "Blob")
        #expect(output(try bus.playerctl(["metadata", "xesam:title"])) == "Blob · 1/3")
    }

    /// A client floods the player with thousands of calls, half of them of the wrong type, without waiting
    /// for replies: each gets its answer or its D-Bus error, and the socket's clients are answered meanwhile.
    @Test func answersAFloodOfCallsAndKeepsServingTheSocket() throws {
        let bus = try SessionBusFixture()
        let daemon = try Self.daemon(on: bus)
        let (client, _) = try Self.startMeeting(daemon)
        var environment = Subprocess.currentEnvironment()
        for (key, value) in bus.environment { environment[key] = value }
        let script = """
            import sys
            from dbus.mainloop.glib import DBusGMainLoop
            DBusGMainLoop(set_as_default=True)
            import dbus
            from gi.repository import GLib
            bus = dbus.SessionBus()
            player = bus.get_object("org.mpris.MediaPlayer2.syncupsd", "/org/mpris/MediaPlayer2", introspect=False)
            count = int(sys.argv[1])
            results = {"Playing": 0, "InvalidArgs": 0, "other": 0}
            loop = GLib.MainLoop()
            def done():
                if sum(results.values()) == 2 * count:
                    print(results, flush=True)
                    loop.quit()
            def reply(value):
                results["Playing" if value == "Playing" else "other"] += 1
                done()
            def error(failure):
                name = failure.get_dbus_name()
                results["InvalidArgs" if name.endswith("InvalidArgs") else "other"] += 1
                done()
            for _ in range(count):
                player.Get("org.mpris.MediaPlayer2.Player", "PlaybackStatus",
                           dbus_interface="org.freedesktop.DBus.Properties", reply_handler=reply, error_handler=error)
                player.Next("wrong", dbus_interface="org.mpris.MediaPlayer2.Player",
                            reply_handler=reply, error_handler=error)
            print("sent", flush=True)
            loop.run()
            """
        let flood = try Subprocess(
            executable: "/usr/bin/python3", arguments: ["-c", script, "2000"], environment: environment,
            standardInput: .null, standardOutput: .pipe, standardError: .pipe)
        let output = try OutputCollector(flood.standardOutput!, name: "flood")
        let errors = try OutputCollector(flood.standardError!, name: "flood-errors")
        #expect(output.wait(until: { $0.contains("sent\n") }), "\(errors.contents)")
        // The socket is served while the calls are answered.
        #expect(try client.result("ping") == "pong")
        #expect(try client.result("session.get")["speaker"]?["name"] == "Blob")
        #expect(
            output.wait(timeout: .seconds(60)) { $0.contains("{'Playing': 2000, 'InvalidArgs': 2000, 'other': 0}") },
            "\(output.contents)\(errors.contents)")
        _ = flood.wait()
        flood.closeStreams()
        // Not one Next of the wrong type passed the floor.
        #expect(try client.result("session.get")["speaker"]?["name"] == "Blob")
    }

    /// Without a session bus the daemon runs as before, with no timer armed, and `status` says why MPRIS is off.
    @Test func saysWhyMPRISIsOffWithoutASessionBus() throws {
        let runtime = TemporaryDirectory("runtime")
        let daemon = try DaemonProcess(environment: ["XDG_RUNTIME_DIR": runtime.path])
        let status = try daemon.client().result("status")
        #expect(status["desktop"]?["sessionBus"] == "off")
        #expect(status["desktop"]?["reason"]?.stringValue?.contains("DBUS_SESSION_BUS_ADDRESS is not set") == true)
        #expect(status["desktop"]?["mpris"] == .null)
        #expect(status["timers"] == 0)
        let text = try CommandResult.run(BuiltProducts.path("syncupsctl"), ["--socket", daemon.socketPath, "status"])
        #expect(text.standardOutput.contains("desktop:   MPRIS and notifications off: no session bus"))
    }

    /// A bus that goes away and comes back: the daemon connects again and takes its name again.
    @Test func reconnectsWhenTheBusComesBack() throws {
        let bus = try SessionBusFixture()
        let daemon = try Self.daemon(on: bus)
        let client = try daemon.client()
        #expect(try client.result("status")["desktop"]?["mpris"] == "org.mpris.MediaPlayer2.syncupsd")
        bus.stop()
        #expect(daemon.log.wait(until: { $0.contains("the session bus went away") }))
        let off = try client.result("status")["desktop"]
        #expect(off?["sessionBus"] == "off")
        #expect(off?["mpris"] == .null)
        try bus.start()
        #expect(
            daemon.log.wait(timeout: .seconds(15)) {
                $0.ranges(of: "MPRIS: org.mpris.MediaPlayer2.syncupsd on the session bus").count == 2
            })
        #expect(try client.result("status")["desktop"]?["sessionBus"] == "connected")
        #expect(output(try bus.playerctl(["status"])) == "Stopped")
    }
}

/// Desktop notifications on a private bus, to a notification server that records them and presses their
/// buttons (`Tests/Tools/notification-server`).
@Suite(
    .serialized,
    .enabled(if: SessionBusFixture.unavailableReason == nil, "\(SessionBusFixture.unavailableReason ?? "")"))
struct NotificationTests {
    @Test func showsWhoHasTheFloorInPlaceAndItsButtonsPassAndPause() throws {
        let bus = try SessionBusFixture()
        let server = try NotificationServerFixture(bus: bus)
        let daemon = try MediaPlayerTests.daemon(on: bus)
        let (_, watcher) = try MediaPlayerTests.startMeeting(daemon)
        let first = try #require(server.wait { $0["summary"] == "Blob's turn · 02:00" })
        #expect(first["body"] == "Design · 1/3")
        #expect(first["actions"] == ["next", "Next", "pause", "Pause"])
        #expect(first["app"] == "syncupsd")

        try server.invoke(try #require(first["id"]), "next")
        let speaker = try watcher.nextEvent("session.speaker")
        #expect(speaker["data"]?["session"]?["speaker"]?["name"] == "Blob Jr")
        // The same notification, replaced in place rather than stacked.
        let second = try #require(server.wait { $0["summary"] == "Blob Jr's turn · 02:00" })
        #expect(second["replaces"] == first["id"])
        #expect(second["id"] == first["id"])

        try server.invoke(try #require(second["id"]), "pause")
        _ = try watcher.nextEvent("session.paused")
        let paused = try #require(server.wait { $0["summary"] == "Design paused" })
        #expect(paused["actions"] == ["resume", "Resume", "next", "Next"])
        try server.invoke(try #require(paused["id"]), "resume")
        _ = try watcher.nextEvent("session.resumed")
    }

    /// Any client may send an `ActionInvoked` or `NotificationClosed` signal; only the server that answered the
    /// daemon's `Notify` is heard. Forged ones (another sender, on any path) neither pass the floor nor make the
    /// next notification stack instead of replacing ours (break 9 of issue 29).
    @Test func ignoresActionsAndClosesForgedByAnotherClient() throws {
        let bus = try SessionBusFixture()
        let server = try NotificationServerFixture(bus: bus)
        let daemon = try MediaPlayerTests.daemon(on: bus)
        let (_, watcher) = try MediaPlayerTests.startMeeting(daemon)
        let first = try #require(server.wait { $0["summary"] == "Blob's turn · 02:00" })
        let id = "\(try #require(first["id"]?.numberValue?.int64))"
        // Broadcast on any path, and sent straight to the daemon (which no match rule filters).
        let ways = [
            ["/evil/path"], ["/org/freedesktop/Notifications"],
            ["--destination=org.mpris.MediaPlayer2.syncupsd", "/org/freedesktop/Notifications"],
        ]
        for way in ways {
            let forged = try bus.busctl(
                ["emit"] + way + ["org.freedesktop.Notifications", "ActionInvoked", "us", id, "next"])
            #expect(forged.exitCode == 0, "\(forged.standardError)")
            let closed = try bus.busctl(
                ["emit"] + way + ["org.freedesktop.Notifications", "NotificationClosed", "uu", id, "2"])
            #expect(closed.exitCode == 0, "\(closed.standardError)")
        }
        // The real server's button, after the forgeries: the first change the meeting sees.
        try server.invoke(try #require(first["id"]), "pause")
        let paused = try watcher.nextEvent("session.paused")
        #expect(paused["data"]?["session"]?["speaker"]?["name"] == "Blob")
        let shown = try #require(server.wait { $0["summary"] == "Design paused" })
        #expect(shown["replaces"] == first["id"])
    }

    /// After the last speaker's `next` the meeting waits at its end: MPRIS shows it Paused with its track (it
    /// showed Stopped and no track, so `playerctl stop` found no player and the meeting could not be saved from
    /// the media keys), Next is off, and the floor notification offers Save and Resume, not a dead Next.
    @Test func theMeetingWaitingAtItsEndIsPausedAndStopSavesIt() throws {
        let bus = try SessionBusFixture()
        let server = try NotificationServerFixture(bus: bus)
        let daemon = try MediaPlayerTests.daemon(on: bus)
        let (_, watcher) = try MediaPlayerTests.startMeeting(daemon)
        for _ in 0..<3 { #expect(try bus.playerctl(["next"]).exitCode == 0) }
        _ = try watcher.nextEvent("session.ending")
        let ending = try #require(server.wait { $0["summary"] == "Design: everyone has spoken" })
        #expect(ending["actions"] == ["save", "Save", "resume", "Resume"])
        #expect(try bus.playerctl(["status"]).standardOutput == "Paused\n")
        #expect(try bus.playerctl(["metadata", "xesam:album"]).standardOutput == "Design\n")
        let canGoNext = try bus.busctl([
            "get-property", "org.mpris.MediaPlayer2.syncupsd", "/org/mpris/MediaPlayer2",
            "org.mpris.MediaPlayer2.Player", "CanGoNext",
        ])
        #expect(canGoNext.standardOutput == "b false\n")
        let stop = try bus.playerctl(["stop"])
        #expect(stop.exitCode == 0, "\(stop.standardError)")
        let ended = try watcher.nextEvent("session.ended")
        #expect(ended["data"]?["outcome"] == "saved")
    }

    /// `notify = important` leaves out the floor, keeps the meeting saved; SIGHUP to `none` silences it all.
    @Test func notifyOptionChoosesWhatShowsAndSIGHUPReloadsIt() throws {
        let bus = try SessionBusFixture()
        let server = try NotificationServerFixture(bus: bus)
        let directory = TemporaryDirectory("daemon")
        let file = directory.appending("config/syncups/syncupsd.conf")
        mkdir(directory.appending("config"), 0o700)
        mkdir(directory.appending("config/syncups"), 0o700)
        Files.write(file, "notify = important\n")
        let daemon = try MediaPlayerTests.daemon(on: bus, directory: directory)
        let client = try daemon.client()
        #expect(try client.result("status")["desktop"]?["notify"] == "important")
        let (_, watcher) = try MediaPlayerTests.startMeeting(daemon)
        _ = try client.result("session.next")
        _ = try client.result("session.end", ["action": "save"])
        _ = try watcher.nextEvent("session.ended")
        let saved = try #require(server.wait { $0["summary"] == "Design: meeting saved" })
        #expect(saved["actions"] == [])
        #expect(!server.notifications.contains { $0["summary"]?.stringValue?.contains("turn") == true })

        Files.write(file, "notify = none\n")
        daemon.process.send(SIGHUP)
        #expect(daemon.log.wait { $0.contains("notify: important -> none") })
        #expect(try client.result("status")["desktop"]?["notify"] == "none")
        let count = server.notifications.count
        _ = try Self.startAndSave(client, watcher)
        #expect(server.notifications.count == count)
    }

    /// A meeting's details that cannot be written (a directory in their way), retried: one critical
    /// notification while they fail, however many retries the log shows, replaced in place by the news that
    /// saving works again once the way is clear. Before, every retry showed the failure again.
    @Test func aWriteFailingAtEachRetryIsOneNotificationReplacedByItsRecovery() throws {
        let bus = try SessionBusFixture()
        let server = try NotificationServerFixture(bus: bus)
        let daemon = try MediaPlayerTests.daemon(on: bus)
        let (client, _) = try MediaPlayerTests.startMeeting(daemon)
        let meeting = try #require(try client.result("session.get")["meeting"]?.stringValue)
        let details = daemon.dataPath + "/meetings/\(meeting).json"
        #expect(mkdir(details, 0o700) == 0 && mkdir(details + "/in-the-way", 0o700) == 0)
        _ = try client.result("session.end", ["action": "save"])
        let cannot = "syncupsd cannot save your sync-ups"
        let failed = try #require(server.wait { $0["summary"]?.stringValue == cannot })
        // The first try and three retries (half a second doubling).
        #expect(
            daemon.log.wait(timeout: .seconds(30)) {
                $0.components(separatedBy: "cannot write the meeting's details").count > 4
            }, "\(daemon.log.contents)")
        #expect(server.notifications.count { $0["summary"]?.stringValue == cannot } == 1, "\(server.notifications)")
        #expect(rmdir(details + "/in-the-way") == 0 && rmdir(details) == 0)
        let again = "syncupsd saves your sync-ups again"
        let recovered = try #require(server.wait(timeout: .seconds(30)) { $0["summary"]?.stringValue == again })
        #expect(recovered["replaces"] == failed["id"], "stacked rather than replaced: \(server.notifications)")
    }

    /// Real speech that fails mid-meeting (a speech command that crashes after a second of ALSA audio) is a
    /// critical notification even at `notify important`; the meeting saved is one too; the floor is not.
    @Test func speechThatFailsIsAnImportantNotification() throws {
        let bus = try SessionBusFixture()
        let server = try NotificationServerFixture(bus: bus)
        let alsa = try ALSAFixture(microphone: SpeechFixture.silence(seconds: 20))
        let script = alsa.directory.appending("engine.sh")
        Files.write(script, "head -c 32000 > /dev/null\nexit 3\n")
        var environment = alsa.environment
        for (key, value) in bus.environment { environment[key] = value }
        let daemon = try DaemonProcess(
            arguments: [
                "--audio-device", "virtmic", "--no-cue", "--speech-command", "exec sh \(script)", "--notify",
                "important",
            ],
            environment: environment)
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create", ["title": "Solo", "duration": 4, "attendees": ["Ann", "Bob"]])
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": try #require(created["id"])])
        let failed = try #require(server.wait(timeout: .seconds(30)) { $0["summary"] == "Solo: speech failed" })
        #expect(failed["body"] == "speech recognition failed: the speech command exited with status 3")
        #expect(failed["urgency"] == 2)
        _ = try client.nextEvent("session.ended", timeout: .seconds(30))
        #expect(server.wait { $0["summary"] == "Solo: meeting saved" } != nil)
        #expect(!server.notifications.contains { $0["summary"]?.stringValue?.contains("turn") == true })
    }

    static func startAndSave(_ client: RawClient, _ watcher: RawClient) throws -> JSONValue {
        let id = try #require(try client.result("syncups.list")["syncups"]?[0]?["id"])
        _ = try client.result("session.start", ["syncup": id, "audio": false, "transcribe": false])
        _ = try watcher.nextEvent("session.started")
        _ = try client.result("session.end", ["action": "save"])
        return try watcher.nextEvent("session.ended")
    }
}
