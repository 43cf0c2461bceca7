import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX

/// The record of a meeting in progress, `meetings/<meeting-id>.recording.json`: rewritten as the transcript
/// grows and removed when the meeting is saved or discarded. Finding one at start-up means the daemon died
/// mid-meeting; the meeting is then recovered rather than lost.
public struct MeetingJournal: Sendable, Equatable {
    public var syncUp: SyncUp.ID
    /// The sync-up's fields as the meeting has them (the machine follows edits until the save begins), to
    /// recreate it if it never reached the disk.
    public var title: String
    public var theme: Theme
    public var durationSeconds: Int
    public var meeting: Meeting.ID
    public var date: Date
    public var transcript: String
    public var hasAudio: Bool
    public var attendees: [Attendee]
    public var segments: [TranscriptSegment]
    /// Who is marked absent so far.
    public var absent: [Attendee] = []
    /// The recognizer's provisional tail (kept, in case a crash comes before it settles).
    public var partial = ""
    /// Where the provisional tail lies (seconds from the meeting's start), when the recognizer said.
    public var partialStart: Double?
    public var partialEnd: Double?
    /// Saved as interrupted (the daemon stopped mid-meeting); the last journal, kept while its details
    /// cannot be written, says so.
    public var isInterrupted = false
    /// Turns and pauses so far (for `MeetingInsights`); its last turn is open until the meeting ended.
    public var timeline: MeetingTimeline?

    public init(
        syncUp: SyncUp.ID,
        title: String,
        theme: Theme,
        durationSeconds: Int,
        meeting: Meeting.ID,
        date: Date,
        transcript: String,
        hasAudio: Bool,
        attendees: [Attendee],
        segments: [TranscriptSegment]
    ) {
        self.syncUp = syncUp
        self.title = title
        self.theme = theme
        self.durationSeconds = durationSeconds
        self.meeting = meeting
        self.date = date
        self.transcript = transcript
        self.hasAudio = hasAudio
        self.attendees = attendees
        self.segments = segments
    }

    var json: JSONValue {
        var object = JSONObject()
        object.append("syncup", .string(syncUp.description))
        object.append("title", .string(title))
        object.append("theme", .string(theme.rawValue))
        object.append("duration", .int(durationSeconds))
        object.append("meeting", .string(meeting.description))
        // Seconds since 2001 exactly as sync-ups.json stores dates, so the recovered meeting matches to the bit.
        object.append("date", .double(date.timeIntervalSinceReferenceDate))
        object.append("transcript", .string(transcript))
        object.append("audio", .bool(hasAudio))
        object.append(
            "attendees", .array(attendees.map(\.json)))
        object.append("segments", .array(segments.map(\.json)))
        if !absent.isEmpty { object.append("absent", .array(absent.map(\.json))) }
        if !partial.isEmpty {
            object.append("partial", .string(partial))
            if let partialStart { object.append("partialStart", .double(partialStart)) }
            if let partialEnd { object.append("partialEnd", .double(partialEnd)) }
        }
        if isInterrupted { object.append("interrupted", true) }
        if let timeline { object.append("timeline", timeline.json) }
        return .object(object)
    }

    init?(json: JSONValue) {
        guard let syncUp = json["syncup"]?.stringValue.flatMap(SyncUp.ID.init(uuidString:)),
            let meeting = json["meeting"]?.stringValue.flatMap(Meeting.ID.init(uuidString:)),
            let date = json["date"]?.numberValue?.double
        else { return nil }
        self.syncUp = syncUp
        title = json["title"]?.stringValue ?? ""
        theme = json["theme"]?.stringValue.flatMap(Theme.init(rawValue:)) ?? .bubblegum
        durationSeconds = json["duration"]?.numberValue?.int64.map(Int.init) ?? 300
        self.meeting = meeting
        self.date = Date(timeIntervalSinceReferenceDate: date)
        transcript = json["transcript"]?.stringValue ?? ""
        hasAudio = json["audio"]?.boolValue ?? false
        attendees = (json["attendees"]?.arrayValue ?? []).compactMap(Attendee.init(json:))
        segments = (json["segments"]?.arrayValue ?? []).compactMap(TranscriptSegment.init(json:))
        absent = MeetingDetails.absent(json["absent"], besides: attendees).0
        partial = json["partial"]?.stringValue ?? ""
        partialStart = json["partialStart"]?.numberValue.map { TranscriptWord.clamped($0.double) }
        partialEnd = json["partialEnd"]?.numberValue.map { TranscriptWord.clamped($0.double) }
        isInterrupted = json["interrupted"]?.boolValue ?? false
        timeline = json["timeline"].flatMap(MeetingTimeline.init(json:))
    }

    /// Writes the journal atomically (without fsync: it guards against a crash of the daemon, and is
    /// rewritten often).
    public func write(in directory: DataDirectory) throws(SystemError) {
        var file = AtomicFile(path: directory.sidecar(meeting, MeetingFiles.journal))
        file.isDurable = false
        let bytes = JSONWriter().encode(json)
        try directory.writingAgainIfGone { () throws(SystemError) in try file.write(bytes) }
    }

    /// Removes the journal; one already gone is removed. A journal left behind recovers its meeting at the
    /// next start, even one the user deleted, so the caller retries a failure.
    public static func remove(_ meeting: Meeting.ID, in directory: DataDirectory) throws(SystemError) {
        let path = directory.sidecar(meeting, MeetingFiles.journal)
        guard unlink(path) == 0 || Errno.current == .noSuchFile else {
            throw SystemError("unlink \(FilePath.name(of: path))", Errno.current)
        }
    }

    /// Every journal left in `meetings/`, with the file names of those that cannot be read (or are over
    /// `MeetingDetails.maxFileBytes`).
    public static func leftBehind(in directory: DataDirectory) -> (journals: [MeetingJournal], unreadable: [String]) {
        var journals: [MeetingJournal] = []
        var unreadable: [String] = []
        let suffix = "." + MeetingFiles.journal
        for name in (try? DirectoryListing.names(in: directory.meetingsDirectory)) ?? [] where name.hasSuffix(suffix) {
            let path = FilePath.join(directory.meetingsDirectory, name)
            // One over the size no meeting's file reaches is damage, and is not read whole.
            if let read = try? SyncUpStore.readIdentified(path, readsIf: { $0.size <= MeetingDetails.maxFileBytes }),
                let bytes = read.bytes, let json = try? JSONParser().parse(bytes),
                let journal = MeetingJournal(json: json)
            {
                journals.append(journal)
            } else {
                unreadable.append(path)
            }
        }
        return (journals.sorted { $0.date < $1.date }, unreadable)
    }
}
