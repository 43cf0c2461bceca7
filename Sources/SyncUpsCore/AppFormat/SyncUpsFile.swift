import FoundationEssentials
import SyncUpsJSON

/// The `sync-ups.json` format, byte-compatible with the SyncUps app's `Codable` encoding.
///
/// The app stores `IdentifiedArrayOf<SyncUp>` with synthesized `Codable`: a bare array; UUIDs as upper-case
/// strings; `Duration` as `[high, low]`; `Date` as seconds since 2001-01-01. Decoding is as strict as the app's:
/// every key is required and duplicate ids are an error, so a file this accepts is a file the app accepts;
/// keys the app does not know are skipped, as synthesized `Codable` skips them.
///
/// One reader and one writer: `decode` reads the bytes straight into model values (no `JSONValue` tree in
/// between), `SyncUpsFileEncoder` writes them straight to bytes. Both are schema-specific rather than a
/// tree plus a general codec because start-up and every save go through them: in `make bench`'s store
/// table (2026-12) a load of 10,000 sync-ups (118 MB) took 585 ms and a save after one new meeting 143 ms.
public enum SyncUpsFile {
    /// Decodes a whole file. An empty file (or one of only whitespace) is an empty list, as the app treats it.
    public static func decode(_ bytes: [UInt8]) throws(SyncUpsFileError) -> [SyncUp] {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(SyncUpsFileError) in try decode(buffer: buffer) }
        }
        return try result.get()
    }

    /// Decodes a whole file from memory (a mapped file, say).
    public static func decode(buffer: UnsafeRawBufferPointer) throws(SyncUpsFileError) -> [SyncUp] {
        var decoder = FileDecoder(scanner: JSONScanner(bytes: buffer, maxDepth: FileDecoder.maxDepth))
        do {
            return try decoder.file()
        } catch {
            switch error {
            case .schema(let error):
                // A text that is not JSON at all (a truncated save, say) is reported as that, not as the
                // first field that looks wrong before the break: the whole text is checked on this error path.
                if case .failure(let syntax) = JSONParser(maxDepth: FileDecoder.maxDepth).parse(buffer: buffer) {
                    throw SyncUpsFileError(path: "", reason: "not valid JSON: \(syntax)")
                }
                throw error
            case .syntax(let error): throw SyncUpsFileError(path: "", reason: "not valid JSON: \(error)")
            }
        }
    }

    /// Encodes sync-ups as the app's Debug build does (`[.prettyPrinted, .sortedKeys]`); the app reads it back.
    /// The store keeps one `SyncUpsFileEncoder` across saves instead, to reuse unchanged sync-ups' bytes.
    public static func encode(_ syncUps: [SyncUp]) -> [UInt8] {
        var encoder = SyncUpsFileEncoder()
        return Array(encoder.encode(syncUps).joined())
    }
}

/// Why a `sync-ups.json` could not be read, naming the place in the document (`[2].meetings[0].date`).
public struct SyncUpsFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}

// MARK: - Decoding

private enum FileDecodingError: Error {
    /// The text is not JSON: the scanner's message, with its byte offset.
    case syntax(JSONParseError)
    /// The JSON is not a sync-ups file: what is wrong, and where in the document.
    case schema(SyncUpsFileError)
}

/// Where in the document a value is, built into a string only for an error message.
private enum Place {
    case syncUp(Int)
    case attendee(Int, Int)
    case meeting(Int, Int)

    func path(_ field: String? = nil) -> String {
        let base =
            switch self {
            case .syncUp(let index): "[\(index)]"
            case .attendee(let syncUp, let index): "[\(syncUp)].attendees[\(index)]"
            case .meeting(let syncUp, let index): "[\(syncUp)].meetings[\(index)]"
            }
        return field.map { "\(base).\($0)" } ?? base
    }
}

/// Reads the file over a `JSONScanner`. Keys and UUIDs, plain ASCII in every file the app writes, are
/// matched as raw bytes; anything else (escapes, other characters, keys the app never writes) takes the
/// scanner's general string and value parsing, so every valid JSON text gets the same answer.
private struct FileDecoder {
    /// As deep as Foundation's `JSONDecoder` reads (512), for values under keys the app does not know.
    static let maxDepth = 512

    var scanner: JSONScanner

    func schema(_ place: Place?, _ field: String? = nil, _ reason: String) -> FileDecodingError {
        .schema(SyncUpsFileError(path: place?.path(field) ?? "", reason: reason))
    }

    func syntax(_ reason: String) -> FileDecodingError {
        .syntax(JSONParseError(reason, at: scanner.index))
    }

    /// What kind of value starts at the position, for "expected …, got …"; a syntax error if none does.
    mutating func typeName() throws(FileDecodingError) -> String {
        scanner.skipWhitespace()
        switch scanner.current ?? 0 {
        case UInt8(ascii: "{"): return "an object"
        case UInt8(ascii: "["): return "an array"
        case UInt8(ascii: "\""): return "a string"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "a boolean"
        case UInt8(ascii: "n"): return "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return "a number"
        default: throw syntax("unexpected \(scanner.describeCurrent()), expected a value")
        }
    }

    /// Parses and drops the value at the position (a key the app does not write).
    mutating func skipValue(depth: Int) throws(FileDecodingError) {
        scanner.skipWhitespace()
        do {
            _ = try scanner.parseValue(depth: depth)
        } catch {
            throw .syntax(error)
        }
    }

    /// Calls `body` with each element's index; `body` reads the element.
    mutating func array(
        at place: Place?, _ field: String? = nil, _ body: (inout FileDecoder, Int) throws(FileDecodingError) -> Void
    ) throws(FileDecodingError) {
        guard scanner.consume(UInt8(ascii: "[")) else {
            throw schema(place, field, "expected an array, got \(try typeName())")
        }
        if scanner.consume(UInt8(ascii: "]")) { return }
        var index = 0
        while true {
            try body(&self, index)
            index += 1
            if scanner.consume(UInt8(ascii: ",")) { continue }
            if scanner.consume(UInt8(ascii: "]")) { return }
            throw syntax(
                scanner.isAtEnd
                    ? "unterminated array" : "unexpected \(scanner.describeCurrent()) in array, expected ',' or ']'")
        }
    }

    /// Calls `body` with each member's key; `body` reads the value. A key given twice is an error, as the
    /// parser makes it everywhere else.
    mutating func object(
        at place: Place, _ body: (inout FileDecoder, Key) throws(FileDecodingError) -> Void
    ) throws(FileDecodingError) {
        guard scanner.consume(UInt8(ascii: "{")) else {
            throw schema(place, nil, "expected an object, got \(try typeName())")
        }
        if scanner.consume(UInt8(ascii: "}")) { return }
        var seenKeys: UInt16 = 0
        var seenOthers = Set<[UInt8]>()  // by bytes, in a set: see `RequestReader.otherKeys`
        while true {
            scanner.skipWhitespace()
            guard scanner.current == UInt8(ascii: "\"") else {
                throw syntax("unexpected \(scanner.describeCurrent()) in object, expected a string key")
            }
            let keyOffset = scanner.index
            let (key, name) = try self.key()
            let isRepeated: Bool
            if key == .other {
                isRepeated = !seenOthers.insert(Array(name.utf8)).inserted
            } else {
                isRepeated = seenKeys & key.bit != 0
                seenKeys |= key.bit
            }
            if isRepeated { throw .syntax(JSONParseError("duplicate key \(ErrorQuote.quoted(name))", at: keyOffset)) }
            guard scanner.consume(UInt8(ascii: ":")) else {
                throw syntax("unexpected \(scanner.describeCurrent()) after object key, expected ':'")
            }
            try body(&self, key)
            if scanner.consume(UInt8(ascii: ",")) { continue }
            if scanner.consume(UInt8(ascii: "}")) { return }
            throw syntax(
                scanner.isAtEnd
                    ? "unterminated object" : "unexpected \(scanner.describeCurrent()) in object, expected ',' or '}'")
        }
    }

    /// A key, matched from its raw bytes when it is plain ASCII (always, in files the app writes).
    mutating func key() throws(FileDecodingError) -> (Key, String) {
        if let raw = rawASCIIString() {
            let key = Key(raw)
            return (key, key.name ?? String(decoding: raw, as: UTF8.self))
        }
        let name = try string()
        return (Key(name), name)
    }

    /// The bytes of a string without escapes or non-ASCII bytes, consumed; nil (nothing consumed) otherwise.
    mutating func rawASCIIString() -> UnsafeRawBufferPointer? {
        scanner.skipWhitespace()
        guard scanner.current == UInt8(ascii: "\"") else { return nil }
        let bytes = scanner.bytes
        let start = scanner.index + 1
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                scanner.index = index + 1
                return UnsafeRawBufferPointer(rebasing: bytes[start..<index])
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return nil }
            index += 1
        }
        return nil
    }

    mutating func string() throws(FileDecodingError) -> String {
        do {
            return try scanner.parseString()
        } catch {
            throw .syntax(error)
        }
    }

    mutating func string(at place: Place, _ field: String) throws(FileDecodingError) -> String {
        scanner.skipWhitespace()
        guard scanner.current == UInt8(ascii: "\"") else {
            throw schema(place, field, "expected a string, got \(try typeName())")
        }
        return try string()
    }

    mutating func uuid(at place: Place, _ field: String = "id") throws(FileDecodingError) -> UUID {
        scanner.skipWhitespace()
        let start = scanner.index
        if let raw = rawASCIIString(), let uuid = UUID(hexBytes: raw) { return uuid }
        scanner.index = start
        if scanner.current != UInt8(ascii: "\"") {  // not a string at all
            throw schema(place, field, "expected a string, got \(try typeName())")
        }
        let text = try string()  // a string with escapes or other characters
        if let uuid = UUID(uuidString: text) { return uuid }
        throw schema(place, field, "\(ErrorQuote.quoted(text)) is not a UUID")
    }

    mutating func number(at place: Place, _ field: String) throws(FileDecodingError) -> JSONNumber {
        scanner.skipWhitespace()
        switch scanner.current ?? 0 {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            do {
                return try scanner.parseNumber()
            } catch {
                throw .syntax(error)
            }
        default:
            throw schema(place, field, "expected a number, got \(try typeName())")
        }
    }

    mutating func file() throws(FileDecodingError) -> [SyncUp] {
        // A UTF-8 byte order mark, which some editors add and Foundation's decoder skips.
        if scanner.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { scanner.index = 3 }
        scanner.skipWhitespace()
        if scanner.isAtEnd { return [] }  // an empty file is an empty list, as the app treats it
        var syncUps: [SyncUp] = []
        var ids = Set<SyncUp.ID>()
        try array(at: nil) { (decoder, index) throws(FileDecodingError) in
            let syncUp = try decoder.syncUp(at: index)
            guard ids.insert(syncUp.id).inserted else {
                throw decoder.schema(.syncUp(index), "id", "duplicate sync-up id \(syncUp.id)")
            }
            syncUps.append(syncUp)
        }
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { throw syntax("unexpected \(scanner.describeCurrent()) after the JSON value") }
        return syncUps
    }

    mutating func syncUp(at index: Int) throws(FileDecodingError) -> SyncUp {
        let place = Place.syncUp(index)
        var id: UUID?
        var attendees: [Attendee]?
        var duration: Duration?
        var meetings: [Meeting]?
        var theme: Theme?
        var title: String?
        try object(at: place) { (decoder, key) throws(FileDecodingError) in
            switch key {
            case .id: id = try decoder.uuid(at: place)
            case .attendees: attendees = try decoder.attendees(of: index)
            case .duration: duration = try decoder.duration(at: place)
            case .meetings: meetings = try decoder.meetings(of: index)
            case .theme:
                let name = try decoder.string(at: place, "theme")
                guard let value = Theme(rawValue: name) else {
                    throw decoder.schema(place, "theme", "unknown theme \(ErrorQuote.quoted(name))")
                }
                theme = value
            case .title: title = try decoder.string(at: place, "title")
            default: try decoder.skipValue(depth: 2)
            }
        }
        // In the order the app's synthesized decoder asks for them.
        guard let id else { throw schema(place, nil, "missing key \"id\"") }
        guard let attendees else { throw schema(place, nil, "missing key \"attendees\"") }
        guard let meetings else { throw schema(place, nil, "missing key \"meetings\"") }
        guard let duration else { throw schema(place, nil, "missing key \"duration\"") }
        guard let theme else { throw schema(place, nil, "missing key \"theme\"") }
        guard let title else { throw schema(place, nil, "missing key \"title\"") }
        return SyncUp(
            id: SyncUp.ID(id), attendees: attendees, duration: duration, meetings: meetings, theme: theme, title: title)
    }

    mutating func attendees(of syncUp: Int) throws(FileDecodingError) -> [Attendee] {
        var attendees: [Attendee] = []
        var ids = Set<Attendee.ID>()
        try array(at: .syncUp(syncUp), "attendees") { (decoder, index) throws(FileDecodingError) in
            let place = Place.attendee(syncUp, index)
            var id: UUID?
            var name: String?
            try decoder.object(at: place) { (decoder, key) throws(FileDecodingError) in
                switch key {
                case .id: id = try decoder.uuid(at: place)
                case .name: name = try decoder.string(at: place, "name")
                default: try decoder.skipValue(depth: 4)
                }
            }
            guard let id else { throw decoder.schema(place, nil, "missing key \"id\"") }
            guard let name else { throw decoder.schema(place, nil, "missing key \"name\"") }
            guard ids.insert(Attendee.ID(id)).inserted else {
                throw decoder.schema(place, "id", "duplicate attendee id \(Attendee.ID(id))")
            }
            attendees.append(Attendee(id: Attendee.ID(id), name: name))
        }
        return attendees
    }

    mutating func meetings(of syncUp: Int) throws(FileDecodingError) -> [Meeting] {
        var meetings: [Meeting] = []
        var ids = Set<Meeting.ID>()
        try array(at: .syncUp(syncUp), "meetings") { (decoder, index) throws(FileDecodingError) in
            let place = Place.meeting(syncUp, index)
            var id: UUID?
            var date: Double?
            var transcript: String?
            try decoder.object(at: place) { (decoder, key) throws(FileDecodingError) in
                switch key {
                case .id: id = try decoder.uuid(at: place)
                case .date: date = try decoder.number(at: place, "date").double
                case .transcript: transcript = try decoder.string(at: place, "transcript")
                default: try decoder.skipValue(depth: 4)
                }
            }
            guard let id else { throw decoder.schema(place, nil, "missing key \"id\"") }
            guard let date else { throw decoder.schema(place, nil, "missing key \"date\"") }
            guard let transcript else { throw decoder.schema(place, nil, "missing key \"transcript\"") }
            guard ids.insert(Meeting.ID(id)).inserted else {
                throw decoder.schema(place, "id", "duplicate meeting id \(Meeting.ID(id))")
            }
            meetings.append(
                Meeting(id: Meeting.ID(id), date: Date(timeIntervalSinceReferenceDate: date), transcript: transcript))
        }
        return meetings
    }

    /// `[high, low]`, the two halves of the attoseconds (Int64, UInt64).
    mutating func duration(at place: Place) throws(FileDecodingError) -> Duration {
        let start = scanner.index
        if scanner.consume(UInt8(ascii: "[")), let high = try? number(at: place, "duration").int64,
            scanner.consume(UInt8(ascii: ",")), let low = try? number(at: place, "duration").uint64,
            scanner.consume(UInt8(ascii: "]"))
        {
            guard let duration = DurationPair(high: high, low: low).durationInRange else {
                throw schema(place, "duration", "more than \(DurationPair.maxYears) years: not a meeting's length")
            }
            return duration
        }
        scanner.index = start
        try skipValue(depth: 2)  // a syntax error is reported as one
        throw schema(place, "duration", "expected [high, low] attosecond halves (Int64, UInt64)")
    }

    /// The keys of the format, recognised from their bytes without making a String.
    enum Key: UInt16 {
        case id, attendees, duration, meetings, theme, title, name, date, transcript, other

        var bit: UInt16 { 1 << rawValue }

        static let all: [Key] = [.id, .attendees, .duration, .meetings, .theme, .title, .name, .date, .transcript]

        var name: String? {
            switch self {
            case .id: "id"
            case .attendees: "attendees"
            case .duration: "duration"
            case .meetings: "meetings"
            case .theme: "theme"
            case .title: "title"
            case .name: "name"
            case .date: "date"
            case .transcript: "transcript"
            case .other: nil
            }
        }

        init(_ name: String) {
            self = Key.all.first { $0.name == name } ?? .other
        }

        init(_ bytes: UnsafeRawBufferPointer) {
            func matches(_ text: StaticString) -> Bool {
                guard text.utf8CodeUnitCount == bytes.count else { return false }
                let expected = text.utf8Start
                for index in 0..<bytes.count where bytes[index] != expected[index] { return false }
                return true
            }
            switch bytes.count {
            case 2 where matches("id"): self = .id
            case 4 where matches("name"): self = .name
            case 4 where matches("date"): self = .date
            case 5 where matches("theme"): self = .theme
            case 5 where matches("title"): self = .title
            case 8 where matches("duration"): self = .duration
            case 8 where matches("meetings"): self = .meetings
            case 9 where matches("attendees"): self = .attendees
            case 10 where matches("transcript"): self = .transcript
            default: self = .other
            }
        }
    }
}

extension UUID {
    /// Parses the 36 ASCII bytes of a UUID string (either case) without making a String; nil if malformed.
    init?(hexBytes bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 36 else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &value) { output -> Bool in
            var input = 0
            for outputIndex in 0..<16 {
                if input == 8 || input == 13 || input == 18 || input == 23 {
                    guard bytes[input] == UInt8(ascii: "-") else { return false }
                    input += 1
                }
                guard let high = hexValue(bytes[input]), let low = hexValue(bytes[input + 1]) else { return false }
                output[outputIndex] = high << 4 | low
                input += 2
            }
            return true
        }
        guard ok else { return nil }
        self.init(uuid: value)
    }
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}
