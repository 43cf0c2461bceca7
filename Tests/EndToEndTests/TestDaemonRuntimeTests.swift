import SyncUpsTestSupport
import Testing

/// A daemon a test starts (`DaemonProcess`) has a runtime directory of its own, gone with the test: libpulse
/// made its runtime directory in a new `$TMPDIR/pulse-XXXXXXXX` for each one (its link in the temporary
/// `$XDG_CONFIG_HOME` went with the test, the directory stayed: 8522 in /tmp after a day of suites).
@Suite struct TestDaemonRuntimeTests {
    @Test func aTestsDaemonLeavesNoPulseDirectoryInTmp() throws {
        let tmp = TemporaryDirectory("pulse-tmp")
        do {
            // Ready once its first attempt to reach a sound server has been answered (or has waited 1 s).
            let daemon = try DaemonProcess(environment: ["TMPDIR": tmp.path])
            #expect(try daemon.ctl(["status"]).exitCode == 0)
        }
        let left = Files.list(tmp.path).filter { $0.hasPrefix("pulse-") }
        #expect(left.isEmpty, "\(left)")
    }
}
