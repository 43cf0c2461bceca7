import SyncUpsJSON
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
}
