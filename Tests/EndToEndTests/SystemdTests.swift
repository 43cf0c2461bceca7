import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// The daemon under systemd's protocols, tested with systemd's own tools and a stand-in notify socket.
@Suite struct SystemdTests {
    @Test func notifiesReadyOnlyOnceTheSocketWorksThenStatusAndStopping() throws {
        let notify = try NotifyListener()
        let daemon = try DaemonProcess(environment: ["NOTIFY_SOCKET": notify.path], waitForReady: false)
        let ready = try #require(notify.wait { $0.contains("READY=1") })
        #expect(ready == "READY=1\nSTATUS=idle · 0 sync-ups")
        // READY=1 promises the socket accepts: connect right away.
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create", ["title": "Design", "duration": 6, "attendees": ["Blob", "Blob Jr"]])
        #expect(notify.next() == "STATUS=idle · 1 sync-up")
        _ = try client.result("session.start", ["syncup": created["id"]!, "audio": false])
        #expect(notify.next() == "STATUS=recording \"Design\" 00:00 · Blob 1/2")
        #expect(notify.wait { $0 == "STATUS=recording \"Design\" 00:03 · Blob Jr 2/2" } != nil)
        _ = try client.result("session.pause")
        #expect(notify.wait { $0.hasPrefix("STATUS=paused \"Design\"") } != nil)
        #expect(daemon.stop() == .exited(0))
        #expect(notify.wait { $0 == "STOPPING=1" } != nil)
    }

    @Test func pingsTheWatchdogWhenSystemdAsksForOne() throws {
        let notify = try NotifyListener()
        // WATCHDOG_USEC=400 ms: pings every 200 ms. WATCHDOG_PID is our child, which systemd would set.
        let daemon = try DaemonProcess(
            arguments: ["--log-level", "info"],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"],
            waitForReady: false
        )
        _ = daemon
        #expect(notify.wait { $0.contains("READY=1") } != nil)
        #expect(notify.wait { $0 == "WATCHDOG=1" } != nil)
        #expect(notify.wait { $0 == "WATCHDOG=1" } != nil)
    }

    @Test func answersOnASocketPassedBySystemdSocketActivate() throws {
        let directory = TemporaryDirectory("activate")
        let socket = directory.appending("activated.sock")
        let activator = try Subprocess(
            executable: "/usr/bin/systemd-socket-activate",
            arguments: [
                "-l", socket, BuiltProducts.path("syncupsd"), "--data-dir", directory.appending("data"),
                "--no-config", "--audio-device", "null",
            ],
            standardOutput: .null,
            standardError: .pipe
        )
        let log = try OutputCollector(activator.standardError!)
        defer {
            activator.send(SIGTERM)
            _ = activator.wait()
            log.join()
        }
        #expect(log.wait { $0.contains("Listening on") })
        // The first connection makes systemd-socket-activate start the daemon with the socket as fd 3.
        let client = try RawClient(path: socket)
        #expect(client.greeting["event"] == "hello")
        #expect(try client.result("ping") == "pong")
        let status = try client.result("status")
        #expect(status["socket"] == "(from systemd)")
        #expect(log.wait { $0.contains("using the socket passed by systemd") })
    }

    @Test func writesPlainLinesWhenJournalStreamNamesAnotherFile() throws {
        let daemon = try DaemonProcess(environment: ["JOURNAL_STREAM": "1:1"])
        #expect(daemon.log.contents.contains("notice: syncupsd "))
    }

    @Test func sendsEntriesToTheJournalInsteadOfStderrWhenStderrIsTheJournal() throws {
        // systemd sets JOURNAL_STREAM to the device and inode of the stream it gives as stderr; do the same
        // with a pipe: the daemon must then log through sd_journal_sendv, not as text on stderr.
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        var info = stat()
        fstat(writeEnd.rawValue, &info)
        let directory = TemporaryDirectory("journal")
        var environment = Subprocess.currentEnvironment()
        environment["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)"
        let socket = directory.appending("s")
        let daemon = try Subprocess(
            executable: BuiltProducts.path("syncupsd"),
            arguments: ["--socket", socket, "--data-dir", directory.appending("data"), "--no-config"],
            environment: environment,
            standardOutput: .null,
            standardError: .descriptor(writeEnd)
        )
        writeEnd.close()
        let stderr = try OutputCollector(readEnd)
        #expect(try waitFor { (try? RawClient(path: socket)) != nil })
        _ = try RawClient(path: socket).result("syncups.create", ["title": "logged"])
        daemon.send(SIGTERM)
        #expect(daemon.wait() == .exited(0))
        stderr.join()
        #expect(stderr.contents == "")
    }
}
