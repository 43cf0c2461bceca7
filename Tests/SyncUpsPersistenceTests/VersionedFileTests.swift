import Glibc
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Synchronization
import Testing

/// The two steps `sync-ups.json` is written in: in place at once, durable after. What must hold at every
/// moment: the file is a whole version, and `.prev` is a version whose `fsync` completed.
@Suite struct VersionedFileTests {
    let directory = TemporaryDirectory("versioned")
    var path: String { directory.appending("sync-ups.json") }
    var previous: String { path + ".prev" }

    func put(_ file: VersionedFile, _ text: String) throws -> VersionedFile.Version {
        try file.put(pieces: [Array(text.utf8)])
    }

    @Test func putsAVersionInPlaceAndMakesItThePreviousOneOnceDurable() throws {
        let file = VersionedFile(path: path, previousPath: previous)
        try file.makeDurable(put(file, "first"))
        #expect(Files.readString(path) == "first" && !Files.exists(previous))
        try file.makeDurable(put(file, "second"))
        #expect(Files.readString(path) == "second" && Files.readString(previous) == "first")
        #expect(Files.mode(path) == 0o600)
        file.deleteRetiredVersion()
        #expect(Files.list(directory.path) == ["sync-ups.json", "sync-ups.json.prev"])
    }

    /// While a version is not yet durable, newer ones go in place without it becoming `.prev`; once synced,
    /// the newest replaced version is the fallback, and the ones that piled up are dropped unsynced.
    @Test func neverMakesAVersionThePreviousOneBeforeItsFsyncCompletes() throws {
        let synced = Mutex<[FileIdentity]>([])
        var fileSystem = FileSystem.live
        fileSystem.sync = { (fd) throws(SystemError) in
            try FileSystem.live.sync(fd)
            if let identity = FileIdentity(fd: fd) { synced.withLock { $0.append(identity) } }
        }
        /// Whether the file now at `.prev` is one whose fsync completed.
        func isPreviousSynced() -> Bool {
            guard let identity = FileIdentity(path: previous) else { return false }
            return synced.withLock { $0.contains(identity) }
        }
        let file = VersionedFile(path: path, previousPath: previous, fileSystem: fileSystem)
        try file.makeDurable(put(file, "durable"))
        let stuck = try put(file, "stuck in fsync")
        let piledUp = try put(file, "piled up")
        let newest = try put(file, "newest")
        #expect(Files.readString(path) == "newest")
        #expect(Files.readString(previous) == "durable", "only a synced version is the fallback")
        #expect(isPreviousSynced())
        try file.makeDurable(stuck)
        #expect(Files.readString(previous) == "stuck in fsync", "replaced and now synced: the best fallback")
        #expect(isPreviousSynced())
        file.abandon(piledUp)
        try file.makeDurable(newest)
        #expect(Files.readString(path) == "newest" && Files.readString(previous) == "stuck in fsync")
        try file.makeDurable(put(file, "next"))
        #expect(Files.readString(previous) == "newest")
        #expect(isPreviousSynced())
        file.deleteRetiredVersion()
        #expect(Files.list(directory.path) == ["sync-ups.json", "sync-ups.json.prev"])
    }

    @Test func neverMakesAVersionWhoseFsyncFailedThePreviousOne() throws {
        let faulty = FaultyFileSystem()
        let file = VersionedFile(path: path, previousPath: previous, fileSystem: faulty.fileSystem)
        try file.makeDurable(put(file, "durable"))
        let failing = try put(file, "not synced")
        faulty.fail(.sync, with: .ioError)
        #expect(throws: SystemError.self) { try file.makeDurable(failing) }
        faulty.heal()
        #expect(Files.readString(path) == "not synced")
        try file.makeDurable(put(file, "written again"))
        #expect(Files.readString(path) == "written again")
        #expect(Files.readString(previous) == "durable")
    }

    @Test(arguments: [
        (FaultyFileSystem.Operation.write, Errno.noSpace),
        (.rename, .ioError),
        (.link, .noSpace),
        (.open, .readOnlyFileSystem),
    ])
    func leavesEverythingAsItWasWhenPuttingFails(operation: FaultyFileSystem.Operation, errno: Errno) throws {
        let setup = VersionedFile(path: path, previousPath: previous)
        try setup.makeDurable(put(setup, "old"))
        try setup.makeDurable(put(setup, "older is prev"))
        setup.deleteRetiredVersion()
        let faulty = FaultyFileSystem()
        faulty.fail(operation, with: errno)
        let file = VersionedFile(path: path, previousPath: previous, fileSystem: faulty.fileSystem)
        #expect(failsWithSystemError(errno) { _ = try put(file, "new") })
        #expect(Files.readString(path) == "older is prev")
        #expect(Files.readString(previous) == "old")
        #expect(Files.list(directory.path) == ["sync-ups.json", "sync-ups.json.prev"])
    }

    /// A put that fails again the same way fails with the same error (sync-ups.json's retries say nothing new):
    /// the temporary file, another name at each try, is named by its pattern.
    @Test func aPutFailingAgainAlikeFailsWithTheSameError() throws {
        let faulty = FaultyFileSystem()
        faulty.fail(.open, with: .readOnlyFileSystem)
        let file = VersionedFile(path: path, previousPath: previous, fileSystem: faulty.fileSystem)
        func error() -> AtomicFileError? {
            do { _ = try put(file, "new") } catch { return error as? AtomicFileError }
            return nil
        }
        let (first, second) = (try #require(error()), try #require(error()))
        #expect(first == second)
        #expect(first.description.contains(directory.appending(".sync-ups.json.tmp-*")), "\(first)")
    }

    @Test func abortsWithoutChangingAnythingWhenTheFileIsNotTheOneExpected() throws {
        let file = VersionedFile(path: path, previousPath: previous)
        try file.makeDurable(put(file, "ours"))
        #expect(throws: AtomicFileError.self) {
            _ = try file.put(pieces: [Array("refused".utf8)], replacingIf: { _, _ in false })
        }
        #expect(Files.readString(path) == "ours" && !Files.exists(previous))
        #expect(Files.list(directory.path) == ["sync-ups.json"])
    }

    @Test func replacesASymlinkPlantedAtThePathInsteadOfFollowingIt() throws {
        let target = directory.appending("target")
        Files.write(target, "precious")
        symlink(target, path)
        let file = VersionedFile(path: path, previousPath: previous)
        try file.makeDurable(put(file, "data"))
        #expect(Files.readString(target) == "precious")
        #expect(Files.readString(path) == "data")
        var info = stat()
        lstat(path, &info)
        #expect(info.st_mode & S_IFMT == S_IFREG)
    }

    @Test func leavesTheVersionBeforePreviousToBeFreedAfterTheWrite() throws {
        let file = VersionedFile(path: path, previousPath: previous)
        for content in ["first", "second", "third"] { try file.makeDurable(put(file, content)) }
        #expect(Files.readString(path) == "third")
        #expect(Files.readString(previous) == "second")
        #expect(Files.readString(previous + ".old") == "first")
        file.deleteRetiredVersion()
        #expect(Files.list(directory.path) == ["sync-ups.json", "sync-ups.json.prev"])
        // A retired version nobody freed is freed by the next write rather than kept forever.
        try file.makeDurable(put(file, "fourth"))
        try file.makeDurable(put(file, "fifth"))
        #expect(Files.readString(previous + ".old") == "third")
    }

    /// Pieces are gathered into chunks of `chunkSize`, each seen (to be fingerprinted) as it is written: the
    /// file never needs to be whole in memory.
    @Test func writesThePiecesInChunks() throws {
        let file = VersionedFile(path: path, previousPath: previous, chunkSize: 4)
        var chunks: [String] = []
        let pieces = ["ab", "", "cdefghijk", "l", "mnop", "0123456789"].map { Array($0.utf8) }
        try file.makeDurable(
            file.put(pieces: pieces, eachChunk: { chunks.append(String(decoding: $0, as: UTF8.self)) }))
        #expect(chunks == ["abcd", "efgh", "ijkl", "mnop", "0123", "4567", "89"])
        #expect(Files.readString(path) == "abcdefghijklmnop0123456789")
    }

    @Test func failsCleanlyWithARealFileTooLargeError() throws {
        // RLIMIT_FSIZE makes the kernel refuse with EFBIG; a child process takes the limit, not the test.
        let file = VersionedFile(path: path, previousPath: previous)
        try file.makeDurable(put(file, "before"))
        let child = try Subprocess(
            executable: BuiltProducts.path("syncups-testtool"),
            arguments: ["write-under-limit", directory.path, "65536"],
            standardOutput: .pipe
        )
        let output = String(decoding: try child.standardOutput!.readToEnd(), as: UTF8.self)
        child.closeStreams()
        #expect(child.wait() == .exited(0))
        #expect(output == "error: write: File too large\n")
        #expect(Files.readString(path) == "before")
        #expect(Files.list(directory.path) == ["sync-ups.json"])
    }
}
