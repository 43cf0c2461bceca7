import SyncUpsCore
import SyncUpsPOSIX
import Synchronization

/// Writes meeting journals off the event loop. Only the newest version of a meeting's journal waiting to be
/// written is written (a long meeting's journal is megabytes, rewritten at every settled utterance), and a
/// removal replaces any write still waiting, so a journal never comes back after it was removed.
///
/// A deleted (or discarded) meeting's removal takes all its files, not only the journal. One that fails is
/// recorded in `deleted-meetings.json` (`DeletedMeetingsFile`) before anything else is done, so a restart does
/// not recover what the user deleted, and removes what stayed; the record goes once every file has. A deletion
/// is called off when the user brings its meeting back (`keep`: `sync-ups.json` names it again, restored from a
/// backup): its files stay, and so does whatever the removal had not taken yet.
public final class JournalWriter: Sendable {
    private enum Job: Sendable {
        case write(MeetingJournal)
        case remove(isDeletion: Bool)
    }

    /// What the loop's thread queues and calls off and the writer's thread does, under one lock.
    private struct State: Sendable {
        /// Waiting for the next drain, newest version of each meeting's only.
        var jobs: [Meeting.ID: Job] = [:]
        var order: [Meeting.ID] = []
        var isDrainQueued = false
        /// Taken by the drain under way and not yet done (`taken` of `batchOrder` are), in the order queued.
        var batch: [Meeting.ID: Job] = [:]
        var batchOrder: [Meeting.ID] = []
        var taken = 0
        /// What `deleted-meetings.json` holds: deleted meetings whose files are still there.
        var recorded: Set<Meeting.ID> = []
        /// Deleted meetings whose files are not all gone yet, recorded or not: every later removal of one (the
        /// controller's retries, the shutdown's last try) is a deletion too, so it records the deletion if the
        /// first try could not.
        var deleting: Set<Meeting.ID> = []
        /// The removal under way on the writer's thread.
        var running: (meeting: Meeting.ID, isDeletion: Bool)?
        /// Deletions called off (`keep`) that the record may still name, or whose removal is under way: that
        /// removal takes no more files, and the record's next write drops them.
        var calledOff: Set<Meeting.ID> = []

        /// The deleted meetings `named` holds whose deletion is not over: recorded, unfinished, waiting or
        /// under way.
        func deletions(in named: Set<Meeting.ID>) -> Set<Meeting.ID> {
            var found = recorded.union(deleting).filter(named.contains)
            for (meeting, job) in jobs.merging(batch, uniquingKeysWith: { queued, _ in queued })
            where named.contains(meeting) {
                if case .remove(let isDeletion) = job, isDeletion { found.insert(meeting) }
            }
            if let running, running.isDeletion, named.contains(running.meeting) { found.insert(running.meeting) }
            return found
        }
    }

    private let directory: DataDirectory
    private let state: Mutex<State>
    /// Held by a drain: one at a time, even one run on the caller's thread (`SerialWorker.run` with its queue
    /// full, or after `finish`).
    private let draining = Mutex(())
    private let worker: SerialWorker
    private let onWrite: @Sendable (Meeting.ID, SystemError?) -> Void
    private let onRemoval: @Sendable (Meeting.ID, SystemError?) -> Void
    private let deletedFile: DeletedMeetingsFile

    /// `onWrite` runs after each write (on the writer's thread, or the caller's for `writeFirst`), with its error
    /// if it failed; `onRemoval` after each removal,
    /// with its error if the journal is still there (the caller retries: see `MeetingJournal.remove`).
    /// The meetings `deleted-meetings.json` names (recovery skipped their journals) are removed at once, but
    /// for those `keeping` holds: the meetings `sync-ups.json` names, which the user put back while the daemon
    /// was down. Their deletion is called off, and the record drops them.
    public init(
        directory: DataDirectory,
        keeping named: Set<Meeting.ID> = [],
        onWrite: @escaping @Sendable (Meeting.ID, SystemError?) -> Void,
        onRemoval: @escaping @Sendable (Meeting.ID, SystemError?) -> Void
    ) throws(SystemError) {
        self.directory = directory
        self.onWrite = onWrite
        self.onRemoval = onRemoval
        deletedFile = DeletedMeetingsFile(directory: directory)
        let recorded = deletedFile.load().meetings
        let kept = recorded.filter(named.contains)
        state = Mutex(State(recorded: recorded, calledOff: kept))
        worker = try SerialWorker(name: "syncups-journal")
        for meeting in recorded where !kept.contains(meeting) { remove(meeting, isDeletion: true) }
        if !kept.isEmpty { startDrain() }
    }

    /// Queues `journal` in place of any version of it not yet written.
    public func write(_ journal: MeetingJournal) {
        enqueue(.write(journal), for: journal.meeting)
    }

    /// Writes a new meeting's first journal on the caller's thread: small, and on disk before anyone is told
    /// the meeting started, so a crash right after still recovers it. Later versions go through `write`.
    public func writeFirst(_ journal: MeetingJournal) {
        do {
            try journal.write(in: directory)
            onWrite(journal.meeting, nil)
        } catch {
            onWrite(journal.meeting, error)
        }
    }

    /// Removes the meeting's journal after the write in progress, if any; drops the ones waiting.
    /// `isDeletion`: the user deleted or discarded the meeting, so a journal that stays must not recover it.
    public func remove(_ meeting: Meeting.ID, isDeletion: Bool = false) {
        enqueue(.remove(isDeletion: isDeletion), for: meeting)
    }

    /// The state names these meetings (again: a reload of `sync-ups.json`): the user brought back any of them
    /// that was being deleted. Its deletion is called off: a removal of it waiting is dropped, one under way
    /// takes no more files, and the record drops it at its next write, queued now. Returns the meetings whose
    /// deletion was called off (the caller stops retrying it).
    public func keep(_ named: Set<Meeting.ID>) -> Set<Meeting.ID> {
        let calledOff = state.withLock { state in
            let calledOff = state.deletions(in: named)
            for meeting in calledOff {
                if case .remove = state.jobs[meeting] { state.jobs[meeting] = nil }
                if case .remove = state.batch[meeting] { state.batch[meeting] = nil }
            }
            state.deleting.subtract(calledOff)
            state.calledOff.formUnion(calledOff)
            return calledOff
        }
        if !calledOff.isEmpty { startDrain() }
        return calledOff
    }

    /// Calls `done` on the writer's thread once everything queued before it is done: the removals of
    /// deleted meetings, and their record in `deleted-meetings.json` where one stays. (At once on the
    /// caller's thread after `finish`.)
    public func whenDone(_ done: @escaping @Sendable () -> Void) {
        worker.run(done)
    }

    /// Does what is queued, then ends the thread; for shutdown.
    public func finish() {
        worker.finish()
        drain()  // anything queued after the thread ended
    }

    private func enqueue(_ job: Job, for meeting: Meeting.ID) {
        state.withLock { state in
            if state.jobs.updateValue(job, forKey: meeting) == nil { state.order.append(meeting) }
            // Deleted again after the user brought it back: a deletion again.
            if case .remove(isDeletion: true) = job { state.calledOff.remove(meeting) }
        }
        startDrain()
    }

    private func startDrain() {
        let starts = state.withLock { state in
            defer { state.isDrainQueued = true }
            return !state.isDrainQueued
        }
        if starts { worker.run { [self] in drain() } }
    }

    /// Does the jobs queued, one at a time in order (a removal under way can be called off), then writes the
    /// record without the deletions called off.
    private func drain() {
        draining.withLock { _ in drainBatch() }
    }

    private func drainBatch() {
        state.withLock { state in
            state.batch = state.jobs
            state.batchOrder = state.order
            state.taken = 0
            state.jobs = [:]
            state.order = []
            state.isDrainQueued = false  // what is queued from now on waits for the next drain
        }
        while let (meeting, job) = next() {
            switch job {
            case .write(let journal):
                do {
                    try journal.write(in: directory)
                    onWrite(meeting, nil)
                } catch {
                    onWrite(meeting, error)
                }
            case .remove(let isDeletion):
                onRemoval(meeting, removeNow(meeting, isDeletion: isDeletion))
            }
        }
        try? updateRecord()  // a failure leaves them to the record's next write (and the next start drops them)
    }

    private func next() -> (Meeting.ID, Job)? {
        state.withLock { state in
            while state.taken < state.batchOrder.count {
                let meeting = state.batchOrder[state.taken]
                state.taken += 1
                if let job = state.batch.removeValue(forKey: meeting) { return (meeting, job) }
            }
            state.batchOrder = []
            state.taken = 0
            return nil
        }
    }

    /// Removes the journal, or for a deletion every file of the meeting, keeping `deleted-meetings.json` true:
    /// a deleted meeting whose files stay is recorded there first thing, and goes from it once they are gone
    /// (any later removal of a deletion under way, or of a recorded one, is a deletion too) or once its deletion
    /// is called off. Returns what still fails.
    private func removeNow(_ meeting: Meeting.ID, isDeletion asked: Bool) -> SystemError? {
        let isDeletion = state.withLock { state in
            let isDeletion =
                asked
                || (state.recorded.contains(meeting) || state.deleting.contains(meeting))
                    && !state.calledOff.contains(meeting)
            state.running = (meeting, isDeletion)
            return isDeletion
        }
        var failure: SystemError?
        do {
            try MeetingJournal.remove(meeting, in: directory)
        } catch {
            failure = error
        }
        // The rest after the journal, whose failure (what would bring the meeting back) is the one said.
        if isDeletion, !state.withLock({ $0.calledOff.contains(meeting) }) {
            failure = failure ?? directory.removeSidecars(of: meeting)
        }
        let isCalledOff = state.withLock { state in
            state.running = nil
            guard !state.calledOff.contains(meeting) else { return true }
            if isDeletion {
                if failure == nil { state.deleting.remove(meeting) } else { state.deleting.insert(meeting) }
            }
            return false
        }
        if isCalledOff { return nil }  // nothing is to go any more
        do {
            try updateRecord { recorded in
                if failure == nil {
                    recorded.remove(meeting)
                } else if isDeletion {
                    recorded.insert(meeting)
                }
            }
        } catch {
            if let failure {
                return SystemError(
                    "\(failure.operation) (and recording the deletion in \(DeletedMeetingsFile.fileName) failed too, "
                        + "\(error), so a restart would bring the meeting back)", failure.errno)
            }
            // The journal is gone; a stale entry names nothing, and goes with the next write of the record.
        }
        return failure
    }

    /// Writes the record as `change` leaves it, without the deletions called off, if that changes it.
    private func updateRecord(_ change: (inout Set<Meeting.ID>) -> Void = { _ in }) throws(SystemError) {
        let (recorded, calledOff) = state.withLock { ($0.recorded, $0.calledOff) }
        var next = recorded
        change(&next)
        next.subtract(calledOff)
        if next != recorded { try deletedFile.write(next) }
        state.withLock { state in
            state.recorded = next
            state.calledOff.subtract(calledOff)
        }
    }
}
