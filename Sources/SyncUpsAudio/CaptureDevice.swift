import CALSA
import Glibc
import SyncUpsCore

/// Opens capture streams by device name: ALSA live, or a script for tests that need a microphone to vanish
/// and come back, which no real device here can do on cue.
public struct CaptureDevice: Sendable {
    public var open: @Sendable (_ name: String) throws(AudioError) -> CaptureStream

    public init(open: @escaping @Sendable (String) throws(AudioError) -> CaptureStream) {
        self.open = open
    }
}

/// One open capture stream, used by one thread at a time.
public struct CaptureStream: Sendable {
    /// Reads up to `frames` frames into the buffer; returns the count read, or a negative errno.
    public var read: @Sendable (_ buffer: UnsafeMutablePointer<Int16>, _ frames: Int) -> Int
    /// `snd_pcm_recover`: 0 if the stream runs again after an overrun or suspend, else the error.
    public var recover: @Sendable (_ error: Int32) -> Int32
    public var close: @Sendable () -> Void
    /// The device actually opened, when the name only chose it (`@call` → `call.monitor`); nil if the name says.
    public var device: String?
    /// Frames the device has captured that `read` has not returned yet (a sound server's buffer; nil when
    /// it cannot say now), or no closure where the device reports lost time itself (ALSA's overrun): with
    /// one, the capture fills what a stalled server never delivered with silence.
    public var bufferedFrames: (@Sendable () -> Int?)?

    /// What `read` returns when the device the name stands for is another one now (a new default sink):
    /// the capture closes the stream and opens the name again at once.
    public static let deviceChanged = -Int(ERESTART)

    public init(
        read: @escaping @Sendable (UnsafeMutablePointer<Int16>, Int) -> Int,
        recover: @escaping @Sendable (Int32) -> Int32,
        close: @escaping @Sendable () -> Void,
        device: String? = nil,
        bufferedFrames: (@Sendable () -> Int?)? = nil
    ) {
        self.read = read
        self.recover = recover
        self.close = close
        self.device = device
        self.bufferedFrames = bufferedFrames
    }
}

/// An ALSA PCM handle. `snd_pcm_t` is not thread-safe: a handle is used by one thread at a time (the first
/// capture stream is opened on the loop's thread and handed to the capture thread before it starts), which
/// is why the box may be `@unchecked Sendable`.
final class PCMHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }
}

extension CaptureDevice {
    /// Real capture through alsa-lib: S16_LE, 16 kHz, mono, 100 ms periods, a 2 s buffer.
    public static let alsa = CaptureDevice { (name) throws(AudioError) in
        syncups_alsa_silence_errors()
        var pointer: OpaquePointer?
        var result = snd_pcm_open(&pointer, name, SND_PCM_STREAM_CAPTURE, 0)
        guard result == 0, let pointer else {
            throw AudioError(.alsa, operation: "snd_pcm_open(\(name))", code: result)
        }
        let handle = PCMHandle(pointer)
        result = configureCapture(pointer)
        guard result == 0 else {
            snd_pcm_close(pointer)
            throw AudioError(.alsa, operation: "configuring capture on \(name)", code: result)
        }
        return CaptureStream(
            read: { buffer, frames in Int(snd_pcm_readi(handle.pointer, buffer, snd_pcm_uframes_t(frames))) },
            recover: { error in snd_pcm_recover(handle.pointer, error, 1) },
            close: { snd_pcm_close(handle.pointer) }
        )
    }

    private static func configureCapture(_ pcm: OpaquePointer) -> Int32 {
        var params: OpaquePointer?
        var result = snd_pcm_hw_params_malloc(&params)
        guard result == 0, let params else { return result }
        defer { snd_pcm_hw_params_free(params) }
        var rate = UInt32(AudioFormat.sampleRate)
        var period = snd_pcm_uframes_t(AudioFormat.framesPerChunk)
        var buffer = snd_pcm_uframes_t(AudioFormat.sampleRate * 2)
        var direction: Int32 = 0
        for step in [
            { snd_pcm_hw_params_any(pcm, params) },
            { snd_pcm_hw_params_set_access(pcm, params, SND_PCM_ACCESS_RW_INTERLEAVED) },
            { snd_pcm_hw_params_set_format(pcm, params, SND_PCM_FORMAT_S16_LE) },
            { snd_pcm_hw_params_set_channels(pcm, params, UInt32(AudioFormat.channels)) },
            { snd_pcm_hw_params_set_rate_near(pcm, params, &rate, &direction) },
            { snd_pcm_hw_params_set_period_size_near(pcm, params, &period, &direction) },
            { snd_pcm_hw_params_set_buffer_size_near(pcm, params, &buffer) },
            { snd_pcm_hw_params(pcm, params) },
        ] {
            result = step()
            guard result >= 0 else { return result }
        }
        // A "plug" device resamples; a raw hw device that cannot do 16 kHz would record at the wrong speed.
        guard rate == UInt32(AudioFormat.sampleRate) else { return -EINVAL }
        return snd_pcm_prepare(pcm)
    }
}
