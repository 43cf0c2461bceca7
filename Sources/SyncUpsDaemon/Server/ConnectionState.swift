import SyncUpsJSON
import SyncUpsPOSIX

/// Where one connection is in its life, and its deadlines, as one value. Each fact about it (the output
/// passed the pause threshold, the socket hung up, a reply made off the loop came back) goes through a table
/// that says for every phase what the fact does: a legal fact moves the phase and returns the action the
/// server performs, a harmless repeat is a named no-op, and an impossible one is a programmer error
/// (`Server.action` reports it, and stops a debug build). Each kind of fact returns only the actions its
/// caller can perform, so the compiler checks that every one is: `apply(_:)` an `Action` (`Server.perform`),
/// `replyMade()` a `ReplyAction` (`Server.answer`, which has the reply), `drop()` a `DropAction`
/// (`Server.drop`, which has the error line). Sends (`afterSend`) and time (`expire(at:)`) are decided
/// beside the table, not in it, because they turn on amounts no phase holds and the connection's buffers
/// own (bytes unsent, lines pending, subscribed or not, handed in so a test needs no socket) or on instants
/// against deadlines, and most of their answers move no phase. The state keeps since when its
/// output has waited unread and since when its input has held part of a line, so a test drives the deadlines
/// as values without a socket or a clock. In the manner of SwiftNIO's
/// `NIOTypedHTTPServerUpgraderStateMachine` (methods return actions) and `IdleStateHandler` (a timer that
/// fires early finds the deadline moved and re-arms); MPD keeps the same facts in `src/client/`.
///
/// ```
/// holds: from open(.none, input) and back to it, the input unchanged
///     outputPassedPauseThreshold ─► .pausedForOutput ─► outputReadDown
///     turnBudgetSpent            ─► .yielding        ─► loopPolled
///     replyDeferred(id, job)     ─► .awaitingReply   ─► replyMade() (queue the reply)
///
/// open(.none, .open) ── inputEnded ──► open(_, .ended) ── flushed, all answered, no subscription ───┐
///      │ drop() (line too long; request_timeout from expire)                                         │
///      ▼                                                                                             ▼
///   draining ─────────────────────────── flushed ─────────────────────────────────────────────► closed
///      │ outputOverLimit (from open too)                                                             ▲
///      └────────────────────────────► cutOff ── closeOnItsTurn (the end of the loop's turn) ─────────┘
/// every phase ── closedByServer (`Server.close`: all answered, a read or send error, a stall, shutDown) ──► closed
/// peerGone (hang-up, reset, send to a closed socket): open ──► open(_, .gone); draining, cutOff ──► closed
/// leaving .awaitingReply but by replyMade() cancels its job (`ReplyJob`); peerGone cancels it too, and the
/// hold stays until replyMade()
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
        /// The reply to the request with this id is being made off the loop (`ReplyBody.later` by `job`, or
        /// `.awaited`, whose job nothing reads):
        /// nothing more of its input is handled until that reply is queued, so replies keep their order.
        case awaitingReply(id: JSONValue, job: ReplyJob)
    }

    /// Whether the client may still send.
    enum Input: Equatable {
        case open
        /// The client shut its sending side (its input ended): the connection ends once every line it sent is
        /// answered, unless it subscribes (`echo subscribe | socat …` keeps following events).
        case ended
        /// The client is gone (it closed its socket, or a send found it closed): every line it sent before is
        /// still carried out, in order, and its replies are discarded; the connection ends once they are. A
        /// script that writes its requests and closes without reading loses none of them.
        case gone
    }

    enum Phase: Equatable {
        case open(Hold, Input)
        /// Must be dropped once its output is sent (after `line_too_long`, `request_timeout`); reads nothing.
        case draining
        /// Went over its output limit: closed on its own turn, at the end of the loop's turn
        /// (`Server.closeAtEndOfTurn`), never inside another client's request (a subscriber overflowed by an event that request published), as MPD defers
        /// closing a client to its own turn. Reads, queues and sends nothing meanwhile.
        case cutOff
        case closed
    }

    /// How long a client may leave its output unread, and a request line incomplete (`Limits`).
    struct Timeouts: Equatable {
        var stall: Duration
        var partialLine: Duration

        init(stall: Duration = .seconds(10), partialLine: Duration = .seconds(10)) {
            self.stall = stall
            self.partialLine = partialLine
        }
    }

    private(set) var phase: Phase = .open(.none, .open)
    let timeouts: Timeouts
    /// Since when output has waited for the client with none of it taken by the socket; nil while none
    /// waits (as of the last flush).
    private(set) var outputWaitingSince: MonotonicInstant?
    /// Since when the input has held part of a line and nothing else, while the connection reads.
    private(set) var partialLineSince: MonotonicInstant?
    /// Whether the server has read the socket since the partial line's deadline passed (`expire`).
    private var hasReadAfterPartialLineDeadline = false
    /// Whether the server has tried to send since the stall's deadline passed (`expire`).
    private var hasSentAfterStallDeadline = false

    init(timeouts: Timeouts = Timeouts()) {
        self.timeouts = timeouts
    }

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

    // MARK: - Facts, and the tables of what each does in each phase

    /// What happens to a connection in its life, whose action `Server.perform` carries out whatever the fact.
    enum Fact: Equatable {
        /// Its unsent output reached `readPauseThreshold`.
        case outputPassedPauseThreshold
        /// The client read its output down to half the threshold.
        case outputReadDown
        /// Its backlog ran out of the turn's budget with lines left.
        case turnBudgetSpent
        /// The loop polled once since it yielded.
        case loopPolled
        /// A request's reply is being made off the loop by `job` (already queued on the reply thread).
        case replyDeferred(id: JSONValue, job: ReplyJob)
        /// The client shut its sending side (read returned 0).
        case inputEnded
        /// Its unread output would pass the output limit.
        case outputOverLimit
        /// The client is gone: the socket hung up, a read found it reset, or a send found it closed.
        case peerGone
        /// The server closes it (`Server.close`): every line answered and flushed (`Server+Write`), a read or
        /// send error, a stall (`Server+Timeouts`), a cut-off connection's turn, the daemon's shutdown.
        case closedByServer
    }

    /// What the server does after a `Fact`: every case is one `Server.perform` carries out.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Update the socket's interest (`EPOLLIN` follows `isReading`).
        case updateInterest
        /// Update the interest, and handle the lines already received at the end of the loop's turn (they are in
        /// our buffer, not the kernel's: the socket may never become readable again).
        case resumeInput
        /// Handle the input now (a yielded backlog's turn came).
        case handleInput
        /// Close it on its own turn, at the end of the loop's turn. `cancel` is a reply being made off the loop
        /// that nobody will read (`ReplyJob.cancel`).
        case closeOnItsTurn(cancel: ReplyJob?)
        /// Give back its descriptor, watch, timer and subscriptions.
        case release(cancel: ReplyJob?)
        /// The client is gone: read what it sent before (all in the socket now), stop watching the socket,
        /// drop its output and subscriptions, and carry out its lines (at the end of the loop's turn, or when its
        /// hold ends). `cancel`: a reply being made that nobody will read.
        case finishInput(cancel: ReplyJob?)
    }

    /// What the server does when the reply made off the loop comes back (`replyMade`); only `Server.answer`,
    /// which holds the reply, gets one.
    enum ReplyAction: Equatable {
        /// Queue the reply, answering `id`, flush, and handle the lines sent meanwhile.
        case queueReply(id: JSONValue)
        /// Nobody waits for the reply: drop it.
        case discardReply
    }

    /// What the server does when it drops the connection (`drop`); only `Server.drop`, which holds the error
    /// line, gets one.
    enum DropAction: Equatable {
        /// Queue the one error line and flush; the connection closes once it is sent. `cancel` is a reply being
        /// made off the loop that nobody will read.
        case sendErrorThenClose(cancel: ReplyJob?)
    }

    /// What a fact does in a phase, with the action of its kind (`Action`, `ReplyAction`, `DropAction`).
    enum Transition<Action: Equatable>: Equatable {
        /// A legal fact: the phase moves and the server performs the action.
        case move(to: Phase, Action)
        /// A harmless repeat or a fact that came too late (a reply for a connection cut off meanwhile): the
        /// phase stays, and the server performs the action.
        case ignore(Action)
        /// Cannot happen: a bug in the server.
        case impossible
    }

    /// The table: every (phase, fact) pair, decided. No `default`: a new phase or fact does not compile until
    /// each pair is decided here, and `ConnectionStateTests.theTableDecidesEveryPhaseAgainstEveryFact` fails
    /// until it is decided there too.
    static func transition(from phase: Phase, on fact: Fact) -> Transition<Action> {
        switch (phase, fact) {
        // A gone client's output is never queued (`Server.enqueue` drops it): it never fills up.
        case (.open(.none, .gone), .outputPassedPauseThreshold):
            return .impossible
        // Holds start only from a connection that handles its input: the server's input loop runs only then.
        case (.open(.none, let input), .outputPassedPauseThreshold):
            return .move(to: .open(.pausedForOutput, input), .updateInterest)
        case (.open(.none, let input), .turnBudgetSpent):
            return .move(to: .open(.yielding, input), .updateInterest)
        case (.open(.none, let input), .replyDeferred(let id, let job)):
            return .move(to: .open(.awaitingReply(id: id, job: job), input), .updateInterest)
        case (_, .outputPassedPauseThreshold), (_, .turnBudgetSpent), (_, .replyDeferred):
            return .impossible

        // Each hold ends by its own fact (a reply's by `replyMade`).
        case (.open(.pausedForOutput, let input), .outputReadDown):
            return .move(to: .open(.none, input), .resumeInput)
        case (_, .outputReadDown):
            // `afterSend` asks for it only while paused.
            return .impossible
        case (.open(.yielding, let input), .loopPolled):
            return .move(to: .open(.none, input), .handleInput)
        case (.cutOff, .loopPolled), (.closed, .loopPolled):
            // Cut off or closed (a send failed, a stall) while it waited for its turn.
            return .ignore(.none)
        case (_, .loopPolled):
            return .impossible

        // A client gone: what it sent is still carried out, unread replies dropped; a hold goes on to its end,
        // but the output it waited for is dropped with the rest, so a paused reader goes on at once. The
        // socket's hang-up is this fact too: a connection cut off or draining has nothing left to carry out.
        case (.open(.pausedForOutput, .open), .peerGone), (.open(.pausedForOutput, .ended), .peerGone):
            return .move(to: .open(.none, .gone), .finishInput(cancel: nil))
        case (.open(let hold, .open), .peerGone), (.open(let hold, .ended), .peerGone):
            return .move(to: .open(hold, .gone), .finishInput(cancel: hold.job))
        case (.open(_, .gone), .peerGone), (.closed, .peerGone):
            return .ignore(.none)
        case (.draining, .peerGone), (.cutOff, .peerGone):
            // Its lines were dropped already: nothing left to carry out.
            return .move(to: .closed, .release(cancel: nil))

        // The end of input is read only while reading.
        case (.open(.none, .open), .inputEnded):
            return .move(to: .open(.none, .ended), .none)
        case (_, .inputEnded):
            return .impossible

        case (.open(let hold, _), .outputOverLimit):
            return .move(to: .cutOff, .closeOnItsTurn(cancel: hold.job))
        case (.draining, .outputOverLimit):
            return .move(to: .cutOff, .closeOnItsTurn(cancel: nil))
        case (.cutOff, .outputOverLimit):
            // Queues nothing more, so cannot go over again; a repeat is harmless all the same.
            return .ignore(.none)
        case (.closed, .outputOverLimit):
            // Nothing is queued to a closed connection: it left `connections` and its subscriptions.
            return .impossible

        case (.open(let hold, _), .closedByServer):
            return .move(to: .closed, .release(cancel: hold.job))
        case (.draining, .closedByServer), (.cutOff, .closedByServer):
            return .move(to: .closed, .release(cancel: nil))
        case (.closed, .closedByServer):
            // Closing twice (a send failed inside a flush that was closing it anyway).
            return .ignore(.none)
        }
    }

    /// The reply made off the loop came back: the table's column for it, apart because only its caller can
    /// queue the reply.
    static func replyMade(in phase: Phase) -> Transition<ReplyAction> {
        switch phase {
        case .open(.awaitingReply(let id, _), let input):
            return .move(to: .open(.none, input), .queueReply(id: id))
        case .draining, .cutOff, .closed:
            // Dropped, cut off (an event overflowed it) or closed while the reply was made.
            return .ignore(.discardReply)
        case .open:
            return .impossible
        }
    }

    /// The server drops it: one error line is to be sent and the connection closed once it is; what it sent is
    /// dropped. The table's column for it, apart because only its caller can queue the error line.
    static func drop(from phase: Phase) -> Transition<DropAction> {
        switch phase {
        // From any open phase: a line too long is found after the input loop stopped for a hold.
        case .open(let hold, _):
            return .move(to: .draining, .sendErrorThenClose(cancel: hold.job))
        case .draining, .cutOff, .closed:
            // Reads nothing, so has no line to refuse and no partial line to time out.
            return .impossible
        }
    }

    /// Applies `fact`; returns the transition, so that the caller reports an impossible one (`Server.action`).
    mutating func apply(_ fact: Fact) -> Transition<Action> {
        take(Self.transition(from: phase, on: fact))
    }

    /// The reply made off the loop came back.
    mutating func replyMade() -> Transition<ReplyAction> {
        take(Self.replyMade(in: phase))
    }

    /// The server drops it (`line_too_long`, `request_timeout`).
    mutating func drop() -> Transition<DropAction> {
        take(Self.drop(from: phase))
    }

    private mutating func take<A>(_ transition: Transition<A>) -> Transition<A> {
        if case .move(let next, _) = transition {
            phase = next
            // A partial line is the client's wait only while the connection reads.
            if !isReading { partialLineSince = nil }
        }
        return transition
    }

    // MARK: - Sending

    /// The client is gone: its output is dropped, not sent.
    var isPeerGone: Bool {
        if case .open(_, .gone) = phase { true } else { false }
    }

    /// What to do once a send left `unsent` bytes.
    enum AfterSend: Equatable {
        /// Output remains, or nothing is sent at all (cut off, closed): wait for `EPOLLOUT` or the close.
        case wait
        /// All sent; the output buffer's capacity may go back (`OutputBuffer.releaseCapacity(into:)`).
        case idle(releasesBuffer: Bool)
        /// All sent and nothing more will be read or answered.
        case close(releasesBuffer: Bool)
        /// The client caught up with a paused reading: resume it (`Fact.outputReadDown`).
        case resumeReading
    }

    /// The server sent what the socket took. `resumeBelow` is half the read-pause threshold; a batch that
    /// sends as it goes or waits for its client to read keeps its buffer until it is done (given up at a
    /// pause, the rest of the batch grew a new one, which the idle connection then kept).
    func afterSend(unsent: Int, resumeBelow: Int, hasPendingInput: Bool, isSubscriber: Bool) -> AfterSend {
        switch phase {
        // A connection cut off is closed on its own turn (`closeOnItsTurn`), not by a send.
        case .closed, .cutOff: return .wait
        case .draining: return unsent == 0 ? .close(releasesBuffer: true) : .wait
        case .open(let hold, .gone):
            // Its output was dropped; done once every line it sent is carried out.
            let isDone = hold == .none && !hasPendingInput
            return isDone ? .close(releasesBuffer: true) : .idle(releasesBuffer: hold == .none)
        case .open(let hold, let input):
            let isDone = !isAwaitingReply && input == .ended && !hasPendingInput && !isSubscriber
            if unsent == 0 && isDone { return .close(releasesBuffer: hold == .none) }
            if hold == .pausedForOutput && unsent <= resumeBelow { return .resumeReading }
            return unsent == 0 ? .idle(releasesBuffer: hold == .none) : .wait
        }
    }

    // MARK: - Time

    /// The socket took some of the output.
    mutating func outputProgressed(at now: MonotonicInstant) {
        outputWaitingSince = now
        hasSentAfterStallDeadline = false
    }

    /// After a flush: whether output still waits for the client. Its wait starts when it goes from none to
    /// some, and restarts at each progress.
    mutating func outputWaits(_ waits: Bool, at now: @autoclosure () -> MonotonicInstant) {
        // The clock is read only when a wait starts: this runs at every flush.
        if !waits || outputWaitingSince == nil { hasSentAfterStallDeadline = false }
        outputWaitingSince = waits ? (outputWaitingSince ?? now()) : nil
    }

    /// After the input was handled: whether what is left of it is part of a line. Watched only while the
    /// connection reads (complete lines waiting behind a hold are the daemon's wait, not the client's).
    mutating func inputWaits(partialLine: Bool, at now: @autoclosure () -> MonotonicInstant) {
        guard isReading && partialLine else {
            partialLineSince = nil
            return
        }
        if partialLineSince == nil {
            partialLineSince = now()
            hasReadAfterPartialLineDeadline = false
        }
    }

    /// The earliest instant at which `expire` may have something to do; nil if none. A deadline that moved
    /// later (the output progressed) is found by `expire` at the earlier one, which then answers `.none`.
    var nextDeadline: MonotonicInstant? {
        guard !isClosed else { return nil }
        let stall = outputWaitingSince.map { $0 + timeouts.stall }
        let partial = partialLineSince.map { $0 + timeouts.partialLine }
        switch (stall, partial) {
        case (let stall?, let partial?): return min(stall, partial)
        case (let stall?, nil): return stall
        case (nil, let partial?): return partial
        case (nil, nil): return nil
        }
    }

    /// What time calls for.
    enum Expiry: Equatable {
        /// Nothing is due.
        case none
        /// The partial line's time is up: read what the socket holds first, then ask again. A loop that was
        /// stopped (SIGSTOP, a long stall) fires its timers before it polls, and the client may have completed
        /// the line meanwhile.
        case readFirst
        /// The line stayed incomplete: send `request_timeout` and close once it is sent (`drop(from:)`).
        case timeOutPartialLine
        /// The stall's time is up: try to send what waits first, then ask again. A loop that was stopped fires
        /// its timers before it polls, and the client may have read everything meanwhile.
        case sendFirst
        /// Its output made no progress for `timeouts.stall`, even at a send after the deadline: close it.
        case closeStalled
    }

    /// What to do at `now`.
    mutating func expire(at now: MonotonicInstant) -> Expiry {
        guard !isClosed else { return .none }
        if let since = outputWaitingSince, now - since >= timeouts.stall {
            guard hasSentAfterStallDeadline else {
                hasSentAfterStallDeadline = true
                return .sendFirst
            }
            return .closeStalled
        }
        guard let since = partialLineSince, now - since >= timeouts.partialLine else { return .none }
        guard hasReadAfterPartialLineDeadline else {
            hasReadAfterPartialLineDeadline = true
            return .readFirst
        }
        return .timeOutPartialLine
    }
}

extension ConnectionState.Hold {
    /// The reply job a hold waits for, if any.
    var job: ReplyJob? {
        if case .awaitingReply(_, let job) = self { job } else { nil }
    }
}
