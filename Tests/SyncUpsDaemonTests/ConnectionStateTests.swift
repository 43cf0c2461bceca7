import SyncUpsJSON
import Testing

@testable import SyncUpsDaemon

/// Every transition of a connection's state, from every phase it can be in, and the action each fact calls
/// for: what the server used to rebuild from six booleans in four places.
@Suite struct ConnectionStateTests {
    typealias Phase = ConnectionState.Phase

    /// Every phase a connection can be in, each reached from a new connection by the facts that lead there.
    static let reachable: [(Phase, ConnectionState)] = {
        func state(_ facts: (inout ConnectionState) -> Void) -> ConnectionState {
            var state = ConnectionState()
            facts(&state)
            return state
        }
        let holds: [(ConnectionState.Hold, (inout ConnectionState) -> Void)] = [
            (.none, { _ in }),
            (.pausedForOutput, { _ = $0.pauseForOutput() }),
            (.yielding, { _ = $0.yield() }),
            (.awaitingReply(id: "r"), { _ = $0.awaitReply(id: "r") }),
        ]
        var all: [(Phase, ConnectionState)] = []
        for (hold, reach) in holds {
            all.append((.open(hold, .open), state { reach(&$0) }))
            all.append(
                (
                    .open(hold, .closed),
                    state {
                        $0.endOfInput()
                        reach(&$0)
                    }
                ))
        }
        all.append((.draining, state { _ = $0.drop() }))
        all.append((.cutOff, state { _ = $0.exceededOutputLimit() }))
        all.append((.closed, state { _ = $0.close() }))
        return all
    }()

    @Test func everyPhaseIsReachedByItsFacts() {
        for (phase, state) in Self.reachable { #expect(state.phase == phase) }
        #expect(Self.reachable.count == 11)
        #expect(ConnectionState().phase == .open(.none, .open))
    }

    @Test func onlyAnOpenUnheldConnectionReadsAndOnlyAnUnheldOneHandlesInput() {
        for (phase, state) in Self.reachable {
            #expect(state.isReading == (phase == .open(.none, .open)), "\(phase)")
            #expect(state.handlesInput == (phase == .open(.none, .open) || phase == .open(.none, .closed)), "\(phase)")
            #expect(state.isClosed == (phase == .closed), "\(phase)")
        }
    }

    /// A pause, a yield and an awaited reply each start only from a connection that handles its input; from
    /// any other phase they change nothing and ask for nothing.
    @Test func aHoldStartsOnlyFromAnUnheldOpenConnection() {
        let facts: [(ConnectionState.Hold, (inout ConnectionState) -> ConnectionState.Change)] = [
            (.pausedForOutput, { $0.pauseForOutput() }),
            (.yielding, { $0.yield() }),
            (.awaitingReply(id: 7), { $0.awaitReply(id: 7) }),
        ]
        for (hold, fact) in facts {
            for (phase, start) in Self.reachable {
                var state = start
                let change = fact(&state)
                switch phase {
                case .open(.none, let input):
                    #expect(change == .updateInterest)
                    #expect(state.phase == .open(hold, input))
                default:
                    #expect(change == .none, "\(hold) from \(phase)")
                    #expect(state.phase == phase, "\(hold) from \(phase)")
                }
            }
        }
    }

    @Test func eachHoldEndsOnlyByItsOwnFact() {
        for (phase, start) in Self.reachable {
            var resumed = start
            let resume = resumed.resumeAfterPause()
            var unyielded = start
            let goesOn = unyielded.resumeAfterYield()
            var answered = start
            let reply = answered.replyMade()
            switch phase {
            case .open(.pausedForOutput, let input):
                #expect(resume == .updateInterest && resumed.phase == .open(.none, input))
            default:
                #expect(resume == .none && resumed.phase == phase, "\(phase)")
            }
            switch phase {
            case .open(.yielding, let input):
                #expect(goesOn && unyielded.phase == .open(.none, input))
            default:
                #expect(!goesOn && unyielded.phase == phase, "\(phase)")
            }
            switch phase {
            case .open(.awaitingReply(let id), let input):
                #expect(reply == .queue(id: id) && answered.phase == .open(.none, input))
                // Answered once: a second reply for it finds nobody waiting.
                let second = answered.replyMade()
                #expect(second == .discard)
            default:
                #expect(reply == .discard && answered.phase == phase, "\(phase)")
            }
        }
    }

    @Test func theEndOfInputKeepsTheHoldAndDropDiscardsEverything() {
        for (phase, start) in Self.reachable {
            var ended = start
            ended.endOfInput()
            var dropped = start
            let change = dropped.drop()
            switch phase {
            case .open(let hold, _):
                #expect(ended.phase == .open(hold, .closed))
                #expect(change == .updateInterest && dropped.phase == .draining)
            default:
                #expect(ended.phase == phase)
                #expect(change == .none && dropped.phase == phase)
            }
        }
    }

    /// A hang-up closes the connection at once only when nobody is left to answer: its reply is being made,
    /// or it had already shut its sending side (a half-closed subscriber has gone away). Otherwise the
    /// server reads, to see the end of input or what came before it.
    @Test func aHangUpClosesOnlyWhenNobodyIsLeftToAnswer() {
        for (phase, start) in Self.reachable {
            let state = start
            let action = state.hungUp()
            let closes: Bool
            switch phase {
            case .open(.awaitingReply, _), .open(_, .closed), .cutOff: closes = true
            default: closes = false
            }
            #expect(action == (closes ? .close : .read), "\(phase)")
            #expect(state.phase == phase)
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
                        case .closed: expected = .wait
                        case .cutOff: expected = .cutOff
                        case .draining: expected = unsent == 0 ? .close(releasesBuffer: true) : .wait
                        case .open(let hold, let input):
                            let isDone =
                                hold != .awaitingReply(id: "r") && input == .closed && !hasPendingInput
                                && !isSubscriber
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
        state.endOfInput()
        #expect(
            state.afterSend(unsent: 0, resumeBelow: 1, hasPendingInput: true, isSubscriber: false)
                == .idle(releasesBuffer: true))
        #expect(
            state.afterSend(unsent: 0, resumeBelow: 1, hasPendingInput: false, isSubscriber: true)
                == .idle(releasesBuffer: true))
        #expect(
            state.afterSend(unsent: 0, resumeBelow: 1, hasPendingInput: false, isSubscriber: false)
                == .close(releasesBuffer: true))
        _ = state.awaitReply(id: 1)
        #expect(
            state.afterSend(unsent: 0, resumeBelow: 1, hasPendingInput: false, isSubscriber: false)
                == .idle(releasesBuffer: false))
    }

    @Test func aConnectionClosesOnce() {
        for (phase, start) in Self.reachable {
            var state = start
            let first = state.close()
            #expect(first == (phase != .closed))
            #expect(state.phase == .closed)
            let again = state.close()
            #expect(!again)
        }
    }

    /// Over the output limit, an open or draining connection is cut off, once: the server closes it on its
    /// own turn, and queues nothing more to it meanwhile.
    @Test func goingOverTheOutputLimitCutsOffOnceAndTheCloseWaitsForItsTurn() {
        for (phase, start) in Self.reachable {
            var state = start
            let action = state.exceededOutputLimit()
            switch phase {
            case .open, .draining:
                #expect(start.acceptsOutput, "\(phase)")
                #expect(action == .closeOnItsTurn && state.phase == .cutOff, "\(phase)")
            case .cutOff, .closed:
                #expect(!start.acceptsOutput, "\(phase)")
                #expect(action == .none && state.phase == phase, "\(phase)")
            }
            let again = state.exceededOutputLimit()
            #expect(again == .none)
        }
    }
}
