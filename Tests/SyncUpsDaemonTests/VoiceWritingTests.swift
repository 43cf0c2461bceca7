import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import SyncUpsVoice
import Testing

@testable import SyncUpsDaemon

/// A profile that cannot be written is kept, reported by `voices` and written again until it works.
@Suite struct VoiceWritingTests {
    let directory = TemporaryDirectory("voice-writing")
    let ann = Attendee.ID(uuidString: "00000000-0000-0000-0000-00000000000A")!

    @Test func aProfileThatCannotBeWrittenIsReportedAndRetriedUntilItIs() throws {
        let faults = FaultyFileSystem()
        faults.fail(.write, with: .noSpace)
        let loop = try EventLoop(clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000)))
        let voices = try VoiceService(
            loop: loop, directory: DataDirectory(path: directory.path), model: .unavailable("off"),
            logger: .discarding, wallClock: .fixed(Date(timeIntervalSince1970: 1_764_640_000)),
            fileSystem: faults.fileSystem)
        var profile = VoiceProfile()
        profile.learn(voiceOf(3), seconds: 9.6, at: 1_764_640_000)
        voices.record(profile, for: ann)
        voices.write()
        #expect(loop.run(until: { voices.writeError != nil }))
        let path = VoiceProfileStore(dataDirectory: DataDirectory(path: directory.path)).path(of: ann)
        #expect(!Files.exists(path))
        let reply = voices.json([])
        #expect(reply["unsaved"] == 1)
        #expect(reply["writeError"]?.stringValue?.contains("No space left on device") == true, "\(reply)")
        // The disk has room again: the retry writes it, and `voices` is clean.
        faults.heal()
        loop.advanceTime(by: VoiceService.retryDelay)
        #expect(loop.run(until: { voices.unsaved.isEmpty && voices.writeError == nil }))
        #expect(VoiceProfileStore(dataDirectory: DataDirectory(path: directory.path)).load(ann) == .success(profile))
        #expect(voices.json([])["unsaved"] == 0)
    }

    /// A stop right after a meeting (profiles learned, their write not yet run) writes them before exiting.
    @Test func stoppingWritesWhatIsUnsaved() throws {
        let loop = try EventLoop(clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000)))
        let voices = try VoiceService(
            loop: loop, directory: DataDirectory(path: directory.path), model: .unavailable("off"),
            logger: .discarding, wallClock: .fixed(Date(timeIntervalSince1970: 1_764_640_000)))
        var profile = VoiceProfile()
        profile.learn(voiceOf(5), seconds: 4.8, at: 1_764_640_000)
        voices.record(profile, for: ann)
        voices.shutDown()
        #expect(VoiceProfileStore(dataDirectory: DataDirectory(path: directory.path)).load(ann) == .success(profile))
    }

    func voiceOf(_ axis: Int) -> [Float] {
        var vector = [Float](repeating: 0, count: VoiceModel.embeddingSize)
        vector[axis] = 1
        return vector
    }
}
