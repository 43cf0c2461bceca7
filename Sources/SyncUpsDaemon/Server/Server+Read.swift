import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// Reading: the socket's events, framing lines, and the turn budget that lets other clients in.
extension Server {
    func handleEvents(_ events: IOEvents, on connection: Connection) {
        // `.hangup` is several bits; any of them means it.
        let hungUp = !events.isDisjoint(with: .hangup)
        if events.contains(.writable) || hungUp { flush(connection) }
        if connection.isClosed { return }
        if hungUp {
            // Both directions shut: the client is gone, and what it sent is carried out unless it was dropped or
            // cut off (the table's `peerGone`).
            apply(.peerGone, to: connection)
            return
        }
        if events.contains(.readable) { read(connection) }
    }

    /// Reads what the socket holds now: on a readiness event, and before the partial-line deadline judges a
    /// line (it fires before the loop polls when the loop was stopped).
    func read(_ connection: Connection) {
        guard connection.state.isReading else { return }
        let read = readChunk(connection)
        let count: Int
        switch read {
        case .success(let available?): count = available
        case .success(nil): return
        case .failure(let error):
            // A client that closed with replies unread resets the socket once all it sent has been read: it
            // is gone, and what it sent is carried out, as after a hang-up.
            if error.errno == .connectionReset {
                apply(.peerGone, to: connection)
                return
            }
            close(connection, reason: "read failed: \(error.errno)")
            return
        }
        if count == 0 {
            // End of input: answer what was sent (even a last line without "\n"), then close (`afterSend`).
            if connection.hasPendingInput { connection.input.append(0x0A) }
            apply(.inputEnded, to: connection)
        } else {
            connection.input.append(contentsOf: readBuffer[0..<count])
        }
        processInputAndFlush(connection)
    }

    /// Handles the lines a connection already received at the end of the loop's current turn
    /// (`EventLoop.execute`; not after another poll, as `yieldTurn` does), if it still handles input then:
    /// after a pause or an awaited reply (the socket may never become readable again: they are in our
    /// buffer, not the kernel's).
    func handleInputAtEndOfTurn(_ connection: Connection) {
        loop.execute { [weak self, weak connection] in
            guard let self, let connection, connection.state.handlesInput else { return }
            processInputAndFlush(connection)
        }
    }

    /// The client is gone (`ConnectionState.Input.gone`): what it sent before is all in the socket now, so it
    /// is read to its end (up to a line's limit beyond what is held, for a client that only shut its reading
    /// side and writes on), the socket is no longer watched (a hang-up would be reported at every turn), its
    /// output and subscriptions are dropped, and its lines are carried out at the end of the loop's turn.
    func finishInput(_ connection: Connection) {
        // All of what is queued now, and its end; past that, one buffer more at most (a client that shut only
        // its reading side may write on for ever).
        let queued = connection.fd.queuedInputBytes ?? limits.maxLineBytes
        var taken = 0
        var isEnd = false
        while !isEnd && taken <= queued {
            let read = readChunk(connection)
            guard case .success(let count?) = read, count > 0 else {
                // The end: a read of nothing, or a reset (the client closed with replies unread; Linux reports
                // that once all it sent has been read), which ended a last line without "\n" as cut short.
                switch read {
                case .success(let count): isEnd = count == 0
                case .failure(let error): isEnd = error.errno == .connectionReset
                }
                break
            }
            connection.input.append(contentsOf: readBuffer[0..<count])
            taken += count
        }
        if isEnd {
            // A last line without "\n" is answered, as at the end of input.
            if connection.hasPendingInput && connection.input.last != 0x0A { connection.input.append(0x0A) }
        } else if let lastLine = connection.input.lastIndex(of: 0x0A), lastLine >= connection.inputStart {
            connection.input.removeSubrange((lastLine + 1)...)  // a line cut short: never carried out
        } else {
            connection.input.removeSubrange(connection.inputStart...)
        }
        if let watch = connection.watch { loop.unwatch(watch) }
        connection.watch = nil
        subscriptions.remove(connection)
        connection.output.discardAll()
        handleInputAtEndOfTurn(connection)
    }

    /// Reads and drops what a connection sent that will never be handled, as the daemon stops: on Linux,
    /// closing a Unix socket with input unread resets its peer (`unix_release_sock`), and a client waiting
    /// for a reply is promised end of file. The reading side is shut first, so a client still writing cannot
    /// add to what is read here (its writes fail with `EPIPE` from then on): what is read is what was queued.
    func discardUnreadInput(_ connection: Connection) {
        connection.fd.shutDownReading()
        while case .success(let count?) = readChunk(connection), count > 0 {}
    }

    /// One non-blocking read of what `connection` sent, into `readBuffer`: the count (0 at the end), nil if
    /// nothing is there now.
    private func readChunk(_ connection: Connection) -> Result<Int?, SystemError> {
        readBuffer.withUnsafeMutableBytes { buffer in
            Result { () throws(SystemError) in try connection.fd.readAvailable(into: buffer) }
        }
    }

    /// Handles what the input holds, watches what is left of a line, and sends the replies.
    func processInputAndFlush(_ connection: Connection) {
        processInput(connection)
        noteInput(connection)
        flush(connection)
    }

    /// How many replayed lines may pass between two clock reads: a run of them costs about 25 µs (a compare
    /// and a copy each). Each read also re-checks the replay's generation (`replayGeneration`); at 32 lines
    /// a run, that check and the run's set-up were a third of the daemon's instructions per `status` at B=512.
    private static let replaysPerClockRead = 256

    /// How long one client's pipelined lines may run before everyone else's input gets a turn.
    private static let turnBudgetNanoseconds: Int64 = 1_000_000

    /// Handles the complete lines in the input while the client keeps up with its output, for `turnBudgetNanoseconds`
    /// at most: a backlog of expensive requests (thousands of deletes) continues after the loop has polled
    /// again, so another client's `ping` waits for one slice, not for the whole backlog.
    ///
    /// The clock is read after every line that did work, and between replayed `status` lines (tens of
    /// nanoseconds each, where reading it each time was most of the work) at every 256th; the replays
    /// between two reads are one compare-and-copy run (`replayRepeats`).
    /// So a slice overruns by at most one line that did work plus 255 replays: a run of cheap replays cannot
    /// be followed by a run of expensive lines that no clock read sees (the attack on issue 18 found one of
    /// 31 creates).
    ///
    /// A reply of `sendChunk` or more (a page of a list) ends the slice too, whatever the clock says: its
    /// work was a slice's worth, and the next waits for the loop to poll (other clients, and the timers that
    /// `EventLoop` fires between handlers). Four clients pipelining 285 KB `syncups.list` pages ran several
    /// each before the loop polled; a meeting's tick came up to 0.53 s late.
    ///
    /// Output is sent whenever `sendChunk` is queued, while the batch goes on, unless the socket was full
    /// (then reading pauses at `readPauseThreshold`, and the batch goes on once the client has read).
    private func processInput(_ connection: Connection) {
        let start = loop.now()
        lineTime = start
        if connection.input.count - connection.inputStart >= Self.deepBatchInputBytes {
            connection.output.adopt(&spareOutput)
        }
        var handled = 0
        var nextClockRead = 1
        var isSocketFull = false
        var wasBigReply = false
        while connection.state.handlesInput {
            if connection.output.count >= Self.sendChunk && !isSocketFull {
                isSocketFull = !sendQueued(connection)
                if connection.isClosed { return }
                // The client has this much to read before it sends again: longer than a busy poll lasts.
                loop.skipBusyPoll()
            }
            if connection.output.count >= readPauseThreshold {
                pauseReading(connection)
                return
            }
            var isOverBudget = false
            if handled == nextClockRead {
                lineTime = loop.now()
                // In nanoseconds: Duration's arithmetic is 128-bit.
                let elapsed = lineTime.nanoseconds - start.nanoseconds
                isOverBudget = elapsed >= Self.turnBudgetNanoseconds
                nextClockRead = handled + Self.replaysPerClockRead
            }
            if (isOverBudget || wasBigReply) && connection.hasPendingLine {
                yieldTurn(connection)
                return
            }
            handled += 1
            let searchStart = connection.inputStart
            let found = connection.input.withUnsafeBytes { bytes -> Int? in
                guard let base = bytes.baseAddress, searchStart < bytes.count else { return nil }
                return memchr(base + searchStart, 0x0A, bytes.count - searchStart).map { UnsafeRawPointer($0) - base }
            }
            guard let newline = found else { break }
            var end = newline
            if end > searchStart && connection.input[end - 1] == 0x0D { end -= 1 }
            let length = end - searchStart
            connection.inputStart = newline + 1
            if length > limits.maxLineBytes {
                rejectLongLine(connection, length: length)
                return
            }
            if length > 0 {
                let queuedBefore = connection.output.count
                let wasReplayed = connection.input.withUnsafeBytes { bytes in
                    handleLine(UnsafeRawBufferPointer(rebasing: bytes[searchStart..<end]), from: connection)
                }
                wasBigReply = connection.output.count - queuedBefore >= Self.sendChunk
                if wasReplayed {
                    // The same line again up to the next clock read: nothing has run since the replay was
                    // vouched for and the clock has not moved, so its generation still holds.
                    handled += replayRepeats(connection, upTo: nextClockRead - handled)
                } else {
                    nextClockRead = handled
                }
            }
        }
        if connection.isClosed { return }
        let pending = connection.input.count - connection.inputStart
        if pending > limits.maxLineBytes {
            rejectLongLine(connection, length: pending)
            return
        }
        if connection.inputStart > 0 {
            connection.input.removeFirst(connection.inputStart)
            connection.inputStart = 0
            // A long line read once must not hold its megabyte for the connection's life: an idle
            // connection keeps at most 64 KiB (1,000 connections that each sent a 900 KiB line held 1.2 GB).
            // A new array of just the rest: `Array(input[...])` was the same storage, capacity and all (a
            // slice of a whole array converts without a copy), so 300 such connections still held 285 MB.
            if connection.input.capacity > 64 * 1024 && connection.input.count < 16 * 1024 {
                noteReleased(connection.input.capacity)
                connection.input = connection.input.withUnsafeBufferPointer { Array($0) }
            }
        }
    }

    /// Gives way to other clients for a turn: the rest of the backlog goes on once the loop has polled.
    private func yieldTurn(_ connection: Connection) {
        apply(.turnBudgetSpent, to: connection)
        loop.executeAfterPolling { [weak self, weak connection] in
            guard let self, let connection else { return }
            apply(.loopPolled, to: connection)
        }
    }

    private func rejectLongLine(_ connection: Connection, length: Int) {
        logger.throttled(
            .notice, "client.long-line", "\(connection.label) sent a line over \(limits.maxLineBytes) bytes; closing it"
        )
        drop(
            connection,
            ProtocolError(.lineTooLong, "request line longer than \(limits.maxLineBytes) bytes; closing the connection")
        )
    }

    /// After a replayed line: answers the lines right after it that are the same bytes again (each with its
    /// newline, at most `limit`) with the same reply, all appended at once; returns how many. What a status
    /// bar or a script sending `status` in a batch costs per line is then a compare and a copy.
    ///
    /// No more than fit under `readPauseThreshold`: a run is appended before the loop looks at the output
    /// again, and 256 replies of a 4.5 KB `status` (a data directory with a long path) were 1.15 MB at once,
    /// over `maxOutputBytes`, so a client that read every reply was cut off.
    private func replayRepeats(_ connection: Connection, upTo limit: Int) -> Int {
        guard let entry = replay.entry, !entry.reply.isEmpty else { return 0 }
        let limit = min(limit, (readPauseThreshold - connection.output.count) / entry.reply.count)
        guard limit > 0 else { return 0 }
        let count = entry.countRepeats(in: connection.input, from: connection.inputStart, upTo: limit)
        guard count > 0 else { return 0 }
        connection.inputStart += count * (entry.line.count + 1)
        enqueue(entry.reply, times: count, to: connection)
        return count
    }
}
