import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// The meeting's files: its journal while it runs, its details once saved.
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
        journal.isInterrupted = isInterrupted
        journal.timeline = machine.record.timeline(durationSeconds: machine.durationSeconds)
        return journal
    }

    /// `saveMeeting`: the meeting goes into its sync-up's history (restoring the sync-up if an outside edit
    /// removed it meanwhile), its details (the meeting's own roster, its record) to its file.
    func saveMeeting(_ meeting: Meeting, _ record: MeetingRecord, of syncUp: SyncUp, in session: ActiveSession) {
        if !state.insertMeeting(meeting, into: syncUp.id) {
            // An outside edit removed the sync-up mid-meeting: it comes back, with this meeting.
            var restored = syncUp
            restored.meetings = [meeting]
            state.restore(restored)
            state.warn(
                "restored the sync-up \"\(syncUp.title)\", which another program's edit had removed, with the meeting recorded meanwhile"
            )
        }
        var details = MeetingDetails(
            meeting: meeting.id, syncUp: syncUp.id, isInterrupted: record.isInterrupted,
            attendees: session.machine.roster.meetingAttendees, segments: record.segments,
            timeline: record.timeline(durationSeconds: syncUp.durationSeconds))
        details.absent = session.machine.roster.absent
        saveDetails(
            details,
            finalJournal: makeJournal(session, transcript: meeting.transcript, isInterrupted: record.isInterrupted))
    }

    /// Writes a saved meeting's details file (`meetings/<id>.json`) on the clean-up thread. Until it is
    /// written the details stay in memory (`meetings.get` has them, `DaemonState.detailsWrites`) and so does
    /// the meeting's journal on disk, in its final version, so a crash at any point still recovers them; a
    /// failure is retried with the store's back-off and reported like a failed write of sync-ups.json.
    func saveDetails(_ details: MeetingDetails, finalJournal: MeetingJournal) {
        state.detailsWrites.queue(details.meeting, DetailsWrite(details: details, journal: finalJournal))
        writeDetails(details)
    }

    private func writeDetails(_ details: MeetingDetails) {
        let directory = state.dataDirectory
        cleanup.run { [mailbox] in
            var failure: String?
            do throws(SystemError) {
                try details.write(in: directory)
            } catch {
                failure = error.description
            }
            mailbox.post(.detailsWritten(details.meeting, error: failure))
        }
    }

    /// The details file was written, or failed to be. The journal (what a crash recovers the meeting from)
    /// goes only once the details are written and the meeting is in sync-ups.json and synced.
    func detailsWritten(_ meeting: Meeting.ID, error: String?) {
        switch state.detailsWrites.report(meeting, failed: error != nil) {
        case .notPending:
            // Deleted while its details were being written: the file written just now goes too, off the loop
            // as a discard's do.
            let directory = state.dataDirectory
            if error == nil { cleanup.run { directory.removeSidecars(of: meeting) } }
        case .written:
            state.writesWorked([.details(meeting)])
            state.whenSaved { [journals] in journals.remove(meeting) }
        case .retry(let delay, let isFirstFailure):
            let message = "cannot write the meeting's details: \(error ?? "")"
            let journal = state.detailsWrites.details(of: meeting)?.journal
            let journalError = state.failingWrites.error(of: .journal(meeting))
            if journal == nil {
                // Recovered at start-up: the journal they were recovered from stays on disk.
                logger.error(
                    "\(message); keeping them in memory and in the meeting's journal, and retrying", .meeting(meeting))
            } else if let journalError {
                logger.error(
                    "\(message); keeping them in memory and retrying (the meeting's journal could not be written "
                        + "either, \(journalError); a crash before a retry works loses them)", .meeting(meeting))
            } else {
                logger.error(
                    "\(message); keeping them in memory, writing the journal's final version for a restart, and retrying",
                    .meeting(meeting))
            }
            // The journal in its final version: what a restart completes the meeting from if this never works;
            // written again at each retry until a write of it works (a crash must find the meeting's end).
            if let journal, isFirstFailure || journalError != nil { journals.write(journal) }
            state.writeFailed(.details(meeting), message)
            retry(meeting, after: delay)
        }
    }

    /// The next try of what failed for `meeting` after its back-off: the details write, or else the journal's
    /// removal (unless the meeting was deleted meanwhile: its deletion removes the journal itself). One timer
    /// a meeting, cancelled when it is deleted (`status`'s `timers` is 0 once nothing waits).
    func retry(_ meeting: Meeting.ID, after delay: Duration) {
        retries.removeValue(forKey: meeting).map(loop.cancel)
        retries[meeting] = loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            retries[meeting] = nil
            if let pending = state.detailsWrites.details(of: meeting) {
                writeDetails(pending.details)
            } else if state.detailsWrites.removals[meeting] != nil {
                journals.remove(meeting)
            }
        }
    }

    /// What failed before the controller existed (meetings recovered at start-up: their details, their
    /// journals' removal) gets the retry every other failed write gets.
    func retryFailedWrites() {
        for (meeting, pending) in state.detailsWrites.pending where pending.hasFailed {
            retry(meeting, after: pending.backoff.delay)
        }
        for (meeting, backoff) in state.detailsWrites.removals where retries[meeting] == nil {
            retry(meeting, after: backoff.delay)
        }
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
    private func logUnrecordedDeletions() {
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

    /// Finishes the journal writes still queued (the last removals come from the store's final write); call
    /// after the store is closed. Ends the engine started ahead, if any.
    func close() {
        endSparesForGood()
        for meeting in state.detailsWrites.removals.keys { journals.remove(meeting) }  // the last try of those failing
        journals.finish()
        logUnrecordedDeletions()
        settings.soundServer?.stop()
    }
}

/// A saved meeting's details waiting to be written, and the journal's final version to keep for a restart if
/// they cannot be (nil for a meeting recovered at start-up: its journal is on disk already).
struct DetailsWrite {
    var details: MeetingDetails
    var journal: MeetingJournal? = nil
}
