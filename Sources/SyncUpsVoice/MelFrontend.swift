import Glibc

/// Resemblyzer's frontend, as `librosa.feature.melspectrogram(sr: 16000, n_fft: 400, hop_length: 160, n_mels: 40)`
/// computes it: a periodic Hann window of 25 ms every 10 ms, centred (200 zeros each side), the power spectrum,
/// Slaney-normalised mel filters from 0 to 8 kHz. Not a log spectrogram: the encoder was trained on power.
public struct MelFrontend: Sendable {
    public static let sampleRate = 16000
    public static let windowLength = 400
    public static let hop = 160
    static let bins = windowLength / 2 + 1

    /// [bins × windowLength] each: the DFT as two matrices (400 is no power of two, and 8 M multiply-adds a
    /// second of audio is a small part of the LSTM's cost).
    private let cosines: [Float]
    private let sines: [Float]
    private let window: [Float]
    /// [melBands × bins].
    let filters: [Float]

    public init() {
        let n = Self.windowLength
        window = (0..<n).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(n))) }
        var cosines = [Float](repeating: 0, count: Self.bins * n)
        var sines = [Float](repeating: 0, count: Self.bins * n)
        for k in 0..<Self.bins {
            for t in 0..<n {
                let angle = 2 * Double.pi * Double((k * t) % n) / Double(n)
                cosines[k * n + t] = Float(cos(angle))
                sines[k * n + t] = Float(sin(angle))
            }
        }
        self.cosines = cosines
        self.sines = sines
        filters = Self.slaneyFilters(bands: VoiceModel.melBands)
    }

    /// The number of frames `frames(of:)` returns for `count` samples.
    public static func frameCount(samples count: Int) -> Int { 1 + count / hop }

    /// The mel power spectrogram of 16 kHz samples in [-1, 1], [frames × 40].
    public func frames(of samples: [Float]) -> [Float] {
        let n = Self.windowLength
        let frameCount = Self.frameCount(samples: samples.count)
        var output = [Float](repeating: 0, count: frameCount * VoiceModel.melBands)
        var frame = [Float](repeating: 0, count: n)
        var power = [Float](repeating: 0, count: Self.bins)
        for index in 0..<frameCount {
            let start = index * Self.hop - n / 2
            for t in 0..<n {
                let source = start + t
                frame[t] = source >= 0 && source < samples.count ? samples[source] * window[t] : 0
            }
            frame.withUnsafeBufferPointer { frame in
                cosines.withUnsafeBufferPointer { cosines in
                    sines.withUnsafeBufferPointer { sines in
                        for k in 0..<Self.bins {
                            let re = dot(cosines.baseAddress! + k * n, frame.baseAddress!, n)
                            let im = dot(sines.baseAddress! + k * n, frame.baseAddress!, n)
                            power[k] = re * re + im * im
                        }
                    }
                }
            }
            power.withUnsafeBufferPointer { power in
                filters.withUnsafeBufferPointer { filters in
                    for band in 0..<VoiceModel.melBands {
                        output[index * VoiceModel.melBands + band] = dot(
                            filters.baseAddress! + band * Self.bins, power.baseAddress!, Self.bins)
                    }
                }
            }
        }
        return output
    }

    /// librosa.filters.mel(htk: false, norm: "slaney"): linear below 1 kHz, logarithmic above.
    static func slaneyFilters(bands: Int) -> [Float] {
        let fSp = 200.0 / 3
        let minLogHz = 1000.0
        let minLogMel = minLogHz / fSp
        let logStep = log(6.4) / 27
        func hzToMel(_ hz: Double) -> Double { hz >= minLogHz ? minLogMel + log(hz / minLogHz) / logStep : hz / fSp }
        func melToHz(_ mel: Double) -> Double {
            mel >= minLogMel ? minLogHz * exp(logStep * (mel - minLogMel)) : fSp * mel
        }
        let maxMel = hzToMel(Double(sampleRate) / 2)
        let melHz = (0..<bands + 2).map { melToHz(maxMel * Double($0) / Double(bands + 1)) }
        let fftHz = (0..<bins).map { Double(sampleRate) / 2 * Double($0) / Double(bins - 1) }
        var weights = [Float](repeating: 0, count: bands * bins)
        for band in 0..<bands {
            let norm = 2 / (melHz[band + 2] - melHz[band])
            for bin in 0..<bins {
                let lower = (fftHz[bin] - melHz[band]) / (melHz[band + 1] - melHz[band])
                let upper = (melHz[band + 2] - fftHz[bin]) / (melHz[band + 2] - melHz[band + 1])
                weights[band * bins + bin] = Float(max(0, min(lower, upper)) * norm)
            }
        }
        return weights
    }
}

/// Σ a[i]·b[i], eight lanes at a time.
@inline(__always)
func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ count: Int) -> Float {
    var sum0 = SIMD8<Float>()
    var sum1 = SIMD8<Float>()
    var index = 0
    while index + 16 <= count {
        sum0 +=
            UnsafeRawPointer(a + index).loadUnaligned(as: SIMD8<Float>.self)
            * UnsafeRawPointer(b + index).loadUnaligned(as: SIMD8<Float>.self)
        sum1 +=
            UnsafeRawPointer(a + index + 8).loadUnaligned(as: SIMD8<Float>.self)
            * UnsafeRawPointer(b + index + 8).loadUnaligned(as: SIMD8<Float>.self)
        index += 16
    }
    var sum = (sum0 + sum1).sum()
    while index < count {
        sum += a[index] * b[index]
        index += 1
    }
    return sum
}
