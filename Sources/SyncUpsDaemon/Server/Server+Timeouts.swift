import SyncUpsPOSIX
import SyncUpsProtocol

/// Timeouts: a client that stops reading its output (`stallTimeoutSeconds`) or leaves a request line
/// incomplete (`partialLineTimeoutSeconds`) is cut off. Both run on the loop's clock, so a test's manual
/// clock drives them (`VirtualTimeTests`).
extension Server {
    /// Arms the partial-line timeout while the input holds part of a line and nothing else; a complete line
    /// disarms it. (Complete lines waiting behind a paused reader are the daemon's wait, not the client's.)
    func watchPartialLine(_ connection: Connection) {
        guard connection.state.isReading && connection.hasPendingInput else {
            connection.partialLineSince = nil
            connection.partialLineTimer.map(loop.cancel)
            connection.partialLineTimer = nil
            return
        }
        guard connection.partialLineSince == nil else { return }
        let since = loop.now()
        connection.partialLineSince = since
        let timeout = limits.partialLineTimeoutSeconds
        connection.partialLineTimer = loop.schedule(at: since + .seconds(timeout)) {
            [unowned self, unowned connection] in
            connection.partialLineTimer = nil
            guard !connection.isClosed, connection.partialLineSince == since else { return }
            // A loop that was stopped (SIGSTOP, a long stall) fires this before it polls: what the client sent
            // meanwhile is read first, and may complete the line.
            read(connection)
            guard !connection.isClosed, connection.partialLineSince == since else { return }
            logger.throttled(
                .notice, "client.partial",
                "\(connection.label) left a request line incomplete for \(timeout) s; closing it")
            drop(
                connection,
                ProtocolError(
                    .requestTimeout, "a request line stayed incomplete for \(timeout) seconds; closing the connection"))
        }
    }

    /// After a flush: a connection with output waiting and no stall check armed starts waiting now (its
    /// output went from empty to waiting); one with none has nothing to wait for. With `noteOutputProgress`,
    /// the one place `lastProgress` is written.
    func watchStall(_ connection: Connection) {
        if connection.output.isEmpty {
            cancelStallCheck(connection)
        } else if connection.stallTimer == nil {
            connection.lastProgress = loop.now()
            scheduleStallCheck(connection)
        }
    }

    /// The socket took some of the connection's output.
    func noteOutputProgress(_ connection: Connection) {
        connection.lastProgress = loop.now()
    }

    /// Closes the connection if its output makes no progress for `stallTimeoutSeconds`.
    private func scheduleStallCheck(_ connection: Connection) {
        let deadline = connection.lastProgress + .seconds(limits.stallTimeoutSeconds)
        connection.stallTimer = loop.schedule(at: deadline) { [unowned self, unowned connection] in
            connection.stallTimer = nil
            guard !connection.isClosed, !connection.output.isEmpty else { return }
            if loop.now() - connection.lastProgress >= .seconds(limits.stallTimeoutSeconds) {
                close(connection, reason: "it read nothing for \(limits.stallTimeoutSeconds) seconds")
            } else {
                scheduleStallCheck(connection)
            }
        }
    }

    func cancelStallCheck(_ connection: Connection) {
        guard let timer = connection.stallTimer else { return }
        loop.cancel(timer)
        connection.stallTimer = nil
    }
}
