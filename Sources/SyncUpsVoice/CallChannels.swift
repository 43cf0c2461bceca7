import Glibc

/// Which of a remote stand-up's two recordings a window was heard on: the local microphone or the call (the
/// sound server's monitor of what the meeting app plays).
public enum VoiceChannel: Int, Sendable, Equatable, CaseIterable {
    case microphone = 0
    case call = 1
}

/// Echo: the call's sound leaking from the speakers into the microphone, later (the room, the two paths
/// through the sound server) and quieter. Judged on loudness envelopes (the level of each 10 ms), which the
/// room's filtering leaves alone where it ruins a sample-by-sample correlation, and which cost little.
public enum EchoRule {
    /// 10 ms at 16 kHz.
    static let frame = 160
    /// How much later than the call the leak may reach the microphone: 500 ms. A room adds a few ms; the sound
    /// server's paths, more when the machine is loaded: a real PipeWire loopback asked for 20 ms measured 0.12 to
    /// 0.38 s window by window in one loaded run, where 300 ms let a late window's echo teach the local holder.
    public static let maxDelay = 50 * frame
    /// How much earlier it may seem to: the two recordings come through the sound server by different paths
    /// (the monitor of a sink is late by the sink's latency), so the microphone's copy may be ahead: 300 ms.
    public static let maxLead = 30 * frame
    /// The least correlation of the microphone's envelope with the call's, at the best delay, for an echo.
    /// The call leaking into a real PipeWire microphone (CallAudioTests) measured 0.71-0.999 window by window;
    /// a local voice with the echo 10 dB under it (double talk, CallChannelsTests) 0.31-0.47.
    public static let correlation: Float = 0.6
    /// How much louder than the call the microphone may be and still be its echo (speakers turned up, the
    /// monitor taken before the sink's volume).
    public static let louder: Float = 6

    /// Whether `microphone` (one window) is the call's echo. `call` is the call's audio over the same span
    /// preceded by up to `maxDelay` samples before it (fewer at the meeting's start): the call carried sound
    /// then (or just before), the microphone is not much louder, and the microphone's envelope follows the call's at some delay
    /// of -300 to 300 ms.
    public static func isEcho(microphone: ArraySlice<Float>, call: ArraySlice<Float>) -> Bool {
        (similarity(microphone: microphone, call: call) ?? -1) >= correlation
    }

    /// The correlation `isEcho` compares with `correlation`: nil where the call was silent or the microphone
    /// much louder.
    public static func similarity(microphone: ArraySlice<Float>, call: ArraySlice<Float>) -> Float? {
        let history = call.count - microphone.count
        guard history >= 0, microphone.count >= 10 * frame else { return nil }
        // The call's level over the window and the 300 ms before: an echo's tail outlasts the call's sound.
        let callLevel = VoiceStream.level(Array(call))
        guard callLevel > VoiceStream.silenceLevel,
            VoiceStream.level(Array(microphone)) <= callLevel + louder
        else { return nil }
        let heard = envelope(microphone)
        let played = envelope(call)
        let lead = played.count - heard.count
        var best: Float = -1
        // At each delay, the frames both envelopes have (at the meeting's start the call has no past, and a
        // microphone ahead has the call's next frames still to come: those frames are left out), if at least
        // half the window.
        for delay in -(maxLead / frame)...(maxDelay / frame) {
            let first = max(0, delay - lead)
            let last = min(heard.count, heard.count + delay)
            guard last - first >= heard.count / 2 else { continue }
            let offset = lead - delay
            best = max(best, pearson(heard[first..<last], played[(offset + first)..<(offset + last)]))
        }
        return best
    }

    /// The level of each 10 ms in dB, floored at -80 so silence is flat, not minus infinity.
    static func envelope(_ samples: ArraySlice<Float>) -> [Float] {
        var levels: [Float] = []
        levels.reserveCapacity(samples.count / frame)
        var start = samples.startIndex
        while start + frame <= samples.endIndex {
            var energy: Float = 0
            for index in start..<(start + frame) { energy += samples[index] * samples[index] }
            levels.append(max(-80, 10 * log10f(energy / Float(frame) + 1e-12)))
            start += frame
        }
        return levels
    }

    static func pearson(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Float {
        let count = Float(a.count)
        let meanA = a.reduce(0, +) / count
        let meanB = b.reduce(0, +) / count
        var product: Float = 0
        var squaresA: Float = 0
        var squaresB: Float = 0
        for (x, y) in zip(a, b) {
            product += (x - meanA) * (y - meanB)
            squaresA += (x - meanA) * (x - meanA)
            squaresB += (y - meanB) * (y - meanB)
        }
        guard squaresA > 0, squaresB > 0 else { return 0 }
        return product / (squaresA * squaresB).squareRoot()
    }
}

/// Which attendees are in the room and which on the call, learned per meeting from the floor: an attendee's
/// side is the channel that carries most of the speech heard in their own turns (at least `decisive` seconds,
/// and `ratio` times the other channel's: a remote colleague's interjection in a local holder's turn does not
/// make the holder remote). Nothing is kept between meetings: the same attendee is in the room one day and
/// at home the next.
///
/// Once a side is known, a window heard on the other channel is never that attendee's: not by voice, not by
/// the floor's teaching.
public struct CallSides: Sendable, Equatable {
    public static let decisive = 3.2
    public static let ratio = 2.0

    /// Seconds of speech heard per attendee per channel in their own turns.
    private var heard: [String: [Double]] = [:]
    /// The side each attendee was last found on: kept until the other channel is as clearly theirs.
    private var sides: [String: VoiceChannel] = [:]

    public init() {}

    /// A window of speech of `seconds` heard on `channel` while `holder` held the floor.
    public mutating func heard(_ seconds: Double, on channel: VoiceChannel, holder: String) {
        heard[holder, default: [0, 0]][channel.rawValue] += seconds
        let seconds = heard[holder]!
        for channel in VoiceChannel.allCases {
            let own = seconds[channel.rawValue]
            if own >= Self.decisive && own >= Self.ratio * seconds[1 - channel.rawValue] { sides[holder] = channel }
        }
    }

    /// The channel `attendee` speaks on, once their turns make it clear.
    public func side(of attendee: String) -> VoiceChannel? { sides[attendee] }

    /// Whether a window on `channel` may be `attendee`'s: not if their side is the other channel.
    public func mayBe(_ attendee: String, on channel: VoiceChannel) -> Bool {
        side(of: attendee).map { $0 == channel } ?? true
    }

    /// The profiles a window on `channel` may match: those of the attendees not known to be on the other side.
    public func candidates(on channel: VoiceChannel, _ profiles: [String: VoiceProfile]) -> [String: VoiceProfile] {
        profiles.filter { mayBe($0.key, on: channel) }
    }
}

extension VoiceMatcher {
    /// `decide` for a window of a two-channel meeting: only the profiles of attendees who may be on `channel`
    /// compete, and a floor holder known to be on the other channel is no floor for it (their profile is not
    /// the window's to reject or keep).
    public func decide(
        _ embedding: [Float]?, on channel: VoiceChannel, sides: CallSides, floor: String?,
        _ profiles: [String: VoiceProfile]
    ) -> VoiceDecision {
        let floor = floor.flatMap { sides.mayBe($0, on: channel) ? $0 : nil }
        return decide(embedding, floor: floor, sides.candidates(on: channel, profiles))
    }
}

/// A call meeting's two channels, each cut into windows and embedded on its own, in step: the call's windows
/// as they come, the microphone's unless `EchoRule` finds them the call's echo (then not embedded at all).
public final class CallStreams {
    private let microphone: VoiceStream
    private let call: VoiceStream
    /// The call's latest samples: what the microphone's next window is held against.
    private var played: [Float] = []
    private var playedEnd: Int

    /// `start`: the position of the first samples appended, in samples.
    public init(encoder: VoiceEncoder, start: Int = 0) {
        microphone = VoiceStream(encoder: encoder, start: start)
        call = VoiceStream(encoder: encoder, start: start)
        playedEnd = start
    }

    /// The position of the next samples appended.
    public var end: Int { playedEnd }

    /// Appends as many samples of each channel, from `end` on; returns the windows they completed, the call's
    /// first.
    public func append(
        microphone heard: ArraySlice<Float>, call sent: ArraySlice<Float>
    ) -> [(window: VoiceWindow, channel: VoiceChannel)] {
        precondition(heard.count == sent.count, "the channels come in step")
        var windows = call.append(sent).map { (window: $0, channel: VoiceChannel.call) }
        played += sent
        playedEnd += sent.count
        let keep = VoiceStream.windowSamples + EchoRule.maxDelay + heard.count
        if played.count > keep { played.removeFirst(played.count - keep) }
        let played = played
        let playedEnd = playedEnd
        var similarities: [Int: Float] = [:]
        windows += microphone.append(heard) { samples, start in
            let first = playedEnd - played.count
            let from = max(first, start - EchoRule.maxDelay) - first
            let to = start + samples.count - first
            guard from >= 0, to <= played.count else { return false }
            similarities[start] = EchoRule.similarity(microphone: samples[...], call: played[from..<to])
            return (similarities[start] ?? -1) >= EchoRule.correlation
        }.map { window in
            var window = window
            window.echoSimilarity = similarities[window.start]
            return (window: window, channel: VoiceChannel.microphone)
        }
        return windows
    }
}

/// What a call meeting's floor teaches: each holder learns only from the windows on their own side's channel,
/// once `CallSides` knows it. The windows of a turn heard before then wait (at most `undecidedLimit`; a turn
/// that ends first drops them) and teach once it is known.
public struct CallLearning: Sendable {
    public static let undecidedLimit = 8
    public private(set) var sides = CallSides()
    private var undecided: [(embedding: [Float], seconds: Double, channel: VoiceChannel, holder: String)] = []

    public init() {}

    /// A window of speech heard on `channel` in `holder`'s turn; returns the windows `holder` may learn now
    /// (this one and those that waited, on their side), each still subject to `VoiceMatcher.learn`.
    public mutating func heard(
        _ embedding: [Float], seconds: Double, on channel: VoiceChannel, holder: String
    ) -> [(embedding: [Float], seconds: Double)] {
        sides.heard(seconds, on: channel, holder: holder)
        undecided.removeAll { $0.holder != holder }
        guard let side = sides.side(of: holder) else {
            if undecided.count < Self.undecidedLimit { undecided.append((embedding, seconds, channel, holder)) }
            return []
        }
        let waiting = undecided
        undecided = []
        return (waiting + [(embedding, seconds, channel, holder)]).filter { $0.channel == side }.map {
            ($0.embedding, $0.seconds)
        }
    }
}
