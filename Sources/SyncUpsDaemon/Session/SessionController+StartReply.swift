import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol

/// `session.start`'s reply when the meeting starts off the loop (its capture device opened on the opener,
/// `syncups-open`): made once `started` is published, or refused once the meeting ended before it started.
extension SessionController {
    /// `session.start`'s result: the session object and what the meeting goes without.
    func startReplyJSON(_ session: ActiveSession) -> JSONValue {
        guard case .object(var reply) = sessionJSON(session) else { return .null }
        reply["warnings"] = .array(session.machine.startWarnings.map(JSONValue.string))
        return .object(reply)
    }

    /// The meeting has started (`started` is published): the start's reply, if it waits, is made.
    func answerStart(_ session: ActiveSession) {
        guard let reply = session.startReply else { return }
        session.startReply = nil
        reply.complete(.success(.value(startReplyJSON(session))))
    }

    /// The meeting ended before it started: the start's reply, if it waits, says how.
    func refuseStart(_ session: ActiveSession) {
        guard let reply = session.startReply else { return }
        session.startReply = nil
        let title = session.machine.syncUp.title
        let error: ProtocolError
        switch session.machine.ending {
        case .syncUpDeleted?:
            error = ProtocolError(.notFound, "the sync-up \"\(title)\" was deleted while its meeting started")
        default:
            error = ProtocolError(
                .invalidState,
                "the meeting of \"\(title)\" was discarded while it started (session.end discard, or the daemon stopping)"
            )
        }
        reply.complete(.failure(error))
    }
}
