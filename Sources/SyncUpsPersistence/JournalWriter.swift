import SyncUpsCore
import SyncUpsPOSIX
import Synchronization

/// Writes meeting journals off the event loop. Only the newest version of a meeting's journal waiting to be
/// written is written (a long meeting's journal is megabytes, rewritten at every settled utterance), and a
/// removal replaces any write still waiting, so a journal never comes back after it was removed.
///
/// A deleted (or discarded) meeting's removal takes all its files, not only the journal (a deleted sync-up's
/// meetings together, listing `meetings/` once). It is recorded in `deleted-meetings.json`
/// (`DeletedMeetingsFile`) before any file goes, so a restart does not recover what the user deleted, and
/// removes what stayed; the record goes once every file has. A deletion the record cannot take (a full disk)
/// removes nothing: its files stay, and its removal's report says why, until a retry records it. A deletion
/// is called off when the user brings its meeting back (`keep`: `sync-ups.json` names it again, restored from a
/// backup): its files stay, and so does whatever the removal had not taken yet.
public final class JournalWriter: Sendable {
    private enum Job: Sendable {
        case write(MeetingJournal)
        case remove(isDeletion: Bool)

        var isDeletion: Bool {
            if case .remove(isDeletion: true) = self { true } else { false }
        }
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
        /// Discarded meetings, which `sync-ups.json` never named: their files go even when the record cannot
        /// take them (nothing can list them without their files; kept, the journal would bring them back).
        var discarded: Set<Meeting.ID> = []
        /// The removals under way on the writer's thread, and whether each is a deletion.
        var running: [Meeting.ID: Bool] = [:]
        /// Deletions called off (`keep`) that the record may still name, or whose removal is under way: that
        /// removal takes no more files, and the record's next write drops them.
        var calledOff: Set<Meeting.ID> = []

        /// The deletions waiting for a drain, or for their turn in the one under way.
        var queuedDeletions: Set<Meeting.ID> {
            var queued = Set<Meeting.ID>()
            for (meeting, job) in jobs where job.isDeletion { queued.insert(meeting) }
            for (meeting, job) in batch where job.isDeletion { queued.insert(meeting) }
            return queued
        }

        /// The deleted meetings `named` holds whose deletion is not over: recorded, unfinished, waiting or
        /// under way.
        func deletions(in named: Set<Meeting.ID>) -> Set<Meeting.ID> {
            var found = recorded.union(deleting).union(queuedDeletions).filter(named.contains)
            for (meeting, isDeletion) in running where isDeletion && named.contains(meeting) { found.insert(meeting) }
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
    /// `fileSystem` writes the record (a `FaultyFileSystem`'s in tests).
    /// The meetings `deleted-meetings.json` names (recovery skipped their journals) are removed at once, but
    /// for those `keeping` holds: the meetings `sync-ups.json` names, which the user put back while the daemon
    /// was down. Their deletion is called off, and the record drops them.
    public init(
        directory: DataDirectory,
        keeping named: Set<Meeting.ID> = [],
        fileSystem: FileSystem = .live,
        onWrite: @escaping @Sendable (Meeting.ID, SystemError?) -> Void,
        onRemoval: @escaping @Sendable (Meeting.ID, SystemError?) -> Void
    ) throws(SystemError) {
        self.directory = directory
        self.onWrite = onWrite
        self.onRemoval = onRemoval
        deletedFile = DeletedMeetingsFile(directory: directory, fileSystem: fileSystem)
        let recorded = deletedFile.load().meetings
        let kept = recorded.filter(named.contains)
        state = Mutex(State(recorded: recorded, calledOff: kept))
        worker = try SerialWorker(name: "syncups-journal")
        delete(recorded.filter { !kept.contains($0) }.sorted { $0.description < $1.description })
        if !kept.isEmpty { startDrain() }
    }

    /// Queues `journal` in place of any version of it not yet written.
    public func write(_ journal: MeetingJournal) {
        enqueue(.write(journal), for: [journal.meeting])
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
        enqueue(.remove(isDeletion: isDeletion), for: [meeting])
    }

    /// Removes every file of a meeting discarded before it was saved, recorded as a deletion is, but removed even
    /// when the record cannot take it.
    public func discard(_ meeting: Meeting.ID) {
        state.withLock { _ = $0.discarded.insert(meeting) }
        enqueue(.remove(isDeletion: true), for: [meeting])
    }

    /// Removes every file of the deleted meetings (a deleted sync-up's), queued at once: one removal, after
    /// one record of them all, however many they are.
    public func delete(_ meetings: [Meeting.ID]) {
        guard !meetings.isEmpty else { return }
        enqueue(.remove(isDeletion: true), for: meetings)
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

    /// The deletions whose files stay because the record could not take them (none called off): after
    /// `finish`, what a restart finds named by nothing (`MeetingAside` sets them aside then).
    public var unrecordedDeletions: Set<Meeting.ID> {
        state.withLock { $0.deleting.subtracting($0.recorded).subtracting($0.calledOff) }
    }

    /// Does what is queued, then ends the thread; for shutdown.
    public func finish() {
        worker.finish()
        drain()  // anything queued after the thread ended
    }

    private func enqueue(_ job: Job, for meetings: [Meeting.ID]) {
        state.withLock { state in
            for meeting in meetings {
                if state.jobs.updateValue(job, forKey: meeting) == nil { state.order.append(meeting) }
                // Deleted again after the user brought it back: a deletion again.
                if job.isDeletion { state.calledOff.remove(meeting) }
            }
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

    /// Does the jobs queued, in order (consecutive removals together; a removal under way can be called off),
    /// then writes the record without the deletions called off.
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
                // With the removals right behind it, together: a deleted sync-up's thousands of meetings list
                // `meetings/` once and write the record twice, not once each.
                var removals = [(meeting, isDeletion)]
                while let next = nextRemoval() { removals.append(next) }
                for (meeting, failure) in removeNow(removals) { onRemoval(meeting, failure) }
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

    /// The next job if it is a removal (taken), else nil (left for `next`).
    private func nextRemoval() -> (Meeting.ID, Bool)? {
        state.withLock { state in
            while state.taken < state.batchOrder.count {
                let meeting = state.batchOrder[state.taken]
                switch state.batch[meeting] {
                case nil:
                    state.taken += 1
                case .remove(let isDeletion)?:
                    state.taken += 1
                    state.batch[meeting] = nil
                    return (meeting, isDeletion)
                case .write?:
                    return nil
                }
            }
            return nil
        }
    }

    /// Removes the journals, and for a deletion every file of the meeting, keeping `deleted-meetings.json` true:
    /// the deletions are recorded there before anything is removed (a kill while thousands go leaves none
    /// for good: the next start finishes them), and each goes from it once its files are gone or its deletion
    /// is called off (any later removal of a deletion under way, or of a recorded one, is a deletion too).
    /// A deletion the record could not take keeps every file, the journal too: with them gone, a kill before
    /// `sync-ups.json` drops the meeting would list it without its files. Its failure is the record's
    /// (`unrecordedDeletion`), and the caller's retry is a deletion that records it first.
    /// Returns what still fails, in order.
    private func removeNow(_ removals: [(Meeting.ID, Bool)]) -> [(Meeting.ID, SystemError?)] {
        let (deletions, toRecord, discarded) = state.withLock { state in
            var deletions = Set<Meeting.ID>()
            for (meeting, asked) in removals {
                let isDeletion =
                    asked
                    || (state.recorded.contains(meeting) || state.deleting.contains(meeting))
                        && !state.calledOff.contains(meeting)
                state.running[meeting] = isDeletion
                if isDeletion { deletions.insert(meeting) }
            }
            return (deletions, deletions.subtracting(state.recorded), state.discarded)
        }
        var failures: [Meeting.ID: SystemError] = [:]
        var unrecorded = Set<Meeting.ID>()
        if !toRecord.isEmpty {
            do throws(SystemError) {
                try updateRecord { $0.formUnion(toRecord) }
            } catch {
                unrecorded = toRecord.subtracting(discarded)
                let failure = unrecordedDeletion(error)
                for meeting in unrecorded { failures[meeting] = failure }
            }
        }
        for (meeting, _) in removals where !unrecorded.contains(meeting) {
            do {
                try MeetingJournal.remove(meeting, in: directory)
            } catch {
                failures[meeting] = error
            }
        }
        // The rest after the journal, whose failure (what would bring the meeting back) is the one said.
        let removing = deletions.subtracting(state.withLock { $0.calledOff }).subtracting(unrecorded)
        for (meeting, failure) in directory.removeSidecars(of: removals.map(\.0).filter(removing.contains)) {
            failures[meeting] = failures[meeting] ?? failure
        }
        let calledOff = state.withLock { state in
            for (meeting, _) in removals {
                state.running[meeting] = nil
                state.discarded.remove(meeting)
            }
            // A deletion called off: nothing is to go any more, and it is no deletion now.
            for meeting in deletions where !state.calledOff.contains(meeting) {
                if failures[meeting] == nil { state.deleting.remove(meeting) } else { state.deleting.insert(meeting) }
            }
            return state.calledOff
        }
        // A failure here leaves the record naming deletions whose files are gone: the next start finds nothing
        // left of them to remove.
        try? updateRecord { recorded in
            for (meeting, _) in removals where !calledOff.contains(meeting) && !unrecorded.contains(meeting) {
                if failures[meeting] == nil {
                    recorded.remove(meeting)
                } else if deletions.contains(meeting) {
                    recorded.insert(meeting)
                }
            }
        }
        return removals.map { meeting, _ in
            guard let failure = failures[meeting], !calledOff.contains(meeting) else { return (meeting, nil) }
            return (meeting, failure)
        }
    }

    /// The failure of a deletion whose files all stay because the record could not take it: it names the
    /// record's path, then what failed there, and that failure's errno (`isUnrecordedDeletion`).
    private func unrecordedDeletion(_ error: SystemError) -> SystemError {
        SystemError("\(Self.unrecordedPrefix)\(deletedFile.path) (\(error.operation))", error.errno)
    }

    private static let unrecordedPrefix = "cannot record the deletion in "

    /// Whether a removal's failure is a deletion's that removed nothing, its record unwritten.
    public static func isUnrecordedDeletion(_ error: SystemError) -> Bool {
        error.operation.hasPrefix(unrecordedPrefix)
    }

    /// Writes the record as `change` leaves it, without the deletions called off, if that changes it.
    /// The deletions queued are kept in it too: a removal done while the next waits for its turn (a deleted
    /// sync-up's meetings queued while the first of them went) does not take the record away from them.
    private func updateRecord(_ change: (inout Set<Meeting.ID>) -> Void = { _ in }) throws(SystemError) {
        let (recorded, calledOff, queued) = state.withLock { ($0.recorded, $0.calledOff, $0.queuedDeletions) }
        var next = recorded
        change(&next)
        next.formUnion(queued)
        next.subtract(calledOff)
        if next != recorded { try deletedFile.write(next) }
        state.withLock { state in
            state.recorded = next
            state.calledOff.subtract(calledOff)
        }
    }
}
