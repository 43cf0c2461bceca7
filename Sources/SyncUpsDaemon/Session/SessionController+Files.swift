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
    /// written the details stay in memory (`meetings.get` has them) and so does the meeting's journal on
    /// disk, in its final version, so a crash at any point still recovers them; a failure is retried with
    /// the store's back-off and reported like a failed write of sync-ups.json.
    func saveDetails(_ details: MeetingDetails, finalJournal: MeetingJournal) {
        state.detailsBeingWritten[details.meeting] = details
        pendingDetails[details.meeting] = PendingDetails(journal: finalJournal, retryDelay: StoreRetry.initialDelay)
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
        guard var pending = pendingDetails[meeting] else {
            // Deleted while its details were being written: the file written just now goes too.
            if error == nil { state.dataDirectory.removeSidecars(of: meeting) }
            return
        }
        guard let error else {
            state.detailsBeingWritten[meeting] = nil
            pendingDetails[meeting] = nil
            clearDetailsErrorIfNonePending()
            journalErrors[meeting] = nil
            state.whenSaved { [journals] in journals.remove(meeting) }
            return
        }
        let message = "cannot write the meeting's details: \(error)"
        if let journalError = journalErrors[meeting] {
            logger.error(
                "\(message); keeping them in memory and retrying (the meeting's journal could not be written either: "
                    + "\(journalError); a crash before a retry works loses them)", .meeting(meeting))
        } else {
            logger.error(
                "\(message); keeping them in memory, writing the journal's final version for a restart, and retrying",
                .meeting(meeting))
        }
        if !pending.hasFailed {
            // The journal in its final version: what a restart completes the meeting from if this never works.
            pending.hasFailed = true
            journals.write(pending.journal)
        }
        detailsError = message
        publishEvent(.daemon, EventName.persistenceFailed) { ["error": .string(message)] }
        let delay = pending.retryDelay
        pending.retryDelay = StoreRetry.next(after: delay)
        pendingDetails[meeting] = pending
        loop.schedule(after: delay) { [weak self] in
            guard let self, let details = state.detailsBeingWritten[meeting] else { return }
            writeDetails(details)
        }
    }

    /// Saved meetings were deleted: their details are no longer to be written, nor their journals kept.
    func meetingsDeleted(_ meetings: [Meeting.ID]) {
        for meeting in meetings { journalErrors[meeting] = nil }
        for meeting in meetings where pendingDetails.removeValue(forKey: meeting) != nil {
            state.detailsBeingWritten[meeting] = nil
            journals.remove(meeting)
        }
        clearDetailsErrorIfNonePending()
    }

    /// Once no meeting's details wait to be written (written, or deleted), the error `status` reported ends,
    /// and `persistence.recovered` says so to the clients that saw `persistence.failed`.
    private func clearDetailsErrorIfNonePending() {
        guard detailsError != nil && pendingDetails.isEmpty else { return }
        detailsError = nil
        logger.notice("writing meetings' details works again")
        publishEvent(.daemon, EventName.persistenceRecovered) { [:] }
    }

    /// Finishes the journal writes still queued (the last removals come from the store's final write); call
    /// after the store is closed.
    func close() {
        journals.finish()
        settings.soundServer?.stop()
    }
}
