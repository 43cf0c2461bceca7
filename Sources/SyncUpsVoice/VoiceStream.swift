import Glibc

/// One partial utterance's embedding of a running stream: 1.6 s of audio from `start` (in samples at 16 kHz).
public struct VoiceWindow: Sendable, Equatable {
    public var start: Int
    public var count: Int
    /// nil where the window was too quiet to be speech (no embedding computed: silence costs nothing).
    public var embedding: [Float]?
    /// The window's level in dBFS.
    public var level: Float
    /// The microphone's window of a call meeting judged the call's echo (`EchoRule`): not embedded.
    public var echo = false
    /// For a call meeting's microphone: how well it followed the call (`EchoRule.similarity`; nil where the
    /// call was silent, the microphone much louder, or the call's audio was not there to compare).
    public var echoSimilarity: Float?
}

/// Cuts a stream of 16 kHz samples into back-to-back 1.6 s partials and embeds each that is loud enough:
/// the daemon's cadence, one LSTM pass over each second of speech.
public final class VoiceStream {
    public static let windowSamples = VoiceEncoder.partialFrames * MelFrontend.hop
    /// Below this a window is silence (Resemblyzer normalises quieter audio up to -30 dBFS; a quiet room's
    /// noise must not be made a voice).
    public static let silenceLevel: Float = -50
    static let targetLevel: Float = -30

    private let encoder: VoiceEncoder
    private var pending: [Float] = []
    private var position = 0

    /// `start`: the position of the first sample appended, in samples (a stream that restarts after a gap).
    public init(encoder: VoiceEncoder, start: Int = 0) {
        self.encoder = encoder
        position = start
        pending.reserveCapacity(Self.windowSamples)
    }

    /// The position of the next sample appended.
    public var end: Int { position + pending.count }

    /// Signed 16-bit little-endian PCM (the capture's format) as the samples `append` takes, in [-1, 1]; an odd
    /// last byte is left out. In this module, optimised in debug builds too, and written out: the closure every
    /// caller wrote took the type checker up to a second each.
    public static func samples(pcm bytes: ArraySlice<UInt8>) -> [Float] {
        var samples: [Float] = []
        samples.reserveCapacity(bytes.count / 2)
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            let value = UInt16(bytes[index + 1]) << 8 | UInt16(bytes[index])
            samples.append(Float(Int16(bitPattern: value)) / 32767)
            index += 2
        }
        return samples
    }

    public static func samples(pcm bytes: [UInt8]) -> [Float] {
        samples(pcm: bytes[...])
    }

    /// 16-bit samples as the samples `append` takes, in [-1, 1].
    public static func samples(_ values: [Int16]) -> [Float] {
        values.map { Float($0) / 32767 }
    }

    /// Appends samples in [-1, 1]; returns the windows they completed. `isEcho` judges each window (its samples
    /// and start) before it is embedded: one it says is an echo is not.
    public func append(
        _ samples: ArraySlice<Float>, isEcho: ((_ window: [Float], _ start: Int) -> Bool)? = nil
    ) -> [VoiceWindow] {
        var windows: [VoiceWindow] = []
        var rest = samples
        while !rest.isEmpty {
            let take = min(rest.count, Self.windowSamples - pending.count)
            pending += rest.prefix(take)
            rest = rest.dropFirst(take)
            if pending.count == Self.windowSamples {
                if let isEcho, isEcho(pending, position) {
                    windows.append(
                        VoiceWindow(
                            start: position, count: pending.count, embedding: nil, level: Self.level(pending),
                            echo: true))
                } else {
                    windows.append(window(pending, start: position))
                }
                position += Self.windowSamples
                pending.removeAll(keepingCapacity: true)
            }
        }
        return windows
    }

    /// The embedding of one window of samples, as Resemblyzer embeds a partial: volume raised to -30 dBFS if
    /// quieter, the mel frames, the LSTM.
    func window(_ samples: [Float], start: Int) -> VoiceWindow {
        let level = Self.level(samples)
        guard level > Self.silenceLevel, Self.isSpeechLike(samples) else {
            return VoiceWindow(start: start, count: samples.count, embedding: nil, level: level)
        }
        let gain = level < Self.targetLevel ? powf(10, (Self.targetLevel - level) / 20) : 1
        let mel = encoder.frontend.frames(of: gain == 1 ? samples : samples.map { $0 * gain })
        let frames = VoiceEncoder.partialFrames
        let embedding = encoder.embed(mel: Array(mel[0..<frames * VoiceModel.melBands]), frames: frames)
        return VoiceWindow(start: start, count: samples.count, embedding: embedding, level: level)
    }

    /// Whether a window sounds like speech, not noise or music, before it may be embedded (and so teach a
    /// profile): some of its 32 ms frames are voiced (a normalised autocorrelation peak of 0.5 or more at a
    /// pitch of 80-400 Hz) and its loudness moves as syllables do (the frames' levels vary by 5 dB or more).
    /// Pink noise has no voiced frame; a steady tone or hum barely moves; LibriVox and espeak-ng speech has 15
    /// to 75 % voiced frames and 7 to 40 dB of movement (the attack fixtures, measured window by window).
    public static func isSpeechLike(_ samples: [Float]) -> Bool {
        let frame = 512
        let hop = 256
        let pitchLags = 40...200
        var levels: [Float] = []
        var voiced = 0
        var start = 0
        var centred = [Float](repeating: 0, count: frame)
        while start + frame <= samples.count {
            var mean: Float = 0
            for index in 0..<frame { mean += samples[start + index] }
            mean /= Float(frame)
            var energy: Float = 0
            for index in 0..<frame {
                centred[index] = samples[start + index] - mean
                energy += centred[index] * centred[index]
            }
            let frameLevel = 10 * log10f(energy / Float(frame) + 1e-12)
            levels.append(frameLevel)
            if frameLevel >= -55 && energy > 0 {
                var peak: Float = 0
                for lag in pitchLags {
                    var sum: Float = 0
                    for index in 0..<(frame - lag) { sum += centred[index] * centred[index + lag] }
                    peak = max(peak, sum)
                }
                if peak / energy > 0.5 { voiced += 1 }
            }
            start += hop
        }
        guard !levels.isEmpty else { return false }
        let mean = levels.reduce(0, +) / Float(levels.count)
        let spread = (levels.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Float(levels.count)).squareRoot()
        return Float(voiced) / Float(levels.count) >= 0.1 && spread >= 5
    }

    /// The RMS level of samples in dBFS (-infinity for silence).
    public static func level(_ samples: [Float]) -> Float {
        guard !samples.isEmpty else { return -.infinity }
        let meanSquare = samples.reduce(0) { $0 + $1 * $1 } / Float(samples.count)
        return 10 * log10f(meanSquare)
    }
}
