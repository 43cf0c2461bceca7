import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// One client of the daemon: its socket, what it sent that is not processed yet, what it has not read yet,
/// and what it subscribed to. Owned by the `Server`, used only on the event loop.
final class Connection {
    let number: Int
    let fd: FileDescriptor
    let peer: PeerCredentials
    var watch: EventLoop.Watch?

    /// Bytes read but not yet processed; `inputStart` is where the next line begins.
    var input: [UInt8] = []
    var inputStart = 0
    var output = OutputBuffer()

    var topics: Set<Topic> = []
    var isSubscriber: Bool { !topics.isEmpty }

    /// The last time some of `output` was accepted by the socket (or it went from empty to non-empty).
    var lastProgress: MonotonicInstant
    var stallTimer: EventLoop.Timer?
    /// Since when the input has held part of a line and no newline, and the timer that closes it.
    var partialLineSince: MonotonicInstant?
    var partialLineTimer: EventLoop.Timer?
    var isReadingPaused = false
    /// Its backlog gave way to other clients for a turn (`Server.turnBudgetNanoseconds`); it goes on after the next poll.
    var isYielding = false
    /// The id of the request whose reply is being made off the loop (`ReplyBody.later`), if one is: nothing
    /// more of its input is handled until that reply is queued.
    var awaitedReplyID: JSONValue?
    var isAwaitingReply: Bool { awaitedReplyID != nil }
    /// It handles no input for now: it gave way for a turn, or waits for a reply.
    var isHeld: Bool { isYielding || isAwaitingReply }
    /// Queued in the server's list of connections to send to on the loop's next turn.
    var isFlushPending = false
    /// Must be dropped once its output is sent (after `line_too_long`, `request_timeout`).
    var closesWhenFlushed = false
    /// The client closed its sending side: no more requests. The connection ends once every line it sent
    /// is answered, unless it is a subscriber (`echo subscribe | socat …` keeps following events).
    var isInputClosed = false
    /// Bytes received and not yet handled (complete lines, after EOF).
    var hasPendingInput: Bool { inputStart < input.count }
    /// A complete line is waiting to be handled.
    var hasPendingLine: Bool { input[inputStart...].contains(0x0A) }
    /// Nothing more will be read or answered: close once the output is sent.
    var isDone: Bool {
        !isAwaitingReply && (closesWhenFlushed || (isInputClosed && !hasPendingInput && !isSubscriber))
    }
    var isClosed = false

    init(number: Int, fd: FileDescriptor, peer: PeerCredentials, now: MonotonicInstant) {
        self.number = number
        self.fd = fd
        self.peer = peer
        self.lastProgress = now
    }

    /// For logs: `client 7 (pid 1234)`.
    var label: String { "client \(number) (pid \(peer.pid))" }
}
