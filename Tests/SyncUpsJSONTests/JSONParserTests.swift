import SyncUpsJSON
import Testing

@Suite struct JSONParserTests {
    let parser = JSONParser()

    @Test func parsesEveryKindOfValue() throws {
        let value = try parser.parse(#" {"a": [1, -2, 3.5, true, false, null], "b": {"c": "d"}} "#)
        #expect(value == ["a": [1, -2, 3.5, true, false, nil], "b": ["c": "d"]])
    }

    @Test func keepsObjectMembersInOrder() throws {
        let value = try parser.parse(#"{"z":1,"a":2,"m":3}"#)
        #expect(value.objectValue?.keys == ["z", "a", "m"])
    }

    @Test func parsesUnsignedIntegersAboveDoublePrecisionExactly() throws {
        let value = try parser.parse("[16, 4852094820647174144, 18446744073709551615, -9223372036854775808]")
        #expect(value.arrayValue?[1].numberValue == .uint(4_852_094_820_647_174_144))
        #expect(value.arrayValue?[2].numberValue == .uint(UInt64.max))
        #expect(value.arrayValue?[3].numberValue == .int(Int64.min))
    }

    @Test func turnsIntegersBeyond64BitsIntoDoubles() throws {
        let value = try parser.parse("18446744073709551616")
        #expect(value.numberValue == .double(18_446_744_073_709_551_616))
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let value = try parser.parse(#""a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00""#)
        #expect(value == .string("a\"b\\c/d\u{8}\u{c}\n\r\té😀"))
    }

    /// B10: an error quotes at most `ErrorQuote.excerptLength` characters of the text, escaped: a 700 KB key
    /// repeated made a 700 KB message before (and a meeting whose details said so could not be read).
    @Test func anErrorQuotesAHugeKeyCutShort() {
        let key = String(repeating: "k", count: 700_000)
        do {
            _ = try parser.parse("{\"\(key)\":1,\"\(key)\":2}")
            Issue.record("a repeated key parsed")
        } catch {
            let quoted = String(repeating: "k", count: ErrorQuote.excerptLength)
            #expect(error.description == "duplicate key \"\(quoted)…\" at byte 700006")
        }
        do {
            _ = try parser.parse("{\"a\\n\\\"b\":1,\"a\\n\\\"b\":2}")
        } catch {
            #expect(error.description == #"duplicate key "a\n\"b" at byte 12"#)
        }
    }

    @Test func keepsRawUTF8() throws {
        #expect(try parser.parse("\"Ça va ❌ 日本\"") == .string("Ça va ❌ 日本"))
    }

    @Test(arguments: [
        ("", "unexpected end of input, expected a value at byte 0"),
        ("{", "unexpected end of input in object, expected a string key at byte 1"),
        ("[1,]", "unexpected character ']', expected a value at byte 3"),
        ("{\"a\":1,\"a\":2}", "duplicate key \"a\" at byte 7"),
        ("01", "invalid number: leading zero at byte 0"),
        ("1.", "invalid number: expected a digit after '.' at byte 2"),
        ("1e999", "number out of range at byte 0"),
        ("\"abc", "unterminated string at byte 0"),
        ("\"a\u{1}\"", "control character 0x01 in string (escape it) at byte 2"),
        ("\"\\x\"", "invalid escape '\\x' in string at byte 1"),
        ("\"\\ud800\"", "unpaired surrogate \\uD800 in string at byte 1"),
        ("nul", "invalid literal at byte 0"),
        ("{} x", "unexpected character 'x' after the JSON value at byte 3"),
        ("[1 2]", "unexpected character '2' in array, expected ',' or ']' at byte 3"),
    ])
    func rejectsMalformedTextWithAPreciseMessage(text: String, message: String) {
        #expect(throws: JSONParseError.self) { try parser.parse(text) }
        do {
            _ = try parser.parse(text)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func reportsEndOfInputInObjects() {
        #expect(throws: JSONParseError("unexpected end of input in object, expected a string key", at: 1)) {
            try parser.parse("{")
        }
    }

    @Test func rejectsInvalidUTF8() {
        let bytes: [UInt8] = [0x22, 0x61, 0xFF, 0x62, 0x22]
        #expect(throws: JSONParseError("invalid UTF-8 in string", at: 2)) { try parser.parse(bytes) }
    }

    @Test func rejectsNULOutsideStrings() {
        let bytes: [UInt8] = [0x7B, 0x00, 0x7D]
        #expect(throws: JSONParseError.self) { try parser.parse(bytes) }
    }

    @Test func limitsNestingInsteadOfOverflowingTheStack() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParseError("nesting deeper than 64 levels", at: 64)) { try parser.parse(deep) }
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try parser.parse(ok)
    }

    @Test func findsDuplicateKeysInLargeObjects() {
        let members = (0..<100).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect(throws: JSONParseError.self) { try parser.parse("{\(members),\"k50\":0}") }
    }

    /// A parse nobody waits for any more (a `meetings.get` whose client hung up) stops at its next megabyte of
    /// a list's elements; one still wanted is asked once a megabyte and parses whole.
    @Test func aParseNoLongerWantedStopsAtItsNextMegabyte() throws {
        let element = #"{"word":"word","start":0.5,"end":0.6}"#
        let bytes = Array(("[" + Array(repeating: element, count: 150_000).joined(separator: ",") + "]").utf8)
        var asks = 0
        let value = try parser.parse(bytes) {
            asks += 1
            return true
        }
        #expect(value.arrayValue?.count == 150_000)
        #expect(asks == bytes.count / JSONScanner.checkpointBytes, "\(bytes.count) bytes")
        asks = 0
        do {
            _ = try parser.parse(bytes) {
                asks += 1
                return asks < 2
            }
            Issue.record("parsed whole")
        } catch {
            #expect(error.isAbandoned, "\(error)")
            #expect(asks == 2)
            // Past the second megabyte by less than one element for each ask.
            #expect((2 << 20..<(2 << 20) + 2 * (element.utf8.count + 1)).contains(error.offset), "\(error.offset)")
        }
    }
}
