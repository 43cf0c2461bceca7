import SyncUpsJSON
import Testing

@testable import SyncUpsDaemon

/// `status`'s reply is encoded from `StatusFields` alone, and the same value is the replay cache's stamp:
/// a change to any field changes both the stamp and the reply, so a replayed `status` never says an old
/// value. A new field without a row here fails `everyFieldHasAChange`; a field the stamp's equality skips
/// fails `eachChangeMovesTheStampAndTheReply`.
@Suite struct StatusFieldsTests {
    static let idle = StatusFields(
        uptimeMilliseconds: 1_500, syncUps: 2, meetings: 3, connections: 1, subscribers: 0, seq: 4, timers: 0,
        session: .null,
        settings: StatusFields.SettingsNames(generation: 0, speechEngine: "pocketsphinx", audioDevice: "default"),
        persistenceError: nil, hasUnsavedChanges: false, isSynced: true)

    /// One change for each field, named as the field.
    static let changes: [(String, @Sendable (inout StatusFields) -> Void)] = [
        ("uptimeMilliseconds", { $0.uptimeMilliseconds += 1 }),
        ("syncUps", { $0.syncUps += 1 }),
        ("meetings", { $0.meetings += 1 }),
        ("connections", { $0.connections += 1 }),
        ("subscribers", { $0.subscribers += 1 }),
        ("seq", { $0.seq += 1 }),
        ("timers", { $0.timers += 1 }),
        ("session", { $0.session = ["state": "running"] }),
        (
            "settings",
            {
                $0.settings = StatusFields.SettingsNames(
                    generation: 1, speechEngine: "command", audioDevice: "pipewire")
            }
        ),
        ("persistenceError", { $0.persistenceError = "disk full" }),
        ("hasUnsavedChanges", { $0.hasUnsavedChanges.toggle() }),
        ("isSynced", { $0.isSynced.toggle() }),
    ]

    static func encoded(_ fields: StatusFields) -> [UInt8] {
        var bytes: [UInt8] = []
        StatusEncoder(prefix: Array(#"{"version":"test""#.utf8), warnings: ["w"]).encode(fields, into: &bytes)
        return bytes
    }

    @Test func everyFieldHasAChange() {
        let fields = Mirror(reflecting: Self.idle).children.compactMap(\.label)
        #expect(fields == Self.changes.map(\.0))
    }

    @Test func eachChangeMovesTheStampAndTheReply() throws {
        let before = Self.encoded(Self.idle)
        for (name, change) in Self.changes {
            var changed = Self.idle
            change(&changed)
            #expect(changed != Self.idle, "the stamp misses a change of \(name)")
            #expect(Self.encoded(changed) != before, "the reply does not show a change of \(name)")
        }
        // And the reply is one JSON object.
        let value = try JSONParser().parse(before)
        #expect(value["result"] == nil && value["uptime"] == 1.5 && value["syncups"] == 2)
    }

    @Test func onlyAnIdleDaemonWithoutAFailedWriteIsReplayed() {
        var fields = Self.idle
        #expect(fields.isReplayable)
        fields.session = ["state": "running"]
        #expect(!fields.isReplayable)
        fields = Self.idle
        fields.persistenceError = "disk full"
        #expect(!fields.isReplayable)
    }
}
