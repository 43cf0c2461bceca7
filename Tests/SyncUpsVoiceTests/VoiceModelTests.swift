import Glibc
import SyncUpsTestSupport
import SyncUpsVoice
import Testing

@Suite struct VoiceModelTests {
    @Test func readsEveryTensorOfTheFormat() throws {
        let model = try VoiceModel(bytes: weightsFile(value: 0.5))
        #expect(model.layers.map(\.inputSize) == [40, 256, 256])
        #expect(model.layers[0].inputWeights.count == 1024 * 40)
        // The two biases are only ever added: one vector of their sums.
        #expect(model.layers[2].bias.allSatisfy { $0 == 1 })
        #expect(model.linearWeights.count == 256 * 256)
    }

    @Test func aDamagedFileIsAPreciseErrorNeverATrap() {
        let good = weightsFile()
        #expect(throws: VoiceModelError.notAWeightsFile) { try VoiceModel(bytes: Array("PK\u{3}\u{4}rest".utf8)) }
        #expect(throws: VoiceModelError.truncated(at: 1000)) { try VoiceModel(bytes: Array(good.prefix(1000))) }
        #expect(throws: VoiceModelError.truncated(at: good.count - 1)) { try VoiceModel(bytes: Array(good.dropLast())) }
        #expect(throws: VoiceModelError.malformed("4 bytes after the last tensor")) {
            try VoiceModel(bytes: good + [0, 0, 0, 0])
        }
        #expect(throws: VoiceModelError.missingTensor("linear.bias")) {
            try VoiceModel(bytes: weightsFile(omitting: "linear.bias"))
        }
        #expect(throws: VoiceModelError.wrongShape("lstm.weight_hh_l1", found: [1024, 128], expected: [1024, 256])) {
            try VoiceModel(bytes: weightsFile(reshaping: ("lstm.weight_hh_l1", [1024, 128])))
        }
        #expect(throws: VoiceModelError.malformed("lstm.bias_ih_l0: a value that is not finite")) {
            try VoiceModel(bytes: weightsFile(value: .nan))
        }
    }

    @Test func theEmbeddingIsUnitLengthAndNonNegative() throws {
        let encoder = VoiceEncoder(model: try VoiceModel(bytes: weightsFile(value: 0.01)))
        let frames = 20
        let mel = (0..<frames * 40).map { Float($0 % 7) }
        let embedding = encoder.embed(mel: mel, frames: frames)
        #expect(embedding.count == 256)
        #expect(embedding.allSatisfy { $0 >= 0 })
        #expect(abs(embedding.reduce(0) { $0 + $1 * $1 } - 1) < 1e-5)
    }

    @Test func partialsAreSlicedAsResemblyzerSlicesThem() {
        // The values of the wheel's compute_partial_slices: a partial every 77 frames at 1.3 a second; the
        // last is dropped when it covers less than 75 % of its 1.6 s (2.5 s: 60 %).
        #expect(VoiceEncoder.partialSlices(samples: 48000, rate: 1.3, minCoverage: 0.75) == [0, 77, 154])
        #expect(VoiceEncoder.partialSlices(samples: 40000, rate: 1.3, minCoverage: 0.75) == [0, 77])
        // Shorter than one partial: one, padded.
        #expect(VoiceEncoder.partialSlices(samples: 8000, rate: 1.3, minCoverage: 0.75) == [0])
    }

    @Test func theMelFiltersAreSlaneys() {
        // librosa.filters.mel(sr=16000, n_fft=400, n_mels=40): band 0 peaks at bin 1 (40 Hz) with 2 / (mel
        // width in Hz) · 1, band 39 reaches the last bins.
        let frontend = MelFrontend()
        let silence = frontend.frames(of: [Float](repeating: 0, count: 1600))
        #expect(silence.count == MelFrontend.frameCount(samples: 1600) * 40)
        #expect(silence.allSatisfy { $0 == 0 })
        // A 1 kHz tone lands in the bands around 1 kHz, not at the edges.
        let tone: [Float] = (0..<16000).map { (index: Int) -> Float in
            Float(0.5 * sin(2 * Double.pi * 1000 * Double(index) / 16000))
        }
        let frame = Array(frontend.frames(of: tone)[40 * 50..<40 * 51])
        let loudest = frame.indices.max { frame[$0] < frame[$1] }!
        #expect((13...16).contains(loudest))
    }
}
