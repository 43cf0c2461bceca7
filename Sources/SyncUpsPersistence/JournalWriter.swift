import SyncUpsCore
import SyncUpsPOSIX
import Synchronization

/// Writes meeting journals off the event loop. Only the newest version of a meeting's journal waiting to be
/// written is written (a long meeting's journal is megabytes, rewritten at every settled utterance), and a
/// removal replaces any write still waiting, so a journal never comes back after it was removed.
public final class JournalWriter: Sendable {
    private enum Job: Sendable {
        case write(MeetingJournal)
        case remove
    }

    private struct Pending: Sendable {
        var jobs: [Meeting.ID: Job] = [:]
        var order: [Meeting.ID] = []
        var isDrainQueued = false
    }

    private let directory: DataDirectory
    private let pending = Mutex(Pending())
    private let worker: SerialWorker
    private let onError: @Sendable (Meeting.ID, SystemError) -> Void
    private let onRemoval: @Sendable (Meeting.ID, SystemError?) -> Void

    /// `onError` runs on the writer's thread when a journal cannot be written; `onRemoval` after each removal,
    /// with its error if the journal is still there (the caller retries: see `MeetingJournal.remove`).
    public init(
        directory: DataDirectory, onError: @escaping @Sendable (Meeting.ID, SystemError) -> Void,
        onRemoval: @escaping @Sendable (Meeting.ID, SystemError?) -> Void
    ) throws(SystemError) {
        self.directory = directory
        self.onError = onError
        self.onRemoval = onRemoval
        worker = try SerialWorker(name: "syncups-journal")
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
        } catch {
            onError(journal.meeting, error)
        }
    }

    /// Removes the meeting's journal after the write in progress, if any; drops the ones waiting.
    public func remove(_ meeting: Meeting.ID) {
        enqueue(.remove, for: meeting)
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
        for meeting in order {
            switch jobs[meeting] {
            case .write(let journal)?:
                do {
                    try journal.write(in: directory)
                } catch {
                    onError(meeting, error)
                }
            case .remove?:
                do {
                    try MeetingJournal.remove(meeting, in: directory)
                    onRemoval(meeting, nil)
                } catch {
                    onRemoval(meeting, error)
                }
            case nil:
                break
            }
        }
    }
}
