import Foundation
import SyncUpsBus
import SyncUpsCore
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// The MPRIS player's state is built again only when what it shows changes: every published event asks (a
/// tick a second, each transcript change), and before, each built it anew (its track id, title and theme text).
@Suite struct PlayerFollowerTests {
    @Test func thePlayerIsRebuiltOnlyWhenWhatItShowsChanges() throws {
        // 60 s for 3: 20 s each.
        var (machine, _) = SessionMachine.start(
            syncUp: .fixture(attendees: 3, seconds: 60), meetingID: Meeting.ID(UUID(counting: 0)),
            startDate: Date(timeIntervalSince1970: 0), transcribes: false)
        var follower = DesktopSurfaces.PlayerFollower()
        var built: [MediaPlayerState] = []
        func published() {
            if let state = follower.follow(machine) { built.append(state) }
        }
        published()
        for second in 1...19 {
            _ = machine.handle(.timerTicked, at: Double(second))
            published()
            published()  // the transcript, say
        }
        #expect(built.count == 1, "38 events within the first turn rebuilt the player")
        #expect(built.first?.status == .playing && built.first?.title == "Blob 1 · 1/3")
        #expect(built.last == DesktopSurfaces.playerState(machine))
        _ = machine.handle(.timerTicked, at: 20)  // the timer passes the floor to Blob 2
        published()
        #expect(built.count == 2)
        _ = try machine.request(.pause, at: 20.5)
        published()
        published()
        #expect(built.count == 3)
        #expect(built.last?.status == .paused && built.last == DesktopSurfaces.playerState(machine))
        #expect(built.map(\.title).suffix(2) == ["Blob 2 · 2/3", "Blob 2 · 2/3"])
    }
}
