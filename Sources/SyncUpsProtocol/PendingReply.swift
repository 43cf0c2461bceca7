import Synchronization

/// A reply that waits for another worker (the journal writer, the voice writer, a meeting's start) without
/// holding a thread (`ReplyBody.awaited`). Whoever finishes completes it, once, from any thread: with
/// `complete`, or part by part with `partDone` when it waits for several workers. The server says where
/// the outcome goes (`deliver`); it goes there as soon as both are known, once.
public final class PendingReply: Sendable {
    public typealias Outcome = Result<ReplyBody, ProtocolError>

    private struct State {
        var partsLeft: Int
        var outcome: Outcome?
        var receiver: (@Sendable (Outcome) -> Void)?
        var isDelivered = false

        /// What to deliver now, if everything is known and it was not delivered yet.
        mutating func due() -> ((@Sendable (Outcome) -> Void), Outcome)? {
            guard !isDelivered, partsLeft == 0, let outcome, let receiver else { return nil }
            isDelivered = true
            self.receiver = nil
            return (receiver, outcome)
        }
    }

    private let state: Mutex<State>

    /// A reply completed by one `complete`.
    public init() {
        state = Mutex(State(partsLeft: 1, outcome: nil))
    }

    /// A reply of `outcome` once each of `parts` waits has called `partDone` (a part's failure replaces it).
    public init(parts: Int, outcome: Outcome) {
        state = Mutex(State(partsLeft: max(parts, 0), outcome: outcome))
    }

    /// The reply is `outcome`; a second call, or one after it was delivered, does nothing.
    public func complete(_ outcome: Outcome) {
        let due = state.withLock { state -> ((@Sendable (Outcome) -> Void), Outcome)? in
            guard state.partsLeft > 0 else { return nil }
            state.partsLeft = 0
            state.outcome = outcome
            return state.due()
        }
        if let (receiver, outcome) = due { receiver(outcome) }
    }

    /// One of the waits is over; with `failure`, the reply is that error (the first one reported).
    public func partDone(failing failure: ProtocolError? = nil) {
        let due = state.withLock { state -> ((@Sendable (Outcome) -> Void), Outcome)? in
            guard state.partsLeft > 0 else { return nil }
            state.partsLeft -= 1
            if let failure, case .success? = state.outcome { state.outcome = .failure(failure) }
            return state.due()
        }
        if let (receiver, outcome) = due { receiver(outcome) }
    }

    /// For the server: hands the outcome to `receiver` once it is known (at once, on this thread, if it is).
    public func deliver(to receiver: @escaping @Sendable (Outcome) -> Void) {
        let due = state.withLock { state -> ((@Sendable (Outcome) -> Void), Outcome)? in
            state.receiver = receiver
            return state.due()
        }
        if let (receiver, outcome) = due { receiver(outcome) }
    }

    /// Completed by nobody (its worker dropped it, the daemon stopping): the client is told rather than left
    /// waiting for ever.
    deinit {
        let receiver = state.withLock { state in state.isDelivered ? nil : state.receiver }
        receiver?(.failure(ProtocolError(.internalError, "the daemon stopped waiting for this reply")))
    }
}
