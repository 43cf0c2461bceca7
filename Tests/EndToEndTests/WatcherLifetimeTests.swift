import Glibc
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// `syncupsctl watch` ends once nobody reads it: a bar's watcher must not outlive the bar. Each watcher holds
/// the write end of an exit pipe as fd 3; the read end says "closed" only when every process holding it has
/// exited, so the tests wait for that event, within a second, instead of polling for a pid.
@Suite struct WatcherLifetimeTests {
    static let deadline = Duration.seconds(1)

    /// The read end of a pipe whose write end is handed to a child as fd 3.
    final class ExitPipe {
        let readEnd: FileDescriptor
        let writeEnd: FileDescriptor

        init() throws {
            (readEnd, writeEnd) = try FileDescriptor.pipe()
        }

        deinit {
            readEnd.close()
        }

        /// For `Subprocess(extraDescriptors:)`.
        var forChild: [(parent: FileDescriptor, child: CInt)] { [(writeEnd, 3)] }

        /// Call once the child holds it.
        func closeOurEnd() { writeEnd.close() }

        /// True when every holder exited within `timeout`.
        func waitForExit(timeout: Duration = WatcherLifetimeTests.deadline) -> Bool {
            var reader = LineReader(fd: readEnd)
            while true {
                switch Result(catching: { () throws(LineReader.Failure) in try reader.nextLine(timeout: timeout) }) {
                case .failure(.closed): return true
                case .failure: return false
                case .success: continue
                }
            }
        }
    }

    static let formats = ["waybar", "polybar", "i3blocks", "tmux", "events", "{speaker} {remaining}"]

    /// What waybar does on stop: SIGTERM to the `sh -c` running the command, and nothing to the watcher under
    /// it, whose standard output the bar (here, this test) still holds open.
    @Test(arguments: formats)
    func endsWhenTheShellThatRanItIsKilled(_ format: String) throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        if format == "events" {
            // Ticks every second: a line for the event stream, which prints nothing on subscribing.
            let client = try daemon.client()
            let created = try client.result("syncups.create", ["title": "Design", "duration": 600])
            _ = try client.result("session.start", ["syncup": created["id"]!, "audio": false])
        }
        let exit = try ExitPipe()
        // `; true` keeps sh from exec'ing the command itself: the watcher is its child, as under a bar.
        let shell = try Subprocess(
            executable: "/bin/sh",
            arguments: [
                // --idle-text only where the format prints status lines: events refuses it.
                "-c", #""$0" --socket "$1" watch --format "$2" $3; true"#,
                BuiltProducts.path("syncupsctl"), daemon.socketPath, format,
                format == "events" ? "" : "--idle-text=idle",
            ],
            standardInput: .null, standardOutput: .pipe, standardError: .null, extraDescriptors: exit.forChild,
            containment: .processGroup)
        exit.closeOurEnd()
        let output = try OutputCollector(shell.standardOutput!)
        defer {
            kill(-shell.pid, SIGKILL)  // a watcher left behind, so that the collector sees the end
            output.join()
            shell.closeStreams()
        }
        #expect(output.wait { $0.contains("\n") })  // subscribed
        shell.send(SIGTERM)
        #expect(shell.wait() == .signaled(SIGTERM))
        #expect(exit.waitForExit(), "the watcher outlived the shell that ran it")
    }

    /// Written to a file, as `nohup syncupsctl watch >> log &` does, a watcher is nobody's bar module: it must
    /// outlive the shell that started it (the deadline passing without an exit is the pass).
    @Test func keepsRunningIntoAFileWhenTheShellThatRanItIsKilled() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let directory = TemporaryDirectory("watch-file")
        let exit = try ExitPipe()
        let shell = try Subprocess(
            executable: "/bin/sh",
            arguments: [
                "-c", #""$0" --socket "$1" watch --format polybar >"$2"; true"#,
                BuiltProducts.path("syncupsctl"), daemon.socketPath, directory.appending("log"),
            ],
            standardInput: .null, standardOutput: .null, standardError: .null, extraDescriptors: exit.forChild,
            containment: .processGroup)
        exit.closeOurEnd()
        defer { kill(-shell.pid, SIGKILL) }
        #expect(try waitFor { Files.readString(directory.appending("log")) == "no meeting\n" })
        shell.send(SIGTERM)
        #expect(shell.wait() == .signaled(SIGTERM))
        #expect(!exit.waitForExit(), "the watcher followed its shell though nobody's bar reads it")
    }

    /// A watcher whose reader is gone, with the daemon up and quiet: nothing to write, so no EPIPE to notice.
    @Test func endsWhenItsOutputIsClosedWhileTheDaemonIsIdle() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        try expectEndsOnceOutputCloses(["--socket", daemon.socketPath], firstLine: "no meeting")
    }

    /// The same with the daemon down: it retried for ever, printing nothing new.
    @Test func endsWhenItsOutputIsClosedWhileTheDaemonIsDown() throws {
        let directory = TemporaryDirectory("watch-offline")
        try expectEndsOnceOutputCloses(["--socket", directory.appending("none")], firstLine: "syncupsd offline")
    }

    private func expectEndsOnceOutputCloses(_ socket: [String], firstLine: String) throws {
        let exit = try ExitPipe()
        let watcher = try Subprocess(
            executable: BuiltProducts.path("syncupsctl"), arguments: socket + ["watch", "--format", "polybar"],
            standardInput: .null, standardOutput: .pipe, standardError: .null, extraDescriptors: exit.forChild)
        exit.closeOurEnd()
        var lines = LineReader(fd: watcher.standardOutput!)
        #expect(try lines.nextLine(timeout: .seconds(10)).elementsEqual(firstLine.utf8))
        watcher.standardOutput!.close()
        let ended = exit.waitForExit()
        #expect(ended, "the watcher kept running with nobody reading it")
        if !ended { watcher.send(SIGKILL) }
        #expect(watcher.wait() == (ended ? .exited(0) : .signaled(SIGKILL)))
    }
}
