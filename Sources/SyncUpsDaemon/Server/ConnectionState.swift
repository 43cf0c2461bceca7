import SyncUpsJSON

/// Where one connection is in its life, as one value: what used to be six booleans (`isReadingPaused`,
/// `isYielding`, `closesWhenFlushed`, `isInputClosed`, `isClosed`, and an awaited reply's id) whose
/// conjunctions the server rebuilt in four places. Each method takes a fact (the socket hung up, the output
/// was sent, a reply made off the loop came back) and moves the phase. The server still decides when a fact
/// happens: it pauses reading and yields a turn by its own budgets (`Server+Read`'s `processInput`). Where the
/// phase alone settles what follows, the method returns it (`hungUp`, `afterSend`, `replyMade`); `Change` says
/// whether the socket's interest must be updated, and `drop`'s and `awaitReply`'s are ignored because the
/// server flushes or re-reads the interest right after; `endOfInput` and `replyNotAwaited` return nothing,
/// the server going on to handle the input either way. In the manner of SwiftNIO's
/// `NIOTypedHTTPServerUpgraderStateMachine`; MPD keeps the same facts in `src/client/` by concern.
///
/// ```
///            ┌──────── pauseForOutput / yield / awaitReply ───────┐
///            ▼                                                     │
///  open(.none, input: .open) ── endOfInput ──► open(.none, input: .closed)
///            │ drop                                   │ (done: flushed, nothing left to answer)
///            ▼                                        ▼
///         draining ──────────── flushed ──────────► closed
///            │                                        ▲
///            └─ exceededOutputLimit ─► cutOff ── its own turn (flush) ─┘   (from open too)
/// ```
struct ConnectionState: Equatable {
    /// Why an open connection handles no input for now.
    enum Hold: Equatable {
        /// It handles its lines as they come.
        case none
        /// It has `readPauseThreshold` of output unsent: reading waits until the client has read half of it.
        case pausedForOutput
        /// Its backlog gave way to other clients for a turn (`Server.turnBudgetNanoseconds`).
        case yielding
        /// The reply to the request with this id is being made off the loop (`ReplyBody.later`): nothing more
        /// of its input is handled until that reply is queued, so replies keep their order.
        case awaitingReply(id: JSONValue)
    }

    /// Whether the client may still send.
    enum Input: Equatable {
        case open
        /// The client shut its sending side: the connection ends once every line it sent is answered, unless
        /// it subscribes (`echo subscribe | socat …` keeps following events).
        case closed
    }

    enum Phase: Equatable {
        case open(Hold, Input)
        /// Must be dropped once its output is sent (after `line_too_long`, `request_timeout`); reads nothing.
        case draining
        /// Went over its output limit: closed on its own turn (`Server.flush`), never inside another
        /// client's request (a subscriber overflowed by an event that request published), as MPD defers
        /// closing a client to its own turn. Reads, queues and sends nothing meanwhile.
        case cutOff
        case closed
    }

    private(set) var phase: Phase = .open(.none, .open)

    // MARK: - Questions the server asks

    /// It reads from its socket, wants `EPOLLIN`, and has its partial-line time limit watched.
    var isReading: Bool { phase == .open(.none, .open) }
    /// Its complete lines are handled now (after the end of its input too).
    var handlesInput: Bool {
        if case .open(.none, _) = phase { true } else { false }
    }
    var isClosed: Bool { phase == .closed }
    var isAwaitingReply: Bool {
        if case .open(.awaitingReply, _) = phase { true } else { false }
    }
    /// Output may still be queued to it (not cut off, not closed).
    var acceptsOutput: Bool {
        switch phase {
        case .open, .draining: true
        case .cutOff, .closed: false
        }
    }

    // MARK: - Facts and the actions they call for

    enum Change: Equatable {
        /// The state changed: the server updates the socket's interest.
        case updateInterest
        /// Nothing changed.
        case none
    }

    /// The output reached `readPauseThreshold` unsent.
    mutating func pauseForOutput() -> Change {
        guard case .open(.none, let input) = phase else { return .none }
        phase = .open(.pausedForOutput, input)
        return .updateInterest
    }

    /// The client read its output down to half the threshold (or a reply came back): reading resumes, and
    /// the lines already received are handled on the loop's next turn.
    mutating func resumeAfterPause() -> Change {
        guard case .open(.pausedForOutput, let input) = phase else { return .none }
        phase = .open(.none, input)
        return .updateInterest
    }

    /// Its backlog ran out of the turn's budget with lines left.
    mutating func yield() -> Change {
        guard case .open(.none, let input) = phase else { return .none }
        phase = .open(.yielding, input)
        return .updateInterest
    }

    /// The loop polled once: a yielding connection goes on. Returns whether it handles its input now.
    mutating func resumeAfterYield() -> Bool {
        guard case .open(.yielding, let input) = phase else { return false }
        phase = .open(.none, input)
        return true
    }

    /// A request's reply is to be made off the loop.
    mutating func awaitReply(id: JSONValue) -> Change {
        guard case .open(.none, let input) = phase else { return .none }
        phase = .open(.awaitingReply(id: id), input)
        return .updateInterest
    }

    /// What to do with a reply made off the loop.
    enum ReplyAction: Equatable {
        /// Queue it, answering `id`, flush, and handle the lines sent meanwhile on the next turn.
        case queue(id: JSONValue)
        /// Nobody waits for it (the connection closed meanwhile): drop it.
        case discard
    }

    /// The reply made off the loop came back.
    mutating func replyMade() -> ReplyAction {
        guard case .open(.awaitingReply(let id), let input) = phase else { return .discard }
        phase = .open(.none, input)
        return .queue(id: id)
    }

    /// The thread that makes replies off the loop would not take the work: the request is answered at once.
    mutating func replyNotAwaited() {
        guard case .open(.awaitingReply, let input) = phase else { return }
        phase = .open(.none, input)
    }

    /// The client shut its sending side (read returned 0). The server answers what was sent, the last line
    /// even without its newline.
    mutating func endOfInput() {
        guard case .open(let hold, .open) = phase else { return }
        phase = .open(hold, .closed)
    }

    /// One error line is queued and the connection closes once it is sent; what it sent is dropped.
    mutating func drop() -> Change {
        guard case .open = phase else { return .none }
        phase = .draining
        return .updateInterest
    }

    /// What to do about a connection whose unread output would pass the output limit.
    enum OverLimitAction: Equatable {
        /// Close it on its own turn: flush it on the loop's next turn (`Server.flushPending`), which closes it.
        case closeOnItsTurn
        /// It is already cut off or closed.
        case none
    }

    /// Its unread output would pass the output limit.
    mutating func exceededOutputLimit() -> OverLimitAction {
        switch phase {
        case .open, .draining:
            phase = .cutOff
            return .closeOnItsTurn
        case .cutOff, .closed:
            return .none
        }
    }

    /// What the server does when the socket reports a hang-up, once it has sent what it could.
    enum HangUpAction: Equatable {
        /// Read: the end of input, or what arrived before it.
        case read
        /// Nobody is left to answer: a reply being made has no reader (and the hang-up would be reported on
        /// every turn until it came), or both directions are shut.
        case close
    }

    func hungUp() -> HangUpAction {
        switch phase {
        case .open(.awaitingReply, _), .open(_, .closed), .cutOff: .close
        case .open, .draining, .closed: .read
        }
    }

    /// What to do once a send left `unsent` bytes.
    enum AfterSend: Equatable {
        /// Output remains: wait for `EPOLLOUT`.
        case wait
        /// All sent; the output buffer's capacity may go back (`OutputBuffer.releaseCapacity(into:)`).
        case idle(releasesBuffer: Bool)
        /// All sent and nothing more will be read or answered.
        case close(releasesBuffer: Bool)
        /// The client caught up with a paused reading: resume it.
        case resumeReading
        /// It went over its output limit: close it now, its output unsent.
        case cutOff
    }

    /// The server sent what the socket took. `resumeBelow` is half the read-pause threshold; a batch that
    /// sends as it goes or waits for its client to read keeps its buffer until it is done (given up at a
    /// pause, the rest of the batch grew a new one, which the idle connection then kept).
    func afterSend(unsent: Int, resumeBelow: Int, hasPendingInput: Bool, isSubscriber: Bool) -> AfterSend {
        switch phase {
        case .closed: return .wait
        case .cutOff: return .cutOff
        case .draining: return unsent == 0 ? .close(releasesBuffer: true) : .wait
        case .open(let hold, let input):
            let isDone = !isAwaitingReply && input == .closed && !hasPendingInput && !isSubscriber
            if unsent == 0 && isDone { return .close(releasesBuffer: hold == .none) }
            if hold == .pausedForOutput && unsent <= resumeBelow { return .resumeReading }
            return unsent == 0 ? .idle(releasesBuffer: hold == .none) : .wait
        }
    }

    /// The connection is closed. Returns false if it already was.
    mutating func close() -> Bool {
        guard phase != .closed else { return false }
        phase = .closed
        return true
    }
}
