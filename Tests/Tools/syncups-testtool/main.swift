// A helper the tests run as a separate process, for the things a test must not do to its own process:
// be killed with SIGKILL in the middle of a write, or run under a file-size limit.
//
//   syncups-testtool crash-writer DIR [--die-after-operations N]
//       Writes generations of a sync-ups state to DIR/sync-ups.json in a loop, printing "writing G" before
//       each; with --die-after-operations, sends itself SIGKILL at the N-th file-system operation.
//   syncups-testtool state G           Prints the bytes of generation G's state.
//   syncups-testtool write-under-limit DIR BYTES
//       Writes a large state with RLIMIT_FSIZE at BYTES (SIGXFSZ ignored), prints the error it got.

import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Synchronization

let arguments = Array(CommandLine.arguments.dropFirst())

func fail(_ message: String) -> Never {
    Console.error("syncups-testtool: \(message)\n")
    exit(2)
}

/// A live file system that counts operations and kills the process at the chosen one.
func killingFileSystem(after limit: Int?) -> FileSystem {
    guard let limit else { return .live }
    let count = Atomic<Int>(0)
    return FaultyFileSystem { _ in
        if count.wrappingAdd(1, ordering: .relaxed).newValue >= limit { kill(getpid(), SIGKILL) }
    }.fileSystem
}

switch arguments.first {
case "crash-writer":
    guard arguments.count >= 2 else { fail("usage: crash-writer DIR [--die-after-operations N]") }
    let directory = DataDirectory(path: arguments[1])
    let limit = arguments.count >= 4 && arguments[2] == "--die-after-operations" ? Int(arguments[3]) : nil
    // The store's own two steps, one after the other, so a kill can land anywhere in either.
    let file = VersionedFile(
        path: directory.syncUpsFile,
        previousPath: directory.previousFile,
        fileSystem: killingFileSystem(after: limit),
        chunkSize: 4096
    )
    // The current generation is in the first sync-up's title; start after it.
    var generation = 0
    if let bytes = Files.read(directory.syncUpsFile), let syncUps = try? SyncUpsFile.decode(bytes) {
        generation = CrashWriterStates.generation(of: syncUps) ?? 0
    }
    while true {
        generation += 1
        Console.out("writing \(generation)\n")
        do {
            try file.makeDurable(file.put(pieces: [SyncUpsFile.encode(CrashWriterStates.state(generation))]))
            file.deleteRetiredVersion()
        } catch {
            fail("write failed: \(error)")
        }
    }
case "state":
    guard arguments.count == 2, let generation = Int(arguments[1]) else { fail("usage: state G") }
    let bytes = SyncUpsFile.encode(CrashWriterStates.state(generation))
    Console.write(bytes, to: .standardOutput)
case "write-under-limit":
    guard arguments.count == 3, let limit = Int(arguments[2]) else { fail("usage: write-under-limit DIR BYTES") }
    signal(SIGXFSZ, SIG_IGN)
    var rlimit = Glibc.rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
    setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &rlimit)
    let directory = DataDirectory(path: arguments[1])
    let big = (0..<200).map { SyncUp.realistic(index: $0) }
    do {
        // The store's own writer, both steps.
        let file = VersionedFile(path: directory.syncUpsFile, previousPath: directory.previousFile)
        try file.makeDurable(file.put(pieces: [SyncUpsFile.encode(big)]))
        print("written")
    } catch {
        print("error: \(error)")
    }
default:
    fail("unknown command; see the comment at the top of main.swift")
}
