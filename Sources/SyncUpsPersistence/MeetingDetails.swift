import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX

/// What syncupsd knows about a meeting that the app's model has no field for, kept in
/// `meetings/<meeting-id>.json` so `sync-ups.json` stays the app's format.
public struct MeetingDetails: Sendable, Equatable {
    public var meeting: Meeting.ID
    public var syncUp: SyncUp.ID
    /// The daemon stopped (crashed or was stopped) during the meeting; it was saved on recovery.
    public var isInterrupted: Bool
    /// Who attended, as they were when the meeting was recorded.
    public var attendees: [Attendee]
    /// Who was marked absent for the meeting (never had the floor).
    public var absent: [Attendee] = []
    /// What a hand-edited file held that could not be used (an absent attendee listed twice, or also as
    /// present, or without an id), said by `meetings.get`.
    public var problems: [String] = []
    /// The attributed transcript: who said what, with word timings.
    public var segments: [TranscriptSegment]
    /// Who held the floor when and when the timer stood still; nil for a meeting saved before syncupsd kept
    /// it (or recovered after a crash mid-turn): such a meeting has no insights.
    public var timeline: MeetingTimeline?

    public init(
        meeting: Meeting.ID,
        syncUp: SyncUp.ID,
        isInterrupted: Bool = false,
        attendees: [Attendee] = [],
        segments: [TranscriptSegment] = [],
        timeline: MeetingTimeline? = nil
    ) {
        self.meeting = meeting
        self.syncUp = syncUp
        self.isInterrupted = isInterrupted
        self.attendees = attendees
        self.segments = segments
        self.timeline = timeline
    }

    /// Who ran over and who barely spoke, or nil without a timeline (rather than numbers made up).
    public var insights: MeetingInsights? {
        timeline.map { MeetingInsights(timeline: $0, attendees: attendees, segments: segments, absent: absent) }
    }

    public var json: JSONValue {
        var object = JSONObject()
        object.append("meeting", .string(meeting.description))
        object.append("syncup", .string(syncUp.description))
        object.append("interrupted", .bool(isInterrupted))
        object.append(
            "attendees", .array(attendees.map(\.json)))
        if !absent.isEmpty { object.append("absent", .array(absent.map(\.json))) }
        object.append("segments", .array(segments.map(\.json)))
        if let timeline { object.append("timeline", timeline.json) }
        return .object(object)
    }

    /// The details in `json`; nil if it is not a meeting's. `stillWanted` is asked every `segmentsPerCheck`
    /// segments decoded (about a megabyte of a file with words): once false, the rest is not decoded, and the
    /// caller (`read`, which asks it again) drops what was.
    public init?(json: JSONValue, while stillWanted: () -> Bool = { true }) {
        guard let meetingText = json["meeting"]?.stringValue, let meeting = Meeting.ID(uuidString: meetingText),
            let syncUpText = json["syncup"]?.stringValue, let syncUp = SyncUp.ID(uuidString: syncUpText)
        else { return nil }
        self.meeting = meeting
        self.syncUp = syncUp
        isInterrupted = json["interrupted"]?.boolValue ?? false
        // A hand edit's entries that cannot be used are dropped and said so: the reply lists each person once.
        let unusable: [String]
        (attendees, unusable) = Self.people(json["attendees"], field: "attendees", repeated: "the first is used")
        (absent, problems) = Self.absent(json["absent"], besides: attendees)
        problems = unusable + problems
        segments = Self.segments(json["segments"]?.arrayValue ?? [], while: stillWanted)
        timeline = json["timeline"].flatMap(MeetingTimeline.init(json:))
        // Times that go back are clamped by the insights (never a negative floor): said, not hidden.
        var previous = -Double.infinity
        for (index, turn) in (timeline?.turns ?? []).enumerated() {
            if turn.start < previous || (turn.end.map { $0 < turn.start } ?? false) {
                problems.append(
                    "timeline.turns[\(index)] (\(turn.speaker.name)) goes back in time; its times are clamped in the insights"
                )
            }
            previous = max(previous, turn.end ?? turn.start, turn.start)
        }
        // A turn of someone not listed (a hand edit removed them) has no row in the insights: said, not hidden.
        let listed = Set(attendees.map(\.id))
        let missing = Set((timeline?.turns ?? []).map(\.speaker).filter { !listed.contains($0.id) })
        for speaker in missing.sorted(by: { $0.name < $1.name }) {
            problems.append(
                "\(speaker.name) (\(speaker.id)) had the floor but is not among the attendees; their turns are not in the insights"
            )
        }
    }

    /// How many segments are decoded between two questions whether the read is still wanted.
    public static let segmentsPerCheck = 4096

    /// The usable segments of `elements`, in order, up to the first `segmentsPerCheck` boundary at which
    /// `stillWanted` says no.
    private static func segments(_ elements: [JSONValue], while stillWanted: () -> Bool) -> [TranscriptSegment] {
        var segments: [TranscriptSegment] = []
        segments.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            if index > 0, index % segmentsPerCheck == 0, !stillWanted() { break }
            if let segment = TranscriptSegment(json: element) { segments.append(segment) }
        }
        return segments
    }

    /// The absent attendees of a file, and what of them could not be used: entries that are not attendees, or
    /// list someone twice or as present too (a hand edit).
    static func absent(_ json: JSONValue?, besides attendees: [Attendee]) -> ([Attendee], [String]) {
        people(json, field: "absent", besides: Set(attendees.map(\.id)), repeated: "ignored")
    }

    /// The attendees of the list `field`, each once and none of `besides`, and what of it could not be used.
    private static func people(
        _ json: JSONValue?, field: String, besides listed: Set<Attendee.ID> = [], repeated: String
    ) -> ([Attendee], [String]) {
        var seen = listed
        var people: [Attendee] = []
        var problems: [String] = []
        for (index, entry) in (json?.arrayValue ?? []).enumerated() {
            guard let attendee = Attendee(json: entry) else {
                problems.append("\(field)[\(index)] is not an attendee ({\"id\",\"name\"} with a valid id); ignored")
                continue
            }
            guard seen.insert(attendee.id).inserted else {
                problems.append("\(field)[\(index)] (\(attendee.name)) is listed already; \(repeated)")
                continue
            }
            people.append(attendee)
        }
        return (people, problems)
    }

    /// Writes `meetings/<meeting-id>.json` atomically.
    public func write(in directory: DataDirectory) throws(SystemError) {
        var bytes = JSONWriter(options: JSONWriter.Options(isPretty: true)).encode(json)
        bytes.append(0x0A)
        let file = AtomicFile(path: directory.sidecar(meeting, MeetingFiles.details))
        try directory.writingAgainIfGone { () throws(SystemError) in try file.write(bytes) }
    }

    /// Why a meeting's details file is there but gives no details: a disk error, a hand edit gone wrong.
    public struct Unreadable: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String

        /// The read given up because nobody waits for it (`read`'s `stillWanted`).
        public static let abandoned = Unreadable(description: "not read: nobody waits for it")
    }

    /// The largest details file that is read: a meeting's, even with a 600 KB transcript and its words, is a
    /// few megabytes; one larger is damage (a crash's sparse file), and reading it whole would take the memory.
    public static let maxFileBytes: Int64 = 256 << 20

    /// A details file is read this much at a time, asking between chunks whether it is still wanted.
    public static let readChunkBytes = 1 << 20

    /// Reads `meetings/<meeting-id>.json`: nil if there is none; throws, saying why, if it is there but cannot
    /// be read, is over `maxFileBytes` or is not a meeting's details, so that a client can tell "never kept"
    /// from "damaged". `stillWanted` is asked before each `readChunkBytes`, before the parse, at each megabyte
    /// of it and after it, every `segmentsPerCheck` segments decoded and after the decode: once false, the read stops there and throws `abandoned` (its client hung up).
    public static func read(
        _ meeting: Meeting.ID, in directory: DataDirectory, while stillWanted: () -> Bool = { true }
    )
        throws(Unreadable) -> MeetingDetails?
    {
        BlockingWork.check("reading the details of meeting \(meeting)")
        let path = directory.sidecar(meeting, MeetingFiles.details)
        let name = "meetings/\(FilePath.name(of: path))"
        let read: (identity: FileIdentity, bytes: [UInt8]?)
        var isAbandoned = false
        do {
            read = try SyncUpStore.withRegularFile(path) { (fd, identity) throws(SystemError) in
                guard identity.size <= maxFileBytes else { return (identity, nil) }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(Int(identity.size) + 1)
                while true {
                    guard stillWanted() else {
                        isAbandoned = true
                        return (identity, [])
                    }
                    let chunk = try fd.readToEnd(sizeHint: readChunkBytes, limit: Int64(readChunkBytes))
                    bytes += chunk
                    if chunk.count < readChunkBytes { return (identity, bytes) }
                }
            }
        } catch {
            if error.errno == .noSuchFile { return nil }
            throw Unreadable(description: "\(name): \(error)")
        }
        guard !isAbandoned, stillWanted() else { throw .abandoned }
        guard let bytes = read.bytes else {
            throw Unreadable(
                description:
                    "\(name): \(read.identity.size) bytes, over the \(maxFileBytes >> 20) MiB a meeting's details file may have; not read"
            )
        }
        let json: JSONValue
        do { json = try JSONParser().parse(bytes, while: stillWanted) } catch {
            throw error.isAbandoned ? .abandoned : Unreadable(description: "\(name): \(error)")
        }
        guard stillWanted() else { throw .abandoned }
        let details = MeetingDetails(json: json, while: stillWanted)
        guard stillWanted() else { throw .abandoned }  // a decode given up midway is dropped
        guard let details else {
            throw Unreadable(description: "\(name): not a meeting's details (no \"meeting\" and \"syncup\" ids)")
        }
        return details
    }
}
