/// What `session.start` asks for, settled by the rules that decide it: which arguments go together, their
/// defaults, and what the daemon's speech settings make of them. Pure: the controller passes what it knows
/// (is there a recognizer, was speech recognition turned off, was that already said) and performs the result.
public struct StartRequest: Sendable, Equatable {
    /// Whether the meeting records audio (default: yes).
    public var records: Bool
    /// Whether it records the call too, when there is one (default: yes).
    public var recordsCall: Bool
    /// Whether it is transcribed.
    public var transcribes: Bool
    /// Said in the reply's `warnings` and then by the machine.
    public var warnings: [String]
    /// Whether "speech recognition is off" has now been said (it is said at the first such start only).
    public var hasSaidTranscriptionIsOff: Bool

    /// The daemon's speech settings, as the start sees them.
    public struct Speech: Sendable, Equatable {
        /// A recognizer is configured and available.
        public var hasRecognizer: Bool
        /// The user turned speech recognition off (`--speech-engine none`).
        public var isOff: Bool
        /// That was already said at an earlier start.
        public var hasSaidItIsOff: Bool

        public init(hasRecognizer: Bool, isOff: Bool, hasSaidItIsOff: Bool) {
            self.hasRecognizer = hasRecognizer
            self.isOff = isOff
            self.hasSaidItIsOff = hasSaidItIsOff
        }
    }

    /// Why a start is refused.
    public enum Refusal: Error, Equatable {
        /// The arguments do not go together (`invalid_argument`).
        case invalidArgument(String)
        /// A transcript is asked for and there is no engine (`speech_unavailable`).
        case speechUnavailable(String)
    }

    /// Settles `audio`, `transcribe` and `call` as given (nil: not given).
    public static func settle(audio: Bool?, transcribe: Bool?, call: Bool?, speech: Speech) throws(Refusal)
        -> StartRequest
    {
        let records = audio ?? true
        var transcribes = transcribe ?? records
        var warnings: [String] = []
        var hasSaid = speech.hasSaidItIsOff
        if transcribes && transcribe == nil && !speech.hasRecognizer && speech.isOff {
            transcribes = false
            // Said at the first such start, not at every one: it is what the user configured.
            if !hasSaid {
                warnings.append("recording without a transcript: speech recognition is off (--speech-engine none)")
                hasSaid = true
            }
        }
        if transcribes && !records {
            throw .invalidArgument("transcribing needs audio: pass \"transcribe\": false with \"audio\": false")
        }
        if call == true && !records {
            throw .invalidArgument("recording the call needs audio: pass \"call\": false with \"audio\": false")
        }
        if transcribes && !speech.hasRecognizer {
            throw .speechUnavailable(
                "no speech engine is available (install pocketsphinx-en-us or set --speech-command); start with \"transcribe\": false to record without a transcript"
            )
        }
        return StartRequest(
            records: records, recordsCall: call ?? true, transcribes: transcribes, warnings: warnings,
            hasSaidTranscriptionIsOff: hasSaid)
    }

    /// Why another meeting cannot start while `running` is the session: it is being recorded, or its save is
    /// still in progress (protocol.md, `session.start`).
    public static func refusal(whileRunning running: SessionMachine) -> String {
        let title = running.syncUp.title
        if running.isStarting {
            return "a meeting of \"\(title)\" is starting; end it first (session.end) once it has, or discard it now"
        }
        return running.pendingEnding != nil
            ? "the last meeting of \"\(title)\" is still being saved; start again once session.ended says it is saved"
            : "a meeting of \"\(title)\" is being recorded; end it first (session.end)"
    }
}
