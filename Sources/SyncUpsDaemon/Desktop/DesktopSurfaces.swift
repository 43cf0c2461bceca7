import Glibc
import SyncUpsBus
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// What `status` says about the desktop's surfaces (the `desktop` object), and a generation that counts its
/// changes for the replayed `status` (`StatusStamp`). Filled in by `DesktopSurfaces`; an in-process daemon
/// has none and says so.
final class DesktopStatus {
    private(set) var json: JSONValue
    private(set) var generation = 0

    init(reason: String = "not started (a daemon in process)") {
        json = Self.off(reason)
    }

    func set(_ new: JSONValue) {
        guard new != json else { return }
        json = new
        generation += 1
    }

    static func off(_ reason: String) -> JSONValue {
        .object(["sessionBus": .string("off"), "reason": .string(reason), "mpris": .null])
    }
}

/// The desktop's own surfaces over the session bus: the MPRIS player, derived from the session on every
/// event the daemon publishes (`sessionChanged`), and its media keys' commands performed as the socket's
/// `session.*` commands are.
final class DesktopSurfaces {
    let bus: SessionBus
    let player: MediaPlayer
    private unowned let session: SessionController
    private let status: DesktopStatus

    init(
        loop: EventLoop, environment: [String: String], logger: Logger, session: SessionController,
        status: DesktopStatus
    ) {
        self.session = session
        self.status = status
        bus = SessionBus(loop: loop, environment: environment, logger: logger)
        let player = MediaPlayer(
            bus: bus, instance: "\(getpid())",
            position: { [unowned session] in Self.position(session) },
            perform: { [unowned session] command in Self.perform(command, session: session) })
        self.player = player
        let onStateChange = bus.onStateChange
        bus.onStateChange = { [unowned self] in
            onStateChange()
            updateStatus()
        }
        player.onNameChange = { [unowned self] in
            if let name = self.player.ownedName { logger.notice("MPRIS: \(name) on the session bus") }
            updateStatus()
        }
        updateStatus()
        sessionChanged()
    }

    func start() { bus.start() }

    func close() { bus.close() }

    private func updateStatus() {
        switch bus.state {
        case .off(let reason):
            status.set(DesktopStatus.off(reason))
        case .connecting:
            status.set(.object(["sessionBus": .string("connecting"), "reason": .null, "mpris": .null]))
        case .connected:
            status.set(
                .object([
                    "sessionBus": .string("connected"), "reason": .null,
                    "mpris": player.ownedName.map(JSONValue.string) ?? .null,
                ]))
        }
    }

    /// Runs after every published event: the player's state follows the session's.
    func sessionChanged() {
        player.update(Self.playerState(session.active?.machine))
    }

    static func playerState(_ machine: SessionMachine?) -> MediaPlayerState {
        var state = MediaPlayerState()
        guard let machine, !machine.isStarting, machine.phase != .ending, !machine.isOver else { return state }
        state.status = machine.phase == .running ? .playing : .paused
        let meeting = String("\(machine.meetingID)".map { $0.isLetter || $0.isNumber ? $0 : "_" })
        state.trackID = "/org/syncupsd/Meeting/_\(meeting)/\(machine.speakerIndex)"
        let name = machine.speaker.map { $0.name.isEmpty ? "(no name)" : $0.name } ?? "nobody"
        state.title = "\(name) · \(machine.speakerIndex + 1)/\(machine.syncUp.attendees.count)"
        state.album = machine.syncUp.title
        state.artist = name
        state.lengthSeconds = machine.secondsPerAttendee
        state.theme = machine.syncUp.theme.name
        state.themeColor = machine.syncUp.theme.mainColor.hex
        state.canGoNext = true
        state.canPause = machine.phase == .running
        // playerctl reads no metadata from a player that cannot play: a meeting can always go on.
        state.canPlay = true
        return state
    }

    /// The time in the current turn, in microseconds (the timer's whole seconds).
    private static func position(_ session: SessionController) -> Int64 {
        guard let machine = session.active?.machine else { return 0 }
        let inTurn = machine.secondsElapsed - machine.speakerIndex * machine.secondsPerAttendee
        return Int64(max(0, inTurn)) * 1_000_000
    }

    private static func perform(_ command: MediaPlayerCommand, session: SessionController) -> String? {
        let request: SessionMachine.Request
        let phase = session.active?.machine.phase
        switch command {
        case .next: request = .next
        // MPRIS: Play while playing and Pause while paused do nothing.
        case .pause where phase == .paused, .play where phase == .running: return nil
        case .pause: request = .pause
        case .play: request = .resume
        case .playPause: request = phase == .paused ? .resume : .pause
        case .stop: request = .end(.save)
        }
        do {
            _ = try session.request(request)
            return nil
        } catch {
            return error.message
        }
    }
}
