import SyncUpsCore
import SyncUpsPOSIX
import Synchronization

/// Writes meeting journals off the event loop. Only the newest version of a meeting's journal waiting to be
/// written is written (a long meeting's journal is megabytes, rewritten at every settled utterance), and a
/// removal replaces any write still waiting, so a journal never comes back after it was removed.
///
/// A deleted (or discarded) meeting's removal takes all its files, not only the journal. One that fails is
/// recorded in `deleted-meetings.json` (`DeletedMeetingsFile`) before anything else is done, so a restart does
/// not recover what the user deleted, and removes what stayed; the record goes once every file has.
public final class JournalWriter: Sendable {
    private enum Job: Sendable {
        case write(MeetingJournal)
        case remove(isDeletion: Bool)
    }

    private struct Pending: Sendable {
        var jobs: [Meeting.ID: Job] = [:]
        var order: [Meeting.ID] = []
        var isDrainQueued = false
    }

    private let directory: DataDirectory
    private let pending = Mutex(Pending())
    private let worker: SerialWorker
    private let onWrite: @Sendable (Meeting.ID, SystemError?) -> Void
    private let onRemoval: @Sendable (Meeting.ID, SystemError?) -> Void
    private let deletedFile: DeletedMeetingsFile
    /// What `deleted-meetings.json` holds: deleted meetings whose journal is still there. Used by the drain.
    private let deleted: Mutex<Set<Meeting.ID>>
    /// Deleted meetings whose files are not all gone yet, recorded or not: every later removal of one (the
    /// controller's retries, the shutdown's last try) is a deletion too, so it records the deletion if the
    /// first try could not.
    private let deleting = Mutex<Set<Meeting.ID>>([])

    /// `onWrite` runs after each write (on the writer's thread, or the caller's for `writeFirst`), with its error
    /// if it failed; `onRemoval` after each removal,
    /// with its error if the journal is still there (the caller retries: see `MeetingJournal.remove`).
    /// The journals `deleted-meetings.json` names (recovery skipped them) are removed at once.
    public init(
        directory: DataDirectory,
        onWrite: @escaping @Sendable (Meeting.ID, SystemError?) -> Void,
        onRemoval: @escaping @Sendable (Meeting.ID, SystemError?) -> Void
    ) throws(SystemError) {
        self.directory = directory
        self.onWrite = onWrite
        self.onRemoval = onRemoval
        deletedFile = DeletedMeetingsFile(directory: directory)
        let deleted = deletedFile.load().meetings
        self.deleted = Mutex(deleted)
        worker = try SerialWorker(name: "syncups-journal")
        for meeting in deleted { remove(meeting, isDeletion: true) }
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
        let startsDrain = pending.withLock { pending in
            if pending.jobs.updateValue(job, forKey: meeting) == nil { pending.order.append(meeting) }
            defer { pending.isDrainQueued = true }
            return !pending.isDrainQueued
        }
        if startsDrain { worker.run { [self] in drain() } }
    }

    private func drain() {
        let (jobs, order) = pending.withLock { pending in
            defer { pending = Pending() }
            return (pending.jobs, pending.order)
        }
        // Listed once for the whole batch, at its first deletion (a deleted sync-up's meetings are one batch).
        var temporaries: DataDirectory.TemporaryFiles?
        for meeting in order {
            switch jobs[meeting] {
            case .write(let journal)?:
                do {
                    try journal.write(in: directory)
                    onWrite(meeting, nil)
                } catch {
                    onWrite(meeting, error)
                }
            case .remove(let isDeletion)?:
                onRemoval(meeting, removeNow(meeting, isDeletion: isDeletion, temporaries: &temporaries))
            case nil:
                break
            }
        }
    }

    /// Removes the journal, or for a deletion every file of the meeting, keeping `deleted-meetings.json` true:
    /// a deleted meeting whose files stay is recorded there first thing, and goes from it once they are gone
    /// (any later removal of a deletion under way, or of a recorded one, is a deletion too). Returns what still
    /// fails.
    private func removeNow(
        _ meeting: Meeting.ID, isDeletion asked: Bool, temporaries: inout DataDirectory.TemporaryFiles?
    ) -> SystemError? {
        let recorded = deleted.withLock { $0 }
        let isDeletion = asked || recorded.contains(meeting) || deleting.withLock { $0.contains(meeting) }
        var failure: SystemError?
        do {
            try MeetingJournal.remove(meeting, in: directory)
        } catch {
            failure = error
        }
        if isDeletion {
            // The rest after the journal, whose failure (what would bring the meeting back) is the one said.
            if temporaries == nil { temporaries = directory.temporaryFiles() }
            let rest = directory.removeSidecars(of: meeting, listed: temporaries)
            failure = failure ?? rest
            deleting.withLock { deleting in
                if failure == nil { deleting.remove(meeting) } else { deleting.insert(meeting) }
            }
        }
        var next = recorded
        if failure == nil {
            next.remove(meeting)
        } else if isDeletion {
            next.insert(meeting)
        }
        guard next != recorded else { return failure }
        do {
            try deletedFile.write(next)
            deleted.withLock { $0 = next }
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
}
