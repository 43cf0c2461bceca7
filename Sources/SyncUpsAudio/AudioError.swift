import CALSA
import Glibc

/// A failed audio call: which library it came from, which call on which device, and that library's own
/// description of the code.
public struct AudioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Whose call failed, and so whose words describe `code`.
    public enum Source: Sendable, Equatable {
        /// ALSA (`snd_pcm_*`): `snd_strerror(code)`.
        case alsa
        /// The sound server's libpulse (`PulseCapture`, `PulseMonitor`): `code` is the closest negative errno
        /// to its `pa_error_code`, and `message` its `pa_strerror`.
        case pulseAudio
        /// The system (an eventfd, a thread, a stream's read): `strerror(-code)`.
        case system
    }

    public var source: Source
    /// The call and its device, e.g. `snd_pcm_open(default)`.
    public var operation: String
    /// A negative errno (ALSA's codes are).
    public var code: Int32
    /// The library's own words, when they are not the source's description of `code`.
    public var message: String?

    public init(_ source: Source, operation: String, code: Int32, message: String? = nil) {
        self.source = source
        self.operation = operation
        self.code = code
        self.message = message
    }

    public var description: String {
        let words =
            message
            ?? (source == .alsa ? String(cString: snd_strerror(code)) : String(cString: strerror(-code)))
        return "\(operation): \(words)"
    }
}
