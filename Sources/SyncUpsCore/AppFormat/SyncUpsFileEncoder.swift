import FoundationEssentials
import SyncUpsJSON

/// Encodes successive versions of the sync-ups, re-encoding only the sync-ups that changed since the last
/// call and reusing the others' bytes: after one edit to a file of 10,000 sync-ups (118 MB), a save encodes
/// one sync-up instead of spending over 100 ms encoding them all.
///
/// An unchanged sync-up is recognised by value equality, which for a sync-up the daemon did not touch is
/// cheap: its arrays and strings still share storage with the cached copy, and Swift compares those by
/// identity first. The file comes out as pieces (each sync-up's cached bytes between the array's
/// punctuation) that are written one after another, so it is never assembled in memory. Their
/// concatenation is byte for byte what the app's `JSONEncoder` with `[.prettyPrinted, .sortedKeys]` writes:
/// `SyncUpsFileTests` checks it against the app's own files and against Foundation's `JSONEncoder`. The cache
/// costs memory about the size of the file.
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

    /// Roughly the bytes `syncUp` takes in the file, erring high, so one allocation usually suffices.
    static func estimatedSize(_ syncUp: SyncUp) -> Int {
        var estimate = 400 + syncUp.title.utf8.count + syncUp.attendees.count * 110
        for meeting in syncUp.meetings {
            estimate += 140 + meeting.transcript.utf8.count + meeting.transcript.utf8.count / 16
        }
        return estimate
    }

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
                writer.output.reserveCapacity(Self.estimatedSize(syncUp))
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
