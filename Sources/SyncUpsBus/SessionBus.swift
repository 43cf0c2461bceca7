import CSystemd
import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// The user's session bus (D-Bus) through libsystemd's sd-bus, serviced by the daemon's one event loop: the
/// bus's descriptor is watched for what sd-bus asks (`sd_bus_get_events`), its timeout is a loop timer, and
/// nothing here blocks (connecting, the `Hello` and name requests are asynchronous).
///
/// Without a bus address (a server, a container, CI) it stays off and says why. A bus that goes away is
/// connected again after a growing delay (1 s, doubling, at most 30 s), and every object is exported again.
public final class SessionBus {
    public enum State: Equatable, Sendable {
        /// Not connected, and why.
        case off(String)
        case connecting
        /// Connected, with the bus's unique name for us.
        case connected(uniqueName: String)
    }

    public private(set) var state: State
    /// Runs on every change of `state`.
    public var onStateChange: () -> Void = {}
    /// What to export on each new connection (objects, names, signal matches): called once the bus is set up,
    /// before any message is read from it.
    public var onConnection: [(BusConnection) -> Void] = []

    private let loop: EventLoop
    private let logger: Logger
    private let address: String?
    private var bus: OpaquePointer?
    private var watch: EventLoop.Watch?
    private var watchedEvents: IOEvents = []
    private var timeoutTimer: EventLoop.Timer?
    private var timeoutDeadline: UInt64 = .max
    private var retryTimer: EventLoop.Timer?
    /// The wait before reconnecting: 1 s, doubling, at most 30 s (the daemon's one back-off policy type).
    private var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30))
    /// Whether a turn of processing was left for the loop's next turn (a flood of calls).
    private var isProcessingDeferred = false
    /// Messages processed in one turn at most: a flood of calls waits its turn behind the other inputs.
    static let processingBudget = 64

    /// The session bus's address from `environment`: `DBUS_SESSION_BUS_ADDRESS`, or `$XDG_RUNTIME_DIR/bus`
    /// when that socket exists (where systemd's user bus is). Nil when there is none.
    public static func address(environment: [String: String]) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            let path = FilePath.join(runtime, "bus")
            if access(path, F_OK) == 0 { return "unix:path=\(path)" }
        }
        return nil
    }

    public init(loop: EventLoop, environment: [String: String], logger: Logger) {
        self.loop = loop
        self.logger = logger
        self.address = Self.address(environment: environment)
        state =
            address == nil
            ? .off("no session bus: DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus")
            : .connecting
    }

    deinit {
        if let bus { sd_bus_close_unref(bus) }
    }

    /// Connects (when there is an address); the rest happens on the loop.
    public func start() {
        guard address != nil else {
            logger.info("\(offReason ?? "no session bus"): MPRIS and notifications are off")
            return
        }
        connect()
    }

    /// Why the bus is not connected, or nil when it is.
    public var offReason: String? {
        switch state {
        case .off(let reason): reason
        case .connecting: "connecting to the session bus"
        case .connected: nil
        }
    }

    public var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    /// Closes the connection for good (the daemon stops): its names go with it.
    public func close() {
        if let retryTimer { loop.cancel(retryTimer) }
        retryTimer = nil
        tearDown()
        set(.off("the daemon is stopping"))
    }

    private func set(_ new: State) {
        guard new != state else { return }
        state = new
        onStateChange()
    }

    private func connect() {
        guard let address else { return }
        retryTimer = nil
        var created: OpaquePointer?
        var result = sd_bus_new(&created)
        guard result >= 0, let created else { return failed("sd_bus_new", result) }
        sd_bus_set_address(created, address)
        sd_bus_set_bus_client(created, 1)
        // Our own description for the bus's logs (`busctl`), and no exit() when the bus goes away.
        sd_bus_set_description(created, "syncupsd")
        sd_bus_set_exit_on_disconnect(created, 0)
        result = sd_bus_start(created)
        guard result >= 0 else {
            sd_bus_close_unref(created)
            return failed("cannot connect to the session bus at \(address)", result)
        }
        bus = created
        set(.connecting)
        let fd = FileDescriptor(rawValue: sd_bus_get_fd(created))
        do {
            watch = try loop.watch(fd, for: .readable) { [unowned self] _ in process() }
            watchedEvents = .readable
        } catch {
            tearDown()
            return failed("cannot watch the session bus: \(error)", 0)
        }
        let connection = BusConnection(bus: created, afterSend: { [unowned self] in rearm() })
        for export in onConnection { export(connection) }
        process()
    }

    private func failed(_ what: String, _ result: CInt) {
        let reason = result < 0 ? "\(what): \(Errno(rawValue: -result))" : what
        set(.off(reason))
        scheduleRetry(reason)
    }

    private func scheduleRetry(_ reason: String) {
        guard retryTimer == nil else { return }
        // Once an outage: the later attempts (every 30 s at most) are for the debug log.
        let first = backoff.isAtStart
        let delay = backoff.next()
        let line = "\(reason); MPRIS and notifications are off, trying again in \(delay)"
        if first { logger.warning(line) } else { logger.debug(line) }
        retryTimer = loop.schedule(after: delay) { [unowned self] in connect() }
    }

    private func tearDown() {
        if let watch { loop.unwatch(watch) }
        watch = nil
        if let timeoutTimer { loop.cancel(timeoutTimer) }
        timeoutTimer = nil
        timeoutDeadline = .max
        if let bus { sd_bus_close_unref(bus) }
        bus = nil
    }

    /// Lets sd-bus read, dispatch and write what it can, up to the budget; the rest on the loop's next turn.
    private func process() {
        guard let bus else { return }
        var processed = 0
        while processed < Self.processingBudget {
            let result = sd_bus_process(bus, nil)
            if result < 0 {
                return lost("the session bus went away: \(Errno(rawValue: -result))")
            }
            if result == 0 { break }
            processed += 1
        }
        guard self.bus == bus else { return }  // a handler closed it
        if sd_bus_is_open(bus) <= 0 { return lost("the session bus closed the connection") }
        if case .connecting = state, sd_bus_is_ready(bus) > 0 {
            var name: UnsafePointer<CChar>?
            sd_bus_get_unique_name(bus, &name)
            backoff.reset()
            logger.notice("connected to the session bus as \(name.map { String(cString: $0) } ?? "?")")
            set(.connected(uniqueName: name.map { String(cString: $0) } ?? ""))
        }
        if processed == Self.processingBudget, !isProcessingDeferred {
            isProcessingDeferred = true
            loop.execute { [weak self] in
                self?.isProcessingDeferred = false
                self?.process()
            }
        }
        rearm()
    }

    private func lost(_ reason: String) {
        tearDown()
        set(.off(reason))
        scheduleRetry(reason)
    }

    /// Watches for what sd-bus waits for now (its write queue may wait for POLLOUT) and arms its timeout.
    private func rearm() {
        guard let bus, let watch else { return }
        let wanted = sd_bus_get_events(bus)
        if wanted >= 0 {
            var events: IOEvents = []
            if wanted & CInt(POLLIN) != 0 { events.insert(.readable) }
            if wanted & CInt(POLLOUT) != 0 { events.insert(.writable) }
            if events != watchedEvents {
                watchedEvents = events
                loop.modify(watch, for: events)
            }
        }
        var deadline: UInt64 = .max
        if sd_bus_get_timeout(bus, &deadline) < 0 { deadline = .max }
        guard deadline != timeoutDeadline else { return }
        timeoutDeadline = deadline
        if let timeoutTimer { loop.cancel(timeoutTimer) }
        timeoutTimer = nil
        guard deadline != .max else { return }
        // sd-bus's deadlines are CLOCK_MONOTONIC microseconds, as the loop's timers are.
        let instant = MonotonicInstant(nanoseconds: Int64(clamping: deadline) &* 1000)
        timeoutTimer = loop.schedule(at: instant) { [unowned self] in
            timeoutTimer = nil
            timeoutDeadline = .max
            process()
        }
    }
}
