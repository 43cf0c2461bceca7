import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Synchronization
import Testing

/// Kills a process in the middle of writing `sync-ups.json`, over and over, and checks after every kill that
/// the file parses and is exactly the old or the new state: never torn, never empty, never mixed.
///
/// `make test` runs 200 self-kills at random file-system operations and 50 kills from outside;
/// `make stress` sets SYNCUPS_STRESS_ITERATIONS for many more.
@Suite struct CrashSafetyTests {
    static let iterations = Int(Subprocess.currentEnvironment()["SYNCUPS_STRESS_ITERATIONS"] ?? "") ?? 200

    /// The exact bytes of each generation, computed once (debug builds are slow at building them).
    static let encodedStates = Mutex<[Int: [UInt8]]>([:])

    static func encodedState(_ generation: Int) -> [UInt8] {
        if let bytes = encodedStates.withLock({ $0[generation] }) { return bytes }
        let bytes = SyncUpsFile.encode(CrashWriterStates.state(generation))
        encodedStates.withLock { $0[generation] = bytes }
        return bytes
    }

    /// Runs the crash writer until it dies; returns the generation it was writing when it did.
    func runWriter(_ directory: String, dieAfter operations: Int?) throws -> Int? {
        var arguments = ["crash-writer", directory]
        if let operations { arguments += ["--die-after-operations", String(operations)] }
        let writer = try Subprocess(
            executable: BuiltProducts.path("syncups-testtool"),
            arguments: arguments,
            standardOutput: .pipe
        )
        defer { writer.closeStreams() }
        var output: [UInt8] = []
        if operations == nil {
            // Kill from outside once it has started a random number of writes.
            let target = Int.random(in: 1...5)
            var buffer = [UInt8](repeating: 0, count: 256)
            while output.filter({ $0 == 0x0A }).count < target {
                let count = try buffer.withUnsafeMutableBytes { try writer.standardOutput!.read(into: $0) }
                if count == 0 { break }
                output += buffer[0..<count]
            }
            writer.send(SIGKILL)
        }
        output += try writer.standardOutput!.readToEnd()
        #expect(writer.wait() == .signaled(SIGKILL))
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        return lines.last.flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    func checkFiles(in directory: TemporaryDirectory, writing generation: Int?) throws {
        let main = directory.appending("sync-ups.json")
        guard let generation else {
            // Killed before the first write began: nothing may exist yet.
            return
        }
        guard let bytes = Files.read(main) else {
            #expect(generation == 1, "sync-ups.json vanished while writing generation \(generation)")
            return
        }
        let syncUps = try SyncUpsFile.decode(bytes)
        let candidates = [generation - 1, generation].map(Self.encodedState)
        #expect(candidates.contains(bytes), "file is neither generation \(generation - 1) nor \(generation)")
        #expect(CrashWriterStates.generation(of: syncUps).map { $0 == generation || $0 == generation - 1 } == true)
        if let previous = Files.read(main + ".prev") {
            let older = try SyncUpsFile.decode(previous)
            let olderGeneration = try #require(CrashWriterStates.generation(of: older))
            #expect(previous == Self.encodedState(olderGeneration))
            // Equal when the kill fell between rotating the old file to .prev and renaming the new one in.
            #expect(olderGeneration <= (CrashWriterStates.generation(of: syncUps) ?? 0))
        }
    }

    @Test func keepsTheFileWholeWhenKilledAtAnyFileSystemOperation() throws {
        let directory = TemporaryDirectory("crash")
        for _ in 0..<Self.iterations {
            let generation = try runWriter(directory.path, dieAfter: Int.random(in: 1...70))
            try checkFiles(in: directory, writing: generation)
        }
        // A store opened afterwards loads cleanly and removes the temporary files the kills left.
        let loop = try EventLoop()
        let store = try SyncUpStore(directory: DataDirectory(path: directory.path), loop: loop) { _ in }
        let result = try store.open()
        #expect(result.warnings.isEmpty)
        #expect(!result.syncUps.isEmpty)
        #expect(Files.list(directory.path).filter { $0.hasPrefix(".") }.isEmpty)
        store.close()
    }

    @Test func keepsTheFileWholeWhenKilledFromOutside() throws {
        let directory = TemporaryDirectory("crash-outside")
        for _ in 0..<max(50, Self.iterations / 4) {
            let generation = try runWriter(directory.path, dieAfter: nil)
            try checkFiles(in: directory, writing: generation)
        }
    }
}
