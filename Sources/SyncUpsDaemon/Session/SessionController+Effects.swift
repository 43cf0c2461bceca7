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

/// What the machine says to do, done: each effect of `SessionMachine`, and the facts it produces handed back.
extension SessionController {
    func perform(_ effects: [SessionMachine.Effect], in session: ActiveSession) {
        for effect in effects {
            switch effect {
            case .publish(let notification):
                publish(notification, session)
                if notification == .started { answerStart(session) }
            case .warn(let text):
                logger.warning(text, .syncUp(session.machine.syncUp.id), .meeting(session.meetingID))
                publish(.error(text), session)
            case .startRecorder(let call):
                startRecorder(session, call: call)
            case .startVoiceListener:
                handle(startVoiceListener(session), in: session)
            case .stopVoiceListener(let keepsLearning):
                // After the recorder's stop (the same worker, in order): the encoder has heard the last audio.
                voices?.end(session.meetingID, keepsLearning: keepsLearning, cleanup: cleanup)
            case .startRecognizer:
                startRecognizer(session)
            case .startCue:
                startCue(session)
            case .beginTurn(_, let speaker, let start):
                // The recognizer ends its utterance where the turn starts.
                guard let speaker else { continue }  // a sync-up without attendees (an outside edit) has no turns
                session.recognition?.turn(Int64(start * Double(AudioFormat.sampleRate)), speaker)
            case .playCue:
                playCue(session)
            case .stopCue:
                stopCue(session)
            case .armTimer(let deadline):
                armTimer(session, at: deadline)
            case .disarmTimer:
                session.tickTimer.map(loop.cancel)
                session.tickTimer = nil
            case .writeJournal:
                writeJournal(session)
            case .flushJournal:
                flushJournal(session)
            case .stopRecorder:
                let recorder = session.recorder
                let callRecorder = session.callRecorder
                let mixer = session.mixer
                let meetingID = session.meetingID
                // Both files end here, where the meeting's recording does, asked on the loop (it does not wait):
                // the call's stop, made after the microphone's had waited for a stalled server, made its file
                // that much longer (0.45 s at a SIGTERM, attack 96), and audio read once a hung server answered
                // again went past the end (up to 1.2 s, attack 102).
                recorder?.requestStop()
                callRecorder?.requestStop()
                cleanup.run { [mailbox] in
                    recorder?.stop(keepsFile: true)
                    callRecorder?.stop(keepsFile: true)
                    // The recognizer hears the last of both before it is told to finish.
                    mixer?.flush()
                    mailbox.post(.recorderStopped(meetingID))
                }
            case .abandonRecorder:
                // Given up here, at once: an open answering from now on makes no file (`OpenedRecorders`), even
                // while the worker is busy. What the start's open made so far is stopped after the discard's
                // removal of the meeting's temporary files, on the same worker, with any audio file begun.
                let (directory, meeting) = (state.dataDirectory, session.meetingID)
                let recorders = session.openedRecorders.abandon()
                cleanup.run {
                    for recorder in recorders { recorder.stop(keepsFile: false) }
                    for suffix in [MeetingFiles.audio, MeetingFiles.callAudio] {
                        unlink(directory.sidecar(meeting, suffix))
                    }
                }
            case .finishRecognizer:
                session.recognition?.finish()
            case .cancelRecognizer:
                // Its input ends (an engine in process stops there), and an external engine in its own process
                // group is killed rather than left to outlive the daemon.
                session.recognition?.finish()
                session.recognition?.cancel()
                session.recognition = nil
            case .armSettleTimeout(_, let deadline):
                armSettleTimeout(session, at: deadline)
            case .cancelSettleTimeout:
                session.settleTimer.map(loop.cancel)
                session.settleTimer = nil
            case .saveMeeting(let meeting, let record, let syncUp):
                saveMeeting(meeting, record, of: syncUp, in: session)
            case .discardMeeting:
                // Logged as a start and a save are: the log then says where every meeting went.
                logger.info(
                    "discarded a meeting of \"\(session.machine.syncUp.title)\"", .syncUp(session.machine.syncUp.id),
                    .meeting(session.meetingID))
                // Every file of it, on the journal writer's thread after a write that may still be in progress
                // (the audio being written is unlinked: the recorder writes on into nothing until it stops).
                journals.discard(session.meetingID)
            case .finish:
                finish(session)
            }
        }
    }
}
