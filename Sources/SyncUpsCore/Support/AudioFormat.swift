/// The one audio format syncupsd uses everywhere: what the capture records, what the recognizers want (the
/// speech engines are told its rate), and what the WAV holds. In the core, which both the audio and the
/// speech modules use.
public enum AudioFormat {
    /// Signed 16-bit little-endian, mono, 16 kHz.
    public static let sampleRate = 16_000
    public static let channels = 1
    public static let bytesPerFrame = 2
    /// 100 ms: the capture's period and the size of every chunk handed on.
    public static let framesPerChunk = 1_600
    public static let bytesPerChunk = framesPerChunk * bytesPerFrame
}
