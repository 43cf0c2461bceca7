import SyncUpsPOSIX

/// When to write after a change: the first change at once, later ones within a second coalesced into one
/// trailing write at the end of that second (swift-sharing's `FileStorage` policy, without its bugs).
///
/// Pure: it is told the time and answers with a decision, so tests drive it without a clock.
public struct WriteThrottle: Sendable, Equatable {
    public enum Decision: Sendable, Equatable {
        /// Write the latest state now.
        case writeNow
        /// Write at this instant unless something cancels it; make sure a timer is set for it.
        case writeAt(MonotonicInstant)
        /// A write is already planned (or none is needed).
        case nothing
    }

    public var window: Duration
    /// The end of the quiet period that started with the last write; changes before it wait for it.
    private(set) var windowEnd: MonotonicInstant?
    public private(set) var isPending = false

    public init(window: Duration = .seconds(1)) {
        self.window = window
    }

    /// A change was made at `now`.
    public mutating func changed(at now: MonotonicInstant) -> Decision {
        if let windowEnd, now < windowEnd {
            if isPending { return .nothing }
            isPending = true
            return .writeAt(windowEnd)
        }
        return wrote(at: now)
    }

    /// A change that must reach the disk at once (a meeting saved, the daemon stopping).
    public mutating func urgent(at now: MonotonicInstant) -> Decision {
        wrote(at: now)
    }

    /// The timer for `writeAt` fired.
    public mutating func timerFired(at now: MonotonicInstant) -> Decision {
        guard isPending else { return .nothing }
        if let windowEnd, now < windowEnd { return .writeAt(windowEnd) }
        return wrote(at: now)
    }

    /// Forgets a planned write: another program's edit replaced the state it would have written.
    public mutating func cancelPending() {
        isPending = false
    }

    private mutating func wrote(at now: MonotonicInstant) -> Decision {
        isPending = false
        windowEnd = now + window
        return .writeNow
    }
}
