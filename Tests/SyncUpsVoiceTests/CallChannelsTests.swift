import SyncUpsTestSupport
import SyncUpsVoice
import Testing

/// A call meeting's two channels heard apart: the call's echo in the microphone is not a voice, and a voice
/// is never given to an attendee on the other side of the call.
@Suite struct CallChannelsTests {
    /// `samples` `delay` seconds later and `gain` times as loud, as long as `samples`.
    static func leaked(_ samples: [Float], delay: Double, gain: Float) -> [Float] {
        let shift = Int(delay * 16_000)
        return ([Float](repeating: 0, count: shift) + samples.map { $0 * gain }).prefix(samples.count).map { $0 }
    }

    static func padded(_ samples: [Float], to count: Int) -> [Float] {
        Array((samples + [Float](repeating: 0, count: max(0, count - samples.count))).prefix(count))
    }

    static let localText = "yesterday i finished the review of the release and fixed two flaky tests in the build"

    /// A remote voice (espeak-ng en-us) on the call and a local one (en-gb, another sentence) in the room.
    static func voices() throws -> (remote: [Float], local: [Float]) {
        let remote = VoiceStream.samples(
            pcm: try SpeechFixture.say("today i will deploy the payment service to staging", voice: "en-us"))
        let local = VoiceStream.samples(pcm: try SpeechFixture.say(Self.localText, voice: "en-gb"))
        let window = VoiceStream.windowSamples
        let count = (max(remote.count, local.count) + window - 1) / window * window
        return (padded(remote, to: count), padded(local, to: count))
    }

    /// Each 1.6 s window of `microphone` judged against the call, as `CallStreams` does.
    static func echoes(microphone: [Float], call: [Float]) -> [Bool] {
        let window = VoiceStream.windowSamples
        return stride(from: 0, through: microphone.count - window, by: window).compactMap { start in
            guard VoiceStream.level(Array(microphone[start..<start + window])) > VoiceStream.silenceLevel else {
                return nil
            }
            let from = max(0, start - EchoRule.maxDelay)
            return EchoRule.isEcho(microphone: microphone[start..<start + window], call: call[from..<start + window])
        }
    }

    @Test func theCallLeakingIntoTheMicrophoneLateAndQuieterIsEcho() throws {
        let (remote, _) = try Self.voices()
        for (delay, gain) in [(0.0, Float(0.7)), (0.15, 0.316), (0.28, 0.1), (0.38, 0.5), (0.48, 0.316)] {
            let heard = Self.echoes(microphone: Self.leaked(remote, delay: delay, gain: gain), call: remote)
            #expect(heard.count >= 2)
            #expect(heard.allSatisfy { $0 }, "delay \(delay) s, gain \(gain): \(heard)")
        }
        // The two recordings' paths through the sound server differ: the microphone's copy may come first.
        let ahead = (remote.dropFirst(3200).map { $0 * 0.5 }) + [Float](repeating: 0, count: 3200)
        let heard = Self.echoes(microphone: ahead, call: remote)
        #expect(heard.count >= 2)
        #expect(heard.allSatisfy { $0 }, "200 ms ahead: \(heard)")
    }

    @Test func aLocalVoiceIsNotEchoAloneOrOverTheCall() throws {
        let (remote, local) = try Self.voices()
        let silence = [Float](repeating: 0, count: local.count)
        // The call silent: the microphone's voice is the room's.
        #expect(Self.echoes(microphone: local, call: silence).allSatisfy { !$0 })
        // Both talk at once, the echo 10 dB under the local voice: the local voice is heard (while it lasts).
        let spoken =
            try SpeechFixture.trimmingTrailingSilence(
                SpeechFixture.say(Self.localText, voice: "en-gb")
            ).count / 2 / VoiceStream.windowSamples * VoiceStream.windowSamples
        let both = zip(local, Self.leaked(remote, delay: 0.15, gain: 0.316)).map { $0 + $1 }.prefix(spoken)
        let heard = Self.echoes(microphone: Array(both), call: Array(remote.prefix(spoken)))
        #expect(heard.count >= 2)
        #expect(heard.allSatisfy { !$0 }, "\(heard)")
    }

    @Test func callStreamsEmbedTheCallAndDropTheMicrophonesEcho() throws {
        let (remote, local) = try Self.voices()
        let silence = [Float](repeating: 0, count: remote.count)
        // The remote voice on the call and its echo in the microphone, then the local voice alone.
        let call = remote + silence
        let microphone = Self.leaked(remote, delay: 0.15, gain: 0.316) + local
        let streams = CallStreams(encoder: VoiceEncoder(model: try VoiceModel(bytes: weightsFile())))
        var windows: [(window: VoiceWindow, channel: VoiceChannel)] = []
        for start in stride(from: 0, to: call.count, by: 1600) {
            let end = min(call.count, start + 1600)
            windows += streams.append(microphone: microphone[start..<end], call: call[start..<end])
        }
        let half = remote.count
        let echoes = windows.filter { $0.channel == .microphone && $0.window.start + $0.window.count <= half }
        #expect(echoes.contains { $0.window.echo })
        #expect(echoes.allSatisfy { $0.window.echo || $0.window.embedding == nil })
        let room = windows.filter { $0.channel == .microphone && $0.window.start >= half }
        #expect(room.filter { $0.window.embedding != nil }.count >= 2)
        #expect(room.allSatisfy { !$0.window.echo })
        #expect(windows.filter { $0.channel == .call && $0.window.embedding != nil }.count >= 2)
    }

    @Test func aSideIsTheChannelOfMostOfTheHoldersOwnTurn() {
        var sides = CallSides()
        #expect(sides.side(of: "ann") == nil)
        // Ann's turn: 4.8 s in the room, and a remote colleague's 1.6 s interjection on the call.
        sides.heard(1.6, on: .microphone, holder: "ann")
        sides.heard(1.6, on: .call, holder: "ann")
        #expect(sides.side(of: "ann") == nil)
        sides.heard(1.6, on: .microphone, holder: "ann")
        sides.heard(1.6, on: .microphone, holder: "ann")
        #expect(sides.side(of: "ann") == .microphone)
        #expect(!sides.mayBe("ann", on: .call))
        #expect(sides.mayBe("ann", on: .microphone))
        // Ben's turn is heard on the call: he is remote. Cat, unheard, may be either.
        sides.heard(3.2, on: .call, holder: "ben")
        #expect(sides.side(of: "ben") == .call)
        #expect(sides.mayBe("cat", on: .call) && sides.mayBe("cat", on: .microphone))
    }

    @Test func aVoiceOnTheCallIsNeverTheRoomsAttendeeAndTheOtherWayRound() {
        let matcher = VoiceMatcher()
        let profiles = ["ann": profile(voice(0)), "ben": profile(voice(1))]
        var sides = CallSides()
        sides.heard(4.8, on: .microphone, holder: "ann")
        sides.heard(4.8, on: .call, holder: "ben")
        // Ann's voice exactly, heard on the call in her own turn: not hers (a remote voice like hers).
        #expect(matcher.decide(voice(0), floor: "ann", profiles) == .voice("ann", confidence: 1))
        #expect(matcher.decide(voice(0), on: .call, sides: sides, floor: "ann", profiles) == .floor)
        // Ben's voice in the room is not ben; on the call it is.
        #expect(
            matcher.decide(voice(1), on: .microphone, sides: sides, floor: "ann", profiles)
                == .unknown(confidence: 0))
        #expect(
            matcher.decide(voice(1), on: .call, sides: sides, floor: "ann", profiles) == .voice("ben", confidence: 1))
        // Before the sides are known, nothing is excluded.
        #expect(
            matcher.decide(voice(0), on: .call, sides: CallSides(), floor: "ann", profiles)
                == .voice("ann", confidence: 1))
    }

    @Test func aHolderLearnsOnlyFromTheirOwnSideOnceKnown() {
        var learning = CallLearning()
        let ann = voice(0)
        let ben = voice(1)
        // Ann's turn opens with ben's remote interjection, then ann in the room: nothing taught until her side
        // is known, then her own windows (those that waited too), never ben's.
        #expect(learning.heard(ben, seconds: 1.6, on: .call, holder: "ann").isEmpty)
        #expect(learning.heard(ann, seconds: 1.6, on: .microphone, holder: "ann").isEmpty)
        #expect(learning.heard(ann, seconds: 1.6, on: .microphone, holder: "ann").map(\.embedding) == [ann, ann])
        #expect(learning.sides.side(of: "ann") == .microphone)
        // Another interjection does not make her side unknown again.
        #expect(learning.heard(ben, seconds: 1.6, on: .call, holder: "ann").isEmpty)
        #expect(learning.sides.side(of: "ann") == .microphone)
        #expect(learning.heard(ann, seconds: 1.6, on: .microphone, holder: "ann").map(\.embedding) == [ann])
        // A turn that ends before its holder's side is known drops what waited; at most `undecidedLimit` wait.
        for _ in 0..<20 {
            #expect(learning.heard(ben, seconds: 0.1, on: .call, holder: "cat").isEmpty)
            #expect(learning.heard(ben, seconds: 0.1, on: .microphone, holder: "cat").isEmpty)
        }
        let taught = learning.heard(ann, seconds: 4.8, on: .microphone, holder: "cat")
        #expect(taught.count == CallLearning.undecidedLimit / 2 + 1, "\(taught.count)")
    }
}
