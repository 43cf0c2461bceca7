import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Testing

/// The one-step replace for small files (a meeting's details, its journal).
@Suite struct AtomicFileTests {
    let directory = TemporaryDirectory("atomic")
    var path: String { directory.appending("details.json") }

    @Test func replacesTheFileWhole() throws {
        let file = AtomicFile(path: path)
        try file.write(Array("first".utf8))
        try file.write(Array("second".utf8))
        #expect(Files.readString(path) == "second")
        #expect(Files.mode(path) == 0o600)
        #expect(Files.list(directory.path) == ["details.json"])
    }

    @Test(arguments: [
        (FaultyFileSystem.Operation.write, Errno.noSpace),
        (.sync, .ioError),
        (.rename, .ioError),
        (.open, .readOnlyFileSystem),
    ])
    func leavesEverythingAsItWasWhenAStepFails(operation: FaultyFileSystem.Operation, errno: Errno) throws {
        try AtomicFile(path: path).write(Array("old".utf8))
        let faulty = FaultyFileSystem()
        faulty.fail(operation, with: errno)
        #expect {
            try AtomicFile(path: path, fileSystem: faulty.fileSystem).write(Array("new".utf8))
        } throws: { error in
            (error as? SystemError)?.errno == errno
        }
        #expect(Files.readString(path) == "old")
        #expect(Files.list(directory.path) == ["details.json"])
    }

    /// A write that fails again the same way fails with the same error: the temporary file, another name at
    /// each try, is named by its pattern. Before, each retry's error named its own temporary, so a failing
    /// meeting's details said a "new" failure (`persistence.failed`, a desktop notification) at every retry.
    @Test(arguments: [FaultyFileSystem.Operation.open, .rename])
    func aWriteFailingAgainAlikeFailsWithTheSameError(operation: FaultyFileSystem.Operation) throws {
        let faulty = FaultyFileSystem()
        faulty.fail(operation, with: .readOnlyFileSystem)
        let file = AtomicFile(path: path, fileSystem: faulty.fileSystem)
        func error() -> SystemError? {
            do { try file.write(Array("new".utf8)) } catch { return error }
            return nil
        }
        let (first, second) = (try #require(error()), try #require(error()))
        #expect(first == second)
        #expect(first.operation.contains(directory.appending(".details.json.tmp-*")), "\(first)")
        #expect(first.errno == .readOnlyFileSystem)
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
}
