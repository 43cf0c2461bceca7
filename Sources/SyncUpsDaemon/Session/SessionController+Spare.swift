import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsSpeech
import Synchronization

/// The next meeting's speech engine, started ahead (a spare): a speech command costs about a second of CPU and
/// more of wall time to start (imports, model load, warm-up), which the first words of a meeting would wait
/// for. One at most; started when a meeting ends, when a stand-up's reminder is shown, and at start-up if
/// configured (`speech-spare-at-start`); ended after `speech-spare-idle` unused, when the speech settings are
/// reloaded, and when the daemon stops. A spare that dies (or hangs, or floods its output: its engine is
/// bound as a meeting's) is simply not there: the next meeting starts a fresh engine, as without spares.
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

    fileprivate(set) var phase: Phase
    /// Counts the spares asked for: a report about another one is old.
    fileprivate(set) var generation = 0
    /// Counts the changes of `phase`, for `status`'s replay stamp.
    fileprivate(set) var phaseChanges = 0
    fileprivate var idleTimer: EventLoop.Timer?
    /// The engine itself, where the clean-up worker puts it and a meeting's start (on the same worker) takes it.
    let slot = SpareSlot()

    init(phase: Phase = .none) { self.phase = phase }

    fileprivate mutating func move(to phase: Phase) {
        guard phase != self.phase else { return }
        self.phase = phase
        phaseChanges &+= 1
    }
}

/// The spare's engine, shared by the loop and the clean-up worker.
final class SpareSlot: Sendable {
    private let state = Mutex<(wanted: Int?, prepared: PreparedRecognition?)>((nil, nil))

    /// The spare `generation` is wanted from now on.
    func want(_ generation: Int) { state.withLock { $0.wanted = generation } }

    func isWanted(_ generation: Int) -> Bool { state.withLock { $0.wanted == generation } }

    /// Keeps the started engine if it is still wanted; false: the caller discards it.
    func offer(_ prepared: PreparedRecognition, as generation: Int) -> Bool {
        state.withLock { state in
            guard state.wanted == generation, state.prepared == nil else { return false }
            state.prepared = prepared
            return true
        }
    }

    /// The engine, if there is one; none is wanted any more.
    func take() -> PreparedRecognition? {
        state.withLock { state in
            defer { state = (nil, nil) }
            return state.prepared
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

extension SessionController {
    /// Whether the configured engine can be started ahead.
    var sparesAreOn: Bool { settings.recognizer?.prepare != nil && settings.spareIdleTimeout > .zero }

    /// Starts the next meeting's engine ahead on the clean-up worker, unless one is there or being started,
    /// or a meeting runs (it has its engine; the next is started when it ends).
    func prepareSpare(because reason: String) {
        guard sparesAreOn, spare.phase == .none, active == nil, let recognizer = settings.recognizer,
            let prepare = recognizer.prepare
        else { return }
        spare.generation += 1
        let (generation, slot) = (spare.generation, spare.slot)
        slot.want(generation)
        let queued = cleanup.tryRun { [mailbox] in
            // Ended (or taken) before its turn: not started at all.
            guard slot.isWanted(generation) else { return }
            do throws(SpeechError) {
                let prepared = try prepare { event in mailbox.post(.spare(.said(generation, event))) }
                if !slot.offer(prepared, as: generation) { prepared.discard() }
                mailbox.post(.spare(.started(generation, error: nil)))
            } catch {
                mailbox.post(.spare(.started(generation, error: error)))
            }
        }
        guard queued else { return }
        spare.move(to: .starting)
        logger.info("speech: starting the next meeting's engine ahead (\(reason))")
    }

    /// A meeting's start takes the spare (on the clean-up worker, after its start if that is still queued).
    func spareTaken() {
        spare.idleTimer.map(loop.cancel)
        spare.idleTimer = nil
        spare.move(to: sparesAreOn ? .none : .off)
    }

    /// Ends the spare, if there is one (its process group is killed; the engine is reaped on its own thread).
    func endSpare(_ reason: String) {
        spare.idleTimer.map(loop.cancel)
        spare.idleTimer = nil
        spare.slot.take()?.discard()
        if spare.phase == .warm || spare.phase == .starting {
            logger.info("speech: ended the engine started ahead: \(reason)")
        }
        spare.move(to: sparesAreOn ? .none : .off)
    }

    /// The speech settings changed (SIGHUP): a spare runs the old ones.
    func speechSettingsChanged() {
        endSpare("the speech settings were reloaded")
        if settings.preparesSpareAtStart { prepareSpare(because: "the speech settings were reloaded") }
    }

    func receive(_ report: SpareReport) {
        switch report {
        case .started(let generation, let error):
            guard generation == spare.generation, spare.phase == .starting else { return }
            if let error {
                logger.warning("speech: cannot start the next meeting's engine ahead: \(error)")
                spare.move(to: .none)
                return
            }
            let idle = settings.spareIdleTimeout
            spare.idleTimer = loop.schedule(after: idle) { [unowned self] in
                spare.idleTimer = nil
                endSpare("unused for \(Int(idle.seconds)) s (speech-spare-idle)")
            }
        case .said(let generation, .failed(let message)):
            guard generation == spare.generation, spare.phase == .warm || spare.phase == .starting else { return }
            logger.warning("speech: the engine started ahead ended (\(message)); the next meeting starts a fresh one")
            endSpare("it failed")
        case .said(let generation, .ready):
            guard generation == spare.generation, spare.phase == .starting else { return }
            spare.move(to: .warm)
        case .said(_, .log(let line)):
            logger.info("speech (started ahead): \(line)")
        case .said:
            break
        }
    }
}
