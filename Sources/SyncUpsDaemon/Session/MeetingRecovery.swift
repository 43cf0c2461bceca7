import SyncUpsAudio
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence

/// At start-up, turns meetings left behind by a crash (their journal, audio and transcript so far) into
/// saved meetings flagged `interrupted`, so nothing recorded is silently lost.
enum MeetingRecovery {
    /// Recovers every journal in the data directory; returns what it did, for the log and `status`. `named`:
    /// the meetings `sync-ups.json` names, whose deletion recorded in `deleted-meetings.json` is called off.
    static func run(state: DaemonState, keeping named: Set<Meeting.ID> = [], logger: Logger) -> [String] {
        let directory = state.dataDirectory
        let (journals, unreadable) = MeetingJournal.leftBehind(in: directory)
        var notes: [String] = []
        // Deleted by the user, their journal not removed before the daemon stopped: not to be recovered (the
        // journal writer removes them at start-up).
        var (deleted, problem) = DeletedMeetingsFile(directory: directory).load()
        if let problem {
            logger.error(problem)
            notes.append(problem)
        }
        // Put back by the user (sync-ups.json names it again): theirs again, and its journal is any meeting's.
        for meeting in deleted.filter(named.contains).sorted(by: { $0.description < $1.description }) {
            logger.notice(
                "\(DataDirectory.fileName) names a meeting deleted before: its deletion is called off, its files kept",
                .meeting(meeting))
            deleted.remove(meeting)
        }
        for path in unreadable {
            let note = "cannot read the meeting journal \(path); left it in place"
            logger.error(note)
            notes.append(note)
        }
        for journal in journals {
            if deleted.contains(journal.meeting) {
                logger.notice("left out the journal of a deleted meeting", .meeting(journal.meeting))
                continue
            }
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
            var details = MeetingDetails(
                meeting: journal.meeting,
                syncUp: syncUp.id,
                isInterrupted: journal.isInterrupted,
                attendees: journal.attendees,
                segments: journal.segments,
                // A crash mid-turn leaves the turn open: when it ended is not known, so no insights; after the
                // meeting was ended, it ended there.
                timeline: journal.timeline?.closed
            )
            details.absent = journal.absent
            if syncUp.meeting(journal.meeting) == nil {
                var audioSeconds: Double? = nil
                let audio = directory.sidecar(journal.meeting, MeetingFiles.audio)
                if journal.hasAudio {
                    audioSeconds = try? WAVFile.repair(audio)
                    // The call's file, beside it when the meeting recorded the call, was left the same way
                    // (`repair` fails, harmlessly, when there is none).
                    _ = try? WAVFile.repair(directory.sidecar(journal.meeting, MeetingFiles.callAudio))
                }
                // The provisional tail too: the recognizer never settled it, but it is what was said.
                let tail = journal.partial.isEmpty || journal.transcript.isEmpty ? "" : " "
                let meeting = Meeting(
                    id: journal.meeting, date: journal.date, transcript: journal.transcript + tail + journal.partial)
                state.insertMeeting(meeting, into: syncUp.id)
                var interrupted = details
                interrupted.isInterrupted = true
                if !journal.partial.isEmpty {
                    // The tail in the transcript is a segment too, of whoever had the floor where it lies, as a
                    // save settles it (`MeetingRecord.settleProvisionalTail`).
                    interrupted.segments.append(
                        MeetingRecord.untimedSegment(
                            journal.partial, start: journal.partialStart, end: journal.partialEnd,
                            turns: journal.timeline?.turns ?? []))
                }
                state.detailsWrites.queue(meeting.id, UnwrittenDetails(details: interrupted))
                let note =
                    "recovered a meeting of \"\(syncUp.title)\" interrupted by a crash (\(UTCTime(journal.date).rfc3339), \(audioSeconds.map { "\(Int($0)) s of audio" } ?? "no audio"))"
                logger.warning(note, .syncUp(syncUp.id), .meeting(journal.meeting))
                notes.append(note)
            } else if (try? MeetingDetails.read(journal.meeting, in: directory)) == nil {
                // Saved, but its details never reached the disk whole (it was full): the journal has them.
                state.detailsWrites.queue(journal.meeting, UnwrittenDetails(details: details))
                let note = "completed a meeting of \"\(syncUp.title)\" whose details had not been written"
                logger.warning(note, .syncUp(syncUp.id), .meeting(journal.meeting))
                notes.append(note)
            }
            // The journal goes only once the details are written and the meeting is in the file: a crash or a
            // full disk before that finds it again next time.
            let meeting = journal.meeting
            if let pending = state.detailsWrites.details(of: meeting) {
                do {
                    try pending.details.write(in: directory)
                    _ = state.detailsWrites.report(meeting, failed: false)
                } catch {
                    // Retried as every details write is (`SessionController.retryFailedWrites`), and said in
                    // `status`'s `persistence` meanwhile; the journal stays until they are written.
                    let note =
                        "cannot write the details of a recovered meeting (\(error)); retrying, and its journal stays until they are written"
                    logger.error(note, .meeting(meeting))
                    state.recoveredDetailsWarnings[meeting] = note
                    _ = state.detailsWrites.report(meeting, failed: true)
                    state.writeFailed(.details(meeting), "cannot write the meeting's details: \(error)")
                    continue
                }
            }
            state.whenDurable { [unowned state] in
                // Once the session controller exists, its journal writer removes it (and retries a failure).
                if let session = state.session { return session.journals.remove(meeting) }
                do throws(SystemError) {
                    try MeetingJournal.remove(meeting, in: directory)
                } catch {
                    logger.error("cannot remove the journal of a recovered meeting: \(error)", .meeting(meeting))
                    _ = state.detailsWrites.journalRemoved(meeting, failed: true)
                    state.writeFailed(.journalRemoval(meeting), "cannot remove the meeting's journal: \(error)")
                }
            }
        }
        return notes
    }
}
