import SyncUpsJSON
import SyncUpsTestSupport
import Testing

/// The breaks a hostile tester found in issue 26's roster, against the built daemon; each failed before its fix.
@Suite struct RosterAttackTests {
    typealias R = RosterTests

    /// Ann, Bob, Cat; `next`, `next` (Cat speaks); Cat removed: the meeting waits at its end. `resume` then
    /// would run the clock with nobody holding the floor (before: Cat, removed, "spoke" on, in nobody's turn):
    /// it is refused, changing nothing, and the save's turns cover the meeting.
    @Test func resumingAfterTheRemovedLastSpeakerIsRefused() throws {
        let daemon = try R.daemon()
        let client = try daemon.client()
        let id = try R.create(client, seconds: 30, ["Ann", "Bob", "Cat"])
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        _ = try client.result("session.next")
        _ = try client.result("session.next")
        let kept = Array(try R.attendees(client, id).prefix(2))
        _ = try client.result("syncups.update", ["id": .string(id), "attendees": .array(kept)])
        #expect(try client.result("session.get")["state"] == "ending")
        let resumed = try client.request("session.resume")
        #expect(resumed["ok"] == false, "\(resumed)")
        #expect(resumed["error"]?["message"]?.stringValue?.contains("last speaker was removed") == true, "\(resumed)")
        #expect(try client.result("session.get")["state"] == "ending")
    }

    /// A bare-name list naming the people present keeps their ids: before, Ann and Bob became new people.
    /// Mid-meeting, `["Ann"]` while Ann speaks leaves her the floor, one row in the insights.
    @Test func aBareNameListKeepsThePeoplePresent() throws {
        let daemon = try R.daemon()
        let client = try daemon.client()
        let id = try R.create(client, seconds: 60, ["Ann", "Bob", "Cat"])
        let before = try R.attendees(client, id).map { $0["id"] }
        _ = try client.result("syncups.update", ["id": .string(id), "attendees": ["ann", "Bob", "Cat"]])
        #expect(try R.attendees(client, id).map { $0["id"] } == before)
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        _ = try client.result("syncups.update", ["id": .string(id), "attendees": ["Ann"]])
        #expect(try client.result("session.get")["speaker"]?["id"] == before[0])
        let meeting = try R.saved(client, id)
        #expect(R.names(meeting["insights"]?["attendees"]).filter { $0 == "Ann" }.count == 1)
    }

    /// An empty list at rest is the app's (one blank attendee); during a meeting it is refused, nothing
    /// changed: before, a nameless attendee took the floor. `edit --remove-attendee` of the last one is refused.
    @Test func nobodyLeftIsRefusedDuringAMeetingAndByRemoveAttendee() throws {
        let daemon = try R.daemon()
        let client = try daemon.client()
        let id = try R.create(client, seconds: 60, ["Ann", "Bob"])
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        let refused = try client.request("syncups.update", ["id": .string(id), "attendees": []])
        #expect(refused["error"]?["code"] == "invalid_argument", "\(refused)")
        #expect(refused["error"]?["message"]?.stringValue?.contains("nothing changed") == true, "\(refused)")
        #expect(R.names(.array(try R.attendees(client, id))) == ["Ann", "Bob"])
        #expect(try client.result("session.get")["speaker"]?["name"] == "Ann")
        _ = try client.result("session.end", ["action": "discard"])
        let one = try R.create(client, "Solo", seconds: 60, ["Bob"])
        let removed = try daemon.ctl(["edit", one, "--remove-attendee", "Bob"])
        #expect(removed.exitCode != 0, "\(removed.standardOutput)")
        #expect(removed.standardError.contains("keeps at least one attendee"), "\(removed.standardError)")
        #expect(R.names(.array(try R.attendees(client, one))) == ["Bob"])
        _ = try client.result("syncups.update", ["id": .string(one), "attendees": []])
        #expect(R.names(.array(try R.attendees(client, one))) == [""])
    }

    /// An attendee id prefix (4+ characters) works for `absent` at the start and for `session.absent`, as
    /// the protocol says it does wherever an id does (before: "no attendee" for both).
    @Test func attendeeIdPrefixesWorkForAbsence() throws {
        let daemon = try R.daemon()
        let client = try daemon.client()
        let id = try R.create(client, seconds: 60, ["Ann", "Bob", "Cat"])
        let ids = try R.attendees(client, id).compactMap { $0["id"]?.stringValue }
        let started = try client.request(
            "session.start", ["syncup": .string(id), "audio": false, "absent": [.string(String(ids[1].prefix(8)))]])
        #expect(started["ok"] == true, "\(started)")
        #expect(R.names(started["result"]?["absent"]) == ["Bob"])
        let absent = try client.request("session.absent", ["attendee": .string(String(ids[2].prefix(6).lowercased()))])
        #expect(absent["ok"] == true, "\(absent)")
        #expect(R.names(absent["result"]?["absent"]) == ["Bob", "Cat"])
    }

    /// A hand-edited memory with an extra field, a blank name and a sync-up that does not exist says so in
    /// `status` (before: all three silently).
    @Test func aHandEditedFormerFileSaysWhatElseItCouldNotUse() throws {
        let directory = TemporaryDirectory("roster")
        var daemon = try R.daemon(directory)
        let id = try R.create(try daemon.client(), seconds: 60, ["Ann"])
        #expect(daemon.stop() == .exited(0))
        let stranger = "00000000-0000-0000-0000-0000000000AA"
        Files.write(
            directory.appending("data/former-attendees.json"),
            #"{"syncups":{"\#(id)":[{"id":"00000000-0000-0000-0000-000000000001","name":"Bob","voice":"x"},"#
                + #"{"id":"00000000-0000-0000-0000-000000000002","name":"  "}],"#
                + #""\#(stranger)":[{"id":"00000000-0000-0000-0000-000000000003","name":"Cy"}]}}"#
        )
        daemon = try R.daemon(directory)
        let warnings =
            try daemon.client().result("status")["persistence"]?["warnings"]?.arrayValue?.compactMap(\.stringValue)
            ?? []
        #expect(warnings.contains { $0.contains("(Bob) has fields other than id and name (voice)") }, "\(warnings)")
        #expect(warnings.contains { $0.contains("[1] has a blank name") }, "\(warnings)")
        #expect(warnings.contains { $0.contains("\(stranger) is not a sync-up of sync-ups.json") }, "\(warnings)")
    }
}
