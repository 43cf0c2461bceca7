import CPulse
import Glibc
import SyncUpsPOSIX
import Synchronization

/// Watches the sound server (PulseAudio, or PipeWire's `pipewire-pulse`) on its own thread: which sink and
/// source are the defaults, and which capture sources exist. Capture streams and the `devices` command read
/// its latest `Snapshot` without waiting.
///
/// The introspection side of libpulse is asynchronous only, so this thread owns a `pa_mainloop` and iterates
/// it (blocking in its poll, no timer: an idle daemon does not wake up), subscribed to server and source
/// changes: a new default sink is known within one round trip. The recording itself goes through
/// a `PulseRecordStream` of its own on the capture thread (`CaptureDevice.pulse`), whose bounded reads fit
/// that thread as `snd_pcm_readi` does. When the server goes
/// away the snapshot becomes nil and the thread reconnects after 1, 2, 4… up to 30 s, or at once when a
/// capture asks (`reconnectNow`).
public final class PulseMonitor: Sendable {
    /// One capture source: a microphone, or the monitor of an output sink.
    public struct Source: Sendable, Equatable {
        public var name: String
        public var description: String
        /// The sink this source is the monitor of (the "call" kind), nil for an input.
        public var monitorOfSink: String?

        public init(name: String, description: String, monitorOfSink: String?) {
            self.name = name
            self.description = description
            self.monitorOfSink = monitorOfSink
        }
    }

    /// What the server said last.
    public struct Snapshot: Sendable, Equatable {
        /// E.g. "PulseAudio (on PipeWire 0.3.65)".
        public var server: String
        public var defaultSink: String?
        public var defaultSource: String?
        public var sources: [Source]

        public init(server: String, defaultSink: String?, defaultSource: String?, sources: [Source]) {
            self.server = server
            self.defaultSink = defaultSink
            self.defaultSource = defaultSource
            self.sources = sources
        }

        /// The default source if it is a microphone, what `@microphone` records. A server without an input
        /// makes a sink's monitor its default source (PipeWire and PulseAudio both, for a moment after a
        /// restart too): recorded as the microphone, that is the call or the speakers a second time, so it is
        /// not followed.
        public var defaultMicrophone: String? {
            guard let name = defaultSource, !sources.contains(where: { $0.name == name && $0.monitorOfSink != nil })
            else { return nil }
            return name
        }

        /// The monitor source of the default sink: the call. Named by the sink (`call` → `call.monitor`),
        /// since `@DEFAULT_MONITOR@` gave the default source instead on PipeWire 0.3.65.
        public var defaultMonitor: String? {
            guard let sink = defaultSink else { return nil }
            return sources.first { $0.monitorOfSink == sink }?.name ?? sink + ".monitor"
        }
    }

    private struct State {
        var snapshot: Snapshot?
        var error: String? = "not connected yet"
    }

    private let state = Mutex(State())
    private let isStopping = Atomic(false)
    private let isRefreshRequested = Atomic(false)
    private let wake: WakeSignal
    private let mainloop = Mutex<MainloopBox?>(nil)
    private let thread = Mutex<DedicatedThread?>(nil)
    private let firstAttempt: WakeSignal

    /// Starts the thread; `waitForFirstAttempt` waits (up to 1 s) until the first connection has been
    /// answered, so a server that is there is known from the start.
    public init(waitForFirstAttempt: Bool = true) throws(SystemError) {
        wake = try WakeSignal()
        firstAttempt = try WakeSignal()
        let thread = try DedicatedThread(name: "syncups-pulse") { [self] in run() }
        self.thread.withLock { $0 = thread }
        if waitForFirstAttempt { _ = firstAttempt.wait(timeout: .seconds(1)) }
    }

    /// The server's latest state, or nil while none is connected.
    public var snapshot: Snapshot? { state.withLock { $0.snapshot } }

    /// Why there is no snapshot (e.g. "Connection refused"), or nil while connected.
    public var error: String? { state.withLock { $0.error } }

    /// Asks for a connection attempt now rather than after the backoff, while none is connected: a capture
    /// reopening every second (the server went away mid-meeting) finds it back within a second of its return.
    public func reconnectNow() {
        if snapshot == nil { wake.signal() }
    }

    /// Asks the server for its defaults and sources again, without waiting. A recording capture asks once a
    /// second: a change of the default sink whose event carried the old name (the server answered before its
    /// session manager had applied the change) is seen within a second all the same.
    public func refresh() {
        isRefreshRequested.store(true, ordering: .relaxed)
        mainloop.withLock { box in box.map { pa_mainloop_wakeup($0.pointer) } }
    }

    /// Ends the thread (disconnecting) and waits for it.
    public func stop() {
        isStopping.store(true, ordering: .relaxed)
        wake.signal()
        mainloop.withLock { box in box.map { pa_mainloop_wakeup($0.pointer) } }
        thread.withLock { $0 }?.join()
    }

    // MARK: - The monitor thread

    private func run() {
        var backoff = Duration.seconds(1)
        var isFirst = true
        while !isStopping.load(ordering: .relaxed) {
            let reachedReady = connectOnce(onAnswer: isFirst ? { [firstAttempt] in firstAttempt.signal() } : {})
            isFirst = false
            if reachedReady { backoff = .seconds(1) }
            if isStopping.load(ordering: .relaxed) { break }
            // A capture waiting to reopen asks for the next attempt now (`reconnectNow`): the backoff is
            // for an idle daemon on a machine without a server, not for a meeting that records.
            if !wake.wait(timeout: backoff) { backoff = min(backoff * 2, .seconds(30)) }
        }
    }

    /// One connection, from `pa_context_connect` to its end; returns whether it got to READY.
    private func connectOnce(onAnswer: () -> Void) -> Bool {
        guard let loop = pa_mainloop_new() else { return false }
        mainloop.withLock { $0 = MainloopBox(loop) }
        defer {
            mainloop.withLock { $0 = nil }
            pa_mainloop_free(loop)
        }
        guard let context = pa_context_new(pa_mainloop_get_api(loop), "syncupsd") else { return false }
        let connection = Connection(context: context)
        let userdata = Unmanaged.passUnretained(connection).toOpaque()
        defer {
            pa_context_disconnect(context)
            pa_context_unref(context)
        }
        pa_context_set_state_callback(
            context,
            { _, userdata in Unmanaged<Connection>.fromOpaque(userdata!).takeUnretainedValue().stateChanged() },
            userdata)
        pa_context_set_subscribe_callback(
            context,
            { _, _, _, userdata in Unmanaged<Connection>.fromOpaque(userdata!).takeUnretainedValue().isStale = true },
            userdata)
        guard pa_context_connect(context, nil, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
            fail(String(cString: pa_strerror(pa_context_errno(context))))
            onAnswer()
            return false
        }
        var reachedReady = false
        var answered = false
        while !isStopping.load(ordering: .relaxed) {
            if pa_mainloop_iterate(loop, 1, nil) < 0 { break }
            switch connection.phase {
            case .connecting:
                continue
            case .failed:
                fail(String(cString: pa_strerror(pa_context_errno(context))))
                if !answered { onAnswer() }
                return reachedReady
            case .ready:
                if !reachedReady {
                    reachedReady = true
                    let mask = pa_subscription_mask_t(
                        rawValue: PA_SUBSCRIPTION_MASK_SERVER.rawValue | PA_SUBSCRIPTION_MASK_SOURCE.rawValue
                            | PA_SUBSCRIPTION_MASK_SINK.rawValue)
                    pa_context_subscribe(context, mask, nil, nil).map { pa_operation_unref($0) }
                    connection.isStale = true
                }
            }
            if reachedReady && isRefreshRequested.exchange(false, ordering: .relaxed) { connection.isStale = true }
            if connection.isStale && connection.pendingQueries == 0 {
                connection.isStale = false
                connection.query(userdata)
            }
            if let snapshot = connection.takeSnapshot() {
                state.withLock { $0 = State(snapshot: snapshot, error: nil) }
                if !answered {
                    answered = true
                    onAnswer()
                }
            }
        }
        fail("disconnected")
        return reachedReady
    }

    private func fail(_ message: String) {
        state.withLock { $0 = State(snapshot: nil, error: message) }
    }
}

/// A `pa_mainloop`, freed by the monitor thread only under the lock that `stop` wakes it through
/// (`pa_mainloop_wakeup` is the one call libpulse allows from another thread): hence `@unchecked Sendable`.
private final class MainloopBox: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// One context's state, touched only by the monitor thread (its callbacks run inside `pa_mainloop_iterate`).
private final class Connection {
    enum Phase { case connecting, ready, failed }

    let context: OpaquePointer
    var phase = Phase.connecting
    /// Something changed (or nothing was asked yet): query again once the answers in flight are in.
    var isStale = false
    var pendingQueries = 0
    var server = ""
    var defaultSink: String?
    var defaultSource: String?
    var sources: [PulseMonitor.Source] = []
    var collecting: [PulseMonitor.Source] = []
    var sinkNames: [UInt32: String] = [:]
    var collectingSinks: [UInt32: String] = [:]
    var hasNewAnswer = false

    init(context: OpaquePointer) {
        self.context = context
    }

    func stateChanged() {
        let state = pa_context_get_state(context)
        if state == PA_CONTEXT_READY {
            phase = .ready
        } else if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
            phase = .failed
        }
    }

    /// Asks for the server info, the sinks (to name what each monitor monitors) and the sources.
    func query(_ userdata: UnsafeMutableRawPointer) {
        pendingQueries = 3
        collecting = []
        collectingSinks = [:]
        let serverInfo = pa_context_get_server_info(
            context,
            { _, info, userdata in
                let connection = Unmanaged<Connection>.fromOpaque(userdata!).takeUnretainedValue()
                if let info {
                    connection.server =
                        string(info.pointee.server_name) ?? "?"
                    connection.defaultSink = string(info.pointee.default_sink_name)
                    connection.defaultSource = string(info.pointee.default_source_name)
                }
                connection.answered()
            }, userdata)
        let sinks = pa_context_get_sink_info_list(
            context,
            { _, info, endOfList, userdata in
                let connection = Unmanaged<Connection>.fromOpaque(userdata!).takeUnretainedValue()
                if endOfList != 0 || info == nil {
                    connection.sinkNames = connection.collectingSinks
                    connection.answered()
                    return
                }
                connection.collectingSinks[info!.pointee.index] = string(info!.pointee.name)
            }, userdata)
        let sources = pa_context_get_source_info_list(
            context,
            { _, info, endOfList, userdata in
                let connection = Unmanaged<Connection>.fromOpaque(userdata!).takeUnretainedValue()
                if endOfList != 0 || info == nil {
                    connection.sources = connection.collecting
                    connection.answered()
                    return
                }
                let source = info!.pointee
                let monitored = source.monitor_of_sink == syncups_pa_invalid_index() ? nil : source.monitor_of_sink
                connection.collecting.append(
                    PulseMonitor.Source(
                        name: string(source.name) ?? "",
                        description: string(source.description) ?? "",
                        // Resolved to a name once the sink list is in (`takeSnapshot`).
                        monitorOfSink: monitored.map { "#\($0)" }))
            }, userdata)
        for operation in [serverInfo, sinks, sources] {
            if let operation { pa_operation_unref(operation) } else { answered() }
        }
    }

    private func answered() {
        pendingQueries -= 1
        if pendingQueries == 0 { hasNewAnswer = true }
    }

    /// The complete answer to the last query, once, with monitors named by their sinks.
    func takeSnapshot() -> PulseMonitor.Snapshot? {
        guard hasNewAnswer else { return nil }
        hasNewAnswer = false
        let named = sources.map { source in
            var source = source
            if let reference = source.monitorOfSink, let index = UInt32(reference.dropFirst()) {
                source.monitorOfSink = sinkNames[index] ?? reference
            }
            return source
        }
        return PulseMonitor.Snapshot(
            server: server, defaultSink: defaultSink, defaultSource: defaultSource, sources: named)
    }
}

private func string(_ pointer: UnsafePointer<CChar>?) -> String? {
    pointer.map { String(cString: $0) }
}
