import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// How the state and the session publish an event: the payload is built only if a client subscribes to
/// the topic (a meeting publishes its whole session every second, usually to nobody).
typealias PublishEvent = (_ topic: Topic, _ name: String, _ data: () -> JSONValue) -> Void

/// Accepts clients on the Unix socket, reads their request lines, writes replies and events without ever
/// blocking on a client, and cuts off clients that stop reading.
///
/// All on the event loop's thread, and run to completion: each input (a client's readable socket, a timer,
/// a mailbox message) is handled whole before the next, and nothing here runs another client's input from
/// inside a handler. `publish` only encodes the event once and queues it; the subscribers' sockets are
/// written on the loop's next turn (`EventLoop.execute`), and a client whose reading was paused for unread
/// output resumes from the loop too, never from inside a send. So events reach every subscriber in `seq`
/// order, and each after the change it describes. A request is answered before the next line of the same
/// client is read, so replies come in request order; an event published while handling a request is queued
/// before that request's reply, on the requester's connection too: a subscribed client reads
/// `syncup.created` before the reply to its own `syncups.create`.
final class Server {
    /// What the daemon answers a request with.
    typealias Handler = (Request, Connection) -> Result<ReplyBody, ProtocolError>

    let loop: EventLoop
    let limits: Limits
    let logger: Logger
    var handler: Handler = { _, _ in .failure(ProtocolError(.internalError, "the daemon is starting")) }
    /// For a request whose reply depends on nothing but the daemon's state (not on the connection), a number
    /// that changes whenever anything the reply says changes; nil for every other request. Lets a request
    /// line repeated byte for byte (a status bar's, a script's `status` in a loop) get the same reply again
    /// without its being decoded, run and encoded again (`replay`).
    var replayGeneration: (Request) -> Int? = { _ in nil }
    /// The greeting's `version`.
    let version: String

    private var listener: FileDescriptor?
    /// Watches `listener`, and pauses accepting while the process is out of descriptors.
    private var listenerGate: ListenerGate?
    private(set) var connections: [Int: Connection] = [:]
    private var nextNumber = 1
    private(set) var subscriberCount = 0
    /// How many connections subscribe to each topic.
    private var topicSubscriberCounts: [Topic: Int] = [:]
    /// The number of the last event published; strictly increasing for the daemon's lifetime.
    private(set) var seq = 0
    private let ownUID = geteuid()
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// The last request line `replayGeneration` vouched for, its whole reply line, and the generation then.
    private final class Replay {
        let line: [UInt8]
        let request: Request
        let generation: Int
        let reply: [UInt8]

        init(line: [UInt8], request: Request, generation: Int, reply: [UInt8]) {
            self.line = line
            self.request = request
            self.generation = generation
            self.reply = reply
        }

        func matches(_ other: UnsafeRawBufferPointer) -> Bool {
            line.count == other.count
                && line.withUnsafeBytes { memcmp($0.baseAddress!, other.baseAddress!, other.count) == 0 }
        }
    }
    private var replay: Replay?
    /// When the request line being handled was taken from its client's input: the clock is read once per line.
    private(set) var lineTime = MonotonicInstant.now()
    /// Connections with output queued by `publish`, sent on the loop's next turn.
    private var pendingFlush: [Connection] = []

    /// Reading from a client pauses while this much of its output is unsent, so a client that pipelines
    /// requests without reading replies cannot make the daemon buffer without bound; it resumes once the
    /// client has read it down to half.
    let readPauseThreshold: Int
    /// The default `readPauseThreshold`: under the 208 KiB a Unix socket's send buffer holds by default
    /// (`net.core.wmem_default`), so a socket the client has drained takes all of it in one `send`. At
    /// 256 KiB a deep batch filled the socket at every pause and waited for `EPOLLOUT` each time.
    static let defaultReadPauseThreshold = 192 * 1024
    /// While a batch runs, its output is sent whenever this much is queued: the client reads the first
    /// replies while the rest are encoded. Large, because every `send` wakes the client (at 32 KiB the sends
    /// of a 4,096-line batch cost more than the batch's own work).
    static let sendChunk = 128 * 1024
    /// An empty output buffer takes the spare (`OutputBuffer.adopt`) when this much input waits: a batch of
    /// about 100 `status` lines and more.
    private static let deepBatchInputBytes = 2048
    /// The one big output buffer no connection uses now (`OutputBuffer.releaseCapacity(into:)`).
    private var spareOutput = OutputBuffer()
    /// Where a reply that is not a replay is encoded, then copied to the connection's output (and kept as
    /// the replay's reply when it may be replayed). One copy of a reply that took thousands of instructions
    /// to make; a replayed reply, the cheap and frequent kind, is one copy from the replay.
    private var replyScratch: [UInt8] = []
    /// Its capacity: with every connection's, what the server holds for output between batches.
    var spareOutputCapacity: Int { spareOutput.capacity }
    /// How many `send` calls the server has made to clients (for tests: how many writes a batch took).
    private(set) var sendCalls = 0
    /// How many times a connection's reading was paused for its unsent output (for tests).
    private(set) var readPauses = 0
    /// Buffer bytes given back to the allocator since the heap was last trimmed, and the pending trim.
    private var releasedBytes = 0
    private var heapTrim: EventLoop.Timer?
    /// How many times the heap was trimmed (for tests).
    private(set) var heapTrims = 0
    /// The thread that makes replies needing blocking work (`ReplyBody.later`), and the way back.
    private var laterReplies: (SerialWorker, Mailbox<LaterReply>)?
    private var laterReplyWatch: EventLoop.Watch?
    /// Freed buffers under glibc's mmap threshold (128 KiB, `Memory.mapLargeBlocksSeparately`) stay in the
    /// heap, resident: 500 connections that had each pipelined 1,500 `status` lines without reading held
    /// 91 MB once idle, 34 MB after `malloc_trim`. So once this much was freed, the heap is trimmed a second
    /// later (one trim for a whole burst of connections finishing their batches).
    static let trimAfterReleasedBytes = 4 * 1024 * 1024

    init(
        loop: EventLoop, limits: Limits, version: String, logger: Logger,
        readPauseThreshold: Int = Server.defaultReadPauseThreshold
    ) {
        self.loop = loop
        self.limits = limits
        self.readPauseThreshold = readPauseThreshold
        self.version = version
        self.logger = logger
    }

    // MARK: - Accepting

    /// Starts accepting on `listener`, a listening, non-blocking Unix stream socket.
    func start(listener: FileDescriptor) throws(SystemError) {
        self.listener = listener
        listenerGate = try ListenerGate(loop: loop, listener: listener) { [unowned self] in acceptPending() }
    }

    private func acceptPending() {
        guard let listener else { return }
        while true {
            let fd: FileDescriptor
            do {
                guard let accepted = try UnixSocket.accept(listener) else { return }
                fd = accepted
            } catch {
                // The listener stays readable: retrying at once would spin.
                guard let listenerGate else { return }
                if ListenerGate.isShortage(error) {
                    let refused = listenerGate.pause { self.refuse($0, Self.outOfDescriptors) }
                    logger.throttled(
                        .warning, "accept.descriptors",
                        "out of file descriptors (\(error)): \(refused ? "refused a connection, " : "")\(listenerGate.refusals) refused so far; accepting again when a connection closes"
                    )
                } else {
                    _ = listenerGate.pause(refusingWith: nil)
                    logger.throttled(.warning, "accept", "accepting a connection failed: \(error)")
                }
                return
            }
            if let refused = listenerGate?.acceptedAfterShortage() {
                logger.notice("accepting connections again, after refusing \(refused) for want of file descriptors")
            }
            admit(fd)
        }
    }

    static let outOfDescriptors = ProtocolError(
        .tooManyConnections, "syncupsd is out of file descriptors; try again once other clients have left")

    /// Adds a connection on `fd` as if accepted (the in-process daemon's client end of a socket pair).
    func adopt(_ fd: FileDescriptor) -> Connection? {
        let connection = Connection(
            number: nextNumber, fd: fd, peer: PeerCredentials(pid: getpid(), uid: ownUID, gid: getegid()),
            now: loop.now())
        nextNumber += 1
        guard
            let watch = try? loop.watch(
                fd, for: .readable,
                handler: { [unowned self, unowned connection] events in
                    handleEvents(events, on: connection)
                })
        else { return nil }
        connection.watch = watch
        connections[connection.number] = connection
        return connection
    }

    private func admit(_ fd: FileDescriptor) {
        guard let peer = try? UnixSocket.peerCredentials(fd) else {
            fd.close()
            return
        }
        if peer.uid != ownUID {
            logger.throttled(
                .warning, "accept.uid",
                "refused a connection from uid \(peer.uid) (pid \(peer.pid)): only uid \(ownUID) may connect")
            refuse(fd, ProtocolError(.permissionDenied, "only the user running syncupsd (uid \(ownUID)) may connect"))
            return
        }
        if connections.count >= limits.maxConnections {
            logger.throttled(
                .warning, "accept.limit",
                "refused a connection from pid \(peer.pid): already \(connections.count) connections")
            let count = limits.maxConnections
            refuse(
                fd,
                ProtocolError(
                    .tooManyConnections, "the daemon already serves \(count) connection\(count == 1 ? "" : "s")"))
            return
        }
        let connection = Connection(number: nextNumber, fd: fd, peer: peer, now: loop.now())
        nextNumber += 1
        do {
            connection.watch = try loop.watch(fd, for: .readable) { [unowned self, unowned connection] events in
                handleEvents(events, on: connection)
            }
        } catch {
            logger.throttled(.warning, "accept.watch", "cannot watch a new connection: \(error)")
            fd.close()
            return
        }
        connections[connection.number] = connection
        logger.debug("\(connection.label) connected")
        let hello: JSONValue = [
            "protocol": .int(Wire.protocolVersion),
            "version": .string(version),
            "limits": limits.json,
        ]
        enqueue(Wire.event("hello", seq: nil, data: hello), to: connection)
        flush(connection)
    }

    /// Sends one error line to a connection that is not admitted, without waiting, and closes it.
    private func refuse(_ fd: FileDescriptor, _ error: ProtocolError) {
        let line = Wire.failure(id: .null, error: error)
        _ = line.withUnsafeBytes { try? UnixSocket.send(fd, $0) }
        fd.close()
    }

    // MARK: - Reading

    private func handleEvents(_ events: IOEvents, on connection: Connection) {
        // `.hangup` is several bits; any of them means it.
        let hungUp = !events.isDisjoint(with: .hangup)
        if events.contains(.writable) || hungUp { flush(connection) }
        if connection.isClosed { return }
        if hungUp && connection.isAwaitingReply {
            // Gone while its reply is being made: nobody is left to read it (and the hang-up would be
            // reported on every turn until then).
            close(connection, reason: nil)
            return
        }
        if hungUp && connection.isInputClosed {
            // Both directions are shut: a half-closed subscriber has gone away.
            close(connection, reason: nil)
            return
        }
        if events.contains(.readable) || hungUp { read(connection) }
    }

    private func read(_ connection: Connection) {
        guard !connection.isReadingPaused, !connection.isHeld, !connection.closesWhenFlushed,
            !connection.isInputClosed
        else { return }
        let read = readBuffer.withUnsafeMutableBytes { buffer in
            Result { () throws(SystemError) in try connection.fd.readAvailable(into: buffer) }
        }
        let count: Int
        switch read {
        case .success(let available?): count = available
        case .success(nil): return
        case .failure(let error):
            close(connection, reason: "read failed: \(error.errno)")
            return
        }
        if count == 0 {
            // End of input: answer what was sent (even a last line without "\n"), then close (`isDone`).
            if connection.hasPendingInput { connection.input.append(0x0A) }
            connection.isInputClosed = true
            processInput(connection)
            watchPartialLine(connection)
            flush(connection)
            return
        }
        connection.input.append(contentsOf: readBuffer[0..<count])
        processInput(connection)
        watchPartialLine(connection)
        flush(connection)
    }

    /// Arms the partial-line timeout while the input holds part of a line and nothing else; a complete line
    /// disarms it. (Complete lines waiting behind a paused reader are the daemon's wait, not the client's.)
    private func watchPartialLine(_ connection: Connection) {
        let isPartial =
            !connection.isClosed && !connection.isReadingPaused && !connection.isHeld && !connection.isInputClosed
            && connection.hasPendingInput
        guard isPartial else {
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
            logger.throttled(
                .notice, "client.partial",
                "\(connection.label) left a request line incomplete for \(timeout) s; closing it")
            drop(
                connection,
                ProtocolError(
                    .requestTimeout, "a request line stayed incomplete for \(timeout) seconds; closing the connection"))
        }
    }

    /// How many replayed lines may pass between two clock reads: a run of them costs about 25 µs (a compare
    /// and a copy each). Each read also re-checks the replay's generation (`replayGeneration`); at 32 lines
    /// a run, that check and the run's set-up were a third of the daemon's instructions per `status` at B=512.
    private static let replaysPerClockRead = 256

    /// How long one client's pipelined lines may run before everyone else's input gets a turn.
    private let turnBudgetNanoseconds: Int64 = 1_000_000

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
        while !connection.isClosed && !connection.isAwaitingReply {
            if connection.output.count >= Self.sendChunk && !isSocketFull {
                isSocketFull = !sendQueued(connection)
                if connection.isClosed { return }
                // The client has this much to read before it sends again: longer than a busy poll lasts.
                loop.skipBusyPoll()
            }
            if connection.output.count >= readPauseThreshold {
                pauseReading(connection, true)
                return
            }
            var isOverBudget = false
            if handled == nextClockRead {
                lineTime = loop.now()
                // In nanoseconds: Duration's arithmetic is 128-bit.
                let elapsed = lineTime.nanoseconds - start.nanoseconds
                isOverBudget = elapsed >= turnBudgetNanoseconds
                nextClockRead = handled + Self.replaysPerClockRead
            }
            if isOverBudget && connection.hasPendingLine {
                connection.isYielding = true
                updateInterest(connection)
                loop.executeAfterPolling { [weak self, weak connection] in
                    guard let self, let connection, !connection.isClosed else { return }
                    connection.isYielding = false
                    processInput(connection)
                    watchPartialLine(connection)
                    flush(connection)
                }
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
                let wasReplayed = connection.input.withUnsafeBytes { bytes in
                    handleLine(UnsafeRawBufferPointer(rebasing: bytes[searchStart..<end]), from: connection)
                }
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
        pauseReading(connection, false)
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

    /// Sends one error line (id null) and closes the connection once it is sent; what it sent is dropped.
    private func drop(_ connection: Connection, _ error: ProtocolError) {
        enqueue(Wire.failure(id: .null, error: error), to: connection)
        connection.input = []
        connection.inputStart = 0
        connection.closesWhenFlushed = true
        flush(connection)
    }

    /// Answers one line; returns whether it was a replay (no work done).
    @discardableResult
    private func handleLine(_ line: UnsafeRawBufferPointer, from connection: Connection) -> Bool {
        if let replay, replay.matches(line), replayGeneration(replay.request) == replay.generation {
            if connection.output.isEmpty { connection.lastProgress = loop.now() }
            connection.output.append(replay.reply)
            checkOutputLimit(connection)
            return true
        }
        // The handler runs first: it may queue events to this very connection (the change it made, when the
        // client is subscribed) before its reply.
        let request: Request?
        let id: JSONValue
        let outcome: Result<ReplyBody, ProtocolError>
        switch Request.decode(line) {
        case .failure(let failure): (request, id, outcome) = (nil, failure.id, .failure(failure.error))
        case .success(let decoded): (request, id, outcome) = (decoded, decoded.id, handler(decoded, connection))
        }
        guard !connection.isClosed else { return false }
        if case .success(.later(let work)) = outcome {
            awaitReply(id: id, work: work, on: connection)
            return false
        }
        if connection.output.isEmpty { connection.lastProgress = loop.now() }
        replyScratch.removeAll(keepingCapacity: true)
        appendReply(id: id, outcome: outcome, to: &replyScratch)
        connection.output.append(replyScratch)
        if let request, case .success = outcome, let generation = replayGeneration(request) {
            // The replay shares the scratch's storage; the next reply's encoding gets storage of its own.
            replay = Replay(line: Array(line), request: request, generation: generation, reply: replyScratch)
        }
        if replyScratch.capacity > OutputBuffer.keptCapacity {
            replyScratch = []  // a big page's reply does not stay
        }
        checkOutputLimit(connection)
        return false
    }

    /// After a replayed line: answers the lines right after it that are the same bytes again (each with its
    /// newline, at most `limit`) with the same reply, all appended at once; returns how many. What a status
    /// bar or a script sending `status` in a batch costs per line is then a compare and a copy.
    ///
    /// No more than fit under `readPauseThreshold`: a run is appended before the loop looks at the output
    /// again, and 256 replies of a 4.5 KB `status` (a data directory with a long path) were 1.15 MB at once,
    /// over `maxOutputBytes`, so a client that read every reply was cut off.
    private func replayRepeats(_ connection: Connection, upTo limit: Int) -> Int {
        guard let replay, !replay.reply.isEmpty else { return 0 }
        let limit = min(limit, (readPauseThreshold - connection.output.count) / replay.reply.count)
        guard limit > 0 else { return 0 }
        let line = replay.line
        let length = line.count
        let start = connection.inputStart
        let (end, count) = connection.input.withUnsafeBytes { input in
            line.withUnsafeBytes { line in
                var offset = start
                var count = 0
                while count < limit, input.count - offset > length, input[offset + length] == 0x0A,
                    memcmp(input.baseAddress! + offset, line.baseAddress!, length) == 0
                {
                    offset += length + 1
                    count += 1
                }
                return (offset, count)
            }
        }
        guard count > 0 else { return 0 }
        connection.inputStart = end
        connection.output.append(replay.reply, times: count)
        checkOutputLimit(connection)
        return count
    }

    private func checkOutputLimit(_ connection: Connection) {
        if connection.output.count > limits.maxOutputBytes {
            close(
                connection,
                reason:
                    "it has \(connection.output.count) bytes of output unread, over the \(limits.maxOutputBytes)-byte limit"
            )
        }
    }

    /// The reply line (with its newline) to one request line.
    func reply(to line: UnsafeRawBufferPointer, from connection: Connection) -> [UInt8] {
        lineTime = loop.now()
        var (id, outcome) = handle(line, from: connection)
        if case .success(.later(let work)) = outcome { outcome = work() }  // in process: the caller waits
        var reply: [UInt8] = []
        appendReply(id: id, outcome: outcome, to: &reply)
        return reply
    }

    /// Decodes a request line and runs it: the id to answer to and the outcome.
    private func handle(_ line: UnsafeRawBufferPointer, from connection: Connection)
        -> (JSONValue, Result<ReplyBody, ProtocolError>)
    {
        switch Request.decode(line) {
        case .failure(let failure): (failure.id, .failure(failure.error))
        case .success(let request): (request.id, handler(request, connection))
        }
    }

    private func appendReply(id: JSONValue, outcome: Result<ReplyBody, ProtocolError>, to bytes: inout [UInt8]) {
        let start = bytes.count
        switch outcome {
        case .success(.value(let result)): Wire.appendSuccess(id: id, result: result, to: &bytes)
        case .success(.encoded(let result)): Wire.appendSuccess(id: id, encodedResult: result, to: &bytes)
        case .success(.later):
            let error = ProtocolError(.internalError, "the reply was to be made later once more")
            Wire.appendFailure(id: id, error: error, to: &bytes)
            return
        case .failure(let error):
            Wire.appendFailure(id: id, error: error, to: &bytes)
            return
        }
        let size = bytes.count - start
        if size > limits.maxReplyBytes {
            bytes.removeSubrange(start...)
            let error = ProtocolError(
                .internalError,
                "the reply would be \(size) bytes, over the \(limits.maxReplyBytes)-byte limit; ask for a smaller page"
            )
            Wire.appendFailure(id: id, error: error, to: &bytes)
        }
    }

    // MARK: - Replies made off the loop

    /// A reply made on the `syncups-reply` thread, for the connection numbered `connection`.
    private struct LaterReply: Sendable {
        var connection: Int
        var outcome: Result<ReplyBody, ProtocolError>
    }

    /// Runs `work` on the reply thread; the connection handles nothing more until its reply is queued
    /// (`answer`). Jobs run one at a time, so two clients reading large files hold one in memory, not two.
    private func awaitReply(
        id: JSONValue, work: @escaping @Sendable () -> Result<ReplyBody, ProtocolError>, on connection: Connection
    ) {
        connection.awaitedReplyID = id
        let number = connection.number
        let queued = replyThread().map { worker, mailbox in
            worker.tryRun { mailbox.post(LaterReply(connection: number, outcome: work())) }
        }
        switch queued {
        case true?:
            updateInterest(connection)
        case false?:
            connection.awaitedReplyID = nil
            queueReply(
                id: id, outcome: .failure(ProtocolError(.internalError, "too many replies are being made; try again")),
                to: connection)
        case nil:
            connection.awaitedReplyID = nil
            queueReply(id: id, outcome: work(), to: connection)  // no thread to be had: here, then
        }
    }

    /// The reply thread and its mailbox, started with the first reply made off the loop; nil if that fails.
    private func replyThread() -> (SerialWorker, Mailbox<LaterReply>)? {
        if let laterReplies { return laterReplies }
        do throws(SystemError) {
            let mailbox = try Mailbox<LaterReply>(capacity: 64)
            let worker = try SerialWorker(name: "syncups-reply", capacity: 1024)
            laterReplyWatch = try mailbox.attach(to: loop) { [unowned self] in $0.forEach(answer) }
            laterReplies = (worker, mailbox)
            return laterReplies
        } catch {
            logger.error("cannot start the syncups-reply thread: \(error); making replies on the event loop")
            return nil
        }
    }

    /// Queues a reply made off the loop and lets its connection go on with the lines it sent meanwhile (on
    /// the loop's next turn, as a reader resumes). A connection closed meanwhile gets nothing.
    private func answer(_ later: LaterReply) {
        guard let connection = connections[later.connection], !connection.isClosed,
            let id = connection.awaitedReplyID
        else { return }
        connection.awaitedReplyID = nil
        queueReply(id: id, outcome: later.outcome, to: connection)
        flush(connection)
        if !connection.isClosed && !connection.isReadingPaused { resumeReading(connection) }
    }

    private func queueReply(id: JSONValue, outcome: Result<ReplyBody, ProtocolError>, to connection: Connection) {
        if connection.output.isEmpty { connection.lastProgress = loop.now() }
        var reply: [UInt8] = []
        appendReply(id: id, outcome: outcome, to: &reply)
        connection.output.append(reply)
        checkOutputLimit(connection)
    }

    private func pauseReading(_ connection: Connection, _ isPaused: Bool) {
        guard connection.isReadingPaused != isPaused else { return }
        connection.isReadingPaused = isPaused
        if isPaused { readPauses += 1 }
        updateInterest(connection)
    }

    // MARK: - Writing

    /// Queues bytes for a client; one whose unsent output passes the limit is cut off.
    private func enqueue(_ bytes: [UInt8], to connection: Connection) {
        guard !connection.isClosed else { return }
        if connection.output.count + bytes.count > limits.maxOutputBytes {
            close(
                connection,
                reason:
                    "it has \(connection.output.count) bytes of output unread, over the \(limits.maxOutputBytes)-byte limit"
            )
            return
        }
        if connection.output.isEmpty { connection.lastProgress = loop.now() }
        connection.output.append(bytes)
    }

    /// Sends what the socket takes now; arranges to be called again when it takes more. Never handles input:
    /// a paused reader that has caught up resumes on the loop's next turn.
    func flush(_ connection: Connection) {
        guard !connection.isClosed else { return }
        sendQueued(connection)
        if connection.isClosed { return }
        if connection.output.isEmpty {
            // Not in `sendQueued`, nor while reading is paused: a batch that sends as it goes, or that waited
            // for its client to read, keeps its buffer until it is done. (Given up at a pause, the rest of the
            // batch grew a new buffer, which the idle connection then kept.)
            if !connection.isReadingPaused && !connection.isHeld {
                noteReleased(connection.output.releaseCapacity(into: &spareOutput))
            }
            if let timer = connection.stallTimer {
                loop.cancel(timer)
                connection.stallTimer = nil
            }
            if connection.isDone {
                close(connection, reason: nil)
                return
            }
        } else if connection.stallTimer == nil {
            scheduleStallCheck(connection)
        }
        if connection.isReadingPaused && !connection.isHeld && connection.output.count <= readPauseThreshold / 2 {
            resumeReading(connection)
        }
        updateInterest(connection)
    }

    /// Sends what the socket takes now, nothing else: no timers, no interest. Returns false when the socket
    /// is full (output remains) or the connection was closed on an error.
    @discardableResult
    private func sendQueued(_ connection: Connection) -> Bool {
        while !connection.output.isEmpty {
            let sent: Int
            do {
                sendCalls += 1
                sent = try connection.output.send(to: connection.fd)
            } catch {
                close(
                    connection,
                    reason: error.errno == .brokenPipe || error.errno == .connectionReset
                        ? nil : "send failed: \(error)")
                return false
            }
            if sent == 0 { return false }
            connection.lastProgress = loop.now()
        }
        return true
    }

    /// Lets a paused connection read again, and handles the lines it already sent on the loop's next turn
    /// (the socket may never become readable again: they are in our buffer, not the kernel's).
    private func resumeReading(_ connection: Connection) {
        pauseReading(connection, false)
        loop.execute { [weak self, weak connection] in
            guard let self, let connection, !connection.isClosed, !connection.isReadingPaused, !connection.isHeld
            else { return }
            processInput(connection)
            watchPartialLine(connection)
            flush(connection)
        }
    }

    /// Sends every subscriber the events queued for it during this turn.
    private func flushPending() {
        let connections = pendingFlush
        pendingFlush.removeAll(keepingCapacity: true)
        for connection in connections {
            connection.isFlushPending = false
            flush(connection)
        }
    }

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

    private func updateInterest(_ connection: Connection) {
        guard let watch = connection.watch, !connection.isClosed else { return }
        var events: IOEvents = []
        if !connection.isReadingPaused && !connection.isHeld && !connection.closesWhenFlushed
            && !connection.isInputClosed
        {
            events.insert(.readable)
        }
        if !connection.output.isEmpty {
            events.insert(.writable)
            loop.skipBusyPoll()
        }
        loop.modify(watch, for: events)
    }

    // MARK: - Events

    /// Publishes an event to every client subscribed to `topic`, numbered with the next `seq`. The line is
    /// encoded once and queued to every subscriber; the sockets are written on the loop's next turn, so
    /// publishing never runs anything of another client's.
    func publish(_ topic: Topic, _ name: String, _ data: @autoclosure () -> JSONValue) {
        seq += 1
        guard topicSubscriberCounts[topic, default: 0] > 0 else { return }
        let line = Wire.event(name, seq: seq, data: data())
        for connection in connections.values where connection.topics.contains(topic) {
            enqueue(line, to: connection)
            guard !connection.isClosed, !connection.isFlushPending else { continue }
            connection.isFlushPending = true
            if pendingFlush.isEmpty { loop.execute { [weak self] in self?.flushPending() } }
            pendingFlush.append(connection)
        }
    }

    /// Changes what `connection` is subscribed to.
    func setTopics(_ topics: Set<Topic>, for connection: Connection) throws(ProtocolError) {
        if !connection.isSubscriber && !topics.isEmpty {
            guard subscriberCount < limits.maxSubscribers else {
                throw ProtocolError(
                    .tooManySubscriptions, "the daemon already has \(limits.maxSubscribers) subscribers")
            }
            subscriberCount += 1
        } else if connection.isSubscriber && topics.isEmpty {
            subscriberCount -= 1
        }
        for topic in connection.topics { topicSubscriberCounts[topic, default: 0] -= 1 }
        for topic in topics { topicSubscriberCounts[topic, default: 0] += 1 }
        connection.topics = topics
    }

    // MARK: - Closing

    func close(_ connection: Connection, reason: String?) {
        guard !connection.isClosed else { return }
        connection.isClosed = true
        if let reason {
            logger.throttled(.notice, "client.closed", "closing \(connection.label): \(reason)")
        } else {
            logger.debug("\(connection.label) disconnected")
        }
        if let watch = connection.watch { loop.unwatch(watch) }
        if let timer = connection.stallTimer { loop.cancel(timer) }
        if let timer = connection.partialLineTimer { loop.cancel(timer) }
        if connection.isSubscriber { subscriberCount -= 1 }
        for topic in connection.topics { topicSubscriberCounts[topic, default: 0] -= 1 }
        connection.fd.close()
        listenerGate?.resume()  // a descriptor is free: accept again if short of them
        connections[connection.number] = nil
        noteReleased(connection.input.capacity + connection.output.capacity)
    }

    /// Counts buffer bytes given back to the allocator; schedules a heap trim once there are enough.
    private func noteReleased(_ bytes: Int) {
        releasedBytes += bytes
        guard releasedBytes >= Self.trimAfterReleasedBytes, heapTrim == nil else { return }
        heapTrim = loop.schedule(after: .seconds(1)) { [unowned self] in
            heapTrim = nil
            releasedBytes = 0
            heapTrims += 1
            Memory.releaseFreePages()
        }
    }

    /// Tells subscribers the daemon is stopping, gives every client one last non-blocking send, and closes
    /// everything, listener included.
    func shutDown(reason: String) {
        publish(.daemon, "daemon.stopping", ["reason": .string(reason)])
        listenerGate?.close()
        listenerGate = nil
        if let laterReplyWatch { loop.unwatch(laterReplyWatch) }
        laterReplyWatch = nil
        listener?.close()
        listener = nil
        for connection in Array(connections.values) {
            flush(connection)
            close(connection, reason: nil)
        }
    }
}
