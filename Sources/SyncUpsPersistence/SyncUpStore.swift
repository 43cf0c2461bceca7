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
    }

    /// What loading found.
    public struct LoadResult: Sendable, Equatable {
        public var syncUps: [SyncUp]
        /// The people removed from each sync-up, from `former-attendees.json`, and what of it could not be used.
        public var former: FormerAttendees
        public var formerProblems: [String]
        /// Problems found and dealt with (a corrupt file moved aside, a fallback used), for the log and `status`.
        public var warnings: [String]
        /// Whether `syncUps` is `sync-ups.json`'s own, read whole: false after a fallback to `.prev` or an empty
        /// start for a missing, empty or damaged file, when it may lack sync-ups the real file held. Only a
        /// roster read whole may decide that something referring to a sync-up or an attendee refers to nobody.
        public var isFromFile = true
    }

    public let directory: DataDirectory
    private let loop: EventLoop
    private let fileSystem: FileSystem
    /// Stamps the names of files moved aside.
    private let wallClock: WallClock
    private let file: VersionedFile
    private let formerFile: FormerAttendeesFile
    private var onEvent: (Event) -> Void
    private let results: Mailbox<StoreWriter.Result>
    private var writer: StoreWriter?
    private var inotify: Inotify?
    private var watches: [EventLoop.Watch] = []

    private var latest: [SyncUp] = []
    /// The people removed from each sync-up, as of `latest`: written with it, first (see `StoreWriter`).
    private var latestFormer = FormerAttendees()
    private var generation = 0
    /// The newest state in place (a killed daemon keeps it) and the newest synced (a power cut keeps it).
    private var writtenGeneration = 0
    private var durableGeneration = 0
    private var throttle: WriteThrottle
    private var throttleTimer: EventLoop.Timer?
    private var retryTimer: EventLoop.Timer?
    private var backoff = StoreRetry.backoff
    /// A write was refused because the file looked changed; resubmit once the file is found to be ours.
    private var isConflictPending = false
    /// Set by `close`: results are recorded, but start no more writes.
    private var isClosing = false
    /// Actions waiting for the state of a generation to be on disk (`whenDurable`), oldest first.
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
        self.formerFile = FormerAttendeesFile(directory: directory, fileSystem: fileSystem)
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
        let (former, loadProblems) = formerFile.load(at: wallClock())
        let formerProblems =
            loadProblems + former.problems(against: result.syncUps).map { "\(FormerAttendeesFile.fileName): \($0)" }
        latestFormer = former
        let writer = try StoreWriter(
            file: file,
            formerFile: formerFile,
            former: former,
            results: results,
            disk: DiskState(identity: fileSystem.identity(directory.syncUpsFile))
        )
        self.writer = writer
        watches.append(try results.attach(to: loop) { [unowned self] in $0.forEach(handle) })
        try startWatching()
        try writer.start()
        if loader.needsRewrite { save(latest, urgent: true) }
        return LoadResult(
            syncUps: result.syncUps, former: former, formerProblems: formerProblems, warnings: result.warnings,
            isFromFile: loader.isFromFile)
    }

    private func removeStaleTemporaryFiles() {
        let prefix = file.temporaryPrefix
        guard let entries = try? DirectoryListing.names(in: directory.path) else { return }
        for name in entries where name.hasPrefix(prefix) {
            fileSystem.unlink(FilePath.join(directory.path, name))
        }
        // Before the journal writer, the one writer of `deleted-meetings.json`, starts.
        let deletedRecord = DeletedMeetingsFile(directory: directory).temporaryPrefix
        for name in entries where name.hasPrefix(formerFile.temporaryPrefix) || name.hasPrefix(deletedRecord) {
            fileSystem.unlink(FilePath.join(directory.path, name))
        }
        fileSystem.unlink(directory.previousFile + ".tmp")
        file.deleteRetiredVersion()
        directory.removeStaleMeetingTemporaryFiles(fileSystem: fileSystem)
    }

    private func startWatching() throws(SystemError) {
        let inotify = try Inotify()
        _ = try inotify.add(directory.path, mask: UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE))
        self.inotify = inotify
        watches.append(
            try loop.watch(inotify.descriptor, for: .readable) { [unowned self] _ in
                let events = inotify.drain()
                if events.contains(where: { $0.name == DataDirectory.fileName }) { writer?.examine() }
            }
        )
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

    /// Records a new state whose former attendees changed too (someone removed, or added back): both are
    /// written together, the former attendees first, so no `sync-ups.json` that drops someone reaches the disk
    /// before their id is remembered.
    public func save(_ syncUps: [SyncUp], former: FormerAttendees) {
        latestFormer = former
        save(syncUps)
    }

    /// Runs `action` on the loop once the state as it is now is durably in the file: at once if it already
    /// is, else after the `fsync` that takes it there. For what must not go before the data it protects, such
    /// as a meeting's journal, which may be removed only once the meeting is on disk. An outside edit that
    /// replaces the state also counts (the file then is the state); a write that never succeeds never runs it.
    public func whenDurable(_ action: @escaping () -> Void) {
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
        guard generation > writtenGeneration else { return }
        writer?.submit(StoreWriter.Job(generation: generation, syncUps: latest, former: latestFormer))
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
            guard durable >= failedGeneration else { return }
            backoff.reset()
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
        retryTimer = loop.schedule(after: backoff.next()) { [unowned self] in
            retryTimer = nil
            try? directory.create()  // the directory itself may have been removed
            submit()
        }
    }

    // MARK: - Outside edits

    /// Acts on what the file on disk was found to be (after a change notification or a refused write).
    private func apply(_ examination: FileExamination) {
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
            if isConflictPending {
                isConflictPending = false
                submit()
            }
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
    public static func readIdentified(_ path: String, readsIf shouldRead: (FileIdentity) -> Bool = { _ in true })
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
        isClosing = true
        // Closed, the store watches and reports nothing: its inotify instance goes now (the user's limit is
        // 128), and so does its handler, which holds what its events reach (the daemon's state, which holds
        // the store: an in-process daemon of a test ends with them).
        defer {
            inotify = nil
            onEvent = { _ in }
        }
        writer?.stop()  // the version in place, if any, is made durable first
        for watch in watches { loop.unwatch(watch) }
        watches.removeAll()
        if let throttleTimer { loop.cancel(throttleTimer) }
        if let retryTimer { loop.cancel(retryTimer) }
        for result in results.takeAll() { handle(result) }
        guard durableGeneration < generation, let writer else { return nil }
        var result = writer.perform(StoreWriter.Job(generation: generation, syncUps: latest, former: latestFormer))
        if case .conflict = result {
            // Decide whose the file is, as the running store would: ours after all (write again), another
            // program's valid edit (it wins: nothing to write), or an invalid one (moved aside: write again).
            apply(FileExamination.run(directory.syncUpsFile, disk: writer.disk))
            guard durableGeneration < generation else { return nil }
            result = writer.perform(StoreWriter.Job(generation: generation, syncUps: latest, former: latestFormer))
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
        case .examined:
            preconditionFailure("StoreWriter.perform writes; it never examines")
        }
    }
}

/// The back-off between failed writes of the user's data: half a second, doubling to thirty.
public enum StoreRetry {
    public static let initialDelay = Duration.milliseconds(500)
    public static let maximumDelay = Duration.seconds(30)

    /// The policy as a `Backoff`: the store's, the details writes' and `RetryingFileWriter`'s.
    public static var backoff: Backoff { Backoff(initial: initialDelay, maximum: maximumDelay) }
}
