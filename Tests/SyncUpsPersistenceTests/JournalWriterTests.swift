import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Synchronization
import Testing

/// A deleted or discarded meeting's files go, all of them, and a restart does not bring it back while any
/// stays. A file that cannot be removed is made a directory at its path (unlink fails with EISDIR, even for
/// root), and `deleted-meetings.json` a directory while its write must fail.
@Suite final class JournalWriterTests: Sendable {
    let directory = TemporaryDirectory("journals")
    let data: DataDirectory
    let meeting = Meeting.ID(UUID(counting: 7))
    let removals = Mutex<[SystemError?]>([])
    let signal: ChangeSignal

    init() throws {
        data = DataDirectory(path: directory.path)
        try data.create()
        signal = try ChangeSignal()
    }

    func writer() throws -> JournalWriter {
        try JournalWriter(
            directory: data, onWrite: { _, _ in },
            onRemoval: { [self] _, error in
                removals.withLock { $0.append(error) }
                signal.changed()
            })
    }

    /// Waits for the `count`-th removal's report and returns it.
    func removal(_ count: Int) -> SystemError?? {
        guard signal.wait(until: { removals.withLock { $0.count >= count } }) else { return nil }
        return removals.withLock { $0[count - 1] }
    }

    var recorded: Set<Meeting.ID> { DeletedMeetingsFile(directory: data).load().meetings }

    /// A deletion of `meeting` whose file `suffix` cannot go (a directory stands there): the writer, once its
    /// first removal failed so and recorded the deletion, and the obstruction's path.
    func deletionThatFails(at suffix: String) throws -> (JournalWriter, obstruction: String) {
        let obstruction = data.sidecar(meeting, suffix)
        #expect(mkdir(obstruction, 0o700) == 0)
        let journals = try writer()
        journals.remove(meeting, isDeletion: true)
        #expect(removal(1)??.errno == Errno(rawValue: EISDIR))
        #expect(recorded == [meeting])
        return (journals, obstruction)
    }

    #if DEBUG
        /// A deleted sync-up's 500 meetings, removed in one batch of the writer, list `meetings/` (for their
        /// temporary files) once: each removal listed it before, 500 times. A temporary file a crash left
        /// still goes with its meeting.
        @Test func aBatchOfDeletionsListsTheMeetingsDirectoryOnce() throws {
            let meetings = (0..<500).map { Meeting.ID(UUID(counting: 1000 + $0)) }
            let leftover = FilePath.join(data.meetingsDirectory, ".\(meetings[250]).json.tmp-1-1")
            Files.write(leftover, Array("{".utf8))
            let journals = try writer()
            let gate = try Gate()
            gate.close()
            journals.whenDone { gate.pass() }
            for meeting in meetings { journals.remove(meeting, isDeletion: true) }
            gate.open()
            #expect(removal(500) == .some(nil))
            #expect(DirectoryListing.listings(of: data.meetingsDirectory) == 1)
            #expect(!Files.exists(leftover))
            journals.finish()
        }
    #endif

    /// Before, only the deletion's first try could record it: the retries are plain removals, so a deletion
    /// whose record could not be written the first time was never recorded, and a kill before the journal
    /// went brought the meeting back.
    @Test func aDeletionWhoseRecordFailedIsRecordedByItsRetry() throws {
        let journal = data.sidecar(meeting, MeetingFiles.journal)
        let record = FilePath.join(data.path, DeletedMeetingsFile.fileName)
        #expect(mkdir(journal, 0o700) == 0)
        #expect(mkdir(record, 0o700) == 0)
        let journals = try writer()
        journals.remove(meeting, isDeletion: true)
        #expect(removal(1)??.errno == Errno(rawValue: EISDIR))
        #expect(rmdir(record) == 0)
        journals.remove(meeting)  // the retry
        #expect(removal(2)??.errno == Errno(rawValue: EISDIR))
        #expect(recorded == [meeting])
        journals.finish()
    }

    /// A deletion the record cannot take (a directory in its place: every write of it fails) removes none of
    /// its files, the journal neither, and its report names the record's path and errno; the retry once the
    /// record can be written records it and removes them all, and the record goes with them. Before (attack
    /// 37b's E5), the files went anyway and the removal reported success: a kill -9 before `sync-ups.json`
    /// dropped the meeting brought it back without its files.
    @Test func aDeletionTheRecordCannotTakeKeepsEveryFileUntilARetryRecordsIt() throws {
        let files = [MeetingFiles.journal, MeetingFiles.details, MeetingFiles.audio].map { data.sidecar(meeting, $0) }
        for file in files { Files.write(file, Array("{}".utf8)) }
        let record = FilePath.join(data.path, DeletedMeetingsFile.fileName)
        #expect(mkdir(record, 0o700) == 0)
        let journals = try writer()
        journals.remove(meeting, isDeletion: true)
        let failure = try #require(removal(1) ?? nil, "the removal reported success")
        #expect(failure.errno == Errno(rawValue: EISDIR))
        #expect(failure.operation.hasPrefix("cannot record the deletion in \(record) ("), "\(failure)")
        for file in files { #expect(Files.exists(file), "\(file) went without a record") }

        #expect(rmdir(record) == 0)
        journals.remove(meeting)  // the retry
        #expect(removal(2) == .some(nil))
        for file in files { #expect(!Files.exists(file)) }
        #expect(!Files.exists(record))
        journals.finish()
    }

    /// A discarded meeting was never in `sync-ups.json`: nothing can list it without its files, so the record
    /// failing keeps none of them. Kept, its journal brought the discarded meeting back at the next start.
    @Test func aDiscardTheRecordCannotTakeRemovesEveryFileAllTheSame() throws {
        let files = [MeetingFiles.journal, MeetingFiles.audio].map { data.sidecar(meeting, $0) }
        for file in files { Files.write(file, Array("{}".utf8)) }
        let record = FilePath.join(data.path, DeletedMeetingsFile.fileName)
        #expect(mkdir(record, 0o700) == 0)
        let journals = try writer()
        journals.discard(meeting)
        #expect(removal(1) == .some(nil))
        for file in files { #expect(!Files.exists(file), "\(file) stayed") }
        journals.finish()
    }

    /// Before, a deletion removed only the journal (the rest was unlinked once elsewhere, its failure ignored):
    /// the audio of a meeting the user deleted stayed on disk for good while `status` said all was written.
    @Test func aDeletedMeetingsAudioThatStaysIsAFailureRecordedAndRetriedUntilItGoes() throws {
        let details = data.sidecar(meeting, MeetingFiles.details)
        Files.write(details, Array("{}".utf8))
        let (journals, audio) = try deletionThatFails(at: MeetingFiles.audio)
        #expect(!Files.exists(details))

        #expect(rmdir(audio) == 0)
        Files.write(audio, Array("RIFF".utf8))
        journals.remove(meeting)  // the retry
        #expect(removal(2) == .some(nil))
        #expect(!Files.exists(audio))
        #expect(recorded.isEmpty)
        #expect(!Files.exists(FilePath.join(data.path, DeletedMeetingsFile.fileName)))
        journals.finish()
    }

    /// A restart removes every file of a meeting the record names, not only its journal.
    @Test func aRestartRemovesEveryFileOfAMeetingTheRecordNames() throws {
        let (first, audio) = try deletionThatFails(at: MeetingFiles.audio)
        first.finish()
        #expect(rmdir(audio) == 0)
        Files.write(audio, Array("RIFF".utf8))

        let second = try writer()
        #expect(removal(2) == .some(nil))
        #expect(!Files.exists(audio))
        #expect(recorded.isEmpty)
        second.finish()
    }

    /// A deletion waiting behind other work when the state names its meeting again (`keep`: a backup restored)
    /// is dropped: the meeting's files stay and nothing is recorded. Deleted again after that, it is a deletion
    /// again.
    @Test func aDeletionWaitingWhenItsMeetingIsNamedAgainIsCalledOff() throws {
        let details = data.sidecar(meeting, MeetingFiles.details)
        Files.write(details, Array("{}".utf8))
        let journals = try writer()
        let gate = try Gate()
        gate.close()
        journals.whenDone { gate.pass() }  // the writer's thread held
        journals.remove(meeting, isDeletion: true)
        #expect(journals.keep([meeting, Meeting.ID(UUID(counting: 8))]) == [meeting])
        #expect(journals.keep([meeting]).isEmpty, "called off twice")
        gate.open()
        let caughtUp = try Gate()
        caughtUp.close()
        journals.whenDone { caughtUp.open() }
        caughtUp.pass()
        #expect(Files.exists(details))
        #expect(removals.withLock { $0.isEmpty })

        journals.remove(meeting, isDeletion: true)
        #expect(removal(1) == .some(nil))
        #expect(!Files.exists(details))
        journals.finish()
    }

    /// A meeting the record names whose deletion was called off (`keep`) leaves the record at its next write,
    /// and a restart that is told the state names it (`keeping`) neither removes its files nor keeps the record.
    @Test(arguments: ["running", "at a start"])
    func aRecordedDeletionIsDroppedWhenItsMeetingIsNamedAgain(_ when: String) throws {
        let details = data.sidecar(meeting, MeetingFiles.details)
        Files.write(details, Array("{}".utf8))
        let (first, _) = try deletionThatFails(at: MeetingFiles.callAudio)
        Files.write(details, Array("{}".utf8))  // restored
        if when == "running" {
            #expect(first.keep([meeting]) == [meeting])
            first.remove(meeting)  // a retry that was already queued is a plain removal now
            first.finish()
        } else {
            first.finish()
            let second = try JournalWriter(
                directory: data, keeping: [meeting], onWrite: { _, _ in }, onRemoval: { _, _ in })
            second.finish()
        }
        #expect(Files.exists(details))
        #expect(recorded.isEmpty)
        #expect(!Files.exists(FilePath.join(data.path, DeletedMeetingsFile.fileName)))
    }

    /// A deletion is recorded before any of its files goes, so a kill while a deleted sync-up's thousands of
    /// meetings go leaves none of them for good: the next start finishes the removal. Before (the attack's C9)
    /// the record was written only when a removal failed, and a kill -9 five seconds into the deletion of
    /// 3,000 meetings left 5,822 files on disk for good. One inotify queue orders the record's rename before
    /// the first unlink; then the record goes with the last file.
    @Test func aDeletionIsRecordedBeforeAnyOfItsFilesGoes() throws {
        let others = (8..<12).map { Meeting.ID(UUID(counting: $0)) }
        for id in [meeting] + others { Files.write(data.sidecar(id, MeetingFiles.details), Array("{}".utf8)) }
        let inotify = try Inotify()
        let top = try inotify.add(data.path, mask: UInt32(IN_MOVED_TO))
        let meetings = try inotify.add(data.meetingsDirectory, mask: UInt32(IN_DELETE))
        let journals = try writer()
        for id in [meeting] + others { journals.remove(id, isDeletion: true) }
        for count in 1...5 { #expect(removal(count) == .some(nil)) }
        journals.finish()
        let events = inotify.drain()
        let recorded = events.firstIndex { $0.watch == top && $0.name == DeletedMeetingsFile.fileName }
        let firstUnlink = events.firstIndex { $0.watch == meetings }
        #expect(recorded != nil && firstUnlink != nil && recorded! < firstUnlink!, "\(events)")
        #expect(self.recorded.isEmpty)
        #expect(Files.list(data.meetingsDirectory).isEmpty)
    }
}
