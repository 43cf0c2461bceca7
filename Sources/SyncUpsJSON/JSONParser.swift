/// Why a JSON text was rejected, and where.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, in words meant for the person who wrote the text.
    public var reason: String
    /// The offset of the offending byte from the start of the text.
    public var offset: Int

    public init(_ reason: String, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "\(reason) at byte \(offset)" }

    /// The parse was given up: `JSONParser.parse(_:while:)`'s `stillWanted` said no.
    static let abandonedReason = "abandoned: nobody waits for it"
    public var isAbandoned: Bool { reason == Self.abandonedReason }
}

/// A strict RFC 8259 parser with limits, used for every JSON text syncupsd reads.
///
/// Strict: invalid UTF-8, raw control characters in strings, unpaired surrogates, duplicate object keys and
/// trailing garbage are errors rather than silently repaired, so a client or an editor hears about its mistake.
public struct JSONParser: Sendable {
    /// The deepest nesting of arrays and objects accepted; deeper input is an error, not a stack overflow.
    public var maxDepth: Int

    public init(maxDepth: Int = 64) {
        self.maxDepth = maxDepth
    }

    /// Parses one JSON value that makes up the whole of `bytes` (surrounding whitespace allowed).
    public func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> =
            bytes.withContiguousStorageIfAvailable { buffer in
                parse(buffer: UnsafeRawBufferPointer(buffer))
            } ?? Array(bytes).withUnsafeBytes { parse(buffer: $0) }
        return try result.get()
    }

    /// Parses one JSON value from a string.
    public func parse(_ string: String) throws(JSONParseError) -> JSONValue {
        var string = string
        let result = string.withUTF8 { parse(buffer: UnsafeRawBufferPointer($0)) }
        return try result.get()
    }

    /// Parses `bytes` as `parse` does, asking `stillWanted` each time another `JSONScanner.checkpointBytes` of
    /// a list's elements were read: once it says no, the parse stops there with an error that `isAbandoned`
    /// (a reply whose client left gives up a 20 MB parse within a megabyte).
    public func parse(_ bytes: [UInt8], while stillWanted: () -> Bool) throws(JSONParseError) -> JSONValue {
        try withoutActuallyEscaping(stillWanted) { stillWanted in
            bytes.withUnsafeBytes { parse(buffer: $0, stillWanted: stillWanted) }
        }.get()
    }

    /// Parses one JSON value from raw memory.
    public func parse(buffer: UnsafeRawBufferPointer) -> Result<JSONValue, JSONParseError> {
        parse(buffer: buffer, stillWanted: nil)
    }

    private func parse(buffer: UnsafeRawBufferPointer, stillWanted: (() -> Bool)?) -> Result<JSONValue, JSONParseError>
    {
        var reader = JSONScanner(bytes: buffer, maxDepth: maxDepth)
        reader.stillWanted = stillWanted
        do throws(JSONParseError) {
            reader.skipWhitespace()
            let value = try reader.parseValue(depth: 0)
            reader.skipWhitespace()
            if reader.index < buffer.count {
                throw JSONParseError("unexpected \(reader.describeCurrent()) after the JSON value", at: reader.index)
            }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }
}

// MARK: - Scanner

private let quote = UInt8(ascii: "\"")
private let backslash = UInt8(ascii: "\\")

/// The parser's reading position over a buffer, with its primitives public so a decoder for one known
/// schema (`sync-ups.json`) can read straight into its types without building a `JSONValue` tree first.
/// The buffer must outlive the scanner.
public struct JSONScanner {
    public let bytes: UnsafeRawBufferPointer
    public let maxDepth: Int
    public var index = 0
    /// Asked each time another `checkpointBytes` of a list's elements were read; when it says no, the parse
    /// stops (`JSONParseError.isAbandoned`). Nil: never asked.
    public var stillWanted: (() -> Bool)? {
        didSet { nextCheckpoint = stillWanted == nil ? .max : index + Self.checkpointBytes }
    }
    public static let checkpointBytes = 1 << 20
    private var nextCheckpoint = Int.max

    public init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    public var isAtEnd: Bool { index >= bytes.count }

    /// The byte at the position, or nil at the end.
    public var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// Skips whitespace, then consumes `byte` if it is next; returns whether it was.
    public mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Consumes `"name"` if it is next, spelled exactly so (no escapes); for matching known keys without
    /// building a String.
    public mutating func consumeKey(_ name: StaticString) -> Bool {
        let count = name.utf8CodeUnitCount
        guard index + count + 2 <= bytes.count, bytes[index] == quote, bytes[index + count + 1] == quote else {
            return false
        }
        for offset in 0..<count where bytes[index + 1 + offset] != name.utf8Start[offset] { return false }
        index += count + 2
        return true
    }

    /// The byte at the position, described for an error message ("character 'x'", "end of input").
    public func describeCurrent() -> String {
        guard index < bytes.count else { return "end of input" }
        let byte = bytes[index]
        if byte >= 0x20 && byte < 0x7F { return "character '\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    public mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    public mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw JSONParseError("unexpected end of input, expected a value", at: index) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return .object(try parseObject(depth: depth + 1))
        case UInt8(ascii: "["): return .array(try parseArray(depth: depth + 1))
        case quote: return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        default:
            throw JSONParseError("unexpected \(describeCurrent()), expected a value", at: index)
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw JSONParseError("invalid literal", at: start) }
        let base = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != base[offset] {
            throw JSONParseError("invalid literal", at: start)
        }
        index += count
    }

    mutating func checkpoint() throws(JSONParseError) {
        nextCheckpoint = index + Self.checkpointBytes
        if stillWanted?() == false { throw JSONParseError(JSONParseError.abandonedReason, at: index) }
    }

    mutating func enter(_ depth: Int) throws(JSONParseError) {
        if depth > maxDepth { throw JSONParseError("nesting deeper than \(maxDepth) levels", at: index) }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> [JSONValue] {
        try enter(depth)
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
            index += 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            if index >= nextCheckpoint { try checkpoint() }
            skipWhitespace()
            guard index < bytes.count else { throw JSONParseError("unterminated array", at: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return elements
            default: throw JSONParseError("unexpected \(describeCurrent()) in array, expected ',' or ']'", at: index)
            }
        }
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONObject {
        try enter(depth)
        index += 1  // {
        var members: [JSONObject.Member] = []
        var seenKeys: Set<String>? = nil  // only for large objects, where a linear duplicate scan would be quadratic
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
            index += 1
            return JSONObject(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == quote else {
                throw JSONParseError("unexpected \(describeCurrent()) in object, expected a string key", at: index)
            }
            let keyOffset = index
            let key = try parseString()
            if members.count < 16 {
                if members.contains(where: { $0.key == key }) {
                    throw JSONParseError("duplicate key \(ErrorQuote.quoted(key))", at: keyOffset)
                }
            } else {
                if seenKeys == nil { seenKeys = Set(members.map(\.key)) }
                if !seenKeys!.insert(key).inserted {
                    throw JSONParseError("duplicate key \(ErrorQuote.quoted(key))", at: keyOffset)
                }
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw JSONParseError("unexpected \(describeCurrent()) after object key, expected ':'", at: index)
            }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append(JSONObject.Member(key: key, value: value))
            skipWhitespace()
            guard index < bytes.count else { throw JSONParseError("unterminated object", at: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return JSONObject(members)
            default: throw JSONParseError("unexpected \(describeCurrent()) in object, expected ',' or '}'", at: index)
            }
        }
    }

    // MARK: Strings

    public mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        index += 1  // opening quote
        let contentStart = index
        // Fast path: no escapes, so the bytes are the string. Eight bytes at a time while they hold no quote,
        // backslash or control character (transcripts are long, and start-up reads thousands of them).
        var sawNonASCII = false
        if let base = bytes.baseAddress {
            while index + 8 <= bytes.count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                guard !Self.hasSpecialByte(word) else { break }
                if word & 0x8080_8080_8080_8080 != 0 { sawNonASCII = true }
                index += 8
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == quote {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[contentStart..<index])
                index += 1
                if !sawNonASCII { return String(decoding: slice, as: UTF8.self) }  // ASCII needs no validation
                guard let string = String(validating: slice, as: UTF8.self) else {
                    throw JSONParseError("invalid UTF-8 in string", at: invalidUTF8Offset(slice, base: contentStart))
                }
                return string
            }
            if byte == backslash { break }
            if byte < 0x20 { throw JSONParseError("control character 0x\(hex(byte)) in string (escape it)", at: index) }
            if byte >= 0x80 { sawNonASCII = true }
            index += 1
        }
        guard index < bytes.count else { throw JSONParseError("unterminated string", at: start) }
        return try parseEscapedString(start: start, contentStart: contentStart)
    }

    /// True when one of the eight bytes is `"`, `\` or below 0x20 (the classic "has zero byte" bit trick).
    @inline(__always)
    static func hasSpecialByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZero(_ value: UInt64) -> Bool { (value &- ones) & ~value & highs != 0 }
        let isQuote = hasZero(word ^ (ones &* UInt64(quote)))
        let isBackslash = hasZero(word ^ (ones &* UInt64(backslash)))
        let isControl = (word &- ones &* 0x20) & ~word & highs != 0
        return isQuote || isBackslash || isControl
    }

    mutating func parseEscapedString(start: Int, contentStart: Int) throws(JSONParseError) -> String {
        var utf8: [UInt8] = Array(UnsafeRawBufferPointer(rebasing: bytes[contentStart..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case quote:
                index += 1
                guard let string = String(validating: utf8, as: UTF8.self) else {
                    throw JSONParseError("invalid UTF-8 in string", at: start)
                }
                return string
            case backslash:
                index += 1
                guard index < bytes.count else { throw JSONParseError("unterminated string", at: start) }
                let escape = bytes[index]
                index += 1
                switch escape {
                case quote: utf8.append(quote)
                case backslash: utf8.append(backslash)
                case UInt8(ascii: "/"): utf8.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try parseUnicodeEscape()
                    utf8.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    throw JSONParseError(
                        "invalid escape '\\\(Character(Unicode.Scalar(escape)))' in string", at: index - 2)
                }
            default:
                if byte < 0x20 {
                    throw JSONParseError("control character 0x\(hex(byte)) in string (escape it)", at: index)
                }
                utf8.append(byte)
                index += 1
            }
        }
        throw JSONParseError("unterminated string", at: start)
    }

    /// Reads the XXXX of `\uXXXX` (the `\u` already consumed), joining a surrogate pair into one scalar.
    mutating func parseUnicodeEscape() throws(JSONParseError) -> Unicode.Scalar {
        let escapeStart = index - 2
        let first = try parseHex4()
        if (0xD800...0xDBFF).contains(first) {
            guard bytes.count - index >= 6, bytes[index] == backslash, bytes[index + 1] == UInt8(ascii: "u") else {
                throw JSONParseError("unpaired surrogate \\u\(hex16(first)) in string", at: escapeStart)
            }
            index += 2
            let second = try parseHex4()
            guard (0xDC00...0xDFFF).contains(second) else {
                throw JSONParseError("unpaired surrogate \\u\(hex16(first)) in string", at: escapeStart)
            }
            let value = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
            return Unicode.Scalar(value)!
        }
        guard let scalar = Unicode.Scalar(UInt32(first)) else {
            throw JSONParseError("unpaired surrogate \\u\(hex16(first)) in string", at: escapeStart)
        }
        return scalar
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        guard bytes.count - index >= 4 else { throw JSONParseError("truncated \\u escape", at: index) }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError("invalid hex digit in \\u escape", at: index)
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    func invalidUTF8Offset(_ slice: UnsafeRawBufferPointer, base: Int) -> Int {
        var iterator = slice.makeIterator()
        var decoder = UTF8()
        var offset = 0
        var consumed = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                consumed += UTF8.width(scalar)
                offset = consumed
            case .emptyInput: return base + offset
            case .error: return base + offset
            }
        }
    }

    // MARK: Numbers

    public mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        var isNegative = false
        // Callers may reach here at the end of the input (the file's fast decoder does, on a truncated file).
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            isNegative = true
            index += 1
        }
        guard index < bytes.count, isDigit(bytes[index]) else {
            throw JSONParseError("invalid number: expected a digit", at: index)
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count && isDigit(bytes[index]) {
                throw JSONParseError("invalid number: leading zero", at: start)
            }
        } else {
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        var isInteger = true
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw JSONParseError("invalid number: expected a digit after '.'", at: index)
            }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            isInteger = false
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw JSONParseError("invalid number: expected a digit in the exponent", at: index)
            }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        let text = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
        if isInteger {
            if let value = parseInteger(text, isNegative: isNegative) { return value }
        }
        guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else {
            throw JSONParseError("number out of range", at: start)
        }
        return .double(value)
    }

    /// Exact integer parsing; nil when the integer does not fit 64 bits (it then becomes a Double).
    func parseInteger(_ text: UnsafeRawBufferPointer, isNegative: Bool) -> JSONNumber? {
        var magnitude: UInt64 = 0
        for byte in text.dropFirst(isNegative ? 1 : 0) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            magnitude = sum
        }
        if isNegative {
            if magnitude <= UInt64(Int64.max) { return .int(-Int64(magnitude)) }
            if magnitude == UInt64(Int64.max) + 1 { return .int(Int64.min) }
            return nil
        }
        if magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
        return .uint(magnitude)
    }
}

private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
private func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return digits.count == 1 ? "0" + digits : digits
}
private func hex16(_ value: UInt16) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: 4 - digits.count) + digits
}
