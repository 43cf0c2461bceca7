import FoundationEssentials
import SyncUpsJSON

/// The `sync-ups.json` format, byte-compatible with the SyncUps app's `Codable` encoding.
///
/// The app stores `IdentifiedArrayOf<SyncUp>` with synthesized `Codable`: a bare array; UUIDs as upper-case
/// strings; `Duration` as `[high, low]`; `Date` as seconds since 2001-01-01. Decoding is as strict as the app's:
/// every key is required and duplicate ids are an error, so a file this accepts is a file the app accepts.
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
        if buffer.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [] }
        if let syncUps = decodeFast(buffer) { return syncUps }
        return try decodeGeneral(Array(buffer))
    }

    /// The general path: parse to a `JSONValue`, then decode with precise errors. The fuzzer compares it
    /// with the fast path.
    public static func decodeGeneral(_ bytes: [UInt8]) throws(SyncUpsFileError) -> [SyncUp] {
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [] }
        let value: JSONValue
        do {
            value = try JSONParser(maxDepth: 32).parse(bytes)
        } catch {
            throw SyncUpsFileError(path: "", reason: "not valid JSON: \(error)")
        }
        return try decode(value)
    }

    /// Decodes the parsed JSON of a file.
    public static func decode(_ value: JSONValue) throws(SyncUpsFileError) -> [SyncUp] {
        var decoder = Decoder()
        return try decoder.syncUps(value)
    }

    /// Encodes sync-ups as the app's Debug build does (`[.prettyPrinted, .sortedKeys]`); the app reads it back.
    public static func encode(_ syncUps: [SyncUp], options: JSONWriter.Options = .applePrettySorted) -> [UInt8] {
        if options == .applePrettySorted {
            var encoder = SyncUpsFileEncoder()
            return Array(encoder.encode(syncUps).joined())
        }
        var output: [UInt8] = []
        output.reserveCapacity(syncUps.count * 1024)
        JSONWriter(options: options).write(json(syncUps), into: &output)
        return output
    }

    /// The JSON tree of `syncUps` in the app's encoding.
    public static func json(_ syncUps: [SyncUp]) -> JSONValue {
        .array(syncUps.map(json))
    }

    static func json(_ syncUp: SyncUp) -> JSONValue {
        let pair = DurationPair(syncUp.duration)
        return [
            "attendees": .array(syncUp.attendees.map(\.json)),
            "duration": [.number(.int(pair.high)), .number(.uint(pair.low))],
            "id": .string(syncUp.id.description),
            "meetings": .array(
                syncUp.meetings.map {
                    [
                        "date": .double($0.date.timeIntervalSinceReferenceDate),
                        "id": .string($0.id.description),
                        "transcript": .string($0.transcript),
                    ]
                }
            ),
            "theme": .string(syncUp.theme.rawValue),
            "title": .string(syncUp.title),
        ]
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

private struct Decoder {
    func fail(_ path: String, _ reason: String) -> SyncUpsFileError {
        SyncUpsFileError(path: path, reason: reason)
    }

    func array(_ value: JSONValue, _ path: String) throws(SyncUpsFileError) -> [JSONValue] {
        guard case .array(let elements) = value else { throw fail(path, "expected an array, got \(value.typeName)") }
        return elements
    }

    func object(_ value: JSONValue, _ path: String) throws(SyncUpsFileError) -> JSONObject {
        guard case .object(let object) = value else { throw fail(path, "expected an object, got \(value.typeName)") }
        return object
    }

    func member(_ object: JSONObject, _ key: String, _ path: String) throws(SyncUpsFileError) -> JSONValue {
        guard let value = object[key] else { throw fail(path, "missing key \"\(key)\"") }
        return value
    }

    func string(_ value: JSONValue, _ path: String) throws(SyncUpsFileError) -> String {
        guard case .string(let string) = value else { throw fail(path, "expected a string, got \(value.typeName)") }
        return string
    }

    func uuid(_ value: JSONValue, _ path: String) throws(SyncUpsFileError) -> UUID {
        let text = try string(value, path)
        guard let uuid = UUID(uuidString: text) else { throw fail(path, "\"\(text)\" is not a UUID") }
        return uuid
    }

    mutating func syncUps(_ value: JSONValue) throws(SyncUpsFileError) -> [SyncUp] {
        let elements = try array(value, "")
        var result: [SyncUp] = []
        result.reserveCapacity(elements.count)
        var seen = Set<SyncUp.ID>(minimumCapacity: elements.count)
        for (index, element) in elements.enumerated() {
            let syncUp = try syncUp(element, "[\(index)]")
            guard seen.insert(syncUp.id).inserted else {
                throw fail("[\(index)].id", "duplicate sync-up id \(syncUp.id)")
            }
            result.append(syncUp)
        }
        return result
    }

    mutating func syncUp(_ value: JSONValue, _ path: String) throws(SyncUpsFileError) -> SyncUp {
        let object = try object(value, path)
        let id = SyncUp.ID(try uuid(try member(object, "id", path), path + ".id"))

        var attendees: [Attendee] = []
        var attendeeIDs = Set<Attendee.ID>()
        for (index, element) in try array(try member(object, "attendees", path), path + ".attendees").enumerated() {
            let elementPath = "\(path).attendees[\(index)]"
            let fields = try self.object(element, elementPath)
            let attendee = Attendee(
                id: Attendee.ID(try uuid(try member(fields, "id", elementPath), elementPath + ".id")),
                name: try string(try member(fields, "name", elementPath), elementPath + ".name")
            )
            guard attendeeIDs.insert(attendee.id).inserted else {
                throw fail(elementPath + ".id", "duplicate attendee id \(attendee.id)")
            }
            attendees.append(attendee)
        }

        var meetings: [Meeting] = []
        var meetingIDs = Set<Meeting.ID>()
        for (index, element) in try array(try member(object, "meetings", path), path + ".meetings").enumerated() {
            let elementPath = "\(path).meetings[\(index)]"
            let fields = try self.object(element, elementPath)
            let dateValue = try member(fields, "date", elementPath)
            guard case .number(let seconds) = dateValue else {
                throw fail(elementPath + ".date", "expected a number, got \(dateValue.typeName)")
            }
            let meeting = Meeting(
                id: Meeting.ID(try uuid(try member(fields, "id", elementPath), elementPath + ".id")),
                date: Date(timeIntervalSinceReferenceDate: seconds.double),
                transcript: try string(try member(fields, "transcript", elementPath), elementPath + ".transcript")
            )
            guard meetingIDs.insert(meeting.id).inserted else {
                throw fail(elementPath + ".id", "duplicate meeting id \(meeting.id)")
            }
            meetings.append(meeting)
        }

        let durationPath = path + ".duration"
        let pair = try array(try member(object, "duration", path), durationPath)
        guard pair.count == 2, let high = pair[0].numberValue?.int64, let low = pair[1].numberValue?.uint64 else {
            throw fail(durationPath, "expected [high, low] attosecond halves (Int64, UInt64)")
        }

        let themeName = try string(try member(object, "theme", path), path + ".theme")
        guard let theme = Theme(rawValue: themeName) else {
            throw fail(path + ".theme", "unknown theme \"\(themeName)\"")
        }

        return SyncUp(
            id: id,
            attendees: attendees,
            duration: DurationPair(high: high, low: low).duration,
            meetings: meetings,
            theme: theme,
            title: try string(try member(object, "title", path), path + ".title")
        )
    }
}
