import SyncUpsSpeech
import Synchronization

/// The next meeting's speech engine, started ahead (a spare): a speech command costs about a second of CPU and
/// more of wall time to start (imports, model load, warm-up), which the first words of a meeting would wait
/// for. One at most; started when a meeting ends, when a stand-up's reminder is shown, and at start-up if
/// configured (`speech-spare-at-start`); ended after `speech-spare-idle` unused, when the speech settings are
/// reloaded, and when the daemon stops. A spare that dies (or hangs, or floods its output: its engine is
/// bound as a meeting's) is simply not there: the next meeting starts a fresh engine, as without spares.
///
/// Its phases as a machine, in the session's style: each input returns what to do, and
/// `SessionController+Spare` does it (the start on the clean-up worker, the idle timer, the engine's end, the
/// log). No IO, no clock, no thread here.
struct SpareEngine {
    enum Phase: String, Sendable, Equatable {
        /// The configured engine cannot be started ahead (PocketSphinx runs in process, none), or
        /// `speech-spare-idle` is 0.
        case off
        /// None now.
        case none
        /// Being started (on the clean-up worker, then by the engine itself: loading its model).
        case starting
        /// Up (it wrote its first line), waiting for a meeting.
        case warm
    }

    /// What the controller does after an input, in order.
    enum Action: Equatable {
        /// Start the spare `generation` on the clean-up worker (the slot wants it from now on), and say whether
        /// the start was queued (`queued`).
        case start(generation: Int)
        /// Arm the idle timer: after `speech-spare-idle` the spare ends (`end`), unless a meeting takes it.
        case armIdleTimer
        case cancelIdleTimer
        /// End the engine the worker left in the slot, if any (its process group is killed).
        case discardEngine
        /// The spare that was starting or up has ended (for the log, with the reason the controller knows).
        case reportEnded
        /// Its start failed; the next meeting starts a fresh engine.
        case reportStartFailure(String)
        /// It died, hung or flooded before a meeting took it (the actions that end it follow).
        case reportDeath(String)
        /// A line it wrote to its log.
        case reportLog(String)
    }

    private(set) var phase: Phase
    /// Counts the spares asked for: a report about another one is old.
    private(set) var generation = 0
    /// Counts the changes of `phase`, for `status`'s replay stamp.
    private(set) var phaseChanges = 0

    /// `isOn`: whether the configured engine can be started ahead (`SessionController.sparesAreOn`).
    init(isOn: Bool) { phase = isOn ? .none : .off }

    /// A spare is wanted (the daemon started, a meeting ended, a reminder): its start, unless one is there or
    /// being started, spares are off, or a meeting runs (it has its engine; the next is wanted when it ends).
    mutating func want(whileAMeetingRuns meetingRuns: Bool) -> [Action] {
        guard phase == .none, !meetingRuns else { return [] }
        generation += 1
        return [.start(generation: generation)]
    }

    /// Whether the start that `want` asked for was queued: if not (the worker's queue was full), none is
    /// being started.
    mutating func queued(_ wasQueued: Bool) {
        if wasQueued { move(to: .starting) }
    }

    /// A meeting's start takes the spare (the clean-up worker takes its engine from the slot, after its start
    /// if that is still queued).
    mutating func taken() -> [Action] {
        move(to: phase == .off ? .off : .none)
        return [.cancelIdleTimer]
    }

    /// Ends the spare, if there is one: idle too long, the daemon stopping, its engine dead.
    mutating func end() -> [Action] { end(to: phase == .off ? .off : .none) }

    /// The speech settings changed (a SIGHUP): a spare runs the old ones, so it ends; `isOn` as for `init`.
    mutating func settingsChanged(isOn: Bool) -> [Action] { end(to: isOn ? .none : .off) }

    private mutating func end(to next: Phase) -> [Action] {
        let wasThere = phase == .starting || phase == .warm
        move(to: next)
        return [.cancelIdleTimer, .discardEngine] + (wasThere ? [.reportEnded] : [])
    }

    /// What the spare's start and its engine report (through the mailbox, in the order they were posted: the
    /// engine's first line may come before the worker reports the start that launched it).
    mutating func receive(_ report: SpareReport) -> [Action] {
        switch report {
        case .started(let reported, let error):
            guard isCurrent(reported) else { return [] }
            guard let error else { return [.armIdleTimer] }
            move(to: .none)
            return [.reportStartFailure("\(error)")]
        case .said(let reported, .failed(let message)):
            guard isCurrent(reported) else { return [] }
            return [.reportDeath(message)] + end()
        case .said(let reported, .ready):
            guard reported == generation, phase == .starting else { return [] }
            move(to: .warm)
            return []
        case .said(_, .log(let line)):
            return [.reportLog(line)]
        case .said:
            return []
        }
    }

    /// Whether a report is about the spare being started or up now.
    private func isCurrent(_ reported: Int) -> Bool {
        reported == generation && (phase == .starting || phase == .warm)
    }

    private mutating func move(to phase: Phase) {
        guard phase != self.phase else { return }
        self.phase = phase
        phaseChanges &+= 1
    }
}

/// The spare's engine, shared by the loop and the clean-up worker: which spare is wanted (its start on the
/// worker begins only then), and the engine started, with its spare's generation.
final class SpareSlot: Sendable {
    private let state = Mutex<(wanted: Int?, prepared: (generation: Int, engine: PreparedRecognition)?)>((nil, nil))

    /// The spare `generation` is wanted from now on.
    func want(_ generation: Int) { state.withLock { $0.wanted = generation } }

    func isWanted(_ generation: Int) -> Bool { state.withLock { $0.wanted == generation } }

    /// Keeps the started engine if it is still wanted; false: the caller discards it.
    func offer(_ prepared: PreparedRecognition, as generation: Int) -> Bool {
        state.withLock { state in
            guard state.wanted == generation, state.prepared == nil else { return false }
            state.prepared = (generation, prepared)
            return true
        }
    }

    /// A meeting's start (on the worker) takes the spare `generation`, the one there when it began: its
    /// engine, if it was started, and it is no longer wanted. A later spare, wanted meanwhile (the meeting
    /// ended before its start's turn on the worker, and the next was asked for), stays wanted: taking it too
    /// left its start skipped and the machine waiting for it for ever (attack 92).
    func take(_ generation: Int) -> PreparedRecognition? {
        state.withLock { state in
            if state.wanted == generation { state.wanted = nil }
            guard let prepared = state.prepared, prepared.generation == generation else { return nil }
            state.prepared = nil
            return prepared.engine
        }
    }

    /// The spare ends: its engine, whichever it is, and none is wanted any more.
    func takeAll() -> PreparedRecognition? {
        state.withLock { state in
            defer { state = (nil, nil) }
            return state.prepared?.engine
        }
    }
}

/// What the spare's start and its engine report, through the mailbox.
enum SpareReport: Sendable {
    /// The spare `generation` started, or failed to.
    case started(Int, error: SpeechError?)
    /// What the spare `generation` said before a meeting took it: a log line, or its death (`.failed`).
    case said(Int, RecognizerEvent)
}
