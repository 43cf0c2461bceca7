import CSyncUpsShims
import Glibc

/// What a watched descriptor is ready for.
public struct IOEvents: OptionSet, Sendable {
    public var rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    public static let readable = IOEvents(rawValue: EPOLLIN.rawValue)
    public static let writable = IOEvents(rawValue: EPOLLOUT.rawValue)
    /// The peer hung up or the descriptor failed. epoll reports `EPOLLHUP` and `EPOLLERR` without being asked;
    /// `EPOLLRDHUP` (the peer shut only its sending side) only when asked, and nothing here asks for it: such a
    /// peer shows as readable, and the read that returns 0 is how the server learns it.
    ///
    /// Why the server does not ask: a half-close means something only after the lines sent before it are
    /// answered, in order, and the read that returns 0 after them is exactly that moment. While reading is
    /// paused (unread output, a yielded turn, a reply made off the loop) the server could do nothing with it
    /// sooner: the pending replies must still be sent, and the end of input is read when reading resumes.
    /// And the bit is level-triggered: asked for, it would be reported on every turn of a paused reader, so
    /// the server would have to take it out of the interest again, a second record of the input's end beside
    /// `ConnectionState`'s. (`ServerTests` covers a half-close while paused.) So `EPOLLRDHUP` is not in this
    /// set either: a half-close is not a hang-up.
    public static let hangup = IOEvents(rawValue: EPOLLHUP.rawValue | EPOLLERR.rawValue)
}

/// The daemon's one event loop: epoll for descriptors, one timerfd for every timer, run on one thread.
///
/// Everything the daemon owns is touched only from this loop's thread, MPD-style, so the state needs no
/// locks. Other threads reach it through a `Mailbox`. With no timers scheduled the loop blocks in
/// `epoll_wait` indefinitely: an idle daemon wakes up zero times a second.
public final class EventLoop {
    /// A registered descriptor; pass it back to `modify` or `unwatch`.
    public struct Watch: Hashable, Sendable {
        fileprivate var index: Int
        fileprivate var generation: UInt32
    }

    /// A scheduled timer; pass it back to `cancel`.
    public struct Timer: Hashable, Sendable {
        fileprivate var id: Int
    }

    private struct Registration {
        var fd: FileDescriptor
        var generation: UInt32
        /// What epoll is told to watch now, so an unchanged `modify` costs no system call.
        var events: IOEvents
        var handler: (IOEvents) -> Void
    }

    private let epoll: FileDescriptor
    private let timerFD: FileDescriptor
    private var registrations: [Registration?] = []
    private var freeIndices: [Int] = []
    private var nextGeneration: UInt32 = 1
    private var timers = TimerQueue()
    private var armedDeadline: MonotonicInstant?
    private var isRunning = false
    /// Work for the end of the loop's current turn (`execute`), run after the current batch of events, in order.
    private var deferred: [() -> Void] = []
    /// Work given way to other inputs (`executeAfterPolling`): run in the turn that polls next, after its handlers.
    private var afterPolling: [() -> Void] = []
    private let eventBuffer: UnsafeMutablePointer<epoll_event>
    private static let eventCapacity: CInt = 128
    private static let timerToken = UInt64.max

    /// Where the loop's time comes from.
    public enum Clock: Sendable {
        /// CLOCK_MONOTONIC, with the timers on a timerfd: the daemon's.
        case monotonic
        /// Time that stands still until `advanceTime(by:)` moves it, firing the timers that come due in
        /// deadline order, each at its own deadline (as SwiftNIO's `EmbeddedEventLoop`, but the work deferred
        /// with `execute` runs after a timer fires, not before): a test's.
        case manual(startingAt: MonotonicInstant)
    }

    /// The manual clock's time; nil on the monotonic clock.
    private var manualNow: MonotonicInstant?

    /// `busyPollWindow`: see `run()`; zero never polls. `clock`: `.manual` for a test that drives time.
    public init(busyPollWindow: Duration = .microseconds(50), clock: Clock = .monotonic) throws(SystemError) {
        self.busyPollWindow = busyPollWindow
        if case .manual(let start) = clock { manualNow = start }
        epoll = FileDescriptor(rawValue: try syscall("epoll_create1") { epoll_create1(CInt(EPOLL_CLOEXEC)) })
        timerFD = FileDescriptor(
            rawValue: try syscall("timerfd_create") {
                timerfd_create(CLOCK_MONOTONIC, CInt(TFD_CLOEXEC) | CInt(TFD_NONBLOCK))
            }
        )
        eventBuffer = syncups_epoll_events_alloc(Self.eventCapacity)
        try syscall("epoll_ctl(timerfd)") {
            syncups_epoll_ctl(epoll.rawValue, EPOLL_CTL_ADD, timerFD.rawValue, EPOLLIN.rawValue, Self.timerToken)
        }
    }

    deinit {
        free(eventBuffer)
        timerFD.close()
        epoll.close()
    }

    // MARK: - Descriptors

    /// Calls `handler` on this loop whenever `fd` is ready for `events` (or hangs up).
    public func watch(
        _ fd: FileDescriptor,
        for events: IOEvents,
        handler: @escaping (IOEvents) -> Void
    ) throws(SystemError) -> Watch {
        let index = freeIndices.popLast() ?? registrations.count
        if index == registrations.count { registrations.append(nil) }
        let generation = nextGeneration
        nextGeneration &+= 1
        let watch = Watch(index: index, generation: generation)
        do {
            try syscall("epoll_ctl(ADD)") {
                syncups_epoll_ctl(epoll.rawValue, EPOLL_CTL_ADD, fd.rawValue, events.rawValue, token(watch))
            }
        } catch {
            freeIndices.append(index)
            throw error
        }
        registrations[index] = Registration(fd: fd, generation: generation, events: events, handler: handler)
        return watch
    }

    /// Changes which events a watched descriptor reports.
    public func modify(_ watch: Watch, for events: IOEvents) {
        guard let registration = registrations[watch.index], registration.generation == watch.generation,
            registration.events != events
        else { return }
        registrations[watch.index]?.events = events
        _ = syncups_epoll_ctl(epoll.rawValue, EPOLL_CTL_MOD, registration.fd.rawValue, events.rawValue, token(watch))
    }

    /// Stops watching; the descriptor itself stays open (its owner closes it).
    public func unwatch(_ watch: Watch) {
        guard let registration = registrations[watch.index], registration.generation == watch.generation else { return }
        _ = syncups_epoll_ctl(epoll.rawValue, EPOLL_CTL_DEL, registration.fd.rawValue, 0, 0)
        registrations[watch.index] = nil
        freeIndices.append(watch.index)
    }

    private func token(_ watch: Watch) -> UInt64 {
        UInt64(watch.generation) << 32 | UInt64(watch.index)
    }

    // MARK: - Timers

    /// The loop's clock: CLOCK_MONOTONIC, or the manual clock's time.
    public func now() -> MonotonicInstant { manualNow ?? .now() }

    /// The instant on CLOCK_MONOTONIC as far from now as `instant` is on the loop's clock: where something that
    /// runs in real time (a capture device, frame 0 at the meeting's start) starts from an instant of the loop's.
    /// `instant` itself on the monotonic clock.
    public func monotonicInstant(of instant: MonotonicInstant) -> MonotonicInstant {
        guard let manualNow else { return instant }
        return .now() + (instant - manualNow)
    }

    /// Whether time moves only by `advanceTime(by:)` (`.manual`): a timer on another clock (`WallClockTimer`)
    /// then goes through the loop's own.
    public var hasManualClock: Bool { manualNow != nil }

    /// Moves the manual clock on by `duration`: each timer due by then fires in deadline order with the
    /// clock at its deadline, and so does what it schedules within the span; the work it defers runs before
    /// the next timer, until none is left (a real turn runs what is deferred after each timer and each handler,
    /// once). Only for a loop made with `.manual`.
    public func advanceTime(by duration: Duration) {
        guard let start = manualNow else { preconditionFailure("advanceTime(by:) needs a loop with a manual clock") }
        #if DEBUG
            syncups_loop_turn_enter()  // what it fires is the loop's work, checked as a turn's (`BlockingWork.check`)
            defer { syncups_loop_turn_leave() }
        #endif
        let target = start + duration
        while let deadline = timers.earliestDeadline, deadline <= target {
            manualNow = max(deadline, manualNow ?? deadline)
            while let handler = timers.popDue(now: manualNow!) { handler() }
            while runDeferred() > 0 {}
        }
        manualNow = target
    }

    /// Moves a manual clock on by `duration` without firing anything, as a process that was stopped (SIGSTOP) or
    /// starved sees the time when it runs again: the next `advanceTime(by:)` fires what fell due meanwhile, late.
    public func skipTime(by duration: Duration) {
        guard let start = manualNow else { preconditionFailure("skipTime(by:) needs a loop with a manual clock") }
        manualNow = start + duration
    }

    /// For the loop's own thread while the loop does not run (at shutdown): waits for `mailbox`'s next message
    /// until `deadline` on this loop's clock, or until `other` is readable. On the manual clock time stands
    /// still unless a test moves it, and nothing moves it while this waits: so it does not wait. A message
    /// already queued is there; else the clock moves on to `deadline` (firing nothing, as the loop does not
    /// run) and the wait has timed out. Before, the waits at shutdown measured the loop's clock while sleeping
    /// in real time: on the manual clock their deadline never came.
    public func wait<Message>(
        for mailbox: Mailbox<Message>, until deadline: MonotonicInstant, orUntilReadable other: FileDescriptor? = nil
    ) -> Mailbox<Message>.WaitOutcome {
        guard let manualNow else { return mailbox.wait(timeout: deadline - .now(), orUntilReadable: other) }
        let outcome = mailbox.wait(timeout: .zero, orUntilReadable: other)
        if outcome == .timedOut { self.manualNow = max(manualNow, deadline) }
        return outcome
    }

    /// Calls `handler` once, on this loop, at `deadline` (at once if it has passed).
    /// (`file` and `line`, the caller's, name the timer in a debug build: `scheduledTimerOrigins`.)
    @discardableResult
    public func schedule(
        at deadline: MonotonicInstant, file: StaticString = #fileID, line: UInt = #line,
        _ handler: @escaping () -> Void
    ) -> Timer {
        let id = timers.insert(deadline: deadline, origin: "\(file):\(line)", handler: handler)
        if armedDeadline.map({ deadline < $0 }) ?? true { arm(deadline) }
        return Timer(id: id)
    }

    /// Calls `handler` once after `delay`.
    @discardableResult
    public func schedule(
        after delay: Duration, file: StaticString = #fileID, line: UInt = #line, _ handler: @escaping () -> Void
    ) -> Timer {
        schedule(at: now() + delay, file: file, line: line, handler)
    }

    /// Cancels a timer that has not fired; cancelling a fired or cancelled timer does nothing.
    public func cancel(_ timer: Timer) {
        timers.remove(timer.id)
        if timers.isEmpty { arm(nil) }
    }

    /// The number of timers waiting to fire (zero when the daemon is idle).
    public var scheduledTimerCount: Int { timers.count }

    /// Where each timer waiting to fire was scheduled (`File.swift:line`), sorted: what a test that finds a
    /// timer left over says. Empty in a release build, which keeps no origins.
    public var scheduledTimerOrigins: [String] {
        #if DEBUG
            timers.origins.values.sorted()
        #else
            []
        #endif
    }

    private func arm(_ deadline: MonotonicInstant?) {
        armedDeadline = deadline
        // On the manual clock only `advanceTime(by:)` fires timers.
        guard manualNow == nil else { return }
        var spec = itimerspec()
        if let deadline {
            spec.it_value = deadline.timeSpec
            // A zero it_value disarms the timer; a deadline at exactly zero nanoseconds cannot happen on a running system.
            if spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0 { spec.it_value.tv_nsec = 1 }
        }
        _ = timerfd_settime(timerFD.rawValue, CInt(TFD_TIMER_ABSTIME), &spec, nil)
    }

    private func fireDueTimers() {
        if manualNow == nil {
            var expirations: UInt64 = 0
            _ = Glibc.read(timerFD.rawValue, &expirations, 8)
        }
        armedDeadline = nil
        let now = self.now()
        while let handler = timers.popDue(now: now) {
            handler()
        }
        arm(timers.earliestDeadline)
    }

    /// Fires the timers that came due while a handler or a task ran, before the next one runs: a timer (a
    /// meeting's tick) then waits for at most one handler's work, not for a whole turn's. Looked at once a
    /// turn, four clients pipelining 285 KB replies (several slices each a turn) made the ticks up to half a
    /// second late. On the manual clock, what `skipTime(by:)` made due fires here too. One clock read, and
    /// only while a timer is armed.
    private func fireLateTimers() {
        guard let deadline = armedDeadline, now() >= deadline else { return }
        fireTimersAndTheirWork()
    }

    /// Fires the due timers, then runs the work deferred so far (`execute`), theirs included: a tick's events
    /// reach the subscribers' sockets now, not after the rest of the turn's handlers (the server writes them
    /// from a deferred task). Timers fire a bounded number of times, so this cannot go on for ever.
    private func fireTimersAndTheirWork() {
        fireDueTimers()
        runDeferred()
    }

    // MARK: - Deferred work

    /// Runs `task` at the end of this loop's current turn (not a later one: that is `executeAfterPolling`):
    /// after every handler of the current batch has returned, before the loop sleeps again (SwiftNIO's
    /// `EventLoop.execute`, MPD's `DeferEvent`), or sooner, between two handlers, when a timer fires there
    /// (its events are then sent at once). What one input triggers for others (sending a subscriber its
    /// events, resuming a paused reader) goes here, so no handler ever runs inside another. Tasks that a task
    /// schedules run on the turn after, or after the next timer.
    public func execute(_ task: @escaping () -> Void) {
        deferred.append(task)
    }

    /// Runs `task` after the loop has polled once more and handled what that brought: how a long piece of
    /// work (a client's pipelined backlog) gives way to everyone else's input between its slices.
    public func executeAfterPolling(_ task: @escaping () -> Void) {
        afterPolling.append(task)
    }

    /// Whether work is waiting for the end of the turn or the next poll.
    public var hasDeferredWork: Bool { !deferred.isEmpty || !afterPolling.isEmpty }

    /// Runs the tasks queued before this call; returns how many ran. (Those they queue wait for the next
    /// call: the end of the turn, or a timer firing between two of them.)
    @discardableResult
    private func runDeferred() -> Int {
        guard !deferred.isEmpty else { return 0 }
        let tasks = deferred
        deferred.removeAll(keepingCapacity: true)
        for task in tasks {
            task()
            fireLateTimers()
        }
        return tasks.count
    }

    // MARK: - Running

    /// Runs until `stop()` is called from a handler.
    public func run() {
        isRunning = true
        while isRunning {
            let waitStart = MonotonicInstant.now()
            isBusyPollSkipped = false
            guard runOnce(timeoutMilliseconds: -1) > 0, !isBusyPollSkipped else { continue }
            // Events coming faster than every few tens of microseconds mean a client in a request loop.
            // Sleeping between them costs a wake-up each time (about 25 µs on a virtual machine, more than the
            // work itself), so poll without sleeping for a moment first. An idle daemon, or one with an event
            // a second, never gets here: it costs nothing when nothing happens.
            guard busyPollWindow > .zero, MonotonicInstant.now() - waitStart < busyPollWindow * 4 else { continue }
            let deadline = MonotonicInstant.now() + busyPollWindow
            while isRunning && MonotonicInstant.now() < deadline {
                busyPolls += 1
                if runOnce(timeoutMilliseconds: 0) > 0 { break }
            }
        }
    }

    /// Tells `run()` to sleep after this turn rather than poll: what comes next is further off than the
    /// window (a client reading a deep batch's replies, or a socket it must drain first), and polling would
    /// only take a core from that client.
    public func skipBusyPoll() {
        isBusyPollSkipped = true
    }

    private var isBusyPollSkipped = false
    /// How many times `run()` has polled without waiting (for tests).
    public private(set) var busyPolls = 0

    /// How long `run()` keeps polling after a batch that came hard on the heels of the previous one. It buys
    /// the request round trip's lead over MPD (without it the p50 was on par with MPD's, the kernel's wake-up
    /// dominating) and costs nothing when idle.
    /// The daemon's `busy-poll` option sets it.
    public let busyPollWindow: Duration

    /// Waits for and handles one batch of events, then runs the deferred work (`execute`): one turn.
    /// `timeoutMilliseconds` -1 waits indefinitely; with deferred work queued it does not wait at all.
    /// Returns how many events and tasks it handled.
    @discardableResult
    public func runOnce(timeoutMilliseconds: CInt) -> Int {
        #if DEBUG
            syncups_loop_turn_enter()  // `BlockingWork.check`
            defer { syncups_loop_turn_leave() }
        #endif
        let timeout = hasDeferredWork ? 0 : timeoutMilliseconds
        let yielded = afterPolling
        afterPolling.removeAll(keepingCapacity: true)
        let count = epoll_wait(epoll.rawValue, eventBuffer, Self.eventCapacity, timeout)
        guard count > 0 else {
            for task in yielded {
                task()
                fireLateTimers()
            }
            return yielded.count + runDeferred()
        }
        for slot in 0..<Int(count) {
            let data = syncups_epoll_event_data(eventBuffer, CInt(slot))
            let events = IOEvents(rawValue: syncups_epoll_event_events(eventBuffer, CInt(slot)))
            if data == Self.timerToken {
                fireTimersAndTheirWork()
                continue
            }
            let index = Int(data & 0xFFFF_FFFF)
            let generation = UInt32(data >> 32)
            // A handler earlier in this batch may have unwatched (and reused) this slot.
            guard index < registrations.count, let registration = registrations[index],
                registration.generation == generation
            else { continue }
            registration.handler(events)
            fireLateTimers()
        }
        for task in yielded {
            task()
            fireLateTimers()
        }
        return Int(count) + yielded.count + runDeferred()
    }

    /// Makes `run()` return after the current handler.
    public func stop() {
        isRunning = false
    }

    /// Drops every watch, timer and task without running them: their closures hold what they serve (a
    /// server, a store, a session, whose own references to this loop make a cycle), so an owner that ends
    /// before the process does (an in-process daemon of a test) ends with them. The loop is not run again.
    public func close() {
        isRunning = false
        for registration in registrations.compactMap({ $0 }) {
            _ = syncups_epoll_ctl(epoll.rawValue, EPOLL_CTL_DEL, registration.fd.rawValue, 0, 0)
        }
        // Emptied in place, no index reused: an owner's late `unwatch` (in its deinit) finds nothing to do.
        registrations = Array(repeating: nil, count: registrations.count)
        freeIndices = []
        timers = TimerQueue()
        arm(nil)
        deferred = []
        afterPolling = []
    }
}

// MARK: - Timer queue

/// A min-heap of deadlines with lazy cancellation.
private struct TimerQueue {
    private struct Entry {
        var deadline: MonotonicInstant
        var id: Int
    }

    private var heap: [Entry] = []
    private var handlers: [Int: () -> Void] = [:]
    private var nextID = 0

    var isEmpty: Bool { handlers.isEmpty }
    var count: Int { handlers.count }
    #if DEBUG
        /// Where each waiting timer was scheduled.
        private(set) var origins: [Int: String] = [:]
    #endif

    var earliestDeadline: MonotonicInstant? {
        mutating get {
            dropCancelledTop()
            return heap.first?.deadline
        }
    }

    mutating func insert(deadline: MonotonicInstant, origin: @autoclosure () -> String, handler: @escaping () -> Void)
        -> Int
    {
        let id = nextID
        nextID += 1
        handlers[id] = handler
        #if DEBUG
            origins[id] = origin()
        #endif
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(heap.count - 1)
        return id
    }

    mutating func remove(_ id: Int) {
        handlers[id] = nil
        #if DEBUG
            origins[id] = nil
        #endif
        // Cancelled entries stay in the heap until they reach the top; rebuild if they pile up.
        if heap.count > 64 && heap.count > 4 * handlers.count {
            heap.removeAll { handlers[$0.id] == nil }
            for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
        }
    }

    mutating func popDue(now: MonotonicInstant) -> (() -> Void)? {
        while let top = heap.first, top.deadline <= now {
            popTop()
            if let handler = handlers.removeValue(forKey: top.id) {
                #if DEBUG
                    origins[top.id] = nil
                #endif
                return handler
            }
        }
        return nil
    }

    private mutating func dropCancelledTop() {
        while let top = heap.first, handlers[top.id] == nil { popTop() }
    }

    private mutating func popTop() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
    }

    private func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && precedes(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count && precedes(heap[right], heap[smallest]) { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
