import SyncUpsCore
import SyncUpsJSON
import SyncUpsPersistence
import Testing

/// A meeting's details file edited by hand: it loads, and says what of its people it could not use.
@Suite struct MeetingDetailsTests {
    static let meeting = "00000000-0000-0000-0000-000000000001"
    static let syncUp = "00000000-0000-0000-0000-000000000002"
    static let ann = #"{"id":"00000000-0000-0000-0000-00000000000A","name":"Ann"}"#
    static let bob = #"{"id":"00000000-0000-0000-0000-00000000000B","name":"Bob"}"#

    static func details(_ fields: String) throws -> MeetingDetails {
        let text = #"{"meeting":"\#(meeting)","syncup":"\#(syncUp)",\#(fields)}"#
        return try #require(MeetingDetails(json: try JSONParser().parse(Array(text.utf8))))
    }

    @Test func absentAttendeesRoundTripAndShowInTheInsights() throws {
        let details = try Self.details(
            #""attendees":[\#(Self.ann)],"absent":[\#(Self.bob)],"timeline":{"duration":60,"turns":[{"speaker":\#(Self.ann),"start":0,"end":60}],"pauses":[],"end":60}"#
        )
        #expect(details.absent.map(\.name) == ["Bob"] && details.problems.isEmpty)
        #expect(MeetingDetails(json: details.json) == details)
        let rows = try #require(details.insights).attendees
        #expect(rows.map(\.attendee.name) == ["Ann", "Bob"] && rows.map(\.isAbsent) == [false, true])
        #expect(rows[0].share == 60 && rows[1].share == 0)
    }

    @Test func saysWhatOfAHandEditItCouldNotUse() throws {
        let details = try Self.details(
            #""attendees":[\#(Self.ann),\#(Self.ann)],"absent":[\#(Self.ann),{"name":"x"},\#(Self.bob),\#(Self.bob)],"timeline":{"duration":60,"turns":[{"speaker":{"id":"00000000-0000-0000-0000-00000000000C","name":"Cy"},"start":0,"end":60}],"pauses":[]}"#
        )
        #expect(details.absent.map(\.name) == ["Bob"])
        #expect(
            details.problems == [
                "attendees[1] (Ann) is listed already; the first is used",
                "absent[0] (Ann) is listed already; ignored",
                "absent[1] is not an attendee ({\"id\",\"name\"} with a valid id); ignored",
                "absent[3] (Bob) is listed already; ignored",
                "Cy (00000000-0000-0000-0000-00000000000C) had the floor but is not among the attendees; their turns are not in the insights",
            ])
        #expect(details.insights?.attendees.map(\.attendee.name) == ["Ann", "Bob"])
    }

    /// Entries without an id or with a bad one, Ann twice, and a turn that goes back: each said, and the
    /// attendees listed once each (before: dropped silently, Ann listed twice, times clamped silently).
    @Test func saysWhatElseOfAHandEditItCouldNotUse() throws {
        let details = try Self.details(
            #""attendees":[\#(Self.ann),{"name":"No id"},{"id":"nope","name":"Bad id"},\#(Self.ann),\#(Self.bob)],"#
                + #""timeline":{"duration":60,"turns":[{"speaker":\#(Self.ann),"start":0,"end":30},"#
                + #"{"speaker":\#(Self.bob),"start":20,"end":10}],"pauses":[],"end":60}"#
        )
        #expect(details.attendees.map(\.name) == ["Ann", "Bob"])
        #expect(details.problems.contains { $0.hasPrefix("attendees[1] is not an attendee") }, "\(details.problems)")
        #expect(details.problems.contains { $0.hasPrefix("attendees[2] is not an attendee") }, "\(details.problems)")
        #expect(details.problems.contains { $0.hasPrefix("attendees[3] (Ann) is listed already") })
        #expect(details.problems.contains { $0.hasPrefix("timeline.turns[1] (Bob) goes back in time") })
    }

    /// A decode for a reader who left stops at its next `segmentsPerCheck` segments (about a megabyte):
    /// before, everything after the parse ran to the end whoever waited.
    @Test func aDecodeNobodyWaitsForStopsAtItsNextCheck() throws {
        let segment = TranscriptSegment(speaker: nil, start: 1, end: 2, text: "said", words: []).json
        let segments = JSONValue.array(Array(repeating: segment, count: 10_000))
        let json: JSONValue = ["meeting": .string(Self.meeting), "syncup": .string(Self.syncUp), "segments": segments]
        var asked = 0
        let whole = try #require(
            MeetingDetails(json: json) {
                asked += 1
                return true
            })
        #expect(whole.segments.count == 10_000 && asked == 2)
        asked = 0
        let cut = try #require(
            MeetingDetails(json: json) {
                asked += 1
                return asked < 2
            })
        #expect(cut.segments.count == 2 * MeetingDetails.segmentsPerCheck && asked == 2)
    }
}
