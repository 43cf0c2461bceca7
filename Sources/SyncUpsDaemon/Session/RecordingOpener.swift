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

/// What opening a meeting's recording gave, for the loop: the recorders, how the call went, and the fact.
struct OpenedRecording: Sendable {
    var recorder: MeetingRecorder?
    var callRecorder: MeetingRecorder?
    var mixer: AudioMixer?
    /// How the call went, when one was asked for (else as `callSource` settled it).
    var callAudio: CallAudioState?
    var audioError: String?
    var fact: SessionMachine.Event
}

/// Every recorder a meeting's start opened: `abandonRecorder` (on the loop) takes them to stop even when it
/// came before the loop heard that they opened (a meeting discarded while it started), and refuses any the
/// open makes after it (an open that answered past its deadline, or queued behind one that never did).
final class OpenedRecorders: Sendable {
    private let state = Mutex<(recorders: [MeetingRecorder], isAbandoned: Bool)>(([], false))

    /// Keeps `recorder` for `abandon`; false when the recording was abandoned already: the caller stops it.
    func add(_ recorder: MeetingRecorder) -> Bool {
        state.withLock { state in
            if !state.isAbandoned { state.recorders.append(recorder) }
            return !state.isAbandoned
        }
    }

    /// The recording was abandoned: an open not begun yet is not begun at all.
    var isAbandoned: Bool { state.withLock { $0.isAbandoned } }

    /// The recording is abandoned: the recorders opened so far, to stop; those opened from now on are refused.
    func abandon() -> [MeetingRecorder] {
        state.withLock { state in
            defer { state = ([], true) }
            return state.recorders
        }
    }
}

/// Opens a meeting's recording, on the opener (`syncups-open`, handed it by the clean-up worker): everything it
/// needs, taken on the loop.
struct RecordingOpener: Sendable {
    var microphone: CaptureDevice
    var microphoneName: String
    /// The call's source, if one is recorded, and the sound server's way to open it (nil: gone meanwhile).
    var call: String?
    var callDevice: CaptureDevice?
    var directory: DataDirectory
    var meetingID: Meeting.ID
    var start: MonotonicInstant
    var relay: RecognitionRelay
    var opened: OpenedRecorders
    var mailbox: Mailbox<SessionController.Message>
    var logger: Logger

    typealias Message = SessionController.Message

    /// One source's recorder, into the meeting's file `suffix`, its trouble posted as `trouble` says.
    func recorder(
        _ device: CaptureDevice, _ name: String, _ suffix: String,
        trouble: @escaping @Sendable (MeetingRecorder.Trouble, Meeting.ID) -> Message,
        onAudio: @escaping @Sendable (AudioChunk) -> Void
    ) throws(RecorderError) -> MeetingRecorder {
        let (meetingID, mailbox, opened) = (meetingID, mailbox, opened)
        let recorder = try MeetingRecorder(
            device: device, deviceName: name, wavPath: directory.sidecar(meetingID, suffix), start: start,
            isWanted: { !opened.isAbandoned }, onTrouble: { mailbox.post(trouble($0, meetingID)) }, onAudio: onAudio)
        // Abandoned since `isWanted` said no: its file goes with it.
        guard opened.add(recorder) else {
            recorder.stop(keepsFile: false)  // its file with it: nobody records this meeting any more
            throw .file(
                SystemError("the meeting's recording was abandoned while its device opened", Errno(rawValue: ECANCELED))
            )
        }
        return recorder
    }

    func open() -> OpenedRecording {
        // Queued behind an open that hung, for a meeting that ended meanwhile: it would only hang in its turn.
        guard !opened.isAbandoned else {
            let reason = "the meeting ended before its capture device was opened"
            return OpenedRecording(audioError: reason, fact: .recorderFailedToStart(reason, warnings: []))
        }
        // Said before the call that may never return: a log whose last line about a meeting is this one shows
        // where a device hung.
        logger.debug("opening the capture device \(microphoneName)", .meeting(meetingID))
        var warnings: [String] = []
        // `meetings/` (or the whole directory) may have been removed while the daemon ran: the audio and
        // the journal go there, so it comes back as the store brings back the directory itself.
        try? directory.create()
        var result = OpenedRecording(fact: .recorderStarted(warnings: []))
        if let call { openCall(call, into: &result, warnings: &warnings) }
        let (relay, mixer) = (relay, result.mixer)
        do {
            result.recorder = try recorder(microphone, microphoneName, MeetingFiles.audio, trouble: Message.recorder) {
                chunk in
                if let mixer {
                    mixer.feed(0, chunk.bytes, startFrame: chunk.startFrame)
                } else {
                    relay.feed(chunk.bytes, chunk.startFrame)
                }
            }
        } catch {
            // The call alone is not a meeting's recording.
            result.callRecorder?.stop(keepsFile: false)
            result.callRecorder = nil
            result.mixer = nil
            result.audioError = error.description
            result.fact = .recorderFailedToStart(error.description, warnings: warnings)
            return result
        }
        if let error = result.recorder?.waitedFor {
            // Waited for (a sound server with no input yet): said now, as a microphone lost mid-meeting is.
            warnings.append("recording without the microphone until it comes: \(error)")
        }
        if let source = result.callRecorder?.statistics.capture.device,
            source == result.recorder?.statistics.capture.device
        {
            // `--call-audio` naming the default microphone: recorded twice, and the call not at all.
            warnings.append(
                "the call's source \(source) is the microphone itself: the call is not recorded (syncupsctl devices lists the monitors)"
            )
        }
        result.fact = .recorderStarted(warnings: warnings)
        return result
    }
}

extension RecordingOpener {
    /// Opens the call's source (before the microphone, which then feeds the mixer), the source the machine was
    /// handed; says how it went in `result.callAudio`.
    func openCall(_ name: String, into result: inout OpenedRecording, warnings: inout [String]) {
        guard let device = callDevice else {
            // Never: `callSource` settled `.source` within the same request only with a device to open it by.
            result.callAudio = .failed("the sound server went away")
            warnings.append("recording without the call: the sound server went away")
            return
        }
        let (relay, mailbox, meetingID) = (relay, mailbox, meetingID)
        let mixer = AudioMixer(
            output: { bytes, frame in relay.feedRecognizer(bytes, frame) },
            channels: { microphone, call, frame in relay.feedChannels(microphone, call, frame) },
            late: { input, frames in mailbox.post(.mixerLate(input: input, frames: frames, meetingID)) })
        do {
            result.callRecorder = try recorder(device, name, MeetingFiles.callAudio, trouble: Message.callRecorder) {
                chunk in mixer.feed(1, chunk.bytes, startFrame: chunk.startFrame)
            }
            result.mixer = mixer
            result.callAudio = .recording
        } catch {
            // `RecorderError` speaks of the microphone; this is the call's source.
            let reason: String
            switch error {
            case .device(let error): reason = "cannot open the call's source: \(error)"
            case .file: reason = error.description
            }
            result.callAudio = .failed(reason)
            warnings.append("recording without the call: \(reason)")
        }
    }
}
