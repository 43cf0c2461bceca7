import Glibc
import SyncUpsTestSupport
import SyncUpsVoice
import Testing

/// A unit vector mostly along `axis`, leaning `lean` toward `other`.
func voice(_ axis: Int, lean: Float = 0, toward other: Int = 255) -> [Float] {
    var vector = [Float](repeating: 0, count: 256)
    vector[axis] = 1
    vector[other] += lean
    return normalized(vector)
}

func profile(_ embedding: [Float], seconds: Double = 9.6) -> VoiceProfile {
    var profile = VoiceProfile()
    profile.learn(embedding, seconds: seconds, at: 1)
    return profile
}

@Suite struct VoiceMatcherTests {
    let matcher = VoiceMatcher()
    let profiles = ["ann": profile(voice(0)), "ben": profile(voice(1)), "cat": profile(voice(2))]

    @Test func aConfidentMatchIsAttributedByVoiceWhoeverHoldsTheFloor() {
        #expect(
            matcher.decide(voice(2, lean: 0.2), floor: "ben", profiles)
                == .voice("cat", confidence: voice(2, lean: 0.2)[2]))
    }

    @Test func aCloseCallStaysWithTheFloor() {
        // Halfway between ann and ben: both score 0.707, neither is clearly closer.
        let between = normalized(voice(0).enumerated().map { $0.element + voice(1)[$0.offset] })
        #expect(matcher.decide(between, floor: "ben", profiles) == .floor)
    }

    @Test func aVoiceLikeNobodysIsNeverNamedAndNotTheFloorHolders() {
        let guest = voice(7)
        #expect(matcher.decide(guest, floor: "ann", profiles) == .unknown(confidence: 0))
        // A guest who sounds a little like ben is still not ben.
        let likeBen = voice(7, lean: 0.9, toward: 1)
        guard case .unknown = matcher.decide(likeBen, floor: "ann", profiles) else {
            Issue.record("a guest at cosine \(cosine(likeBen, voice(1))) to ben was given someone")
            return
        }
    }

    @Test func withoutMatureProfilesTheFloorDecides() {
        let young = ["ann": profile(voice(0), seconds: 1.6)]
        #expect(matcher.decide(voice(0), floor: "ben", young) == .floor)
        #expect(matcher.decide(nil, floor: "ben", profiles) == .floor)
        #expect(matcher.decide(voice(7), floor: nil, profiles) == .floor)
    }

    @Test func theFloorTeachesAYoungProfileButNotAnotherKnownVoice() {
        // Ben has no profile yet: his turn teaches him, except where the voice is clearly ann's.
        let known = ["ann": profile(voice(0))]
        #expect(matcher.teaches(voice(1), holder: "ben", known))
        #expect(!matcher.teaches(voice(0), holder: "ben", known))
        // A mature profile learns only its own voice: not a guest, not a close call.
        #expect(matcher.teaches(voice(1, lean: 0.1), holder: "ben", profiles))
        #expect(!matcher.teaches(voice(7), holder: "ben", profiles))
        #expect(!matcher.teaches(voice(2), holder: "ben", profiles))
    }

    /// Two similar voices (cosine 0.857 between them, as espeak-ng at pitch 40 and 60 are): ann's mature
    /// profile accepts amy's voice too.
    let amy = voice(0, lean: 0.6, toward: 3)

    /// A window at `lean` from ann toward amy.
    func near(_ lean: Float) -> [Float] { voice(0, lean: lean, toward: 3) }

    @Test func aSimilarVoiceDoesNotTakeTheFloorFromAHolderStillLearning() {
        let known = ["ann": profile(voice(0)), "amy": profile(amy, seconds: 1.6)]
        #expect(cosine(amy, voice(0)) > matcher.acceptance)
        #expect(matcher.decide(amy, floor: "amy", known) == .floor)
        // And amy's young profile keeps learning her own voice in her turn, not starved by ann's.
        #expect(matcher.teaches(amy, holder: "amy", known))
        #expect(matcher.teaches(near(0.4), holder: "amy", known))
        // Ann's own voice still does not teach amy.
        #expect(!matcher.teaches(voice(0), holder: "amy", known))
    }

    @Test func overridingTheFloorNeedsAClearLeadOverTheHoldersOwnProfile() {
        let both = ["ann": profile(voice(0)), "amy": profile(amy)]
        // 0.09 closer to ann than to amy (past the 0.05 margin): not clear enough to take amy's floor.
        let lean = near(0.1)
        #expect(cosine(lean, voice(0)) - cosine(lean, amy) > matcher.margin)
        #expect(matcher.decide(lean, floor: "amy", both) == .floor)
        // Ann's own voice in amy's turn is hers.
        #expect(matcher.decide(voice(0), floor: "amy", both) == .voice("ann", confidence: 1))
        // In ann's own turn the same window is ann's by voice.
        #expect(matcher.decide(lean, floor: "ann", both) == .voice("ann", confidence: cosine(lean, voice(0))))
    }

    /// Ann's voice after a cold: 0.707 to her profile (below acceptance, above rejection), nobody else's.
    static let changed = voice(0, lean: 1, toward: 3)

    @Test func aHolderWhoseVoiceChangedIsRelearnedOverTwoMeetings() {
        var learned = profiles
        var changes: [String: VoiceChange] = [:]
        #expect(matcher.decide(Self.changed, floor: "ann", learned) == .floor)
        // A whole meeting of her turns in the changed voice: kept aside, not yet learned.
        for _ in 0..<10 {
            #expect(
                !matcher.learn(
                    Self.changed, seconds: 1.6, holder: "ann", meeting: "m1", at: 1, into: &learned, changes: &changes))
        }
        #expect(learned["ann"] == profiles["ann"])
        // Her next meeting confirms it: the profile is relearned from the new voice and names it again.
        #expect(
            matcher.learn(
                Self.changed, seconds: 1.6, holder: "ann", meeting: "m2", at: 2, into: &learned, changes: &changes))
        #expect(abs((learned["ann"]?.seconds ?? 0) - 11 * 1.6) < 1e-9)
        #expect(changes["ann"] == nil)
        guard case .voice("ann", _) = matcher.decide(Self.changed, floor: "ben", learned) else {
            Issue.record("the relearned voice is not named ann")
            return
        }
    }

    @Test func aGuestHoldingSomeonesFloorDoesNotOverwriteTheirProfile() {
        var learned = profiles
        var changes: [String: VoiceChange] = [:]
        // A guest like ann holds her floor for a whole meeting; a stranger holds it in the next.
        for _ in 0..<20 {
            matcher.learn(
                Self.changed, seconds: 1.6, holder: "ann", meeting: "m1", at: 1, into: &learned, changes: &changes)
        }
        for _ in 0..<20 {
            matcher.learn(
                voice(7), seconds: 1.6, holder: "ann", meeting: "m2", at: 2, into: &learned, changes: &changes)
        }
        #expect(learned["ann"] == profiles["ann"])
        // Ann herself speaks in the next meeting: the guest's windows kept aside are dropped, so the guest
        // holding her floor once more does not complete them.
        matcher.learn(voice(0), seconds: 1.6, holder: "ann", meeting: "m3", at: 3, into: &learned, changes: &changes)
        #expect(changes["ann"] == nil)
        let before = learned["ann"]
        for _ in 0..<5 {
            matcher.learn(
                Self.changed, seconds: 1.6, holder: "ann", meeting: "m4", at: 4, into: &learned, changes: &changes)
        }
        #expect(learned["ann"] == before)
        // Another attendee interjecting in ann's turns is theirs, never evidence that ann changed.
        for meeting in ["m5", "m6", "m7"] {
            for _ in 0..<10 {
                matcher.learn(
                    voice(1), seconds: 1.6, holder: "ann", meeting: meeting, at: 5, into: &learned, changes: &changes)
            }
        }
        #expect(learned["ann"] == before)
    }
}

@Suite struct VoiceStreamTests {
    @Test func silenceCostsNoEmbeddingAndWindowsAreBackToBack() throws {
        let stream = VoiceStream(encoder: VoiceEncoder(model: try VoiceModel(bytes: weightsFile())))
        let window = VoiceStream.windowSamples
        var windows = stream.append([Float](repeating: 0, count: window + 100)[...])
        // A voiced buzz that swells and fades four times a second, as syllables do (a steady tone is not
        // speech, and is not embedded: `SpeechGateTests`).
        let syllables = (0..<window).map {
            Float(0.3 * sin(Double($0) / 5) * (0.55 + 0.45 * sin(2 * Double.pi * 4 * Double($0) / 16_000)))
        }
        windows += stream.append(syllables[...])
        #expect(windows.map(\.start) == [0, window])
        #expect(windows[0].embedding == nil)
        #expect(windows[1].embedding?.count == 256)
        #expect(windows.allSatisfy { $0.count == window })
    }
}
