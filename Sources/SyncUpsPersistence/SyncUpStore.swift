import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// Keeps `sync-ups.json` in step with the daemon's state: loads it at start, writes every change atomically
/// (throttled to one write a second, urgent writes at once; in place first, durable next: `VersionedFile`),
/// notices when another program changes it, and keeps retrying when the disk refuses.
///
/// Lives on the event loop's thread. The daemon owns the state; the store is told each new snapshot and
/// reports back through `onEvent`.
public final class SyncUpStore {
    /// Something the daemon must know about the file.
    public enum Event: Sendable, Equatable {
        /// Another program wrote a valid file; these sync-ups are now the state (its edit wins over any
        /// change not yet written).
        case reloaded([SyncUp])
        /// Another program wrote a file that does not parse; it was moved aside, and the state rewritten.
        case outsideEditRejected(movedTo: String, reason: String)
        /// A write failed; the state is safe in memory and the write will be retried.
        case writeFailed(String)
        /// Writing works again after failures.
        case writeRecovered
        /// The data directory was moved away or removed; the store made a new one at its path, locked and
        /// watches it, and writes the state there (or loads the file found there).
        case directoryReplaced(String)
        /// The data directory was replaced by one another daemon holds: nothing more is written. The daemon
        /// must stop; the changes not yet written are lost, and the message says so.
        case directoryTaken(String)
    }

    /// The data directory at the store's path, against the one it locked and watches.
    private enum DirectoryState {
        /// The one locked and watched: writes go ahead.
        case current
        /// Moved away or removed: the one at the path is taken over before anything is written.
        case replaced
        /// Taken over: the examination of the file found in it decides what is written first.
        case examining
        /// Another daemon holds the new one: nothing is written any more.
        case taken
    }

    /// What loading found.
    public struct LoadResult: Sendable, Equatable {
        public var syncUps: [SyncUp]
        /// Problems found and dealt with (a corrupt file moved aside, a fallback used), for the log and `status`.
        public var warnings: [String]
    }

    public let directory: DataDirectory
    private let loop: EventLoop
    private let fileSystem: FileSystem
    /// Stamps the names of files moved aside.
    private let wallClock: WallClock
    private let file: VersionedFile
    private let onEvent: (Event) -> Void
    private let results: Mailbox<StoreWriter.Result>
    private var writer: StoreWriter?
    private var inotify: Inotify?
    private var watches: [EventLoop.Watch] = []
    /// The inotify watch of the data directory, made again when another directory takes its place.
    private var changeWatch: EventLoop.Watch?
    private var directoryState = DirectoryState.current

    /// The daemon's lock on the data directory (nil when nobody locks, as in tests): when another directory
    /// takes its place, the store locks that one and drops this.
    public var lock: LockFile?

    private var latest: [SyncUp] = []
    private var generation = 0
    /// The newest state in place (a killed daemon keeps it) and the newest synced (a power cut keeps it).
    private var writtenGeneration = 0
    private var durableGeneration = 0
    private var throttle: WriteThrottle
    private var throttleTimer: EventLoop.Timer?
    private var retryTimer: EventLoop.Timer?
    private var retryDelay = StoreRetry.initialDelay
    /// A write was refused because the file looked changed; resubmit once the file is found to be ours.
    private var isConflictPending = false
    /// Set by `close`: results are recorded, but start no more writes.
    private var isClosing = false
    /// Actions waiting for the state of a generation to be on disk (`whenWritten`), oldest first.
    private var afterWrite: [(generation: Int, action: () -> Void)] = []

    /// The last write error, or nil when the file is up to date or a write is merely pending.
    public private(set) var lastError: String?
    /// The newest generation whose write or sync failed: only it or a later one made durable is a recovery (an
    /// earlier version's fsync, late on a busy disk, says nothing of the failure).
    private var failedGeneration = 0
    /// True while the file lags behind the state (a version in place that is not yet synced counts as saved).
    public var hasUnsavedChanges: Bool { writtenGeneration < generation }
    /// True when the state is in the file and synced: it would survive a power cut.
    public var isDurable: Bool { durableGeneration >= generation }

    public init(
        directory: DataDirectory,
        loop: EventLoop,
        fileSystem: FileSystem = .live,
        throttleWindow: Duration = .seconds(1),
        wallClock: WallClock = .system,
        onEvent: @escaping (Event) -> Void
    ) throws(SystemError) {
        self.wallClock = wallClock
        self.directory = directory
        self.loop = loop
        self.fileSystem = fileSystem
        self.file = VersionedFile(
            path: directory.syncUpsFile, previousPath: directory.previousFile, fileSystem: fileSystem)
        self.onEvent = onEvent
        self.throttle = WriteThrottle(window: throttleWindow)
        self.results = try Mailbox()
    }

    // MARK: - Loading

    /// Creates the data directory if needed, loads the file (falling back to `.prev`, never overwriting a bad
    /// file), then starts watching for outside edits and the writer thread.
    public func open() throws(SystemError) -> LoadResult {
        try directory.create()
        removeStaleTemporaryFiles()
        var loader = StoreLoader(directory: directory, fileSystem: fileSystem, wallClock: wallClock)
        let result = loader.load()
        file.syncFileInPlace()
        latest = result.syncUps
        let writer = try StoreWriter(
            file: file,
            results: results,
            disk: DiskState(
                identity: fileSystem.identity(directory.syncUpsFile),
                directory: FileIdentity(followingSymlinks: directory.path))
        )
        self.writer = writer
        watches.append(try results.attach(to: loop) { [unowned self] in $0.forEach(handle) })
        try startWatching()
        try writer.start()
        if loader.needsRewrite { save(latest, urgent: true) }
        return LoadResult(syncUps: result.syncUps, warnings: result.warnings)
    }

    private func removeStaleTemporaryFiles() {
        let prefix = file.temporaryPrefix
        guard let entries = try? DirectoryListing.names(in: directory.path) else { return }
        for name in entries where name.hasPrefix(prefix) {
            fileSystem.unlink(FilePath.join(directory.path, name))
        }
        fileSystem.unlink(directory.previousFile + ".tmp")
        file.deleteRetiredVersion()
        directory.removeStaleMeetingTemporaryFiles(fileSystem: fileSystem)
    }

    private func startWatching() throws(SystemError) {
        let inotify = try Inotify()
        let gone = UInt32(IN_MOVE_SELF | IN_DELETE_SELF | IN_IGNORED)
        _ = try inotify.add(
            directory.path, mask: UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE) | gone)
        if let changeWatch { loop.unwatch(changeWatch) }
        self.inotify = inotify
        changeWatch = try loop.watch(inotify.descriptor, for: .readable) { [unowned self] _ in
            let events = inotify.drain()
            if events.contains(where: { $0.mask & gone != 0 }) {
                // The directory itself moved or went: what inotify reports from now on is of the old one.
                directoryState = directoryState == .taken ? .taken : .replaced
                loop.execute { [unowned self] in takeOverDirectory() }
            } else if events.contains(where: { $0.name == DataDirectory.fileName }) {
                writer?.examine()
            }
        }
    }

    // MARK: - Saving

    /// Records a new state. It is written at once if nothing was written in the last second, else at the end
    /// of that second; `urgent` writes at once (a meeting saved, the daemon stopping).
    public func save(_ syncUps: [SyncUp], urgent: Bool = false) {
        latest = syncUps
        generation += 1
        if retryTimer != nil { return }  // failing: the retry will write the latest state
        let now = loop.now()
        act(on: urgent ? throttle.urgent(at: now) : throttle.changed(at: now))
    }

    /// Runs `action` on the loop once the state as it is now is durably in the file: at once if it already
    /// is, else after the `fsync` that takes it there. For what must not go before the data it protects, such
    /// as a meeting's journal, which may be removed only once the meeting is on disk. An outside edit that
    /// replaces the state also counts (the file then is the state); a write that never succeeds never runs it.
    public func whenWritten(_ action: @escaping () -> Void) {
        guard durableGeneration < generation else { return action() }
        afterWrite.append((generation, action))
    }

    private func runActionsAfterWrite() {
        while let first = afterWrite.first, first.generation <= durableGeneration {
            afterWrite.removeFirst()
            first.action()
        }
    }

    private func act(on decision: WriteThrottle.Decision) {
        switch decision {
        case .writeNow:
            if let throttleTimer { loop.cancel(throttleTimer) }
            throttleTimer = nil
            submit()
        case .writeAt(let deadline):
            if throttleTimer == nil {
                throttleTimer = loop.schedule(at: deadline) { [unowned self] in
                    throttleTimer = nil
                    act(on: throttle.timerFired(at: loop.now()))
                }
            }
        case .nothing:
            break
        }
    }

    private func submit() {
        guard generation > writtenGeneration, directoryState != .taken else { return }
        writer?.submit(StoreWriter.Job(generation: generation, syncUps: latest))
    }

    private func handle(_ result: StoreWriter.Result) {
        switch result {
        case .written(let written):
            writtenGeneration = max(writtenGeneration, written)
            if hasUnsavedChanges && throttleTimer == nil && retryTimer == nil && !isClosing {
                act(on: throttle.changed(at: loop.now()))
            }
        case .durable(let durable):
            durableGeneration = max(durableGeneration, durable)
            runActionsAfterWrite()
            // A directory lost to another daemon is not a recovery, whatever the old one's last fsync says.
            guard durable >= failedGeneration, directoryState != .taken else { return }
            retryDelay = StoreRetry.initialDelay
            if lastError != nil {
                lastError = nil
                if !isClosing { onEvent(.writeRecovered) }
            }
        case .failed(let failed, let error):
            guard failed > writtenGeneration else { return }
            failedGeneration = max(failedGeneration, failed)
            report("writing \(directory.syncUpsFile) failed: \(error)")
        case .notDurable(let failed, let error):
            // In place but maybe not on the device: write the state again, in a fresh file.
            writtenGeneration = min(writtenGeneration, failed - 1)
            failedGeneration = max(failedGeneration, failed)
            report("syncing \(directory.syncUpsFile) failed: \(error)")
        case .conflict:
            guard !isClosing else { return }
            isConflictPending = true
            writer?.examine()
        case .examined(let examination):
            guard !isClosing else { return }
            apply(examination)
        case .directoryReplaced:
            // A write refused while a take-over is under way (inotify was first) is submitted again once the
            // new directory's file is examined.
            guard !isClosing, directoryState == .current else { return }
            directoryState = .replaced
            takeOverDirectory()
        }
    }

    private func report(_ failure: String) {
        lastError = failure
        guard !isClosing else { return }
        onEvent(.writeFailed(failure))
        scheduleRetry()
    }

    private func scheduleRetry() {
        guard retryTimer == nil else { return }
        let delay = retryDelay
        retryDelay = StoreRetry.next(after: retryDelay)
        retryTimer = loop.schedule(after: delay) { [unowned self] in
            retryTimer = nil
            if directoryState == .replaced { takeOverDirectory() } else { submit() }
        }
    }

    // MARK: - The directory replaced

    /// The data directory at the store's path is no longer the one it locked and watches (`mv data
    /// data.gone`, `rm -r data`): makes one there, locks it, watches it, then has its file examined, which
    /// decides what is written first. Until then nothing is written: the writer refuses any other directory.
    private func takeOverDirectory() {
        guard directoryState == .replaced, !isClosing, let writer else { return }
        let path = directory.path
        if let locked = writer.disk.withLock({ $0.directory }),
            FileIdentity(followingSymlinks: path)?.isSameFile(as: locked) == true
        {
            // Moved back, or taken over already (the refused write was older): ours, lock and watch included.
            directoryState = .current
            return submit()
        }
        do {
            // Only the directory itself until it is locked: it may be another daemon's.
            try directory.createTopLevel()
        } catch {
            return report("the data directory \(path) was moved or removed; making it again failed: \(error)")
        }
        if lock != nil {
            do {
                let taken = try LockFile(directory: path, pidFile: directory.lockFile)
                lock?.release()
                lock = taken
            } catch {
                if case .held(let pid) = error {
                    directoryState = .taken
                    let failure =
                        "the data directory \(path) was replaced by one that another syncupsd (pid \(pid.map(String.init) ?? "unknown")) is using; "
                        + (hasUnsavedChanges
                            ? "the changes made since the last write were not written and are lost"
                            : "every change was written before (into the directory moved away, if it still exists)")
                    lastError = failure
                    return onEvent(.directoryTaken(failure))
                }
                return report("the data directory \(path) was moved or removed; locking the new one failed: \(error)")
            }
        }
        do {
            try directory.create()  // `meetings/`
        } catch {
            return report("the data directory \(path) was moved or removed; making it again failed: \(error)")
        }
        guard let identity = FileIdentity(followingSymlinks: path) else {
            return report("the data directory \(path) was moved or removed, and is gone again")
        }
        do {
            try startWatching()
        } catch {
            return report("the data directory \(path) was moved or removed; watching the new one failed: \(error)")
        }
        writer.disk.withLock {
            $0.directory = identity
            $0.identity = nil  // any file there is no version of ours: examined, never silently replaced
        }
        directoryState = .examining
        onEvent(
            .directoryReplaced("the data directory \(path) was moved or removed; made it again, locked and watched it"))
        writer.examine()
    }

    // MARK: - Outside edits

    /// Acts on what the file on disk was found to be (after a change notification or a refused write).
    private func apply(_ examination: FileExamination) {
        // A directory taken over: the state written last went with the old one, so any change since must reach
        // the new one, even over a file found there.
        let isTakeOver = directoryState == .examining
        if isTakeOver { directoryState = .current }
        switch examination {
        case .missing:
            // Deleted: the state is in memory, so write it back rather than lose it.
            markDiskState(identity: nil, overtaking: false)
            save(latest, urgent: true)
        case .unreadable(let reason):
            // There but unreadable (its mode changed): not ours to judge, so kept aside like an invalid edit.
            rejectOutsideEdit(reason: reason)
        case .ours(let identity):
            // Our own write (or the same bytes): nothing changed, but remember its identity (a `touch` changes it).
            markDiskState(identity: identity, overtaking: false)
            if isConflictPending || isTakeOver {
                isConflictPending = false
                submit()
            }
        case .edited(_, _) where isTakeOver && hasUnsavedChanges:
            // A file in the new directory, and changes acknowledged since the old one went that are nowhere on
            // disk: they are kept, and the file is moved aside, never lost.
            let path = directory.syncUpsFile
            let aside = StoreLoader.moveAside(path, fileSystem: fileSystem, at: wallClock(), label: "replaced")
            markDiskState(identity: nil, overtaking: false)
            onEvent(
                .directoryReplaced(
                    "found a sync-ups.json in the new data directory while changes made since the old one went were not yet written: kept them, and moved that file to \(aside ?? "nowhere (rename failed)")"
                ))
            save(latest, urgent: true)
        case .edited(let identity, let syncUps):
            // Another program's valid edit wins over any change not yet written.
            markDiskState(identity: identity, overtaking: true)
            isConflictPending = false
            throttle.cancelPending()
            if let throttleTimer { loop.cancel(throttleTimer) }
            throttleTimer = nil
            latest = syncUps
            generation += 1
            writtenGeneration = generation
            durableGeneration = generation
            onEvent(.reloaded(syncUps))
            runActionsAfterWrite()
        case .invalid(_, let reason):
            rejectOutsideEdit(reason: reason)
        }
    }

    /// Moves another program's file aside (never deleting a byte of it) and writes the state back.
    private func rejectOutsideEdit(reason: String) {
        let path = directory.syncUpsFile
        let aside = StoreLoader.moveAside(path, fileSystem: fileSystem, at: wallClock())
        markDiskState(identity: nil, overtaking: false)
        onEvent(.outsideEditRejected(movedTo: aside ?? path, reason: reason))
        save(latest, urgent: true)
    }

    /// Records what is on disk for the writer's next check, unless the file examined has been replaced since
    /// (by the writer's next version, most likely): an older identity set over a newer one would make the next
    /// write, perhaps the last one at shutdown, refuse to replace our own file. That replacement is examined
    /// in turn.
    private func markDiskState(identity: FileIdentity?, overtaking: Bool) {
        let newGeneration = generation + 1
        let path = directory.syncUpsFile
        writer?.disk.withLock {
            if fileSystem.identity(path) == identity { $0.identity = identity }
            if overtaking { $0.minimumGeneration = newGeneration }
        }
    }

    /// The regular file's identity and, if `readsIf` says so given that identity, its bytes: from one
    /// descriptor, so both describe the same file.
    static func readIdentified(_ path: String, readsIf shouldRead: (FileIdentity) -> Bool = { _ in true })
        throws(SystemError) -> (identity: FileIdentity, bytes: [UInt8]?)
    {
        try withRegularFile(path) { (fd, identity) throws(SystemError) in
            guard shouldRead(identity) else { return (identity, nil) }
            return (identity, try fd.readToEnd(sizeHint: Int(clamping: identity.size) + 1))
        }
    }

    /// Runs `body` with the regular file at `path` open and its identity, then closes it.
    static func withRegularFile<Result>(
        _ path: String, _ body: (FileDescriptor, FileIdentity) throws(SystemError) -> Result
    ) throws(SystemError) -> Result {
        let (fd, info) = try FileDescriptor.openRegularFile(path)
        defer { fd.close() }
        return try body(fd, FileIdentity(info))
    }

    // MARK: - Closing

    /// Writes any unsaved state now, synchronously and durably, and stops the writer threads; for shutdown.
    /// Returns the error if that last write failed (the data is then still in `.prev` and the failure was
    /// logged).
    @discardableResult
    public func close() -> String? {
        // A directory moved away just before: the state goes into the one at the path, if it can be ours.
        if directoryState == .replaced { takeOverDirectory() }
        isClosing = true
        writer?.stop()  // the version in place, if any, is made durable first
        for watch in watches + [changeWatch].compactMap({ $0 }) { loop.unwatch(watch) }
        watches.removeAll()
        changeWatch = nil
        if let throttleTimer { loop.cancel(throttleTimer) }
        if let retryTimer { loop.cancel(retryTimer) }
        for result in results.takeAll() { handle(result) }
        // Another daemon's directory: nothing is written there, and the exit says why.
        if directoryState == .taken { return lastError }
        guard durableGeneration < generation, let writer else { return nil }
        var result = writer.perform(StoreWriter.Job(generation: generation, syncUps: latest))
        if case .conflict = result {
            // Decide whose the file is, as the running store would: ours after all (write again), another
            // program's valid edit (it wins: nothing to write), or an invalid one (moved aside: write again).
            apply(FileExamination.run(directory.syncUpsFile, disk: writer.disk))
            guard durableGeneration < generation else { return nil }
            result = writer.perform(StoreWriter.Job(generation: generation, syncUps: latest))
        }
        switch result {
        case .durable, .written:  // `perform` does both steps: never just `.written`
            writtenGeneration = generation
            durableGeneration = generation
            runActionsAfterWrite()
            return nil
        case .failed(_, let error), .notDurable(_, let error):
            return "final write of \(directory.syncUpsFile) failed: \(error)"
        case .conflict:
            return "final write of \(directory.syncUpsFile) skipped: another program changed the file"
        case .directoryReplaced:
            return
                "final write of \(directory.syncUpsFile) skipped: \(lastError ?? "the data directory was moved or removed")"
        case .examined:
            preconditionFailure("StoreWriter.perform writes; it never examines")
        }
    }
}

/// The back-off between failed writes of the user's data: half a second, doubling to thirty.
public enum StoreRetry {
    public static let initialDelay = Duration.milliseconds(500)
    public static let maximumDelay = Duration.seconds(30)

    /// The delay after `delay`.
    public static func next(after delay: Duration) -> Duration { min(delay * 2, maximumDelay) }
}
