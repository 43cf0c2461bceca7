import CALSA

/// A failed ALSA call: which one, on which device, and ALSA's own description of the code.
public struct ALSAError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call and its device, e.g. `snd_pcm_open(default)`.
    public var operation: String
    /// The negative errno ALSA returned.
    public var code: Int32

    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    public var description: String { "\(operation): \(String(cString: snd_strerror(code)))" }

}
