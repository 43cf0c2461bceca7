import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// The next meeting's speech command started ahead, in the built daemon: its processes end with the daemon's
/// SIGTERM (the daemon ends the spare's process group before it stops; where user namespaces work, what the
/// spare detached ends with it too), and `status` says the engine was warm.
@Suite struct SpareEngineProcessTests {
    @Test func aSIGTERMLeavesNoProcessOfTheEngineStartedAhead() throws {
        let (engine, helper) = (ProcessTable.uniqueSleep(), ProcessTable.uniqueSleep())
        defer { for marker in [engine, helper] { ProcessTable.kill(withArgument: marker) } }
        let directory = TemporaryDirectory("spare")
        let script = directory.appending("engine.sh")
        Files.write(
            script,
            """
            setsid sleep \(helper) > /dev/null 2>&1 < /dev/null &
            printf '{"type":"progress","time":0}\\n'
            exec sleep \(engine)

            """)
        let daemon = try DaemonProcess(arguments: [
            "--audio-device", "null", "--no-cue", "--speech-command", "exec sh \(script)", "--speech-spare-at-start",
        ])
        let client = try daemon.client()
        #expect(try waitFor { try client.result("status")["speechSpare"] == "warm" }, "the engine is up")
        #expect(
            try waitFor {
                !ProcessTable.processes(withArgument: engine).isEmpty
                    && !ProcessTable.processes(withArgument: helper).isEmpty
            }, "the engine and its helper run")
        #expect(daemon.stop(signal: SIGTERM) == .exited(0))
        #expect(daemon.log.contents.contains("ended the engine started ahead: syncupsd is stopping"))
        let markers = ProcessTable.userNamespacesWork ? [engine, helper] : [engine]
        #expect(
            try waitFor(timeout: .seconds(5)) {
                markers.allSatisfy { ProcessTable.processes(withArgument: $0).isEmpty }
            }, "left running: \(markers.map(ProcessTable.processes(withArgument:)))")
    }
}
