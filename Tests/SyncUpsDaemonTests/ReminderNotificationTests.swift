import SyncUpsBus
import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol
import Testing

@testable import SyncUpsDaemon

/// Two stand-ups reminded of close together: each reminder is its own notification (its own slot, so the
/// notifier never sends the second as a replacement of the first, as it did: one slot for all reminders).
@Suite struct ReminderNotificationTests {
    func reminder(_ id: String, _ title: String) -> DesktopNotification? {
        DesktopSurfaces.notification(
            for: EventName.scheduleReminder,
            {
                [
                    "syncup": .string(id), "title": .string(title), "startSeconds": 4_000_000_000, "late": false,
                    "schedule": "daily 09:30", "timeZone": "UTC",
                ]
            }, machine: nil)
    }

    @Test func eachSyncUpsReminderHasItsOwnSlot() throws {
        let design = try #require(reminder("00000000-0000-0000-0000-00000000D351", "Design"))
        let ops = try #require(reminder("00000000-0000-0000-0000-0000000000B5", "Ops"))
        #expect(design.slot != ops.slot)
        #expect(design.slot.hasPrefix("reminder:") && ops.slot.hasPrefix("reminder:"))
        #expect(design.actions.map(\.key) == ["start", "snooze", "skip"])
        // The same sync-up's next reminder replaces its own.
        #expect(reminder("00000000-0000-0000-0000-00000000D351", "Design")?.slot == design.slot)
    }
}
