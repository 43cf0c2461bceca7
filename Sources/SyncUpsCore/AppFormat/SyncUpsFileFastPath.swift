import FoundationEssentials
import SyncUpsJSON

/// Reading and writing `sync-ups.json` straight between bytes and model values, without a `JSONValue`
/// tree in between: start-up with a thousand sync-ups and every save depend on it.
///
/// The fast decoder answers only "here are the sync-ups" or "something is off": on anything unusual it
/// gives up, and `SyncUpsFile.decode` runs the general path, which produces the same values or the precise
/// error. The file fuzzer checks that the two paths always agree.
extension SyncUpsFile {
    static func decodeFast(_ bytes: UnsafeRawBufferPointer) -> [SyncUp]? {
        var decoder = FastDecoder(scanner: JSONScanner(bytes: bytes, maxDepth: 32))
        return try? decoder.file()
    }

    /// Roughly the bytes `syncUp` takes in the file, erring high, so one allocation usually suffices.
    static func estimatedSize(_ syncUp: SyncUp) -> Int {
        var estimate = 400 + syncUp.title.utf8.count + syncUp.attendees.count * 110
        for meeting in syncUp.meetings {
            estimate += 140 + meeting.transcript.utf8.count + meeting.transcript.utf8.count / 16
        }
        return estimate
    }
}

/// Encodes successive versions of the sync-ups, re-encoding only the sync-ups that changed since the last
/// call and reusing the others' bytes: after one edit to a file of 10,000 sync-ups (118 MB), a save encodes
/// one sync-up instead of spending over 100 ms encoding them all.
///
/// An unchanged sync-up is recognised by value equality, which for a sync-up the daemon did not touch is
/// cheap: its arrays and strings still share storage with the cached copy, and Swift compares those by
/// identity first. The file comes out as pieces (each sync-up's cached bytes between the array's
/// punctuation) that are written one after another, so it is never assembled in memory; their
/// concatenation is byte for byte what `JSONWriter(options: .applePrettySorted)` writes for
/// `SyncUpsFile.json(syncUps)`, only much faster. The cache costs memory about the size
/// of the file.
public struct SyncUpsFileEncoder: Sendable {
    private struct Entry: Sendable {
        var syncUp: SyncUp
        var bytes: [UInt8]
    }

    private var cache: [SyncUp.ID: Entry] = [:]

    // The top-level array as `PrettyWriter.array` lays it out at level 0.
    private static let open = Array("[\n  ".utf8)
    private static let separator = Array(",\n  ".utf8)
    private static let close = Array("\n]".utf8)
    private static let empty = Array("[\n\n]".utf8)

    public init() {}

    /// The file for `syncUps`, as pieces to write in order.
    public mutating func encode(_ syncUps: [SyncUp]) -> [[UInt8]] {
        guard !syncUps.isEmpty else {
            cache = [:]
            return [Self.empty]
        }
        var pieces: [[UInt8]] = []
        pieces.reserveCapacity(2 * syncUps.count + 1)
        for (index, syncUp) in syncUps.enumerated() {
            pieces.append(index == 0 ? Self.open : Self.separator)
            if let entry = cache.index(forKey: syncUp.id), cache.values[entry].syncUp == syncUp {
                pieces.append(cache.values[entry].bytes)
            } else {
                var writer = PrettyWriter()
                writer.output.reserveCapacity(SyncUpsFile.estimatedSize(syncUp))
                writer.syncUp(syncUp)
                cache[syncUp.id] = Entry(syncUp: syncUp, bytes: writer.output)
                pieces.append(writer.output)
            }
        }
        pieces.append(Self.close)
        // Every id in `syncUps` has an entry, so more entries than sync-ups means some were deleted.
        if cache.count > syncUps.count {
            let ids = Set(syncUps.map(\.id))
            cache = cache.filter { ids.contains($0.key) }
        }
        return pieces
    }
}

// MARK: - Decoding

private struct FastDecoderError: Error {}

private struct FastDecoder {
    var scanner: JSONScanner

    mutating func expect(_ byte: UInt8) throws(FastDecoderError) {
        guard scanner.consume(byte) else { throw FastDecoderError() }
    }

    /// Calls `body` for each element of an array (the `[` not yet read).
    mutating func array(_ body: (inout FastDecoder) throws(FastDecoderError) -> Void) throws(FastDecoderError) {
        try expect(UInt8(ascii: "["))
        if scanner.consume(UInt8(ascii: "]")) { return }
        repeat {
            try body(&self)
        } while scanner.consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"))
    }

    /// Calls `body` with each key of an object; `body` must read the value.
    mutating func object(_ body: (inout FastDecoder, UnsafeRawBufferPointer) throws(FastDecoderError) -> Void)
        throws(FastDecoderError)
    {
        try expect(UInt8(ascii: "{"))
        if scanner.consume(UInt8(ascii: "}")) { return }
        repeat {
            let key = try rawString()
            try expect(UInt8(ascii: ":"))
            try body(&self, key)
        } while scanner.consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"))
    }

    /// An ASCII string without escapes, as its raw bytes (the format's keys and UUIDs). Anything else, even
    /// a valid key we do not know, goes to the general path, which checks its UTF-8.
    mutating func rawString() throws(FastDecoderError) -> UnsafeRawBufferPointer {
        scanner.skipWhitespace()
        guard scanner.current == UInt8(ascii: "\"") else { throw FastDecoderError() }
        let start = scanner.index + 1
        var index = start
        let bytes = scanner.bytes
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                scanner.index = index + 1
                return UnsafeRawBufferPointer(rebasing: bytes[start..<index])
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { throw FastDecoderError() }
            index += 1
        }
        throw FastDecoderError()
    }

    mutating func string() throws(FastDecoderError) -> String {
        scanner.skipWhitespace()
        guard scanner.current == UInt8(ascii: "\"") else { throw FastDecoderError() }
        do {
            return try scanner.parseString()
        } catch {
            throw FastDecoderError()
        }
    }

    mutating func number() throws(FastDecoderError) -> JSONNumber {
        scanner.skipWhitespace()
        do {
            return try scanner.parseNumber()
        } catch {
            throw FastDecoderError()
        }
    }

    mutating func uuid() throws(FastDecoderError) -> UUID {
        let text = try rawString()
        guard let uuid = UUID(hexBytes: text) else { throw FastDecoderError() }
        return uuid
    }

    mutating func file() throws(FastDecoderError) -> [SyncUp] {
        var syncUps: [SyncUp] = []
        var ids = Set<SyncUp.ID>()
        try array { (decoder) throws(FastDecoderError) in
            let syncUp = try decoder.syncUp()
            guard ids.insert(syncUp.id).inserted else { throw FastDecoderError() }
            syncUps.append(syncUp)
        }
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { throw FastDecoderError() }
        return syncUps
    }

    mutating func syncUp() throws(FastDecoderError) -> SyncUp {
        var id: UUID?
        var attendees: [Attendee]?
        var duration: Duration?
        var meetings: [Meeting]?
        var theme: Theme?
        var title: String?
        try object { (decoder, key) throws(FastDecoderError) in
            switch Key(key) {
            case .id:
                guard id == nil else { throw FastDecoderError() }
                id = try decoder.uuid()
            case .attendees:
                guard attendees == nil else { throw FastDecoderError() }
                attendees = try decoder.attendees()
            case .duration:
                guard duration == nil else { throw FastDecoderError() }
                duration = try decoder.duration()
            case .meetings:
                guard meetings == nil else { throw FastDecoderError() }
                meetings = try decoder.meetings()
            case .theme:
                guard theme == nil else { throw FastDecoderError() }
                guard let value = Theme(rawValue: try decoder.string()) else { throw FastDecoderError() }
                theme = value
            case .title:
                guard title == nil else { throw FastDecoderError() }
                title = try decoder.string()
            default:
                throw FastDecoderError()  // a key the app never writes: the general path decides
            }
        }
        guard let id, let attendees, let duration, let meetings, let theme, let title else { throw FastDecoderError() }
        return SyncUp(
            id: SyncUp.ID(id), attendees: attendees, duration: duration, meetings: meetings, theme: theme, title: title)
    }

    mutating func attendees() throws(FastDecoderError) -> [Attendee] {
        var attendees: [Attendee] = []
        var ids = Set<Attendee.ID>()
        try array { (decoder) throws(FastDecoderError) in
            var id: UUID?
            var name: String?
            try decoder.object { (decoder, key) throws(FastDecoderError) in
                switch Key(key) {
                case .id:
                    guard id == nil else { throw FastDecoderError() }
                    id = try decoder.uuid()
                case .name:
                    guard name == nil else { throw FastDecoderError() }
                    name = try decoder.string()
                default: throw FastDecoderError()
                }
            }
            guard let id, let name, ids.insert(Attendee.ID(id)).inserted else { throw FastDecoderError() }
            attendees.append(Attendee(id: Attendee.ID(id), name: name))
        }
        return attendees
    }

    mutating func meetings() throws(FastDecoderError) -> [Meeting] {
        var meetings: [Meeting] = []
        var ids = Set<Meeting.ID>()
        try array { (decoder) throws(FastDecoderError) in
            var id: UUID?
            var date: Double?
            var transcript: String?
            try decoder.object { (decoder, key) throws(FastDecoderError) in
                switch Key(key) {
                case .id:
                    guard id == nil else { throw FastDecoderError() }
                    id = try decoder.uuid()
                case .date:
                    guard date == nil else { throw FastDecoderError() }
                    date = try decoder.number().double
                case .transcript:
                    guard transcript == nil else { throw FastDecoderError() }
                    transcript = try decoder.string()
                default: throw FastDecoderError()
                }
            }
            guard let id, let date, let transcript, ids.insert(Meeting.ID(id)).inserted else {
                throw FastDecoderError()
            }
            meetings.append(
                Meeting(id: Meeting.ID(id), date: Date(timeIntervalSinceReferenceDate: date), transcript: transcript))
        }
        return meetings
    }

    mutating func duration() throws(FastDecoderError) -> Duration {
        try expect(UInt8(ascii: "["))
        guard let high = try number().int64 else { throw FastDecoderError() }
        try expect(UInt8(ascii: ","))
        guard let low = try number().uint64 else { throw FastDecoderError() }
        try expect(UInt8(ascii: "]"))
        return DurationPair(high: high, low: low).duration
    }

    /// The keys of the format, recognised from their bytes without making a String.
    enum Key {
        case id, attendees, duration, meetings, theme, title, name, date, transcript, other

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

// MARK: - Encoding

private let spaces = [UInt8](repeating: 0x20, count: 64)
private let upperHex: [UInt8] = Array("0123456789ABCDEF".utf8)

/// Apple's `[.prettyPrinted, .sortedKeys]` layout for this one schema, written directly.
private struct PrettyWriter {
    var output: [UInt8] = []

    mutating func raw(_ text: StaticString) {
        JSONWriter.appendASCII(text, to: &output)
    }

    mutating func newline(level: Int) {
        output.append(0x0A)
        output.append(contentsOf: spaces[0..<(2 * level)])
    }

    /// `"key" : ` at `level`, after a comma when it is not the first member.
    mutating func key(_ text: StaticString, level: Int, first: Bool = false) {
        if !first { output.append(UInt8(ascii: ",")) }
        newline(level: level)
        raw(text)
    }

    mutating func string(_ text: String) {
        JSONWriter.writeString(text, into: &output, escapesSlashes: true)
    }

    mutating func uuid(_ uuid: UUID) {
        output.append(UInt8(ascii: "\""))
        withUnsafeBytes(of: uuid.uuid) { bytes in
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 { output.append(UInt8(ascii: "-")) }
                output.append(upperHex[Int(bytes[index] >> 4)])
                output.append(upperHex[Int(bytes[index] & 0x0F)])
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// `[`, the elements one per line at `level + 1`, `]`; Apple writes an empty array as `[` blank line `]`.
    mutating func array<Element>(_ elements: [Element], level: Int, _ body: (inout PrettyWriter, Element) -> Void) {
        output.append(UInt8(ascii: "["))
        if elements.isEmpty {
            output.append(0x0A)
            newline(level: level)
        } else {
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                newline(level: level + 1)
                body(&self, element)
            }
            newline(level: level)
        }
        output.append(UInt8(ascii: "]"))
    }

    mutating func syncUp(_ syncUp: SyncUp) {
        raw("{")
        key(#""attendees" : "#, level: 2, first: true)
        array(syncUp.attendees, level: 2) { writer, attendee in
            writer.raw("{")
            writer.key(#""id" : "#, level: 4, first: true)
            writer.uuid(attendee.id.rawValue)
            writer.key(#""name" : "#, level: 4)
            writer.string(attendee.name)
            writer.newline(level: 3)
            writer.raw("}")
        }
        let pair = DurationPair(syncUp.duration)
        key(#""duration" : ["#, level: 2)
        newline(level: 3)
        JSONWriter.appendInteger(pair.high, to: &output)
        output.append(UInt8(ascii: ","))
        newline(level: 3)
        JSONWriter.appendUnsigned(pair.low, to: &output)
        newline(level: 2)
        raw("]")
        key(#""id" : "#, level: 2)
        uuid(syncUp.id.rawValue)
        key(#""meetings" : "#, level: 2)
        array(syncUp.meetings, level: 2) { writer, meeting in
            writer.raw("{")
            writer.key(#""date" : "#, level: 4, first: true)
            JSONWriter.writeNumber(.double(meeting.date.timeIntervalSinceReferenceDate), into: &writer.output)
            writer.key(#""id" : "#, level: 4)
            writer.uuid(meeting.id.rawValue)
            writer.key(#""transcript" : "#, level: 4)
            writer.string(meeting.transcript)
            writer.newline(level: 3)
            writer.raw("}")
        }
        key(#""theme" : "#, level: 2)
        string(syncUp.theme.rawValue)
        key(#""title" : "#, level: 2)
        string(syncUp.title)
        newline(level: 1)
        raw("}")
    }
}
