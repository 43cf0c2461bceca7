import FoundationEssentials
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

    /// `sessionBus` (connected, connecting or off), `reason` it is off, the `mpris` name owned, and the
    /// `notify` level.
    static func json(bus: String, reason: String?, mpris: String?, notify: String) -> JSONValue {
        .object([
            "sessionBus": .string(bus), "reason": reason.map(JSONValue.string) ?? .null,
            "mpris": mpris.map(JSONValue.string) ?? .null, "notify": .string(notify),
        ])
    }

    static func off(_ reason: String) -> JSONValue {
        json(bus: "off", reason: reason, mpris: nil, notify: NotificationLevel.none.rawValue)
    }
}

/// The desktop's own surfaces over the session bus: the MPRIS player, derived from the session on every
/// event the daemon publishes (`sessionChanged`), and its media keys' commands performed as the socket's
/// `session.*` commands are.
final class DesktopSurfaces {
    let bus: SessionBus
    let player: MediaPlayer
    let notifier: Notifier
    /// `notify`: which notifications show; SIGHUP changes it.
    var notificationLevel = NotificationLevel.all {
        didSet { updateStatus() }
    }
    private unowned let session: SessionController
    private unowned let scheduler: Scheduler
    /// The sync-up and start of each reminder on screen (by its slot, one a sync-up), for its buttons.
    private var reminders: [String: (id: SyncUp.ID, start: Int64)] = [:]
    private let status: DesktopStatus
    /// Now, for a reminder's "in 5 min": the daemon's wall clock, as the scheduler's.
    private let wallClock: WallClock
    /// What the player shows, rebuilt only when that changes (not at each tick or transcript).
    private var follower = PlayerFollower()
    /// The failing writes of the user's data: one notification an episode.
    private var failures = FailureNotice()

    init(
        loop: EventLoop, environment: [String: String], logger: Logger, session: SessionController,
        scheduler: Scheduler, status: DesktopStatus, wallClock: WallClock = .system
    ) {
        self.wallClock = wallClock
        self.session = session
        self.scheduler = scheduler
        self.status = status
        bus = SessionBus(loop: loop, environment: environment, logger: logger)
        let player = MediaPlayer(
            bus: bus, instance: "\(getpid())",
            position: { [unowned session] in Self.position(session) },
            perform: { [unowned session] command in Self.perform(command, session: session) })
        self.player = player
        notifier = Notifier(bus: bus)
        notifier.onAction = { [unowned self] slot, action in actionInvoked(slot: slot, action: action) }
        let onStateChange = bus.onStateChange  // the player's and the notifier's
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
        let notify = notificationLevel.rawValue
        switch bus.state {
        case .off(let reason):
            status.set(DesktopStatus.json(bus: "off", reason: reason, mpris: nil, notify: notify))
        case .connecting:
            status.set(DesktopStatus.json(bus: "connecting", reason: nil, mpris: nil, notify: notify))
        case .connected:
            status.set(DesktopStatus.json(bus: "connected", reason: nil, mpris: player.ownedName, notify: notify))
        }
    }

    /// Runs after every published event: the player's state follows the session's, and some events show a
    /// notification.
    func published(_ topic: Topic, _ name: String, _ data: () -> JSONValue) {
        sessionChanged()
        let canShow = notificationLevel != .none && bus.isConnected
        if name == EventName.persistenceFailed || name == EventName.persistenceRecovered {
            // Followed whether or not it can show, so an episode ends with its recovery; at every level, since
            // the recovery replaces the failure's critical notification.
            if let notification = failures.notification(for: name, canShow: canShow, data) {
                notifier.show(notification)
            }
            return
        }
        guard canShow, name != EventName.sessionTick, name != EventName.sessionTranscript else { return }
        if name == EventName.scheduleReminder {
            let event = data()
            if let id = event["syncup"]?.stringValue.flatMap(SyncUp.ID.init(uuidString:)),
                let start = event["startSeconds"]?.numberValue?.int64
            {
                reminders[Self.reminderSlot(id)] = (id, start)
            }
        }
        if let notification = Self.notification(for: name, data, machine: session.active?.machine, now: wallClock()),
            notificationLevel == .all || notification.urgency == .critical
                || notification.slot == "saved" || notification.slot.hasPrefix("reminder:")
        {
            notifier.show(notification)
        }
    }

    func sessionChanged() {
        if let state = follower.follow(session.active?.machine) { player.update(state) }
    }

    /// The notification an event shows, if any: the floor (one slot, replaced in place, with Next and Pause),
    /// the meeting saved, and what went wrong (critical); the failing writes of the user's data are
    /// `FailureNotice`'s.
    static func notification(for name: String, _ data: () -> JSONValue, machine: SessionMachine?, now: Date)
        -> DesktopNotification?
    {
        switch name {
        case EventName.sessionStarted, EventName.sessionSpeaker, EventName.sessionResumed:
            guard let machine, machine.phase == .running, let speaker = machine.speaker else { return nil }
            let speakerName = Attendee.shown(speaker.name)
            return DesktopNotification(
                slot: "floor", summary: "\(speakerName)'s turn · \(DurationText.clock(machine.turnRemaining))",
                body: "\(machine.syncUp.title) · \(machine.speakerIndex + 1)/\(machine.roster.rotationCount)",
                actions: [.init("next", "Next"), .init("pause", "Pause")], urgency: .low)
        case EventName.sessionPaused:
            guard let machine else { return nil }
            return DesktopNotification(
                slot: "floor", summary: "\(machine.syncUp.title) paused",
                body:
                    "\(machine.speaker?.name ?? "nobody") has the floor, \(DurationText.clock(machine.durationRemaining)) left",
                actions: [.init("resume", "Resume"), .init("next", "Next")], urgency: .low)
        case EventName.sessionEnding:
            // Everyone spoke: the floor's Next would do nothing; save or go on.
            guard let machine, machine.phase == .ending, machine.pendingEnding == nil else { return nil }
            return DesktopNotification(
                slot: "floor", summary: "\(machine.syncUp.title): everyone has spoken",
                body: "Save the meeting, or resume it", actions: [.init("save", "Save"), .init("resume", "Resume")],
                urgency: .low)
        case EventName.sessionEnded:
            let event = data()
            guard event["outcome"] == "saved", let meeting = event["meeting"] else { return nil }
            let title = event["session"]?["title"]?.stringValue ?? machine?.syncUp.title ?? "the sync-up"
            return DesktopNotification(
                slot: "saved", summary: "\(title): meeting saved",
                body:
                    "\(meeting["transcript"]?.stringValue?.isEmpty == false ? "with its transcript; " : "")syncupsctl meeting \"\(title)\" shows it",
                actions: [], urgency: .normal)
        case EventName.sessionError:
            // Speech that failed and a journal that cannot be written are important; a cue that did not
            // play or a microphone's trouble are for `all`.
            guard let message = data()["message"]?.stringValue else { return nil }
            let isSpeech = message.hasPrefix("speech recognition failed")
            let isImportant = isSpeech || message.contains("journal")
            return DesktopNotification(
                slot: "problem",
                summary: "\(machine?.syncUp.title ?? "syncupsd"): \(isSpeech ? "speech failed" : "a problem")",
                body: message, urgency: isImportant ? .critical : .normal)
        case EventName.scheduleReminder:
            let event = data()
            let title = event["title"]?.stringValue ?? "a sync-up"
            let now = Int64(now.timeIntervalSince1970.rounded(.down))
            let start = event["startSeconds"]?.numberValue?.int64 ?? now
            let minutes = max(0, (start - now + 59) / 60)
            let summary =
                event["late"] == true
                ? "\(title) \(start > now ? "in \(minutes) min" : "started \((now - start) / 60) min ago") (missed)"
                : start > now ? "\(title) in \(minutes) min" : "\(title) now"
            let id = event["syncup"]?.stringValue.flatMap(SyncUp.ID.init(uuidString:))
            return DesktopNotification(
                slot: id.map(reminderSlot) ?? "reminder:", summary: summary,
                body: "\(event["schedule"]?.stringValue ?? "") \(event["timeZone"]?.stringValue ?? "")",
                actions: [.init("start", "Start"), .init("snooze", "Snooze 5 min"), .init("skip", "Skip today")],
                urgency: .normal)
        default:
            return nil
        }
    }

    /// Each sync-up's reminder is its own notification: two close stand-ups' reminders both show.
    static func reminderSlot(_ id: SyncUp.ID) -> String { "reminder:\(id)" }

    /// A notification's button: Next, Pause and Resume do what the media keys do.
    private func actionInvoked(slot: String, action: String) {
        if slot.hasPrefix("reminder:") {
            guard let reminder = reminders[slot] else { return }
            switch action {
            case "start":
                do {
                    _ = try session.start(syncUp: reminder.id.description, audio: nil, transcribe: nil)
                } catch {
                    notifier.show(
                        DesktopNotification(slot: "problem", summary: "syncupsd", body: error.message, urgency: .normal)
                    )
                }
            case "snooze": scheduler.snooze(reminder.id, start: reminder.start)
            case "skip": scheduler.skip(reminder.id, start: reminder.start)
            default: break
            }
            return
        }
        let command: MediaPlayerCommand
        switch action {
        case "next": command = .next
        case "pause": command = .pause
        case "resume": command = .play
        case "save": command = .stop
        default: return
        }
        if let refusal = Self.perform(command, session: session) {
            notifier.show(DesktopNotification(slot: "problem", summary: "syncupsd", body: refusal, urgency: .normal))
        }
    }

    /// What the player shows of a meeting, before any text is made of it: nil when there is nothing to
    /// control. Waiting at the end (everyone spoke) is Paused with the meeting's track: Stop saves it, Play goes
    /// on. Only a meeting starting, being saved (or over) has nothing.
    struct PlayerView: Equatable {
        var meetingID: Meeting.ID
        var phase: SessionMachine.Phase
        var speakerIndex: Int
        var speakerName: String?
        var attendeeCount: Int
        var title: String
        var secondsPerAttendee: Int
        var theme: Theme

        init?(_ machine: SessionMachine?) {
            guard let machine, !machine.isStarting, machine.pendingEnding == nil, !machine.isOver else { return nil }
            meetingID = machine.meetingID
            phase = machine.phase
            speakerIndex = machine.speakerIndex
            speakerName = machine.speaker?.name
            attendeeCount = machine.syncUp.attendees.count
            title = machine.syncUp.title
            secondsPerAttendee = machine.secondsPerAttendee
            theme = machine.syncUp.theme
        }
    }

    /// The player's state, built again only when its view changes: every published event asks (a tick a
    /// second, each transcript change), and most change nothing the player shows.
    struct PlayerFollower {
        /// The view last built (`.none` before the first; `.some(nil)`: nothing to control).
        private var shown: PlayerView?? = .none

        /// The state for `machine` if it shows something else than the last one did; nil if not.
        mutating func follow(_ machine: SessionMachine?) -> MediaPlayerState? {
            let view = PlayerView(machine)
            guard shown != .some(view) else { return nil }
            shown = .some(view)
            return DesktopSurfaces.playerState(view)
        }
    }

    static func playerState(_ machine: SessionMachine?) -> MediaPlayerState { playerState(PlayerView(machine)) }

    static func playerState(_ view: PlayerView?) -> MediaPlayerState {
        var state = MediaPlayerState()
        guard let view else { return state }
        state.status = view.phase == .running ? .playing : .paused
        let meeting = String("\(view.meetingID)".map { $0.isLetter || $0.isNumber ? $0 : "_" })
        state.trackID = "/org/syncupsd/Meeting/_\(meeting)/\(view.speakerIndex)"
        let name = view.speakerName.map(Attendee.shown) ?? "nobody"
        state.title = "\(name) · \(view.speakerIndex + 1)/\(view.attendeeCount)"
        state.album = view.title
        state.artist = name
        state.lengthSeconds = view.secondsPerAttendee
        state.theme = view.theme.name
        state.themeColor = view.theme.mainColor.hex
        state.canGoNext = view.phase != .ending
        state.canPause = view.phase == .running
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
