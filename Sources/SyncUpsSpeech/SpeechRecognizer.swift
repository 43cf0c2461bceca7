import SyncUpsCore

/// What a recognizer says about the audio it was fed.
public struct RecognitionResult: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Provisional: the utterance goes on, and its text may still change.
        case partial
        /// The utterance is over; its text and timings are settled.
        case final
    }

    public var kind: Kind
    public var text: String
    /// Seconds from the meeting's start.
    public var start: Double
    public var end: Double
    public var words: [TranscriptWord]

    public init(kind: Kind, text: String, start: Double, end: Double, words: [TranscriptWord]) {
        self.kind = kind
        self.text = text
        self.start = start
        self.end = end
        self.words = words
    }
}

/// Everything a recognizer reports, from its own thread.
public enum RecognizerEvent: Sendable, Equatable {
    case result(RecognitionResult)
    /// The engine is up and talking: PocketSphinx loaded its model, a speech command wrote its first JSON
    /// line. Until then a failure may still be its start failing (a command that does not exist).
    case ready
    /// The recognizer broke (crashed, hung, gave up); transcription stops for this meeting.
    case failed(String)
    /// Audio is waiting longer than it should: the recognizer cannot keep up (reported, not hidden).
    case fallingBehind(seconds: Double)
    /// Audio was dropped because the recognizer's queue was full.
    case dropped(seconds: Double)
    /// After `finish`: every result has been reported and the recognizer has stopped.
    case finished
    /// A line the recognizer wrote to its log (an external engine's stderr).
    case log(String)
}

/// A speech-to-text engine behind one interface (PocketSphinx in process, or an external command; a daemon
/// that transcribes nothing has none): fed the captured PCM (`AudioFormat`), it produces partial and final
/// results with word timings.
public struct SpeechRecognizer: Sendable {
    /// The engine's name for `status` and logs: "pocketsphinx" or "command".
    public var name: String
    /// Starts recognising one meeting; events arrive on the recognizer's thread.
    public var start:
        @Sendable (_ events: @escaping @Sendable (RecognizerEvent) -> Void) throws(SpeechError) -> RecognitionStream

    /// Starts the engine before its meeting (a spare, kept warm for the next one), or nil when the engine has
    /// nothing to start ahead (PocketSphinx runs in process). Until a meeting takes it, what the engine says
    /// goes to `idle`: its `ready`, its log lines and its death (`.failed`), nothing else.
    public var prepare:
        (@Sendable (_ idle: @escaping @Sendable (RecognizerEvent) -> Void) throws(SpeechError) -> PreparedRecognition)?

    public init(
        name: String,
        start:
            @escaping @Sendable (@escaping @Sendable (RecognizerEvent) -> Void) throws(SpeechError) -> RecognitionStream,
        prepare: (
            @Sendable (@escaping @Sendable (RecognizerEvent) -> Void) throws(SpeechError) -> PreparedRecognition
        )? = nil
    ) {
        self.name = name
        self.start = start
        self.prepare = prepare
    }
}

/// An engine started before its meeting (`SpeechRecognizer.prepare`): fed no audio until a meeting takes it.
public struct PreparedRecognition: Sendable {
    /// Hands the engine to a meeting: from now on its events go to `events` (its `ready` first, if it said it
    /// before), and the stream takes the meeting's audio from its start. Nil when the engine is not up (it
    /// has not said it is ready: still loading, or hung), died meanwhile, or was discarded: the meeting then
    /// discards it and starts a fresh one.
    public var attach: @Sendable (_ events: @escaping @Sendable (RecognizerEvent) -> Void) -> RecognitionStream?
    /// Ends the engine without a meeting: its process group is killed; nothing more is reported.
    public var discard: @Sendable () -> Void

    public init(
        attach: @escaping @Sendable (@escaping @Sendable (RecognizerEvent) -> Void) -> RecognitionStream?,
        discard: @escaping @Sendable () -> Void
    ) {
        self.attach = attach
        self.discard = discard
    }
}

/// One meeting's recognition: audio in, in order, with the speaker turns the daemon decides.
public struct RecognitionStream: Sendable {
    /// Queues S16_LE samples starting at `startFrame` (frames since the meeting started). Never blocks:
    /// if the recognizer's queue is full the audio is dropped and that reported.
    public var feed: @Sendable (_ bytes: [UInt8], _ startFrame: Int64) -> Void
    /// A new turn starts at `frame`: end the current utterance there, so no result spans two speakers. The
    /// turn can come before the audio up to `frame` does: the utterance ends when the audio reaches it.
    public var turn: @Sendable (_ frame: Int64, _ speaker: Attendee) -> Void
    /// The meeting is over: the recognizer finishes the last utterance, reports it, and stops. Returns at
    /// once; the recognizer's `.finished` (or `.failed`) event says when it is done.
    public var finish: @Sendable () -> Void
    /// Gives up on the last words, after `finish` had its chance: an external engine is killed now rather
    /// than left running (the daemon is stopping). An engine in process ends with the process.
    public var cancel: @Sendable () -> Void

    public init(
        feed: @escaping @Sendable ([UInt8], Int64) -> Void,
        turn: @escaping @Sendable (Int64, Attendee) -> Void,
        finish: @escaping @Sendable () -> Void,
        cancel: @escaping @Sendable () -> Void = {}
    ) {
        self.feed = feed
        self.turn = turn
        self.finish = finish
        self.cancel = cancel
    }
}

/// Why a recognizer could not start.
public struct SpeechError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
