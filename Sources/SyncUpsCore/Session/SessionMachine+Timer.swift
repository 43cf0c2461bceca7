/// The machine's timer on a monotonic clock: the caller hands in the instant of each event (nanoseconds since
/// the session started), arms the one timer where `armTimer(at:)` says and feeds `timerTicked` back.
extension SessionMachine {
    private static let second: Int64 = 1_000_000_000

    /// Seconds of meeting at `nanoseconds` since it started, to the bit as `Duration.seconds` gives them.
    public static func seconds(_ nanoseconds: Int64) -> Double {
        Double(nanoseconds / second) + Double(nanoseconds % second * second) / 1e18
    }

    /// `handle(_:at:)` at `now`. `timerTicked` is the timer's wake-up: each tick due by then (more than one
    /// after a late wake-up) is handled at its own deadline, so a turn the timer ends lasts exactly its share
    /// however late the wake-up; then the timer is armed for the next second unless a tick stopped it.
    public mutating func handle(_ event: Event, atNanoseconds now: Int64) -> [Effect] {
        guard event == .timerTicked else { return timing(handle(event, at: Self.seconds(now)), at: now) }
        var effects: [Effect] = []
        while true {
            let (tick, isLast) = nextTick(atNanoseconds: now)
            effects += tick
            if isLast { return effects }
        }
    }

    /// One step of a `timerTicked` wake-up at `now`: the first tick due, at its own deadline, and whether it
    /// was the last of this wake-up (then the timer is armed for the next second, unless a tick stopped it).
    /// A caller performs each step's effects before the next, so what they publish (a tick's elapsed time,
    /// the speaker) is the state of that tick, not of the last one caught up.
    public mutating func nextTick(atNanoseconds now: Int64) -> (effects: [Effect], isLast: Bool) {
        guard let deadline = schedule.takeTick(at: now) else {
            return (schedule.nextDeadline.map { [.armTimer(at: $0)] } ?? [], true)
        }
        let tick = handle(.timerTicked, at: Self.seconds(deadline))
        let effects = timing(tick, at: now)
        if tick.contains(.finish) { return (effects, true) }
        if schedule.isDue(at: now) { return (effects, false) }
        return (effects + (schedule.nextDeadline.map { [.armTimer(at: $0)] } ?? []), true)
    }

    /// `request(_:at:)` at `now`.
    public mutating func request(_ request: Request, atNanoseconds now: Int64) throws(SessionRejection) -> [Effect] {
        timing(try self.request(request, at: Self.seconds(now)), at: now)
    }

    /// The effects with the timer's start and stop applied to the schedule at `now`: `armTimer(at:)` with the
    /// next deadline (a pause keeps the part of the second already run), `disarmTimer`.
    public mutating func timing(_ effects: [Effect], at now: Int64) -> [Effect] {
        effects.map { effect in
            switch effect {
            case .startTimer:
                schedule.resume(at: now)
                return schedule.nextDeadline.map(Effect.armTimer(at:)) ?? .disarmTimer
            case .stopTimer:
                schedule.pause(at: now)
                return .disarmTimer
            default:
                return effect
            }
        }
    }
}
