/// Serialises `JSONValue`s: compactly for the wire, or indented for files people read (meeting details,
/// exports). `sync-ups.json` has its own writer, `SyncUpsFileEncoder`, in Apple's exact layout.
public struct JSONWriter: Sendable {
    /// How the text is laid out.
    public struct Options: Sendable, Equatable {
        /// Two-space indent, `"key" : value`, one array element per line (Apple's `.prettyPrinted` layout).
        public var isPretty: Bool

        public init(isPretty: Bool = false) {
            self.isPretty = isPretty
        }

        /// One line, members in insertion order: the socket protocol's form.
        public static let compact = Options()
    }

    public var options: Options

    public init(options: Options = .compact) {
        self.options = options
    }

    /// The UTF-8 text of `value`.
    public func encode(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(value, into: &output)
        return output
    }

    /// The text of `value` as a `String`.
    public func string(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    /// Appends the text of `value` to `output`.
    public func write(_ value: JSONValue, into output: inout [UInt8]) {
        write(value, into: &output, indent: 0)
    }

    private func write(_ value: JSONValue, into output: inout [UInt8], indent: Int) {
        switch value {
        case .null: output.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let flag): JSONWriter.appendASCII(flag ? "true" : "false", to: &output)
        case .number(let number): JSONWriter.writeNumber(number, into: &output)
        case .string(let string): JSONWriter.writeString(string, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            if options.isPretty {
                output.append(0x0A)
                for (offset, element) in elements.enumerated() {
                    if offset > 0 { output.append(contentsOf: [UInt8(ascii: ","), 0x0A]) }
                    appendIndent(indent + 1, to: &output)
                    write(element, into: &output, indent: indent + 1)
                }
                output.append(0x0A)
                appendIndent(indent, to: &output)
            } else {
                for (offset, element) in elements.enumerated() {
                    if offset > 0 { output.append(UInt8(ascii: ",")) }
                    write(element, into: &output, indent: indent)
                }
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            let members = object.members
            if options.isPretty {
                output.append(0x0A)
                for (offset, member) in members.enumerated() {
                    if offset > 0 { output.append(contentsOf: [UInt8(ascii: ","), 0x0A]) }
                    appendIndent(indent + 1, to: &output)
                    JSONWriter.writeString(member.key, into: &output)
                    output.append(contentsOf: [0x20, UInt8(ascii: ":"), 0x20])
                    write(member.value, into: &output, indent: indent + 1)
                }
                output.append(0x0A)
                appendIndent(indent, to: &output)
            } else {
                for (offset, member) in members.enumerated() {
                    if offset > 0 { output.append(UInt8(ascii: ",")) }
                    JSONWriter.writeString(member.key, into: &output)
                    output.append(UInt8(ascii: ":"))
                    write(member.value, into: &output, indent: indent)
                }
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private func appendIndent(_ level: Int, to output: inout [UInt8]) {
        output.append(contentsOf: repeatElement(0x20, count: level * 2))
    }

    // MARK: - Scalars

    /// Appends literal text. Much cheaper than `append(contentsOf: "…".utf8)`, which goes through String's
    /// generic views; it matters on the per-request path.
    @inlinable
    public static func appendASCII(_ text: StaticString, to output: inout [UInt8]) {
        output.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Integers exactly; doubles as Swift's shortest round-trip form without a trailing ".0", as Foundation does.
    public static func writeNumber(_ number: JSONNumber, into output: inout [UInt8]) {
        switch number {
        case .int(let value): appendInteger(value, to: &output)
        case .uint(let value): appendUnsigned(value, to: &output)
        case .double(let value):
            guard value.isFinite else {
                appendASCII("null", to: &output)
                return
            }
            if let exact = Int64(exactly: value), abs(value) < 1e15 {
                appendInteger(exact, to: &output)
                if value == 0 && value.sign == .minus { output.insert(UInt8(ascii: "-"), at: output.count - 1) }
                return
            }
            var text = value.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            output.append(contentsOf: text.utf8)
        }
    }

    public static func appendInteger(_ value: Int64, to output: inout [UInt8]) {
        if value < 0 {
            output.append(UInt8(ascii: "-"))
            appendUnsigned(value.magnitude, to: &output)
        } else {
            appendUnsigned(UInt64(value), to: &output)
        }
    }

    public static func appendUnsigned(_ value: UInt64, to output: inout [UInt8]) {
        if value < 10 {
            output.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch, enough for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { scratch in
            var remaining = value
            while remaining > 0 {
                scratch[23 - count] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
                count += 1
            }
            output.append(contentsOf: scratch[(24 - count)...])
        }
    }

    /// Writes a quoted, escaped string: `"` and `\` escaped, control characters as `\n`-style or `\u00xx`,
    /// everything else (including non-ASCII) as raw UTF-8.
    public static func writeString(_ string: String, into output: inout [UInt8], escapesSlashes: Bool = false) {
        output.append(quote)
        var string = string
        string.withUTF8 { bytes in
            var runStart = 0
            var index = 0
            while index < bytes.count {
                // Eight bytes at a time past text that needs no escape: transcripts are long, and a save of
                // thousands of them was mostly this loop.
                if let base = bytes.baseAddress {
                    while index + 8 <= bytes.count {
                        let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                        if JSONScanner.hasSpecialByte(word) { break }
                        if escapesSlashes && Self.hasByte(word, slash) { break }
                        index += 8
                    }
                }
                guard index < bytes.count else { break }
                let byte = bytes[index]
                index += 1
                guard byte < 0x20 || byte == quote || byte == backslash || (escapesSlashes && byte == slash) else {
                    continue
                }
                if runStart < index - 1 {
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<(index - 1)]))
                }
                runStart = index
                output.append(backslash)
                switch byte {
                case quote: output.append(quote)
                case backslash: output.append(backslash)
                case slash: output.append(slash)
                case 0x08: output.append(UInt8(ascii: "b"))
                case 0x0C: output.append(UInt8(ascii: "f"))
                case 0x0A: output.append(UInt8(ascii: "n"))
                case 0x0D: output.append(UInt8(ascii: "r"))
                case 0x09: output.append(UInt8(ascii: "t"))
                default:
                    output.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    output.append(hexDigits[Int(byte >> 4)])
                    output.append(hexDigits[Int(byte & 0x0F)])
                }
            }
            if runStart < bytes.count { output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...])) }
        }
        output.append(quote)
    }
}

extension JSONWriter {
    /// True when one of the eight bytes of `word` is `byte`.
    @inline(__always)
    static func hasByte(_ word: UInt64, _ byte: UInt8) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let value = word ^ (ones &* UInt64(byte))
        return (value &- ones) & ~value & 0x8080_8080_8080_8080 != 0
    }
}

private let quote = UInt8(ascii: "\"")
private let backslash = UInt8(ascii: "\\")
private let slash = UInt8(ascii: "/")
private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
