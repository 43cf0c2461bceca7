import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// Processing: the one path from a request line to its reply, for every client (sockets, the in-process
/// daemon, the fuzzer): the replay cache, the decoder, the handler, the reply's size limit. A reply made off
/// the loop is `Server+LaterReplies`.
extension Server {
    /// Answers one line; returns whether it was a replay (no work done).
    @discardableResult
    func handleLine(_ line: UnsafeRawBufferPointer, from connection: Connection) -> Bool {
        if let reply = replay.reply(to: line, generation: replayGeneration) {
            enqueue(reply, to: connection)
            return true
        }
        // The handler runs first: it may queue events to this very connection (the change it made, when the
        // client is subscribed) before its reply.
        let request: Request?
        let id: JSONValue
        let outcome: Result<ReplyBody, ProtocolError>
        switch Request.decode(line) {
        case .failure(let failure): (request, id, outcome) = (nil, failure.id, .failure(failure.error))
        case .success(let decoded): (request, id, outcome) = (decoded, decoded.id, handler(decoded, connection))
        }
        guard connection.state.acceptsOutput else { return false }
        switch outcome {
        case .success(.later(let work)):
            awaitReply(id: id, work: work, on: connection)
            return false
        case .success(.awaited(let pending)):
            awaitReply(id: id, pending: pending, on: connection)
            return false
        default: break
        }
        replyScratch.removeAll(keepingCapacity: true)
        appendReply(id: id, outcome: outcome, to: &replyScratch)
        enqueue(replyScratch, to: connection)
        if let request, case .success = outcome {
            replay.remember(line: line, request: request, generation: replayGeneration(request), reply: replyScratch)
        }
        if replyScratch.capacity > OutputBuffer.keptCapacity {
            replyScratch = []  // a big page's reply does not stay
        }
        return false
    }

    /// Appends the reply line to `bytes`. No reply is over `maxReplyBytes`: a result that would be is
    /// refused with `internal_error` (ask for a smaller page), and an error whose message would be (one that
    /// quotes a huge part of the line, an unknown field's name) keeps its code with a shorter message. The
    /// id is at most `Request.maxIDBytes`, so what replaces it always fits.
    func appendReply(id: JSONValue, outcome: Result<ReplyBody, ProtocolError>, to bytes: inout [UInt8]) {
        let start = bytes.count
        let replacement: ProtocolError
        switch outcome {
        case .success(.value(let result)): Wire.appendSuccess(id: id, result: result, to: &bytes)
        case .success(.encoded(let result)): Wire.appendSuccess(id: id, encodedResult: result, to: &bytes)
        case .success(.later), .success(.awaited):
            let error = ProtocolError(.internalError, "the reply was to be made later once more")
            Wire.appendFailure(id: id, error: error, to: &bytes)
        case .failure(let error):
            Wire.appendFailure(id: id, error: error, to: &bytes)
        }
        let size = bytes.count - start
        guard size > limits.maxReplyBytes else { return }
        switch outcome {
        case .failure(let error):
            replacement = ProtocolError(
                error.code,
                "the error's message would make a \(size)-byte reply, over the \(limits.maxReplyBytes)-byte limit: "
                    + String(decoding: error.message.utf8.prefix(200), as: UTF8.self) + "…")
        default:
            replacement = ProtocolError(
                .internalError,
                "the reply would be \(size) bytes, over the \(limits.maxReplyBytes)-byte limit; ask for a smaller page")
        }
        bytes.removeSubrange(start...)
        Wire.appendFailure(id: id, error: replacement, to: &bytes)
    }
}
