import SyncUpsJSON

/// A command's result: a value to encode, or JSON text already encoded, or work that makes one.
public enum ReplyBody: Sendable {
    case value(JSONValue)
    case encoded([UInt8])
    /// What the reply needs takes blocking work (reading a large file): the daemon runs it on a thread of
    /// its own and sends what it returns, and handles the client's next request only after that, so replies
    /// keep their order. The work returns a `value` or an `encoded` result, or an error. `isAbandoned` says
    /// whether nobody waits for the reply any more (its client hung up or was cut off): a read asks it before
    /// it starts and at each chunk or page, and stops (what it returns then is dropped); work that changes
    /// something (removing a deleted meeting's files) runs whole whatever it says.
    case later(@Sendable (_ isAbandoned: () -> Bool) -> Result<ReplyBody, ProtocolError>)
    /// What the reply needs is another worker's to do (the journal writer removing a deleted meeting's files,
    /// the voice writer a forgotten profile, a meeting's start: its microphone opened, its recognizer started): the reply is
    /// made when that worker (or the loop, on the fact it reports) completes `PendingReply`, and no thread
    /// waits meanwhile. The client's next request waits for it, as for `later`; once the client is gone the
    /// work still runs whole and its reply is dropped.
    case awaited(PendingReply)
}
