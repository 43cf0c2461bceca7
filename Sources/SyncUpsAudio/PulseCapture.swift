import CPulse
import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// A `pa_simple` record stream, opened by the capture thread's first read and used by that thread alone
/// (`AudioCapture` hands a stream to its thread before it starts and never reads it from elsewhere): hence
/// `@unchecked Sendable`.
final class SimpleHandle: @unchecked Sendable {
    var pointer: OpaquePointer?
    /// When the capture last asked the watcher for the server's defaults again.
    var lastRefresh = MonotonicInstant.now()
}

extension CaptureDevice {
    /// The name that records the monitor of whichever sink is the default: the call.
    public static let defaultMonitor = "@call"
    /// The name that records whichever source is the default: the microphone.
    public static let defaultSource = "@microphone"

    /// Capture through the sound server's own API (libpulse; PipeWire serves it too): S16_LE, 16 kHz, mono,
    /// 100 ms fragments, resampled by the server. `defaultMonitor` and `defaultSource` follow the server's
    /// defaults: when another device becomes the default mid-meeting, the stream's next read returns
    /// `CaptureStream.deviceChanged` and the capture reopens on the new one. Any other name is a source name,
    /// which must be one of the server's sources (`pa_simple_new` of an unknown name records whatever the
    /// server picks instead); while it is missing mid-meeting, reads fail and the capture retries.
    ///
    /// Opening talks to nobody: the name is checked against the monitor's snapshot, and the stream itself is
    /// made (`pa_simple_new`) by the first read, on the capture thread. A server that accepts and never
    /// answers (stopped, hung) holds `pa_simple_new` for libpulse's 30 s timeout: that must not be the event
    /// loop's time.
    public static func pulse(_ monitor: PulseMonitor) -> CaptureDevice {
        CaptureDevice { (name) throws(AudioError) in
            guard let snapshot = monitor.snapshot else {
                monitor.reconnectNow()
                throw AudioError(
                    .pulseAudio,
                    operation: "connecting to the sound server", code: -ECONNREFUSED,
                    message: monitor.error ?? "not connected")
            }
            let follows = name == defaultMonitor || name == defaultSource
            @Sendable func resolve(_ snapshot: PulseMonitor.Snapshot) -> String? {
                switch name {
                case defaultMonitor: snapshot.defaultMonitor
                case defaultSource: snapshot.defaultSource
                default: snapshot.sources.contains { $0.name == name } ? name : nil
                }
            }
            guard let source = resolve(snapshot) else {
                throw AudioError(
                    .pulseAudio,
                    operation: "finding \(name)", code: -ENODEV,
                    message: follows
                        ? "the server has no default device"
                        : "the sound server has no source of that name (syncupsctl devices lists them)")
            }
            let streamName = name == defaultMonitor ? "meeting call" : "meeting microphone"
            let handle = SimpleHandle()
            return CaptureStream(
                read: { buffer, frames in
                    if let snapshot = monitor.snapshot, resolve(snapshot) != source {
                        // Another default (follow it), or the named source went away (wait for it).
                        return follows && resolve(snapshot) != nil ? CaptureStream.deviceChanged : -Int(ENODEV)
                    }
                    if follows {
                        // Ask for the defaults again once a second: a change whose event was missed is followed.
                        let now = MonotonicInstant.now()
                        if now - handle.lastRefresh >= .seconds(1) {
                            handle.lastRefresh = now
                            monitor.refresh()
                        }
                    }
                    if handle.pointer == nil {
                        var error: Int32 = 0
                        handle.pointer = Self.openRecordStream(source, streamName, &error)
                        guard handle.pointer != nil else { return Int(pulseError("", error).code) }
                    }
                    var error: Int32 = 0
                    guard pa_simple_read(handle.pointer, buffer, frames * AudioFormat.bytesPerFrame, &error) >= 0
                    else { return Int(pulseError("", error).code) }
                    return frames
                },
                recover: { error in error },
                close: {
                    handle.pointer.map(pa_simple_free)
                    handle.pointer = nil
                },
                device: source,
                bufferedFrames: {
                    guard let pointer = handle.pointer else { return nil }
                    var error: Int32 = 0
                    let microseconds = pa_simple_get_latency(pointer, &error)
                    guard microseconds != pa_usec_t.max else { return nil }
                    return Int(microseconds * UInt64(AudioFormat.sampleRate) / 1_000_000)
                }
            )
        }
    }

    /// `pa_simple_new` of a record stream from `source`; blocks until the server answers (or libpulse's
    /// 30 s timeout), so only the capture thread calls it. Known limit: a source that the server removes
    /// while this stream is being created can leave the call blocked here, with no timeout of libpulse's,
    /// for the rest of the meeting (`callAudio.seconds` then stays at 0); `pa_simple` has no way to bound it.
    private static func openRecordStream(_ source: String, _ streamName: String, _ error: inout Int32)
        -> OpaquePointer?
    {
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(AudioFormat.sampleRate), channels: 1)
        var attributes = pa_buffer_attr(
            maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max, minreq: UInt32.max,
            fragsize: UInt32(AudioFormat.bytesPerChunk))
        return pa_simple_new(nil, "syncupsd", PA_STREAM_RECORD, source, streamName, &spec, nil, &attributes, &error)
    }

    /// A libpulse error code as the closest negative errno, with libpulse's own words.
    static func pulseError(_ operation: String, _ code: Int32) -> AudioError {
        let errno: Int32 =
            switch pa_error_code(rawValue: UInt32(code)) {
            case PA_ERR_CONNECTIONREFUSED: ECONNREFUSED
            case PA_ERR_NOENTITY: ENODEV
            case PA_ERR_CONNECTIONTERMINATED: ECONNRESET
            case PA_ERR_TIMEOUT: ETIMEDOUT
            case PA_ERR_ACCESS: EACCES
            default: EIO
            }
        return AudioError(.pulseAudio, operation: operation, code: -errno, message: String(cString: pa_strerror(code)))
    }
}
