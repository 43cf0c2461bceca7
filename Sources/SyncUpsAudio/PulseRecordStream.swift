import CPulse
import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// A record stream from the sound server, on a `pa_mainloop` that the capture thread itself iterates: every
/// wait is bounded. `pa_simple`, used before, waits for the server with no limit (its own thread blocked in a
/// condition variable), so a hung server (pipewire-pulse stopped) kept each meeting's capture threads, its
/// `pa_simple` threads and their descriptors until it woke up, and the meeting said it recorded. Here a
/// server that answers nothing within `timeout` fails the open or the read, the capture reports the source
/// gone and retries, and `close` frees the connection (its socket, its mainloop) at once. Used by one thread
/// at a time (`AudioCapture` hands a stream to its thread): hence `@unchecked Sendable`.
final class PulseRecordStream: @unchecked Sendable {
    /// How long a read (or the connection's set-up) waits for the server before it fails with `ETIMEDOUT`: far
    /// more than a working server takes (a fragment every 100 ms), less than `AudioCapture.stop` waits for its
    /// thread, so a stop never leaves the thread behind.
    static let timeout = Duration.milliseconds(1500)

    private let mainloop: OpaquePointer
    private let context: OpaquePointer
    private var stream: OpaquePointer?
    /// Bytes of the last fragment not yet returned by `read`.
    private var pending: [UInt8] = []

    /// Connects to the default server and opens a record stream from `source`; nil and a negative errno (with
    /// libpulse's words) when it fails or the server does not answer within `timeout`.
    static func open(source: String, name: String) -> Result<PulseRecordStream, AudioError> {
        guard let mainloop = pa_mainloop_new() else {
            return .failure(AudioError(.pulseAudio, operation: "pa_mainloop_new", code: -ENOMEM))
        }
        guard let context = pa_context_new(pa_mainloop_get_api(mainloop), "syncupsd") else {
            pa_mainloop_free(mainloop)
            return .failure(AudioError(.pulseAudio, operation: "pa_context_new", code: -ENOMEM))
        }
        let opened = PulseRecordStream(mainloop: mainloop, context: context)
        let result = opened.connect(source: source, name: name)
        if case .failure = result { opened.close() }
        return result.map { opened }
    }

    private init(mainloop: OpaquePointer, context: OpaquePointer) {
        self.mainloop = mainloop
        self.context = context
    }

    private func connect(source: String, name: String) -> Result<Void, AudioError> {
        let deadline = MonotonicInstant.now() + Self.timeout
        guard pa_context_connect(context, nil, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
            return .failure(contextError("connecting to the sound server"))
        }
        let ready = iterate(until: deadline) {
            let state = pa_context_get_state(context)
            return state == PA_CONTEXT_READY || PA_CONTEXT_IS_GOOD(state) == 0
        }
        guard pa_context_get_state(context) == PA_CONTEXT_READY else {
            return .failure(
                ready ? contextError("connecting to the sound server") : Self.silent("connecting to the sound server"))
        }
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(AudioFormat.sampleRate), channels: 1)
        guard let stream = pa_stream_new(context, name, &spec, nil) else {
            return .failure(contextError("creating the record stream"))
        }
        self.stream = stream
        var attributes = pa_buffer_attr(
            maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max, minreq: UInt32.max,
            fragsize: UInt32(AudioFormat.bytesPerChunk))
        let flags = pa_stream_flags_t(
            rawValue: PA_STREAM_INTERPOLATE_TIMING.rawValue | PA_STREAM_ADJUST_LATENCY.rawValue
                | PA_STREAM_AUTO_TIMING_UPDATE.rawValue)
        guard pa_stream_connect_record(stream, source, &attributes, flags) >= 0 else {
            return .failure(contextError("recording \(source)"))
        }
        let answered = iterate(until: deadline) {
            let state = pa_stream_get_state(stream)
            return state == PA_STREAM_READY || PA_STREAM_IS_GOOD(state) == 0
        }
        guard pa_stream_get_state(stream) == PA_STREAM_READY else {
            return .failure(answered ? contextError("recording \(source)") : Self.silent("recording \(source)"))
        }
        return .success(())
    }

    /// Fills `buffer` with `frames` frames; returns `frames`, or a negative errno: the connection or the stream
    /// failed, or (`ETIMEDOUT`) the server delivered nothing for `timeout`.
    func read(_ buffer: UnsafeMutablePointer<Int16>, _ frames: Int) -> Int {
        guard let stream else { return -Int(ENOTCONN) }
        let wanted = frames * AudioFormat.bytesPerFrame
        var filled = 0
        var deadline = MonotonicInstant.now() + Self.timeout
        while filled < wanted {
            if !pending.isEmpty {
                let count = min(pending.count, wanted - filled)
                pending.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(buffer).advanced(by: filled).copyMemory(
                        from: bytes.baseAddress!, byteCount: count)
                }
                pending.removeFirst(count)
                filled += count
                deadline = MonotonicInstant.now() + Self.timeout
                continue
            }
            guard pa_context_get_state(context) == PA_CONTEXT_READY, pa_stream_get_state(stream) == PA_STREAM_READY
            else { return Int(contextError("").code) }
            var data: UnsafeRawPointer?
            var length = 0
            guard pa_stream_peek(stream, &data, &length) >= 0 else { return Int(contextError("").code) }
            if length > 0 {
                // A hole (no data) is skipped, as `pa_simple` does; the capture fills lost time with silence.
                if let data { pending = Array(UnsafeRawBufferPointer(start: data, count: length)) }
                pa_stream_drop(stream)
                continue
            }
            if !iterate(until: deadline, { pa_stream_readable_size(stream) > 0 || !isGood(stream) }) {
                return -Int(ETIMEDOUT)
            }
        }
        return frames
    }

    /// Frames the server and this stream hold that `read` has not returned; nil before the first timing answer.
    var bufferedFrames: Int? {
        guard let stream else { return nil }
        var microseconds: pa_usec_t = 0
        var negative: Int32 = 0
        guard pa_stream_get_latency(stream, &microseconds, &negative) >= 0 else { return nil }
        let server = negative != 0 ? 0 : Int(microseconds * UInt64(AudioFormat.sampleRate) / 1_000_000)
        return server + pending.count / AudioFormat.bytesPerFrame
    }

    /// Frees the stream, the connection and the mainloop: nothing of it is left, whatever the server does.
    func close() {
        if let stream {
            pa_stream_disconnect(stream)
            pa_stream_unref(stream)
            self.stream = nil
        }
        pa_context_disconnect(context)
        pa_context_unref(context)
        pa_mainloop_free(mainloop)
    }

    /// Runs the mainloop until `done` or `deadline`; returns whether `done` held (false: the deadline passed, or
    /// the mainloop failed).
    private func iterate(until deadline: MonotonicInstant, _ done: () -> Bool) -> Bool {
        while !done() {
            let remaining = deadline - MonotonicInstant.now()
            guard remaining > .zero else { return false }
            let microseconds = Int32(clamping: max(1, remaining.nanoseconds / 1000))
            guard pa_mainloop_prepare(mainloop, microseconds) >= 0, pa_mainloop_poll(mainloop) >= 0,
                pa_mainloop_dispatch(mainloop) >= 0
            else { return false }
        }
        return true
    }

    private func isGood(_ stream: OpaquePointer) -> Bool {
        PA_CONTEXT_IS_GOOD(pa_context_get_state(context)) != 0 && PA_STREAM_IS_GOOD(pa_stream_get_state(stream)) != 0
    }

    private func contextError(_ operation: String) -> AudioError {
        let code = pa_context_errno(context)
        return CaptureDevice.pulseError(operation, code == 0 ? Int32(PA_ERR_CONNECTIONTERMINATED.rawValue) : code)
    }

    /// The server accepted the connection and said nothing: stopped or hung.
    private static func silent(_ operation: String) -> AudioError {
        AudioError(
            .pulseAudio, operation: operation, code: -ETIMEDOUT,
            message: "the sound server did not answer for \(timeout.seconds) s (stopped or hung)")
    }
}
