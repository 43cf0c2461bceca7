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

/// The meeting's speech recognizer: its start, and what it reports.
extension SessionController {
    /// `startRecognizer`: the configured engine (the one the request was checked against).
    func startRecognizer(_ session: ActiveSession) -> SessionMachine.Event {
        guard let recognizer = settings.recognizer else {
            return .recognizerFailedToStart("no speech engine is available")
        }
        let meetingID = session.meetingID
        do {
            session.recognition = try recognizer.start { [mailbox] event in
                mailbox.post(.recognizer(event, meetingID))
            }
        } catch {
            return .recognizerFailedToStart("\(recognizer.name) did not start: \(error)")
        }
        session.engineName = recognizer.name
        return .recognizerStarted
    }

    func receive(_ event: RecognizerEvent, in session: ActiveSession) {
        switch event {
        case .result(let result):
            let speech = RecognizedSpeech(
                isFinal: result.kind == .final, text: result.text, words: result.words, start: result.start,
                end: result.end)
            handle(.speechRecognized(speech), in: session)
        case .ready:
            handle(.recognizerReady, in: session)
        case .failed(let message):
            logger.warning(
                "speech recognition failed: \(message); the meeting goes on without a transcript",
                .meeting(session.meetingID))
            session.recognition = nil  // gone already: nothing to cancel
            session.speechError = "speech recognition failed: \(message)"
            handle(.speechFailed("speech recognition failed: \(message)"), in: session)
        case .finished:
            handle(.recognizerFinished, in: session)
        case .log(let line):
            logger.info("speech: \(line)", .meeting(session.meetingID))
        case .fallingBehind(let seconds):
            let text = "speech recognition is \(Int(seconds)) s behind the meeting"
            logger.throttled(.warning, "speech.behind", text, .meeting(session.meetingID))
            handle(.audioTrouble(text), in: session)
        case .dropped(let seconds):
            let text =
                "speech recognition could not keep up: \(String(format1: seconds)) s of audio were not transcribed"
            logger.throttled(.warning, "speech.dropped", text, .meeting(session.meetingID))
            handle(.audioTrouble(text), in: session)
        }
    }
}
