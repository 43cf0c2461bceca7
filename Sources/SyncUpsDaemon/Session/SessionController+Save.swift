import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// The second half of a meeting's end: the meeting saved into its sync-up, its details file written off the
/// loop, and a failed write of it retried (or the journal's removal after it) with the store's back-off.
extension SessionController {
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
        state.detailsWrites.queue(details.meeting, UnwrittenDetails(details: details, journal: finalJournal))
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
            state.whenDurable { [journals] in journals.remove(meeting) }
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
}

/// A saved meeting's details waiting to be written, and the journal's final version to keep for a restart if
/// they cannot be (nil for a meeting recovered at start-up: its journal is on disk already).
struct UnwrittenDetails {
    var details: MeetingDetails
    var journal: MeetingJournal? = nil
}
