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

/// The meeting's recording: the microphone, the call and their mixer, and the speaker encoder that hears it.
extension SessionController {
    /// `startRecorder`: the microphone (through the sound server when it follows the default there), the call
    /// from the source the machine was handed, if any, and the mixer that gives the recognizer both, opened on
    /// the clean-up worker (an ALSA open, or the sound server's, which waits up to 1.5 s for a hung server, must
    /// not stop the loop), after what the last meeting queued there (its devices closed first). The fact
    /// comes back through the mailbox (`recorderOpened`); a meeting ended meanwhile gives its recording up at
    /// once (`abandonRecorder`), and what the open made is stopped on the same worker after this.
    func startRecorder(_ session: ActiveSession, call: String?) {
        let server = settings.soundServer?.snapshot != nil ? settings.serverCaptureDevice : nil
        session.microphoneThroughServer =
            settings.audioDeviceName == "default" && server != nil && settings.callAudio != .off
        let opening = RecorderOpening(
            microphone: session.microphoneThroughServer ? server! : settings.captureDevice,
            microphoneName: session.microphoneThroughServer ? CaptureDevice.defaultSource : settings.audioDeviceName,
            call: call, callDevice: settings.serverCaptureDevice,
            directory: state.dataDirectory, meetingID: session.meetingID, start: session.start, relay: session.relay,
            opened: session.openedRecorders, mailbox: mailbox, logger: logger)
        // After what the last meeting queued on the clean-up worker (its devices closed first); the open itself on
        // its own worker, so a device that never answers holds up no other meeting's clean-up (its devices'
        // close, its details, its recognizer's start). Opens wait for each other there; a few at most.
        cleanup.run { [mailbox, opener] in
            let queued = opener.tryRun {
                mailbox.post(.recorderOpened(opening.open(), session: opening.meetingID))
            }
            guard !queued else { return }
            let reason = "an earlier meeting's capture device still has not opened"
            mailbox.post(
                .recorderOpened(
                    OpenedRecording(audioError: reason, fact: .recorderFailedToStart(reason, warnings: [])),
                    session: opening.meetingID))
        }
    }

    /// The recording opened off the loop: its recorders become the session's, and the machine hears how it
    /// went. Nothing for a meeting that ended meanwhile (its `abandonRecorder` has them stopped on the worker).
    func recorderOpened(_ opened: OpenedRecording, in session: ActiveSession) {
        guard session.machine.recorder == .starting else { return }
        session.recorder = opened.recorder
        session.callRecorder = opened.callRecorder
        session.mixer = opened.mixer
        if let callAudio = opened.callAudio { session.callAudio = callAudio }
        session.audioError = opened.audioError
        handle(opened.fact, in: session)
    }

    /// `startVoiceListener`: the speaker encoder on the recording's audio, if there is a voice model.
    func startVoiceListener(_ session: ActiveSession) -> SessionMachine.Event {
        guard let voices else { return .voiceListenerUnavailable("this daemon has no voices") }
        guard
            // The live roster: someone added mid-meeting is matched and learned from the next window on.
            let listener = voices.begin(
                session.meetingID,
                attendees: { [session] in session.machine.roster.members.filter { !$0.hasLeft }.map(\.attendee) },
                turns: { [session] in session.machine.record.turns })
        else { return .voiceListenerUnavailable("no speaker encoder (\(voices.model.status))") }
        session.relay.voice.withLock { $0 = listener }
        return .voiceListenerStarted
    }
}

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

/// Opens a meeting's recording, on the clean-up worker: everything it needs, taken on the loop.
struct RecorderOpening: Sendable {
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
