import Glibc
import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// The owner handles each input to completion: a subscriber whose reading is paused never has its queued
/// requests run inside another client's request, and every subscriber sees events in `seq` order. The
/// daemon runs in process and only when the test turns its loop, so each step is exactly reproducible.
@Suite struct RunToCompletionTests {
    /// How many replies the slow subscriber leaves unread before its delete: enough to pause its reading,
    /// few enough that (before the fix) resuming it inside a publish reached the delete.
    static let unreadPages = [30, 35, 40, 50, 70]

    /// A daemon that pauses reading at 4 KiB of unread output, with a client and two sync-ups, "Target" (whose
    /// id is returned) and "Other".
    static func twoSyncUps() throws -> (TemporaryDirectory, InProcessDaemon, LoopClient, String) {
        let directory = TemporaryDirectory("owner")
        let daemon = try InProcessDaemon(dataDirectory: directory.path, readPauseThreshold: 4096)
        let client = LoopClient(try daemon.connect(), daemon)
        let target = try client.result("syncups.create", ["title": "Target", "attendees": ["Ann", "Bo"]])
        let targetID = try #require(target["id"]?.stringValue)
        _ = try client.result("syncups.create", ["title": "Other"])
        return (directory, daemon, client, targetID)
    }

    @Test(arguments: unreadPages)
    func aPausedSubscribersQueuedDeleteRunsAfterTheChangeThatWasPublishedNotInsideIt(pages: Int) throws {
        let (directory, daemon, client, targetID) = try Self.twoSyncUps()
        _ = directory

        // Watchers that read everything, connected before and after the slow one: some come after it in
        // whatever order the server walks its subscribers.
        var watchers: [LoopClient] = []
        for _ in 0..<3 { watchers.append(LoopClient(try daemon.connect(), daemon)) }
        let slow = LoopClient(try daemon.connect(sendBufferBytes: 4096), daemon)
        for _ in 0..<3 { watchers.append(LoopClient(try daemon.connect(), daemon)) }
        for watcher in watchers { _ = try watcher.result("subscribe", ["topics": ["syncups"], "snapshot": false]) }
        _ = try slow.result("subscribe", ["topics": ["syncups"], "snapshot": false])

        // The slow subscriber pipelines enough to pause its reading, with a delete queued behind it.
        var lines = String(repeating: #"{"id":"page","cmd":"syncups.list"}"# + "\n", count: pages)
        lines += #"{"id":"delete","cmd":"syncups.delete","args":{"id":"\#(targetID)"}}"# + "\n"
        try slow.send(lines)
        for _ in 0..<20 { daemon.turn() }
        #expect(daemon.syncUpIDs.contains(targetID), "the delete must still be queued behind the paused reading")

        // Another client changes the sync-up; the slow one has just read everything the socket held, so the
        // server could now send it all of its output.
        try client.send(
            #"{"id":"rename","cmd":"syncups.update","args":{"id":"\#(targetID)","title":"Renamed"}}"# + "\n")
        slow.drainSocket()
        daemon.turn()
        let renamed = try client.reply(to: "rename")
        #expect(renamed["ok"] == true, "the slow client's delete ran inside the rename: \(renamed)")

        // It runs later, on its own turn, and every subscriber sees the rename, then the delete, in order.
        let slowLines = try slow.take { $0["id"]?.stringValue == "delete" && $0["event"] == nil }
        #expect(slowLines.last?["ok"] == true)
        #expect(!daemon.syncUpIDs.contains(targetID))
        var seen = [slowLines.filter { $0["event"] != nil }]
        for watcher in watchers { seen.append(try watcher.events(until: "syncup.deleted")) }
        for events in seen {
            let seqs = events.compactMap { $0["seq"]?.numberValue?.int64 }
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "seq out of order: \(seqs)")
            #expect(events.compactMap { $0["event"]?.stringValue }.suffix(2) == ["syncup.updated", "syncup.deleted"])
        }
    }

    @Test(arguments: unreadPages)
    func aMeetingSavedWhileAPausedSubscriberDeletesItsSyncUpLeavesTheStateWhole(pages: Int) throws {
        let (directory, daemon, client, targetID) = try Self.twoSyncUps()
        _ = directory
        let watcher = LoopClient(try daemon.connect(), daemon)
        _ = try watcher.result("subscribe", ["snapshot": false])
        let slow = LoopClient(try daemon.connect(sendBufferBytes: 4096), daemon)
        _ = try slow.result("subscribe", ["snapshot": false])
        _ = try client.result("session.start", ["syncup": .string(targetID), "audio": false])

        var lines = String(repeating: #"{"id":"page","cmd":"syncups.list"}"# + "\n", count: pages)
        lines += #"{"id":"delete","cmd":"syncups.delete","args":{"id":"\#(targetID)"}}"# + "\n"
        try slow.send(lines)
        for _ in 0..<20 { daemon.turn() }
        #expect(daemon.syncUpIDs.contains(targetID))

        // The save completes on a later turn (the recorder stops on a helper thread); the slow client reads
        // everything just before, so the meeting's publish could send it all and resume its reading.
        try client.send(#"{"id":"end","cmd":"session.end","args":{"action":"save"}}"# + "\n")
        daemon.turn()
        slow.drainSocket()
        let ended = try watcher.events(until: "session.ended")
        #expect(ended.last?["data"]?["outcome"] == "saved")

        let deleted = try slow.reply(to: "delete")
        #expect(deleted["ok"] == true)
        #expect(daemon.syncUpIDs.count == 1)
        let events = try watcher.events(until: "syncup.deleted")
        let seqs = (ended + events).compactMap { $0["seq"]?.numberValue?.int64 }
        #expect(seqs == seqs.sorted(), "seq out of order: \(seqs)")
        #expect(try client.result("syncups.list")["total"] == 1)
    }
}

@Suite struct FairnessTests {
    /// A client pipelining thousands of changes gets them handled a slice at a time: another client's ping
    /// is answered between two slices, not after the whole backlog.
    @Test func aPingIsAnsweredWhileAnotherClientsBacklogIsStillRunning() throws {
        let directory = TemporaryDirectory("fair")
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        let flooder = LoopClient(try daemon.connect(), daemon)
        let created = try flooder.result("syncups.create", ["title": "Target"])
        let id = try #require(created["id"]?.stringValue)
        let pinger = LoopClient(try daemon.connect(), daemon)
        _ = try pinger.result("ping")
        var lines = ""
        for round in 0..<1500 {
            lines += #"{"id":\#(round),"cmd":"syncups.update","args":{"id":"\#(id)","title":"Round \#(round)"}}"# + "\n"
        }
        try flooder.send(lines)
        daemon.turn()  // the flood's first slice
        try pinger.send(#"{"id":"ping","cmd":"ping"}"# + "\n")
        let pong = try pinger.take { $0["id"] == "ping" }
        #expect(pong.last?["result"] == "pong")
        // The ping came between two slices of the backlog, not after what one read brought (about 900 lines:
        // without slices, the first 900 replies all came before it; with them, about 25 here).
        flooder.drainSocket()
        #expect(!flooder.hasLine { $0["id"] == 500 })
        let last = try flooder.take(timeout: .seconds(60)) { $0["id"] == 1499 }
        #expect(last.last?["ok"] == true)
    }
}

extension FairnessTests {
    /// Replayed `status` lines cost almost nothing, so the clock is read between them rarely; a run of
    /// expensive lines after them must still be cut at the slice's budget, not run 31 at a time unseen.
    @Test func expensiveLinesAfterCheapReplaysStillEndTheSlice() throws {
        let directory = TemporaryDirectory("fair-replay")
        let daemon = try InProcessDaemon(dataDirectory: directory.path, readPauseThreshold: 64 << 20)
        let flooder = LoopClient(try daemon.connect(), daemon)
        // Each update of this sync-up encodes and publishes a thousand long names: well over 100 µs.
        let names = (0..<1000).map { JSONValue.string("Attendee \($0) " + String(repeating: "x", count: 45)) }
        let created = try flooder.result(
            "syncups.create", ["title": "Big", "duration": 3600, "attendees": .array(names)])
        let id = try #require(created["id"]?.stringValue)
        var lines = String(repeating: #"{"id":"s","cmd":"status"}"# + "\n", count: 31)
        for round in 0..<40 {
            lines += #"{"id":\#(round),"cmd":"syncups.update","args":{"id":"\#(id)","title":"Round \#(round)"}}"# + "\n"
        }
        try flooder.send(lines)
        daemon.turn()  // the first slice
        flooder.drainSocket()
        let updates = (0..<40).filter { round in flooder.hasLine { $0["id"] == .int(round) } }.count
        // A slice of 1 ms holds a few of them. (In a release build, before the fix, the 31 after the last clock
        // read all ran; a debug build replays too slowly for the reads to spread that far.)
        #expect(updates < 20, "\(updates) updates in the first slice")
        let last = try flooder.take(timeout: .seconds(60)) { $0["id"] == 39 }
        #expect(last.last?["ok"] == true)
    }
}

/// A client of an in-process daemon: it sends lines and, while it waits for a reply or an event, turns the
/// daemon's loop (there is no other thread to do it), up to a deadline.
final class LoopClient {
    let fd: FileDescriptor
    let daemon: InProcessDaemon
    private var buffer: [UInt8] = []
    private var lines: [JSONValue] = []

    init(_ fd: FileDescriptor, _ daemon: InProcessDaemon) {
        self.fd = fd
        self.daemon = daemon
    }

    deinit {
        fd.close()
    }

    func send(_ text: String) throws {
        try UnixSocket.sendAll(fd, Array(text.utf8))
    }

    /// Asks `status` until `condition` holds of it (deadline 20 s: a guard against a hang, not a measure).
    /// `advancing` moves a manual clock on by that much between two asks, so what the daemon does on a timer
    /// (the store's write throttle, a write's retry and its back-off) happens in virtual time; the real
    /// deadline is only for the writers' threads.
    @discardableResult
    func waitForStatus(advancing step: Duration? = nil, _ condition: (JSONValue) -> Bool) throws -> JSONValue {
        let deadline = MonotonicInstant.now() + .seconds(20)
        while true {
            let status = try result("status")
            if condition(status) { return status }
            guard MonotonicInstant.now() < deadline else { throw TestFailure("status never matched: \(status)") }
            if let step { daemon.advanceTime(by: step) }
            daemon.turn(waitingUpTo: 20)
        }
    }

    /// Reads what the socket holds now, without waiting, into the lines not yet handed out.
    func drainSocket() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd.rawValue, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            buffer += chunk[0..<count]
        }
        while let newline = buffer.firstIndex(of: 0x0A) {
            if let line = try? JSONParser().parse(String(decoding: buffer[..<newline], as: UTF8.self)) {
                lines.append(line)
            }
            buffer.removeFirst(newline + 1)
        }
    }

    /// Turns the loop and reads until a line matches; fails after `timeout` (a guard against a hang, not a
    /// measure: a debug build answering thousands of lines on a loaded machine takes seconds).
    func take(timeout: Duration = .seconds(60), where matches: (JSONValue) -> Bool) throws -> [JSONValue] {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            drainSocket()
            if let index = lines.firstIndex(where: matches) {
                let taken = Array(lines[...index])
                lines.removeFirst(index + 1)
                return taken
            }
            guard MonotonicInstant.now() < deadline else { throw TestFailure("no matching line within \(timeout)") }
            daemon.turn(waitingUpTo: 10)
        }
    }

    /// Whether a line read so far (and not yet taken) matches.
    func hasLine(where matches: (JSONValue) -> Bool) -> Bool { lines.contains(where: matches) }

    /// The reply with this id (lines before it are dropped, events included).
    func reply(to id: String) throws -> JSONValue {
        try take { $0["id"]?.stringValue == id && $0["event"] == nil }.last ?? .null
    }

    /// The events up to and including the first named `name`.
    func events(until name: String) throws -> [JSONValue] {
        try take { $0["event"]?.stringValue == name }.filter { $0["event"] != nil }
    }

    func result(_ command: String, _ arguments: JSONValue? = nil) throws -> JSONValue {
        var object: JSONObject = ["id": "request", "cmd": .string(command)]
        if let arguments { object.append("args", arguments) }
        try send(JSONWriter().string(.object(object)) + "\n")
        let reply = try self.reply(to: "request")
        guard reply["ok"] == true, let result = reply["result"] else {
            throw TestFailure("\(command) failed: \(JSONWriter().string(reply))")
        }
        return result
    }
}

@Suite struct StatusReplyTests {
    /// `status` counts under `syncups`, the name every other reply uses, and still under protocol 1's
    /// `syncUps`; the reply is valid JSON with each key once (it is written by hand, not by the writer).
    @Test func countsSyncUpsUnderBothNames() throws {
        let directory = TemporaryDirectory("status")
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        let client = LoopClient(try daemon.connect(), daemon)
        for title in ["A", "B"] { _ = try client.result("syncups.create", ["title": .string(title)]) }
        let status = try client.result("status", [:])
        #expect(status["syncups"] == 2 && status["syncUps"] == 2)
        #expect(status["persistence"]?["warnings"] == [])
    }
}
