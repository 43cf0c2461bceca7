import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// The next meeting's speech command started ahead, in the built daemon: its processes, and what it detached
/// from its group, end with the daemon's SIGTERM, whether or not a PID namespace holds the engine, and
/// whether or not the detached helper holds the engine's output; `status` says the engine was warm.
@Suite struct SpareEngineProcessTests {
    /// The daemon in a user namespace of its own that may create no other (`max_user_namespaces` 0 there, as
    /// where user namespaces are off, or forbidden by the shipped unit's `RestrictNamespaces=yes`): its engines
    /// run in a process group, with no PID namespace to end what they detach.
    static let withoutUserNamespaces = [
        "unshare", "-Ur", "/bin/sh", "-c", #"echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$@""#,
    ]

    @Test(arguments: [false, true])
    func aSIGTERMLeavesNoProcessOfTheEngineStartedAhead(helperHoldsTheOutput: Bool) throws {
        try Self.stopLeavesNothing(helperHoldsTheOutput: helperHoldsTheOutput, wrapper: [])
    }

    /// Before, the daemon exited before the engine's thread had reaped it and ended its orphans: the helper
    /// was left in 12 stops of 12 when it held the output, 5 of 12 when not (attack 92).
    @Test(
        .enabled(if: ProcessTable.userNamespacesWork, "the test needs a user namespace to turn them off in"),
        arguments: [false, true])
    func aSIGTERMEndsWhatTheSpareDetachedWithoutAPIDNamespace(helperHoldsTheOutput: Bool) throws {
        try Self.stopLeavesNothing(
            helperHoldsTheOutput: helperHoldsTheOutput, wrapper: Self.withoutUserNamespaces,
            logging: "no PID namespace for the speech command")
    }

    /// Where no PID namespace holds it, an engine that left its process group (for the daemon's, in the same
    /// session) is ended with its spare all the same: the engine itself is killed, not only its group. Before,
    /// the group kill missed it: it ran on while `status` said `none`, one more after each spare (attack 93).
    /// The spare is ended by a reload of another speech command, at the test's moment: ended by a 5 s idle
    /// time, counted from the engine's start, it was ended before a Python engine was ever up on a loaded
    /// machine (2 runs of the suite, one with both cores loaded: never warm, and not running). The idle time
    /// ends a spare the same way (`SpareEngineMachineTests`, `SpareEngineTests`).
    @Test(.enabled(if: ProcessTable.userNamespacesWork, "the test needs a user namespace to turn them off in"))
    func anEngineThatLeftItsGroupEndsWithItsSpare() throws {
        let (engine, next) = (ProcessTable.uniqueSleep(), ProcessTable.uniqueSleep())
        defer { for marker in [engine, next] { ProcessTable.kill(withArgument: marker) } }
        let directory = TemporaryDirectory("spare")
        func writeEngine(_ marker: String) -> String {
            let script = directory.appending("\(marker).sh")
            Files.write(
                script,
                """
                exec python3 -c '
                import os, signal, sys, time
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                os.setpgid(0, os.getpgid(os.getppid()))
                print("{\\"type\\":\\"progress\\",\\"time\\":0}", flush=True)
                time.sleep(1000)
                ' \(marker)

                """)
            return script
        }
        let config = directory.appending("config/syncups/syncupsd.conf")
        mkdir(directory.appending("config"), 0o700)
        mkdir(directory.appending("config/syncups"), 0o700)
        Files.write(config, "speech-engine = command\nspeech-command = exec sh \(writeEngine(engine))\n")
        let daemon = try DaemonProcess(
            arguments: ["--audio-device", "null", "--no-cue", "--call-audio", "off", "--speech-spare-at-start"],
            directory: directory, wrapper: Self.withoutUserNamespaces)
        let client = try daemon.client()
        #expect(
            try waitFor { try client.result("status")["speechSpare"] == "warm" },
            "the engine is up:\n\(daemon.log.contents)")
        // Warm: it has left its group (it says so only after).
        #expect(try waitFor { !ProcessTable.processes(withArgument: engine).isEmpty }, "the engine runs")
        Files.write(config, "speech-engine = command\nspeech-command = exec sh \(writeEngine(next))\n")
        daemon.process.send(SIGHUP)
        #expect(
            try waitFor(timeout: .seconds(5)) { ProcessTable.processes(withArgument: engine).isEmpty },
            "still running after its spare ended:\n\(daemon.log.contents)")
        #expect(
            daemon.log.wait { $0.contains("ended the engine started ahead: the speech settings were reloaded") },
            "\(daemon.log.contents)")
        #expect(daemon.stop(signal: SIGTERM) == .exited(0))
    }

    /// Starts the daemon (through `wrapper`) with a spare whose engine detaches a helper that ignores SIGTERM,
    /// waits for both, stops the daemon, and checks that nothing of them is left running.
    static func stopLeavesNothing(helperHoldsTheOutput: Bool, wrapper: [String], logging line: String? = nil) throws {
        let (engine, helper) = (ProcessTable.uniqueSleep(), ProcessTable.uniqueSleep())
        defer { for marker in [engine, helper] { ProcessTable.kill(withArgument: marker) } }
        let directory = TemporaryDirectory("spare")
        let script = directory.appending("engine.sh")
        let output = helperHoldsTheOutput ? "" : "> /dev/null "
        Files.write(
            script,
            """
            setsid sh -c 'trap "" TERM HUP; exec sleep \(helper)' \(output)2>&1 < /dev/null &
            printf '{"type":"progress","time":0}\\n'
            exec sleep \(engine)

            """)
        let daemon = try DaemonProcess(
            arguments: [
                "--audio-device", "null", "--no-cue", "--call-audio", "off", "--speech-command", "exec sh \(script)",
                "--speech-spare-at-start",
            ], wrapper: wrapper)
        let client = try daemon.client()
        #expect(try waitFor { try client.result("status")["speechSpare"] == "warm" }, "the engine is up")
        #expect(
            try waitFor {
                !ProcessTable.processes(withArgument: engine).isEmpty
                    && !ProcessTable.processes(withArgument: helper).isEmpty
            }, "the engine and its helper run")
        #expect(daemon.stop(signal: SIGTERM) == .exited(0))
        #expect(daemon.log.contents.contains("ended the engine started ahead: syncupsd is stopping"))
        if let line { #expect(daemon.log.contents.contains(line), "\(daemon.log.contents)") }
        #expect(
            try waitFor(timeout: .seconds(5)) {
                [engine, helper].allSatisfy { ProcessTable.processes(withArgument: $0).isEmpty }
            }, "left running: \([engine, helper].map(ProcessTable.processes(withArgument:)))\n\(daemon.log.contents)")
    }
}
