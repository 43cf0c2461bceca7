/// What is known of one attendee's voice: the sum of the embeddings of the windows learned (their mean's
/// direction is the profile), how much speech that was, and when it last changed.
public struct VoiceProfile: Sendable, Equatable {
    public var sum: [Float]
    public var seconds: Double
    /// Unix seconds.
    public var updated: Int64

    public init(
        sum: [Float] = [Float](repeating: 0, count: VoiceModel.embeddingSize), seconds: Double = 0, updated: Int64 = 0
    ) {
        self.sum = sum
        self.seconds = seconds
        self.updated = updated
    }

    public var centroid: [Float] { normalized(sum) }

    /// The cosine a new window of this voice can expect with the profile: the square root of the mean cosine
    /// between the windows learned (read off the sum's length: |sum|² = n + n(n-1)·mean), 1 below two windows.
    public var typicalScore: Float {
        let windows = (seconds * Double(MelFrontend.sampleRate) / Double(VoiceStream.windowSamples)).rounded()
        guard windows >= 2 else { return 1 }
        let length = sum.reduce(0) { $0 + $1 * $1 }
        let mean = (length - Float(windows)) / Float(windows * (windows - 1))
        return max(0, mean).squareRoot()
    }

    public mutating func learn(_ embedding: [Float], seconds: Double, at time: Int64) {
        for index in sum.indices { sum[index] += embedding[index] }
        self.seconds += seconds
        updated = time
    }
}

/// The windows of a mature profile's holder, in their own turns, that their profile no longer accepts (a cold, a
/// new microphone): kept aside, in memory only, until they show the voice changed for good (`VoiceMatcher.learn`).
public struct VoiceChange: Sendable, Equatable {
    public var sum = [Float](repeating: 0, count: VoiceModel.embeddingSize)
    public var seconds = 0.0
    /// The meetings they were heard in.
    public var meetings: Set<String> = []

    public init() {}
}

/// How a stretch of speech was attributed.
public enum VoiceDecision: Sendable, Equatable {
    /// The voice is this attendee's, with the cosine to their profile.
    case voice(String, confidence: Float)
    /// A voice that matches no profile, the floor holder's included (a guest): never given to an attendee.
    case unknown(confidence: Float)
    /// No confident answer (no profile yet, too close a call, silence): the floor holder keeps it.
    case floor
}

/// The open-set rule: a window goes to the best-matching profile only if it is close enough and clearly
/// closer than the next; it is an unknown voice if it is far from every mature profile.
public struct VoiceMatcher: Sendable {
    /// The cosine a window must reach to be given to a profile by voice.
    public var acceptance: Float
    /// How much closer than the second-best profile the best must be.
    public var margin: Float
    /// Below this cosine to the floor holder's mature profile, a voice no profile accepts is nobody's: not the
    /// floor holder's, and too far from everyone else's to be theirs.
    public var rejection: Float
    /// Speech a profile needs before it decides anything.
    public var matureSeconds: Double
    /// How much closer than the floor holder's own profile a voice must be to take the floor's words from
    /// them: two similar voices (espeak-ng at pitch 40 and 60) are both above `acceptance` for each other.
    public var floorMargin: Float
    /// A mature profile is learned again from scratch once this much of its holder's own turns, in
    /// `relearnMeetings` meetings or more, sounded like nobody's profile and not enough like their own.
    public var relearnSeconds: Double
    public var relearnMeetings: Int

    public init(
        acceptance: Float = 0.8, margin: Float = 0.05, rejection: Float = 0.66, matureSeconds: Double = 4.8,
        floorMargin: Float = 0.1, relearnSeconds: Double = 9.6, relearnMeetings: Int = 2
    ) {
        self.acceptance = acceptance
        self.margin = margin
        self.rejection = rejection
        self.matureSeconds = matureSeconds
        self.floorMargin = floorMargin
        self.relearnSeconds = relearnSeconds
        self.relearnMeetings = relearnMeetings
    }

    /// Cosines of `embedding` to each mature profile, best first.
    public func scores(_ embedding: [Float], _ profiles: [String: VoiceProfile]) -> [(id: String, score: Float)] {
        profiles.filter { $0.value.seconds >= matureSeconds }
            .map { (id: $0.key, score: cosine(embedding, $0.value.centroid)) }
            .sorted { $0.score > $1.score || ($0.score == $1.score && $0.id < $1.id) }
    }

    /// The attribution of one window heard while `floor` holds the floor. Another attendee's voice takes the
    /// window from the floor holder only if the holder's profile is mature too (one still learning cannot be
    /// told from a similar voice) and the voice is `floorMargin` closer than the holder's own profile.
    public func decide(_ embedding: [Float]?, floor: String?, _ profiles: [String: VoiceProfile]) -> VoiceDecision {
        guard let embedding else { return .floor }
        let ranked = scores(embedding, profiles)
        guard let best = ranked.first else { return .floor }
        let second = ranked.count > 1 ? ranked[1].score : -1
        let holder = floor.flatMap { floor in ranked.first { $0.id == floor } }
        if best.score >= acceptance && best.score - second >= margin {
            guard let floor, best.id != floor else { return .voice(best.id, confidence: best.score) }
            if let holder, best.score - holder.score >= floorMargin {
                return .voice(best.id, confidence: best.score)
            }
            return .floor
        }
        if let holder, holder.score < rejection {
            return .unknown(confidence: holder.score)
        }
        return .floor
    }

    /// Whether a window heard in `holder`'s turn teaches their profile. A mature one learns only its own voice.
    /// A young one takes what the floor gives unless the voice is decisively someone else's: another mature
    /// profile accepts it, it is as close to that profile as its owner's own windows typically are
    /// (`typicalScore`: its owner is plausible), and `floorMargin` closer to it than to what the holder's young
    /// profile already holds (a holder with nothing yet cannot outscore anyone). A voice merely like a known one,
    /// espeak-ng at pitch 60 beside pitch 40 (0.82-0.85 to the other's profile, whose own windows reach 0.87), learns
    /// its own turn; the known voice interjecting there (0.9 and more) does not teach it.
    public func teaches(_ embedding: [Float], holder: String, _ profiles: [String: VoiceProfile]) -> Bool {
        let own = profiles[holder]
        if let own, own.seconds >= matureSeconds {
            if case .voice(let id, _) = decide(embedding, floor: holder, profiles) { return id == holder }
            return false
        }
        guard let other = scores(embedding, profiles.filter { $0.key != holder }).first, other.score >= acceptance,
            let theirs = profiles[other.id], other.score >= theirs.typicalScore
        else { return true }
        guard let own, own.seconds > 0 else { return false }
        return other.score - cosine(embedding, own.centroid) < floorMargin
    }

    /// Teaches `holder`'s profile the window if `teaches` says so; returns whether it did.
    @discardableResult
    public func learn(
        _ embedding: [Float], seconds: Double, holder: String, at time: Int64,
        into profiles: inout [String: VoiceProfile]
    ) -> Bool {
        guard teaches(embedding, holder: holder, profiles) else { return false }
        profiles[holder, default: VoiceProfile()].learn(embedding, seconds: seconds, at: time)
        return true
    }

    /// `learn`, and a mature profile that stopped matching its holder relearned. A window of the holder's own
    /// turn that their profile no longer accepts (between `rejection` and `acceptance`: too unlike to be theirs
    /// for sure, too like to be a stranger) while no other profile accepts it is kept aside in `changes`; once
    /// `relearnSeconds` of such windows were heard in `relearnMeetings` meetings or more, they replace the
    /// profile (its old voice is gone; the rest of the meeting matches the new one). A window their profile
    /// accepts again means the voice did not change: what was kept aside is dropped. So a guest who holds
    /// someone's floor for a whole meeting, however long, never overwrites them, and neither does a stranger
    /// (below `rejection`); a guest like the holder who holds their floor in two meetings while the holder is never
    /// heard as themselves does. Returns whether the profile changed.
    @discardableResult
    public func learn(
        _ embedding: [Float], seconds: Double, holder: String, meeting: String, at time: Int64,
        into profiles: inout [String: VoiceProfile], changes: inout [String: VoiceChange]
    ) -> Bool {
        if learn(embedding, seconds: seconds, holder: holder, at: time, into: &profiles) {
            changes[holder] = nil
            return true
        }
        guard let own = profiles[holder], own.seconds >= matureSeconds else { return false }
        let ranked = scores(embedding, profiles)
        guard let score = ranked.first(where: { $0.id == holder })?.score, score >= rejection, score < acceptance,
            !ranked.contains(where: { $0.id != holder && $0.score >= acceptance })
        else { return false }
        var change = changes[holder] ?? VoiceChange()
        for index in change.sum.indices { change.sum[index] += embedding[index] }
        change.seconds += seconds
        change.meetings.insert(meeting)
        guard change.seconds >= relearnSeconds, change.meetings.count >= relearnMeetings else {
            changes[holder] = change
            return false
        }
        profiles[holder] = VoiceProfile(sum: change.sum, seconds: change.seconds, updated: time)
        changes[holder] = nil
        return true
    }
}
