import FoundationEssentials
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence

/// The files of meetings nothing names at start-up (no sync-up after the journals' recovery, no journal, no
/// recorded deletion: a deletion whose record could not be written before the daemon stopped) set aside in
/// `meetings/orphaned/` (`MeetingAside`), each named in the log, never deleted at once; a meeting set aside
/// that a roster names again (an outside edit restoring a backup, or the next start) is brought back. As the
/// voice profiles' sweep (`Services.sweepOrphanedProfiles`): only against a `sync-ups.json` read whole.
final class MeetingSweep {
    let aside: MeetingAside
    private let logger: Logger
    private let wallClock: WallClock
    /// Moves files back off the loop's thread, for an outside edit: made at the first (a thread per daemon
    /// for what few runs ever need would be a waste).
    private var worker: SerialWorker?
    /// The meetings set aside, as the loop knows them (start-up's listing, less those brought back).
    private(set) var asideMeetings: Set<Meeting.ID> = []

    init(directory: DataDirectory, fileSystem: FileSystem, wallClock: WallClock, logger: Logger) {
        aside = MeetingAside(directory: directory, fileSystem: fileSystem)
        self.logger = logger
        self.wallClock = wallClock
    }

    /// Brings back the meetings `known` names, then sets aside those with files that neither `known` nor
    /// `deleted-meetings.json` names (the journal writer removes those) and no journal covers. Returns the
    /// warning for `status`, if any.
    func sweep(known: Set<Meeting.ID>, rosterIsFromFile: Bool) -> [String] {
        asideMeetings = aside.asideMeetings()
        for meeting in asideMeetings.intersection(known).sorted(by: { $0.description < $1.description }) {
            bringBackNow(meeting)
        }
        let deleted = DeletedMeetingsFile(directory: aside.directory).load().meetings
        let unnamed = aside.unnamed(known: known.union(deleted))
        guard !unnamed.isEmpty else { return [] }
        let meetings: (Int) -> String = { "the files of \($0) meetings" }
        if let kept = aside.aside.keptInPlace(
            topic: "meetings", items: meetings, of: unnamed.count, rosterIsFromFile: rosterIsFromFile, logger: logger)
        {
            return kept
        }
        for (meeting, names) in unnamed.sorted(by: { $0.key.description < $1.key.description }) {
            logger.notice(
                "meetings: setting aside \(names.sorted().joined(separator: ", ")), of a meeting in no sync-up",
                .meeting(meeting))
        }
        let (moved, pruned, failure) = aside.setAside(unnamed, at: wallClock())
        asideMeetings.formUnion(moved)
        asideMeetings.subtract(pruned)
        for meeting in pruned {
            logger.notice(
                "meetings: deleted the files of a meeting set aside longest of more than \(AsideDirectory.maximum) "
                    + "for more than \(AsideDirectory.grace.components.seconds / 86_400) days", .meeting(meeting))
        }
        return aside.aside.report(
            topic: "meetings", items: meetings, of: unnamed.count, moved: moved.count,
            failure: failure.map { "\($0)" }, kept: aside.directory.meetingsDirectory, logger: logger)
    }

    /// The meetings of `roster` set aside get their files back (on the sweep's thread): a sync-up restored with
    /// them by an outside edit finds their audio and details again.
    func bringBack(_ roster: Set<Meeting.ID>) {
        let meetings = asideMeetings.intersection(roster)
        guard !meetings.isEmpty else { return }
        asideMeetings.subtract(meetings)
        let (aside, logger) = (aside, logger)
        guard let worker = worker ?? (try? SerialWorker(name: "syncups-aside")) else {
            return logger.warning("meetings: cannot start the thread that brings back set-aside meetings")
        }
        self.worker = worker
        worker.run {
            for meeting in meetings.sorted(by: { $0.description < $1.description }) {
                Self.bringBack(meeting, aside: aside, logger: logger)
            }
        }
    }

    /// At start-up, before the daemon serves.
    private func bringBackNow(_ meeting: Meeting.ID) {
        asideMeetings.remove(meeting)
        Self.bringBack(meeting, aside: aside, logger: logger)
    }

    private static func bringBack(_ meeting: Meeting.ID, aside: MeetingAside, logger: Logger) {
        let (names, failure) = aside.bringBack(meeting)
        if !names.isEmpty {
            logger.notice(
                "meetings: brought back \(names.joined(separator: ", ")), of a meeting in a sync-up again",
                .meeting(meeting))
        }
        if let failure {
            logger.warning("meetings: cannot bring back a meeting's files: \(failure)", .meeting(meeting))
        }
    }

    /// Waits for the files being brought back, then ends the thread; for shutdown (and tests).
    func finish() {
        worker?.finish()
        worker = nil
    }
}
