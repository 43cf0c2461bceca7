import SyncUpsPOSIX
import SyncUpsProtocol

/// Ending a connection: `close` (now), `cutOffIfOverOutputLimit` (over its output limit: closed at the end of
/// the loop's turn, `closeAtEndOfTurn`), `drop` (one error line, then closed), and `release`, what a closed
/// connection gives back.
extension Server {
    func close(_ connection: Connection, reason: String?) {
        guard !connection.isClosed else { return }
        if let reason {
            logger.throttled(.notice, "client.closed", "closing \(connection.label): \(reason)")
        } else {
            logger.debug("\(connection.label) disconnected")
        }
        apply(.closedByServer, to: connection)
    }

    /// Gives back what a closed connection held.
    func release(_ connection: Connection) {
        if let watch = connection.watch { loop.unwatch(watch) }
        cancelDeadline(connection)
        subscriptions.remove(connection)
        connection.fd.close()
        listenerGate?.resume()  // a descriptor is free: accept again if short of them
        connections[connection.number] = nil
        noteReleased(connection.input.capacity + connection.output.capacity)
    }

    /// The output limit, the one place it is checked, and the one way a connection is cut off (MPD's
    /// `SetExpired`), asked by `enqueue` before it queues `adding` bytes: a client that would have more than
    /// `maxOutputBytes` unread reads, queues and sends nothing more from here on, and is closed on its own
    /// turn, at the end of the loop's turn (`closeOnItsTurn`): never inside the request of another client whose
    /// event overflowed it. Returns whether it is over.
    func cutOffIfOverOutputLimit(_ connection: Connection, adding: Int) -> Bool {
        let unread = connection.output.count + adding
        guard unread > limits.maxOutputBytes else { return false }
        if connection.state.acceptsOutput {  // else it was cut off already
            logger.throttled(
                .notice, "client.closed",
                "closing \(connection.label): it has \(unread) bytes of output unread, over the \(limits.maxOutputBytes)-byte limit"
            )
        }
        apply(.outputOverLimit, to: connection)
        return true
    }

    /// Closes a connection that was cut off, at the end of the loop's turn.
    func closeAtEndOfTurn(_ connection: Connection) {
        loop.execute { [weak self, weak connection] in
            guard let self, let connection else { return }
            close(connection, reason: nil)  // logged when it was cut off
        }
    }

    /// Sends one error line (id null) and closes the connection once it is sent; what it sent is dropped,
    /// and a reply being made for it is not made if it has not started.
    func drop(_ connection: Connection, _ error: ProtocolError) {
        switch action(connection.state.drop(), on: connection, after: "a drop (\(error.code))") {
        case .sendErrorThenClose(let job)?:
            job?.cancel()
            enqueue(Wire.failure(id: .null, error: error), to: connection)
            connection.input = []
            connection.inputStart = 0
            flush(connection)
        case nil:
            break
        }
    }
}
