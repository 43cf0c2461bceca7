import Glibc
import SyncUpsAudio
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsProtocol
import SyncUpsSpeech
import Synchronization

/// Everything one running meeting holds besides its machine: the helpers, the timers, the clock.
final class ActiveSession {
    var machine: SessionMachine!
    let meetingID: Meeting.ID
    let start: MonotonicInstant
    /// The microphone, the speech engine and the cue device of the settings the meeting started with: a reload
    /// (SIGHUP) applies from the next meeting, so a fresh engine started mid-meeting is this one too, and the
    /// session object names the device it records from.
    let audioDeviceName: String
    let recognizer: SpeechRecognizer?
    let cueDeviceName: String?
    var tickTimer: EventLoop.Timer?
    var settleTimer: EventLoop.Timer?
    var recorder: MeetingRecorder?
    var audioError: String?
    /// The microphone `default` is recorded through the sound server (its default source), not ALSA.
    var microphoneThroughServer = false
    /// The call's recorder (`<meeting>.call.wav`), if the call is recorded.
    var callRecorder: MeetingRecorder?
    var callAudio = CallAudioState.off("--call-audio off")
    /// Mixes the microphone and the call for the recognizer, while both are recorded.
    var mixer: AudioMixer?
    /// The recorders the start opened (on the opener), for the stops queued on the clean-up worker after it.
    let openedRecorders = OpenedRecorders()
    /// The reply to `session.start`, completed on the loop once the meeting has started (or ended before it
    /// did); the request's `ReplyBody.awaited`.
    var startReply: PendingReply?
    /// The meeting's recognizer starts so far: the engine started ahead that failed as the meeting took it is
    /// replaced by a fresh one (`SessionMachine`), and what the first still says is not the second's.
    var recognizerStarts = 0
    /// The recognizer's input, until the machine says to finish it (it then still reports its last words)
    /// or cancel it; also reachable from the audio writer thread through `relay`.
    var recognition: RecognitionStream? {
        didSet { relay.stream.withLock { $0 = recognition } }
    }
    let relay = RecognitionRelay()
    var cue: CuePlayer?
    /// An ended meeting's cue still in this meeting's cue device: this meeting starts no thread behind it, and
    /// its first cue after the device answers starts one (`playCue`).
    var cueBehind: CuePlayer?
    /// The next look at whether the device holds a cue (`checkCue`).
    var cueCheck: EventLoop.Timer?
    var hasReportedCueFailure = false
    var hasJournal = false
    /// When the journal was last written, and the timer of the next write (`writeJournal`).
    var lastJournal: MonotonicInstant?
    var journalTimer: EventLoop.Timer?

    init(
        machine: SessionMachine?, meetingID: Meeting.ID, start: MonotonicInstant, audioDeviceName: String,
        recognizer: SpeechRecognizer?, cueDeviceName: String?
    ) {
        self.machine = machine
        self.meetingID = meetingID
        self.start = start
        self.audioDeviceName = audioDeviceName
        self.recognizer = recognizer
        self.cueDeviceName = cueDeviceName
    }
}

/// Why the call is or is not recorded.
enum CallAudioState: Sendable {
    case recording
    /// Not asked for: `--call-audio off`, `--no-call`, a meeting without audio.
    case off(String)
    /// Asked for, but there is no sound server to record it from.
    case unavailable(String)
    /// The source could not be opened.
    case failed(String)
}

/// Hands captured audio from the recorder's writer thread to the current recognizer and speaker encoder,
/// if any.
final class RecognitionRelay: Sendable {
    let stream = Mutex<RecognitionStream?>(nil)
    let voice = Mutex<VoiceListener?>(nil)

    func feed(_ bytes: [UInt8], _ startFrame: Int64) {
        stream.withLock { $0 }?.feed(bytes, startFrame)
        voice.withLock { $0 }?.feed(bytes, startFrame: startFrame)
    }

    /// A call meeting's mix, for the recognizer alone.
    func feedRecognizer(_ bytes: [UInt8], _ startFrame: Int64) {
        stream.withLock { $0 }?.feed(bytes, startFrame)
    }

    /// A call meeting's two channels, unmixed, for the speaker encoder (the recognizer hears the mix).
    func feedChannels(_ microphone: [Int16], _ call: [Int16], _ startFrame: Int64) {
        voice.withLock { $0 }?.feed(microphone: microphone, call: call, startFrame: startFrame)
    }
}

extension String {
    init(format1 value: Double) {
        self = String((value * 10).rounded() / 10)
    }
}
