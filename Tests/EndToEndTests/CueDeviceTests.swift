import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// The speaker-change cue through a real ALSA playback device that never answers: a `file` plugin writing to a
/// FIFO nobody reads, whose open waits for ever.
@Suite struct CueDeviceTests {
    /// Before, the meeting's end stopped the cue on the clean-up worker and waited there for its thread, stuck in
    /// the device: the next meeting's microphone did not open (10 s, then no audio), its details file was never
    /// written, and every stop waited out its 10 s for the worker (attack 96, 5 of 5). Now the cue is left to
    /// its thread, said to be stuck once a meeting, and the meetings after it start no other thread behind it.
    @Test func aCueDeviceThatNeverAnswersHoldsUpNothingElse() throws {
        let alsa = try ALSAFixture()
        let fifo = alsa.directory.appending("cue.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let config = alsa.directory.appending("stuck.conf")
        Files.write(config, "pcm.stuckcue {\n type file\n slave.pcm \"null\"\n file \"\(fifo)\"\n format \"raw\"\n}\n")
        var environment = alsa.environment
        environment["ALSA_CONFIG_PATH", default: ""] += ":" + config
        let daemon = try DaemonProcess(
            arguments: [
                "--audio-device", "virtmic", "--cue-device", "stuckcue", "--call-audio", "off", "--speech-engine",
                "none",
            ], environment: environment)
        let client = try daemon.client()
        let attendees = (1...8).map { JSONValue.string("Blob \($0)") }
        let created = try client.result(
            "syncups.create", ["title": "Design", "duration": 600, "attendees": .array(attendees)])
        let id = try #require(created["id"]?.stringValue)
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["session"], "snapshot": false])

        for meeting in 1...4 {
            let started = try client.result(
                "session.start", ["syncup": .string(id), "audio": true, "transcribe": false])
            #expect(started["audio"]?["recording"] == true, "meeting \(meeting): \(started)")
            var message = ""
            switch meeting {
            case 1, 3:
                // Ended within a second of a cue the device holds (attack 98: the next meeting started a thread
                // behind it then, one more each meeting, and none said it).
                _ = try client.result("session.next")
            default:
                // Behind the cue the device still holds: said without a cue or a tick (attack 97: it was said
                // only at the next cue; attack 98: only at a tick, and a paused meeting has none), and no
                // thread more.
                _ = try client.result("session.pause")
                message =
                    try watcher.nextEvent("session.error", timeout: .seconds(6))["data"]?["message"]?
                    .stringValue ?? ""
                _ = try client.result("session.resume")
                _ = try client.result("session.next")
            }
            if meeting == 2 || meeting == 4 {
                #expect(
                    message.hasPrefix(
                        "the speaker-change cue did not play: playing the cue on stuckcue: the device has not answered for "
                    ), "meeting \(meeting): \(message)\n\(daemon.log.contents)")
            }
            // Waited for: a thread just started names itself a moment later (twice in 20 loaded runs it was
            // still `syncupsd`). One more stuck thread stays, and fails this at the deadline.
            #expect(
                try waitFor { ProcessTable.threadNames(of: daemon.pid).filter { $0 == "syncups-cue" }.count == 1 },
                "meeting \(meeting): \(ProcessTable.threadNames(of: daemon.pid))")
            _ = try client.result("session.end", ["action": "save"])
            let ended = try watcher.nextEvent("session.ended")
            let meetingID = try #require(ended["data"]?["meeting"]?["id"]?.stringValue)
            let details = daemon.dataPath + "/meetings/" + meetingID + ".json"
            #expect(
                try waitFor { access(details, F_OK) == 0 }, "meeting \(meeting)'s details:\n\(daemon.log.contents)")
        }
        #expect(daemon.stop(signal: SIGTERM) == .exited(0))
        #expect(!daemon.log.contents.contains("without waiting any longer"), "\(daemon.log.contents)")
    }
}
