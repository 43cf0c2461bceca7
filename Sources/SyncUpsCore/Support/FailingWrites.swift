/// Which writes of the user's data are failing now: the one answer to "is a write failing". Every writer
/// reports here (`sync-ups.json` and `former-attendees.json`, each meeting's details, journal writes and
/// removals, `syncups.schedule`, the voice profiles); `status.persistence.lastError` is `lastError`, and the
/// `Change` each report returns is the event to publish: `persistence.failed` naming a new failure (not a
/// retry failing alike), and `persistence.recovered` only once nothing fails any more. Pure: the daemon's state owns one
/// (`DaemonState.failingWrites`) and publishes what it returns.
public struct FailingWrites: Sendable, Equatable {
    /// One write that can fail, and later work.
    public enum Write: Hashable, Sendable {
        /// `sync-ups.json` (with `former-attendees.json`, written first in the same save).
        case syncUps
        /// A saved meeting's details file.
        case details(Meeting.ID)
        /// A meeting's journal (what a crash recovers it from).
        case journal(Meeting.ID)
        /// The removal of a meeting's journal (one left behind recovers its meeting at the next start).
        case journalRemoval(Meeting.ID)
        /// `syncups.schedule`.
        case schedule
        /// The voice profiles.
        case voiceProfiles
    }

    /// What a report changes, for the clients.
    public enum Change: Sendable, Equatable {
        /// `persistence.failed` with this error.
        case failed(String)
        /// `persistence.recovered`: nothing fails any more.
        case recovered
        /// Nothing to say.
        case unchanged
    }

    private var errors: [Write: String] = [:]
    /// The failing writes, the most recent failure last.
    private var order: [Write] = []

    public init() {}

    /// Nothing fails.
    public var isEmpty: Bool { errors.isEmpty }

    /// The most recent failure of a write that still fails.
    public var lastError: String? { order.last.flatMap { errors[$0] } }

    /// Why `write` fails, while it does.
    public func error(of write: Write) -> String? { errors[write] }

    /// `write` failed with `error`, for the first time or again: the latest failure from now on. Said when it
    /// is new: no failing write has this very error now. A retry that fails the same way says nothing new, so
    /// a full disk is one event (and one desktop notification), not one per retry; nor does another write
    /// failing with the same text (which names the file and the cause): the 300 meetings of a deleted sync-up
    /// waiting for one deletion record that cannot be written were 300 events, where one is the news.
    public mutating func failed(_ write: Write, _ error: String) -> Change {
        let isSaid = errors.values.contains(error)
        if errors.updateValue(error, forKey: write) != nil { order.removeAll { $0 == write } }
        order.append(write)
        return isSaid ? .unchanged : .failed(error)
    }

    /// `write` worked (or is no longer wanted): the failure is over once no other write fails.
    public mutating func succeeded(_ write: Write) -> Change {
        succeeded([write])
    }

    /// Several writes worked or are no longer wanted (a deleted meeting's details and journal writes).
    public mutating func succeeded(_ writes: [Write]) -> Change {
        let ended = Set(writes.filter { errors.removeValue(forKey: $0) != nil })
        guard !ended.isEmpty else { return .unchanged }
        order.removeAll { ended.contains($0) }
        return errors.isEmpty ? .recovered : .unchanged
    }
}
