import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// A test process makes hundreds of in-process daemons, one a test or more. Each holds threads, descriptors
/// and an inotify instance (the user's limit is 128, shared with every process of theirs): one that outlives
/// its test holds them to the end of the run, and the suite's later daemons, and other programs of the same
/// user, fail to start ("inotify_init1: Too many open files", seen in a clean-clone CI run).
@Suite struct InProcessDaemonEndTests {
    /// The parts of a daemon that served requests, ran a meeting and made a reply off the loop, once it ends.
    private struct Weak {
        weak var part: AnyObject?
    }

    @Test func aDaemonThatEndsLeavesNoPartBehind() throws {
        let directory = TemporaryDirectory("in-process-end")
        var parts: [Weak] = []
        do {
            let daemon = try InProcessDaemon(dataDirectory: directory.path)
            let client = LoopClient(try daemon.connect(), daemon)
            _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
            let created = try client.result("syncups.create", ["title": "Ends", "attendees": ["A", "B"]])
            let id = try #require(created["id"])
            let started = try client.result("session.start", ["syncup": id, "audio": false])
            let meeting = try #require(started["meeting"])
            _ = try client.result("session.end", ["action": "save"])
            _ = try client.result("meetings.get", ["syncup": id, "meeting": meeting])
            parts = daemon.parts.map { Weak(part: $0) }
        }
        let kept = parts.compactMap { $0.part.map { String(describing: type(of: $0)) } }
        #expect(kept.isEmpty, "kept after the daemon ended: \(kept)")
    }

    /// A daemon's end waits for its clean-up worker: a meeting's details, written there after its save, are on
    /// disk when the daemon is gone. Before, the end did not wait, so a test that removed its directory at its
    /// end had it made again by the write still under way (`writingAgainIfGone`): directories holding only
    /// `meetings/<id>.json` were left in /tmp by loaded runs. Here the worker is held until the end says it
    /// waits for it.
    @Test func aDaemonThatEndsFinishesTheDetailsItWasWriting() throws {
        let directory = TemporaryDirectory("in-process-end")
        let worker = try Gate()
        worker.close()
        defer { worker.open() }
        let logger = Logger(minimumLevel: .debug) { _, message, _ in
            if message.contains("waiting for the clean-up worker") { worker.open() }
        }
        var details = ""
        do {
            let daemon = try InProcessDaemon(dataDirectory: directory.path, logger: logger)
            let client = LoopClient(try daemon.connect(), daemon)
            let created = try client.result("syncups.create", ["title": "Ends", "attendees": ["A", "B"]])
            let id = try #require(created["id"])
            daemon.session.cleanup.run { [worker] in worker.pass() }
            let started = try client.result("session.start", ["syncup": id, "audio": false])
            let meeting = try #require(started["meeting"]?.stringValue)
            details = directory.path + "/meetings/" + meeting + ".json"
            _ = try client.result("session.end", ["action": "save"])
            #expect(!Files.exists(details), "written behind the held worker")
        }
        #expect(Files.exists(details), "the details' write, under way, was cut off by the end")
    }
}
