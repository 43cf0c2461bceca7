import SyncUpsJSON

/// A stretch of a meeting during which its timer stood still: a pause, the wait for `end` after the last
/// speaker's `next`, the save. Seconds from the meeting's start; `end` is nil while it lasts.
public struct TimerPause: Sendable, Equatable {
    public var start: Double
    public var end: Double?

    public init(start: Double, end: Double? = nil) {
        self.start = start
        self.end = end
    }
}

/// How a meeting's time went: what was planned, who held the floor when, and when the timer stood still.
/// Kept in the meeting's details file (never in `sync-ups.json`, which stays the app's format), it is what
/// `MeetingInsights` are computed from.
public struct MeetingTimeline: Sendable, Equatable {
    /// The sync-up's duration when the meeting ended.
    public var durationSeconds: Int
    public var turns: [SpeakerTurn]
    public var pauses: [TimerPause]
    /// When the meeting was ended (time up, `session.end`, `next` at the last speaker); nil in a meeting saved
    /// before syncupsd kept it, or in a journal of a meeting still running.
    public var end: Double?

    public init(durationSeconds: Int, turns: [SpeakerTurn], pauses: [TimerPause], end: Double? = nil) {
        self.durationSeconds = durationSeconds
        self.turns = turns
        self.pauses = pauses
        self.end = end
    }

    /// The timeline with a turn left open by a crash closed where the meeting was ended, or nil when it was
    /// not ended (the crash came mid-turn: when that turn ended is not known).
    public var closed: MeetingTimeline? {
        guard let last = turns.last, last.end == nil else { return self }
        guard let end else { return nil }
        var closed = self
        closed.turns[turns.count - 1].end = max(last.start, end)
        return closed
    }

    public var json: JSONValue {
        var object = JSONObject()
        object.append("duration", .int(durationSeconds))
        object.append(
            "turns",
            .array(
                turns.map { turn in
                    [
                        "speaker": turn.speaker.json, "start": .double(TranscriptWord.rounded(turn.start)),
                        "end": turn.end.map { .double(TranscriptWord.rounded($0)) } ?? .null,
                    ]
                }))
        object.append(
            "pauses",
            .array(
                pauses.map { pause in
                    [
                        "start": .double(TranscriptWord.rounded(pause.start)),
                        "end": pause.end.map { .double(TranscriptWord.rounded($0)) } ?? .null,
                    ]
                }))
        if let end { object.append("end", .double(TranscriptWord.rounded(end))) }
        return .object(object)
    }

    /// Reads what `json` wrote; nil when it is not a timeline. Turns without a valid speaker are skipped.
    public init?(json: JSONValue) {
        guard let duration = json["duration"]?.numberValue?.double, let turns = json["turns"]?.arrayValue else {
            return nil
        }
        func time(_ value: JSONValue?) -> Double? { value?.numberValue.map { TranscriptWord.clamped($0.double) } }
        self.init(
            // In range like every time read back: a hand-edited file cannot make the arithmetic overflow.
            durationSeconds: Int(TranscriptWord.clamped(duration)),
            turns: turns.compactMap { turn in
                guard let speaker = turn["speaker"].flatMap(Attendee.init(json:)), let start = time(turn["start"])
                else { return nil }
                return SpeakerTurn(speaker: speaker, start: start, end: time(turn["end"]))
            },
            pauses: (json["pauses"]?.arrayValue ?? []).compactMap { pause in
                time(pause["start"]).map { TimerPause(start: $0, end: time(pause["end"])) }
            },
            end: time(json["end"])
        )
    }
}
