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
    /// from the source the machine was handed, if any, and the mixer that gives the recognizer both.
    func startRecorder(_ session: ActiveSession, call: String?) -> SessionMachine.Event {
        var warnings: [String] = []
        // `meetings/` (or the whole directory) may have been removed while the daemon ran: the audio and
        // the journal go there, so it comes back as the store brings back the directory itself.
        try? state.dataDirectory.create()
        if let call { startCallRecorder(session, source: call, warnings: &warnings) }
        let server = settings.soundServer?.snapshot != nil ? settings.serverCaptureDevice : nil
        session.microphoneThroughServer =
            settings.audioDeviceName == "default" && server != nil && settings.callAudio != .off
        let relay = session.relay
        let mixer = session.mixer
        let meetingID = session.meetingID
        do {
            session.recorder = try MeetingRecorder(
                device: session.microphoneThroughServer ? server! : settings.captureDevice,
                deviceName: session.microphoneThroughServer ? CaptureDevice.defaultSource : settings.audioDeviceName,
                wavPath: state.dataDirectory.sidecar(meetingID, MeetingFiles.audio),
                start: session.start,
                onTrouble: { [mailbox] trouble in mailbox.post(.recorder(trouble, meetingID)) },
                onAudio: { chunk in
                    if let mixer {
                        mixer.feed(0, chunk.bytes, startFrame: chunk.startFrame)
                    } else {
                        relay.feed(chunk.bytes, chunk.startFrame)
                    }
                }
            )
        } catch {
            session.audioError = error.description
            // The call alone is not a meeting's recording.
            session.callRecorder?.stop(keepsFile: false)
            session.callRecorder = nil
            session.mixer = nil
            return .recorderFailedToStart(error.description, warnings: warnings)
        }
        if let source = session.callRecorder?.statistics.capture.device,
            source == session.recorder?.statistics.capture.device
        {
            // `--call-audio` naming the default microphone: recorded twice, and the call not at all.
            warnings.append(
                "the call's source \(source) is the microphone itself: the call is not recorded (syncupsctl devices lists the monitors)"
            )
        }
        return .recorderStarted(warnings: warnings)
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
