import Glibc
import SyncUpsPOSIX
import SyncUpsProtocol

/// Writing: queuing output (the one way: `enqueue`), sending it without blocking, pausing and resuming a
/// reader for its unsent output, and the socket's interest. The output limit itself is `Server+Close`'s.
extension Server {
    /// Queues bytes for a client, `times` over (a replayed reply's repeats): every reply, event and error line
    /// goes this way. A client whose unsent output would pass the limit is cut off instead, and gets nothing;
    /// a gone client's (its lines still carried out) is dropped here, as nothing would send it.
    func enqueue(_ bytes: [UInt8], times: Int = 1, to connection: Connection) {
        guard connection.state.acceptsOutput, !connection.state.isPeerGone,
            !cutOffIfOverOutputLimit(connection, adding: bytes.count * times)
        else { return }
        connection.output.append(bytes, times: times)
    }

    /// Flushes `connection` at the end of the loop's turn (`flushPending`), once however often it is asked.
    func flushAtEndOfTurn(_ connection: Connection) {
        guard !connection.isClosed, pendingFlush[connection.number] == nil else { return }
        if pendingFlush.isEmpty { loop.execute { [weak self] in self?.flushPending() } }
        pendingFlush[connection.number] = connection
    }

    /// Sends what the socket takes now; arranges to be called again when it takes more. Never handles input:
    /// a paused reader that has caught up resumes at the end of the loop's turn (`EventLoop.execute`).
    func flush(_ connection: Connection) {
        // Cut off (closed at the end of the turn: `closeOnItsTurn`) or closed: nothing is sent.
        guard connection.state.acceptsOutput else { return }
        sendQueued(connection)
        if connection.isClosed { return }
        noteOutput(connection)
        let next = connection.state.afterSend(
            unsent: connection.output.count, resumeBelow: readPauseThreshold / 2,
            hasPendingInput: connection.hasPendingInput, isSubscriber: connection.isSubscriber)
        switch next {
        case .wait, .idle(releasesBuffer: false):
            break
        case .idle(releasesBuffer: true):
            // Not in `sendQueued`: a batch that sends as it goes keeps its buffer until it is done.
            noteReleased(connection.output.releaseCapacity(into: &spareOutput))
        case .close(let releasesBuffer):
            if releasesBuffer { noteReleased(connection.output.releaseCapacity(into: &spareOutput)) }
            close(connection, reason: nil)
            return
        case .resumeReading:
            apply(.outputReadDown, to: connection)
        }
        updateInterest(connection)
    }

    /// Sends what the socket takes now, nothing else: no timers, no interest. Returns false when the socket
    /// is full (output remains) or the connection was closed on an error.
    @discardableResult
    func sendQueued(_ connection: Connection) -> Bool {
        // A gone client has none: `finishInput` dropped what it had, and `enqueue` drops what comes after.
        assert(!connection.state.isPeerGone || connection.output.isEmpty, "output queued for a gone client")
        while !connection.output.isEmpty {
            let sent: Int
            do {
                sendCalls += 1
                sent = try connection.output.send(to: connection.fd)
            } catch {
                guard error.errno == .brokenPipe || error.errno == .connectionReset else {
                    close(connection, reason: "send failed: \(error)")
                    return false
                }
                apply(.peerGone, to: connection)  // what it sent is still carried out; its output is dropped
                return !connection.isClosed
            }
            if sent == 0 { return false }
            noteOutputProgress(connection)
        }
        return true
    }

    /// Stops reading from a client with `readPauseThreshold` unsent.
    func pauseReading(_ connection: Connection) {
        readPauses += 1
        apply(.outputPassedPauseThreshold, to: connection)
    }

    /// Sends every subscriber the events queued for it during this turn.
    func flushPending() {
        let connections = pendingFlush
        pendingFlush.removeAll(keepingCapacity: true)
        for connection in connections.values { flush(connection) }
    }

    func updateInterest(_ connection: Connection) {
        guard let watch = connection.watch, !connection.isClosed else { return }
        var events: IOEvents = []
        if connection.state.isReading { events.insert(.readable) }
        if !connection.output.isEmpty {
            events.insert(.writable)
            loop.skipBusyPoll()
        }
        loop.modify(watch, for: events)
    }
}
