import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// How the state and the session publish an event: the payload is built only when someone wants it, a client
/// subscribed to the topic or the desktop's surfaces for the few events they show (a meeting publishes its
/// whole session every second, usually to nobody).
typealias PublishEvent = (_ topic: Topic, _ name: String, _ data: () -> JSONValue) -> Void

/// Accepts clients on the Unix socket, reads their request lines, writes replies and events without ever
/// blocking on a client, and closes clients that stop reading.
///
/// All on the event loop's thread, and run to completion: each input (a client's readable socket, a timer, a
/// mailbox message) is handled whole before the next, and nothing here runs another client's input from
/// inside a handler. `publish` only encodes the event once and queues it; the subscribers' sockets are
/// written with the loop's deferred work (`EventLoop.execute`: at the end of this turn, or after a timer
/// that fires between two handlers; an event published by deferred work itself, such as a resumed reader's
/// lines, at the end of the next turn, after a poll that does not wait), and a client whose
/// reading was paused for unread output resumes from the loop too, never from inside a send. So events reach
/// every subscriber in `seq` order, and each after the change it describes. A request is answered before the
/// next line of the same client is read, so replies come in request order; an event published while handling
/// a request is queued before that request's reply, on the requester's connection too: a subscribed client
/// reads `syncup.created` before the reply to its own `syncups.create`.
///
/// One file per concern, as MPD's `src/client/`: this one holds the state and performs what a connection's
/// `ConnectionState` decides; `Server+Accept` (the listener, admission), `Server+Read` (reading, framing, the
/// turn budget), `Server+Process` (the one decode path: a line to its reply), `Server+LaterReplies` (replies
/// made off the loop: the reply thread, the mailbox back, `ReplyJob`), `Server+Write` (sending, pausing),
/// `Server+Close` (closing, cutting off at the output limit, dropping after an error line), `Server+Timeouts`
/// (one timer per connection at its state's next deadline), `Server+Subscriptions` (topics, `publish`),
/// `ReplayCache`. MPD's files map so: Read.cxx → `+Read`, Process.cxx → `+Process`, Write.cxx → `+Write`,
/// Expire.cxx → `+Close` (`cutOffIfOverOutputLimit`, its `SetExpired`) and `+Timeouts` (its timeout),
/// Idle.cxx and Subscribe.cxx → `+Subscriptions`, ThreadBackgroundCommand → `+LaterReplies`.
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
    /// without its being decoded, run and encoded again (`ReplayCache`).
    var replayGeneration: (Request) -> Int? = { _ in nil }
    /// The greeting's `version`.
    let version: String

    var listener: FileDescriptor?
    /// Watches `listener`, and pauses accepting while the process is out of descriptors.
    var listenerGate: ListenerGate?
    var connections: [Int: Connection] = [:]
    var nextNumber = 1
    let ownUID = geteuid()
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// Who subscribes to what, and the events' numbering (`Server+Subscriptions`).
    var subscriptions = Subscriptions()
    /// How many connections subscribe to anything.
    var subscriberCount: Int { subscriptions.subscriberCount }
    /// The number of the last event published; strictly increasing for the daemon's lifetime.
    var seq: Int { subscriptions.seq }
    /// Connections with output queued by `publish`, sent at the end of the loop's turn, by number.
    var pendingFlush: [Int: Connection] = [:]

    /// The last `status`-like reply, replayed for the same line while its generation holds.
    var replay = ReplayCache()
    /// About when the request line being handled was taken from its client's input (`status`'s uptime):
    /// `processInput` reads the clock at a batch's start and then once every `replaysPerClockRead` lines.
    var lineTime = MonotonicInstant.now()

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
    static let deepBatchInputBytes = 2048
    /// The one big output buffer no connection uses now (`OutputBuffer.releaseCapacity(into:)`).
    var spareOutput = OutputBuffer()
    /// Where a reply that is not a replay is encoded, then copied to the connection's output (and kept as
    /// the replay's reply when it may be replayed). One copy of a reply that took thousands of instructions
    /// to make; a replayed reply, the cheap and frequent kind, is one copy from the replay.
    var replyScratch: [UInt8] = []
    /// Its capacity: with every connection's, what the server holds for output between batches.
    var spareOutputCapacity: Int { spareOutput.capacity }
    /// How many `send` calls the server has made to clients (for tests: how many writes a batch took).
    var sendCalls = 0
    /// How many times a connection's reading was paused for its unsent output (for tests).
    var readPauses = 0
    /// Buffer bytes given back to the allocator since the heap was last trimmed, and the pending trim.
    var releasedBytes = 0
    var heapTrim: EventLoop.Timer?
    /// How many times the heap was trimmed (for tests).
    var heapTrims = 0
    /// The thread that makes replies needing blocking work (`ReplyBody.later`), and the way back for them and
    /// for replies another worker completes (`ReplyBody.awaited`).
    var replyWorker: SerialWorker?
    var laterReplyMailbox: Mailbox<LaterReply>?
    var laterReplyWatch: EventLoop.Watch?
    /// Called on the reply thread each time a reply being made asks whether it is still wanted (a details
    /// read, at each chunk and page): tests hold a read there.
    var laterReplyCheckpoint: (@Sendable () -> Void)?
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

    // MARK: - Facts about a connection

    /// The action `transition` (of the connection's state, on `fact`) calls for; nil for an impossible one, a
    /// bug here: it is logged, stops a debug build, and changed nothing.
    func action<Action>(
        _ transition: ConnectionState.Transition<Action>, on connection: Connection,
        after fact: @autoclosure () -> String
    ) -> Action? {
        switch transition {
        case .move(_, let action), .ignore(let action):
            return action
        case .impossible:
            let message = "\(connection.label): \(fact()) cannot happen while \(connection.state.phase); ignored"
            logger.error(message)
            assertionFailure(message)
            return nil
        }
    }

    /// Applies `fact` to the connection's state and performs the action it calls for.
    func apply(_ fact: ConnectionState.Fact, to connection: Connection) {
        guard let action = action(connection.state.apply(fact), on: connection, after: "\(fact)") else { return }
        perform(action, on: connection)
    }

    /// Performs what a fact called for.
    private func perform(_ action: ConnectionState.Action, on connection: Connection) {
        switch action {
        case .none:
            break
        case .updateInterest:
            updateInterest(connection)
        case .resumeInput:
            updateInterest(connection)
            handleInputAtEndOfTurn(connection)
        case .handleInput:
            processInputAndFlush(connection)
        case .closeOnItsTurn(let job):
            job?.cancel()
            closeAtEndOfTurn(connection)
        case .release(let job):
            job?.cancel()
            release(connection)
        case .finishInput(let job):
            job?.cancel()
            finishInput(connection)
        }
    }

    /// Counts buffer bytes given back to the allocator; schedules a heap trim once there are enough.
    func noteReleased(_ bytes: Int) {
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
        publish(.daemon, EventName.daemonStopping, ["reason": .string(reason)])
        stopAccepting()
        if let laterReplyWatch { loop.unwatch(laterReplyWatch) }
        laterReplyWatch = nil
        for connection in Array(connections.values) {
            flush(connection)
            if !connection.isClosed { discardUnreadInput(connection) }
            close(connection, reason: nil)
        }
    }
}
