import CPulse
import Glibc
import SyncUpsPOSIX
import Synchronization

/// A `pa_simple` record stream. It is used by one thread at a time (opened on the loop's thread for the first
/// stream, then handed to the capture thread before it starts, as `PCMHandle` is): hence `@unchecked Sendable`.
final class SimpleHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }
}

extension CaptureDevice {
    /// The name that records the monitor of whichever sink is the default: the call.
    public static let defaultMonitor = "@call"
    /// The name that records whichever source is the default: the microphone.
    public static let defaultSource = "@microphone"

    /// Capture through the sound server's own API (libpulse; PipeWire serves it too): S16_LE, 16 kHz, mono,
    /// 100 ms fragments, resampled by the server. `defaultMonitor` and `defaultSource` follow the server's
    /// defaults: when another device becomes the default mid-meeting, the stream's next read returns
    /// `CaptureStream.deviceChanged` and the capture reopens on the new one. Any other name is a source name.
    public static func pulse(_ monitor: PulseMonitor) -> CaptureDevice {
        CaptureDevice { (name) throws(ALSAError) in
            guard let snapshot = monitor.snapshot else {
                monitor.reconnectNow()
                throw ALSAError(
                    operation: "connecting to the sound server", code: -ECONNREFUSED,
                    message: monitor.error ?? "not connected")
            }
            @Sendable func resolve(_ snapshot: PulseMonitor.Snapshot) -> String? {
                switch name {
                case defaultMonitor: snapshot.defaultMonitor
                case defaultSource: snapshot.defaultSource
                default: name
                }
            }
            guard let source = resolve(snapshot) else {
                throw ALSAError(
                    operation: "finding \(name)", code: -ENODEV, message: "the server has no default device")
            }
            var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(AudioFormat.sampleRate), channels: 1)
            var attributes = pa_buffer_attr(
                maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max, minreq: UInt32.max,
                fragsize: UInt32(AudioFormat.bytesPerChunk))
            var error: Int32 = 0
            let streamName = name == defaultMonitor ? "meeting call" : "meeting microphone"
            guard
                let simple = pa_simple_new(
                    nil, "syncupsd", PA_STREAM_RECORD, source, streamName, &spec, nil, &attributes, &error)
            else {
                throw pulseError("pa_simple_new(\(source))", error)
            }
            let handle = SimpleHandle(simple)
            let follows = name == defaultMonitor || name == defaultSource
            let lastRefresh = Mutex(MonotonicInstant.now())
            return CaptureStream(
                read: { buffer, frames in
                    if follows {
                        if let current = monitor.snapshot.flatMap(resolve), current != source {
                            return CaptureStream.deviceChanged
                        }
                        let now = MonotonicInstant.now()
                        let isDue = lastRefresh.withLock { last in
                            guard now - last >= .seconds(1) else { return false }
                            last = now
                            return true
                        }
                        if isDue { monitor.refresh() }
                    }
                    var error: Int32 = 0
                    guard pa_simple_read(handle.pointer, buffer, frames * AudioFormat.bytesPerFrame, &error) >= 0
                    else { return Int(pulseError("", error).code) }
                    return frames
                },
                recover: { error in error },
                close: { pa_simple_free(handle.pointer) },
                device: source
            )
        }
    }

    /// A libpulse error code as the closest negative errno, with libpulse's own words.
    static func pulseError(_ operation: String, _ code: Int32) -> ALSAError {
        let errno: Int32 =
            switch pa_error_code(rawValue: UInt32(code)) {
            case PA_ERR_CONNECTIONREFUSED: ECONNREFUSED
            case PA_ERR_NOENTITY: ENODEV
            case PA_ERR_CONNECTIONTERMINATED: ECONNRESET
            case PA_ERR_TIMEOUT: ETIMEDOUT
            case PA_ERR_ACCESS: EACCES
            default: EIO
            }
        return ALSAError(operation: operation, code: -errno, message: String(cString: pa_strerror(code)))
    }
}
