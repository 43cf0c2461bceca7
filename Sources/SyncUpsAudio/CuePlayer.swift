import CALSA
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import Synchronization

/// Plays the speaker-change cue (Scrumdinger's ding) through ALSA playback on its own thread, so the timer
/// and the capture never wait for the sound card.
public final class CuePlayer: Sendable {
    /// The cue: 0.3 s, a 1320 Hz tone over 880 Hz with a quick attack and exponential decay; 4800 frames,
    /// a whole number of any usual period size.
    public static let samples: [Int16] = {
        let count = 4_800
        return (0..<count).map { index in
            let time = Double(index) / Double(AudioFormat.sampleRate)
            let envelope = min(1, time / 0.005) * exp(-time * 12)
            let tone = 0.6 * sin(2 * .pi * 880 * time) + 0.4 * sin(2 * .pi * 1320 * time)
            return Int16((tone * envelope * 0.5 * Double(Int16.max)).rounded())
        }
    }()

    /// The ALSA playback device the cue plays on.
    public let deviceName: String
    private let onFailure: @Sendable (AudioError) -> Void
    private let worker: SerialWorker
    private let isStopping = Atomic(false)
    private let played = Atomic(0)
    /// When the cue playing now began (CLOCK_MONOTONIC nanoseconds), 0 when none plays.
    private let playStarted = Atomic<Int64>(0)
    /// A cue that has not played to its end after this has a device that does not answer (an open or a
    /// write that never returns: a FIFO nobody reads, a hung driver). The cue lasts 0.3 s.
    public static let stuckAfter: Duration = .seconds(2)

    /// Starts the cue's thread; nothing is opened until the first `play()`. Throws if the thread cannot start.
    public init(deviceName: String, onFailure: @escaping @Sendable (AudioError) -> Void) throws(AudioError) {
        self.deviceName = deviceName
        self.onFailure = onFailure
        // A few cues may wait (the speaker changed twice in a second); more mean the device is stuck, and a
        // late ding is wrong anyway: those are dropped.
        do {
            worker = try SerialWorker(name: "syncups-cue", capacity: 4)
        } catch {
            throw AudioError(.system, operation: "starting the cue's thread", code: -error.errno.rawValue)
        }
    }

    /// Plays the cue once, soon; never blocks. Behind a cue stuck in its device (`stuckError`) it waits, and
    /// is dropped when a few wait.
    public func play() {
        _ = worker.tryRun { [self] in
            guard !isStopping.load(ordering: .relaxed) else { return }
            playStarted.store(MonotonicInstant.now().nanoseconds, ordering: .relaxed)
            defer { playStarted.store(0, ordering: .relaxed) }
            if let error = playOnce() { onFailure(error) } else { played.wrappingAdd(1, ordering: .relaxed) }
        }
    }

    /// A cue is in the device now (its thread has not returned from it), before or after `stop`.
    public var isPlaying: Bool { playStarted.load(ordering: .relaxed) != 0 }

    /// The device has held the cue playing now for `stuckAfter` or more (an open or a write that does not
    /// return): its thread waits there, and no cue after it plays. Nil while cues play. Read at any time, before
    /// or after `stop`.
    public var stuckError: AudioError? {
        let started = playStarted.load(ordering: .relaxed)
        guard started != 0 else { return nil }
        let held = MonotonicInstant.now() - MonotonicInstant(nanoseconds: started)
        guard held >= Self.stuckAfter else { return nil }
        return AudioError(
            .system, operation: "playing the cue on \(deviceName)", code: -ETIMEDOUT,
            message: "the device has not answered for \(Int(held.seconds)) s")
    }

    /// How many cues have been played to the end.
    public var playedCount: Int { played.load(ordering: .relaxed) }

    /// Ends the thread after the cue playing now, if any; cues still waiting are not played. Never waits:
    /// a cue stuck in its device must hold up nothing else (the thread ends if the device ever answers).
    public func stop() {
        isStopping.store(true, ordering: .relaxed)
        worker.close()
    }

    private func playOnce() -> AudioError? {
        syncups_alsa_silence_errors()
        var pointer: OpaquePointer?
        var result = snd_pcm_open(&pointer, deviceName, SND_PCM_STREAM_PLAYBACK, 0)
        guard result == 0, let pcm = pointer else {
            return AudioError(.alsa, operation: "snd_pcm_open(\(deviceName), playback)", code: result)
        }
        defer { snd_pcm_close(pcm) }
        result = snd_pcm_set_params(
            pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1, UInt32(AudioFormat.sampleRate), 1, 100_000)
        guard result == 0 else {
            return AudioError(.alsa, operation: "snd_pcm_set_params(\(deviceName))", code: result)
        }
        var offset = 0
        let samples = Self.samples
        while offset < samples.count {
            let written = samples.withUnsafeBufferPointer { buffer in
                snd_pcm_writei(pcm, buffer.baseAddress! + offset, snd_pcm_uframes_t(buffer.count - offset))
            }
            if written >= 0 {
                offset += Int(written)
                continue
            }
            result = snd_pcm_recover(pcm, Int32(written), 1)
            guard result == 0 else {
                return AudioError(.alsa, operation: "snd_pcm_writei(\(deviceName))", code: Int32(written))
            }
        }
        snd_pcm_drain(pcm)
        return nil
    }
}
