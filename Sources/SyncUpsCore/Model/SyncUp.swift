/// A recurring stand-up: who attends, how long it lasts, how it looks, and the meetings it has held.
///
/// The fields and defaults are the SyncUps app's (`Models.swift`), so `sync-ups.json` reads and writes the same.
public struct SyncUp: Sendable, Hashable, Identifiable {
    public typealias ID = Identifier<SyncUp>

    /// The app's default length: five minutes.
    public static let defaultDuration = Duration.seconds(5 * 60)

    public let id: ID
    public var attendees: [Attendee]
    public var duration: Duration
    /// Newest first: a saved meeting is inserted at index 0.
    public var meetings: [Meeting]
    public var theme: Theme
    public var title: String

    public init(
        id: ID,
        attendees: [Attendee] = [],
        duration: Duration = SyncUp.defaultDuration,
        meetings: [Meeting] = [],
        theme: Theme = .bubblegum,
        title: String = ""
    ) {
        self.id = id
        self.attendees = attendees
        self.duration = duration
        self.meetings = meetings
        self.theme = theme
        self.title = title
    }

    /// The whole seconds of `duration`, truncated, as the app's timer counts them.
    public var durationSeconds: Int { Int(duration.components.seconds) }

    /// Each attendee's share of the meeting in whole seconds (`duration / attendees`, truncated); 0 with nobody.
    public var secondsPerAttendee: Int {
        attendees.isEmpty ? 0 : durationSeconds / attendees.count
    }

    /// The meeting with `id`, if this sync-up holds it.
    public func meeting(_ id: Meeting.ID) -> Meeting? {
        meetings.first { $0.id == id }
    }
}
