import SyncUpsPOSIX
import SyncUpsTestSupport
import SyncUpsVoice
import Testing

@testable import SyncUpsDaemon

/// Starting a meeting's voice listener (the speaker encoder on its audio) runs on the loop, inside the turn
/// that hears the recording open: it reads nothing (the model was read at start-up or on SIGHUP, off the
/// loop) and waits for nothing (it makes an eventfd and starts the encoder's thread).
@Suite struct VoiceListenerStartTests {
    #if DEBUG
        /// A meeting with audio (ALSA's `null` device) and a voice model starts its listener with no
        /// blocking work on the loop (`BlockingWork.check` guards the model's read among others).
        @Test func aMeetingsVoiceListenerStartsWithNoBlockingWorkOnTheLoop() throws {
            let directory = TemporaryDirectory("voice-listener")
            let daemon = try VirtualTimeTests.daemon(directory)
            daemon.voices.model = .loaded(try VoiceModel(bytes: weightsFile()), path: "test weights")
            let (client, watcher, id) = try VirtualTimeTests.soloSyncUp(daemon, watching: "session")
            let before = BlockingWork.callsOnLoopOnThisThread
            let started = try client.result(
                "session.start", ["syncup": .string(id), "audio": true, "transcribe": false])
            #expect(started["audio"]?["recording"] == true)
            #expect(daemon.session.active?.machine.voiceListener == .running)
            _ = try client.result("session.end", ["action": "discard"])
            _ = try watcher.events(until: "session.ended")
            #expect(BlockingWork.callsOnLoopOnThisThread == before)
            // The check is armed: the model read on a loop's thread is counted.
            let loop = try EventLoop(clock: .manual(startingAt: VirtualTimeTests.start))
            loop.execute { _ = VoiceService.Model.load(directory.path + "/no-model") }
            loop.runOnce(timeoutMilliseconds: 0)
            #expect(BlockingWork.callsOnLoopOnThisThread == before + 1)
        }
    #endif
}
