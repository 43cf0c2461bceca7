import Glibc
import SyncUpsAudio
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization
import Testing

/// Collects what a recorder reports, from its threads, and lets the test wait for it: each report and each
/// chunk of audio (`audio`, the recorder's `onAudio`) is a change to check a condition again.
final class TroubleLog: Sendable {
    private let entries = Mutex<[MeetingRecorder.Trouble]>([])
    let changes = try! ChangeSignal()
    func add(_ trouble: MeetingRecorder.Trouble) {
        entries.withLock { $0.append(trouble) }
        changes.changed()
    }
    func audio(_ chunk: AudioChunk) { changes.changed() }
    var all: [MeetingRecorder.Trouble] { entries.withLock { $0 } }

    /// Whether `condition` came true within ten seconds.
    func waitUntil(_ condition: () -> Bool) -> Bool { changes.wait(until: condition) }

    /// Waits, with a deadline, until the recorder has written `seconds` of audio. The writer counts a chunk
    /// just after reporting it: the next chunk's report finds it counted.
    func waitForAudio(_ recorder: MeetingRecorder, seconds: Double) -> Bool {
        changes.wait(timeout: .seconds(20)) { recorder.statistics.writtenSeconds >= seconds }
    }
}

/// The samples of a WAV file, after checking its header describes exactly the bytes that follow it.
func wavData(_ path: String) throws -> [UInt8] {
    let bytes = try #require(Files.read(path))
    try #require(bytes.count >= 44)
    #expect(Array(bytes[0..<4]) == Array("RIFF".utf8))
    let riff = bytes[4..<8].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
    let data = bytes[40..<44].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
    #expect(Int(data) == bytes.count - 44)
    #expect(Int(riff) == bytes.count - 8)
    return Array(bytes[44...])
}

@Suite struct MeetingRecorderTests {
    @Test func reopensAVanishedMicrophoneAndFillsTheGapWithSilence() throws {
        let microphone = FakeMicrophone()
        let output = TemporaryDirectory("recorder")
        let troubles = TroubleLog()
        let recorder = try MeetingRecorder(
            device: microphone.device,
            deviceName: "usb-mic",
            wavPath: output.appending("meeting.wav"),
            onTrouble: troubles.add,
            onAudio: troubles.audio
        )
        #expect(troubles.waitForAudio(recorder, seconds: 0.5))
        microphone.unplug()
        #expect(
            troubles.waitUntil {
                troubles.all.contains { if case .capture(.disconnected) = $0 { true } else { false } }
            })
        #expect(troubles.waitForAudio(recorder, seconds: 1.8))  // time goes on in silence while it is away
        microphone.plugIn()
        #expect(
            troubles.waitUntil { troubles.all.contains { if case .capture(.reconnected) = $0 { true } else { false } } }
        )
        #expect(troubles.waitForAudio(recorder, seconds: 3))
        recorder.stop(keepsFile: true)
        let statistics = recorder.statistics
        #expect(statistics.capture.reconnects == 1)
        #expect(statistics.capture.fillerFrames >= 16_000)
        #expect(microphone.openCount == 2)
        // Audio time is meeting time: every frame is either captured or filled.
        let data = try wavData(output.appending("meeting.wav"))
        #expect(Int64(data.count / 2) == statistics.capture.capturedFrames + statistics.capture.fillerFrames)
        let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let firstZero = try #require(samples.firstIndex(of: 0))
        #expect(samples[0..<firstZero] == ArraySlice((0..<firstZero).map(FakeMicrophone.sample)))
    }

    @Test func recoversFromAnOverrunAndCountsIt() throws {
        let microphone = FakeMicrophone()
        let output = TemporaryDirectory("recorder")
        let troubles = TroubleLog()
        let recorder = try MeetingRecorder(
            device: microphone.device,
            deviceName: "busy-mic",
            wavPath: output.appending("meeting.wav"),
            onTrouble: troubles.add,
            onAudio: troubles.audio
        )
        #expect(troubles.waitForAudio(recorder, seconds: 0.3))
        microphone.fail(next: -EPIPE)
        #expect(troubles.waitUntil { troubles.all.contains(.capture(.overrun(count: 1))) })
        recorder.stop(keepsFile: true)
        #expect(microphone.recoveries == [-EPIPE])
        #expect(recorder.statistics.capture.overruns == 1)
    }

    @Test func deletesTheAudioWhenTheMeetingIsDiscarded() throws {
        let microphone = FakeMicrophone()
        let output = TemporaryDirectory("recorder")
        let troubles = TroubleLog()
        let recorder = try MeetingRecorder(
            device: microphone.device,
            deviceName: "mic",
            wavPath: output.appending("meeting.wav"),
            onTrouble: troubles.add,
            onAudio: troubles.audio
        )
        #expect(troubles.waitForAudio(recorder, seconds: 0.2))
        recorder.stop(keepsFile: false)
        #expect(!Files.exists(output.appending("meeting.wav")))
    }
}

/// Tests that go through the real alsa-lib in this process. alsa-lib reads its configuration per process,
/// so they share one `ALSA_CONFIG_PATH` and run one at a time.
@Suite(.serialized) struct RealALSATests {
    @Test func capturesARawFileThroughRealALSAByteForByte() throws {
        let speech = SpeechFixture.pattern(seconds: 5)
        let alsa = try ALSAFixture(microphone: speech)
        alsa.install()
        let output = TemporaryDirectory("recorder")
        let troubles = TroubleLog()
        let recorder = try MeetingRecorder(
            device: .alsa,
            deviceName: "virtmic",
            wavPath: output.appending("meeting.wav"),
            onTrouble: troubles.add,
            onAudio: troubles.audio
        )
        #expect(troubles.waitForAudio(recorder, seconds: 1.5))
        recorder.stop(keepsFile: true)
        let data = try wavData(output.appending("meeting.wav"))
        #expect(data.count >= 3200 * 15)
        #expect(data.count % 2 == 0)
        #expect(
            data == Array(speech.prefix(data.count)), "the WAV must hold exactly what the microphone gave, in order")
        #expect(troubles.all.isEmpty)
        #expect(recorder.statistics.capture.overruns == 0)
        #expect(recorder.statistics.capture.droppedFrames == 0)
    }

    @Test func capturesAFIFOFedInRealTimeWithNoFrameDropped() throws {
        let alsa = try ALSAFixture(paced: true)
        alsa.install()
        let speech = SpeechFixture.pattern(seconds: 10)
        let feeder = try PacedFeeder(fifo: alsa.microphonePath, audio: speech)
        let output = TemporaryDirectory("recorder")
        let troubles = TroubleLog()
        let recorder = try MeetingRecorder(
            device: .alsa,
            deviceName: "virtmic",
            wavPath: output.appending("meeting.wav"),
            onTrouble: troubles.add,
            onAudio: troubles.audio
        )
        #expect(troubles.waitForAudio(recorder, seconds: 2))
        recorder.stop(keepsFile: true)
        feeder.stop()
        let data = try wavData(output.appending("meeting.wav"))
        #expect(data.count >= 2 * 32_000)
        #expect(data == Array(speech.prefix(data.count)))
        #expect(troubles.all.isEmpty)
    }

    @Test func refusesADeviceThatDoesNotExistWithALSAsOwnMessage() throws {
        let output = TemporaryDirectory("recorder")
        #expect {
            _ = try MeetingRecorder(
                device: .alsa,
                deviceName: "no_such_device",
                wavPath: output.appending("meeting.wav"),
                onTrouble: { _ in },
                onAudio: { _ in }
            )
        } throws: { error in
            guard case .device(let failure) = error as? RecorderError else { return false }
            return failure.description == "snd_pcm_open(no_such_device): No such file or directory"
        }
        #expect(!Files.exists(output.appending("meeting.wav")))
    }

    // MARK: - The cue

    @Test func playsTheCueThroughRealALSAPlayback() throws {
        let alsa = try ALSAFixture()
        alsa.install()
        let failures = TroubleLog()
        let player = try CuePlayer(deviceName: "sink") { error in failures.add(.capture(.disconnected(error))) }
        let cue = CuePlayer.samples.withUnsafeBytes { Array($0) }
        player.play()
        player.play()
        // Both cues land in the `file` plugin's file (through a shell pipe); the second one is then played to
        // its end (drained) on the cue's thread, which `stop` does not wait for (a device that never answers
        // must hold up nothing).
        #expect(
            try Files.wait(forChangesIn: alsa.directory.path) { Files.read(alsa.playedPath)?.count == 2 * cue.count })
        #expect(MonotonicInstant.poll(until: .now() + .seconds(10)) { player.playedCount == 2 })
        player.stop()
        #expect(Files.read(alsa.playedPath) == cue + cue)
        #expect(failures.all.isEmpty)
    }

    @Test func reportsAMissingPlaybackDevice() throws {
        let failures = TroubleLog()
        let player = try CuePlayer(deviceName: "no_such_device") { error in failures.add(.capture(.disconnected(error)))
        }
        player.play()
        #expect(failures.waitUntil { !failures.all.isEmpty })
        player.stop()
        #expect(player.playedCount == 0)
    }
}
