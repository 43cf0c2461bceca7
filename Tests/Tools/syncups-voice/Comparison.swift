import Glibc
import SyncUpsPOSIX
import SyncUpsVoice

/// The weights-free alternative evaluated against GE2E: each window's 20 mel-cepstra (c1–c20 of the log mel
/// spectrum, as MFCCs are made) summarised by their means and standard deviations.
func cepstralStatistics(_ samples: ArraySlice<Float>, frontend: MelFrontend) -> [Float] {
    let bands = VoiceModel.melBands
    let mel = frontend.frames(of: Array(samples))
    let frames = mel.count / bands
    let coefficients = 20
    var sum = [Float](repeating: 0, count: coefficients)
    var squares = [Float](repeating: 0, count: coefficients)
    for frame in 0..<frames {
        let logMel = (0..<bands).map { logf(mel[frame * bands + $0] + 1e-10) }
        for k in 1...coefficients {
            var c: Float = 0
            for (n, value) in logMel.enumerated() {
                c += value * cosf(Float.pi * Float(k) * (Float(n) + 0.5) / Float(bands))
            }
            sum[k - 1] += c
            squares[k - 1] += c * c
        }
    }
    let means = sum.map { $0 / Float(frames) }
    let deviations = zip(squares, means).map { (max(0, $0 / Float(frames) - $1 * $1)).squareRoot() }
    return means + deviations
}

/// Threshold-free figures of an embedder on the fixtures: closed-set accuracy (the closest profile is the true
/// speaker's) and the AUC of true-speaker cosines against every other cosine, guests' included.
func compareEmbedders(encoder: VoiceEncoder, directory: String) {
    let attendees = ["ann", "ben", "cat"]
    let rate = Double(MelFrontend.sampleRate)
    let window = VoiceStream.windowSamples
    let embedders: [(String, (ArraySlice<Float>) -> [Float])] = [
        ("GE2E (resemblyzer)", { encoder.embedUtterance(Array($0), rate: 0.625, minCoverage: 1) }),
        ("cepstral statistics", { cepstralStatistics($0, frontend: encoder.frontend) }),
    ]
    for (label, embed) in embedders {
        // Profiles from meeting1's floor: every loud window of each turn.
        var profiles: [String: [Float]] = [:]
        func windows(_ name: String) -> [(start: Int, embedding: [Float])] {
            let audio = samples(FilePath.join(directory, name + ".raw"))
            return stride(from: 0, to: audio.count - window + 1, by: window).compactMap { start in
                let slice = audio[start..<start + window]
                return VoiceStream.level(Array(slice)) > VoiceStream.silenceLevel ? (start, embed(slice)) : nil
            }
        }
        let floor = intervals(FilePath.join(directory, "meeting1.floor"))
        for (start, embedding) in windows("meeting1") {
            guard let holder = who(floor, at: (Double(start) + Double(window) / 2) / rate) else { continue }
            let sum = profiles[holder] ?? [Float](repeating: 0, count: embedding.count)
            profiles[holder] = zip(sum, normalized(embedding)).map { $0 + $1 }
        }
        var correct = 0
        var total = 0
        var genuine: [Float] = []
        var impostor: [Float] = []
        for name in ["meeting2", "meeting3"] {
            let truth = intervals(FilePath.join(directory, name + ".truth"))
            for (start, embedding) in windows(name) {
                guard let speaker = who(truth, at: (Double(start) + Double(window) / 2) / rate) else { continue }
                let scores = attendees.map { (id: $0, score: cosine(embedding, profiles[$0]!)) }
                if attendees.contains(speaker) {
                    total += 1
                    if scores.max(by: { $0.score < $1.score })!.id == speaker { correct += 1 }
                }
                for score in scores {
                    if score.id == speaker { genuine.append(score.score) } else { impostor.append(score.score) }
                }
            }
        }
        var above = 0.0
        for g in genuine {
            for i in impostor { above += g > i ? 1 : g == i ? 0.5 : 0 }
        }
        let auc = above / Double(genuine.count * impostor.count)
        _ = Console.out(
            "\(label): closed-set accuracy \(correct)/\(total) windows, AUC true speaker vs others \(String(auc).prefix(5))\n"
        )
    }
}
