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

/// The session's timers: the one tick timer the machine arms, and the settle timeout, which is also the capture
/// devices' open deadline at the start (`SessionMachine.SettleDeadline.opening`).
extension SessionController {
    /// The one timer: `timerTicked` at `deadline` (the machine's nanoseconds); the machine says what is due.
    func armTimer(_ session: ActiveSession, at deadline: Int64) {
        session.tickTimer.map(loop.cancel)
        session.tickTimer = loop.schedule(at: instant(session, deadline)) {
            [unowned self, session] in
            session.tickTimer = nil
            guard active === session else { return }
            handle(.timerTicked, in: session)
        }
    }

    /// The settle timeout: `settleTimedOut` at `deadline` (the machine's nanoseconds, its `settleDeadline`).
    func armSettleTimeout(_ session: ActiveSession, at deadline: Int64) {
        session.settleTimer.map(loop.cancel)
        session.settleTimer = loop.schedule(at: instant(session, deadline)) { [unowned self, session] in
            session.settleTimer = nil
            guard active === session else { return }
            settleTimedOut(session)
        }
    }

    /// The loop's instant of the machine's `nanoseconds` since the session started.
    func instant(_ session: ActiveSession, _ nanoseconds: Int64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: session.start.nanoseconds + nanoseconds)
    }

    /// The wait armed by `armSettleTimeout` is over (on the loop, or in the wait at shutdown).
    func settleTimedOut(_ session: ActiveSession) {
        switch session.machine.settleDeadline?.deadline {
        case .opening?:
            break  // the machine says what it gave up on (`recording without audio: …`)
        case .saving?, .stopping?, nil:
            let timeout = Duration.nanoseconds(
                session.machine.settleDeadline.map { session.machine.settleTimeouts[$0.deadline] } ?? 0)
            // What was still awaited: the recognizer's last words, or (a meeting without one) the recording's end.
            logger.warning(
                session.machine.recognizer == .absent
                    ? "the recording did not end within \(timeout); saving without waiting for it"
                    : "the recognizer did not finish within \(timeout); saving without its last words",
                .meeting(session.meetingID))
        }
        handle(.settleTimedOut, in: session)
    }
}
