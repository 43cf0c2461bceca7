import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Testing

/// A store on its own loop and temporary directory, recording the events it reports.
final class StoreHarness {
    let directory = TemporaryDirectory("store")
    let loop: EventLoop
    let faults: FaultyFileSystem
    var events: [SyncUpStore.Event] = []
    var store: SyncUpStore!

    /// On `.manual` time (unless told otherwise), the throttle's window and the retries' back-off end only
    /// when the test says (`run(advancing:until:)`, `loop.advanceTime(by:)`).
    init(
        throttleWindow: Duration = .milliseconds(300),
        clock: EventLoop.Clock = .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000)),
        beforeEach: @escaping @Sendable (FaultyFileSystem.Operation) -> Void = { _ in }
    ) throws {
        faults = FaultyFileSystem(beforeEach: beforeEach)
        loop = try EventLoop(clock: clock)
        store = try SyncUpStore(
            directory: DataDirectory(path: directory.path),
            loop: loop,
            fileSystem: faults.fileSystem,
            throttleWindow: throttleWindow
        ) { [unowned self] in events.append($0) }
    }

    var file: String { directory.appending("sync-ups.json") }
    var isDurable: Bool { store.isDurable }
    var writes: Int { faults.replacements(of: file) }
    func onDisk() -> [SyncUp]? { Files.read(file).flatMap { try? SyncUpsFile.decode($0) } }

    /// Turns the loop until `condition` holds (10 s of real time at most: the writer's thread is real);
    /// `advancing` moves a manual clock on by that much between two turns, for a window or a back-off to pass.
    @discardableResult
    func run(advancing step: Duration? = nil, until condition: () -> Bool) -> Bool {
        guard let step else { return loop.run(until: condition, timeout: .seconds(10)) }
        let deadline = MonotonicInstant.now() + .seconds(10)
        while !condition() {
            guard MonotonicInstant.now() < deadline else { return false }
            loop.advanceTime(by: step)
            loop.runOnce(timeoutMilliseconds: 10)
        }
        return true
    }
}

@Suite struct SyncUpStoreTests {
    let a = [SyncUp.fixture(seed: 1, title: "A")]
    let b = [SyncUp.fixture(seed: 1, title: "B")]
    let c = [SyncUp.fixture(seed: 1, title: "C"), .fixture(seed: 2, title: "D")]

    @Test func startsEmptyWithoutCreatingAFile() throws {
        let harness = try StoreHarness()
        let result = try harness.store.open()
        #expect(result.syncUps.isEmpty && result.warnings.isEmpty)
        #expect(!Files.exists(harness.file))
        #expect(Files.list(harness.directory.path) == ["meetings"])
        #expect(Files.mode(harness.directory.appending("meetings")) == 0o700)
    }

    @Test func loadsWhatItWrote() throws {
        let harness = try StoreHarness()
        _ = try harness.store.open()
        harness.store.save(c)
        #expect(harness.run { harness.onDisk() == c })
        harness.store.close()
        let reopened = try StoreHarness()
        let again = try SyncUpStore(directory: DataDirectory(path: harness.directory.path), loop: reopened.loop) { _ in
        }
        #expect(try again.open().syncUps == c)
        again.close()
    }

    /// Files of a megabyte or more are mapped from the same descriptor instead of read.
    @Test func loadsALargeFileThroughAMapping() throws {
        let harness = try StoreHarness()
        let large = (0..<100).map { SyncUp.realistic(index: $0) }
        Files.write(harness.file, SyncUpsFile.encode(large))
        #expect(try #require(FileIdentity(path: harness.file)).size >= 1 << 20)
        let result = try harness.store.open()
        #expect(result.syncUps == large && result.warnings.isEmpty)
        harness.store.close()
    }

    @Test func writesTheFirstChangeAtOnceAndCoalescesTheNextSecond() throws {
        let harness = try StoreHarness()
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a })
        harness.store.save(b)
        harness.store.save(c)
        // Held for the window's end (one timer), not handed to the writer: nothing is written before it.
        #expect(harness.loop.scheduledTimerCount == 1 && harness.store.hasUnsavedChanges)
        harness.loop.advanceTime(by: .milliseconds(299))
        #expect(harness.loop.scheduledTimerCount == 1 && harness.onDisk() == a)
        #expect(harness.run(advancing: .milliseconds(1)) { harness.onDisk() == c && !harness.store.hasUnsavedChanges })
        #expect(harness.writes == 2)
        #expect(harness.events.isEmpty)
        harness.store.close()
    }

    @Test func writesUrgentChangesWithoutWaitingForTheWindow() throws {
        let harness = try StoreHarness(throttleWindow: .seconds(60))
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a })
        harness.store.save(b)
        harness.store.save(c, urgent: true)
        #expect(harness.run { harness.onDisk() == c })
        harness.store.close()
    }

    @Test func flushesUnsavedChangesOnClose() throws {
        let harness = try StoreHarness(throttleWindow: .seconds(60))
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a })
        harness.store.save(c)
        #expect(harness.store.hasUnsavedChanges)
        #expect(harness.store.close() == nil)
        #expect(harness.onDisk() == c)
    }

    /// A program that copies the file over itself (same bytes, a new inode) just before the daemon stops:
    /// the final write must see the file is still ours and write, not give up on "another program's edit".
    @Test func writesTheLastChangesWhenTheFileWasReplacedByAnIdenticalCopyJustBeforeClosing() throws {
        let harness = try StoreHarness(throttleWindow: .seconds(60))
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a && harness.isDurable })
        Files.replace(harness.file, with: try #require(Files.readString(harness.file)))
        harness.store.save(c)  // held by the throttle window; the loop does not look at the copy before closing
        #expect(harness.store.close() == nil)
        #expect(harness.onDisk() == c)
    }

    @Test func movesACorruptFileAsideAndFallsBackToThePreviousVersion() throws {
        let harness = try StoreHarness()
        Files.write(harness.file + ".prev", SyncUpsFile.encode(a))
        let garbage = Array("[{\"broken\": ".utf8)
        Files.write(harness.file, garbage)
        let result = try harness.store.open()
        #expect(result.syncUps == a)
        #expect(result.warnings.count == 2)
        #expect(result.warnings[0].contains("does not parse"))
        let aside = Files.list(harness.directory.path).filter { $0.hasPrefix("sync-ups.json.corrupt-") }
        try #require(aside.count == 1)
        #expect(Files.read(harness.directory.appending(aside[0])) == garbage)
        // The restored state is written back as sync-ups.json at once.
        #expect(harness.run { harness.onDisk() == a })
        harness.store.close()
    }

    /// What a power cut can leave of a version renamed in place before its fsync: an empty file, or its
    /// length in zeros. Either way `.prev`, synced, is loaded and written back (zeros are kept aside).
    @Test(arguments: [0, 4096])
    func fallsBackToThePreviousVersionWhenAPowerCutLeftTheFileUnwritten(zeros: Int) throws {
        let harness = try StoreHarness()
        Files.write(harness.file + ".prev", SyncUpsFile.encode(a))
        Files.write(harness.file, [UInt8](repeating: 0, count: zeros))
        let result = try harness.store.open()
        #expect(result.syncUps == a)
        let warning = zeros == 0 ? "is empty; restored 1 sync-ups from" : "does not parse"
        #expect(result.warnings.first?.contains(warning) == true, "\(result.warnings)")
        #expect(Files.list(harness.directory.path).contains { $0.hasPrefix("sync-ups.json.corrupt-") } == (zeros > 0))
        #expect(harness.run { harness.onDisk() == a && harness.isDurable })
        // The unwritten file did not become the fallback when the state was written back.
        #expect(Files.read(harness.file + ".prev").flatMap { try? SyncUpsFile.decode($0) } == a)
        harness.store.close()
    }

    /// A daemon killed between putting a version in place and syncing it leaves it unsynced; the next start
    /// syncs it before the first write makes it `.prev`.
    @Test func syncsTheFileItFindsBeforeItCanBecomeThePreviousVersion() throws {
        let harness = try StoreHarness()
        Files.write(harness.file, SyncUpsFile.encode(a))
        #expect(try harness.store.open().syncUps == a)
        #expect(harness.faults.count(.sync) == 2, "the file and its directory")
        harness.store.close()
    }

    @Test func startsEmptyFromAnEmptyFileWithNothingToFallBackOn() throws {
        let harness = try StoreHarness()
        Files.write(harness.file, "")
        let result = try harness.store.open()
        #expect(result.syncUps.isEmpty && result.warnings.isEmpty)
        harness.store.close()
    }

    @Test func startsEmptyButKeepsBothFilesWhenEverythingIsCorrupt() throws {
        let harness = try StoreHarness()
        Files.write(harness.file, "not json")
        Files.write(harness.file + ".prev", "[{}]")
        let result = try harness.store.open()
        #expect(result.syncUps.isEmpty)
        #expect(result.warnings.last?.hasSuffix("starting with no sync-ups") == true)
        let names = Files.list(harness.directory.path)
        #expect(names.contains { $0.hasPrefix("sync-ups.json.corrupt-") })
        #expect(names.contains { $0.hasPrefix("sync-ups.json.prev.corrupt-") })
        #expect(!names.contains("sync-ups.json"))
        harness.store.close()
    }

    @Test func treatsDuplicateIDsAsCorruption() throws {
        let harness = try StoreHarness()
        let twice =
            "[" + String(decoding: SyncUpsFile.encode(a).dropFirst().dropLast(), as: UTF8.self) + ","
            + String(decoding: SyncUpsFile.encode(a).dropFirst().dropLast(), as: UTF8.self) + "]"
        Files.write(harness.file, twice)
        let result = try harness.store.open()
        #expect(result.syncUps.isEmpty)
        #expect(result.warnings.first?.contains("duplicate sync-up id") == true)
        harness.store.close()
    }

    /// On the manual clock: on the real one, a loaded machine could end the window (500 ms) before the loop
    /// read the edit's notification, and the pending write then went first.
    @Test func reloadsAValidOutsideEditAndDropsThePendingWrite() throws {
        let harness = try StoreHarness(
            throttleWindow: .milliseconds(500), clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000))
        )
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a })
        harness.store.save(b)  // throttled: pending until the window ends
        Files.replace(harness.file, with: String(decoding: SyncUpsFile.encode(c), as: UTF8.self))
        #expect(harness.run { !harness.events.isEmpty })
        #expect(harness.events == [.reloaded(c)])
        // The stale pending write is gone: nothing is left to write and no timer is left to write it, so the
        // window's end cannot clobber the outside edit.
        #expect(!harness.store.hasUnsavedChanges)
        #expect(harness.loop.scheduledTimerCount == 0)
        harness.loop.advanceTime(by: .seconds(1))
        #expect(harness.onDisk() == c)
        #expect(harness.writes == 1)
        harness.store.close()
    }

    /// Every state is written in turn, C among them; then another program writes C again. Only the version
    /// in place is ours: C, an earlier write, is an outside edit, and the writes' own notifications are not.
    @Test func doesNotMistakeItsOwnWritesForOutsideEdits() throws {
        let harness = try StoreHarness(throttleWindow: .milliseconds(50))
        _ = try harness.store.open()
        for (index, state) in [a, b, c, a, b].enumerated() {
            harness.store.save(state, urgent: true)
            #expect(harness.run { harness.onDisk() == state && harness.writes == index + 1 })
        }
        #expect(harness.run { !harness.store.hasUnsavedChanges })
        // Another program's edit after them: its notification comes after those of our writes, and its
        // examination after theirs, so once it is reported every write of ours has been looked at.
        Files.replace(harness.file, with: String(decoding: SyncUpsFile.encode(c), as: UTF8.self))
        #expect(harness.run { !harness.events.isEmpty })
        #expect(harness.events == [.reloaded(c)])
        harness.store.close()
    }

    /// A backup put back (`cp`, `git checkout`, a sync tool): the earlier version is the state now, and the
    /// sync-up added since is never written back over it.
    @Test func reloadsAnEarlierVersionOfItsOwnPutBackAndNeverWritesOverIt() throws {
        let harness = try StoreHarness(throttleWindow: .milliseconds(50))
        _ = try harness.store.open()
        let one = [SyncUp.fixture(seed: 1, title: "One")]
        let two = one + [.fixture(seed: 2, title: "Two")]
        harness.store.save(one, urgent: true)
        #expect(harness.run { harness.onDisk() == one && harness.isDurable })
        let backup = try #require(Files.readString(harness.file))
        harness.store.save(two, urgent: true)
        #expect(harness.run { harness.onDisk() == two && harness.isDurable })
        Files.replace(harness.file, with: backup)
        #expect(harness.run { !harness.events.isEmpty })
        #expect(harness.events == [.reloaded(one)])
        #expect(!harness.store.hasUnsavedChanges && harness.loop.scheduledTimerCount == 0)
        #expect(harness.onDisk() == one && harness.writes == 2)
        // The next change starts from the restored state.
        let three = one + [.fixture(seed: 3, title: "Three")]
        harness.store.save(three, urgent: true)
        #expect(harness.run { harness.onDisk() == three })
        #expect(harness.events == [.reloaded(one)])
        // The same backup put back again (a sync tool restoring in a loop): reloaded again, never fought over.
        Files.replace(harness.file, with: backup)
        #expect(harness.run { harness.events.count == 2 })
        #expect(harness.events == [.reloaded(one), .reloaded(one)])
        #expect(harness.onDisk() == one && !harness.store.hasUnsavedChanges && harness.writes == 3)
        harness.store.close()
        #expect(harness.onDisk() == one)
    }

    @Test func movesAnInvalidOutsideEditAsideAndRewritesTheState() throws {
        let harness = try StoreHarness()
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a })
        Files.replace(harness.file, with: "{ half an editor's save")
        #expect(harness.run { !harness.events.isEmpty && harness.onDisk() == a })
        guard case .outsideEditRejected(let movedTo, let reason) = harness.events.first else {
            Issue.record("expected outsideEditRejected, got \(harness.events)")
            return
        }
        #expect(Files.readString(movedTo) == "{ half an editor's save")
        #expect(reason.contains("not valid JSON"))
        harness.store.close()
    }

    /// A FIFO or a device where the file was would block the event loop's read forever (or never end).
    @Test(arguments: ["fifo", "symlink to /dev/zero"])
    func setsAsideWhatIsNotARegularFileInsteadOfReadingIt(kind: String) throws {
        let harness = try StoreHarness()
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a })
        let planted = harness.directory.appending("planted")
        if kind == "fifo" { mkfifo(planted, 0o600) } else { symlink("/dev/zero", planted) }
        rename(planted, harness.file)
        #expect(harness.run { !harness.events.isEmpty && harness.onDisk() == a })
        guard case .outsideEditRejected(let movedTo, let reason) = harness.events.first else {
            Issue.record("expected outsideEditRejected, got \(harness.events)")
            return
        }
        #expect(reason.hasSuffix("not a regular file: Invalid argument"))
        var info = stat()
        #expect(lstat(movedTo, &info) == 0 && info.st_mode & S_IFMT == (kind == "fifo" ? S_IFIFO : S_IFLNK))
        harness.store.close()
    }

    @Test func startsFromThePreviousVersionWhenAFifoSitsWhereTheFileWas() throws {
        let harness = try StoreHarness()
        Files.write(harness.file + ".prev", SyncUpsFile.encode(a))
        mkfifo(harness.file, 0o600)
        let result = try harness.store.open()
        #expect(result.syncUps == a)
        #expect(result.warnings.first?.contains("not a regular file") == true, "\(result.warnings)")
        #expect(harness.run { harness.onDisk() == a })
        harness.store.close()
    }

    @Test func rewritesTheFileWhenAnotherProgramDeletesIt() throws {
        let harness = try StoreHarness()
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a })
        unlink(harness.file)
        #expect(harness.run { harness.onDisk() == a })
        harness.store.close()
    }

    @Test func keepsTheStateAndRetriesWhenTheDiskIsFull() throws {
        let harness = try StoreHarness(throttleWindow: .milliseconds(50))
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a })
        harness.faults.fail(.write, with: .noSpace)
        harness.store.save(b)
        #expect(harness.run(advancing: .milliseconds(10)) { !harness.events.isEmpty })
        guard case .writeFailed(let message) = harness.events.first else {
            Issue.record("expected writeFailed, got \(harness.events)")
            return
        }
        #expect(message.hasSuffix("write: No space left on device"))
        #expect(harness.store.lastError == message)
        #expect(harness.onDisk() == a)
        harness.store.save(c)
        harness.faults.heal()
        #expect(harness.run(advancing: .milliseconds(100)) { harness.onDisk() == c })
        #expect(harness.run(advancing: .milliseconds(100)) { harness.events.last == .writeRecovered })
        #expect(harness.store.lastError == nil)
        #expect(Files.list(harness.directory.path) == ["meetings", "sync-ups.json", "sync-ups.json.prev"])
        harness.store.close()
    }

    /// The fsync of a version written before the failure, late on a busy disk, says nothing of the failed
    /// write: the error stays (and no "recovered") until a write after it is durable. (Under load this made
    /// keepsTheStateAndRetriesWhenTheDiskIsFull see "recovered" while the retry was still being synced.)
    @Test func aLateFsyncOfAnEarlierVersionDoesNotClearAWriteError() throws {
        let gate = try Gate()
        let harness = try StoreHarness(throttleWindow: .milliseconds(50)) { if $0 == .sync { gate.pass() } }
        _ = try harness.store.open()
        gate.close()
        harness.store.save(a, urgent: true)
        var isADurable = false
        harness.store.whenDurable { isADurable = true }
        #expect(harness.run { harness.onDisk() == a })
        harness.faults.fail(.write, with: .noSpace)
        harness.store.save(b, urgent: true)
        #expect(harness.run { harness.store.lastError != nil })
        #expect(!isADurable)
        gate.open()  // A's fsync completes now
        #expect(harness.run { isADurable })
        #expect(harness.store.lastError != nil)
        #expect(!harness.events.contains(.writeRecovered), "\(harness.events)")
        harness.faults.heal()
        #expect(
            harness.run(advancing: .milliseconds(100)) { harness.events.last == .writeRecovered && harness.isDurable })
        #expect(harness.onDisk() == b && harness.store.lastError == nil)
        harness.store.close()
    }

    @Test func reportsAFailedFsyncAndWritesAFreshFileNextTime() throws {
        let harness = try StoreHarness(throttleWindow: .milliseconds(50))
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.isDurable })
        harness.faults.fail(.sync, with: .ioError)
        harness.store.save(b)
        #expect(harness.run(advancing: .milliseconds(10)) { harness.store.lastError != nil })
        #expect(harness.store.lastError?.hasSuffix("fsync: Input/output error") == true)
        // In place (a killed daemon keeps it) but never the fallback: a power cut may lose it.
        #expect(harness.onDisk() == b)
        #expect(Files.read(harness.file + ".prev").flatMap { try? SyncUpsFile.decode($0) } == a)
        let unsynced = FileIdentity(path: harness.file)
        harness.faults.heal()
        #expect(harness.run(advancing: .milliseconds(100)) { harness.store.lastError == nil && harness.isDurable })
        // Written again in a fresh file (Linux forgets a failed writeback: syncing the same one proves nothing).
        #expect(FileIdentity(path: harness.file)?.inode != unsynced?.inode)
        #expect(harness.onDisk() == b)
        #expect(Files.read(harness.file + ".prev").flatMap { try? SyncUpsFile.decode($0) } == a)
        harness.store.close()
    }

    /// The point of writing in two steps: however long `fsync` takes, every change reaches the file (where a
    /// killed daemon keeps it) within the throttle window; only the durable mark waits for the disk.
    @Test func putsChangesInPlaceWhileAnFsyncIsStuck() throws {
        let gate = try Gate()
        let harness = try StoreHarness(throttleWindow: .milliseconds(50)) { if $0 == .sync { gate.pass() } }
        _ = try harness.store.open()
        gate.close()
        harness.store.save(a)
        var durable: [String] = []
        harness.store.whenDurable { durable.append("a") }
        #expect(harness.run { harness.onDisk() == a })
        for (index, state) in [b, c].enumerated() {
            harness.store.save(state)
            #expect(
                harness.run(advancing: .milliseconds(10)) { harness.onDisk() == state },
                "change \(index) waited for the stuck fsync")
        }
        harness.store.whenDurable { durable.append("c") }
        #expect(durable.isEmpty && !Files.exists(harness.file + ".prev"))
        gate.open()
        #expect(harness.run { durable == ["a", "c"] })
        // Versions that piled up behind the stuck fsync were dropped unsynced, and no name of theirs is left.
        #expect(Files.list(harness.directory.path).filter { $0.hasPrefix(".") }.isEmpty)
        harness.store.close()
    }

    @Test func runsAnActionAfterWriteOnlyOnceItsStateIsOnDisk() throws {
        let harness = try StoreHarness(throttleWindow: .milliseconds(50))
        _ = try harness.store.open()
        var ran: [String] = []
        harness.store.whenDurable { ran.append("nothing unsaved") }
        #expect(ran == ["nothing unsaved"])

        harness.faults.fail(.write, with: .noSpace)
        harness.store.save(a, urgent: true)
        harness.store.whenDurable { ran.append(harness.onDisk()?.first?.title ?? "no file") }
        #expect(harness.run { harness.store.lastError != nil })
        // The write failed: the action waits (a meeting's journal stays while the meeting is not in the file).
        #expect(ran == ["nothing unsaved"])
        harness.store.save(b)
        harness.store.whenDurable { ran.append(harness.onDisk()?.first?.title ?? "no file") }
        harness.faults.heal()
        #expect(harness.run(advancing: .milliseconds(100)) { ran.count == 3 })
        // Both run once the write that took the file past them is done (jobs replace each other: it wrote B).
        #expect(ran == ["nothing unsaved", "B", "B"])
        harness.store.close()
    }

    @Test func runsActionsAfterTheFinalWriteOnClose() throws {
        let harness = try StoreHarness(throttleWindow: .seconds(60))
        _ = try harness.store.open()
        harness.store.save(a)
        #expect(harness.run { harness.onDisk() == a })
        harness.store.save(c)
        var ran = false
        harness.store.whenDurable { ran = harness.onDisk() == c }
        #expect(!ran)
        #expect(harness.store.close() == nil)
        #expect(ran)
    }
}
