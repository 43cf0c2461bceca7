import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// The meeting's files: its journal while it runs, its details once saved.
extension SessionController {
    /// The first version is written before `session.start` is answered (a crash right after still recovers
    /// the meeting); the later ones, megabytes in a long meeting, off the loop.
    func writeJournal(_ session: ActiveSession) {
        let machine = session.machine!
        let journal = MeetingJournal(
            syncUp: machine.syncUp.id,
            title: machine.syncUp.title,
            theme: machine.syncUp.theme,
            durationSeconds: machine.durationSeconds,
            meeting: session.meetingID,
            date: machine.startDate,
            transcript: machine.record.assembly.finalText,
            hasAudio: session.recorder != nil,
            attendees: machine.syncUp.attendees,
            segments: machine.record.segments
        )
        if session.hasJournal {
            journals.write(journal)
        } else {
            session.hasJournal = true
            journals.writeFirst(journal)
        }
    }

    /// Writes `meetings/<id>.json` (with two fsyncs: on the clean-up thread, except at shutdown); returns
    /// the error, if any.
    static func writeDetails(_ details: MeetingDetails, in directory: DataDirectory) -> String? {
        do {
            try details.write(in: directory)
            return nil
        } catch {
            return error.description
        }
    }

    /// The last step of saving a meeting. Its journal (what a crash recovers the meeting from) goes only once
    /// the details are written and the meeting is in sync-ups.json: a crash before that, or a write that
    /// keeps failing, still finds the journal and recovers the meeting. (A discarded meeting's journal went
    /// with its other files.)
    func detailsWritten(_ meeting: Meeting.ID, error: String?) {
        state.detailsBeingWritten[meeting] = nil
        if let error { logger.error("cannot write the meeting's details: \(error)", .meeting(meeting)) }
        state.whenSaved { [journals] in journals.remove(meeting) }
    }

    /// Finishes the journal writes still queued (the last removals come from the store's final write); call
    /// after the store is closed.
    func close() {
        journals.finish()
    }
}
