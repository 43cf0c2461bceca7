import Foundation
import SyncUpsCore
import SyncUpsJSON
import SyncUpsTestSupport
import Testing

@Suite struct SyncUpsFileTests {
    static func fixture(_ name: String) throws -> [UInt8] {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
        return [UInt8](try Data(contentsOf: url))
    }

    @Test(arguments: [
        (60, DurationPair(high: 3, low: 4_659_767_778_871_345_152)),
        (300, DurationPair(high: 16, low: 4_852_094_820_647_174_144)),
        (360, DurationPair(high: 19, low: 9_511_862_599_518_519_296)),
        (600, DurationPair(high: 32, low: 9_704_189_641_294_348_288)),
        (1800, DurationPair(high: 97, low: 10_665_824_850_173_493_248)),
        (6, DurationPair(high: 0, low: 6_000_000_000_000_000_000)),
    ])
    func encodesDurationsAsTheAppsAttosecondPairs(seconds: Int, pair: DurationPair) {
        #expect(DurationPair(.seconds(seconds)) == pair)
        #expect(pair.duration == .seconds(seconds))
    }

    @Test func keepsSubSecondDurationsExactly() {
        let duration = Duration.milliseconds(1500) + .nanoseconds(7)
        #expect(DurationPair(duration).duration == duration)
    }

    @Test func readsTheAppsDebugFile() throws {
        let syncUps = try SyncUpsFile.decode(try Self.fixture("app-debug-pretty.json"))
        try #require(syncUps.count == 3)
        let engineering = syncUps[0]
        #expect(engineering.id.description == "DEADBEEF-DEAD-BEEF-DEAD-BEEFDEADBEEF")
        #expect(engineering.title == "Engineering")
        #expect(engineering.theme == .periwinkle)
        #expect(engineering.duration == .seconds(600))
        #expect(engineering.attendees.map(\.name) == ["Blob", "Blob Jr"])
        #expect(engineering.meetings.first?.date == Date(timeIntervalSince1970: 1_234_567_890))
        #expect(engineering.meetings.first?.transcript == "I completed the project")
        let design = syncUps[1]
        #expect(design.title == "Design / Product")
        #expect(design.attendees.map(\.name) == ["Zoë", "田中 太郎", "Ana & Bob"])
        #expect(design.meetings[0].transcript.hasPrefix("Ça va? Très bien ❌ — “quotes” and \"escapes\" / slashes\nnew"))
        #expect(design.meetings[0].date.timeIntervalSinceReferenceDate == 816_912_345.678_912_3)
        #expect(syncUps[2].meetings.isEmpty)
        #expect(syncUps[2].attendees.map(\.name) == [""])
    }

    @Test func readsTheAppsReleaseFileWithAnyKeyOrder() throws {
        let compact = try SyncUpsFile.decode(try Self.fixture("app-release-compact.json"))
        let pretty = try SyncUpsFile.decode(try Self.fixture("app-debug-pretty.json"))
        #expect(compact == pretty)
    }

    @Test func writesByteForByteWhatTheAppsDebugBuildWrites() throws {
        let bytes = try Self.fixture("app-debug-pretty.json")
        let syncUps = try SyncUpsFile.decode(bytes)
        #expect(SyncUpsFile.encode(syncUps) == bytes)
    }

    @Test func roundTripsWithNothingLost() throws {
        let syncUps = try SyncUpsFile.decode(try Self.fixture("app-release-compact.json"))
        #expect(try SyncUpsFile.decode(SyncUpsFile.encode(syncUps)) == syncUps)
    }

    @Test func writesFilesTheAppsDecoderReads() throws {
        let syncUps = try SyncUpsFile.decode(try Self.fixture("app-release-compact.json"))
        let decoded = try JSONDecoder().decode([App.SyncUp].self, from: Data(SyncUpsFile.encode(syncUps)))
        let expected = try JSONDecoder().decode(
            [App.SyncUp].self,
            from: Data(try Self.fixture("app-release-compact.json"))
        )
        #expect(decoded == expected)
        #expect(decoded[1].meetings[0].date.timeIntervalSinceReferenceDate == 816_912_345.678_912_3)
    }

    @Test func readsWhatTheAppsEncoderWritesForManyRandomSyncUps() throws {
        var generator = SplitMix64.forTest()
        let alphabet = Array("abc XYZ/\\\"\n\t\u{1}é❌日本😀")
        func text() -> String {
            String(
                (0..<Int.random(in: 0...20, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
        }
        func uuid() -> UUID {
            let hex = [generator.next(), generator.next()].map {
                let digits = String($0, radix: 16, uppercase: true)
                return String(repeating: "0", count: 16 - digits.count) + digits
            }.joined()
            var text = ""
            for (index, digit) in hex.enumerated() {
                if [8, 12, 16, 20].contains(index) { text.append("-") }
                text.append(digit)
            }
            return UUID(uuidString: text)!
        }
        let appSyncUps = (0..<50).map { _ in
            App.SyncUp(
                id: uuid(),
                attendees: (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                    App.Attendee(id: uuid(), name: text())
                },
                duration: .seconds(Int.random(in: 1...86_400, using: &generator))
                    + .milliseconds(Int.random(in: 0...999, using: &generator)),
                meetings: (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                    App.Meeting(
                        id: uuid(),
                        date: Date(timeIntervalSinceReferenceDate: .random(in: 0...1e9, using: &generator)),
                        transcript: text()
                    )
                },
                theme: Theme.allCases.randomElement(using: &generator)!.rawValue,
                title: text()
            )
        }
        for formatting in [JSONEncoder.OutputFormatting(), [.prettyPrinted, .sortedKeys]] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = formatting
            let appBytes = [UInt8](try encoder.encode(appSyncUps))
            let ours = try SyncUpsFile.decode(appBytes)
            #expect(ours.map(\.title) == appSyncUps.map(\.title), "\(generator)")
            #expect(ours.map(\.duration) == appSyncUps.map(\.duration), "\(generator)")
            #expect(
                ours.map { $0.meetings.map(\.date) } == appSyncUps.map { $0.meetings.map(\.date) }, "\(generator)")
            let back = try JSONDecoder().decode([App.SyncUp].self, from: Data(SyncUpsFile.encode(ours)))
            #expect(back == appSyncUps, "\(generator)")
            if formatting == [.prettyPrinted, .sortedKeys] {
                #expect(SyncUpsFile.encode(ours) == appBytes, "\(generator)")
            }
        }
    }

    @Test func incrementalEncoderWritesWhatAFullEncodeWritesAfterEveryKindOfEdit() throws {
        var state = try SyncUpsFile.decode(try Self.fixture("app-debug-pretty.json"))
        state += (0..<4).map { SyncUp.realistic(index: $0, meetingCount: 2, transcriptBytes: 40) }
        let edits: [(String, (inout [SyncUp]) -> Void)] = [
            ("nothing", { _ in }),
            ("a title", { $0[1].title = "Renamed & \"quoted\" ❌" }),
            (
                "a meeting at index 0",
                {
                    $0[2].meetings.insert(
                        Meeting(
                            id: Meeting.ID(UUID(counting: 77)), date: Date(timeIntervalSince1970: 1e9),
                            transcript: "Blob: hi"),
                        at: 0)
                }
            ),
            ("an attendee's name", { $0[3].attendees[0].name = "Zoë" }),
            ("the duration", { $0[0].duration = .seconds(61) }),
            ("the theme", { $0[4].theme = .yellow }),
            ("the order", { $0.swapAt(0, 5) }),
            ("a deletion", { $0.remove(at: 2) }),
            ("an insertion with a reused id", { $0.append(SyncUp.fixture(seed: 9, title: "New")) }),
            ("the same title again", { $0[1].title = "Renamed" }),
            ("everything", { $0 = [] }),
            ("a sync-up back after deletion", { $0 = [SyncUp.realistic(index: 1)] }),
        ]
        var encoder = SyncUpsFileEncoder()
        for (name, edit) in edits {
            edit(&state)
            let output = Array(encoder.encode(state).joined())
            // Against Foundation's encoder over the app's models, which shares no code with ours.
            let expected = try App.debugFile(state)
            #expect(Self.firstDifference(output, expected) == nil, "after editing \(name)")
        }
    }

    @Test func incrementalEncoderReusesTheBytesOfUnchangedSyncUps() {
        var state = (0..<5).map { SyncUp.realistic(index: $0) }
        var encoder = SyncUpsFileEncoder()
        let first = encoder.encode(state)
        state[3].title += "!"
        let second = encoder.encode(state)
        func storage(_ piece: [UInt8]) -> UnsafePointer<UInt8>? { piece.withUnsafeBufferPointer { $0.baseAddress } }
        // Pieces alternate punctuation and sync-ups: the sync-ups are at the odd indices.
        #expect([1, 3, 5, 9].allSatisfy { storage(first[$0]) == storage(second[$0]) })
        #expect(storage(first[7]) != storage(second[7]))
    }

    /// The offset where two files first differ (or where the shorter ends); nil if they are equal.
    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
        if let index = (0..<min(a.count, b.count)).first(where: { a[$0] != b[$0] }) { return index }
        return a.count == b.count ? nil : min(a.count, b.count)
    }

    @Test func treatsAnEmptyFileAsNoSyncUps() throws {
        #expect(try SyncUpsFile.decode([]) == [])
        #expect(try SyncUpsFile.decode(Array(" \n".utf8)) == [])
        #expect(try SyncUpsFile.decode(Array("[]".utf8)) == [])
    }

    @Test(arguments: [
        ("{}", "expected an array, got an object"),
        ("[1]", "[0]: expected an object, got a number"),
        (#"[{"id":"x"}]"#, #"[0].id: "x" is not a UUID"#),
        (#"[{"id":"00000000-0000-0000-0000-000000000001"}]"#, #"[0]: missing key "attendees""#),
        ("[{", "not valid JSON: unexpected end of input in object, expected a string key at byte 2"),
    ])
    func explainsWhereAFileIsWrong(text: String, message: String) {
        #expect(throws: SyncUpsFileError.self) { try SyncUpsFile.decode(Array(text.utf8)) }
        do {
            _ = try SyncUpsFile.decode(Array(text.utf8))
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func explainsWhereAFieldHasTheWrongType() {
        let id = "00000000-0000-0000-0000-00000000000A"
        let good = "[" + Self.syncUpJSON(id: id, attendeeIDs: [id], meetingIDs: [id]) + "]"
        func edited(_ old: String, _ new: String) -> String { good.replacingOccurrences(of: old, with: new) }
        let repeated = edited(#""title":"T""#, #""title":"T","title":"U""#)
        let repeatedOffset = repeated.utf8.count - #""title":"U"}]"#.utf8.count
        let cases = [
            (edited(#""id":"\#(id)","a"#, #""id":7,"a"#), "[0].id: expected a string, got a number"),
            (edited(#""date":1"#, #""date":"1""#), "[0].meetings[0].date: expected a number, got a string"),
            (edited(#""name":"A""#, #""name":null"#), "[0].attendees[0].name: expected a string, got null"),
            (
                edited("[0,6000000000000000000]", "[1,2,3]"),
                "[0].duration: expected [high, low] attosecond halves (Int64, UInt64)"
            ),
            (repeated, "not valid JSON: duplicate key \"title\" at byte \(repeatedOffset)"),
            (#"[{"id":7,"#, "not valid JSON: unexpected end of input in object, expected a string key at byte 9"),
            (
                good + " x",
                "not valid JSON: unexpected character 'x' after the JSON value at byte \(good.utf8.count + 1)"
            ),
        ]
        for (text, message) in cases {
            do {
                _ = try SyncUpsFile.decode(Array(text.utf8))
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.description == message)
            }
        }
    }

    /// What the app writes is plain ASCII keys and upper-case UUIDs, but any valid JSON of the same content
    /// is the same file: escaped keys and UUIDs, other characters, and keys the app does not know (skipped,
    /// as synthesized `Codable` skips them).
    @Test func readsEveryValidSpellingOfTheSameFile() throws {
        let id = "00000000-0000-0000-0000-00000000000A"
        let plain = try SyncUpsFile.decode(
            Array("[\(Self.syncUpJSON(id: id, attendeeIDs: [id], meetingIDs: [id]))]".utf8))
        let spelled =
            #"[{"extra":{"nested":[1,{"x":null}]},"\u0069d":"00000000-0000-0000-0000-00000000000\u0041","#
            + #""attendees":[{"id":"\#(id.lowercased())","name":"A","role":"x"}],"#
            + #""duration":[0,6000000000000000000],"meetings":[{"id":"\#(id)","date":1.0,"transcript":"","t\u00e9":1}],"#
            + #""theme":"sky","title":"\u0054"}]"#
        #expect(try SyncUpsFile.decode(Array(spelled.utf8)) == plain)
    }

    static func syncUpJSON(id: String, attendeeIDs: [String] = [], meetingIDs: [String] = [], theme: String = "sky")
        -> String
    {
        let attendees = attendeeIDs.map { #"{"id":"\#($0)","name":"A"}"# }.joined(separator: ",")
        let meetings = meetingIDs.map { #"{"id":"\#($0)","date":1,"transcript":""}"# }.joined(separator: ",")
        return
            #"{"id":"\#(id)","attendees":[\#(attendees)],"duration":[0,6000000000000000000],"meetings":[\#(meetings)],"theme":"\#(theme)","title":"T"}"#
    }

    @Test func rejectsDuplicateIDsAsTheAppDoes() {
        let a = "00000000-0000-0000-0000-00000000000A"
        let b = "00000000-0000-0000-0000-00000000000B"
        let cases = [
            ("[\(Self.syncUpJSON(id: a)),\(Self.syncUpJSON(id: a.lowercased()))]", "[1].id: duplicate sync-up id \(a)"),
            ("[\(Self.syncUpJSON(id: a, attendeeIDs: [b, b]))]", "[0].attendees[1].id: duplicate attendee id \(b)"),
            ("[\(Self.syncUpJSON(id: a, meetingIDs: [b, b]))]", "[0].meetings[1].id: duplicate meeting id \(b)"),
            ("[\(Self.syncUpJSON(id: a, theme: "appOrange"))]", #"[0].theme: unknown theme "appOrange""#),
        ]
        for (text, message) in cases {
            #expect(throws: SyncUpsFileError.self) { try SyncUpsFile.decode(Array(text.utf8)) }
            do { _ = try SyncUpsFile.decode(Array(text.utf8)) } catch { #expect(error.description == message) }
        }
    }
}
