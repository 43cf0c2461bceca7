import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// What the journal writer does: the running meeting's journal, and the removal of meetings' journals and
/// files after a save or a deletion (and a deletion called off), until the writer finishes at shutdown.
extension SessionController {
    /// The meeting's journal as the machine is now. The first version is written before `session.start` is
    /// answered (a crash right after still recovers the meeting); the later ones, megabytes in a long meeting,
    /// off the loop.
    ///
    /// At most one a second: building one copies the whole transcript and its segments, which a flood of
    /// settled utterances must not do each time. (A crash loses at most the last second of text; the audio
    /// has it.)
    func writeJournal(_ session: ActiveSession) {
        guard session.hasJournal else {
            session.hasJournal = true
            session.lastJournal = loop.now()
            journals.writeFirst(makeJournal(session, transcript: session.machine.record.finalText))
            return
        }
        guard session.journalTimer == nil else { return }  // already due
        let due = (session.lastJournal ?? loop.now()) + .seconds(1)
        session.journalTimer = loop.schedule(at: due) { [weak self, weak session] in
            guard let self, let session, active === session else { return }
            session.journalTimer = nil
            session.lastJournal = loop.now()
            journals.write(makeJournal(session, transcript: session.machine.record.finalText))
        }
    }

    /// The journal now, not within the second: the meeting was ended, and a crash from here on must find
    /// when, so its insights survive.
    func flushJournal(_ session: ActiveSession) {
        guard session.hasJournal else { return writeJournal(session) }
        session.journalTimer.map(loop.cancel)
        session.journalTimer = nil
        session.lastJournal = loop.now()
        journals.write(makeJournal(session, transcript: session.machine.record.finalText))
    }

    func makeJournal(_ session: ActiveSession, transcript: String, isInterrupted: Bool = false) -> MeetingJournal {
        let machine = session.machine!
        var journal = MeetingJournal(
            syncUp: machine.syncUp.id,
            title: machine.syncUp.title,
            theme: machine.syncUp.theme,
            durationSeconds: machine.durationSeconds,
            meeting: session.meetingID,
            date: machine.startDate,
            transcript: transcript,
            hasAudio: session.recorder != nil,
            attendees: machine.roster.meetingAttendees,
            segments: machine.record.segments
        )
        journal.absent = machine.roster.absent
        journal.partial = machine.record.partial
        (journal.partialStart, journal.partialEnd) = machine.record.partialSpan
        journal.isInterrupted = isInterrupted
        journal.timeline = machine.record.timeline(durationSeconds: machine.durationSeconds)
        return journal
    }

    /// Saved meetings were deleted: their details are no longer to be written, nor their journals kept.
    func meetingsDeleted(_ meetings: [Meeting.ID]) {
        for meeting in meetings { retries.removeValue(forKey: meeting).map(loop.cancel) }
        _ = state.detailsWrites.delete(meetings)
        // Each, not only those whose details waited: a journal may also stay because its removal after the save
        // failed, or is still to come. (One that is gone costs an unlink on the journal's thread.)
        journals.delete(meetings)
        // Their details are no longer wanted, but a failure of theirs ends only with the removal's report
        // (`journalRemoved`): ended here, a removal about to fail too flashed `persistence.recovered` first.
    }

    /// The state names these meetings again (`sync-ups.json` reloaded: a backup restored, or another program's
    /// edit): a deletion of one still under way, its removal failing, is called off (`JournalWriter.keep`), its
    /// retries and its failure with it. The files it had not removed stay the user's; a journal among them is
    /// a saved meeting's, removed or completed by the next start's recovery.
    func meetingsNamedAgain(_ named: Set<Meeting.ID>) {
        let calledOff = journals.keep(named)
        guard !calledOff.isEmpty else { return }
        for meeting in calledOff.sorted(by: { $0.description < $1.description }) {
            retries.removeValue(forKey: meeting).map(loop.cancel)
            _ = state.detailsWrites.journalRemoved(meeting, failed: false)
            logger.notice(
                "\(DataDirectory.fileName) names a meeting being deleted again: its deletion is called off, its "
                    + "files kept", .meeting(meeting))
        }
        state.writesWorked(calledOff.flatMap { [.journalRemoval($0), .journal($0), .details($0)] })
    }

    /// For a reply that waits (`ReplyBody.awaited`): calls `done` on the journal writer's thread once it has
    /// done what was queued so far (the removals of the meetings just deleted or discarded, and their record
    /// where a file stays), so the reply says only what a kill -9 after it cannot undo.
    func whenJournalsCaughtUp(_ done: @escaping @Sendable () -> Void) {
        journals.whenDone(done)
    }

    /// A journal was written, or failed to be: a failure is a failed write of the user's data until a later
    /// write of it (or its removal) works. The running meeting's is written again within the second, as if it
    /// had changed; an ended meeting's final version, at each retry of its details.
    func journalWritten(_ meeting: Meeting.ID, error: SystemError?) {
        guard let error else { return state.writesWorked([.journal(meeting)]) }
        logger.throttled(.warning, "journal", "cannot write the meeting journal: \(error)", .meeting(meeting))
        let message = "cannot write the meeting's journal: \(error)"
        state.writeFailed(.journal(meeting), message)  // said once per error: `FailingWrites` drops a repeat
        guard let session = active, session.meetingID == meeting else { return }
        handle(.journalFailed(error.description), in: session)
        if active === session { writeJournal(session) }
    }

    /// A journal's removal went, or failed: a failure is retried with the store's back-off until it works (and
    /// once more at shutdown), since the journal left behind would bring its meeting back at the next start.
    func journalRemoved(_ meeting: Meeting.ID, error: SystemError?) {
        guard let error else {
            if state.detailsWrites.removals[meeting] != nil {
                logger.notice("removed the meeting's journal after all", .meeting(meeting))
            }
            _ = state.detailsWrites.journalRemoved(meeting, failed: false)
            // A deleted meeting's details failure ends here too (a saved one's ended when they were written).
            return state.writesWorked([.journalRemoval(meeting), .journal(meeting), .details(meeting)])
        }
        let delay = state.detailsWrites.journalRemoved(meeting, failed: true) ?? StoreRetry.maximumDelay
        // A deletion removes every file of the meeting: the error names the one that stays (the journal's first),
        // or, when none went, the record it could not write first.
        if JournalWriter.isUnrecordedDeletion(error) {
            let message = "keeping the deleted meeting's files until its deletion is recorded: \(error)"
            logger.throttled(.error, "deletion-record", "\(message); retrying", burst: 5, .meeting(meeting))
            state.writeFailed(.journalRemoval(meeting), message)
        } else if !error.operation.contains("." + MeetingFiles.journal) {
            logger.error("cannot remove the deleted meeting's files (\(error)); retrying", .meeting(meeting))
            state.writeFailed(.journalRemoval(meeting), "cannot remove the deleted meeting's files: \(error)")
        } else {
            logger.error(
                "cannot remove the meeting's journal (\(error)); retrying, as a restart would recover the meeting from it",
                .meeting(meeting))
            state.writeFailed(.journalRemoval(meeting), "cannot remove the meeting's journal: \(error)")
        }
        // A deleted meeting's details are no longer wanted: what fails now is the removal, said above.
        state.writesWorked([.details(meeting)])
        retry(meeting, after: delay)
    }

    /// Says which deleted meetings keep their files as the daemon stops because their deletion could not be
    /// recorded: once `sync-ups.json` drops the meeting nothing on disk names them, and the next start sets
    /// them aside (`MeetingSweep`).
    func logUnrecordedDeletions() {
        let directory = state.dataDirectory
        for meeting in journals.unrecordedDeletions.sorted(by: { $0.description < $1.description }) {
            let files = MeetingAside.suffixes(of: meeting).filter {
                FileIdentity(path: FilePath.join(directory.meetingsDirectory, $0)) != nil
            }
            guard !files.isEmpty else { continue }
            logger.error(
                "stopping with the deletion of a meeting unrecorded: its files \(files.joined(separator: ", ")) "
                    + "stay in \(directory.meetingsDirectory); the next start that finds the meeting in no sync-up "
                    + "sets them aside in \(MeetingAside(directory: directory).aside.path)", .meeting(meeting))
        }
    }
}
