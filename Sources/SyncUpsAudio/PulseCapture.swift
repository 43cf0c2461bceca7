import CPulse
import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// A record stream (`PulseRecordStream`), opened by the capture thread's first read and used by that thread
/// alone (`AudioCapture` hands a stream to its thread before it starts and never reads it from elsewhere):
/// hence `@unchecked Sendable`.
final class RecordHandle: @unchecked Sendable {
    var stream: PulseRecordStream?
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
    /// `CaptureStream.deviceChanged` and the capture reopens on the new one; a default source that is a
    /// sink's monitor is no microphone (`Snapshot.defaultMicrophone`), waited for as a missing one. Any other name is a source name,
    /// which must be one of the server's sources (a record stream of an unknown name records whatever the
    /// server picks instead); while it is missing mid-meeting, reads fail and the capture retries.
    ///
    /// Opening talks to nobody: the name is checked against the monitor's snapshot, and the stream itself is
    /// made by the first read, on the capture thread. A server that accepts and never answers (stopped, hung)
    /// fails that open, or a read, after `PulseRecordStream.timeout` (`ETIMEDOUT`): the capture reports the
    /// source gone and retries, and nothing of the attempt is left behind.
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
                case defaultSource: snapshot.defaultMicrophone
                default: snapshot.sources.contains { $0.name == name } ? name : nil
                }
            }
            guard let source = resolve(snapshot) else {
                if name == defaultSource, let monitor = snapshot.defaultSource {
                    // No input (yet): waited for, while the call records (`AudioCapture`), not a failed start.
                    throw AudioError(
                        .pulseAudio, operation: "finding \(name)", code: -EAGAIN,
                        message: "the server's default source, \(monitor), is an output's monitor, not a microphone")
                }
                throw AudioError(
                    .pulseAudio,
                    operation: "finding \(name)", code: -ENODEV,
                    message: follows
                        ? "the server has no default device"
                        : "the sound server has no source of that name (syncupsctl devices lists them)")
            }
            let streamName = name == defaultMonitor ? "meeting call" : "meeting microphone"
            let handle = RecordHandle()
            return CaptureStream(
                read: { buffer, frames in
                    if let snapshot = monitor.snapshot, resolve(snapshot) != source {
                        // Another default: followed, and an open that cannot follow it (none, or no microphone)
                        // says why. A named source that went away is waited for.
                        return follows ? CaptureStream.deviceChanged : -Int(ENODEV)
                    }
                    if follows {
                        // Ask for the defaults again once a second: a change whose event was missed is followed.
                        let now = MonotonicInstant.now()
                        if now - handle.lastRefresh >= .seconds(1) {
                            handle.lastRefresh = now
                            monitor.refresh()
                        }
                    }
                    if handle.stream == nil {
                        switch PulseRecordStream.open(source: source, name: streamName) {
                        case .success(let stream): handle.stream = stream
                        case .failure(let error): return Int(error.code)
                        }
                    }
                    return handle.stream?.read(buffer, frames) ?? -Int(ENOTCONN)
                },
                recover: { error in error },
                close: {
                    handle.stream?.close()
                    handle.stream = nil
                },
                device: source,
                bufferedFrames: { handle.stream?.bufferedFrames }
            )
        }
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
