import SyncUpsCore
import Synchronization

/// Mixes the microphone and the call into one mono stream for the recognizer, frame by frame on the meeting's
/// timeline, from the two recorders' writer threads.
///
/// One recognizer hears what the local attendee hears: a remote voice that also leaks into the microphone
/// (speakers, no headset) is the same voice twice, so its words come out once, not twice as two recognizers
/// would say them. The two copies arrive a little apart (the paths through the sound server differ), which
/// blurs them: while the call carries sound, and for `duckingHold` after (the gaps between a speaker's
/// syllables), the microphone is mixed in 24 dB down (`duckedGain`), so the call's clean copy dominates; in a
/// stand-up the floor is one person's at a time. Without the hold the microphone's gain flipped every few
/// 10 ms windows inside a remote sentence, letting its late copy through in bursts.
/// The output runs as far as both inputs have come; when one input is more
/// than `maxLag` frames behind the other (a stalled device), the other goes on alone and the late frames of
/// the first are dropped from the mix (they are still in its file), and said (`late`) unless digital silence
/// (a capture's filler for a stalled server): they are not transcribed.
public final class AudioMixer: Sendable {
    public static let maxLag: Int64 = 2 * Int64(AudioFormat.sampleRate)
    /// The microphone's gain for 10 ms in which the call carries sound (RMS of at least `callSoundRMS`).
    public static let duckedGain: Int32 = 16  // a divisor: 1/16, -24 dB
    /// About -50 dBFS: the call is quiet below this.
    public static let callSoundRMS = 100.0
    static let duckingWindow = AudioFormat.sampleRate / 100
    /// How long the microphone stays down after the call's last sound: 0.3 s, longer than the pauses within a
    /// sentence and shorter than the hand-over between speakers.
    public static let duckingHold = Int64(AudioFormat.sampleRate) * 3 / 10

    private struct State {
        /// Frames not mixed yet, per input, both starting at `mixedFrames`.
        var pending: [[Int16]] = [[], []]
        var mixedFrames: Int64 = 0
        /// The frame up to which the microphone is ducked: `duckingHold` past the call's last sound.
        var duckedUntil: Int64 = 0
        /// Per input, its frames dropped from the mix since it began to come late, not yet said.
        var late: [Int64] = [0, 0]
    }

    private let state = Mutex(State())
    private let output: @Sendable (_ bytes: [UInt8], _ startFrame: Int64) -> Void
    private let channels: (@Sendable (_ microphone: [Int16], _ call: [Int16], _ startFrame: Int64) -> Void)?
    private let late: (@Sendable (_ input: Int, _ frames: Int64) -> Void)?

    /// `output` gets the mixed S16_LE samples in order, from whichever thread fed the input that completed
    /// them (under the mixer's lock, so it must not block: `RecognitionStream.feed` does not). `channels`, if
    /// given, gets the same stretch of each input unmixed, in step, just before (the speaker encoder hears
    /// each channel on its own). `late`, if given, gets the frames of an input dropped from the mix because
    /// they came more than `maxLag` after the other's, once they come in time again (or at `flush`): under the
    /// lock too, so it must not block either.
    public init(
        output: @escaping @Sendable (_ bytes: [UInt8], _ startFrame: Int64) -> Void,
        channels: (@Sendable (_ microphone: [Int16], _ call: [Int16], _ startFrame: Int64) -> Void)? = nil,
        late: (@Sendable (_ input: Int, _ frames: Int64) -> Void)? = nil
    ) {
        self.output = output
        self.channels = channels
        self.late = late
    }

    /// Input 0 (the microphone) or 1 (the call): S16_LE samples from `startFrame` on.
    public func feed(_ input: Int, _ bytes: [UInt8], startFrame: Int64) {
        let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        state.withLock { state in
            var samples = samples[...]
            let expected = state.mixedFrames + Int64(state.pending[input].count)
            if startFrame < expected {
                let dropped = Int(min(expected - startFrame, Int64(samples.count)))
                state.late[input] += Self.heardFrames(samples.prefix(dropped))
                samples = samples.dropFirst(dropped)
            } else {
                sayLate(input, &state)
                if startFrame > expected {
                    state.pending[input] += [Int16](repeating: 0, count: Int(startFrame - expected))
                }
            }
            state.pending[input] += samples
            let counts = state.pending.map { Int64($0.count) }
            var ready = counts.min()!
            if counts.max()! - ready > Self.maxLag {
                ready = counts.max()! - Self.maxLag
                for index in state.pending.indices where Int64(state.pending[index].count) < ready {
                    state.pending[index] += [Int16](repeating: 0, count: Int(ready) - state.pending[index].count)
                }
            }
            emit(Int(ready), &state)
        }
    }

    /// Mixes what is left, the shorter input padded with silence (the recorders have stopped).
    public func flush() {
        state.withLock { state in
            for input in state.late.indices { sayLate(input, &state) }
            let longest = state.pending.map(\.count).max()!
            for index in state.pending.indices {
                state.pending[index] += [Int16](repeating: 0, count: longest - state.pending[index].count)
            }
            emit(longest, &state)
        }
    }

    /// The frames of `samples` in 10 ms windows that are not digital silence: what a late input's dropped
    /// stretch held that the recognizer could have heard. A capture fills the time a stalled sound server
    /// missed with zeros, on each input at its own moment, so a stall of the one server made one input's
    /// filler "late" and it was said as audio not transcribed (attack 96: after every stall of 3-5 s).
    static func heardFrames(_ samples: ArraySlice<Int16>) -> Int64 {
        var heard: Int64 = 0
        var start = samples.startIndex
        while start < samples.endIndex {
            let end = min(samples.endIndex, start + duckingWindow)
            if samples[start..<end].contains(where: { $0 != 0 }) { heard += Int64(end - start) }
            start = end
        }
        return heard
    }

    private func sayLate(_ input: Int, _ state: inout State) {
        guard state.late[input] > 0 else { return }
        late?(input, state.late[input])
        state.late[input] = 0
    }

    private func emit(_ frames: Int, _ state: inout State) {
        guard frames > 0 else { return }
        channels?(Array(state.pending[0].prefix(frames)), Array(state.pending[1].prefix(frames)), state.mixedFrames)
        var mixed = [UInt8]()
        mixed.reserveCapacity(frames * AudioFormat.bytesPerFrame)
        var windowStart = 0
        while windowStart < frames {
            let windowEnd = min(frames, windowStart + Self.duckingWindow)
            let call = state.pending[1][windowStart..<windowEnd]
            let energy = call.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(call.count)
            if energy >= Self.callSoundRMS * Self.callSoundRMS {
                state.duckedUntil = state.mixedFrames + Int64(windowEnd) + Self.duckingHold
            }
            let divisor: Int32 = state.mixedFrames + Int64(windowStart) < state.duckedUntil ? Self.duckedGain : 1
            for index in windowStart..<windowEnd {
                let sum = Int32(state.pending[0][index]) / divisor + Int32(state.pending[1][index])
                let sample = UInt16(bitPattern: Int16(clamping: sum))
                mixed.append(UInt8(sample & 0xFF))
                mixed.append(UInt8(sample >> 8))
            }
            windowStart = windowEnd
        }
        for index in state.pending.indices { state.pending[index].removeFirst(frames) }
        output(mixed, state.mixedFrames)
        state.mixedFrames += Int64(frames)
    }
}
