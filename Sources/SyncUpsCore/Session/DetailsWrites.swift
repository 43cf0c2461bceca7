/// Saved meetings whose details file is not written yet: the one record of what waits to be written, whether
/// its write failed, when to try again, and the failure `status` reports meanwhile. Pure: the daemon performs
/// each write and hands back how it went; a meeting deleted meanwhile is no longer waited for.
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
        /// Written: the meeting's journal may go. `recovered`: no write is failing any more (the error ends).
        case written(recovered: Bool)
        /// The meeting was deleted while its details were written: a file written now goes too.
        case notPending
        /// Failed: try again `after`; `isFirstFailure` is true when no write of these details failed before
        /// (the daemon then keeps the meeting's journal for a restart).
        case retry(after: Duration, isFirstFailure: Bool)
    }

    public private(set) var pending: [Meeting.ID: Pending] = [:]
    /// Why writing failed, until no meeting's details wait any more (for `status` and `persistence.failed`).
    public private(set) var lastError: String?
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

    /// How a write of `meeting`'s details went: `error` nil when it was written.
    public mutating func report(_ meeting: Meeting.ID, error: String?) -> Outcome {
        guard var entry = pending[meeting] else { return .notPending }
        guard let error else {
            pending[meeting] = nil
            return .written(recovered: clearErrorIfNonePending())
        }
        lastError = error
        let isFirstFailure = !entry.hasFailed
        entry.hasFailed = true
        let delay = entry.backoff.next()
        pending[meeting] = entry
        return .retry(after: delay, isFirstFailure: isFirstFailure)
    }

    /// Saved meetings were deleted: their details are no longer written. Returns those that were waiting, and
    /// whether the failure reported ends with them.
    public mutating func delete(_ meetings: [Meeting.ID]) -> (deleted: [Meeting.ID], recovered: Bool) {
        let deleted = meetings.filter { pending.removeValue(forKey: $0) != nil }
        return (deleted, clearErrorIfNonePending())
    }

    /// Once nothing waits (written, or deleted), the error ends; true when it did just now.
    private mutating func clearErrorIfNonePending() -> Bool {
        guard lastError != nil && pending.isEmpty else { return false }
        lastError = nil
        return true
    }
}

extension DetailsWrites: Sendable where Details: Sendable {}
extension DetailsWrites.Pending: Sendable where Details: Sendable {}
