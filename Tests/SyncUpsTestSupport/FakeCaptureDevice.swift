import Glibc
import SyncUpsAudio
import Synchronization

/// A microphone that can be unplugged and plugged back in on cue, behind the same `CaptureDevice`
/// interface as ALSA: no real device here can vanish when a test wants it to.
public final class FakeMicrophone: Sendable {
    private struct State {
        var isPluggedIn = true
        var opens = 0
        var framesServed = 0
        var pendingErrors: [Int32] = []
        var recoveries: [Int32] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Unplugs it: the open stream fails with `ENODEV` and opening fails until `plugIn`.
    public func unplug() { state.withLock { $0.isPluggedIn = false } }
    public func plugIn() { state.withLock { $0.isPluggedIn = true } }
    /// The next read returns `error` (e.g. `-EPIPE`, an overrun).
    public func fail(next error: Int32) { state.withLock { $0.pendingErrors.append(error) } }

    public var openCount: Int { state.withLock { $0.opens } }
    public var recoveries: [Int32] { state.withLock { $0.recoveries } }

    /// Sample value of frame `n`: a ramp, so any lost or repeated frame shows.
    public static func sample(_ frame: Int) -> Int16 { Int16(truncatingIfNeeded: frame % 20_000 + 1) }

    public var device: CaptureDevice {
        CaptureDevice { (name) throws(AudioError) in
            let opened = self.state.withLock { state -> Bool in
                guard state.isPluggedIn else { return false }
                state.opens += 1
                return true
            }
            guard opened else { throw AudioError(.alsa, operation: "snd_pcm_open(\(name))", code: -ENODEV) }
            return CaptureStream(
                read: { buffer, frames in
                    self.state.withLock { state in
                        if !state.pendingErrors.isEmpty { return Int(state.pendingErrors.removeFirst()) }
                        guard state.isPluggedIn else { return -Int(ENODEV) }
                        for index in 0..<frames { buffer[index] = Self.sample(state.framesServed + index) }
                        state.framesServed += frames
                        return frames
                    }
                },
                recover: { error in
                    self.state.withLock { $0.recoveries.append(error) }
                    return error == -EPIPE ? 0 : error
                },
                close: {}
            )
        }
    }
}
