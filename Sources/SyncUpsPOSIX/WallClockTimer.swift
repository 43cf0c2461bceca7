import CSyncUpsShims
import Glibc

/// A timer on the wall clock (CLOCK_REALTIME, absolute), watched by the event loop: it fires at a time of
/// day however long the machine was suspended in between (the loop's own timers are on CLOCK_MONOTONIC,
/// which stops during a suspend), and `handler(true)` says the clock was set (`TFD_TIMER_CANCEL_ON_SET`),
/// after which the caller arms it again. Unarmed, it costs nothing. On a loop with a manual clock (a test's)
/// it is one of the loop's timers instead, due when `now` (the wall clock the caller reads, moving with the
/// loop's time) reaches the deadline: virtual time then passes for it as for the loop's own timers.
public final class WallClockTimer {
    private let fd: FileDescriptor
    private var watch: EventLoop.Watch?
    private let loop: EventLoop
    /// Called on the loop when the time comes (false) or the wall clock was set (true).
    private let handler: (_ clockWasSet: Bool) -> Void
    /// The wall clock's seconds since the epoch, for a manual loop's timer.
    private let now: () -> Int64
    private var manualTimer: EventLoop.Timer?
    public private(set) var deadline: Int64?

    public init(
        loop: EventLoop, now: @escaping () -> Int64 = { Int64(time(nil)) },
        handler: @escaping (_ clockWasSet: Bool) -> Void
    ) throws(SystemError) {
        self.loop = loop
        self.now = now
        self.handler = handler
        fd = FileDescriptor(
            rawValue: try syscall("timerfd_create(CLOCK_REALTIME)") {
                timerfd_create(CLOCK_REALTIME, CInt(TFD_CLOEXEC) | CInt(TFD_NONBLOCK))
            })
        watch = try loop.watch(fd, for: .readable) { [unowned self] _ in fired() }
    }

    deinit {
        if let manualTimer { loop.cancel(manualTimer) }
        if let watch { loop.unwatch(watch) }
        fd.close()
    }

    /// Fires at `seconds` since the epoch (UTC), or never (nil).
    public func arm(at seconds: Int64?) {
        deadline = seconds
        if loop.hasManualClock {
            if let manualTimer { loop.cancel(manualTimer) }
            manualTimer = seconds.map { seconds in
                loop.schedule(after: .seconds(max(0, seconds - now()))) { [unowned self] in
                    manualTimer = nil
                    deadline = nil
                    handler(false)
                }
            }
            return
        }
        var spec = itimerspec()
        if let seconds { spec.it_value = timespec(tv_sec: Int(max(seconds, 1)), tv_nsec: 0) }
        // TFD_TIMER_CANCEL_ON_SET (1 << 1) is a macro Swift does not import.
        let flags = seconds == nil ? 0 : CInt(TFD_TIMER_ABSTIME) | (1 << 1)
        _ = timerfd_settime(fd.rawValue, flags, &spec, nil)
    }

    private func fired() {
        var expirations: UInt64 = 0
        let count = read(fd.rawValue, &expirations, 8)
        if count < 0 {
            guard errno == ECANCELED else { return }  // EAGAIN: re-armed before we read
            deadline = nil
            handler(true)
            return
        }
        deadline = nil
        handler(false)
    }
}
