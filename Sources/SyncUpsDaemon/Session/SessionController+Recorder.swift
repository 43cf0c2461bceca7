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
    /// the opener (`syncups-open`; an ALSA open, or the sound server's, which waits up to 1.5 s for a hung
    /// server, must not stop the loop), handed over by the clean-up worker after what the last meeting queued
    /// there (its devices closed first). The fact
    /// comes back through the mailbox (`recorderOpened`); a meeting ended meanwhile gives its recording up at
    /// once (`abandonRecorder`), and what the open made is stopped on the same worker after this.
    func startRecorder(_ session: ActiveSession, call: String?) {
        let server = settings.soundServer?.snapshot != nil ? settings.serverCaptureDevice : nil
        session.microphoneThroughServer =
            settings.audioDeviceName == "default" && server != nil && settings.callAudio != .off
        let opening = RecordingOpener(
            microphone: session.microphoneThroughServer ? server! : settings.captureDevice,
            microphoneName: session.microphoneThroughServer ? CaptureDevice.defaultSource : session.audioDeviceName,
            call: call, callDevice: settings.serverCaptureDevice,
            directory: state.dataDirectory, meetingID: session.meetingID,
            start: loop.monotonicInstant(of: session.start), relay: session.relay,
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
