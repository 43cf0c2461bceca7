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
            guard let syncUp = state.syncUps.first(where: { $0.id == journal.syncUp }) else {
                let note =
                    "a meeting interrupted by a crash belongs to a sync-up that no longer exists (\(journal.syncUp)); its files are kept in \(directory.meetingsDirectory)"
                logger.error(note, .meeting(journal.meeting))
                notes.append(note)
                continue
            }
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
            MeetingJournal.remove(journal.meeting, in: directory)
        }
        return notes
    }
}
