import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// A daemon on the manual clock with a sync-up whose one meeting is saved with its details on disk, the
/// client that made it, and another (a watcher of `daemon`) reading it.
struct SavedMeetingReader {
    let daemon: InProcessDaemon
    let client: LoopClient
    let reader: LoopClient
    let saved: (syncUp: String, meeting: String)
    /// Last: a struct's properties go in their order, and the daemon's writers must be gone before it.
    let directory = TemporaryDirectory("awaited-reply")

    init(_ daemon: (String) throws -> InProcessDaemon = { try VirtualTimeTests.daemon(path: $0) }) throws {
        self.daemon = try daemon(directory.path)
        let (client, reader, syncUp) = try VirtualTimeTests.soloSyncUp(self.daemon, watching: "daemon")
        (self.client, self.reader) = (client, reader)
        saved = (syncUp, try VirtualTimeTests.savedMeeting(of: syncUp, by: client, in: directory))
    }

    /// The reader's `meetings.get` of the saved meeting, answered within `timeout` (a guard against the
    /// reply thread being held: it is answered in milliseconds otherwise).
    func meetingIsRead(timeout: Duration = .seconds(5)) throws -> Bool {
        let get: JSONValue = [
            "id": "get", "cmd": "meetings.get",
            "args": ["syncup": .string(saved.syncUp), "meeting": .string(saved.meeting)],
        ]
        try reader.send(JSONWriter().string(get) + "\n")
        guard let reply = try? reader.take(timeout: timeout, where: { $0["id"] == "get" }).last else {
            return false
        }
        #expect(reply["result"]?["id"] == .string(saved.meeting))
        #expect(reply["result"]?["detailsError"] == .null)
        return true
    }

    /// Sends `request` (id "held") from the client; the reply must not come while `isHeld`.
    func send(_ command: String, _ arguments: JSONValue) throws {
        let request: JSONValue = ["id": "held", "cmd": .string(command), "args": arguments]
        try client.send(JSONWriter().string(request) + "\n")
        for _ in 0..<20 { daemon.turn(waitingUpTo: 5) }
    }

    /// The held reply, after the worker was let go: it comes, and only once (the client's next request is
    /// answered after it, and no second copy came before that).
    func heldReply() throws -> JSONValue {
        let reply = try client.reply(to: "held")
        _ = try client.result("status")
        client.drainSocket()
        #expect(!client.hasLine { $0["id"] == "held" }, "the reply came twice")
        return reply
    }

    func expectNotAnswered() {
        client.drainSocket()
        #expect(!client.hasLine { $0["id"] == "held" }, "answered while its worker was held")
    }
}

/// Replies that wait for another worker (`ReplyBody.awaited`): a delete or discard for the journal writer, a
/// forget for the voice writer, a start for its microphone's open. None holds the reply thread while it
/// waits, so another client's `meetings.get` (made on that thread) is answered meanwhile; the held reply
/// still comes, once, when the worker is done. Before, each waited on the one `syncups-reply` thread, and
/// every client's read waited behind it.
@Suite struct AwaitedReplyTests {
    @Test(arguments: ["discard", "meetings.delete", "syncups.delete"])
    func aDeletionWaitingForTheJournalWriterHoldsNoOtherRead(_ how: String) throws {
        let fixture = try SavedMeetingReader()
        let (daemon, client) = (fixture.daemon, fixture.client)
        let other = try client.result("syncups.create", ["title": "Other", "attendees": ["Bo"]])
        let otherID = try #require(other["id"]?.stringValue)
        let arguments: JSONValue
        switch how {
        case "discard":
            _ = try client.result("session.start", ["syncup": .string(otherID), "audio": false])
            arguments = ["action": "discard"]
        case "meetings.delete":
            let second = try VirtualTimeTests.savedMeeting(of: otherID, by: client, in: fixture.directory)
            arguments = ["syncup": .string(otherID), "meeting": .string(second)]
        default:
            arguments = ["id": .string(otherID)]
        }
        let gate = try Gate()
        gate.close()
        defer { gate.open() }
        daemon.journals.whenDone { gate.pass() }
        try fixture.send(how == "discard" ? "session.end" : how, arguments)
        fixture.expectNotAnswered()
        #expect(try fixture.meetingIsRead(), "the read waited behind the deletion's wait")
        fixture.expectNotAnswered()
        gate.open()
        #expect(try fixture.heldReply()["ok"] == true)
    }

    @Test(arguments: ["voices.forget", "syncups.update"])
    func aForgetWaitingForTheVoiceWriterHoldsNoOtherRead(_ how: String) throws {
        let fixture = try SavedMeetingReader()
        let (daemon, client) = (fixture.daemon, fixture.client)
        let other = try client.result("syncups.create", ["title": "Other", "attendees": ["Bo", "Cy"]])
        let otherID = try #require(other["id"]?.stringValue)
        let bo = try #require(other["attendees"]?[0]?["id"])
        let gate = try Gate()
        gate.close()
        defer { gate.open() }
        daemon.voices.writer.run { gate.pass() }
        if how == "voices.forget" {
            try fixture.send(how, ["attendee": bo])
        } else {
            let cy = try #require(other["attendees"]?[1]?["id"])
            try fixture.send(how, ["id": .string(otherID), "attendees": [["id": cy, "name": "Cy"]]])
        }
        fixture.expectNotAnswered()
        #expect(try fixture.meetingIsRead(), "the read waited behind the forget's wait")
        fixture.expectNotAnswered()
        gate.open()
        let reply = try fixture.heldReply()
        #expect(reply["ok"] == true, "\(JSONWriter().string(reply))")
    }

    /// A start whose microphone's open hangs (a sound server that does not answer, up to its timeout).
    @Test func aStartWaitingForItsMicrophoneHoldsNoOtherRead() throws {
        let microphone = try HeldMicrophone()
        let fixture = try SavedMeetingReader {
            try InProcessDaemon(
                dataDirectory: $0, clock: .manual(startingAt: VirtualTimeTests.start),
                captureDevice: microphone.device)
        }
        try fixture.send(
            "session.start", ["syncup": .string(fixture.saved.syncUp), "audio": true, "transcribe": false])
        let deadline = MonotonicInstant.now() + .seconds(20)
        while microphone.openCount == 0, MonotonicInstant.now() < deadline { fixture.daemon.turn(waitingUpTo: 10) }
        fixture.expectNotAnswered()
        #expect(try fixture.meetingIsRead(), "the read waited behind the start's wait")
        #expect(!microphone.wasForced)
        fixture.expectNotAnswered()
        microphone.release()
        let reply = try fixture.heldReply()
        #expect(reply["result"]?["state"] == "running", "\(JSONWriter().string(reply))")
        _ = try fixture.client.result("session.end", ["action": "discard"])
    }

    /// A client that hangs up while its delete waits for the journal writer gets nothing and leaves nothing:
    /// the deletion is still made whole, and `status`'s counters are back where they were.
    @Test func aClientThatHangsUpWhileItsDeleteWaitsLeavesNothing() throws {
        let fixture = try SavedMeetingReader()
        let (daemon, client, reader) = (fixture.daemon, fixture.client, fixture.reader)
        // With no write throttled: the store's timer then counts in `timers` at both ends, or at neither.
        daemon.advanceTime(by: .seconds(10))
        let before = try reader.result("status")
        let gate = try Gate()
        gate.close()
        defer { gate.open() }
        daemon.journals.whenDone { gate.pass() }
        let leaving = try daemon.connect()
        let delete: JSONValue = [
            "id": "d", "cmd": "meetings.delete",
            "args": ["syncup": .string(fixture.saved.syncUp), "meeting": .string(fixture.saved.meeting)],
        ]
        try UnixSocket.sendAll(leaving, Array((JSONWriter().string(delete) + "\n").utf8))
        _ = try reader.waitForStatus { $0["meetings"] == 0 && $0["connections"] != before["connections"] }
        leaving.close()
        // Gone: its connection stays until the reply it waits for is made (and dropped), then closes.
        #expect(LaterReplyTests.turn(daemon) { daemon.goneConnections == 1 })
        gate.open()
        // The journal writer's next job after the deletion: by its answer, the deletion's files are gone.
        _ = try client.result("syncups.delete", ["id": .string(fixture.saved.syncUp)])
        #expect(
            try !DirectoryListing.names(in: fixture.directory.path + "/meetings").contains {
                $0.hasPrefix(fixture.saved.meeting)
            })
        daemon.advanceTime(by: .seconds(10))  // the store's write throttle and the heap's trim are timers too
        let after = try reader.result("status")
        for counter in ["connections", "subscribers", "timers"] {
            #expect(after[counter] == before[counter], "\(counter)")
        }
    }
}
