import SyncUpsAudio
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence

/// At start-up, turns meetings left behind by a crash (their journal, audio and transcript so far) into
/// saved meetings flagged `interrupted`, so nothing recorded is silently lost.
enum MeetingRecovery {
    /// Recovers every journal in the data directory; returns what it did, for the log and `status`.
    static func run(state: DaemonState, logger: Logger) -> [String] {
        let directory = state.dataDirectory
        let (journals, unreadable) = MeetingJournal.leftBehind(in: directory)
        var notes: [String] = []
        for path in unreadable {
            let note = "cannot read the meeting journal \(path); left it in place"
            logger.error(note)
            notes.append(note)
        }
        for journal in journals {
            if !state.syncUps.contains(where: { $0.id == journal.syncUp }) {
                // The crash came before the sync-up itself reached the disk: recreate it from the journal.
                state.restore(
                    SyncUp(
                        id: journal.syncUp,
                        attendees: journal.attendees,
                        duration: .seconds(journal.durationSeconds),
                        theme: journal.theme,
                        title: journal.title
                    )
                )
                let note = "recreated the sync-up \"\(journal.title)\" of a meeting interrupted by a crash"
                logger.warning(note, .syncUp(journal.syncUp))
                notes.append(note)
            }
            guard let syncUp = state.syncUps.first(where: { $0.id == journal.syncUp }) else { continue }
            if syncUp.meeting(journal.meeting) == nil {
                var audioSeconds: Double? = nil
                let audio = directory.sidecar(journal.meeting, MeetingFiles.audio)
                if journal.hasAudio { audioSeconds = try? WAVFile.repair(audio) }
                let meeting = Meeting(id: journal.meeting, date: journal.date, transcript: journal.transcript)
                state.insertMeeting(meeting, into: syncUp.id)
                let details = MeetingDetails(
                    meeting: journal.meeting,
                    syncUp: syncUp.id,
                    isInterrupted: true,
                    attendees: journal.attendees,
                    segments: journal.segments
                )
                try? details.write(in: directory)
                let note =
                    "recovered a meeting of \"\(syncUp.title)\" interrupted by a crash (\(UTCTime(journal.date).rfc3339), \(audioSeconds.map { "\(Int($0)) s of audio" } ?? "no audio"))"
                logger.warning(note, .syncUp(syncUp.id), .meeting(journal.meeting))
                notes.append(note)
            }
            // Only once the meeting is in the file: a crash before that recovers it again next time.
            let meeting = journal.meeting
            state.whenSaved { MeetingJournal.remove(meeting, in: directory) }
        }
        return notes
    }
}
