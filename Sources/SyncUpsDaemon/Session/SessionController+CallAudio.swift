import SyncUpsAudio
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence

/// The call's side of a meeting: its recorder beside the microphone's, and what clients see of both sources.
extension SessionController {
    /// The call's source for a meeting that records, settled from the configuration and the sound server before
    /// the start (what the machine is handed); records in `session.callAudio` why it is not recorded, if not.
    func callSource(wanted: Bool, for session: ActiveSession) -> SessionMachine.CallSource {
        let name: String
        switch settings.callAudio {
        case .off:
            session.callAudio = .off("--call-audio off")
            return .off
        case _ where !wanted:
            session.callAudio = .off("--no-call")
            return .off
        case .auto:
            name = CaptureDevice.defaultMonitor
        case .source(let source):
            name = source
        }
        guard let server = settings.soundServer, server.snapshot != nil, settings.serverCaptureDevice != nil else {
            let reason =
                "no sound server (\(settings.soundServer?.error ?? "none")): recording the microphone through ALSA alone"
            session.callAudio = .unavailable(reason)
            logger.info("call audio: \(reason)", .meeting(session.meetingID))
            // Asked for by name, its absence is news; `auto` just says so in the session object.
            if case .source = settings.callAudio {
                return .unavailable(warning: "recording without the call: \(reason)")
            }
            return .unavailable(warning: nil)
        }
        return .source(name)
    }

    /// `session.audio`'s fields about the level of a source: its loudness lately and how long it was silent.
    static func levelFields(_ capture: AudioCapture.Statistics, into object: inout JSONObject) {
        object.append("level", capture.level.map(JSONValue.double) ?? .null)
        object.append("silentSeconds", .double((capture.silentSeconds * 10).rounded() / 10))
    }

    /// The session object's `callAudio`.
    func callAudioJSON(_ session: ActiveSession) -> JSONValue {
        var object = JSONObject()
        let state: String
        var reason: String?
        switch session.callAudio {
        case .recording: state = "recording"
        case .off(let why): (state, reason) = ("off", why)
        case .unavailable(let why): (state, reason) = ("unavailable", why)
        case .failed(let why): (state, reason) = ("failed", why)
        }
        object.append("state", .string(state))
        object.append("reason", .optional(reason))
        if let recorder = session.callRecorder {
            let statistics = recorder.statistics
            object.append("device", .optional(statistics.capture.device))
            object.append("recording", .bool(statistics.capture.isDeviceOpen))
            object.append("seconds", .double((statistics.writtenSeconds * 10).rounded() / 10))
            object.append("reconnects", .int(statistics.capture.reconnects))
            Self.levelFields(statistics.capture, into: &object)
            // A call source that carries nothing for this long is probably the wrong device.
            object.append("silent", .bool(statistics.capture.silentSeconds >= Self.silentCallSeconds))
            object.append("error", .optional(statistics.error))
        } else {
            object.append("device", .null)
            object.append("recording", false)
        }
        return .object(object)
    }

    /// Seconds of nothing on the call source before the session says `silent`.
    static let silentCallSeconds = 10.0

    /// `devices`: the sound server's capture sources with the defaults marked, and the ALSA device.
    var devicesJSON: JSONValue {
        var object = JSONObject()
        let snapshot = settings.soundServer?.snapshot
        object.append("callAudio", .string(settings.callAudio.text))
        object.append("server", .optional(snapshot?.server))
        object.append(
            "serverError",
            .optional(
                settings.soundServer == nil
                    ? "not watched (--call-audio off)"
                    : snapshot == nil
                        ? settings.soundServer?.error : nil))
        object.append("defaultSink", .optional(snapshot?.defaultSink))
        object.append("defaultSource", .optional(snapshot?.defaultSource))
        let sources = (snapshot?.sources ?? []).map { source -> JSONValue in
            var item = JSONObject()
            item.append("name", .string(source.name))
            item.append("description", .string(source.description))
            item.append("kind", .string(source.monitorOfSink == nil ? "microphone" : "monitor"))
            item.append("monitorOf", .optional(source.monitorOfSink))
            item.append("isDefaultMicrophone", .bool(source.name == snapshot?.defaultMicrophone))
            item.append("isDefaultCall", .bool(source.name == snapshot?.defaultMonitor))
            return .object(item)
        }
        object.append("sources", .array(sources))
        object.append("alsaDevice", .string(settings.audioDeviceName))
        return .object(object)
    }
}
