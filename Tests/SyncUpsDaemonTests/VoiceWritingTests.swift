import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import SyncUpsVoice
import Synchronization
import Testing

@testable import SyncUpsDaemon

/// A profile that cannot be written is kept, reported by `voices` and written again until it works.
@Suite struct VoiceWritingTests {
    let directory = TemporaryDirectory("voice-writing")
    let ann = Attendee.ID(uuidString: "00000000-0000-0000-0000-00000000000A")!

    @Test func aProfileThatCannotBeWrittenIsReportedAndRetriedUntilItIs() throws {
        let faults = FaultyFileSystem()
        faults.fail(.write, with: .noSpace)
        let (loop, voices, profile) = try writingAnnsProfile(on: faults.fileSystem)
        #expect(loop.run(until: { voices.writeError != nil }))
        let path = VoiceProfileStore(dataDirectory: DataDirectory(path: directory.path)).path(of: ann)
        #expect(!Files.exists(path))
        let reply = voices.json([])
        #expect(reply["unsaved"] == 1)
        #expect(reply["writeError"]?.stringValue?.contains("No space left on device") == true, "\(reply)")
        // The disk has room again: the retry writes it, and `voices` is clean.
        faults.heal()
        loop.advanceTime(by: StoreRetry.initialDelay)
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

    /// A forget while the profile's write is under way (held at its rename, after the data is written) waits
    /// for that write: the file it brings back is removed after it, and nothing writes it again.
    @Test func aForgetDuringTheProfilesWriteLeavesNoFileBehind() throws {
        let atRename = try BlockingQueue<Bool>(capacity: 1)
        let release = try BlockingQueue<Bool>(capacity: 1)
        let held = Mutex(false)
        let faults = FaultyFileSystem { operation in
            guard operation == .rename,
                held.withLock({ was in
                    defer { was = true }
                    return !was
                })
            else { return }
            _ = atRename.push(true)
            _ = release.pop()
        }
        let (loop, voices, _) = try writingAnnsProfile(on: faults.fileSystem)
        #expect(atRename.pop() == true)  // the writer thread is in the write, its rename still to come
        let forgotten = Mutex<SystemError??>(nil)
        voices.forget([ann]) { error in forgotten.withLock { $0 = .some(error) } }
        _ = release.push(true)
        #expect(loop.run(until: { forgotten.withLock { $0 != nil } && !voices.writer.isBusy }))
        #expect(forgotten.withLock { $0 } == .some(nil), "the forget worked")
        let path = VoiceProfileStore(dataDirectory: DataDirectory(path: directory.path)).path(of: ann)
        #expect(!Files.exists(path), "the write under way brought the forgotten profile back")
        #expect(voices.unsaved.isEmpty && voices.profiles[ann] == nil)
    }

    /// A profile that cannot be written shows in `status.persistence` and as `persistence.failed`, as the other
    /// files' failed writes do, and leaves it (`persistence.recovered`) once the retry (the user's files'
    /// back-off) writes it.
    @Test func aFailedProfileWriteShowsInStatusPersistenceUntilTheRetryWritesIt() throws {
        let faults = FaultyFileSystem()
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path,
            clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000)), fileSystem: faults.fileSystem)
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result("syncups.create", ["title": "Voices", "attendees": ["Ann"]])
        let id = try #require(created["attendees"]?[0]?["id"]?.stringValue.flatMap(Attendee.ID.init))
        try client.waitForStatus { status in
            daemon.advanceTime(by: .milliseconds(100))
            return status["persistence"]?["unsavedChanges"] == false
        }
        _ = try client.result("subscribe", ["topics": ["daemon"], "snapshot": false])
        faults.fail(.write, with: .noSpace)
        var profile = VoiceProfile()
        profile.learn(voiceOf(3), seconds: 9.6, at: 1_764_640_000)
        daemon.voices.record(profile, for: id)
        daemon.voices.write()
        let failed = try client.take { $0["event"] == "persistence.failed" }.last
        let error = failed?["data"]?["error"]?.stringValue ?? ""
        #expect(
            error.contains("voice profile") && error.contains("No space left on device"),
            "\(String(describing: failed))")
        let status = try client.result("status")
        #expect(status["persistence"]?["lastError"]?.stringValue == error, "\(status)")
        faults.heal()
        daemon.advanceTime(by: StoreRetry.initialDelay)
        _ = try client.take { $0["event"] == "persistence.recovered" }
        #expect(try client.result("status")["persistence"]?["lastError"] == .null)
        #expect(VoiceProfileStore(dataDirectory: DataDirectory(path: directory.path)).load(id) == .success(profile))
    }

    /// A service on a virtual clock that has learned Ann's profile and started writing it.
    func writingAnnsProfile(on fileSystem: FileSystem) throws -> (EventLoop, VoiceService, VoiceProfile) {
        let loop = try EventLoop(clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000)))
        let voices = try VoiceService(
            loop: loop, directory: DataDirectory(path: directory.path), model: .unavailable("off"),
            logger: .discarding, wallClock: .fixed(Date(timeIntervalSince1970: 1_764_640_000)),
            fileSystem: fileSystem)
        var profile = VoiceProfile()
        profile.learn(voiceOf(3), seconds: 9.6, at: 1_764_640_000)
        voices.record(profile, for: ann)
        voices.write()
        return (loop, voices, profile)
    }

    func voiceOf(_ axis: Int) -> [Float] {
        var vector = [Float](repeating: 0, count: VoiceModel.embeddingSize)
        vector[axis] = 1
        return vector
    }
}
