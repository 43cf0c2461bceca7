import SyncUpsJSON
import Testing

@testable import SyncUpsDaemon

/// `status`'s reply is encoded from `StatusFields` alone, and the replay cache's stamp is derived from it: a
/// change to any field changes the reply and either moves the stamp or makes the reply unreplayable, so a
/// replayed `status` never says an old value. A new field without a row here fails `everyFieldHasAChange`;
/// a field whose change the stamp misses fails `eachChangeMovesTheStampAndTheReply`.
@Suite struct StatusFieldsTests {
    static let idle = StatusFields(
        counters: StatusFields.Counters(
            uptimeMilliseconds: 1_500, syncUps: 2, meetings: 3, connections: 1, subscribers: 0, seq: 4, timers: 0,
            hasUnsavedChanges: false, isSynced: true, settingsGeneration: 0, desktopGeneration: 0,
            scheduleGeneration: 0, spareChanges: 0),
        session: .null,
        settings: StatusFields.SettingsNames(
            speechEngine: "pocketsphinx", audioDevice: "default", voices: "voices off: no voice model configured"),
        next: .null, desktop: ["sessionBus": "off", "reason": "no session bus"], persistenceError: nil)

    /// One change for each field, named as the field (a counter by its own name).
    static let changes: [(String, @Sendable (inout StatusFields) -> Void)] = [
        ("uptimeMilliseconds", { $0.counters.uptimeMilliseconds += 1 }),
        ("syncUps", { $0.counters.syncUps += 1 }),
        ("meetings", { $0.counters.meetings += 1 }),
        ("connections", { $0.counters.connections += 1 }),
        ("subscribers", { $0.counters.subscribers += 1 }),
        ("seq", { $0.counters.seq += 1 }),
        ("timers", { $0.counters.timers += 1 }),
        ("hasUnsavedChanges", { $0.counters.hasUnsavedChanges.toggle() }),
        ("isSynced", { $0.counters.isSynced.toggle() }),
        (
            "settingsGeneration",
            {
                // The settings' names change only with their generation (`SessionController.settings`).
                $0.counters.settingsGeneration += 1
                $0.settings = StatusFields.SettingsNames(
                    speechEngine: "command", audioDevice: "pipewire", voices: "on: ge2e from /m")
            }
        ),
        (
            "desktopGeneration",
            {
                // The desktop object changes only with its generation (`DesktopStatus`).
                $0.counters.desktopGeneration += 1
                $0.desktop = ["sessionBus": "connected"]
            }
        ),
        (
            "scheduleGeneration",
            {
                $0.counters.scheduleGeneration += 1
                $0.next = ["title": "Design", "inSeconds": 240]
            }
        ),
        (
            "spareChanges",
            {
                // The spare's state changes only with its count (`SpareEngine.move`).
                $0.counters.spareChanges += 1
                $0.speechSpare = "warm"
            }
        ),
        ("session", { $0.session = ["state": "running"] }),
        (
            "settings",
            {
                $0.counters.settingsGeneration += 1
                $0.settings.audioDevice = "hw:1"
            }
        ),
        (
            "speechSpare",
            {
                $0.counters.spareChanges += 1
                $0.speechSpare = "starting"
            }
        ),
        (
            "next",
            {
                $0.counters.scheduleGeneration += 1
                $0.next = ["title": "Standup", "inSeconds": 60]
            }
        ),
        (
            "desktop",
            {
                $0.counters.desktopGeneration += 1
                $0.desktop = ["sessionBus": "connecting"]
            }
        ),
        ("persistenceError", { $0.persistenceError = "disk full" }),
        // Alone: the stamp must not rely on `persistenceError` being set whenever a warning holds.
        ("failingWarnings", { $0.failingWarnings = ["cannot write the details of a recovered meeting"] }),
    ]

    static func encoded(_ fields: StatusFields) -> [UInt8] {
        var bytes: [UInt8] = []
        StatusEncoder(prefix: Array(#"{"version":"test""#.utf8), warnings: ["w"]).encode(
            fields, into: &bytes)
        return bytes
    }

    @Test func everyFieldHasAChange() {
        let counters = Mirror(reflecting: Self.idle.counters).children.compactMap(\.label)
        let others = Mirror(reflecting: Self.idle).children.compactMap(\.label).filter { $0 != "counters" }
        #expect(counters + others == Self.changes.map(\.0))
    }

    @Test func eachChangeMovesTheStampAndTheReply() throws {
        let before = Self.encoded(Self.idle)
        #expect(Self.idle.stamp != nil)
        for (name, change) in Self.changes {
            var changed = Self.idle
            change(&changed)
            #expect(changed.stamp != Self.idle.stamp, "the stamp misses a change of \(name)")
            #expect(Self.encoded(changed) != before, "the reply does not show a change of \(name)")
        }
        let value = try JSONParser().parse(before)
        #expect(value["uptime"] == 1.5 && value["syncups"] == 2 && value["audioDevice"] == "default")
    }

    @Test func onlyAnIdleDaemonWithoutAFailedWriteIsReplayed() {
        var fields = Self.idle
        #expect(fields.stamp == fields.counters)
        fields.session = ["state": "running"]
        #expect(fields.stamp == nil)
        fields = Self.idle
        fields.persistenceError = "disk full"
        #expect(fields.stamp == nil)
        fields = Self.idle
        fields.failingWarnings = ["cannot write the details of a recovered meeting"]
        #expect(fields.stamp == nil)
    }
}
