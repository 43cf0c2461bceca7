import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@Suite struct LifecycleTests {
    @Test func createsTheSocket0600AndTheDataFiles0600() throws {
        let daemon = try DaemonProcess()
        _ = try daemon.client().result("syncups.create", ["title": "x"])
        #expect(Files.mode(daemon.socketPath) == 0o600)
        #expect(try waitFor { Files.exists(daemon.dataPath + "/sync-ups.json") })
        #expect(Files.mode(daemon.dataPath + "/sync-ups.json") == 0o600)
        #expect(Files.mode(daemon.dataPath) == 0o700)
    }

    /// Each descriptor the daemon closes, it closes once, over a life with a client, a meeting with audio and a
    /// SIGTERM: `strace` sees no `close` fail. The socket was closed by the server's shutdown and again at the
    /// end of `run` (EBADF; a descriptor opened between, the store's last write or a worker's file, would have
    /// been closed under its owner: in the test process, another test's queue, which then hung).
    @Test func closesEachDescriptorOnce() throws {
        let directory = TemporaryDirectory("close-once")
        let trace = directory.appending("failed-closes")
        let daemon = try DaemonProcess(
            arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"], directory: directory,
            wrapper: ["/usr/bin/strace"] + Self.closesTraced(to: trace))
        let client = try daemon.client()
        let created = try client.result("syncups.create", ["title": "T", "duration": 60, "attendees": ["Ann"]])
        let id = try #require(created["id"])
        _ = try client.result("session.start", ["syncup": id, "audio": true, "transcribe": false])
        _ = try client.result("session.end", ["action": "save"])
        // The daemon is strace's child: the signal goes to it, as systemd's would.
        let children = Files.readString("/proc/\(daemon.pid)/task/\(daemon.pid)/children") ?? ""
        let pid = try #require(children.split(separator: " ").first.flatMap { pid_t($0) }, "no daemon under strace")
        // A second daemon on the same socket, refused at its lock (it closed the lock file, then its `deinit`
        // again), and syncupsctl against a socket that never greets (its connection's `deinit` closed again
        // what the failed `init` had closed).
        let second = try CommandResult.run(
            "/usr/bin/strace",
            Self.closesTraced(to: directory.appending("second"))
                + [BuiltProducts.path("syncupsd"), "--socket", daemon.socketPath, "--data-dir", daemon.dataPath + "2"])
        #expect(second.exitCode == 1, "\(second.standardError)")
        let silent = try UnixSocket.listen(path: directory.appending("silent.sock"))
        defer { silent.close() }
        let cli = try CommandResult.run(
            "/usr/bin/strace",
            Self.closesTraced(to: directory.appending("cli"))
                + [
                    BuiltProducts.path("syncupsctl"), "--socket", directory.appending("silent.sock"), "--timeout",
                    "0.1", "ping",
                ])
        #expect(cli.exitCode == 69, "\(cli.standardError)")
        kill(pid, SIGTERM)
        #expect(daemon.waitForExit() == .exited(0), "\(daemon.log.contents)")
        for name in ["failed-closes", "second", "cli"] {
            let failed = Files.readString(directory.appending(name)) ?? "(no trace)"
            #expect(failed.isEmpty, "\(name): \(failed)")
        }
    }

    /// strace's arguments to write each failed `close` of a process and its children to `file`.
    static func closesTraced(to file: String) -> [String] {
        ["-f", "-qq", "-e", "trace=close", "-e", "status=failed", "-o", file]
    }

    @Test func usesNoTimersWhenIdle() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        _ = try client.result("subscribe")
        #expect(try client.result("status")["timers"] == 0)
    }

    @Test func tellsSubscribersAndFlushesPendingChangesOnSIGTERM() throws {
        let daemon = try DaemonProcess()
        let subscriber = try daemon.client()
        _ = try subscriber.result("subscribe", ["topics": ["daemon"], "snapshot": false])
        let client = try daemon.client()
        // The first change is written at once; the next ones wait for the throttle's second.
        _ = try client.result("syncups.create", ["title": "first"])
        _ = try client.result("syncups.create", ["title": "second"])
        _ = try client.result("syncups.create", ["title": "third"])
        #expect(daemon.stop() == .exited(0))
        let event = try subscriber.readJSON()
        #expect(event["event"] == "daemon.stopping")
        #expect(event["data"]?["reason"] == "SIGTERM")
        let titles = Files.readString(daemon.dataPath + "/sync-ups.json") ?? ""
        #expect(titles.contains("\"third\""))
        #expect(!Files.exists(daemon.socketPath))
    }

    @Test func refusesToStartASecondDaemonOnTheSameSocket() throws {
        let first = try DaemonProcess()
        let second = try DaemonProcess(
            arguments: ["--data-dir", first.directory.appending("other-data")], directory: first.directory,
            waitForReady: false)
        #expect(second.waitForExit() == .exited(1))
        #expect(second.log.contents.contains("is already running on \(first.socketPath)"))
        #expect(try first.client().request("ping")["result"] == "pong")
    }

    @Test func refusesToStartASecondDaemonOnTheSameDataDirectoryBeforeTouchingIt() throws {
        let first = try DaemonProcess()
        let client = try first.client()
        let syncUp = try client.result("syncups.create", ["title": "Standup", "attendees": ["Ann", "Bo"]])
        _ = try client.result("session.start", ["syncup": syncUp["id"] ?? nil, "audio": false])
        let meetings = first.dataPath + "/meetings"
        let journals = try DirectoryListing.names(in: meetings).filter { $0.hasSuffix(".recording.json") }
        #expect(journals.count == 1, "the running meeting's journal: \(journals)")
        #expect(try waitFor { try client.result("status")["persistence"]?["synced"] == true })
        let before = Files.snapshot(of: first.dataPath)

        let otherSocket = TemporaryDirectory("second")
        let second = try DaemonProcess(
            arguments: ["--socket", otherSocket.appending("socket")], directory: first.directory, waitForReady: false)
        #expect(second.log.wait { $0.contains("another syncupsd") || $0.contains(" ready on ") })
        #expect(second.stop() == .exited(75), "\(second.log.contents)")
        #expect(second.log.contents.contains("another syncupsd (pid \(first.pid)) is using \(first.dataPath)"))
        #expect(Files.snapshot(of: first.dataPath) == before, "the second daemon changed the data directory")

        // The first goes on: its meeting is saved once, and the next start reads the file without complaint.
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.end", ["action": "save"])
        _ = try client.nextEvent("session.ended")
        #expect(first.stop() == .exited(0))
        let third = try DaemonProcess(directory: first.directory)
        let saved = try third.client().result("syncups.get", ["id": syncUp["id"] ?? nil])
        #expect(saved["meetingsTotal"] == 1)
        let warnings = try third.client().result("status")["persistence"]?["warnings"]
        #expect(warnings == [], "\(warnings.map { JSONWriter().string($0) } ?? "")")
    }

    /// A data directory the daemon may read but not write (a read-only mount, a backup) still serves, and is
    /// still one daemon's: the lock is on the directory, not on a file that would have to be created.
    @Test(.enabled(if: geteuid() == 0, "switching uid needs root (CI runs as root)"))
    func servesAReadOnlyDataDirectoryAndStillLocksIt() throws {
        let directory = TemporaryDirectory("readonly")
        chmod(directory.path, 0o755)
        let data = directory.appending("data")
        mkdir(data, 0o755)
        mkdir(data + "/meetings", 0o755)
        Files.write(data + "/sync-ups.json", SyncUpsFile.encode([.fixture(title: "Kept")]))
        for path in [data, data + "/meetings", data + "/sync-ups.json"] { chown(path, 65534, 65534) }
        chmod(data, 0o555)
        let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        let socketDirectory = TemporaryDirectory("readonly-socket")
        chown(socketDirectory.path, 65534, 65534)
        let first = try DaemonProcess(
            arguments: ["--data-dir", data, "--socket", socketDirectory.appending("socket")], directory: directory,
            wrapper: nobody)
        // Only the daemon's own uid may connect: ask as nobody too.
        let listed = try CommandResult.run(
            nobody[0], Array(nobody.dropFirst()) + [BuiltProducts.path("syncupsctl"), "list"],
            environment: ["SYNCUPSD_SOCKET": socketDirectory.appending("socket")])
        #expect(listed.exitCode == 0 && listed.standardOutput.contains("Kept"), "\(listed.standardError)")
        let second = try DaemonProcess(
            arguments: ["--data-dir", data, "--socket", socketDirectory.appending("other")], directory: directory,
            waitForReady: false, wrapper: nobody)
        #expect(second.waitForExit() == .exited(75), "\(second.log.contents)")
        #expect(second.log.contents.contains("another syncupsd (pid"))
        _ = first
    }

    /// `meetings/` removed while the daemon runs comes back (0700) with the next meeting: its audio, its
    /// journal and its details are all written.
    @Test func recreatesTheMeetingsDirectoryRemovedWhileItRuns() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"])
        let client = try daemon.client()
        let syncUp = try client.result("syncups.create", ["title": "Standup", "attendees": ["Ann"]])
        let meetings = daemon.dataPath + "/meetings"
        #expect(rmdir(meetings) == 0)
        let started = try client.result("session.start", ["syncup": syncUp["id"] ?? nil])
        let meetingID = try #require(started["meeting"]?.stringValue)
        #expect(try Files.wait(forChangesIn: daemon.dataPath) { Files.exists(meetings) })
        #expect(Files.mode(meetings) == 0o700)
        #expect(
            try Files.wait(forChangesIn: meetings) {
                Files.exists("\(meetings)/\(meetingID).recording.json") && Files.exists("\(meetings)/\(meetingID).wav")
            })
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.end", ["action": "save"])
        _ = try client.nextEvent("session.ended")
        #expect(try Files.wait(forChangesIn: meetings) { Files.exists("\(meetings)/\(meetingID).json") })
    }

    /// A kill between writing a meeting's file and renaming it into place leaves `.<id>.<suffix>.tmp-PID-N`.
    @Test func removesTemporaryFilesACrashLeftInMeetingsAtStartAndWithTheirMeeting() throws {
        let directory = TemporaryDirectory("temps")
        let meetings = directory.appending("data/meetings")
        let first = try DaemonProcess(directory: directory)
        let client = try first.client()
        let syncUp = try client.result("syncups.create", ["title": "Standup", "attendees": ["Ann"]])
        let started = try client.result("session.start", ["syncup": syncUp["id"] ?? nil, "audio": false])
        let meetingID = try #require(started["meeting"]?.stringValue)
        _ = try client.result("session.end", ["action": "save"])
        #expect(try waitFor { Files.exists("\(meetings)/\(meetingID).json") })
        #expect(first.stop(signal: SIGKILL) == .signaled(SIGKILL))
        let left = [
            ".\(meetingID).recording.json.tmp-4242-1", ".\(meetingID).json.tmp-4242-2",
            ".0C5E0000-0000-0000-0000-000000000000.json.tmp-77-3",
        ]
        for name in left { Files.write("\(meetings)/\(name)", "partial") }
        Files.write("\(meetings)/notes.txt", "not ours")

        let second = try DaemonProcess(directory: directory)
        #expect(Files.list(meetings).filter { $0.contains(".tmp-") } == [])
        #expect(Files.exists("\(meetings)/notes.txt"))
        // One left while the daemon runs goes with its meeting.
        Files.write("\(meetings)/.\(meetingID).json.tmp-\(second.pid)-9", "partial")
        _ = try second.client().result(
            "meetings.delete", ["syncup": syncUp["id"] ?? nil, "meeting": .string(meetingID)])
        #expect(Files.list(meetings).filter { $0.contains(meetingID) } == [])
    }

    @Test func replacesAStaleSocketLeftByACrash() throws {
        let first = try DaemonProcess()
        #expect(first.stop(signal: SIGKILL) == .signaled(SIGKILL))
        #expect(Files.exists(first.socketPath))
        let second = try DaemonProcess(directory: first.directory)
        #expect(try second.client().request("ping")["result"] == "pong")
    }

    @Test(.enabled(if: geteuid() == 0, "switching uid needs root (CI runs as root)"))
    func refusesAnotherUserEvenWhenTheSocketIsOpenToAll() throws {
        let daemon = try DaemonProcess()
        // Loosen the file permissions, as a misconfigured system might: SO_PEERCRED must still refuse.
        chmod(daemon.directory.path, 0o755)
        chmod(daemon.socketPath, 0o666)
        let result = try CommandResult.run(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", "socat", "-", "UNIX-CONNECT:\(daemon.socketPath)"]
        )
        let reply = try JSONParser().parse(result.standardOutput.split(separator: "\n").first.map(String.init) ?? "")
        #expect(reply["error"]?["code"] == "permission_denied")
        #expect(daemon.log.wait { $0.contains("refused a connection from uid 65534") })
    }
}
