/// Every command's name on the wire, one constant each: the daemon's command table and the CLI use these,
/// so a renamed or mistyped command is a compile error, not an `unknown_command` at run time. protocol.md
/// documents each.
public enum CommandName {
    public static let ping = "ping"
    public static let status = "status"
    public static let themesList = "themes.list"
    public static let syncUpsList = "syncups.list"
    public static let syncUpsGet = "syncups.get"
    public static let syncUpsCreate = "syncups.create"
    public static let syncUpsUpdate = "syncups.update"
    public static let syncUpsDelete = "syncups.delete"
    public static let meetingsGet = "meetings.get"
    public static let meetingsDelete = "meetings.delete"
    public static let transcriptGet = "transcript.get"
    public static let sessionStart = "session.start"
    public static let sessionGet = "session.get"
    public static let sessionNext = "session.next"
    public static let sessionPause = "session.pause"
    public static let sessionResume = "session.resume"
    public static let sessionEnd = "session.end"
    public static let sessionAbsent = "session.absent"
    public static let sessionBack = "session.back"
    public static let scheduleList = "schedule.list"
    public static let scheduleSet = "schedule.set"
    public static let scheduleClear = "schedule.clear"
    public static let devices = "devices"
    public static let voices = "voices"
    public static let voicesForget = "voices.forget"
    public static let subscribe = "subscribe"
    public static let unsubscribe = "unsubscribe"
}

/// Every event's name on the wire, one constant each, for the daemon that publishes it and the clients that
/// wait for it.
public enum EventName {
    /// The greeting, first on every connection.
    public static let hello = "hello"
    public static let syncUpCreated = "syncup.created"
    public static let syncUpUpdated = "syncup.updated"
    public static let syncUpDeleted = "syncup.deleted"
    public static let syncUpsReloaded = "syncups.reloaded"
    public static let daemonWarning = "daemon.warning"
    public static let daemonStopping = "daemon.stopping"
    public static let persistenceFailed = "persistence.failed"
    public static let persistenceRecovered = "persistence.recovered"
    public static let scheduleReminder = "schedule.reminder"

    /// What every session event's name starts with (a client following the session takes them all).
    public static let sessionPrefix = "session."
    public static let sessionStarted = "session.started"
    public static let sessionTick = "session.tick"
    public static let sessionSpeaker = "session.speaker"
    public static let sessionPaused = "session.paused"
    public static let sessionResumed = "session.resumed"
    public static let sessionEnding = "session.ending"
    public static let sessionUpdated = "session.updated"
    public static let sessionTranscript = "session.transcript"
    public static let sessionAttribution = "session.attribution"
    public static let sessionError = "session.error"
    public static let sessionEnded = "session.ended"

    /// Every event a subscriber can be sent (the greeting is not one: it is no topic's), as protocol.md's
    /// events table lists them.
    public static let published = [
        syncUpCreated, syncUpUpdated, syncUpDeleted, syncUpsReloaded, sessionStarted, sessionTick, sessionSpeaker,
        sessionPaused, sessionResumed, sessionEnding, sessionUpdated, sessionTranscript, sessionAttribution,
        sessionError, sessionEnded, persistenceFailed, persistenceRecovered, daemonWarning, scheduleReminder,
        daemonStopping,
    ]
}
