import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// Processing: the one path from a request line to its reply, for every client (sockets, the in-process
/// daemon, the fuzzer): the replay cache, the decoder, the handler, the reply's size limit; and replies
/// made off the loop.
extension Server {
    /// Answers one line; returns whether it was a replay (no work done).
    @discardableResult
    func handleLine(_ line: UnsafeRawBufferPointer, from connection: Connection) -> Bool {
        if let reply = replay.reply(to: line, generation: replayGeneration) {
            connection.output.append(reply)
            cutOffIfOverOutputLimit(connection)
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
        connection.output.append(replyScratch)
        if let request, case .success = outcome {
            replay.remember(line: line, request: request, generation: replayGeneration(request), reply: replyScratch)
        }
        if replyScratch.capacity > OutputBuffer.keptCapacity {
            replyScratch = []  // a big page's reply does not stay
        }
        cutOffIfOverOutputLimit(connection)
        return false
    }

    /// Appends the reply line to `bytes`. No reply is over `maxReplyBytes`: a result that would be is
    /// refused with `internal_error` (ask for a smaller page), and an error whose message would be (one that
    /// quotes a huge part of the line, an unknown field's name) keeps its code with a shorter message. The
    /// id is at most `Request.maxIDBytes`, so what replaces it always fits.
    private func appendReply(id: JSONValue, outcome: Result<ReplyBody, ProtocolError>, to bytes: inout [UInt8]) {
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

    // MARK: - Replies made off the loop

    /// A reply made off the loop (on the `syncups-reply` thread, or by whoever completed a `PendingReply`), for
    /// the connection numbered `connection`.
    struct LaterReply: Sendable {
        var connection: Int
        var outcome: Result<ReplyBody, ProtocolError>
    }

    /// Runs `work` on the reply thread; the connection handles nothing more until its reply is queued
    /// (`answer`). Jobs run one at a time, so two clients reading large files hold one in memory, not two;
    /// once the connection closed, was dropped or cut off (`ReplyJob`), a read not started is skipped and one
    /// running stops at its next chunk or page (`ReplyBody.later`'s `isAbandoned`), and the thread goes on to
    /// the next job.
    private func awaitReply(
        id: JSONValue, work: @escaping @Sendable (() -> Bool) -> Result<ReplyBody, ProtocolError>,
        on connection: Connection
    ) {
        let number = connection.number
        let job = ReplyJob()
        let checkpoint = laterReplyCheckpoint
        let queued = replyThread().map { worker, mailbox in
            worker.tryRun {
                let outcome = work {
                    checkpoint?()
                    return job.isCancelled
                }
                mailbox.post(LaterReply(connection: number, outcome: outcome))
            }
        }
        switch queued {
        case true?:
            // The reply comes back through the loop's mailbox, so never before this.
            handle(.replyDeferred(id: id, job: job), on: connection)
        case false?:
            queueReply(
                id: id, outcome: .failure(ProtocolError(.internalError, "too many replies are being made; try again")),
                to: connection)
        case nil:
            queueReply(id: id, outcome: work { false }, to: connection)  // no thread to be had: here, then
        }
    }

    /// Waits for `pending` without a thread: the connection handles nothing more until whoever completes it
    /// (another worker's thread, or the loop) has its outcome posted to the mailbox, answered as a reply made
    /// on the reply thread is. A connection gone meanwhile gets nothing; the work it waited for runs whole.
    private func awaitReply(id: JSONValue, pending: PendingReply, on connection: Connection) {
        guard let mailbox = replyMailbox() else {
            let error = ProtocolError(.internalError, "cannot wait for the reply: out of file descriptors")
            return queueReply(id: id, outcome: .failure(error), to: connection)
        }
        let number = connection.number
        // Deferred first: an outcome already known is posted at once, and answered on a later turn.
        handle(.replyDeferred(id: id, job: ReplyJob()), on: connection)
        pending.deliver { mailbox.post(LaterReply(connection: number, outcome: $0)) }
    }

    /// The way back to the loop for replies made off it, attached with the first of them; nil if that fails.
    private func replyMailbox() -> Mailbox<LaterReply>? {
        if let laterReplyMailbox { return laterReplyMailbox }
        do throws(SystemError) {
            let mailbox = try Mailbox<LaterReply>(capacity: 64)
            laterReplyWatch = try mailbox.attach(to: loop) { [unowned self] in $0.forEach(answer) }
            laterReplyMailbox = mailbox
            return mailbox
        } catch {
            logger.error("cannot make the replies' mailbox: \(error)")
            return nil
        }
    }

    /// The reply thread and the mailbox back, started with the first reply made on it; nil if that fails.
    private func replyThread() -> (SerialWorker, Mailbox<LaterReply>)? {
        guard let mailbox = replyMailbox() else { return nil }
        if let replyWorker { return (replyWorker, mailbox) }
        do throws(SystemError) {
            let worker = try SerialWorker(name: "syncups-reply", capacity: 1024)
            replyWorker = worker
            return (worker, mailbox)
        } catch {
            logger.error("cannot start the syncups-reply thread: \(error); making replies on the event loop")
            return nil
        }
    }

    /// Queues a reply made off the loop and lets its connection go on with the lines it sent meanwhile (at
    /// the end of the loop's turn, as a reader resumes). A connection closed meanwhile gets nothing.
    private func answer(_ later: LaterReply) {
        guard let connection = connections[later.connection] else { return }
        switch apply(.deferredReplyMade, to: connection) {
        case .queueReply(let id):
            queueReply(id: id, outcome: later.outcome, to: connection)
            flush(connection)
            if !connection.isClosed { handleInputAtEndOfTurn(connection) }
        case let other:
            perform(other, on: connection)  // `.discardReply`: nobody waits for it
        }
    }

    private func queueReply(id: JSONValue, outcome: Result<ReplyBody, ProtocolError>, to connection: Connection) {
        var reply: [UInt8] = []
        appendReply(id: id, outcome: outcome, to: &reply)
        connection.output.append(reply)
        cutOffIfOverOutputLimit(connection)
    }
}
