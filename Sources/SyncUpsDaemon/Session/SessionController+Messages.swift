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

/// What the helper threads post to the mailbox, handled on the loop.
extension SessionController {
    func receive(_ message: Message) {
        switch message {
        case .recorderOpened(let opened, let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            recorderOpened(opened, in: session)
        case .recorder(let trouble, let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            let text: String
            switch trouble {
            case .capture(.overrun(let count)): text = "audio overrun (\(count) so far): some audio was lost"
            case .capture(.disconnected(let error)): text = "the microphone went away (\(error)); retrying every second"
            case .capture(.reconnected): text = "the microphone is back"
            case .capture(.switched(let device)): text = "the microphone is now \(device), the new default"
            case .capture(.dropped(let frames)): text = "the audio writer fell behind: \(frames) frames dropped"
            case .writeFailed(let error): text = "writing the meeting's audio failed: \(error); recording goes on"
            case .writeRecovered: text = "writing the meeting's audio works again"
            }
            logger.throttled(.warning, "audio.microphone", text, .meeting(meeting))
            handle(.audioTrouble(text), in: session)
        case .callRecorder(let trouble, let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            let text =
                switch trouble {
                case .capture(.overrun(let count)): "call audio overrun (\(count) so far): some audio was lost"
                case .capture(.disconnected(let error)):
                    "the call audio went away (\(error)); retrying every second, silence meanwhile"
                case .capture(.reconnected): "the call audio is back"
                case .capture(.switched(let device)): "the call audio follows the new default output: \(device)"
                case .capture(.dropped(let frames)): "the call audio writer fell behind: \(frames) frames dropped"
                case .writeFailed(let error): "writing the call audio failed: \(error); recording goes on"
                case .writeRecovered: "writing the call audio works again"
                }
            logger.throttled(.warning, "audio.call", text, .meeting(meeting))
            handle(.audioTrouble(text), in: session)
        case .mixerLate(let input, let frames, let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            let (late, other) = input == 0 ? ("microphone", "call") : ("call", "microphone")
            let seconds = String(format1: Double(frames) / Double(AudioFormat.sampleRate))
            let lag = AudioMixer.maxLag / Int64(AudioFormat.sampleRate)
            let text =
                "the \(late)'s audio came more than \(lag) s after the \(other)'s: \(seconds) s of it is in its file but not transcribed"
            logger.throttled(.warning, "audio.mixer", text, .meeting(meeting))
            handle(.audioTrouble(text), in: session)
        case .recorderStopped(let meeting):
            guard let session = active, session.meetingID == meeting else { return }
            handle(.recorderStopped, in: session)
        case .recognizer(let event, let meeting, let engine):
            // An earlier engine's last words (a failed one's `finished`) are not the fresh one's.
            guard let session = active, session.meetingID == meeting, engine == session.recognizerStarts else { return }
            receive(event, in: session)
        case .recognizerOpened(let opened, let meeting):
            recognizerOpened(opened, in: active.flatMap { $0.meetingID == meeting ? $0 : nil })
        case .spare(let report):
            receive(report)
        case .cueFailed(let error, let meeting):
            guard let session = active, session.meetingID == meeting, !session.hasReportedCueFailure else { return }
            session.hasReportedCueFailure = true
            let text = "the speaker-change cue did not play: \(error)"
            logger.warning(text, .meeting(meeting))
            handle(.audioTrouble(text), in: session)
        case .detailsWritten(let meeting, let error):
            detailsWritten(meeting, error: error)
        case .journalWritten(let meeting, let error):
            journalWritten(meeting, error: error)
        case .journalRemoved(let meeting, let error):
            journalRemoved(meeting, error: error)
        case .cleanupCaughtUp:
            isCleanupCaughtUp = true  // the wait at shutdown (`finishCleanup`)
        }
    }

    /// Handles what is already in the mailbox now, without the loop (at shutdown).
    func drainMailboxNow() {
        for message in mailbox.takeAll() { receive(message) }
    }
}
