/// Saved meetings whose files are not yet as they should be: details waiting to be written, and journals whose
/// removal failed. The one record of what waits, whether it failed and when to try again (the failure itself is
/// `FailingWrites`'). Pure: the daemon performs each write or removal and hands back how it went; a meeting
/// deleted meanwhile is no longer waited for (its journal's removal still is).
public struct DetailsWrites<Details> {
    /// A meeting's details waiting to be written.
    public struct Pending {
        public var details: Details
        /// Whether a write of them failed (the first failure is when the daemon keeps them for a restart).
        public var hasFailed = false
        /// The wait before the next try after a failure (`delay`), growing with each.
        public var backoff: Backoff
    }

    /// What a write's report means.
    public enum Outcome: Sendable, Equatable {
        /// Written: the meeting's journal may go.
        case written
        /// The meeting was deleted while its details were written: a file written now goes too.
        case notPending
        /// Failed: try again `after`; `isFirstFailure` is true when no write of these details failed before
        /// (the daemon then keeps the meeting's journal for a restart).
        case retry(after: Duration, isFirstFailure: Bool)
    }

    public private(set) var pending: [Meeting.ID: Pending] = [:]
    /// The journals whose removal failed, with the back-off before the next try: one left behind would recover
    /// its meeting at the next start.
    public private(set) var removals: [Meeting.ID: Backoff] = [:]
    private let backoff: Backoff

    /// The back-off between failed writes: `initialDelay`, doubling to `maximumDelay`.
    public init(initialDelay: Duration, maximumDelay: Duration) {
        backoff = Backoff(initial: initialDelay, maximum: maximumDelay)
    }

    public var isEmpty: Bool { pending.isEmpty }

    /// The details of `meeting` while they wait (what `meetings.get` answers with meanwhile).
    public func details(of meeting: Meeting.ID) -> Details? { pending[meeting]?.details }

    /// A saved meeting's details are to be written.
    public mutating func queue(_ meeting: Meeting.ID, _ details: Details) {
        pending[meeting] = Pending(details: details, backoff: backoff)
    }

    /// How a write of `meeting`'s details went.
    public mutating func report(_ meeting: Meeting.ID, failed: Bool) -> Outcome {
        guard var entry = pending[meeting] else { return .notPending }
        guard failed else {
            pending[meeting] = nil
            return .written
        }
        let isFirstFailure = !entry.hasFailed
        entry.hasFailed = true
        let delay = entry.backoff.next()
        pending[meeting] = entry
        return .retry(after: delay, isFirstFailure: isFirstFailure)
    }

    /// Saved meetings were deleted: their details are no longer written. Returns those that were waiting.
    public mutating func delete(_ meetings: [Meeting.ID]) -> [Meeting.ID] {
        meetings.filter { pending.removeValue(forKey: $0) != nil }
    }

    /// How the removal of `meeting`'s journal went: nil when it is gone, else the wait before the next try.
    public mutating func journalRemoved(_ meeting: Meeting.ID, failed: Bool) -> Duration? {
        guard failed else {
            removals[meeting] = nil
            return nil
        }
        var backoff = removals[meeting] ?? backoff
        let delay = backoff.next()
        removals[meeting] = backoff
        return delay
    }
}

extension DetailsWrites: Sendable where Details: Sendable {}
extension DetailsWrites.Pending: Sendable where Details: Sendable {}
