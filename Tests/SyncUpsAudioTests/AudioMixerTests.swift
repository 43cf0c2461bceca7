import SyncUpsAudio
import Synchronization
import Testing

/// What a mixer put out, in order.
final class MixedOutput: Sendable {
    private let chunks = Mutex<[(samples: [Int16], startFrame: Int64)]>([])
    func add(_ bytes: [UInt8], _ startFrame: Int64) {
        let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        chunks.withLock { $0.append((samples, startFrame)) }
    }
    var samples: [Int16] { chunks.withLock { $0.flatMap(\.samples) } }
    /// Whether every chunk starts where the one before ended, from frame 0.
    var isContiguous: Bool {
        chunks.withLock { chunks in
            var next: Int64 = 0
            for chunk in chunks {
                guard chunk.startFrame == next else { return false }
                next += Int64(chunk.samples.count)
            }
            return true
        }
    }
}

func bytes(_ samples: [Int16]) -> [UInt8] { samples.withUnsafeBytes { Array($0) } }

@Suite struct AudioMixerTests {
    @Test func givesTheSpeakerEncoderEachInputUnmixedInStepWithTheMix() {
        let output = MixedOutput()
        let channels = Mutex<[(microphone: [Int16], call: [Int16], startFrame: Int64)]>([])
        let mixer = AudioMixer(output: output.add) { microphone, call, startFrame in
            channels.withLock { $0.append((microphone, call, startFrame)) }
        }
        mixer.feed(0, bytes([1, 2, 3, 4]), startFrame: 0)
        mixer.feed(1, bytes([10, 20]), startFrame: 0)
        // A gap in the call: silence, as in the mix.
        mixer.feed(1, bytes([50]), startFrame: 4)
        mixer.flush()
        let got = channels.withLock { $0 }
        #expect(got.map(\.startFrame) == [0, 2, 4])
        #expect(got.flatMap(\.microphone) == [1, 2, 3, 4, 0])
        #expect(got.flatMap(\.call) == [10, 20, 0, 0, 50])
        #expect(output.samples == [11, 22, 3, 4, 50])
    }

    @Test func sumsTheTwoInputsFrameByFrameOnlyAsFarAsBothHaveCome() {
        let output = MixedOutput()
        let mixer = AudioMixer(output: output.add)
        mixer.feed(0, bytes([1, 2, 3, 4]), startFrame: 0)
        #expect(output.samples == [], "nothing until the call has come as far")
        mixer.feed(1, bytes([10, 20]), startFrame: 0)
        #expect(output.samples == [11, 22])
        mixer.feed(1, bytes([30, 40, 50]), startFrame: 2)
        #expect(output.samples == [11, 22, 33, 44])
        mixer.flush()
        #expect(output.samples == [11, 22, 33, 44, 50], "the rest, the microphone padded with silence")
        #expect(output.isContiguous)
    }

    @Test func mixesTheMicrophoneTwentyFourDecibelsDownWhileTheCallCarriesSound() {
        let output = MixedOutput()
        let mixer = AudioMixer(output: output.add)
        // 10 ms of a quiet call (RMS 50), then 10 ms of a loud one (RMS 1000), the microphone at 400 throughout.
        mixer.feed(0, bytes([Int16](repeating: 400, count: 320)), startFrame: 0)
        mixer.feed(1, bytes([Int16](repeating: 50, count: 160) + [Int16](repeating: 1_000, count: 160)), startFrame: 0)
        #expect(output.samples == [Int16](repeating: 450, count: 160) + [Int16](repeating: 1_025, count: 160))
    }

    /// The gaps between a remote speaker's syllables keep the microphone down: its late copy of the same
    /// voice does not come back in bursts. 0.3 s after the call's last sound, it is back at full level.
    @Test func theMicrophoneStaysDownForThreeTenthsOfASecondAfterTheCallsLastSound() {
        let output = MixedOutput()
        let mixer = AudioMixer(output: output.add)
        let loud = 160  // 10 ms of a loud call, then silence
        let total = loud + Int(AudioMixer.duckingHold) + 160
        mixer.feed(0, bytes([Int16](repeating: 400, count: total)), startFrame: 0)
        mixer.feed(
            1, bytes([Int16](repeating: 1_000, count: loud) + [Int16](repeating: 0, count: total - loud)),
            startFrame: 0)
        let samples = output.samples
        #expect(samples.count == total)
        #expect(samples[..<loud].allSatisfy { $0 == 1_025 })
        #expect(samples[loud..<(loud + Int(AudioMixer.duckingHold))].allSatisfy { $0 == 25 })
        #expect(samples[(loud + Int(AudioMixer.duckingHold))...].allSatisfy { $0 == 400 })
    }

    @Test func clipsInsteadOfWrappingAround() {
        let output = MixedOutput()
        let mixer = AudioMixer(output: output.add)
        mixer.feed(0, bytes([30_000, -30_000]), startFrame: 0)
        mixer.feed(1, bytes([32_000, -32_000]), startFrame: 0)
        #expect(output.samples == [Int16.max, Int16.min])
    }

    @Test func aGapInOneInputIsSilenceAndAStalledInputStopsHoldingTheOtherBackAfterTwoSeconds() {
        let output = MixedOutput()
        let late = Mutex<[(input: Int, frames: Int64)]>([])
        let mixer = AudioMixer(
            output: output.add, late: { input, frames in late.withLock { $0.append((input, frames)) } })
        mixer.feed(0, bytes([1, 1]), startFrame: 0)
        mixer.feed(1, bytes([5]), startFrame: 1)  // frame 0 of the call is missing: silence
        #expect(output.samples == [1, 6])
        // The call stalls; the microphone runs on: after two seconds of lag the microphone goes alone.
        let second = [Int16](repeating: 1, count: 16_000)
        mixer.feed(0, bytes(second), startFrame: 2)
        mixer.feed(0, bytes(second), startFrame: 16_002)
        #expect(output.samples.count == 2, "two seconds of lag are waited for")
        mixer.feed(0, bytes(second), startFrame: 32_002)
        #expect(output.samples.count == 2 + 16_000)
        // The call's late frames for what was mixed already are dropped; the rest is mixed in step.
        mixer.feed(1, bytes([Int16](repeating: 2, count: 16_010)), startFrame: 2)
        #expect(late.withLock { $0.isEmpty }, "said once the call comes in time again, or at the end")
        mixer.flush()
        // Not transcribed, and said: the second of the call that came late.
        #expect(late.withLock { $0.map { "\($0.input): \($0.frames)" } } == ["1: 16000"])
        #expect(output.samples.count == 48_002)
        #expect(output.samples[16_002...16_011].allSatisfy { $0 == 3 })
        #expect(output.samples[16_012] == 1)
        #expect(output.isContiguous)
    }

    /// A microphone that comes more than two seconds late has its late audio dropped from the mix (the
    /// recognizer's stream stays in step), and the mixer says how much once it comes in time again: before,
    /// the words were silently missing from the transcript though they were in the microphone's file.
    @Test func sayHowMuchOfALateInputWasDroppedOnceItComesInTimeAgain() {
        let output = MixedOutput()
        let late = Mutex<[(input: Int, frames: Int64)]>([])
        let mixer = AudioMixer(
            output: output.add, late: { input, frames in late.withLock { $0.append((input, frames)) } })
        let second = [Int16](repeating: 1, count: 16_000)
        for start in stride(from: Int64(0), to: 48_000, by: 16_000) { mixer.feed(1, bytes(second), startFrame: start) }
        // The microphone's first 1.5 s, late: the mix went on with the call alone up to 1 s.
        mixer.feed(0, bytes([Int16](repeating: 4, count: 24_000)), startFrame: 0)
        #expect(late.withLock { $0.isEmpty }, "said once it comes in time again")
        mixer.feed(0, bytes([Int16](repeating: 4, count: 24_000)), startFrame: 24_000)
        #expect(late.withLock { $0.map { "\($0.input): \($0.frames)" } } == ["0: 16000"])
        mixer.flush()
        #expect(late.withLock { $0.count } == 1, "said once")
        #expect(output.samples[15_999] == 1 && output.samples[16_000] == 5 && output.isContiguous)
    }

    /// The one sound server stalled: each capture filled the time with zeros, one after the other, and the
    /// later one's filler came "late". Digital silence is not said; what was heard in a late stretch is, to
    /// the 10 ms window (attack 96: "0.5 s of it is in its file but not transcribed", all of it filler).
    @Test func aLateStretchOfDigitalSilenceIsNotSaidAndOnlyTheHeardPartOfOneIs() {
        let late = Mutex<[Int64]>([])
        let mixer = AudioMixer(output: MixedOutput().add, late: { _, frames in late.withLock { $0.append(frames) } })
        for start in stride(from: Int64(0), to: 48_000, by: 16_000) {
            mixer.feed(1, bytes([Int16](repeating: 1, count: 16_000)), startFrame: start)
        }
        mixer.feed(0, bytes([Int16](repeating: 0, count: 24_000)), startFrame: 0)  // 1 s of it dropped
        mixer.feed(0, bytes([Int16](repeating: 4, count: 8_000)), startFrame: 24_000)
        #expect(late.withLock { $0 } == [])
        // Late again: 0.5 s of filler, then 25 ms of sound across four windows of 10 ms.
        for start in stride(from: Int64(48_000), to: 112_000, by: 16_000) {
            mixer.feed(1, bytes([Int16](repeating: 1, count: 16_000)), startFrame: start)
        }
        let stretch = [Int16](repeating: 0, count: 8_000 + 155) + [Int16](repeating: 4, count: 400)
        mixer.feed(0, bytes(stretch + [Int16](repeating: 0, count: 16_000 - stretch.count)), startFrame: 32_000)
        mixer.flush()
        #expect(late.withLock { $0 } == [640])
    }
}
