import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// Who is here today, against the built daemon: a meeting's own roster while its sync-up is edited,
/// attendance, one identity per person, and insights at every ending (issue 26's scenarios, each of which
/// failed on the daemon before it).
@Suite struct RosterTests {
    static func daemon(_ directory: TemporaryDirectory? = nil) throws -> DaemonProcess {
        try DaemonProcess(arguments: ["--speech-engine", "none", "--no-cue"], directory: directory)
    }

    static func create(_ client: RawClient, _ title: String = "Design", seconds: Int, _ attendees: [String]) throws
        -> String
    {
        let created = try client.result(
            "syncups.create",
            ["title": .string(title), "duration": .int(seconds), "attendees": .array(attendees.map(JSONValue.string))])
        return try #require(created["id"]?.stringValue)
    }

    /// Ends the meeting with a save and returns `meetings.get` of it.
    static func saved(_ client: RawClient, _ syncUp: String) throws -> JSONValue {
        let session = try client.result("session.end", ["action": "save"])
        let meeting = try #require(session["meeting"]?.stringValue)
        #expect(
            try waitFor { try client.result("syncups.get", ["id": .string(syncUp)])["meetingsTotal"] != 0 })
        return try client.result("meetings.get", ["syncup": .string(syncUp), "meeting": .string(meeting)])
    }

    static func names(_ value: JSONValue?) -> [String] {
        (value?.arrayValue ?? []).compactMap { ($0["attendee"] ?? $0)["name"]?.stringValue }
    }

    static func attendees(_ client: RawClient, _ syncUp: String) throws -> [JSONValue] {
        try client.result("syncups.get", ["id": .string(syncUp)])["attendees"]?.arrayValue ?? []
    }

    // MARK: - Edits during a meeting

    /// Three attendees, 18 s; `next`, `next` (C has the floor), then the sync-up edited to [A]: the saved
    /// meeting has everyone who held the floor, each with a turn.
    @Test func removingAttendeesMidMeetingKeepsEveryoneWhoHadTheFloor() throws {
        let daemon = try Self.daemon()
        let client = try daemon.client()
        let id = try Self.create(client, seconds: 18, ["A", "B", "C"])
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        _ = try client.result("session.next")
        _ = try client.result("session.next")
        let a = try Self.attendees(client, id)[0]
        _ = try client.result("syncups.update", ["id": .string(id), "attendees": [a]])
        let meeting = try Self.saved(client, id)
        #expect(Self.names(meeting["attendees"]) == ["A", "B", "C"])
        let rows = try #require(meeting["insights"]?["attendees"]?.arrayValue)
        #expect(Self.names(meeting["insights"]?["attendees"]) == ["A", "B", "C"])
        #expect(rows.map { $0["turns"] } == [1, 1, 1])
    }

    /// `edit Design --remove-attendee "Blob Jr"` while Blob Jr has the floor: the floor goes to Blob Sr at
    /// once; Blob Jr added back is the same person, and `next` never takes the clock back.
    @Test func removingTheSpeakerHandsTheFloorOnAndTheClockNeverGoesBack() throws {
        let daemon = try Self.daemon()
        let client = try daemon.client()
        let id = try Self.create(client, seconds: 900, ["Blob", "Blob Jr", "Blob Sr"])
        #expect(try daemon.ctl(["start", "Design", "--no-audio"]).exitCode == 0)
        #expect(try daemon.ctl(["next"]).standardOutput.hasPrefix("recording \"Design\" 05:00 · Blob Jr 2/3"))
        let blobJr = try Self.attendees(client, id)[1]["id"]
        #expect(try daemon.ctl(["edit", "Design", "--remove-attendee", "Blob Jr"]).exitCode == 0)
        // 600 s: the start of Blob Sr's share (plus the seconds the timer ran on, on a loaded machine).
        func elapsed(_ session: JSONValue) -> Int { session["secondsElapsed"]?.numberValue?.int64.map(Int.init) ?? -1 }
        var session = try client.result("session.get")
        let handedOn = elapsed(session)
        #expect(session["speaker"]?["name"] == "Blob Sr" && (600..<610).contains(handedOn), "\(session)")
        #expect(try daemon.ctl(["edit", "Design", "--add-attendee", "Blob Jr"]).exitCode == 0)
        #expect(try Self.attendees(client, id).last?["id"] == blobJr, "the same Blob Jr as before")
        _ = try client.result("session.next")
        session = try client.result("session.get")
        #expect(session["state"] == "ending" && (handedOn..<610).contains(elapsed(session)), "\(session)")
        let meeting = try Self.saved(client, id)
        let rows = try #require(meeting["insights"]?["attendees"]?.arrayValue)
        #expect(Self.names(meeting["insights"]?["attendees"]) == ["Blob", "Blob Jr", "Blob Sr"])
        #expect(rows.map { $0["turns"] } == [1, 1, 1])
        #expect(rows.map { $0["share"] } == [300, 300, 300])
    }

    // MARK: - Attendance

    @Test func absentAtTheStartAndDuringTheMeetingThroughSyncupsctl() throws {
        let daemon = try Self.daemon()
        let client = try daemon.client()
        let id = try Self.create(client, seconds: 600, ["Zoë", "Ann", "Bob"])
        let everyone = try daemon.ctl([
            "start", "Design", "--no-audio", "--absent", "zoe", "--absent", "Ann", "--absent", "bob",
        ])
        #expect(everyone.exitCode == 65)
        #expect(everyone.standardError.contains("invalid_argument: everyone would be absent"))
        let stranger = try daemon.ctl(["start", "Design", "--no-audio", "--absent", "Nobody"])
        #expect(stranger.standardError.contains("invalid_argument: no attendee \"Nobody\" in this meeting"))
        #expect(try client.result("session.get") == .null, "nothing started")

        let start = try daemon.ctl(["start", "Design", "--no-audio", "--absent", " ZOE "])
        #expect(start.standardOutput.hasPrefix("recording \"Design\" 00:00 · Ann 1/2"), "\(start.standardOutput)")
        var session = try client.result("session.get")
        #expect(session["secondsPerAttendee"] == 300 && Self.names(session["absent"]) == ["Zoë"])
        #expect(
            try daemon.ctl(["absent", "Zoë"]).standardError.contains("invalid_argument: \"Zoë\" is already absent"))
        #expect(try daemon.ctl(["absent", "Ann"]).standardError.contains("\"Ann\" has the floor"))
        let back = try daemon.ctl(["back", "zoë"]).standardOutput
        #expect(back.hasPrefix("recording \"Design\" 00:0") && back.contains(" · Ann 1/3"), "\(back)")
        #expect(try daemon.ctl(["absent", "Bob"]).exitCode == 0)
        session = try client.result("session.get")
        #expect(session["secondsPerAttendee"] == 300 && Self.names(session["absent"]) == ["Bob"])
        // The sync-up itself is unchanged.
        #expect(try Self.attendees(client, id).map { $0["name"] } == ["Zoë", "Ann", "Bob"])
        _ = try client.result("session.next")
        let meeting = try Self.saved(client, id)
        let rows = try #require(meeting["insights"]?["attendees"]?.arrayValue)
        #expect(Self.names(meeting["insights"]?["attendees"]) == ["Ann", "Zoë", "Bob"])
        #expect(rows.map { $0["absent"] ?? false } == [false, false, true])
        #expect(rows.map { $0["turns"] } == [1, 1, 0])
        let stats = try daemon.ctl(["--json", "stats", "Design"])
        let bob = try JSONParser().parse(Array(stats.standardOutput.utf8))["attendees"]?.arrayValue?.first {
            $0["attendee"]?["name"] == "Bob"
        }
        #expect(bob?["absences"] == 1 && bob?["meetings"] == 0, "\(stats.standardOutput)")
    }

    // MARK: - One identity per person

    /// Removed and added back by the same name (any case, accents, spaces): the old id, across a restart;
    /// `stats` has one row for them, also over a meeting saved when they had another id.
    @Test func someoneRemovedAndAddedBackIsTheSamePersonAcrossRestartsAndInStats() throws {
        let directory = TemporaryDirectory("roster")
        var daemon: DaemonProcess? = try Self.daemon(directory)
        var client = try daemon!.client()
        let id = try Self.create(client, "équipe", seconds: 60, ["Zoë", "Ann"])
        let zoe = try Self.attendees(client, id)[0]["id"]
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        _ = try client.result("session.next")
        _ = try Self.saved(client, id)
        #expect(try daemon!.ctl(["edit", "équipe", "--remove-attendee", "Zoë"]).exitCode == 0)
        #expect(daemon!.stop() == .exited(0))
        let file = directory.appending("data/former-attendees.json")
        #expect(Files.readString(file)?.contains("Zoë") == true)

        daemon = try Self.daemon(directory)
        client = try daemon!.client()
        #expect(try daemon!.ctl(["edit", "equipe", "--add-attendee", " zoe "]).exitCode == 0)
        #expect(try Self.attendees(client, id).last?["id"] == zoe)
        // A meeting saved before the daemon remembered: Zoë under a new id, by the same name.
        #expect(try daemon!.ctl(["edit", "equipe", "--remove-attendee", "zoe"]).exitCode == 0)
        #expect(daemon!.stop() == .exited(0))
        Files.replace(file, with: #"{"syncups":{}}"#)
        daemon = try Self.daemon(directory)
        client = try daemon!.client()
        #expect(try daemon!.ctl(["edit", "equipe", "--add-attendee", "Zoë"]).exitCode == 0)
        #expect(try Self.attendees(client, id).last?["id"] != zoe)
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        _ = try client.result("session.next")
        _ = try Self.saved(client, id)
        let stats = try daemon!.ctl(["stats", "equipe"]).standardOutput
        #expect(stats.components(separatedBy: "Zoë").count == 2, "one row for Zoë:\n\(stats)")
        #expect(stats.contains("2 meetings"), "\(stats)")
    }

    /// A hand-edited memory with a stranger's entry and a name twice loads, and says what it could not use.
    @Test func aHandEditedFormerAttendeesFileLoadsAndSaysWhatItCouldNotUse() throws {
        let directory = TemporaryDirectory("roster")
        var daemon = try Self.daemon(directory)
        let client = try daemon.client()
        let id = try Self.create(client, seconds: 60, ["Ann", "Zoë"])
        #expect(daemon.stop() == .exited(0))
        let zoe = "00000000-0000-0000-0000-00000000002A"
        Files.write(
            directory.appending("data/former-attendees.json"),
            #"{"syncups":{"\#(id)":[{"id":"\#(zoe)","name":"Bob"},{"name":"nameless"},{"id":"\#(zoe)","name":"bob"}],"nope":[]}}"#
        )
        daemon = try Self.daemon(directory)
        let warnings =
            try daemon.client().result("status")["persistence"]?["warnings"]?.arrayValue?.compactMap(\.stringValue)
            ?? []
        #expect(warnings.contains { $0.contains("is not an attendee") }, "\(warnings)")
        #expect(warnings.contains { $0.contains("repeats an attendee or a name") }, "\(warnings)")
        #expect(warnings.contains { $0.contains("\"nope\" is not a sync-up id") }, "\(warnings)")
        #expect(try daemon.ctl(["edit", "Design", "--add-attendee", "BOB"]).exitCode == 0)
        #expect(try Self.attendees(try daemon.client(), id).last?["id"]?.stringValue == zoe)
    }

    // MARK: - Endings

    @Test func discardingWorksAtTheLastSpeaker() throws {
        let daemon = try Self.daemon()
        let client = try daemon.client()
        let id = try Self.create(client, seconds: 60, ["A", "B"])
        #expect(try daemon.ctl(["start", "Design", "--no-audio"]).exitCode == 0)
        _ = try daemon.ctl(["next"])
        #expect(try daemon.ctl(["next"]).standardOutput.hasPrefix("ending"))
        let discarded = try daemon.ctl(["end", "--discard"])
        #expect(discarded.exitCode == 0, "\(discarded.standardError)")
        #expect(try client.result("syncups.get", ["id": .string(id)])["meetingsTotal"] == 0)
    }

    /// A stop (SIGTERM) during the save's wait for a recognizer that never finishes: saved within the shorter
    /// wait, its real time ending where `session.end` came, not where the wait did.
    @Test func stoppedDuringTheSavesWaitTheMeetingHasItsInsights() throws {
        let alsa = try ALSAFixture(microphone: SpeechFixture.silence(seconds: 20))
        let engine = alsa.directory.appending("engine.sh")
        Files.write(engine, "echo '{\"type\":\"progress\",\"time\":0}'\nexec sleep 1000\n")
        let directory = TemporaryDirectory("roster-stop")
        let arguments = ["--audio-device", "virtmic", "--no-cue", "--speech-command", "exec sh \(engine)"]
        let daemon = try DaemonProcess(arguments: arguments, environment: alsa.environment, directory: directory)
        let client = try daemon.client()
        let id = try Self.create(client, seconds: 600, ["Ann", "Bob"])
        let meeting = try #require(
            try client.result("session.start", ["syncup": .string(id)])["meeting"]?.stringValue)
        _ = try client.result("session.next")
        let ended = try #require(try client.result("session.end", ["action": "save"])["secondsElapsed"])
        #expect(ended == 300 && daemon.stop() == .exited(0))
        let again = try DaemonProcess(arguments: arguments, environment: alsa.environment, directory: directory)
        let saved = try again.client().result("meetings.get", ["syncup": .string(id), "meeting": .string(meeting)])
        let real = try #require(saved["insights"]?["realSeconds"]?.numberValue?.double, "\(saved)")
        #expect(real < 2, "the meeting took \(real) s: the stop's wait is not part of it")
        #expect(saved["insights"]?["attendees"]?.arrayValue?.map { $0["turns"] } == [1, 1])
    }

    /// kill -9 at any moment after the last turn (the wait at the last speaker, the save's wait for a
    /// recognizer that never finishes, time up): the recovered meeting has its insights, every turn in them.
    @Test(arguments: ["next", "end", "time"])
    func killedAfterTheLastTurnTheRecoveredMeetingHasItsInsights(ending: String) throws {
        for round in 0..<3 {
            let alsa = try ALSAFixture(microphone: SpeechFixture.silence(seconds: 20))
            let engine = alsa.directory.appending("engine.sh")
            // Ready, a provisional tail, then never finishing: the save waits its 20 s.
            Files.write(
                engine,
                """
                echo '{"type":"progress","time":0}'
                echo '{"type":"partial","text":"and then"}'
                exec sleep 1000
                """)
            let directory = TemporaryDirectory("roster-kill")
            let arguments = ["--audio-device", "virtmic", "--no-cue", "--speech-command", "exec sh \(engine)"]
            let daemon = try DaemonProcess(arguments: arguments, environment: alsa.environment, directory: directory)
            let client = try daemon.client()
            let id = try Self.create(client, seconds: 2, ["Ann", "Bob"])
            _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
            let meeting = try #require(
                try client.result("session.start", ["syncup": .string(id)])["meeting"]?.stringValue)
            // The provisional tail has come (the journal gets it with the end).
            while try client.nextEvent("session.transcript")["data"]?["session"]?["transcript"] != "and then" {}
            switch ending {
            case "next":
                _ = try client.result("session.next")
                _ = try client.result("session.next")
            case "end":
                _ = try client.result("session.next")
                _ = try client.result("session.end", ["action": "save"])
            default:
                _ = try client.nextEvent("session.ending", timeout: .seconds(10))
            }
            let journal = directory.appending("data/meetings/\(meeting).recording.json")
            #expect(
                try waitFor { Files.readString(journal)?.contains(#"],"end":"#) == true },
                "the journal says when it ended")
            // Round by round, a little later into the wait.
            for _ in 0..<(round * 3) { _ = try? client.readJSON(timeout: .milliseconds(100)) }
            #expect(daemon.stop(signal: SIGKILL) == .signaled(SIGKILL))

            let again = try DaemonProcess(arguments: arguments, environment: alsa.environment, directory: directory)
            let recovered = try again.client().result(
                "meetings.get", ["syncup": .string(id), "meeting": .string(meeting)])
            #expect(recovered["interrupted"] == true)
            let insights = try #require(recovered["insights"]?.objectValue, "round \(round): \(recovered)")
            #expect(Self.names(recovered["insights"]?["attendees"]) == ["Ann", "Bob"])
            #expect(insights["attendees"]?.arrayValue?.map { $0["turns"] } == [1, 1])
            #expect(recovered["transcript"]?.stringValue?.hasSuffix("and then") == true, "\(recovered)")
            // Attack 101: the tail in the transcript is a segment too (it had none), the floor holder's where
            // the engine placed it (its line gives no times: 0).
            let segments = recovered["segments"]?.arrayValue ?? []
            #expect(segments.map { $0["text"] } == ["and then"], "\(recovered)")
            #expect(segments.map { $0["speaker"]?["name"] } == ["Ann"], "\(recovered)")
        }
    }
}
