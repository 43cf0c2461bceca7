import SyncUpsJSON

/// A stretch of the meeting's audio whose voice the speaker encoder matched, with confidence, to one of the
/// meeting's attendees (an open-set match: a voice like nobody's is never evidence, so a guest is never named).
public struct VoiceEvidence: Sendable, Equatable {
    public var speaker: Attendee
    /// Seconds from the meeting's start.
    public var start: Double
    public var end: Double
    /// The cosine of the voice to the attendee's profile.
    public var confidence: Double

    public init(speaker: Attendee, start: Double, end: Double, confidence: Double) {
        self.speaker = speaker
        self.start = start
        self.end = end
        self.confidence = confidence
    }

    public func holds(_ time: Double) -> Bool { start <= time && time < end }
}

/// How a segment's speaker was decided: by the floor (the turn its words fall in), or by the voice heard.
public enum SpeakerSource: Sendable, Equatable {
    case floor
    /// The voice matched the speaker's profile; the confidence is the mean cosine over the segment's words.
    case voice(confidence: Double)

    public var json: JSONValue {
        switch self {
        case .floor: ["by": "floor"]
        case .voice(let confidence): ["by": "voice", "confidence": .double((confidence * 1000).rounded() / 1000)]
        }
    }

    /// A segment without `attribution` (every one saved before voices) was attributed by the floor.
    public init(json: JSONValue?) {
        if json?["by"]?.stringValue == "voice", let confidence = json?["confidence"]?.numberValue?.double,
            confidence.isFinite
        {
            self = .voice(confidence: min(max(confidence, -1), 1))
        } else {
            self = .floor
        }
    }
}
