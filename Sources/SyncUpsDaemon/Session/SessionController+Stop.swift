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

/// The daemon is stopping: the meeting is saved, and what its helpers still do is waited for, within bounds
/// (`shutDown`); then, after the server and the store, the last journal writes (`close`).
extension SessionController {
    /// What ends the wait at shutdown early: a descriptor that becomes readable when it may have happened
    /// (the daemon's signalfd), and the check (a second SIGTERM or SIGINT, as swift-service-lifecycle does).
    struct ShutdownInterrupt {
        var descriptor: FileDescriptor
        var hasHappened: () -> Bool
    }

    /// The daemon is stopping: the machine saves the meeting so far, flagged as interrupted. The loop no
    /// longer runs, so this waits here for the helpers' reports (the recording's end, the recognizer's last
    /// words) until the machine is done or its shorter settle timeout passes, or until `interrupt` happens:
    /// then the meeting is saved at once with what the recognizer gave so far.
    func shutDown(interrupt: ShutdownInterrupt? = nil) {
        defer { finishCleanup(interrupt: interrupt) }
        endSparesForGood()
        guard let session = active else { return }
        logger.notice(Self.stoppingNotice(session.machine), .meeting(session.meetingID))
        handle(.daemonStopping, in: session)
        while active === session {
            if let interrupt, interrupt.hasHappened() {
                logger.warning(
                    "asked again to stop: saving the meeting now, without waiting for the recognizer's last words",
                    .meeting(session.meetingID))
                handle(.settleTimedOut, in: session)
                break
            }
            // The machine's settle deadline, on the loop's clock (on a manual one it passes at once unless a
            // report is already queued); none armed (nothing to wait for) is the same as one passed.
            let deadline = session.machine.settleDeadline.map { instant(session, $0.at) } ?? loop.now()
            guard deadline > loop.now() else {
                settleTimedOut(session)
                break
            }
            if loop.wait(for: mailbox, until: deadline, orUntilReadable: interrupt?.descriptor) == .message {
                drainMailboxNow()
            }
        }
    }

    /// What the log says of the meeting as the daemon stops: a meeting still starting recorded nothing (the
    /// machine discards it), and one already being saved (`session.end`, or time ran out) is not saved again.
    static func stoppingNotice(_ machine: SessionMachine) -> String {
        if machine.isStarting { return "discarding the meeting still starting (nothing recorded yet) before stopping" }
        if machine.pendingEnding != nil { return "finishing the meeting's save, already under way, before stopping" }
        return "saving the running meeting before stopping"
    }

    /// The second half of the stop, after `shutDown`, the server's and the store's: finishes the journal writes
    /// still queued (the last removals come from the store's final write), so it comes after the store is
    /// closed; ends the engine started ahead, if any, and the sound server's connection.
    func close() {
        endSparesForGood()
        for meeting in state.detailsWrites.removals.keys { journals.remove(meeting) }  // the last try of those failing
        journals.finish()
        logUnrecordedDeletions()
        settings.soundServer?.stop()
    }

    /// What is still being cleaned up (a meeting saved just before, its details being written) ends before the
    /// process does, and its report is handled (removing that meeting's journal); but a device hung in the
    /// kernel (a close or a read that never returns) must not keep the daemon from stopping: after
    /// `shutdownCleanupTimeout`, or a second SIGTERM, it stops without the rest. What was cut short is what a
    /// kill -9 would leave: a meeting's journal stays until its details are written, and the next start
    /// recovers it. This bound is in real time on every clock: it is for a thread's work (a write, a
    /// device's close), which virtual time does not speed up.
    ///
    /// A capture device's open is not waited for at all: by now the meeting it was for has ended (a starting
    /// meeting is discarded, one that started without it past its deadline saved), so it has made no file (the
    /// audio file is made once the device is open) and makes none when it returns: what it opened is stopped
    /// at once (`OpenedRecorders`). Its thread ends with the process.
    private func finishCleanup(interrupt: ShutdownInterrupt?) {
        isCleanupCaughtUp = false
        cleanup.run { [mailbox] in mailbox.post(.cleanupCaughtUp) }
        let deadline = MonotonicInstant.now() + settings.shutdownCleanupTimeout
        while !isCleanupCaughtUp {
            let remaining = deadline - MonotonicInstant.now()
            if remaining <= .zero || interrupt?.hasHappened() == true {
                logger.warning(
                    "stopping without waiting any longer for the last meeting's clean-up (a device that does not answer, or a slow disk); the next start recovers what it was writing"
                )
                drainMailboxNow()
                return
            }
            if mailbox.wait(timeout: remaining, orUntilReadable: interrupt?.descriptor) == .message {
                drainMailboxNow()
            }
        }
        cleanup.finish()
        // The clean-up worker, which hands the opens over, is done: nothing is queued on the opener from now on.
        if opener.isIdle {
            opener.finish()
        } else {
            logger.notice(
                "not waiting for a capture device's open that has not returned: its meeting has ended, and it has made no file"
            )
        }
        drainMailboxNow()
    }
}
