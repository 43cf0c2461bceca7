import SyncUpsCore
import SyncUpsJSON

/// How model values look on the wire (protocol.md, "Wire shapes"): durations in whole seconds, dates as
/// RFC 3339 UTC, ids as upper-case UUID strings.
public enum WireFormat {
    /// How much of a sync-up's meetings to include.
    public enum MeetingDetail: Sendable {
        /// `{id, date, transcript}` for every meeting.
        case full
        /// `{id, date}` only, the newest `maxSummaryMeetings`, and `meetingsTotal`: lists and events.
        case summary
        /// A page of full meetings.
        case page(offset: Int, limit: Int)
    }

    /// The most meetings (`{id, date}`, newest first) a sync-up carries in lists and events.
    public static let maxSummaryMeetings = 1000

    public static func syncUp(_ syncUp: SyncUp, meetings detail: MeetingDetail) -> JSONValue {
        var object = JSONObject()
        object.append("id", .string(syncUp.id.description))
        object.append("title", .string(syncUp.title))
        object.append("theme", .string(syncUp.theme.rawValue))
        object.append("duration", .int(syncUp.durationSeconds))
        object.append("attendees", .array(syncUp.attendees.map(\.json)))
        switch detail {
        case .full:
            object.append("meetings", .array(syncUp.meetings.map { meeting($0, includesTranscript: true) }))
        case .summary:
            // The newest ones only: a sync-up with years of history still fits a list page (syncups.get pages all).
            let newest = syncUp.meetings.prefix(maxSummaryMeetings)
            object.append("meetings", .array(newest.map { meeting($0, includesTranscript: false) }))
            object.append("meetingsTotal", .int(syncUp.meetings.count))
        case .page(let offset, let limit):
            let start = min(offset, syncUp.meetings.count)
            let end = min(syncUp.meetings.count, start + limit)
            object.append(
                "meetings", .array(syncUp.meetings[start..<end].map { meeting($0, includesTranscript: true) }))
            object.append("meetingsTotal", .int(syncUp.meetings.count))
            object.append("meetingsNext", end < syncUp.meetings.count ? .int(end) : .null)
        }
        return .object(object)
    }

    /// `{id, date}`, with the transcript's first `maxTranscriptBytes` (`TranscriptWindow`) if asked for.
    public static func meeting(
        _ meeting: Meeting, includesTranscript: Bool, maxTranscriptBytes: Int = Limits().maxTranscriptBytes
    ) -> JSONValue {
        var object = JSONObject()
        object.append("id", .string(meeting.id.description))
        object.append("date", .string(UTCTime(meeting.date).rfc3339))
        if includesTranscript {
            TranscriptWindow.page(of: meeting.transcript, from: 0, maxBytes: maxTranscriptBytes).append(to: &object)
        }
        return .object(object)
    }

    /// `{"name","displayName","accent","main"}` with colours as `#RRGGBB`.
    public static func theme(_ theme: Theme) -> JSONValue {
        [
            "name": .string(theme.rawValue),
            "displayName": .string(theme.name),
            "accent": .string(theme.accentColor.hex),
            "main": .string(theme.mainColor.hex),
        ]
    }
}

extension WireFormat {
    /// The session object of protocol.md: the machine's state, with the runtime's audio and speech status.
    /// Its transcript is the last `maxTranscriptBytes` (`TranscriptWindow`): what a live view shows.
    public static func session(
        _ machine: SessionMachine, audio: JSONValue, transcription: JSONValue,
        maxTranscriptBytes: Int = Limits().maxTranscriptBytes
    ) -> JSONValue {
        var object = JSONObject()
        object.append("syncup", .string(machine.syncUp.id.description))
        object.append("title", .string(machine.syncUp.title))
        object.append("theme", theme(machine.syncUp.theme))
        object.append("meeting", .string(machine.meetingID.description))
        object.append("startedAt", .string(UTCTime(machine.startDate).rfc3339))
        // `starting` while the capture device opens (`session.start` has not replied yet).
        object.append("state", .string(machine.isStarting ? "starting" : machine.phase.rawValue))
        object.append("secondsElapsed", .int(machine.secondsElapsed))
        object.append("duration", .int(machine.durationSeconds))
        object.append("durationRemaining", .int(machine.durationRemaining))
        object.append("secondsPerAttendee", .int(machine.secondsPerAttendee))
        object.append("speakerIndex", .int(machine.speakerIndex))
        object.append("speaker", machine.speaker?.json ?? .null)
        // Those who take turns: the meeting's roster, without the absent (listed apart) and those who left.
        object.append("attendeeCount", .int(machine.roster.rotationCount))
        object.append("absent", .array(machine.roster.absent.map(\.json)))
        TranscriptWindow.tail(of: machine.transcript, maxBytes: maxTranscriptBytes).append(to: &object)
        object.append("transcribing", .bool(machine.isTranscribing))
        object.append("audio", audio)
        object.append("transcription", transcription)
        return .object(object)
    }
}
