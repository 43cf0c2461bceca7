import SyncUpsJSON
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// A reload (SIGHUP) applies its audio and speech settings from the next meeting: the running one keeps what
/// it started with, and says so.
@Suite struct ReloadMidMeetingTests {
    /// The session object names the microphone the meeting records from, not the one a reload names for the
    /// next meeting (it did, after a reload: attack 95's reading of the session's settings).
    @Test func theSessionNamesTheDeviceItRecordsFromAfterAReload() throws {
        let directory = TemporaryDirectory("reload")
        let daemon = try VirtualTimeTests.daemon(directory)
        let (client, _, id) = try VirtualTimeTests.soloSyncUp(daemon, watching: "session")
        let started = try client.result("session.start", ["syncup": .string(id), "audio": true, "transcribe": false])
        #expect(started["audio"]?["device"] == "null", "\(started)")
        var settings = daemon.session.settings
        settings.audioDeviceName = "hw:9"
        daemon.session.settings = settings
        #expect(try client.result("session.get")["audio"]?["device"] == "null")
        _ = try client.result("session.end", ["action": "discard"])
    }
}
