import SyncUpsJSON
import SyncUpsPOSIX
import Testing

@testable import SyncUpsDaemon

/// Every phase of a connection against every fact, its deadlines driven as values through time, and the
/// action each calls for: what the server used to rebuild from six booleans in four places, and to decide
/// from timers and fields beside the state.
@Suite struct ConnectionStateTests {
    typealias Phase = ConnectionState.Phase
    typealias Fact = ConnectionState.Fact

    static let job = ReplyJob()

    /// Every phase a connection can be in, each reached from a new connection by the facts that lead there.
    static let reachable: [(Phase, ConnectionState)] = {
        func state(_ facts: [Fact]) -> ConnectionState {
            var state = ConnectionState()
            for fact in facts {
                guard case .move = state.apply(fact) else { preconditionFailure("\(fact) from \(state.phase)") }
            }
            return state
        }
        let holds: [(ConnectionState.Hold, Fact?)] = [
            (.none, nil),
            (.pausedForOutput, .outputPassedPauseThreshold),
            (.yielding, .turnBudgetSpent),
            (.awaitingReply(id: "r", job: job), .replyDeferred(id: "r", job: job)),
        ]
        var all: [(Phase, ConnectionState)] = []
        for (hold, reach) in holds {
            all.append((.open(hold, .open), state(reach.map { [$0] } ?? [])))
            all.append((.open(hold, .ended), state([.inputEnded] + (reach.map { [$0] } ?? []))))
            // Gone while paused goes on unpaused: its output was dropped.
            if hold != .pausedForOutput {
                all.append((.open(hold, .gone), state([.peerGone] + (reach.map { [$0] } ?? []))))
            }
        }
        var dropped = ConnectionState()
        guard case .move = dropped.drop() else { preconditionFailure("drop from a new connection") }
        all.append((.draining, dropped))
        all.append((.cutOff, state([.outputOverLimit])))
        all.append((.closed, state([.closedByServer])))
        return all
    }()

    /// A column of the table: a `Fact`, or one of the two facts decided apart because only their caller can
    /// perform their action (`replyMade`, `drop`).
    enum Column {
        case fact(Fact)
        case replyMade
        case drop
    }

    /// Every fact, one of each kind.
    static let facts: [Column] = [
        .fact(.outputPassedPauseThreshold), .fact(.outputReadDown), .fact(.turnBudgetSpent), .fact(.loopPolled),
        .fact(.replyDeferred(id: "q", job: job)), .replyMade, .fact(.inputEnded), .drop, .fact(.outputOverLimit),
        .fact(.closedByServer), .fact(.peerGone),
    ]

    /// What a column decides in `phase`, by name.
    static func decide(_ column: Column, in phase: Phase) -> String {
        switch column {
        case .fact(let fact): name(ConnectionState.transition(from: phase, on: fact), name)
        case .replyMade: name(ConnectionState.replyMade(in: phase), name)
        case .drop: name(ConnectionState.drop(from: phase), name)
        }
    }

    /// Applies a column's fact to `state`; returns the transition's name.
    static func apply(_ column: Column, to state: inout ConnectionState) -> String {
        switch column {
        case .fact(let fact): name(state.apply(fact), name)
        case .replyMade: name(state.replyMade(), name)
        case .drop: name(state.drop(), name)
        }
    }

    /// A short name for a phase. No `default`: a new phase, hold or input does not compile here until it
    /// has a name, and then `theTableDecidesEveryPhaseAgainstEveryFact` fails until it has a row.
    static func name(_ phase: Phase) -> String {
        switch phase {
        case .open(let hold, let input):
            let holdName =
                switch hold {
                case .none: "none"
                case .pausedForOutput: "paused"
                case .yielding: "yielding"
                case .awaitingReply: "awaiting"
                }
            let inputName =
                switch input {
                case .open: "open"
                case .ended: "ended"
                case .gone: "gone"
                }
            return "\(holdName)/\(inputName)"
        case .draining: return "draining"
        case .cutOff: return "cutOff"
        case .closed: return "closed"
        }
    }

    /// A short name for a fact, the table's column. No `default`, as for phases.
    static func name(_ column: Column) -> String {
        switch column {
        case .fact(let fact): name(fact)
        case .replyMade: "replyMade"
        case .drop: "dropped"
        }
    }

    static func name(_ fact: Fact) -> String {
        switch fact {
        case .outputPassedPauseThreshold: "pause"
        case .outputReadDown: "readDown"
        case .turnBudgetSpent: "budget"
        case .loopPolled: "polled"
        case .replyDeferred: "deferred"
        case .inputEnded: "inputEnded"
        case .outputOverLimit: "overLimit"
        case .closedByServer: "closedByServer"
        case .peerGone: "peerGone"
        }
    }

    static func cancel(_ job: ReplyJob?) -> String {
        guard let job else { return "" }
        return job === Self.job ? "+cancel" : "+cancel(another job)"
    }

    static func name(_ action: ConnectionState.Action) -> String {
        switch action {
        case .none: "none"
        case .updateInterest: "interest"
        case .resumeInput: "resumeInput"
        case .handleInput: "handleInput"
        case .closeOnItsTurn(let job): "closeOnItsTurn" + cancel(job)
        case .release(let job): "release" + cancel(job)
        case .finishInput(let job): "finishInput" + cancel(job)
        }
    }

    static func name(_ action: ConnectionState.ReplyAction) -> String {
        switch action {
        case .queueReply(let id): "queueReply(\(id.stringValue ?? "?"))"
        case .discardReply: "discardReply"
        }
    }

    static func name(_ action: ConnectionState.DropAction) -> String {
        switch action {
        case .sendErrorThenClose(let job): "sendError" + cancel(job)
        }
    }

    static func name<Action>(_ transition: ConnectionState.Transition<Action>, _ name: (Action) -> String) -> String {
        switch transition {
        case .move(let phase, let action): "→\(Self.name(phase)) \(name(action))"
        case .ignore(let action): "= \(name(action))"
        case .impossible: "!"
        }
    }

    /// The table, a row per phase and a column per fact (`facts`' order): `→phase action` moves, `= action`
    /// is a harmless repeat or a fact that came too late, `!` cannot happen (the server reports it and a debug
    /// build stops).
    static let table: [String: [String]] = [
        "none/open": [
            "→paused/open interest", "!", "→yielding/open interest", "!", "→awaiting/open interest", "!",
            "→none/ended none", "→draining sendError", "→cutOff closeOnItsTurn", "→closed release",
            "→none/gone finishInput",
        ],
        "none/ended": [
            "→paused/ended interest", "!", "→yielding/ended interest", "!", "→awaiting/ended interest", "!",
            "!", "→draining sendError", "→cutOff closeOnItsTurn", "→closed release",
            "→none/gone finishInput",
        ],
        "paused/open": [
            "!", "→none/open resumeInput", "!", "!", "!", "!",
            "!", "→draining sendError", "→cutOff closeOnItsTurn", "→closed release",
            "→none/gone finishInput",
        ],
        "paused/ended": [
            "!", "→none/ended resumeInput", "!", "!", "!", "!",
            "!", "→draining sendError", "→cutOff closeOnItsTurn", "→closed release",
            "→none/gone finishInput",
        ],
        "yielding/open": [
            "!", "!", "!", "→none/open handleInput", "!", "!",
            "!", "→draining sendError", "→cutOff closeOnItsTurn", "→closed release",
            "→yielding/gone finishInput",
        ],
        "yielding/ended": [
            "!", "!", "!", "→none/ended handleInput", "!", "!",
            "!", "→draining sendError", "→cutOff closeOnItsTurn", "→closed release",
            "→yielding/gone finishInput",
        ],
        "awaiting/open": [
            "!", "!", "!", "!", "!", "→none/open queueReply(r)",
            "!", "→draining sendError+cancel", "→cutOff closeOnItsTurn+cancel", "→closed release+cancel",
            "→awaiting/gone finishInput+cancel",
        ],
        "awaiting/ended": [
            "!", "!", "!", "!", "!", "→none/ended queueReply(r)",
            "!", "→draining sendError+cancel", "→cutOff closeOnItsTurn+cancel", "→closed release+cancel",
            "→awaiting/gone finishInput+cancel",
        ],
        "draining": [
            "!", "!", "!", "!", "!", "= discardReply",
            "!", "!", "→cutOff closeOnItsTurn", "→closed release",
            "→closed release",
        ],
        "cutOff": [
            "!", "!", "!", "= none", "!", "= discardReply",
            "!", "!", "= none", "→closed release",
            "→closed release",
        ],
        "closed": [
            "!", "!", "!", "= none", "!", "= discardReply",
            "!", "!", "!", "= none",
            "= none",
        ],
        "none/gone": [
            "!", "!", "→yielding/gone interest", "!", "→awaiting/gone interest", "!",
            "!", "→draining sendError", "→cutOff closeOnItsTurn", "→closed release",
            "= none",
        ],
        "yielding/gone": [
            "!", "!", "!", "→none/gone handleInput", "!", "!",
            "!", "→draining sendError", "→cutOff closeOnItsTurn", "→closed release",
            "= none",
        ],
        "awaiting/gone": [
            "!", "!", "!", "!", "!", "→none/gone queueReply(r)",
            "!", "→draining sendError+cancel", "→cutOff closeOnItsTurn+cancel", "→closed release+cancel",
            "= none",
        ],
    ]

    @Test func everyPhaseIsReachedByItsFacts() {
        for (phase, state) in Self.reachable { #expect(state.phase == phase) }
        #expect(Self.reachable.count == 14)
        #expect(ConnectionState().phase == .open(.none, .open))
    }

    /// Each (phase, fact) pair is decided as the table says, and `apply` moves the phase only for a legal
    /// fact: a repeat and an impossible fact leave it where it was.
    @Test func theTableDecidesEveryPhaseAgainstEveryFact() {
        #expect(Set(Self.reachable.map { Self.name($0.0) }) == Set(Self.table.keys))
        for (phase, start) in Self.reachable {
            let row = Self.table[Self.name(phase)] ?? []
            #expect(row.count == Self.facts.count, "\(Self.name(phase))")
            for (column, fact) in Self.facts.enumerated() where column < row.count {
                let transition = Self.decide(fact, in: phase)
                #expect(
                    transition == row[column],
                    "\(Self.name(phase)) × \(Self.name(fact)): \(transition), not \(row[column])")
                var state = start
                #expect(Self.apply(fact, to: &state) == transition)
                if transition.hasPrefix("→") {
                    #expect(Self.name(state.phase) == transition.dropFirst().prefix { $0 != " " })
                } else {
                    #expect(state == start, "\(Self.name(phase)) × \(Self.name(fact)) changed the state")
                }
            }
        }
    }

    /// A deferred reply's job is handed back to be cancelled by whatever ends the wait but the reply itself:
    /// the deferred reply of B3 (five abandoned 22 MB reads made for nobody).
    @Test func whatEndsTheWaitForAReplyButTheReplyCancelsItsJob() {
        let awaiting = Self.reachable.filter { if case .open(.awaitingReply, _) = $0.0 { true } else { false } }
        #expect(awaiting.count == 3)
        for (_, start) in awaiting {
            for fact in [Fact.outputOverLimit, .closedByServer] {
                var state = start
                let cancelled: ReplyJob? =
                    switch state.apply(fact) {
                    case .move(_, .closeOnItsTurn(let job)), .move(_, .release(let job)): job
                    default: nil
                    }
                #expect(cancelled === Self.job, "\(fact)")
            }
            var dropped = start
            guard case .move(_, .sendErrorThenClose(let job)) = dropped.drop() else {
                Issue.record("a drop while a reply is made")
                continue
            }
            #expect(job === Self.job, "dropped")
        }
    }

    @Test func onlyAnOpenUnheldConnectionReadsAndOnlyAnUnheldOneHandlesInput() {
        for (phase, state) in Self.reachable {
            #expect(state.isReading == (phase == .open(.none, .open)), "\(phase)")
            let isUnheld: Bool = if case .open(.none, _) = phase { true } else { false }
            #expect(state.handlesInput == isUnheld, "\(phase)")
            #expect(state.isClosed == (phase == .closed), "\(phase)")
            #expect(state.acceptsOutput == (phase != .cutOff && phase != .closed), "\(phase)")
        }
    }

    /// A hang-up (both directions shut) is the table's `peerGone`: an open connection's client is gone, and
    /// what it sent is carried out all the same; one cut off (or draining) is closed; a gone or closed one
    /// stays as it is.
    @Test func aHangUpCarriesOutWhatTheClientSentUnlessItWasCutOff() {
        for (phase, start) in Self.reachable {
            var state = start
            let transition = state.apply(.peerGone)
            switch phase {
            case .open(_, .open), .open(_, .ended):
                guard case .move(.open(_, .gone), .finishInput) = transition else {
                    Issue.record("\(phase): \(transition)")
                    continue
                }
            case .cutOff, .draining:
                #expect(transition == .move(to: .closed, .release(cancel: nil)), "\(phase)")
            case .open(_, .gone), .closed:
                #expect(transition == .ignore(.none), "\(phase)")
                #expect(state.phase == phase)
            }
        }
    }

    /// What a send leaves, for every phase, every amount left unsent (none, under half the pause threshold,
    /// over it), with and without pending input, subscribed or not.
    @Test func afterASendEveryPhaseGetsItsOneAction() {
        let half = 100
        for (phase, state) in Self.reachable {
            for unsent in [0, half, half + 1] {
                for hasPendingInput in [false, true] {
                    for isSubscriber in [false, true] {
                        let action = state.afterSend(
                            unsent: unsent, resumeBelow: half, hasPendingInput: hasPendingInput,
                            isSubscriber: isSubscriber)
                        let expected: ConnectionState.AfterSend
                        switch phase {
                        case .closed, .cutOff: expected = .wait
                        case .draining: expected = unsent == 0 ? .close(releasesBuffer: true) : .wait
                        case .open(let hold, .gone):
                            expected =
                                hold == .none && !hasPendingInput
                                ? .close(releasesBuffer: true) : .idle(releasesBuffer: hold == .none)
                        case .open(let hold, let input):
                            let isDone =
                                hold.job == nil && input == .ended && !hasPendingInput && !isSubscriber
                            if unsent == 0 && isDone {
                                expected = .close(releasesBuffer: hold == .none)
                            } else if hold == .pausedForOutput && unsent <= half {
                                expected = .resumeReading
                            } else if unsent == 0 {
                                expected = .idle(releasesBuffer: hold == .none)
                            } else {
                                expected = .wait
                            }
                        }
                        #expect(
                            action == expected,
                            "\(phase), \(unsent) unsent, pending \(hasPendingInput), subscriber \(isSubscriber)")
                    }
                }
            }
        }
    }

    /// The cases the table above derives, spelled out: what a client sees.
    @Test func aClientThatShutItsSideIsClosedOnceAnsweredUnlessItSubscribes() {
        var state = ConnectionState()
        _ = state.apply(.inputEnded)
        #expect(
            state.afterSend(unsent: 0, resumeBelow: 1, hasPendingInput: true, isSubscriber: false)
                == .idle(releasesBuffer: true))
        #expect(
            state.afterSend(unsent: 0, resumeBelow: 1, hasPendingInput: false, isSubscriber: true)
                == .idle(releasesBuffer: true))
        #expect(
            state.afterSend(unsent: 0, resumeBelow: 1, hasPendingInput: false, isSubscriber: false)
                == .close(releasesBuffer: true))
        _ = state.apply(.replyDeferred(id: 1, job: ReplyJob()))
        #expect(
            state.afterSend(unsent: 0, resumeBelow: 1, hasPendingInput: false, isSubscriber: false)
                == .idle(releasesBuffer: false))
    }

    // MARK: - Deadlines, driven through time without a socket or a clock

    static let t0 = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    static let timeouts = ConnectionState.Timeouts(stall: .seconds(10), partialLine: .seconds(4))

    /// Output that waits unread closes the connection `stall` after the socket last took any, once a send
    /// at the deadline took none either; each progress moves the deadline, and output all sent clears it.
    @Test func unreadOutputClosesTheConnectionAStallAfterItsLastProgress() {
        var state = ConnectionState(timeouts: Self.timeouts)
        #expect(state.nextDeadline == nil)
        #expect(state.expire(at: Self.t0 + .seconds(3600)) == .none)
        state.outputWaits(true, at: Self.t0)
        #expect(state.nextDeadline == Self.t0 + .seconds(10))
        // Still waiting at the next flush: the wait began at t0, not now.
        state.outputWaits(true, at: Self.t0 + .seconds(2))
        #expect(state.nextDeadline == Self.t0 + .seconds(10))
        #expect(state.expire(at: Self.t0 + .milliseconds(9_999)) == .none)
        state.outputProgressed(at: Self.t0 + .seconds(5))
        #expect(state.nextDeadline == Self.t0 + .seconds(15))
        // A timer armed at the old deadline fires early and finds nothing due.
        #expect(state.expire(at: Self.t0 + .seconds(10)) == .none)
        #expect(state.expire(at: Self.t0 + .seconds(15)) == .sendFirst)
        // The send took nothing.
        state.outputWaits(true, at: Self.t0 + .seconds(15))
        #expect(state.expire(at: Self.t0 + .seconds(15)) == .closeStalled)
        state.outputWaits(false, at: Self.t0 + .seconds(15))
        #expect(state.nextDeadline == nil)
        #expect(state.expire(at: Self.t0 + .seconds(3600)) == .none)
    }

    /// Output that the client read while the daemon was stopped (SIGSTOP, a stalled loop) past the stall's
    /// deadline: the timer firing late sends first, and the socket taking some moves the deadline on. Before,
    /// the timer closed the connection as "it read nothing" without trying (the attack's B4).
    @Test func aStallDeadlineSendsOnceMoreBeforeItCloses() {
        var state = ConnectionState(timeouts: Self.timeouts)
        state.outputWaits(true, at: Self.t0)
        #expect(state.expire(at: Self.t0 + .seconds(12)) == .sendFirst)
        state.outputProgressed(at: Self.t0 + .seconds(12))
        state.outputWaits(true, at: Self.t0 + .seconds(12))
        #expect(state.expire(at: Self.t0 + .seconds(12)) == .none)
        #expect(state.nextDeadline == Self.t0 + .seconds(22))
        // A later stall gets its own send first.
        #expect(state.expire(at: Self.t0 + .seconds(22)) == .sendFirst)
        #expect(state.expire(at: Self.t0 + .seconds(22)) == .closeStalled)
    }

    /// A partial line's time is up `partialLine` after it began: the server reads what waits first, and
    /// only if nothing completes it is the line timed out (the SIGSTOP case: the rest arrived while the loop
    /// was stopped). A line that completes clears the deadline; a new partial line starts its own.
    @Test func aPartialLineIsReadOnceMoreAtItsDeadlineThenTimedOut() {
        var state = ConnectionState(timeouts: Self.timeouts)
        state.inputWaits(partialLine: true, at: Self.t0)
        state.inputWaits(partialLine: true, at: Self.t0 + .seconds(1))
        #expect(state.nextDeadline == Self.t0 + .seconds(4))
        #expect(state.expire(at: Self.t0 + .milliseconds(3_999)) == .none)
        #expect(state.expire(at: Self.t0 + .seconds(4)) == .readFirst)
        // The read brought nothing that ended the line.
        state.inputWaits(partialLine: true, at: Self.t0 + .seconds(4))
        #expect(state.expire(at: Self.t0 + .seconds(4)) == .timeOutPartialLine)

        var completed = ConnectionState(timeouts: Self.timeouts)
        completed.inputWaits(partialLine: true, at: Self.t0)
        #expect(completed.expire(at: Self.t0 + .seconds(9)) == .readFirst)
        // The read completed the line and began another.
        completed.inputWaits(partialLine: false, at: Self.t0 + .seconds(9))
        completed.inputWaits(partialLine: true, at: Self.t0 + .seconds(9))
        #expect(completed.expire(at: Self.t0 + .seconds(9)) == .none)
        #expect(completed.nextDeadline == Self.t0 + .seconds(13))
        #expect(completed.expire(at: Self.t0 + .seconds(13)) == .readFirst)
    }

    /// A partial line is the client's wait only while the connection reads: lines held behind a pause, a
    /// yield or a reply being made are the daemon's wait, and a dropped connection reads nothing more.
    @Test func aPartialLineIsWatchedOnlyWhileTheConnectionReads() {
        for fact in [
            Column.fact(.outputPassedPauseThreshold), .fact(.turnBudgetSpent),
            .fact(.replyDeferred(id: 1, job: ReplyJob())), .drop,
        ] {
            var state = ConnectionState(timeouts: Self.timeouts)
            state.inputWaits(partialLine: true, at: Self.t0)
            #expect(state.nextDeadline != nil)
            _ = Self.apply(fact, to: &state)
            #expect(state.nextDeadline == nil, "\(Self.name(fact))")
            state.inputWaits(partialLine: true, at: Self.t0 + .seconds(1))
            #expect(state.nextDeadline == nil, "\(Self.name(fact))")
            #expect(state.expire(at: Self.t0 + .seconds(3600)) == .none, "\(Self.name(fact))")
        }
    }

    /// With both deadlines, the timer is armed at the earlier, and a stalled reader is closed rather than
    /// sent a `request_timeout` it would never read. A closed connection has no deadline.
    @Test func theEarlierDeadlineComesFirstAndAClosedConnectionHasNone() {
        var state = ConnectionState(timeouts: Self.timeouts)
        state.outputWaits(true, at: Self.t0)
        state.inputWaits(partialLine: true, at: Self.t0 + .seconds(1))
        #expect(state.nextDeadline == Self.t0 + .seconds(5))
        #expect(state.expire(at: Self.t0 + .seconds(5)) == .readFirst)
        #expect(state.expire(at: Self.t0 + .seconds(10)) == .sendFirst)
        #expect(state.expire(at: Self.t0 + .seconds(10)) == .closeStalled)
        _ = state.apply(.closedByServer)
        #expect(state.nextDeadline == nil)
        #expect(state.expire(at: Self.t0 + .seconds(3600)) == .none)
    }
}
