import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol
import Synchronization

/// Replies made off the loop: a request whose reply needs blocking work (`ReplyBody.later`, on the
/// `syncups-reply` thread) or waits for another worker (`ReplyBody.awaited`), the mailbox that brings each
/// back to the loop, and the `ReplyJob` that stops one nobody will read.
extension Server {
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
    func awaitReply(
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
            apply(.replyDeferred(id: id, job: job), to: connection)
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
    func awaitReply(id: JSONValue, pending: PendingReply, on connection: Connection) {
        guard let mailbox = replyMailbox() else {
            let error = ProtocolError(.internalError, "cannot wait for the reply: out of file descriptors")
            return queueReply(id: id, outcome: .failure(error), to: connection)
        }
        let number = connection.number
        // Deferred first: an outcome already known is posted at once, and answered on a later turn.
        apply(.replyDeferred(id: id, job: ReplyJob()), to: connection)
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
        switch action(connection.state.replyMade(), on: connection, after: "a reply made off the loop") {
        case .queueReply(let id)?:
            queueReply(id: id, outcome: later.outcome, to: connection)
            flush(connection)
            if !connection.isClosed { handleInputAtEndOfTurn(connection) }
        case .discardReply?, nil:
            break  // nobody waits for it
        }
    }

    private func queueReply(id: JSONValue, outcome: Result<ReplyBody, ProtocolError>, to connection: Connection) {
        var reply: [UInt8] = []
        appendReply(id: id, outcome: outcome, to: &reply)
        enqueue(reply, to: connection)
    }
}

/// A reply being made off the loop (`ReplyBody.later`), cancelled when the connection that asked closed, was
/// cut off or dropped: a read skips itself or stops at its next chunk (five clients that asked for a 22 MB
/// meeting and hung up held another client's small read up for 33 s, each read done for nobody).
final class ReplyJob: Sendable, Equatable {
    private let cancelled = Mutex(false)

    var isCancelled: Bool { cancelled.withLock { $0 } }

    /// Nobody will read the reply: a read not started is not made, one running stops at its next chunk.
    func cancel() {
        cancelled.withLock { $0 = true }
    }

    static func == (lhs: ReplyJob, rhs: ReplyJob) -> Bool { lhs === rhs }
}
