import SyncUpsJSON

/// The limits the daemon enforces on every connection, advertised in the greeting so clients can plan.
public struct Limits: Sendable, Equatable {
    /// The longest request line, newline excluded; longer gets `line_too_long` and the connection closes.
    public var maxLineBytes = 1 << 20
    /// Unsent output a client may have pending before it is cut off for not reading.
    public var maxOutputBytes = 1 << 20
    /// How long a client may go without reading any of its pending output before it is cut off.
    public var stallTimeoutSeconds = 10
    /// How long a request line may stay incomplete (bytes sent, no newline) before the connection is closed
    /// with `request_timeout`: half a line must not hold a connection slot for ever.
    public var partialLineTimeoutSeconds = 10
    /// Simultaneous connections; one more gets `too_many_connections` and is closed.
    public var maxConnections = 256
    /// Connections subscribed to events at once.
    public var maxSubscribers = 1024
    /// The largest reply; lists that would be larger are paged (`offset`, `limit`, `next`).
    public var maxReplyBytes = 512 * 1024
    /// The most items one page of a list may hold.
    public var maxPageSize = 500
    /// The most of a transcript a session object, a meeting object or an event carries; the rest is paged
    /// with `transcript.get` (`TranscriptWindow`).
    public var maxTranscriptBytes = 16 * 1024

    public init() {}

    public var json: JSONValue {
        [
            "maxLineBytes": .int(maxLineBytes),
            "maxOutputBytes": .int(maxOutputBytes),
            "stallTimeoutSeconds": .int(stallTimeoutSeconds),
            "partialLineTimeoutSeconds": .int(partialLineTimeoutSeconds),
            "maxConnections": .int(maxConnections),
            "maxSubscribers": .int(maxSubscribers),
            "maxReplyBytes": .int(maxReplyBytes),
            "maxPageSize": .int(maxPageSize),
            "maxTranscriptBytes": .int(maxTranscriptBytes),
        ]
    }
}

/// What a subscription listens to.
public enum Topic: String, CaseIterable, Sendable, Hashable {
    /// Any change to a sync-up or its meetings, including reloads after another program edits the file.
    case syncups
    /// The recording session: start, every tick, speaker changes, transcript, end.
    case session
    /// The daemon itself: persistence failures and recoveries, shutdown.
    case daemon
}
