import SyncUpsJSON

/// Who ran over and who barely spoke in one meeting, from its timeline and its attributed transcript.
/// Pure arithmetic on seconds from the meeting's start.
///
/// - An attendee's **share** is the slot the timer gives them: the duration divided by the number of
///   attendees in whole seconds, as `SessionMachine` rotates, the last attendee taking what is left.
/// - **Floor** time is how long they had the floor, however their turn ended (`next`, auto-rotation, the
///   meeting's end), less the time the timer stood still (pauses, the wait for `end`, the save).
/// - **Speaking** time is the sum of their words' durations as the recognizer timed them (a segment without
///   word times counts as a whole).
/// - **By voice**, where the speaker encoder attributed speech (`SpeakerSource.voice`): the part of their
///   speaking time their voice was heard in; of it, the time **in others' turns** (interjections, overruns
///   into the next turn); and per other attendee, the time they were heard speaking **in this one's turn**.
/// - **Overtime** is floor minus share: positive, they ran over; negative, they handed time back. Only more
///   than `tolerance` either way counts as running over or as a turn cut short (the timer ticks in seconds).
public struct MeetingInsights: Sendable, Equatable {
    public static let tolerance = 0.5

    public struct AttendeeInsights: Sendable, Equatable {
        public var attendee: Attendee
        public var share: Double
        public var floor: Double
        public var speaking: Double
        /// How many turns they had: 0 when the meeting ended before their turn.
        public var turns: Int
        /// Speaking time in segments attributed by voice.
        public var speakingByVoice: Double = 0
        /// Of that, the time spoken while another attendee held the floor.
        public var inOthersTurns: Double = 0
        /// Who else was heard speaking in this attendee's turns, and for how long, in the meeting's order.
        public var othersInTurn: [(attendee: Attendee, seconds: Double)] = []
        /// Marked absent for the meeting: no share, no turn, and not a turn missed.
        public var isAbsent: Bool

        public init(
            attendee: Attendee, share: Double, floor: Double, speaking: Double, turns: Int, isAbsent: Bool = false
        ) {
            self.attendee = attendee
            self.share = share
            self.floor = floor
            self.speaking = speaking
            self.turns = turns
            self.isAbsent = isAbsent
        }

        public static func == (lhs: AttendeeInsights, rhs: AttendeeInsights) -> Bool {
            lhs.attendee == rhs.attendee && lhs.share == rhs.share && lhs.floor == rhs.floor
                && lhs.speaking == rhs.speaking && lhs.turns == rhs.turns && lhs.isAbsent == rhs.isAbsent
                && lhs.speakingByVoice == rhs.speakingByVoice
                && lhs.inOthersTurns == rhs.inOthersTurns
                && lhs.othersInTurn.map(\.attendee) == rhs.othersInTurn.map(\.attendee)
                && lhs.othersInTurn.map(\.seconds) == rhs.othersInTurn.map(\.seconds)
        }

        public var overtime: Double { floor - share }
        public var ranOver: Bool { turns > 0 && overtime > MeetingInsights.tolerance }
    }

    /// The sync-up's duration.
    public var plannedSeconds: Double
    /// From the start to the moment the meeting was ended (or time was up), pauses included.
    public var realSeconds: Double
    /// The time the timer stood still before the end.
    public var pausedSeconds: Double
    /// Turns that ended more than `tolerance` before their share was used.
    public var turnsCutShort: Int
    /// In the meeting's order of attendees.
    public var attendees: [AttendeeInsights]

    /// Whether any of its speech was named by voice (a meeting without voices has no by-voice figures).
    public var isAttributedByVoice: Bool {
        attendees.contains { $0.speakingByVoice > 0 || !$0.othersInTurn.isEmpty }
    }

    public init(
        plannedSeconds: Double, realSeconds: Double, pausedSeconds: Double, turnsCutShort: Int,
        attendees: [AttendeeInsights]
    ) {
        self.plannedSeconds = plannedSeconds
        self.realSeconds = realSeconds
        self.pausedSeconds = pausedSeconds
        self.turnsCutShort = turnsCutShort
        self.attendees = attendees
    }

    /// The insights of a saved meeting: its timeline, its attendees as they were, its attributed transcript.
    public init(
        timeline: MeetingTimeline, attendees: [Attendee], segments: [TranscriptSegment], absent: [Attendee] = []
    ) {
        let end = timeline.end ?? timeline.turns.last.map { $0.end ?? $0.start } ?? 0
        // The pause that lasts to the end is the wait for the save: the meeting was over when it began.
        let pauses = timeline.pauses.map { TimerPause(start: $0.start, end: min($0.end ?? end, end)) }
        // A timeline that says when the meeting was ended needs no guess (a pause may well last to `session.end`).
        let realEnd =
            timeline.end.map { max(timeline.turns.first?.start ?? 0, $0) }
            ?? pauses.last.flatMap { $0.end! >= end ? $0.start : nil } ?? end
        let start = timeline.turns.first?.start ?? 0
        let stood = PausedTime(pauses)
        func running(from start: Double, to end: Double) -> Double {
            max(0, end - start - stood.overlap(from: start, to: end))
        }
        // Each attendee once, where first listed (a hand-edited file may list one twice).
        var listed = Set<Attendee.ID>()
        let attendees = attendees.filter { listed.insert($0.id).inserted }
        let count = attendees.count
        let slot = count == 0 ? 0 : timeline.durationSeconds / count
        func share(_ index: Int) -> Double {
            Double(index == count - 1 ? timeline.durationSeconds - slot * (count - 1) : slot)
        }
        var rows = attendees.enumerated().map { index, attendee in
            AttendeeInsights(attendee: attendee, share: share(index), floor: 0, speaking: 0, turns: 0)
        }
        let rowOf = Dictionary(uniqueKeysWithValues: rows.enumerated().map { ($1.attendee.id, $0) })
        var cutShort = 0
        for turn in timeline.turns {
            let floor = running(from: turn.start, to: min(turn.end ?? end, realEnd))
            guard let row = rowOf[turn.speaker.id] else { continue }
            rows[row].floor += floor
            rows[row].turns += 1
            if floor < rows[row].share - Self.tolerance { cutShort += 1 }
        }
        for segment in segments {
            guard let speaker = segment.speaker, let row = rowOf[speaker.id] else { continue }
            rows[row].speaking +=
                segment.words.isEmpty
                ? max(0, segment.end - segment.start) : segment.words.reduce(0) { $0 + max(0, $1.end - $1.start) }
        }
        // By voice: each word of a segment attributed by voice, against who held the floor at its middle.
        var heardIn: [Int: [Int: Double]] = [:]  // floor holder's row → speaker's row → seconds
        for segment in segments {
            guard case .voice = segment.attribution, let speaker = segment.speaker, let row = rowOf[speaker.id]
            else { continue }
            for word in segment.words {
                let length = max(0, word.end - word.start)
                rows[row].speakingByVoice += length
                guard let turn = Attribution.turn(for: word, in: timeline.turns),
                    let holder = rowOf[timeline.turns[turn].speaker.id], holder != row
                else { continue }
                rows[row].inOthersTurns += length
                heardIn[holder, default: [:]][row, default: 0] += length
            }
        }
        for (holder, speakers) in heardIn {
            rows[holder].othersInTurn = speakers.sorted { $0.key < $1.key }.map { (rows[$0.key].attendee, $0.value) }
        }
        for person in absent where rowOf[person.id] == nil && listed.insert(person.id).inserted {
            rows.append(AttendeeInsights(attendee: person, share: 0, floor: 0, speaking: 0, turns: 0, isAbsent: true))
        }
        // Nobody speaks longer than the meeting lasted, whatever times a recognizer (or an editor) wrote.
        for index in rows.indices { rows[index].speaking = min(rows[index].speaking, max(0, realEnd - start)) }
        self.init(
            plannedSeconds: Double(timeline.durationSeconds),
            realSeconds: max(0, realEnd - start),
            pausedSeconds: (realEnd - start) - running(from: start, to: realEnd),
            turnsCutShort: cutShort,
            attendees: rows
        )
    }

    // MARK: - JSON

    /// Seconds to the millisecond, as every time syncupsd writes.
    private static func seconds(_ value: Double) -> JSONValue { .double(TranscriptWord.rounded(value)) }

    public var json: JSONValue {
        var object = JSONObject()
        object.append("plannedSeconds", Self.seconds(plannedSeconds))
        object.append("realSeconds", Self.seconds(realSeconds))
        object.append("pausedSeconds", Self.seconds(pausedSeconds))
        object.append("turnsCutShort", .int(turnsCutShort))
        object.append(
            "attendees",
            .array(
                attendees.map { row in
                    var member = JSONObject()
                    member.append("attendee", row.attendee.json)
                    member.append("share", Self.seconds(row.share))
                    member.append("floor", Self.seconds(row.floor))
                    member.append("speaking", Self.seconds(row.speaking))
                    member.append("overtime", Self.seconds(row.overtime))
                    member.append("turns", .int(row.turns))
                    member.append("ranOver", .bool(row.ranOver))
                    member.append("speakingByVoice", Self.seconds(row.speakingByVoice))
                    member.append("inOthersTurns", Self.seconds(row.inOthersTurns))
                    member.append(
                        "othersInTurn",
                        .array(
                            row.othersInTurn.map {
                                ["attendee": $0.attendee.json, "seconds": Self.seconds($0.seconds)]
                            }))
                    if row.isAbsent { member.append("absent", true) }
                    return .object(member)
                }))
        return .object(object)
    }

    /// Reads what `json` wrote (a client reads `meetings.get`'s `insights`); nil when it is not insights.
    public init?(json: JSONValue) {
        func number(_ value: JSONValue?) -> Double? { value?.numberValue?.double }
        guard let planned = number(json["plannedSeconds"]), let real = number(json["realSeconds"]),
            let rows = json["attendees"]?.arrayValue
        else { return nil }
        self.init(
            plannedSeconds: planned,
            realSeconds: real,
            pausedSeconds: number(json["pausedSeconds"]) ?? 0,
            turnsCutShort: Int(json["turnsCutShort"]?.numberValue?.int64 ?? 0),
            attendees: rows.compactMap { row in
                guard let attendee = row["attendee"].flatMap(Attendee.init(json:)) else { return nil }
                var insights = AttendeeInsights(
                    attendee: attendee, share: number(row["share"]) ?? 0, floor: number(row["floor"]) ?? 0,
                    speaking: number(row["speaking"]) ?? 0, turns: Int(row["turns"]?.numberValue?.int64 ?? 0),
                    isAbsent: row["absent"]?.boolValue ?? false)
                insights.speakingByVoice = number(row["speakingByVoice"]) ?? 0
                insights.inOthersTurns = number(row["inOthersTurns"]) ?? 0
                insights.othersInTurn = (row["othersInTurn"]?.arrayValue ?? []).compactMap { other in
                    guard let who = other["attendee"].flatMap(Attendee.init(json:)) else { return nil }
                    return (who, number(other["seconds"]) ?? 0)
                }
                return insights
            }
        )
    }
}

/// One attendee across meetings (`syncupsctl stats`): averages over the meetings in which they had a turn.
public struct AttendeeStats: Sendable, Equatable {
    public var attendee: Attendee
    /// Meetings in which they had a turn.
    public var meetings: Int
    public var averageFloor: Double
    public var averageSpeaking: Double
    /// In how many of those meetings they ran over.
    public var ranOver: Int
    /// In how many meetings they were marked absent (never counted as a turn, nor in the averages).
    public var absences: Int = 0
    /// Of `meetings`, those attributed by voice (any speech named by voice): the by-voice averages' count.
    public var meetingsWithVoices = 0
    /// Their speaking time named by voice, per meeting with voices.
    public var averageSpeakingByVoice: Double = 0
    /// Of it, the time spoken in others' turns (interjections, overruns), per meeting with voices.
    public var averageInOthersTurns: Double = 0

    public var json: JSONValue {
        var object = JSONObject()
        object.append("attendee", attendee.json)
        object.append("meetings", .int(meetings))
        object.append("averageFloor", .double(TranscriptWord.rounded(averageFloor)))
        object.append("averageSpeaking", .double(TranscriptWord.rounded(averageSpeaking)))
        object.append("ranOver", .int(ranOver))
        object.append("absences", .int(absences))
        object.append(
            "byVoice",
            meetingsWithVoices == 0
                ? .null
                : [
                    "meetings": .int(meetingsWithVoices),
                    "averageSpeaking": .double(TranscriptWord.rounded(averageSpeakingByVoice)),
                    "averageInOthersTurns": .double(TranscriptWord.rounded(averageInOthersTurns)),
                ])
        return .object(object)
    }

    /// One row per person, named as in the newest meeting, in the order they first appear, newest meeting
    /// first. Meetings are given newest first. A person is one attendee id, and also one name as `NameKey`
    /// compares names (case, accents and surrounding or repeated spaces ignored): meetings saved before the
    /// daemon gave a returning attendee their old id list them under a new one, by the same name.
    public static func of(_ meetings: [MeetingInsights]) -> [AttendeeStats] {
        var stats: [AttendeeStats] = []
        var rowOfID: [Attendee.ID: Int] = [:]
        var rowOfName: [String: Int] = [:]
        for meeting in meetings {
            let hasVoices = meeting.isAttributedByVoice
            for row in meeting.attendees where row.turns > 0 || row.isAbsent {
                let key = NameKey.of(row.attendee.name)
                let index =
                    rowOfID[row.attendee.id] ?? (key.isEmpty ? nil : rowOfName[key])
                    ?? {
                        stats.append(
                            AttendeeStats(
                                attendee: row.attendee, meetings: 0, averageFloor: 0, averageSpeaking: 0, ranOver: 0))
                        return stats.count - 1
                    }()
                rowOfID[row.attendee.id] = index
                if !key.isEmpty, rowOfName[key] == nil { rowOfName[key] = index }
                guard row.turns > 0 else {
                    stats[index].absences += 1
                    continue
                }
                stats[index].meetings += 1
                // Running sums for now; divided below.
                stats[index].averageFloor += row.floor
                stats[index].averageSpeaking += row.speaking
                if row.ranOver { stats[index].ranOver += 1 }
                if hasVoices {
                    stats[index].meetingsWithVoices += 1
                    stats[index].averageSpeakingByVoice += row.speakingByVoice
                    stats[index].averageInOthersTurns += row.inOthersTurns
                }
            }
        }
        for index in stats.indices where stats[index].meetings > 0 {
            let count = Double(stats[index].meetings)
            stats[index].averageFloor /= count
            stats[index].averageSpeaking /= count
            guard stats[index].meetingsWithVoices > 0 else { continue }
            stats[index].averageSpeakingByVoice /= Double(stats[index].meetingsWithVoices)
            stats[index].averageInOthersTurns /= Double(stats[index].meetingsWithVoices)
        }
        return stats
    }
}

/// The time the timer stood still, as sorted, merged intervals with running totals: how much of any span it
/// covers is two binary searches, so a meeting of many turns and many pauses costs n log n, not n² (a
/// hand-edited file of 100,000 of each held the loop for tens of seconds).
private struct PausedTime {
    private var starts: [Double] = []
    private var ends: [Double] = []
    /// `before[i]`: the paused time of the intervals before `i`.
    private var before: [Double] = [0]

    init(_ pauses: [TimerPause]) {
        for pause in pauses.sorted(by: { $0.start < $1.start }) {
            let start = pause.start
            let end = max(start, pause.end ?? start)
            if let last = ends.last, start <= last {
                ends[ends.count - 1] = max(last, end)
            } else {
                starts.append(start)
                ends.append(end)
            }
        }
        for index in starts.indices { before.append(before[index] + ends[index] - starts[index]) }
    }

    /// The paused time within `start...end`.
    func overlap(from start: Double, to end: Double) -> Double {
        guard end > start, !starts.isEmpty else { return 0 }
        let first = firstIndex { ends[$0] > start }  // the first interval that ends after `start`
        let last = firstIndex { starts[$0] >= end }  // the first interval that begins at or after `end`
        guard first < last else { return 0 }
        var total = before[last] - before[first]
        total -= max(0, start - starts[first])
        total -= max(0, ends[last - 1] - end)
        return max(0, total)
    }

    /// The first index for which `predicate` holds (it must hold from some index on), else the count.
    private func firstIndex(where predicate: (Int) -> Bool) -> Int {
        var low = 0
        var high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if predicate(middle) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
