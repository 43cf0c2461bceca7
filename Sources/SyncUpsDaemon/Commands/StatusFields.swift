import SyncUpsJSON
import SyncUpsProtocol

/// Everything `status` says that can change. The reply is encoded from these fields alone
/// (`StatusEncoder.encode`, which sees nothing of the daemon), and the replay cache's stamp is derived from
/// them (`stamp`): a field a new version of `status` shows is either one of the `counters`, and so in the
/// stamp by construction, or one of the few others, each of which must make the reply unreplayable or move
/// a counter when it changes. `StatusFieldsTests` fails for a field without a row, or whose change the stamp
/// misses.
struct StatusFields: Equatable {
    /// What changes while the daemon is idle: plain numbers, compared for every 256th replayed `status` (a
    /// value with strings or a JSON tree in it was copied through its witnesses each time: 337 instructions
    /// per `status` in `make bench` against 268).
    struct Counters: Equatable {
        var uptimeMilliseconds: Int64
        var syncUps: Int
        var meetings: Int
        var connections: Int
        var subscribers: Int
        var seq: Int
        var timers: Int
        var hasUnsavedChanges: Bool
        var isSynced: Bool
        /// The generation of the settings and the voice model, which `settings` changes only with (on SIGHUP).
        var settingsGeneration: Int
        /// The generation of the `desktop` object, which changes only with it (the bus came or went, a name).
        var desktopGeneration: Int
        /// The generation of the schedules, which `next` changes with (and with the time to it).
        var scheduleGeneration: Int
        /// Counts the changes of the next meeting's engine started ahead (`speechSpare`).
        var spareChanges: Int
    }

    var counters: Counters
    /// The running session's object; null while none runs.
    var session: JSONValue
    var settings: SettingsNames
    /// The next meeting's speech engine started ahead: `warm`, `starting`, `none`, or `off` (as of
    /// `Counters.spareChanges`).
    var speechSpare: String = "off"
    /// The first scheduled stand-up (`schedule.list`'s first), or null.
    var next: JSONValue
    /// The session bus, the MPRIS player and notifications, or why they are off.
    var desktop: JSONValue
    /// The last failed write of the user's data, if it still fails: `sync-ups.json` or a meeting's details.
    var persistenceError: String?
    /// Warnings that hold only while a write still fails (a recovered meeting's details), after the load's.
    var failingWarnings: [String] = []

    /// The speech engine, audio device and voices (`on: …`, or why they are off), as of
    /// `Counters.settingsGeneration`.
    struct SettingsNames: Equatable {
        var speechEngine: String?
        var audioDevice: String
        var voices: String
    }

    /// The replay cache's stamp: the counters, while a reply may be replayed (no session runs, its object
    /// changing every moment, no write fails and no warning holds only while one does); nil otherwise. The other fields are then fixed: the
    /// session null, no error, the settings' names those of the settings' generation.
    var stamp: Counters? {
        Self.stamp(
            counters, isSessionRunning: session != .null, persistenceError: persistenceError,
            hasFailingWarnings: !failingWarnings.isEmpty)
    }

    /// The stamp's one rule, for `stamp` and for `CommandHandler.replayGeneration(for:)`, which asks it
    /// without building the fields (a running session's object would cost more than the replay saves).
    static func stamp(
        _ counters: Counters, isSessionRunning: Bool, persistenceError: String?, hasFailingWarnings: Bool
    ) -> Counters? {
        !isSessionRunning && persistenceError == nil && !hasFailingWarnings ? counters : nil
    }
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
        let milliseconds = fields.counters.uptimeMilliseconds
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
        field(#","syncups":"#, fields.counters.syncUps)
        field(#","syncUps":"#, fields.counters.syncUps)
        field(#","meetings":"#, fields.counters.meetings)
        field(#","connections":"#, fields.counters.connections)
        field(#","subscribers":"#, fields.counters.subscribers)
        field(#","seq":"#, fields.counters.seq)
        field(#","timers":"#, fields.counters.timers)
        JSONWriter.appendASCII(#","session":"#, to: &bytes)
        JSONWriter().write(fields.session, into: &bytes)
        JSONWriter.appendASCII(#","speechEngine":"#, to: &bytes)
        if let engine = fields.settings.speechEngine {
            JSONWriter.writeString(engine, into: &bytes)
        } else {
            JSONWriter.appendASCII("null", to: &bytes)
        }
        JSONWriter.appendASCII(#","speechSpare":"#, to: &bytes)
        JSONWriter.writeString(fields.speechSpare, into: &bytes)
        JSONWriter.appendASCII(#","voices":"#, to: &bytes)
        JSONWriter.writeString(fields.settings.voices, into: &bytes)
        JSONWriter.appendASCII(#","audioDevice":"#, to: &bytes)
        JSONWriter.writeString(fields.settings.audioDevice, into: &bytes)
        JSONWriter.appendASCII(#","next":"#, to: &bytes)
        JSONWriter().write(fields.next, into: &bytes)
        JSONWriter.appendASCII(#","desktop":"#, to: &bytes)
        JSONWriter().write(fields.desktop, into: &bytes)
        JSONWriter.appendASCII(#","persistence":{"lastError":"#, to: &bytes)
        if let error = fields.persistenceError {
            JSONWriter.writeString(error, into: &bytes)
        } else {
            JSONWriter.appendASCII("null", to: &bytes)
        }
        JSONWriter.appendASCII(
            fields.counters.hasUnsavedChanges ? #","unsavedChanges":true"# : #","unsavedChanges":false"#, to: &bytes)
        JSONWriter.appendASCII(fields.counters.isSynced ? #","synced":true"# : #","synced":false"#, to: &bytes)
        JSONWriter.appendASCII(#","warnings":["#, to: &bytes)
        for (index, warning) in (warnings + fields.failingWarnings).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(warning, into: &bytes)
        }
        JSONWriter.appendASCII("]}}", to: &bytes)
    }
}
