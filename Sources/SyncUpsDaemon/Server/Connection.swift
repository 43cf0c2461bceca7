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

    /// What it follows; changed only by `Subscriptions.set` (Server+Subscriptions), which keeps the per-topic
    /// counts with it.
    var topics: Set<Topic> = []
    var isSubscriber: Bool { !topics.isEmpty }

    /// The one timer that wakes `Server+Timeouts` at the state's next deadline, and when it fires.
    var deadlineTimer: EventLoop.Timer?
    var deadlineTimerAt: MonotonicInstant?
    /// Whether it reads, waits, drains or is closed, its deadlines, and what each fact about it calls for.
    var state: ConnectionState
    var isClosed: Bool { state.isClosed }
    /// Bytes received and not yet handled: complete lines, part of a line still arriving, or (after EOF) the
    /// last line, given its newline.
    var hasPendingInput: Bool { inputStart < input.count }
    /// A complete line is waiting to be handled.
    var hasPendingLine: Bool { input[inputStart...].contains(0x0A) }

    init(number: Int, fd: FileDescriptor, peer: PeerCredentials, timeouts: ConnectionState.Timeouts) {
        self.number = number
        self.fd = fd
        self.peer = peer
        self.state = ConnectionState(timeouts: timeouts)
    }

    /// For logs: `client 7 (pid 1234)`.
    var label: String { "client \(number) (pid \(peer.pid))" }
}
