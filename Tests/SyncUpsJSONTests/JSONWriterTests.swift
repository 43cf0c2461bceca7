import SyncUpsJSON
import SyncUpsTestSupport
import Testing

@Suite struct JSONWriterTests {
    @Test func writesCompactTextInInsertionOrder() {
        let value: JSONValue = ["z": 1, "a": [true, nil, "x/y"], "m": [:]]
        #expect(JSONWriter().string(value) == #"{"z":1,"a":[true,null,"x/y"],"m":{}}"#)
    }

    @Test func writesApplesPrettyLayoutInInsertionOrder() {
        let value: JSONValue = ["a": "x/y", "b": [1, 2], "c": [], "d": [:]]
        let expected = """
            {
              "a" : "x/y",
              "b" : [
                1,
                2
              ],
              "c" : [

              ],
              "d" : {

              }
            }
            """
        #expect(JSONWriter(options: JSONWriter.Options(isPretty: true)).string(value) == expected)
    }

    @Test(arguments: [
        (256_260_690.0, "256260690"),
        (800_000_000.123456, "800000000.123456"),
        (1e20, "1e+20"),
        (1e-7, "1e-07"),
        (-5.5, "-5.5"),
        (3e15, "3000000000000000"),
        (1e16, "1e+16"),
        (-0.0, "-0"),
        (816_912_345.678_912_34, "816912345.6789123"),
    ])
    func writesDoublesAsFoundationDoes(value: Double, text: String) {
        #expect(JSONWriter().string(.double(value)) == text)
    }

    @Test func writesLargeUnsignedIntegersExactly() {
        #expect(
            JSONWriter().string([.number(.uint(UInt64.max)), .number(.int(Int64.min))])
                == "[18446744073709551615,-9223372036854775808]")
    }

    @Test func escapesControlCharactersQuotesAndBackslashesOnly() {
        let value = JSONValue.string("\u{1f}\u{8}\u{c}\r\n\t\u{7f}\u{0}\"\\é❌\u{2028}")
        #expect(JSONWriter().string(value) == "\"\\u001f\\b\\f\\r\\n\\t\u{7f}\\u0000\\\"\\\\é❌\u{2028}\"")
    }

    @Test func roundTripsThroughTheParser() throws {
        let value: JSONValue = [
            "s": "Ça va? \"quoted\" \\ / ❌ 😀 \u{0}",
            "n": [0, -1, 1.5, .number(.uint(UInt64.max)), 1e300],
            "o": ["nested": [[], [:], nil, false]],
        ]
        for options in [JSONWriter.Options.compact, JSONWriter.Options(isPretty: true)] {
            let text = JSONWriter(options: options).encode(value)
            #expect(try JSONParser().parse(text) == value)
        }
    }

    /// The writer skips eight bytes at a time; escapes at every position of a word, and at the ends, must be
    /// written exactly as a byte-by-byte writer would.
    @Test(arguments: [false, true])
    func escapesAtEveryPositionOfAWord(escapesSlashes: Bool) throws {
        let specials: [Character] = ["\"", "\\", "/", "\n", "\u{01}", "\u{1F}", "é", "€", "a"]
        var generator = SplitMix64.forTest()
        for length in 0..<40 {
            for _ in 0..<20 {
                var text = ""
                for _ in 0..<length {
                    text.append(Bool.random(using: &generator) ? "x" : specials.randomElement(using: &generator)!)
                }
                var written: [UInt8] = []
                JSONWriter.writeString(text, into: &written, escapesSlashes: escapesSlashes)
                #expect(
                    written == reference(text, escapesSlashes: escapesSlashes), "\(text.debugDescription), \(generator)"
                )
                #expect(try JSONParser().parse(written) == .string(text), "\(generator)")
            }
        }
    }

    private func reference(_ text: String, escapesSlashes: Bool) -> [UInt8] {
        var output: [UInt8] = [0x22]
        for byte in text.utf8 {
            switch byte {
            case 0x22: output += Array(#"\""#.utf8)
            case 0x5C: output += Array(#"\\"#.utf8)
            case 0x2F where escapesSlashes: output += Array(#"\/"#.utf8)
            case 0x08: output += Array(#"\b"#.utf8)
            case 0x0C: output += Array(#"\f"#.utf8)
            case 0x0A: output += Array(#"\n"#.utf8)
            case 0x0D: output += Array(#"\r"#.utf8)
            case 0x09: output += Array(#"\t"#.utf8)
            case ..<0x20: output += Array("\\u00".utf8) + Array(String(format2Hex: byte).utf8)
            default: output.append(byte)
            }
        }
        return output + [0x22]
    }
}

extension String {
    fileprivate init(format2Hex byte: UInt8) {
        let digits = Array("0123456789abcdef")
        self = String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
