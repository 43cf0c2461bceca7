import CALSA

/// A failed audio call: which one, on which device, and the library's own description of the code.
///
/// Named for ALSA, whose calls came first; a libpulse call (`PulseCapture`, `PulseMonitor`) carries a
/// negative errno close to its `pa_strerror` code, and that text as `message`.
public struct ALSAError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call and its device, e.g. `snd_pcm_open(default)`.
    public var operation: String
    /// The negative errno ALSA returned.
    public var code: Int32
    /// The library's own words, when they are not `snd_strerror(code)`'s (libpulse's `pa_strerror`).
    public var message: String?

    public init(operation: String, code: Int32, message: String? = nil) {
        self.operation = operation
        self.code = code
        self.message = message
    }

    public var description: String { "\(operation): \(message ?? String(cString: snd_strerror(code)))" }

}
