import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// Stand-up insights from real meetings: the daemon's timer, the `file`-plugin microphone and a scripted
/// speech engine, driven so that every number is known in advance (to the timer's and the test's latency:
/// a few milliseconds on a quiet machine; the checks allow a tenth of a second, and a floor, which ends at a
/// real tick that a loaded machine can make late, three tenths: a late tick showed Ann's 2.0 s as 2.1).
@Suite struct InsightsTests {
    /// Once the audio ends: Ann speaks 0.8 s (0.2–0.7 and 1.0–1.3), Bob 0.4 s (2.5–2.9), Cy not at all.
    static let engine = """
        echo '{"type":"progress","time":0}'
        cat > /dev/null
        echo '{"type":"final","text":"yesterday done","start":0.2,"end":1.3,"words":[{"word":"yesterday","start":0.2,"end":0.7},{"word":"done","start":1.0,"end":1.3}]}'
        echo '{"type":"final","text":"blocked","start":2.5,"end":2.9,"words":[{"word":"blocked","start":2.5,"end":2.9}]}'
        """

    /// How late a real tick may be on a loaded machine: what a floor time (ended by a tick) may be off by.
    static let tickLateness = 0.3

    /// The line of a table with one column given as a pattern: `00:02.[0-3]` for a floor a late tick ended.
    static func containsLine(_ text: String, _ pattern: String) -> Bool {
        guard let regex = try? Regex(pattern) else { return false }
        return text.contains(regex)
    }

    static func within(_ value: JSONValue?, _ expected: Double, _ tolerance: Double = 0.1) -> Bool {
        guard let value = value?.numberValue?.double else { return false }
        return abs(value - expected) < tolerance
    }

    /// Waits for the tick that makes the meeting's elapsed time `seconds`.
    static func tick(_ seconds: Int, on client: RawClient) throws {
        while try client.nextEvent("session.tick", timeout: .seconds(20))["data"]?["session"]?["secondsElapsed"]
            != .number(.int(Int64(seconds)))
        {}
    }

    /// Meeting 1: 6 s for Ann, Bob and Cy (2 s each). Ann is rotated out by the timer; Bob is paused a while
    /// 1 s into his turn, then rotated out; Cy says `next` 1 s into hers (cut short), and the meeting is saved.
    /// Meeting 2: the sync-up is shortened to 3 s (1 s each) during Ann's first second: she runs over by
    /// 1 s, Bob has his 1 s, time is up before Cy's turn.
    /// Also how long the first meeting took at most, as the test saw it: from before its start was asked for
    /// to its save's reply.
    static func twoMeetings() throws -> (ScriptedEngineMeeting, syncUp: String, [String], firstTookAtMost: Double) {
        let began = MonotonicInstant.now()
        let meeting = try ScriptedEngineMeeting(seconds: 6, attendees: ["Ann", "Bob", "Cy"]) { _ in engine }
        let client = meeting.client
        let syncUp = try #require(meeting.started["syncup"]?.stringValue)
        try tick(3, on: client)
        _ = try client.result("session.pause")
        #expect(try meeting.daemon.ctl(["status"]).exitCode == 0)  // the pause lasts as long as this takes
        _ = try client.result("session.resume")
        try tick(5, on: client)
        _ = try client.result("session.next")
        let first = try meeting.daemon.ctl(["end", "--save"])
        let firstTook = (MonotonicInstant.now() - began).seconds
        #expect(first.exitCode == 0, "\(first.standardError)")

        _ = try client.result("session.start", ["syncup": .string(syncUp)])
        try tick(1, on: client)
        _ = try client.result("syncups.update", ["id": .string(syncUp), "duration": 3])
        let ended = try client.nextEvent("session.ended", timeout: .seconds(20))
        let second = try #require(ended["data"]?["meeting"]?["id"]?.stringValue)
        return (
            meeting, syncUp,
            [String(first.standardOutput.dropLast(first.standardOutput.hasSuffix("\n") ? 1 : 0)), second],
            firstTook
        )
    }

    @Test func meetingsGetAndTheCLIGiveEachMeetingsInsightsAndStatsAverageThem() throws {
        let (meeting, syncUp, ids, firstTookAtMost) = try Self.twoMeetings()
        let daemon = meeting.daemon
        let got = try daemon.client().result("meetings.get", ["syncup": .string(syncUp), "meeting": .string(ids[0])])
        let insights = try #require(got["insights"], "\(got)")
        #expect(insights["plannedSeconds"] == 6)
        #expect(insights["turnsCutShort"] == 1)
        let paused = try #require(insights["pausedSeconds"]?.numberValue?.double)
        #expect(paused > 0)
        // Real time: five ticks passed before the save was asked for (a tick is never early), and the meeting
        // took no longer than the test waited for it (a loaded machine's late ticks and slow replies lengthen it).
        let real = try #require(insights["realSeconds"]?.numberValue?.double)
        #expect(
            real - paused > 5 - 0.05 && real <= firstTookAtMost, "real \(real), paused \(paused), \(firstTookAtMost)")
        let rows = try #require(insights["attendees"]?.arrayValue)
        #expect(rows.map { $0["attendee"]?["name"] } == ["Ann", "Bob", "Cy"])
        for (row, expected) in zip(rows, [(2.0, 0.8, 0.0), (2.0, 0.4, 0.0), (1.0, 0.0, -1.0)]) {
            #expect(row["share"] == 2)
            #expect(Self.within(row["floor"], expected.0, Self.tickLateness), "\(row)")
            #expect(Self.within(row["speaking"], expected.1), "\(row)")
            // Overtime is the floor less the share: a late tick's error in the floor is in it too.
            #expect(Self.within(row["overtime"], expected.2, Self.tickLateness), "\(row)")
            #expect(row["ranOver"] == false)
        }

        let second = try daemon.ctl(["meeting", syncUp, "latest"]).standardOutput
        #expect(second.contains("insights: planned 00:03.0, took 00:03."), "\(second)")
        #expect(
            Self.containsLine(second, #"Ann       00:01\.0  00:02\.[0-3]  00:00\.8  \+00:01\.[0-3] ran over\n"#),
            "\(second)")
        #expect(second.contains("Cy        00:01.0  00:00.0  00:00.0  no turn\n"), "\(second)")

        let stats = try JSONParser().parse(try daemon.ctl(["--json", "stats", "Solo"]).standardOutput)
        #expect(stats["meetings"] == 2 && stats["withoutInsights"] == 0, "\(stats)")
        let people = try #require(stats["attendees"]?.arrayValue)
        #expect(people.map { $0["attendee"]?["name"] } == ["Ann", "Bob", "Cy"])
        #expect(people.map { $0["meetings"] } == [2, 2, 1])
        #expect(people.map { $0["ranOver"] } == [1, 0, 0])
        for (person, expected) in zip(people, [(2.0, 0.8), (1.5, 0.4), (1.0, 0.0)]) {
            #expect(Self.within(person["averageFloor"], expected.0, Self.tickLateness), "\(person)")
            #expect(Self.within(person["averageSpeaking"], expected.1), "\(person)")
        }
        let last = try daemon.ctl(["stats", "Solo", "--last", "1"]).standardOutput
        #expect(last.hasPrefix("\"Solo\": 1 meeting\n"), "\(last)")
        #expect(Self.containsLine(last, #"Ann       1         00:02\.[0-3]    00:00\.8    1 of 1\n"#), "\(last)")
        #expect(!last.contains("Cy"), "\(last)")
        #expect(try daemon.ctl(["stats", "Solo", "--last", "0"]).exitCode == 64)

        let markdown = try daemon.ctl(["export", syncUp, "latest", "--format", "md"]).standardOutput
        #expect(markdown.contains("\n## Insights\n\nPlanned 00:03.0, took 00:03."), "\(markdown)")
        #expect(
            Self.containsLine(
                markdown, #"\| Ann \| 00:01\.0 \| 00:02\.[0-3] \| 00:00\.8 \| \+00:01\.[0-3] \(ran over\) \|\n"#),
            "\(markdown)")
        let json = try JSONParser().parse(
            try daemon.ctl(["export", syncUp, "latest", "--format", "json"]).standardOutput)
        #expect(json["insights"]?["attendees"]?[0]?["ranOver"] == true)
        #expect(got["detailsError"] == .null)

        // A damaged details file is told apart from one never kept, and left as it is.
        let path = daemon.dataPath + "/meetings/\(ids[0]).json"
        Files.write(path, "{\"meeting\": ")
        let damaged = try daemon.client().result(
            "meetings.get", ["syncup": .string(syncUp), "meeting": .string(ids[0])])
        #expect(damaged["insights"] == .null)
        #expect(
            damaged["detailsError"]?.stringValue?.hasPrefix("meetings/\(ids[0]).json: ") == true, "\(damaged)")
        let shown = try daemon.ctl(["meeting", syncUp, ids[0]]).standardOutput
        #expect(shown.contains("\nno insights: the meeting's details file is unreadable: meetings/"), "\(shown)")
        #expect(Files.read(path) == Array("{\"meeting\": ".utf8))
    }

    /// A details file far larger than any meeting's (a crash's sparse file) is refused by its size, not read
    /// whole into the daemon's memory.
    @Test func refusesADetailsFileOverTwoHundredFiftySixMebibytes() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 1, attendees: ["Ann"]) { _ in Self.engine }
        let ended = try meeting.client.nextEvent("session.ended", timeout: .seconds(20))
        let id = try #require(ended["data"]?["meeting"]?["id"]?.stringValue)
        let syncUp = try #require(meeting.started["syncup"]?.stringValue)
        let directory = meeting.daemon.dataPath + "/meetings"
        let path = directory + "/\(id).json"
        // Its journal goes once the daemon no longer holds the details in memory: meetings.get reads the file.
        let journal = directory + "/\(id).recording.json"
        #expect(try Files.wait(forChangesIn: directory) { Files.exists(path) && !Files.exists(journal) })
        #expect(truncate(path, 300 << 20) == 0)
        let got = try meeting.daemon.client().result(
            "meetings.get", ["syncup": .string(syncUp), "meeting": .string(id)])
        #expect(
            got["detailsError"]?.stringValue
                == "meetings/\(id).json: 314572800 bytes, over the 256 MiB a meeting's details file may have; not read",
            "\(got)")
        #expect(got["insights"] == .null)
    }
}
