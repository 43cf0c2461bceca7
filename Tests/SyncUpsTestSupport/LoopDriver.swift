import SyncUpsPOSIX

extension EventLoop {
    /// Runs the loop until `condition` holds or `timeout` passes; returns whether the condition came true.
    /// This is how tests wait for an event: never a sleep, always a deadline.
    @discardableResult
    public func run(until condition: () -> Bool, timeout: Duration = .seconds(10)) -> Bool {
        let deadline = MonotonicInstant.now() + timeout
        while !condition() {
            let remaining = deadline - .now()
            if remaining <= .zero { return false }
            runOnce(timeoutMilliseconds: CInt(min(100, max(1, remaining.nanoseconds / 1_000_000))))
        }
        return true
    }
}
