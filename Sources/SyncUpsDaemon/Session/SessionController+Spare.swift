import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsSpeech

/// The next meeting's engine, started ahead (`SpareEngine`): the controller turns the daemon's moments into
/// the machine's inputs and does what it returns.
extension SessionController {
    /// Whether the configured engine can be started ahead.
    var sparesAreOn: Bool { settings.recognizer?.prepare != nil && settings.spareIdleTimeout > .zero }

    /// Starts the next meeting's engine ahead on the clean-up worker, unless one is there or being started,
    /// or a meeting runs.
    func prepareSpare(because reason: String) {
        perform(spare.want(whileAMeetingRuns: active != nil), because: reason)
    }

    /// A meeting's start takes the spare (on the clean-up worker, after its start if that is still queued).
    func spareTaken() {
        perform(spare.taken(), because: "a meeting took it")
    }

    /// Ends the spare, if there is one (its process group is killed; the engine is reaped on its own thread).
    func endSpare(_ reason: String) {
        perform(spare.end(), because: reason)
    }

    /// The speech settings changed (SIGHUP): a spare runs the old ones.
    func speechSettingsChanged() {
        perform(spare.settingsChanged(isOn: sparesAreOn), because: "the speech settings were reloaded")
        if settings.preparesSpareAtStart { prepareSpare(because: "the speech settings were reloaded") }
    }

    func receive(_ report: SpareReport) {
        perform(spare.receive(report), because: "it failed")
    }

    private func perform(_ actions: [SpareEngine.Action], because reason: String) {
        for action in actions {
            switch action {
            case .start(let generation):
                start(spareGeneration: generation, because: reason)
            case .armIdleTimer:
                spareIdleTimer.map(loop.cancel)
                let idle = settings.spareIdleTimeout
                spareIdleTimer = loop.schedule(after: idle) { [unowned self] in
                    spareIdleTimer = nil
                    endSpare("unused for \(Int(idle.seconds)) s (speech-spare-idle)")
                }
            case .cancelIdleTimer:
                spareIdleTimer.map(loop.cancel)
                spareIdleTimer = nil
            case .discardEngine:
                spareSlot.takeAll()?.discard()
            case .reportEnded:
                logger.info("speech: ended the engine started ahead: \(reason)")
            case .reportStartFailure(let error):
                logger.warning("speech: cannot start the next meeting's engine ahead: \(error)")
            case .reportDeath(let message):
                logger.warning(
                    "speech: the engine started ahead ended (\(message)); the next meeting starts a fresh one")
            case .reportLog(let line):
                logger.info("speech (started ahead): \(line)")
            }
        }
    }

    /// The spare `generation`'s start on the clean-up worker: ended (or taken) before its turn, it is not
    /// started at all; started after it stopped being wanted, it is discarded there.
    private func start(spareGeneration generation: Int, because reason: String) {
        guard let prepare = settings.recognizer?.prepare else { return spare.queued(false) }
        let slot = spareSlot
        slot.want(generation)
        let queued = cleanup.tryRun { [mailbox] in
            guard slot.isWanted(generation) else { return }
            do throws(SpeechError) {
                let prepared = try prepare { event in mailbox.post(.spare(.said(generation, event))) }
                if !slot.offer(prepared, as: generation) { prepared.discard() }
                mailbox.post(.spare(.started(generation, error: nil)))
            } catch {
                mailbox.post(.spare(.started(generation, error: error)))
            }
        }
        spare.queued(queued)
        if queued { logger.info("speech: starting the next meeting's engine ahead (\(reason))") }
    }
}
