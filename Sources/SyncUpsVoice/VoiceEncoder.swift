import Glibc

/// The GE2E encoder's forward pass in plain Swift SIMD: mel frames in, an L2-normalised 256-dimensional
/// embedding out. One instance per thread (it keeps its scratch buffers).
public final class VoiceEncoder {
    /// Frames in a partial utterance: 1.6 s.
    public static let partialFrames = 160

    public let model: VoiceModel
    public let frontend = MelFrontend()
    private var gates: [Float] = []
    private var sequence: [Float] = []
    private var next: [Float] = []

    public init(model: VoiceModel) {
        self.model = model
    }

    /// The embedding of a partial utterance of `frames` mel frames ([frames × 40]), as the model's `forward`:
    /// the last layer's final hidden state through the linear layer, ReLU and L2 norm.
    public func embed(mel: [Float], frames: Int) -> [Float] {
        precondition(mel.count == frames * VoiceModel.melBands)
        let hidden = VoiceModel.hidden
        sequence = mel
        var last = [Float](repeating: 0, count: hidden)
        for layer in model.layers {
            last = run(layer, frames: frames)
        }
        var embedding = [Float](repeating: 0, count: VoiceModel.embeddingSize)
        model.linearWeights.withUnsafeBufferPointer { weights in
            last.withUnsafeBufferPointer { last in
                for row in 0..<VoiceModel.embeddingSize {
                    embedding[row] = max(
                        0, dot(weights.baseAddress! + row * hidden, last.baseAddress!, hidden) + model.linearBias[row])
                }
            }
        }
        return normalized(embedding)
    }

    /// Runs one LSTM layer over `sequence` ([frames × input]), leaving its outputs ([frames × hidden]) there;
    /// returns the final hidden state.
    private func run(_ layer: VoiceModel.Layer, frames: Int) -> [Float] {
        let hidden = VoiceModel.hidden
        let gateCount = 4 * hidden
        let input = layer.inputSize
        if gates.count < frames * gateCount { gates = [Float](repeating: 0, count: frames * gateCount) }
        if next.count < frames * hidden { next = [Float](repeating: 0, count: frames * hidden) }
        // The input's part of every gate for every frame at once: each weight row is read once per partial.
        gates.withUnsafeMutableBufferPointer { gates in
            layer.inputWeights.withUnsafeBufferPointer { weights in
                sequence.withUnsafeBufferPointer { sequence in
                    for row in 0..<gateCount {
                        let w = weights.baseAddress! + row * input
                        let bias = layer.bias[row]
                        for t in 0..<frames {
                            gates[t * gateCount + row] = dot(w, sequence.baseAddress! + t * input, input) + bias
                        }
                    }
                }
            }
        }
        var h = [Float](repeating: 0, count: hidden)
        var c = [Float](repeating: 0, count: hidden)
        gates.withUnsafeMutableBufferPointer { gates in
            layer.recurrentWeights.withUnsafeBufferPointer { weights in
                next.withUnsafeMutableBufferPointer { next in
                    h.withUnsafeMutableBufferPointer { h in
                        c.withUnsafeMutableBufferPointer { c in
                            for t in 0..<frames {
                                let g = gates.baseAddress! + t * gateCount
                                for row in 0..<gateCount {
                                    g[row] += dot(
                                        weights.baseAddress! + row * hidden, UnsafePointer(h.baseAddress!), hidden)
                                }
                                for unit in 0..<hidden {
                                    let i = sigmoid(g[unit])
                                    let f = sigmoid(g[hidden + unit])
                                    let cell = tanhf(g[2 * hidden + unit])
                                    let o = sigmoid(g[3 * hidden + unit])
                                    c[unit] = f * c[unit] + i * cell
                                    h[unit] = o * tanhf(c[unit])
                                }
                                (next.baseAddress! + t * hidden).update(from: h.baseAddress!, count: hidden)
                            }
                        }
                    }
                }
            }
        }
        sequence = Array(next[0..<frames * hidden])
        return h
    }

    /// Resemblyzer's `embed_utterance(wav, rate: 1.3, min_coverage: 0.75)` on samples already at 16 kHz (its
    /// volume normalisation and VAD trimming left to the caller): partials of 1.6 s, the normalised mean of
    /// their embeddings. The reference check compares this with the Python implementation.
    public func embedUtterance(_ samples: [Float], rate: Double = 1.3, minCoverage: Double = 0.75) -> [Float] {
        let partials = Self.partialSlices(samples: samples.count, rate: rate, minCoverage: minCoverage)
        var padded = samples
        let needed = (partials.last! + Self.partialFrames) * MelFrontend.hop
        if needed >= padded.count { padded += [Float](repeating: 0, count: needed - padded.count) }
        let mel = frontend.frames(of: padded)
        var sum = [Float](repeating: 0, count: VoiceModel.embeddingSize)
        for start in partials {
            let slice = Array(
                mel[start * VoiceModel.melBands..<(start + Self.partialFrames) * VoiceModel.melBands])
            let embedding = embed(mel: slice, frames: Self.partialFrames)
            for index in sum.indices { sum[index] += embedding[index] }
        }
        return normalized(sum)
    }

    /// The first frame of each partial, as Resemblyzer's `compute_partial_slices`.
    public static func partialSlices(samples: Int, rate: Double, minCoverage: Double) -> [Int] {
        let frameCount = Int((Double(samples + 1) / Double(MelFrontend.hop)).rounded(.up))
        let step = max(1, Int((Double(MelFrontend.sampleRate) / rate / Double(MelFrontend.hop)).rounded()))
        let steps = max(1, frameCount - partialFrames + step + 1)
        var starts = Array(stride(from: 0, to: steps, by: step))
        let last = starts.last!
        let coverage = Double(samples - last * MelFrontend.hop) / Double(partialFrames * MelFrontend.hop)
        if coverage < minCoverage && starts.count > 1 { starts.removeLast() }
        return starts
    }
}

@inline(__always)
func sigmoid(_ x: Float) -> Float { 1 / (1 + expf(-x)) }

/// `vector` scaled to unit length (zero stays zero).
public func normalized(_ vector: [Float]) -> [Float] {
    let norm = vector.reduce(0) { $0 + $1 * $1 }.squareRoot()
    return norm > 0 ? vector.map { $0 / norm } : vector
}

/// The cosine of two vectors of the same length.
public func cosine(_ a: [Float], _ b: [Float]) -> Float {
    precondition(a.count == b.count)
    var product: Float = 0
    var aa: Float = 0
    var bb: Float = 0
    for index in a.indices {
        product += a[index] * b[index]
        aa += a[index] * a[index]
        bb += b[index] * b[index]
    }
    return aa > 0 && bb > 0 ? product / (aa * bb).squareRoot() : 0
}
