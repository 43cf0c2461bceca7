/// The bounds a sync-up's fields must respect when created or edited through syncupsd.
///
/// The app has no such limits, but a daemon serving status bars and scripts needs them: a one-megabyte title
/// or ten thousand attendees would be a mistake, not a meeting.
public enum SyncUpLimits {
    /// Meeting length: one second to twenty-four hours.
    public static let durationSeconds = 1...86_400
    /// In characters, and in UTF-8 bytes: a single character can be megabytes of combining marks.
    public static let maxTitleLength = 256
    public static let maxTitleBytes = 1024
    public static let maxNameLength = 128
    public static let maxNameBytes = 512
    public static let maxAttendees = 1_000
    /// All attendees' names together, in UTF-8 bytes: the largest sync-up still fits one reply.
    public static let maxNamesBytes = 64 * 1024
}
