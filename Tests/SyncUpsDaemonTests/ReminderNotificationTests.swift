import Foundation
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
            }, machine: nil, now: Date(timeIntervalSince1970: 4_000_000_000 - 300))
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

    /// "In 5 min" from the daemon's wall clock (a fixed date here), not from a second clock it read itself.
    @Test func countsTheMinutesFromTheDaemonsWallClock() throws {
        #expect(try #require(reminder("00000000-0000-0000-0000-00000000D351", "Design")).summary == "Design in 5 min")
    }
}

/// The floor's notification says what the status line says: the time left of the turn as the timer passes
/// the floor (the last speaker's slot runs to the meeting's end) and the place in the meeting's own rotation.
@Suite struct FloorNotificationTests {
    func floor(_ machine: SessionMachine) -> DesktopNotification? {
        DesktopSurfaces.notification(for: "session.speaker", { [:] }, machine: machine, now: Date())
    }

    @Test func theLastSpeakerHasTheRestOfTheMeeting() throws {
        // 7 s for 3: 2 s each, and the last slot runs from 4 to 7.
        var (machine, _) = SessionMachine.start(
            syncUp: .fixture(attendees: 3, seconds: 7), meetingID: Meeting.ID(UUID(counting: 0)),
            startDate: Date(timeIntervalSince1970: 0), transcribes: false)
        // Passed on twice: the last speaker's slot starts at 4 s.
        _ = try machine.request(.next, at: 0.5)
        _ = try machine.request(.next, at: 1)
        #expect(machine.speakerIndex == 2 && machine.secondsElapsed == 4)
        #expect(machine.turnRemaining == 3)
        let shown = try #require(floor(machine))
        #expect(shown.summary == "Blob 3's turn · 00:03")
        #expect(shown.body == "Design · 3/3")
    }

    @Test func countsTheMeetingsRotationNotTheSyncUpsAttendees() throws {
        let syncUp = SyncUp.fixture(attendees: 3, seconds: 6)
        let (machine, _) = SessionMachine.start(
            syncUp: syncUp, meetingID: Meeting.ID(UUID(counting: 0)), startDate: Date(timeIntervalSince1970: 0),
            transcribes: false, roster: try MeetingRoster(syncUp.attendees, absent: ["Blob 2"]))
        let shown = try #require(floor(machine))
        #expect(shown.summary == "Blob 1's turn · 00:03")
        #expect(shown.body == "Design · 1/2")
    }
}
