/// Decides when a scheduled sync-up's reminder shows and when it starts by itself, from the wall clock's time
/// handed in (UTC seconds): no clock, no IO, so suspend, a changed clock and daylight saving are tested with
/// a virtual one. Each start is reminded of once; after a suspend (or when the daemon starts, at login) only
/// the latest missed start is, late, and only while its meeting could still be on (`staleAfter` its start);
/// none is replayed in a burst. A meeting starts by itself only within `startGrace` of its time: one missed
/// by more (asleep, the daemon not running) is never started late, only reminded of, late.
public struct ReminderPlanner: Sendable {
    public struct Entry: Sendable, Equatable {
        public var schedule: StandupSchedule
        public var rules: TimeZoneRules
        /// How long after its start a missed start is still worth a reminder (the meeting's length, at least 15 min).
        public var staleAfter: Int64

        public init(schedule: StandupSchedule, rules: TimeZoneRules, meetingSeconds: Int) {
            self.schedule = schedule
            self.rules = rules
            self.staleAfter = Int64(max(meetingSeconds, 900))
        }
    }

    public enum Action: Equatable, Sendable {
        /// Show the reminder of the start at `start`; `isLate` when its time passed unseen (a suspend).
        case remind(SyncUp.ID, start: Int64, isLate: Bool)
        /// Start the meeting (the schedule asks for automatic starts).
        case start(SyncUp.ID, start: Int64)
    }

    private struct State: Sendable {
        var reminded: Int64 = .min
        var started: Int64 = .min
        var skipped: Int64 = .min
        var snooze: (start: Int64, until: Int64)?
        /// The reminder time the last evaluation planned to wake for: a reminder is late only when that
        /// wake came too late (a suspend), not when its schedule was set inside its lead.
        var planned: Int64?
    }

    private var states: [SyncUp.ID: State] = [:]
    /// How late a reminder may show and not be "late" (the timer's own slack).
    static let lateness: Int64 = 60
    /// How late an automatic start may still happen (the timer's own slack): later, nobody expects it.
    public static let startGrace: Int64 = 60
    /// Whether an evaluation has run: the first one is the daemon's start, and what its entries missed
    /// before it was missed unseen (late), unlike a schedule set later inside its lead.
    private var hasEvaluated = false

    public init() {}

    /// What is due at `now`, and when to look again (nil: nothing scheduled).
    public mutating func evaluate(now: Int64, entries: [SyncUp.ID: Entry]) -> (actions: [Action], wake: Int64?) {
        states = states.filter { entries[$0.key] != nil }
        let isStartUp = !hasEvaluated
        hasEvaluated = true
        var actions: [Action] = []
        var wake: Int64?
        func wakeAt(_ time: Int64?) {
            guard let time, time > now else { return }
            wake = min(wake ?? time, time)
        }
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) {
            var state = states[id] ?? State()
            let lead = Int64(entry.schedule.reminderMinutes) * 60
            if let due = entry.schedule.previous(atOrBefore: now + lead, rules: entry.rules), due > state.reminded {
                state.reminded = due
                if now <= due + entry.staleAfter, due != state.skipped {
                    let isLate =
                        (state.planned.map { $0 <= due - lead } ?? isStartUp) && now > due - lead + Self.lateness
                    actions.append(.remind(id, start: due, isLate: isLate))
                }
            }
            if let snooze = state.snooze {
                if now >= snooze.until {
                    state.snooze = nil
                    if snooze.start != state.skipped, now <= snooze.start + entry.staleAfter {
                        actions.append(.remind(id, start: snooze.start, isLate: false))
                    }
                } else {
                    wakeAt(snooze.until)
                }
            }
            if entry.schedule.autoStart, let due = entry.schedule.previous(atOrBefore: now, rules: entry.rules),
                due > state.started
            {
                state.started = due
                if now <= due + Self.startGrace, due != state.skipped { actions.append(.start(id, start: due)) }
            }
            state.planned = entry.schedule.next(after: now + lead, rules: entry.rules).map { $0 - lead }
            wakeAt(state.planned)
            if entry.schedule.autoStart { wakeAt(entry.schedule.next(after: now, rules: entry.rules)) }
            states[id] = state
        }
        return (actions, wake)
    }

    /// "Snooze 5 min": the reminder of `start` shows again at `until`.
    public mutating func snooze(_ id: SyncUp.ID, start: Int64, until: Int64) {
        states[id, default: State()].snooze = (start, until)
    }

    /// The start skipped with "Skip today", if any: the next start shown is the one after it.
    public func skipped(_ id: SyncUp.ID) -> Int64? {
        states[id].map(\.skipped).flatMap { $0 == .min ? nil : $0 }
    }

    /// "Skip today": no more reminder and no automatic start for `start`.
    public mutating func skip(_ id: SyncUp.ID, start: Int64) {
        states[id, default: State()].skipped = start
        states[id, default: State()].snooze = nil
    }
}
