import FoundationEssentials
import Glibc
import SyncUpsAudio
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol
import SyncUpsSpeech
import Synchronization

/// The session's timers: the one tick timer the machine arms, and the settle timeout.
extension SessionController {
    /// The one timer: `timerTicked` at `deadline` (the machine's nanoseconds); the machine says what is due.
    func armTimer(_ session: ActiveSession, at deadline: Int64) {
        session.timer.map(loop.cancel)
        session.timer = loop.schedule(at: MonotonicInstant(nanoseconds: session.start.nanoseconds + deadline)) {
            [unowned self, session] in
            session.timer = nil
            guard active === session else { return }
            handle(.timerTicked, in: session)
        }
    }

    func armSettleTimeout(_ session: ActiveSession, after timeout: Duration) {
        session.settleTimer.map(loop.cancel)
        let deadline = loop.now() + timeout
        session.settleDeadline = (deadline, timeout)
        session.settleTimer = loop.schedule(at: deadline) { [unowned self, session] in
            session.settleTimer = nil
            guard active === session else { return }
            settleTimedOut(session)
        }
    }

    /// The wait armed by `armSettleTimeout` is over (on the loop, or in the wait at shutdown).
    func settleTimedOut(_ session: ActiveSession) {
        let timeout = session.settleDeadline?.timeout ?? .zero
        logger.warning(
            "the recognizer did not finish within \(timeout); saving without its last words",
            .meeting(session.meetingID))
        handle(.settleTimedOut, in: session)
    }
}
