import SyncUpsJSON

/// A recognised word and when it was said, in seconds from the meeting's start.
public struct TranscriptWord: Sendable, Equatable {
    public var word: String
    public var start: Double
    public var end: Double

    public init(word: String, start: Double, end: Double) {
        self.word = word
        self.start = start
        self.end = end
    }

    public var json: JSONValue {
        ["word": .string(word), "start": .double(Self.rounded(start)), "end": .double(Self.rounded(end))]
    }

    public init?(json: JSONValue) {
        guard let word = json["word"]?.stringValue, let start = json["start"]?.numberValue?.double,
            let end = json["end"]?.numberValue?.double
        else { return nil }
        self.init(word: word, start: Self.clamped(start), end: Self.clamped(end))
    }

    /// Milliseconds are all the precision a timing has.
    static func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }

    /// The longest time a timing may say: a week of meeting. A recognizer's nonsense (1e300, infinity, a
    /// negative time) is brought into range rather than carried into files and exports.
    public static let maximumTime = 7.0 * 86_400

    public static func clamped(_ seconds: Double) -> Double {
        seconds.isFinite ? min(max(seconds, 0), maximumTime) : 0
    }
}

/// Part of a meeting's transcript said by one attendee during one turn.
public struct TranscriptSegment: Sendable, Equatable {
    /// Who had the floor; nil when the words fall outside every turn (the recognizer's clock ran past it).
    public var speaker: Attendee?
    public var start: Double
    public var end: Double
    public var text: String
    public var words: [TranscriptWord]
    /// Whether `speaker` is who held the floor, or whose voice was heard.
    public var attribution: SpeakerSource

    public init(
        speaker: Attendee?, start: Double, end: Double, text: String, words: [TranscriptWord],
        attribution: SpeakerSource = .floor
    ) {
        self.speaker = speaker
        self.start = start
        self.end = end
        self.text = text
        self.words = words
        self.attribution = attribution
    }

    public var json: JSONValue {
        var object = JSONObject()
        object.append("speaker", speaker?.json ?? .null)
        object.append("start", .double(TranscriptWord.rounded(start)))
        object.append("end", .double(TranscriptWord.rounded(end)))
        object.append("text", .string(text))
        object.append("words", .array(words.map(\.json)))
        object.append("attribution", attribution.json)
        return .object(object)
    }

    public init?(json: JSONValue) {
        guard let rawStart = json["start"]?.numberValue?.double, let rawEnd = json["end"]?.numberValue?.double,
            let text = json["text"]?.stringValue
        else { return nil }
        let (start, end) = (TranscriptWord.clamped(rawStart), TranscriptWord.clamped(rawEnd))
        self.init(
            speaker: json["speaker"].flatMap(Attendee.init(json:)),
            start: start,
            end: end,
            text: text,
            words: (json["words"]?.arrayValue ?? []).compactMap(TranscriptWord.init(json:)),
            attribution: SpeakerSource(json: json["attribution"])
        )
    }
}

/// One attendee's turn to speak, in seconds from the meeting's start; `end` is nil while it lasts.
public struct SpeakerTurn: Sendable, Equatable {
    public var speaker: Attendee
    public var start: Double
    public var end: Double?

    public init(speaker: Attendee, start: Double, end: Double? = nil) {
        self.speaker = speaker
        self.start = start
        self.end = end
    }
}
