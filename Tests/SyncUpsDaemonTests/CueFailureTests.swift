import SyncUpsJSON
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// The speaker-change cue is a real ALSA playback on its own thread; a device that cannot play it is said,
/// once a meeting, as audio trouble, and the meeting goes on without the ding.
@Suite struct CueFailureTests {
    @Test func aCueThatCannotPlayIsSaidOnceAndTheMeetingGoesOnWithoutIt() throws {
        let directory = TemporaryDirectory("cue")
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, clock: .manual(startingAt: VirtualTimeTests.start),
            cueDevice: "syncups_no_such_cue")
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result(
            "syncups.create", ["title": "Design", "duration": 3, "attendees": ["Blob", "Blob Jr", "Blob Sr"]])
        let id = try #require(created["id"]?.stringValue)
        let watcher = LoopClient(try daemon.connect(), daemon)
        _ = try watcher.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])

        // The first change of speaker plays the cue, on its thread, whose open fails: the loop hears of it.
        daemon.advanceTime(by: .seconds(1))
        let error = try watcher.events(until: "session.error").last?["data"]?["message"]?.stringValue
        #expect(
            error
                == "the speaker-change cue did not play: snd_pcm_open(syncups_no_such_cue, playback): "
                + "No such file or directory")

        // The second change plays it again and fails again, unsaid; the meeting runs to its end and is saved.
        daemon.advanceTime(by: .seconds(1))
        daemon.advanceTime(by: .seconds(1))
        let rest = try watcher.events(until: "session.ended")
        #expect(rest.filter { $0["event"] == "session.error" }.isEmpty)
        let speakers = rest.map { $0["data"]?["session"]?["speakerIndex"] }
        #expect(speakers.contains(2), "the floor went on to the third attendee")
        #expect(rest.last?["data"]?["outcome"] == "saved")
    }
}
