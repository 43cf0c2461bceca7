import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// The wire protocol against the real daemon over a real socket: every error code, framing, ordering.
@Suite struct ProtocolTests {
    /// `printf '…' | socat - UNIX-CONNECT:…`: the client sends its requests, then half-closes. Every
    /// request is answered and run, even when the replies pile up past the point where reading pauses.
    @Test func answersEveryRequestOfAClientThatHalfClosesAfterSendingThem() throws {
        let daemon = try DaemonProcess()
        let setup = try daemon.client()
        let attendees = JSONValue.array((0..<100).map { .string("Attendee \($0) with a name long enough") })
        for index in 0..<30 {
            _ = try setup.result("syncups.create", ["title": .string("Team \(index)"), "attendees": attendees])
        }
        let client = try daemon.client()
        // Eight replies of about 290 KB each: more than the socket buffers hold, so the half-close is read while
        // replies are still queued.
        var lines = ""
        for id in 0..<8 { lines += #"{"id":\#(id),"cmd":"syncups.list"}"# + "\n" }
        lines += #"{"id":"last","cmd":"syncups.create","args":{"title":"After the flood"}}"# + "\n"
        try client.send(lines)
        shutdown(client.fd.rawValue, Int32(SHUT_WR))
        var replies: [JSONValue] = []
        while let line = try client.readLine(timeout: .seconds(30)) { replies.append(try JSONParser().parse(line)) }
        #expect(replies.count == 9)
        #expect(replies.last?["id"] == "last" && replies.last?["ok"] == true)
        #expect(try setup.result("syncups.list", ["limit": 1])["total"] == 31)
    }

    /// protocol.md's `echo '{"cmd":"subscribe"}' | socat - UNIX-CONNECT:…`: socat half-closes once the
    /// subscribe is sent, and the subscription must go on until the client closes the connection.
    @Test func aSubscriberThatHalfClosesKeepsReceivingEventsUntilItCloses() throws {
        let daemon = try DaemonProcess()
        let follower = try daemon.client()
        try follower.send(#"{"id":1,"cmd":"subscribe","args":{"topics":["syncups"],"snapshot":false}}"# + "\n")
        shutdown(follower.fd.rawValue, Int32(SHUT_WR))
        #expect(try follower.readJSON()["ok"] == true)
        let client = try daemon.client()
        _ = try client.result("syncups.create", ["title": "Seen"])
        let event = try follower.readJSON()
        #expect(event["event"] == "syncup.created")
        #expect(try client.result("status")["connections"] == 2)
        follower.close()
        #expect(try waitFor { try client.result("status")["connections"] == 1 })
    }

    @Test func greetsEveryConnectionWithVersionAndLimits() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        #expect(client.greeting["event"] == "hello")
        #expect(client.greeting["seq"] == nil)
        let data = try #require(client.greeting["data"])
        #expect(data["protocol"] == 1)
        #expect(data["version"]?.stringValue?.isEmpty == false)
        #expect(data["limits"]?["maxLineBytes"] == 1_048_576)
        #expect(data["limits"]?["stallTimeoutSeconds"] == 10)
    }

    @Test func answersEachErrorWithItsCodeAndKeepsTheConnectionUsable() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let cases: [(line: String, id: JSONValue, code: String)] = [
            ("this is not json", nil, "parse_error"),
            (#"{"id": 7, "cmd": "ping""#, nil, "parse_error"),
            ("[1,2]", nil, "invalid_request"),
            (#"{"id": 8}"#, 8, "invalid_request"),
            (#"{"id": [1], "cmd": "ping"}"#, nil, "invalid_request"),
            (#"{"id": "x", "cmd": 5}"#, "x", "invalid_request"),
            (#"{"id": 9, "cmd": "ping", "args": []}"#, 9, "invalid_request"),
            (#"{"id": 10, "cmd": "dance"}"#, 10, "unknown_command"),
            (#"{"id": 11, "cmd": "syncups.create", "args": {"title": 5}}"#, 11, "invalid_argument"),
            (#"{"id": 12, "cmd": "syncups.create", "args": {"title": "x", "duration": 0}}"#, 12, "invalid_argument"),
            (#"{"id": 13, "cmd": "syncups.create", "args": {"title": "x", "theme": "mauve"}}"#, 13, "invalid_argument"),
            (#"{"id": 14, "cmd": "syncups.create", "args": {"titel": "x"}}"#, 14, "invalid_argument"),
            (
                #"{"id": 15, "cmd": "syncups.get", "args": {"id": "00000000-0000-0000-0000-000000000000"}}"#, 15,
                "not_found"
            ),
            (#"{"id": 16, "cmd": "syncups.get", "args": {"id": "abc"}}"#, 16, "invalid_argument"),
            (#"{"id": 17, "cmd": "syncups.create", "args": {"title": "x", "duration": 1.5}}"#, 17, "invalid_argument"),
            (
                #"{"id": 18, "cmd": "syncups.create", "args": {"title": "x", "duration": 1e300}}"#, 18,
                "invalid_argument"
            ),
            (#"{"id": 19, "cmd": "subscribe", "args": {"topics": ["weather"]}}"#, 19, "invalid_argument"),
        ]
        for (line, id, code) in cases {
            try client.send(line + "\n")
            let reply = try client.readJSON()
            #expect(reply["ok"] == false, "\(line)")
            #expect(reply["id"] == id, "\(line)")
            #expect(reply["error"]?["code"]?.stringValue == code, "\(line): \(JSONWriter().string(reply))")
            #expect(reply["error"]?["message"]?.stringValue?.isEmpty == false)
        }
        // What a meeting without audio cannot have is refused, rather than quietly left out.
        let id = try #require(try client.result("syncups.create", ["title": "Solo"])["id"]?.stringValue)
        for (extra, what) in [("transcribe", "transcribing needs audio"), ("call", "recording the call needs audio")] {
            try client.send(
                #"{"id":20,"cmd":"session.start","args":{"syncup":"\#(id)","audio":false,"\#(extra)":true}}"# + "\n")
            let reply = try client.readJSON()
            #expect(reply["error"]?["code"] == "invalid_argument", "\(extra): \(JSONWriter().string(reply))")
            #expect(reply["error"]?["message"]?.stringValue?.hasPrefix(what) == true, "\(JSONWriter().string(reply))")
        }
        #expect(try client.result("session.get") == .null)
        #expect(try client.request("ping")["result"] == "pong")
    }

    @Test func repliesInRequestOrderToPipelinedRequests() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        var batch = ""
        for index in 0..<2000 {
            batch += index % 3 == 0 ? "{\"id\":\(index),\"cmd\":\"status\"}\n" : "{\"id\":\(index),\"cmd\":\"ping\"}\n"
        }
        try client.send(batch)
        for index in 0..<2000 {
            let reply = try client.readJSON()
            #expect(reply["id"] == .int(index))
            #expect(reply["ok"] == true)
        }
    }

    @Test func acceptsCarriageReturnsAndALastLineWithoutNewlineBeforeEOF() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        try client.send("{\"id\":1,\"cmd\":\"ping\"}\r\n{\"id\":2,\"cmd\":\"ping\"}")
        shutdown(client.fd.rawValue, CInt(SHUT_WR))
        #expect(try client.readJSON()["id"] == 1)
        #expect(try client.readJSON()["id"] == 2)
        #expect(try client.readLine() == nil)
    }

    @Test func refusesALineOverOneMebibyteAndClosesOnlyThatConnection() throws {
        let daemon = try DaemonProcess()
        let other = try daemon.client()
        let client = try daemon.client()
        let limit = 1 << 20
        // Exactly at the limit is fine: a ping padded with spaces.
        let atLimit = "{\"id\":1,\"cmd\":\"ping\"" + String(repeating: " ", count: limit - 21) + "}"
        #expect(atLimit.utf8.count == limit)
        try client.send(atLimit + "\n")
        #expect(try client.readJSON()["result"] == "pong")
        try client.send(String(repeating: "x", count: limit + 1))
        let reply = try client.readJSON()
        #expect(reply["error"]?["code"] == "line_too_long")
        #expect(reply["id"] == .null)
        #expect(client.waitUntilClosed())
        #expect(try other.request("ping")["result"] == "pong")
    }

    @Test func resolvesUniqueIDPrefixesLikeGit() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let created = try client.result("syncups.create", ["title": "Design", "attendees": ["Blob"]])
        let id = try #require(created["id"]?.stringValue)
        let byPrefix = try client.result("syncups.get", ["id": .string(String(id.prefix(6)).lowercased())])
        #expect(byPrefix["id"]?.stringValue == id)
        let tooShort = try client.request("syncups.get", ["id": .string(String(id.prefix(3)))])
        #expect(tooShort["error"]?["code"] == "invalid_argument")
    }

    @Test func reportsAmbiguousPrefixesListingTheMatches() throws {
        // Write two sync-ups whose ids share a prefix, then ask for that prefix.
        let directory = TemporaryDirectory("ambiguous")
        let data = directory.appending("data")
        mkdir(data, 0o700)
        let first =
            #"{"id":"ABCD0000-0000-0000-0000-000000000001","attendees":[],"duration":[0,60000000000000000000],"meetings":[],"theme":"sky","title":"One"}"#
            .replacingSixtySeconds
        let second =
            #"{"id":"ABCD0000-0000-0000-0000-000000000002","attendees":[],"duration":[0,60000000000000000000],"meetings":[],"theme":"sky","title":"Two"}"#
            .replacingSixtySeconds
        Files.write(data + "/sync-ups.json", "[\(first),\(second)]")
        let daemon = try DaemonProcess(directory: directory)
        let reply = try daemon.client().request("syncups.get", ["id": "abcd0"])
        #expect(reply["error"]?["code"] == "invalid_argument")
        let message = reply["error"]?["message"]?.stringValue ?? ""
        #expect(message.contains("ABCD0000-0000-0000-0000-000000000001 (One)"))
        #expect(message.contains("ABCD0000-0000-0000-0000-000000000002 (Two)"))
    }
}

extension String {
    /// Fixture text uses an impossible low half; put the real 60-second pair in.
    var replacingSixtySeconds: String {
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: "[0,60000000000000000000]") {
            result += rest[..<range.lowerBound] + "[3,4659767778871345152]"
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
