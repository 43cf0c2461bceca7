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
    /// `startRecognizer`: the meeting's engine (the one the request was checked against), started on the
    /// clean-up worker (a speech command's spawn, its pipes and threads are not the loop's work), after what was
    /// queued there before: the spare started ahead, if one is warm, is taken there, else a fresh one started.
    /// The fact comes back through the mailbox (`recognizerOpened`); the audio goes to it from then on (the
    /// relay is set there), what came before is silence to it (its stream counts from the meeting's start).
    func startRecognizer(_ session: ActiveSession) {
        guard let recognizer = session.recognizer else {
            return handle(.recognizerFailedToStart("no speech engine is available"), in: session)
        }
        session.recognizerStarts += 1
        let (meetingID, relay, spares, generation) = (session.meetingID, session.relay, spareSlot, spare.generation)
        let engine = session.recognizerStarts
        spareTaken()
        cleanup.run { [mailbox] in
            let events: @Sendable (RecognizerEvent) -> Void = { event in
                mailbox.post(.recognizer(event, meetingID, engine: engine))
            }
            let opened: OpenedRecognizer
            if let prepared = spares.take(generation) {
                if let stream = prepared.attach(events) {
                    opened = OpenedRecognizer(stream: .success(stream), name: recognizer.name, wasWarm: true)
                } else {
                    prepared.discard()
                    opened = OpenedRecognizer(start: recognizer, events: events, spareDied: true)
                }
            } else {
                opened = OpenedRecognizer(start: recognizer, events: events, spareDied: false)
            }
            if case .success(let stream) = opened.stream { relay.stream.withLock { $0 = stream } }
            mailbox.post(.recognizerOpened(opened, meetingID))
        }
    }

    /// The recognizer started off the loop: the meeting's, and the machine hears how it went. One whose
    /// meeting ended meanwhile (or that it no longer waits for) is stopped.
    func recognizerOpened(_ opened: OpenedRecognizer, in session: ActiveSession?) {
        guard let session, session.machine.recognizer == .starting else {
            if case .success(let stream) = opened.stream {
                stream.finish()
                stream.cancel()
            }
            return
        }
        switch opened.stream {
        case .success(let stream):
            session.recognition = stream
            if opened.wasWarm {
                logger.info("speech: the meeting takes the engine started ahead", .meeting(session.meetingID))
            } else if opened.spareDied {
                logger.info(
                    "speech: the engine started ahead had ended; started a fresh one", .meeting(session.meetingID))
            }
            handle(.recognizerStarted(startedAhead: opened.wasWarm), in: session)
        case .failure(let error):
            handle(.recognizerFailedToStart("\(opened.name) did not start: \(error)"), in: session)
        }
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
            // The machine says what follows: the meeting without a transcript, or a fresh engine.
            logger.warning("speech recognition failed: \(message)", .meeting(session.meetingID))
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

/// How a meeting's recognizer started, on the clean-up worker.
struct OpenedRecognizer: Sendable {
    var stream: Result<RecognitionStream, SpeechError>
    var name: String
    /// It was the spare started ahead.
    var wasWarm = false
    /// A spare was there, but its engine had ended: this is a fresh one.
    var spareDied = false

    init(stream: Result<RecognitionStream, SpeechError>, name: String, wasWarm: Bool) {
        self.stream = stream
        self.name = name
        self.wasWarm = wasWarm
    }

    /// A fresh start.
    init(start recognizer: SpeechRecognizer, events: @escaping @Sendable (RecognizerEvent) -> Void, spareDied: Bool) {
        do {
            stream = .success(try recognizer.start(events))
        } catch {
            stream = .failure(error)
        }
        name = recognizer.name
        self.spareDied = spareDied
    }
}
