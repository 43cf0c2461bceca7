import SyncUpsJSON
import SyncUpsProtocol

/// Everything `status` says that can change. The reply is encoded from these fields alone
/// (`StatusEncoder.encode`, which sees nothing of the daemon), and the same value is the replay cache's
/// stamp: a field a new version of `status` shows is in the stamp by construction, so a replayed `status`
/// can never serve an old value of it (`StatusFieldsTests` fails for a field whose change the stamp misses).
struct StatusFields: Equatable {
    var uptimeMilliseconds: Int64
    var syncUps: Int
    var meetings: Int
    var connections: Int
    var subscribers: Int
    var seq: Int
    var timers: Int
    /// The running session's object; null while none runs.
    var session: JSONValue
    var settings: SettingsNames
    /// The last failed write of the user's data, if it still fails: `sync-ups.json` or a meeting's details.
    var persistenceError: String?
    var hasUnsavedChanges: Bool
    var isSynced: Bool

    /// The speech engine and audio device, which change only with the settings (on SIGHUP): compared by the
    /// settings' generation alone, an integer, and held by reference (the stamp is taken for every 256th
    /// replayed `status`, and copying and comparing the two strings was most of it).
    final class SettingsNames: Equatable, Sendable {
        let generation: Int
        let speechEngine: String?
        let audioDevice: String

        init(generation: Int, speechEngine: String?, audioDevice: String) {
            self.generation = generation
            self.speechEngine = speechEngine
            self.audioDevice = audioDevice
        }

        static func == (lhs: SettingsNames, rhs: SettingsNames) -> Bool { lhs.generation == rhs.generation }
    }

    /// A reply may be replayed only while no session runs (its object changes every moment) and no write
    /// fails (rare).
    var isReplayable: Bool { session == .null && persistenceError == nil }
}

/// Writes `status` straight to bytes, from the part that never changes and a `StatusFields`: no JSONValue
/// tree for the daemon's own fields (a running session's object is still built as one), no floating-point
/// formatting, literals appended as raw bytes. The one fast path beside the general writer, kept for its
/// figure: `make bench`'s instructions table gave 7,328 instructions per pipelined `status` this way and
/// 38,669 with the same object built as a `JSONValue` and written by `JSONWriter` (2026-12, one run each).
struct StatusEncoder {
    /// `{"version":…,…,"dataFile":"…"`: the fields fixed at start-up, without the closing brace.
    let prefix: [UInt8]
    /// What loading the data said, fixed at start-up.
    let warnings: [String]

    func encode(_ fields: StatusFields, into bytes: inout [UInt8]) {
        bytes.append(contentsOf: prefix)
        func field(_ name: StaticString, _ value: Int) {
            JSONWriter.appendASCII(name, to: &bytes)
            JSONWriter.appendInteger(Int64(value), to: &bytes)
        }
        // Seconds with millisecond precision, as the shortest decimal ("12.3", not "12.300").
        let milliseconds = fields.uptimeMilliseconds
        field(#","uptime":"#, Int(milliseconds / 1000))
        var fraction = Int(milliseconds % 1000)
        if fraction > 0 {
            var digits = 3
            while fraction % 10 == 0 {
                fraction /= 10
                digits -= 1
            }
            bytes.append(UInt8(ascii: "."))
            for power in [100, 10, 1].suffix(digits) { bytes.append(UInt8(ascii: "0") + UInt8(fraction / power % 10)) }
        }
        // `syncups`, as everywhere else; `syncUps`, protocol 1's first name for it, stays for its clients.
        field(#","syncups":"#, fields.syncUps)
        field(#","syncUps":"#, fields.syncUps)
        field(#","meetings":"#, fields.meetings)
        field(#","connections":"#, fields.connections)
        field(#","subscribers":"#, fields.subscribers)
        field(#","seq":"#, fields.seq)
        field(#","timers":"#, fields.timers)
        JSONWriter.appendASCII(#","session":"#, to: &bytes)
        JSONWriter().write(fields.session, into: &bytes)
        JSONWriter.appendASCII(#","speechEngine":"#, to: &bytes)
        if let engine = fields.settings.speechEngine {
            JSONWriter.writeString(engine, into: &bytes)
        } else {
            JSONWriter.appendASCII("null", to: &bytes)
        }
        JSONWriter.appendASCII(#","audioDevice":"#, to: &bytes)
        JSONWriter.writeString(fields.settings.audioDevice, into: &bytes)
        JSONWriter.appendASCII(#","persistence":{"lastError":"#, to: &bytes)
        if let error = fields.persistenceError {
            JSONWriter.writeString(error, into: &bytes)
        } else {
            JSONWriter.appendASCII("null", to: &bytes)
        }
        JSONWriter.appendASCII(
            fields.hasUnsavedChanges ? #","unsavedChanges":true"# : #","unsavedChanges":false"#, to: &bytes)
        JSONWriter.appendASCII(fields.isSynced ? #","synced":true"# : #","synced":false"#, to: &bytes)
        JSONWriter.appendASCII(#","warnings":["#, to: &bytes)
        for (index, warning) in warnings.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(warning, into: &bytes)
        }
        JSONWriter.appendASCII("]}}", to: &bytes)
    }
}
