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
        timeline.map { MeetingInsights(timeline: $0, attendees: attendees, segments: segments) }
    }

    public var json: JSONValue {
        var object = JSONObject()
        object.append("meeting", .string(meeting.description))
        object.append("syncup", .string(syncUp.description))
        object.append("interrupted", .bool(isInterrupted))
        object.append(
            "attendees", .array(attendees.map(\.json)))
        object.append("segments", .array(segments.map(\.json)))
        if let timeline { object.append("timeline", timeline.json) }
        return .object(object)
    }

    public init?(json: JSONValue) {
        guard let meetingText = json["meeting"]?.stringValue, let meeting = Meeting.ID(uuidString: meetingText),
            let syncUpText = json["syncup"]?.stringValue, let syncUp = SyncUp.ID(uuidString: syncUpText)
        else { return nil }
        self.meeting = meeting
        self.syncUp = syncUp
        isInterrupted = json["interrupted"]?.boolValue ?? false
        attendees = (json["attendees"]?.arrayValue ?? []).compactMap(Attendee.init(json:))
        segments = (json["segments"]?.arrayValue ?? []).compactMap(TranscriptSegment.init(json:))
        timeline = json["timeline"].flatMap(MeetingTimeline.init(json:))
    }

    /// Writes `meetings/<meeting-id>.json` atomically.
    public func write(in directory: DataDirectory) throws(SystemError) {
        var bytes = JSONWriter(options: JSONWriter.Options(isPretty: true)).encode(json)
        bytes.append(0x0A)
        try AtomicFile(path: directory.sidecar(meeting, MeetingFiles.details)).write(bytes)
    }

    /// Reads `meetings/<meeting-id>.json`, or nil if there is none (or it is unreadable).
    public static func read(_ meeting: Meeting.ID, in directory: DataDirectory) -> MeetingDetails? {
        guard let bytes = try? SyncUpStore.read(directory.sidecar(meeting, MeetingFiles.details)),
            let json = try? JSONParser().parse(bytes)
        else { return nil }
        return MeetingDetails(json: json)
    }
}
