import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Synchronization
import Testing

@Suite struct AtomicFileTests {
    let directory = TemporaryDirectory("atomic")
    var path: String { directory.appending("sync-ups.json") }
    var previous: String { path + ".prev" }

    @Test func replacesTheFileAndKeepsThePreviousVersion() throws {
        let file = AtomicFile(path: path, previousPath: previous)
        try file.write(Array("first".utf8))
        #expect(!Files.exists(previous))
        try file.write(Array("second".utf8))
        #expect(Files.readString(path) == "second")
        #expect(Files.readString(previous) == "first")
        #expect(Files.mode(path) == 0o600)
        #expect(Files.list(directory.path) == ["sync-ups.json", "sync-ups.json.prev"])
    }

    @Test func leavesTheVersionBeforePreviousToBeFreedAfterTheWrite() throws {
        let file = AtomicFile(path: path, previousPath: previous)
        for content in ["first", "second", "third"] { try file.write(Array(content.utf8)) }
        #expect(Files.readString(path) == "third")
        #expect(Files.readString(previous) == "second")
        #expect(Files.readString(previous + ".old") == "first")
        file.deleteRetiredVersion()
        #expect(Files.list(directory.path) == ["sync-ups.json", "sync-ups.json.prev"])
        // A retired version nobody freed is freed by the next write rather than kept forever.
        try file.write(Array("fourth".utf8))
        try file.write(Array("fifth".utf8))
        #expect(Files.readString(previous + ".old") == "third")
    }

    @Test(arguments: [
        (FaultyFileSystem.Operation.write, Errno.noSpace),
        (.sync, .ioError),
        (.rename, .ioError),
        (.link, .noSpace),
        (.open, .readOnlyFileSystem),
    ])
    func leavesEverythingAsItWasWhenAStepFails(operation: FaultyFileSystem.Operation, errno: Errno) throws {
        try AtomicFile(path: path, previousPath: previous).write(Array("old".utf8))
        try AtomicFile(path: path, previousPath: previous).write(Array("older is prev".utf8))
        let faulty = FaultyFileSystem()
        faulty.fail(operation, with: errno)
        let file = AtomicFile(path: path, previousPath: previous, fileSystem: faulty.fileSystem)
        #expect(failsWithSystemError(errno) { try file.write(Array("new".utf8)) })
        #expect(Files.readString(path) == "older is prev")
        #expect(Files.readString(previous) == "old")
        #expect(Files.list(directory.path) == ["sync-ups.json", "sync-ups.json.prev"])
    }

    @Test func startsWritebackOfEachChunkAsItIsWrittenWhenDurable() throws {
        let ranges = Mutex<[Range<Int>]>([])
        var fileSystem = FileSystem.live
        fileSystem.startWriteback = { fd, offset, count in
            ranges.withLock { $0.append(offset..<(offset + count)) }
            FileSystem.live.startWriteback(fd, offset, count)
        }
        var file = AtomicFile(path: path, previousPath: previous, fileSystem: fileSystem)
        file.chunkSize = 4
        try file.write(Array("0123456789".utf8))
        #expect(ranges.withLock { $0 } == [0..<4, 4..<8, 8..<10])
        #expect(Files.readString(path) == "0123456789")

        // Pieces are gathered into the same chunks: the file never needs to be whole in memory.
        ranges.withLock { $0 = [] }
        try file.write(pieces: ["ab", "", "cdefghijk", "l", "mnop"].map { Array($0.utf8) })
        #expect(ranges.withLock { $0 } == [0..<4, 4..<8, 8..<12, 12..<16])
        #expect(Files.readString(path) == "abcdefghijklmnop")

        file.isDurable = false
        try file.write(Array("not durable".utf8))
        #expect(ranges.withLock { $0.count } == 4)
    }

    @Test func refusesToReplaceAFileSomeoneElseChanged() throws {
        let file = AtomicFile(path: path, previousPath: previous)
        try file.write(Array("ours".utf8))
        #expect(throws: AtomicFileError.self) {
            try file.write(Array("new".utf8)) { _ in false }
        }
        #expect(Files.readString(path) == "ours")
        #expect(Files.list(directory.path) == ["sync-ups.json"])
    }

    @Test func replacesAPlantedSymlinkInsteadOfWritingThroughIt() throws {
        let outside = TemporaryDirectory("outside")
        let target = outside.appending("victim")
        Files.write(target, "precious")
        symlink(target, path)
        try AtomicFile(path: path).write(Array("data".utf8))
        #expect(Files.readString(target) == "precious")
        #expect(Files.readString(path) == "data")
        var info = stat()
        lstat(path, &info)
        #expect(info.st_mode & S_IFMT == S_IFREG)
    }

    @Test func failsCleanlyWithARealFileTooLargeError() throws {
        // RLIMIT_FSIZE makes the kernel refuse with EFBIG; a child process takes the limit, not the test.
        try AtomicFile(path: path, previousPath: previous).write(Array("before".utf8))
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
