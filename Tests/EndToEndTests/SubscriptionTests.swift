import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization
import Testing

@Suite struct SubscriptionTests {
    /// The crash the owner's redesign fixed, end to end: a subscriber with a large snapshot unread and a
    /// `syncups.delete` queued behind it drains slowly while meetings of that sync-up are saved. The daemon
    /// stays up, every subscriber sees strictly increasing `seq` with each save before the delete, and what
    /// the client was told (deleted) is what a restart finds.
    @Test func aSlowSubscribersQueuedDeleteDuringMeetingSavesKeepsTheDaemonWholeAndInOrder() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"])
        let client = try daemon.client()
        let attendees = JSONValue.array((0..<20).map { .string("Attendee \($0) with a longish name") })
        for index in 0..<200 {
            _ = try client.result("syncups.create", ["title": .string("Team \(index)"), "attendees": attendees])
        }
        let target = try client.result("syncups.create", ["title": "Target", "attendees": ["Ann", "Bo"]])
        let targetID = try #require(target["id"]?.stringValue)
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["syncups"], "snapshot": false])

        let slow = try RawClient(path: daemon.socketPath)
        var size: CInt = 4096
        setsockopt(slow.fd.rawValue, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        var lines = #"{"id":"sub","cmd":"subscribe","args":{"topics":["syncups"]}}"# + "\n"
        lines += String(repeating: #"{"id":"page","cmd":"syncups.list","args":{"limit":1}}"# + "\n", count: 200)
        lines += #"{"id":"delete","cmd":"syncups.delete","args":{"id":"\#(targetID)"}}"# + "\n"
        try slow.send(lines)

        // Meetings of the target are saved while the slow subscriber reads nothing: its delete waits.
        var saved = 0
        func saveMeeting() throws -> Bool {
            let start = try client.request("session.start", ["syncup": .string(targetID), "audio": false])
            guard start["ok"] == true else { return false }  // the delete has run
            let end = try client.request("session.end", ["action": "save"])
            guard end["ok"] == true else { return false }
            saved += 1
            return true
        }
        for _ in 0..<5 { #expect(try saveMeeting(), "the delete waits behind the unread output") }
        // Then it reads 4 KB at a time on its own thread while more are saved.
        let slowFD = slow.fd
        let received = Mutex<[UInt8]>([])
        let drainer = try DedicatedThread(name: "slow-reader") {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let deadline = MonotonicInstant.now() + .seconds(60)
            while MonotonicInstant.now() < deadline {
                var poller = pollfd(fd: slowFD.rawValue, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 1000) > 0 else { continue }
                let count = chunk.withUnsafeMutableBytes { Glibc.read(slowFD.rawValue, $0.baseAddress, $0.count) }
                if count <= 0 { return }
                let isDone = received.withLock {
                    $0 += chunk[0..<count]
                    // The delete's reply read to its end: a read that stopped inside its line left it unparsed
                    // (once in a loaded run: "no reply").
                    let tail = String(decoding: $0.suffix(4096), as: UTF8.self)
                    return tail.range(of: #""id":"delete""#).map { tail[$0.upperBound...].contains("\n") } ?? false
                }
                if isDone { return }
            }
        }
        while saved < 200, try saveMeeting() {}
        drainer.join()
        #expect(try client.result("ping") == "pong", "the daemon is still up")

        let slowLines = String(decoding: received.withLock { $0 }, as: UTF8.self).split(separator: "\n")
            .compactMap { try? JSONParser().parse(String($0)) }
        let deleteReply = slowLines.first { $0["id"] == "delete" }
        #expect(
            deleteReply?["ok"] == true,
            "\(deleteReply.map { JSONWriter().string($0) } ?? "no reply"), the last read: \(String(decoding: received.withLock { $0.suffix(300) }, as: UTF8.self))\n\(daemon.log.contents.suffix(2000))"
        )
        var watched: [JSONValue] = []
        while watched.last?["event"] != "syncup.deleted" { watched.append(try watcher.readJSON()) }
        for events in [slowLines.filter { $0["event"] != nil }, watched] {
            let seqs = events.compactMap { $0["seq"]?.numberValue?.int64 }
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "seq out of order: \(seqs)")
            let names = events.compactMap { $0["event"]?.stringValue }
            #expect(names.last == "syncup.deleted")
            #expect(names.filter { $0 == "syncup.updated" }.count == saved, "one update per meeting saved")
        }
        #expect(daemon.stop() == .exited(0))
        let restarted = try DaemonProcess(directory: daemon.directory)
        #expect(
            try restarted.client().request("syncups.get", ["id": .string(targetID)])["error"]?["code"] == "not_found")
        #expect(try restarted.client().result("syncups.list")["total"] == 200)
    }

    /// Years of meetings in one sync-up: lists and snapshots carry its newest meetings and the total, so the
    /// page fits; and a subscribe that is refused leaves the connection unsubscribed.
    @Test func aSyncUpWithThousandsOfMeetingsFitsASnapshotAndARefusedSubscribeChangesNothing() throws {
        let directory = TemporaryDirectory("history")
        var syncUp = SyncUp.realistic(index: 0, meetingCount: 9_000, transcriptBytes: 8)
        syncUp.title = "Years"
        mkdir(directory.appending("data"), 0o700)
        Files.write(directory.appending("data/sync-ups.json"), SyncUpsFile.encode([syncUp]))
        let daemon = try DaemonProcess(directory: directory)
        let refused = try daemon.client()
        #expect(try refused.request("subscribe", ["snapshot": "yes"])["error"]?["code"] == "invalid_argument")
        let subscriber = try daemon.client()
        let subscribed = try subscriber.result("subscribe", ["topics": ["syncups"]])
        let listed = try #require(subscribed["snapshot"]?["syncups"]?[0])
        #expect(listed["meetings"]?.arrayValue?.count == 1_000)
        #expect(listed["meetingsTotal"] == 9_000)
        #expect(try subscriber.result("status")["subscribers"] == 1)
        _ = try subscriber.result("syncups.create", ["title": "New"])
        #expect(try subscriber.nextEvent("syncup.created")["data"]?["syncup"]?["title"] == "New")
        // The refused one got no event: the next line it reads is the reply to its next request.
        try refused.send(#"{"id":"after","cmd":"ping"}"# + "\n")
        #expect(try refused.readJSON()["id"] == "after")
    }

    @Test func aLargeOutsideEditReachesEverySubscriberAsOnePageAndDropsNobody() throws {
        let daemon = try DaemonProcess()
        var subscribers: [RawClient] = []
        for _ in 0..<4 {
            let subscriber = try daemon.client()
            _ = try subscriber.result("subscribe", ["topics": ["syncups"], "snapshot": false])
            subscribers.append(subscriber)
        }
        // 5,000 sync-ups: listed whole, the event would be about 4 MB, four times the per-client output limit.
        let syncUps = (0..<5_000).map { SyncUp.realistic(index: $0, meetingCount: 1, transcriptBytes: 16) }
        Files.replace(
            daemon.dataPath + "/sync-ups.json", with: String(decoding: SyncUpsFile.encode(syncUps), as: UTF8.self))
        let limit = try #require(subscribers[0].greeting["data"]?["limits"]?["maxReplyBytes"]?.numberValue?.int64)
        for subscriber in subscribers {
            let line = try #require(try subscriber.readLine(timeout: .seconds(60)))
            let event = try JSONParser().parse(line)
            #expect(event["event"] == "syncups.reloaded")
            #expect(event["data"]?["total"] == 5_000)
            #expect(line.utf8.count < limit, "a reload event of \(line.utf8.count) bytes")
            let page = try #require(event["data"]?["syncups"]?.arrayValue)
            #expect(page.first?["title"] == "Team 0")
            #expect(event["data"]?["next"] == .int(page.count))
            // Still connected, and the rest is there to page through.
            let next = try subscriber.result("syncups.list", ["offset": .int(page.count), "limit": 1])
            #expect(next["syncups"]?[0]?["title"]?.stringValue == "Team \(page.count)")
        }
        #expect(!daemon.log.contents.contains("closing client"), "\(daemon.log.contents)")
    }

    @Test func sendsTheSnapshotThenEveryLaterChangeWithNothingLostOrReordered() throws {
        let daemon = try DaemonProcess()
        let setup = try daemon.client()
        for index in 0..<20 {
            _ = try setup.result("syncups.create", ["title": .string("Team \(index)"), "attendees": ["A"]])
        }

        // A producer keeps changing sync-ups while the subscriber subscribes in the middle of it.
        let socketPath = daemon.socketPath
        let producer = try DedicatedThread(name: "producer") {
            guard let client = try? RawClient(path: socketPath),
                let list = try? client.result("syncups.list"),
                let ids = list["syncups"]?.arrayValue?.compactMap({ $0["id"] })
            else { return }
            for round in 0..<300 {
                let id = ids[round % ids.count]
                _ = try? client.request("syncups.update", ["id": id, "title": .string("Team \(round)")])
                if round % 50 == 0 { _ = try? client.request("syncups.create", ["title": .string("New \(round)")]) }
                if round % 70 == 0 { _ = try? client.request("syncups.delete", ["id": ids[(round / 70) % ids.count]]) }
            }
            _ = try? client.request("syncups.create", ["title": "DONE"])
        }

        let subscriber = try daemon.client()
        let reply = try subscriber.request("subscribe", ["topics": ["syncups"]])
        let result = try #require(reply["result"])
        var seq = try #require(result["seq"]?.numberValue?.int64)
        var state: [String: JSONValue] = [:]
        var order: [String] = []
        for syncUp in result["snapshot"]?["syncups"]?.arrayValue ?? [] {
            let id = syncUp["id"]!.stringValue!
            state[id] = syncUp
            order.append(id)
        }
        var sawDone = false
        while !sawDone {
            let event = try subscriber.readJSON()
            let eventSeq = try #require(event["seq"]?.numberValue?.int64)
            #expect(eventSeq == seq + 1, "events must be contiguous on a single topic")
            seq = eventSeq
            let data = try #require(event["data"])
            switch event["event"]?.stringValue {
            case "syncup.created", "syncup.updated":
                let syncUp = try #require(data["syncup"])
                let id = syncUp["id"]!.stringValue!
                if state[id] == nil { order.append(id) }
                state[id] = syncUp
                sawDone = syncUp["title"] == "DONE"
            case "syncup.deleted":
                let id = data["id"]!.stringValue!
                state[id] = nil
                order.removeAll { $0 == id }
            default:
                Issue.record("unexpected event \(JSONWriter().string(event))")
            }
        }
        producer.join()
        let actual = try subscriber.result("syncups.list")["syncups"]?.arrayValue ?? []
        #expect(order.compactMap { state[$0] } == actual)
    }

    @Test func unsubscribesFromSomeOrAllTopics() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let subscribed = try client.result("subscribe", ["snapshot": false])
        #expect(subscribed["topics"] == ["syncups", "session", "daemon"])
        #expect(subscribed["snapshot"] == nil)
        #expect(try client.result("unsubscribe", ["topics": ["syncups"]])["topics"] == ["session", "daemon"])
        _ = try daemon.client().result("syncups.create", ["title": "quiet"])
        // The next line is the reply: a syncup event would have been queued before it.
        try client.send(#"{"id":"after","cmd":"ping"}"# + "\n")
        #expect(try client.readJSON()["id"] == "after")
        #expect(try client.result("unsubscribe")["topics"] == [])
    }

    @Test func servesFiftyConcurrentClients() throws {
        let daemon = try DaemonProcess()
        let failures = SharedCount()
        let path = daemon.socketPath
        let threads = try (0..<50).map { number in
            try DedicatedThread(name: "client-\(number)") {
                do {
                    let client = try RawClient(path: path)
                    for round in 0..<40 {
                        let reply = try client.request(round % 2 == 0 ? "status" : "ping", nil, id: .int(round))
                        if reply["id"] != .int(round) || reply["ok"] != true { failures.increment() }
                    }
                    _ = try client.result("syncups.create", ["title": .string("client \(number)")])
                } catch {
                    failures.increment()
                }
            }
        }
        for thread in threads { thread.join() }
        #expect(failures.value == 0)
        #expect(try daemon.client().result("syncups.list")["total"] == 50)
    }
}

/// A count shared by threads.
final class SharedCount: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// Polls `condition` (a cheap request) until it holds or ten seconds pass.
func waitFor(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) throws -> Bool {
    let deadline = MonotonicInstant.now() + timeout
    while MonotonicInstant.now() < deadline {
        if try condition() { return true }
    }
    return false
}
