import SyncUpsPOSIX
import SyncUpsProtocol

/// Timeouts: a client that stops reading its output (`stallTimeoutSeconds`) is closed (`closeStalled`), and one
/// that leaves a request line incomplete (`partialLineTimeoutSeconds`) is dropped with `request_timeout` (its
/// error line sent, then closed); "cut off" is only the output limit's (`Server+Close`). The deadlines are
/// the connection's state's (`ConnectionState.expire(at:)` says what each instant calls for); here is only
/// the one timer per connection that wakes the server at the next of them, on the loop's clock, so a test's
/// manual clock drives them (`VirtualTimeTests`).
extension Server {
    /// After the input was handled: the state watches what is left of a line.
    func noteInput(_ connection: Connection) {
        connection.state.inputWaits(partialLine: connection.hasPendingInput, at: loop.now())
        armDeadline(connection)
    }

    /// After a flush: the state watches whether output waits for the client.
    func noteOutput(_ connection: Connection) {
        connection.state.outputWaits(!connection.output.isEmpty, at: loop.now())
        armDeadline(connection)
    }

    /// The socket took some of the connection's output.
    func noteOutputProgress(_ connection: Connection) {
        connection.state.outputProgressed(at: loop.now())
    }

    /// Arms the connection's timer at its state's next deadline. A deadline that moved later leaves the
    /// timer where it is: it fires early, finds nothing due, and is armed again (as SwiftNIO's
    /// `IdleStateHandler`), so a send's progress costs no timer operation.
    private func armDeadline(_ connection: Connection) {
        let next = connection.state.nextDeadline
        if let armed = connection.deadlineTimerAt, let next, armed <= next { return }
        cancelDeadline(connection)
        guard let next else { return }
        connection.deadlineTimerAt = next
        connection.deadlineTimer = loop.schedule(at: next) { [unowned self, unowned connection] in
            connection.deadlineTimer = nil
            connection.deadlineTimerAt = nil
            expire(connection)
        }
    }

    func cancelDeadline(_ connection: Connection) {
        if let timer = connection.deadlineTimer { loop.cancel(timer) }
        connection.deadlineTimer = nil
        connection.deadlineTimerAt = nil
    }

    /// Does what the connection's state says the time calls for, then arms the next deadline.
    private func expire(_ connection: Connection) {
        while !connection.isClosed {
            switch connection.state.expire(at: loop.now()) {
            case .none:
                armDeadline(connection)
                return
            case .readFirst:
                read(connection)
            case .sendFirst:
                flush(connection)
            case .timeOutPartialLine:
                let timeout = limits.partialLineTimeoutSeconds
                logger.throttled(
                    .notice, "client.partial",
                    "\(connection.label) left a request line incomplete for \(timeout) s; closing it")
                drop(
                    connection,
                    ProtocolError(
                        .requestTimeout,
                        "a request line stayed incomplete for \(timeout) seconds; closing the connection"))
            case .closeStalled:
                close(connection, reason: "it read nothing for \(limits.stallTimeoutSeconds) seconds")
            }
        }
    }
}
