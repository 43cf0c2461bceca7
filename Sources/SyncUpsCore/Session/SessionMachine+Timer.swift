/// The machine's timer on a monotonic clock: the caller hands in the instant of each event (nanoseconds since
/// the session started), arms the one timer where `armTimer(at:)` says and feeds `timerTicked` back. The entry
/// points, `handle` and `request`, are in SessionMachine.swift.
extension SessionMachine {
    private static let second: Int64 = 1_000_000_000

    /// Seconds of meeting at `nanoseconds` since it started, to the bit as `Duration.seconds` gives them.
    public static func seconds(_ nanoseconds: Int64) -> Double {
        Double(nanoseconds / second) + Double(nanoseconds % second * second) / 1e18
    }

    /// The nanoseconds of `seconds` of meeting.
    static func nanoseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1e9).rounded()) }

    /// The timer's wake-up, the one catch-up loop: each tick due by then (more than one after a late wake-up)
    /// is taken by `step` (`nextTick` of the machine, wherever it lives) at its own deadline, so a turn the
    /// timer ends lasts exactly its share however late the wake-up, and its effects performed by `perform`
    /// before the next is taken; the last one arms the timer for the next second unless a tick stopped it.
    /// `perform` says whether to go on (the session it performs for may have ended).
    public static func catchUp(step: () -> (effects: [Effect], isLast: Bool), perform: ([Effect]) -> Bool) {
        while true {
            let (effects, isLast) = step()
            guard perform(effects), !isLast else { return }
        }
    }

    /// One step of a `timerTicked` wake-up at `now`: the first tick due, at its own deadline, and whether it
    /// was the last of this wake-up (then the timer is armed for the next second, unless a tick stopped it).
    /// A caller performs each step's effects before the next, so what they publish (a tick's elapsed time,
    /// the speaker) is the state of that tick, not of the last one caught up.
    /// The daemon takes a wake-up's ticks here, one by one (`SessionController.handle(_:in:)`'s `catchUp`), not
    /// through `handle(_:atNanoseconds:)`, which takes them all at once for the machine's tests.
    public mutating func nextTick(atNanoseconds now: Int64) -> (effects: [Effect], isLast: Bool) {
        clock.nanoseconds = now
        guard !isOver else { return ([], true) }
        guard let deadline = schedule.takeTick(at: now) else {
            return (schedule.nextDeadline.map { [.armTimer(at: $0)] } ?? [], true)
        }
        let effects = apply(.timerTicked, at: Self.seconds(deadline))
        if effects.contains(.finish) { return (effects, true) }
        if schedule.isDue(at: now) { return (effects, false) }
        return (effects + (schedule.nextDeadline.map { [.armTimer(at: $0)] } ?? []), true)
    }

    /// Where the timer is armed now (nanoseconds since the session started): the last `armTimer`'s deadline
    /// while the timer runs, nil while it stands.
    public var nextTickDeadline: Int64? { schedule.nextDeadline }

    /// The timer starts (at the start, at a resume): the schedule resumes at the current instant, keeping the
    /// part of the second a pause left, and the one timer is armed for its next deadline.
    mutating func startTimer() -> Effect {
        schedule.resume(at: clock.nanoseconds)
        return schedule.nextDeadline.map(Effect.armTimer(at:)) ?? .disarmTimer
    }

    /// The timer stops (a pause, the end): the schedule keeps the part of the second already run.
    mutating func stopTimer() -> Effect {
        schedule.pause(at: clock.nanoseconds)
        return .disarmTimer
    }
}

/// The instant (nanoseconds since the session started) of the input being handled: an argument the timer's
/// start and stop need, kept for the length of one input, not the machine's state. Any two are equal, so a
/// refused request or an event that changes nothing leaves the machine equal to what it was.
struct InputInstant: Sendable, Equatable {
    var nanoseconds: Int64 = 0
    static func == (_: Self, _: Self) -> Bool { true }
}
