import Glibc
import SyncUpsTestSupport
import SyncUpsVoice
import Testing

/// Only speech is embedded, so only speech teaches a profile: the attacker's 10 s of pink noise and 10 s of
/// tones taught a profile 9.6 s of nothing (it passed the -50 dBFS silence gate), and locked it.
@Suite struct SpeechGateTests {
    static let librivox = "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0890.wav"
    static let window = VoiceStream.windowSamples

    /// Pink noise (Voss-McCartney, 8 rows) at about -24 dBFS, as the attack's `sox synth pinknoise`.
    static func pinkNoise(seconds: Int) -> [Float] {
        var random = SplitMix64(seed: 27)
        var rows = [Float](repeating: 0, count: 8)
        return (0..<seconds * 16_000).map { index in
            for row in rows.indices where index % (1 << row) == 0 {
                rows[row] = Float.random(in: -1...1, using: &random)
            }
            return rows.reduce(0, +) / 8 * 0.25
        }
    }

    /// A tone that changes note every second (a melody of pure tones, as the attack's `synth sine`).
    static func tones(seconds: Int) -> [Float] {
        let notes: [Float] = [440, 523, 659, 784, 880, 660, 330, 392, 494, 587]
        return (0..<seconds * 16_000).map { index in
            let note = notes[(index / 16_000) % notes.count]
            return 0.1 * sinf(2 * .pi * note * Float(index) / 16_000)
        }
    }

    static func windows(_ samples: [Float]) -> [[Float]] {
        stride(from: 0, through: samples.count - window, by: window).map { Array(samples[$0..<$0 + window]) }
    }

    @Test func noiseAndTonesAreNotSpeech() {
        let noise = Self.windows(Self.pinkNoise(seconds: 10))
        let tones = Self.windows(Self.tones(seconds: 10))
        #expect(noise.allSatisfy { VoiceStream.level($0) > VoiceStream.silenceLevel })
        #expect(tones.allSatisfy { VoiceStream.level($0) > VoiceStream.silenceLevel })
        #expect(noise.filter(VoiceStream.isSpeechLike).count == 0)
        #expect(tones.filter(VoiceStream.isSpeechLike).count == 0)
    }

    @Test(.enabled(if: Files.exists(librivox))) func aLibriVoxReaderIsSpeech() throws {
        let bytes = try #require(Files.read(Self.librivox)).dropFirst(44)
        let samples = VoiceStream.samples(pcm: bytes)
        let loud = Self.windows(samples).filter { VoiceStream.level($0) > VoiceStream.silenceLevel }
        #expect(loud.count >= 3)
        let speech = loud.filter(VoiceStream.isSpeechLike).count
        #expect(speech * 10 >= loud.count * 9, "\(speech) of \(loud.count) windows")
    }
}
