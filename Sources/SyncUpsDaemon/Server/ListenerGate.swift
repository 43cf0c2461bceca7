import Glibc
import SyncUpsPOSIX

/// Watches the listening socket, and stops watching it for a while when accepting fails.
///
/// Out of descriptors (EMFILE, ENFILE), `accept4` fails and leaves the connection waiting, so the listener
/// stays readable: retrying at once spun the loop (1.6 million failed calls in 3 s, each logged). Instead,
/// the one spare descriptor held for this is given up to take the waiting connection and refuse it with an
/// error line (the client learns why at once; `refusals` counts them), and the listener leaves epoll until a
/// connection closes (`resume`) or `retryDelay` passes (a descriptor freed elsewhere). Any other failure
/// of `accept4` pauses it the same way, without a refusal: none is worth a spinning loop.
final class ListenerGate {
    /// How long accepting pauses when no connection closes meanwhile.
    static let retryDelay = Duration.milliseconds(250)

    private let loop: EventLoop
    private let listener: FileDescriptor
    private let onReadable: () -> Void
    private var watch: EventLoop.Watch?
    private var retry: EventLoop.Timer?
    /// Held only to be closed for `refuseOne`: /dev/null.
    private var spare: FileDescriptor?
    /// Connections refused for want of descriptors, since the daemon started.
    private(set) var refusals = 0
    /// Refusals since accepting last worked.
    private var refusalsInShortage = 0
    var isPaused: Bool { watch == nil }

    init(loop: EventLoop, listener: FileDescriptor, onReadable: @escaping () -> Void) throws(SystemError) {
        self.loop = loop
        self.listener = listener
        self.onReadable = onReadable
        spare = try? FileDescriptor.open("/dev/null", O_RDONLY)
        try watchListener()
    }

    /// Whether `error`, from `accept4`, means the process or the system is out of descriptors.
    static func isShortage(_ error: SystemError) -> Bool {
        error.errno == Errno(rawValue: EMFILE) || error.errno == Errno(rawValue: ENFILE)
    }

    /// Stops watching the listener until `resume` or `retryDelay`; short of descriptors, first refuses one
    /// waiting connection, with the spare descriptor, through `refuse` (which closes it). Returns whether a
    /// connection was refused.
    func pause(refusingWith refuse: ((FileDescriptor) -> Void)?) -> Bool {
        var refused = false
        if let refuse, let spare {
            spare.close()
            self.spare = nil
            if let fd = try? UnixSocket.accept(listener) {
                refuse(fd)
                refused = true
                refusals += 1
                refusalsInShortage += 1
            }
            self.spare = try? FileDescriptor.open("/dev/null", O_RDONLY)
        }
        if let watch {
            loop.unwatch(watch)
            self.watch = nil
        }
        scheduleRetry()
        return refused
    }

    /// Watches the listener again (a descriptor has freed, or may have); nothing when it is watched.
    func resume() {
        guard isPaused else { return }
        if let retry {
            loop.cancel(retry)
            self.retry = nil
        }
        if spare == nil { spare = try? FileDescriptor.open("/dev/null", O_RDONLY) }
        try? watchListener()
        if isPaused { scheduleRetry() }  // epoll itself is short of memory: try again later
    }

    /// Accepting works (again): the count of connections refused since it last did, and resets it.
    func acceptedAfterShortage() -> Int? {
        guard refusalsInShortage > 0 else { return nil }
        defer { refusalsInShortage = 0 }
        return refusalsInShortage
    }

    func close() {
        if let retry { loop.cancel(retry) }
        if let watch { loop.unwatch(watch) }
        retry = nil
        watch = nil
        spare?.close()
        spare = nil
    }

    private func scheduleRetry() {
        guard retry == nil else { return }
        retry = loop.schedule(after: Self.retryDelay) { [unowned self] in
            retry = nil
            resume()
        }
    }

    private func watchListener() throws(SystemError) {
        watch = try loop.watch(listener, for: .readable) { [unowned self] _ in onReadable() }
    }
}
