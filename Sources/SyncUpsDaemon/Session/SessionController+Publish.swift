import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// How the session looks to clients and to systemd: its events, its object, its one-line status.
extension SessionController {
    /// `recording "Design" 03:12 · Blob Jr 2/6` for systemd's status line, or nil when no session runs.
    var statusLine: String? {
        guard let machine = active?.machine else { return nil }
        let verb = machine.isStarting ? "starting" : machine.phase == .running ? "recording" : machine.phase.rawValue
        let speaker = machine.speaker.map { Attendee.shown($0.name) } ?? "nobody"
        // "Cat speaking in Ben's turn": a voice heard that is not the floor holder's.
        var heard = ""
        if let active, let voice = machine.speaking(at: SessionMachine.seconds(elapsed(active))),
            voice.id != machine.speaker?.id
        {
            heard = " · \(Attendee.shown(voice.name)) speaking in \(speaker)'s turn"
        }
        return
            "\(verb) \"\(machine.syncUp.title)\" \(DurationText.clock(machine.secondsElapsed)) · \(speaker) \(machine.speakerIndex + 1)/\(machine.roster.rotationCount)\(heard)"
    }

    /// The session object, or null when no session runs.
    var json: JSONValue { active.map(sessionJSON) ?? .null }

    func publish(_ notification: SessionMachine.Notification, _ session: ActiveSession) {
        switch (transcriptCoalescing, notification) {
        case (.off, _):
            break
        case (_, .transcript):
            transcriptCoalescing = .pending(session)
            return
        case (.pending(let waiting), _):
            // Anything else goes out after the transcript change that came before it.
            transcriptCoalescing = .collecting
            publish(.transcript, waiting)
        case (.collecting, _):
            break
        }
        let name: String
        var data = JSONObject()  // after the session object, which is built only for subscribers
        switch notification {
        case .started: name = EventName.sessionStarted
        case .tick: name = EventName.sessionTick
        case .speaker: name = EventName.sessionSpeaker
        case .paused: name = EventName.sessionPaused
        case .resumed: name = EventName.sessionResumed
        case .ending: name = EventName.sessionEnding
        case .updated: name = EventName.sessionUpdated
        case .transcript: name = EventName.sessionTranscript
        case .attributionCorrected(let segments):
            name = EventName.sessionAttribution
            data.append("segments", .array(segments.map(\.json)))
        case .error(let message):
            name = EventName.sessionError
            data.append("message", .string(message))
        case .ended(let ending):
            name = EventName.sessionEnded
            switch ending {
            case .finished(let meeting), .saved(let meeting), .interrupted(let meeting):
                let reason =
                    switch ending {
                    case .finished: "time is up"
                    case .interrupted: "the daemon stopped"
                    default: "ended"
                    }
                data.append("outcome", .string("saved"))
                data.append("reason", .string(reason))
                data.append("meeting", WireFormat.meeting(meeting, includesTranscript: true))
            case .discarded:
                data.append("outcome", .string("discarded"))
                data.append("reason", .string("ended"))
            case .syncUpDeleted:
                data.append("outcome", .string("discarded"))
                data.append("reason", .string("the sync-up was deleted"))
            }
        }
        publishEvent(.session, name) { [self] in
            .object(JSONObject([JSONObject.Member(key: "session", value: sessionJSON(session))] + data.members))
        }
    }

    func sessionJSON(_ session: ActiveSession) -> JSONValue {
        var audio = JSONObject()
        audio.append("device", .string(session.audioDeviceName))
        if let recorder = session.recorder {
            let statistics = recorder.statistics
            // Where `default` went: the sound server's default source, or ALSA's `default`.
            audio.append("through", .string(session.microphoneThroughServer ? "sound server" : "ALSA"))
            audio.append("source", .optional(statistics.capture.device))
            Self.levelFields(statistics.capture, into: &audio)
            audio.append("recording", .bool(statistics.capture.isDeviceOpen))
            audio.append("seconds", .double((statistics.writtenSeconds * 10).rounded() / 10))
            audio.append("overruns", .int(statistics.capture.overruns))
            audio.append("reconnects", .int(statistics.capture.reconnects))
            audio.append("error", .optional(statistics.error))
        } else {
            audio.append("recording", false)
            audio.append("error", .optional(session.audioError))
        }
        var transcription = JSONObject()
        transcription.append("engine", .optional(session.machine.isTranscribing ? session.recognizer?.name : nil))
        transcription.append("partial", .string(session.machine.record.partial))
        transcription.append("error", .optional(session.machine.speechError))
        let state =
            if session.machine.speechError != nil { "stopped" } else if !session.machine.isTranscribing {
                "off"
            } else if session.machine.isRecognizerReady { "running" } else { "starting" }
        transcription.append("state", .string(state))
        guard
            case .object(var object) = WireFormat.session(
                session.machine, audio: .object(audio), transcription: .object(transcription))
        else { return .null }
        object.append("callAudio", callAudioJSON(session))
        // Who is heard speaking now (a voice matched in the last 3.2 s), beside `speaker`, who holds the floor.
        object.append("speaking", session.machine.speaking(at: SessionMachine.seconds(elapsed(session)))?.json ?? .null)
        return .object(object)
    }
}
