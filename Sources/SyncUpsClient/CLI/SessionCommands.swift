import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

extension Syncupsctl {
    static let sessionCommands: [Subcommand] = [
        Subcommand(
            name: "start",
            usage: "start ID [--absent NAME]… [--no-audio] [--no-transcribe] [--no-call]",
            summary: "Start recording a meeting of a sync-up: the timer, the speaker rotation, audio and a transcript.",
            details: """
                --no-audio        run the timer only, recording nothing (implies --no-transcribe)
                --no-transcribe   record audio but make no transcript
                --no-call         record the microphone only, not the call (see call-audio in syncupsd(8))
                --absent NAME     someone not here today (a name, any case or accents, or an id): out of the
                                  rotation, the others sharing the time; the sync-up itself is unchanged
                """,
            spec: ArgumentSpec(
                valueOptions: ["absent"], flagOptions: ["no-audio", "no-transcribe", "no-call"], positionals: 1...1)
        ) { context, arguments throws(CLIError) in
            let connection = try context.connect()
            var request: JSONObject = [
                "syncup": .string(try context.syncUpID(arguments.positionals[0], on: connection))
            ]
            let absent = arguments.all("absent")
            if !absent.isEmpty { request.append("absent", .array(absent.map(JSONValue.string))) }
            if arguments.has("no-audio") { request.append("audio", false) }
            if arguments.has("no-call") { request.append("call", false) }
            if arguments.has("no-transcribe") || arguments.has("no-audio") { request.append("transcribe", false) }
            // Subscribed first, so that a speech engine failing right after the start cannot be missed.
            let followsEngine = context.subscribesToSession(on: connection)
            var session = try context.call(on: connection, CommandName.sessionStart, request)
            var warnings = (session["warnings"]?.arrayValue ?? []).map(Format.string)
            if followsEngine, session["transcription"]?["state"] == "starting" {
                session = context.awaitSpeechEngine(session, warnings: &warnings, on: connection)
            }
            for warning in warnings { context.output.error("warning: \(warning)\n") }
            if case .object(var object) = session {
                object["warnings"] = .array(warnings.map(JSONValue.string))
                session = .object(object)
            }
            context.show(session) { Format.sessionLine(session) + "\n" }
        },
        sessionRequest(
            "next", CommandName.sessionNext,
            "Pass the floor to the next speaker; at the last one, stop and wait for `end`."),
        sessionRequest("pause", CommandName.sessionPause, "Stop the timer (audio keeps recording)."),
        sessionRequest("resume", CommandName.sessionResume, "Restart the timer."),
        attendanceRequest(
            "absent", CommandName.sessionAbsent,
            "Mark someone absent for this meeting: out of the rotation, the others sharing the time."),
        attendanceRequest(
            "back", CommandName.sessionBack, "Someone marked absent is here after all: back in the rotation."),
        Subcommand(
            name: "toggle",
            usage: "toggle",
            summary: "Pause the timer if it runs, resume it if it is paused (one key or click for both).",
            spec: ArgumentSpec()
        ) { context, _ throws(CLIError) in
            let session = try context.toggleSession(on: try context.connect())
            context.show(session) { Format.sessionLine(session) + "\n" }
        },
        Subcommand(
            name: "end",
            usage: "end [--save | --discard] [--no-wait]",
            summary: "End the meeting: save it with its transcript so far (the default), or discard it and its audio.",
            details: """
                --save      save it (the default); once it is saved, prints its id (for scripts:
                            meeting=$(syncupsctl end)), or on a terminal "saved meeting ID"
                --discard   save nothing and delete its audio
                --no-wait   return as soon as the daemon has the request, before the save is done
                            (the recognizer's last words can take a moment); prints "saving meeting ID"
                """,
            spec: ArgumentSpec(flagOptions: ["save", "discard", "no-wait"])
        ) { context, arguments throws(CLIError) in
            if arguments.has("save") && arguments.has("discard") { throw .usage("end: choose --save or --discard") }
            let action = arguments.has("discard") ? "discard" : "save"
            let connection = try context.connect()
            guard !arguments.has("no-wait"), context.subscribesForTheEnd(on: connection) else {
                let session = try context.call(on: connection, CommandName.sessionEnd, ["action": .string(action)])
                context.show(session) {
                    action == "save"
                        ? "saving meeting \(Format.string(session["meeting"]))\n" : "discarded the meeting\n"
                }
                return
            }
            let ended = try context.endSession(action: action, on: connection)
            context.show(ended) {
                let id = Format.string(ended["meeting"]?["id"])
                guard action == "save" else { return "discarded the meeting\n" }
                // A sentence for a person, as --discard says one; the bare id a script captures stays as it was.
                return isatty(1) == 1 ? "saved meeting \(id)\n" : id + "\n"
            }
        },
        Subcommand(
            name: "session",
            usage: "session",
            summary: "Show the meeting being recorded, if any.",
            spec: ArgumentSpec()
        ) { context, _ throws(CLIError) in
            let session = try context.call(CommandName.sessionGet)
            context.show(session) { session == .null ? "no meeting is being recorded\n" : Format.session(session) }
        },
    ]

    /// `absent NAME`, `back NAME`: a change of today's attendance, by name (any case or accents) or id.
    static func attendanceRequest(_ name: String, _ command: String, _ summary: String) -> Subcommand {
        Subcommand(name: name, usage: "\(name) NAME", summary: summary, spec: ArgumentSpec(positionals: 1...1)) {
            context, arguments throws(CLIError) in
            let session = try context.call(command, ["attendee": .string(arguments.positionals[0])])
            context.show(session) { Format.sessionLine(session) + "\n" }
        }
    }

    static func sessionRequest(_ name: String, _ command: String, _ summary: String) -> Subcommand {
        Subcommand(name: name, usage: name, summary: summary, spec: ArgumentSpec()) { context, _ throws(CLIError) in
            let session = try context.call(command)
            context.show(session) { Format.sessionLine(session) + "\n" }
        }
    }
}

extension Context {
    /// The longest a save can take: the daemon's settle timeout (20 s) for the recognizer's last words,
    /// and some time to write.
    static let saveDeadline: Duration = .seconds(25)

    /// How long `start` waits for a speech command's first line (or its failure): a command that does not
    /// exist fails within milliseconds; one still loading its model after this is left to it.
    static let speechEngineDeadline: Duration = .seconds(3)

    /// Subscribes to the session's events, so that `endSession` can wait for the save. When the daemon has
    /// no room for another subscriber, says so and returns false (`end` then does not wait).
    func subscribesForTheEnd(on connection: DaemonConnection) -> Bool {
        do {
            _ = try connection.call(CommandName.subscribe, ["topics": ["session"], "snapshot": false])
            return true
        } catch {
            output.error("warning: not waiting for the save: \(error)\n")
            return false
        }
    }

    /// Subscribes to the session's events without a word if that fails (`start` then does not wait).
    func subscribesToSession(on connection: DaemonConnection) -> Bool {
        (try? connection.call(CommandName.subscribe, ["topics": ["session"], "snapshot": false])) != nil
    }

    /// After `session.start` with a speech engine that has not said it is up: waits up to
    /// `speechEngineDeadline` for it to (a `session.updated` whose transcription is no longer `starting`) or
    /// to fail (a `session.error`, added to `warnings`). Returns the latest session object.
    func awaitSpeechEngine(_ started: JSONValue, warnings: inout [String], on connection: DaemonConnection)
        -> JSONValue
    {
        let meeting = started["meeting"]
        let deadline = MonotonicInstant.now() + Self.speechEngineDeadline
        var session = started
        while session["transcription"]?["state"] == "starting" {
            let remaining = deadline - MonotonicInstant.now()
            guard remaining > .zero, let event = try? connection.nextEvent(timeout: remaining) else { break }
            guard let current = event.data["session"], current["meeting"] == meeting else { continue }
            if event.name == EventName.sessionEnded { break }
            session = current
            // The start's own warnings come as events too, before its reply: each is said once.
            if event.name == EventName.sessionError, let message = event.data["message"]?.stringValue,
                !warnings.contains(message)
            {
                warnings.append(message)
            }
        }
        return session
    }

    /// `session.end`, then the `session.ended` that says the meeting is saved (or discarded): its data.
    /// The subscription (`subscribesForTheEnd`) comes first, on the same connection, so the event cannot be
    /// missed.
    func endSession(action: String, on connection: DaemonConnection) throws(CLIError) -> JSONValue {
        let session = try call(on: connection, CommandName.sessionEnd, ["action": .string(action)])
        let meeting = session["meeting"]
        let deadline = MonotonicInstant.now() + Self.saveDeadline + (globals.timeout ?? .zero)
        while true {
            let remaining = deadline - MonotonicInstant.now()
            guard remaining > .zero else {
                throw stillSaving(
                    meeting, on: connection,
                    else: "syncupsd did not say the meeting \(Format.string(meeting)) was saved in time")
            }
            let event: (name: String, seq: Int?, data: JSONValue)
            do {
                event = try connection.nextEvent(timeout: remaining)
            } catch .broken(let message) {
                // The wait timed out, or the connection broke: whether the daemon answers says which.
                throw stillSaving(meeting, on: connection, else: message)
            } catch {
                throw Self.cliError(error)
            }
            guard event.name == EventName.sessionEnded, event.data["session"]?["meeting"] == meeting else { continue }
            if action == "save" && event.data["outcome"] != "saved" {
                throw CLIError(
                    .rejected, "the meeting was not saved: \(Format.string(event.data["reason"]))", code: "not_saved")
            }
            return event.data
        }
    }

    /// Why the save of `meeting` was not reported in time: a daemon that answers and still holds it is
    /// saving it (the recognizer's last words can take minutes on a loaded machine): `temporaryFailure`, not a daemon
    /// to start.
    /// `unavailable` says `failure` when the daemon does not answer.
    private func stillSaving(_ meeting: JSONValue?, on connection: DaemonConnection, else failure: String)
        -> CLIError
    {
        let id = Format.string(meeting)
        guard let session = try? connection.call(CommandName.sessionGet) else { return CLIError(.unavailable, failure) }
        guard session != .null, session["meeting"] == meeting else {
            return CLIError(
                .temporaryFailure,
                "syncupsd has not said how the save of the meeting \(id) ended; see syncupsctl meeting",
                code: "not_yet")
        }
        return CLIError(
            .temporaryFailure,
            "the meeting \(id) is still being saved (the speech engine is still giving its last words); syncupsctl session says when it is done",
            code: "still_saving")
    }

    /// Pauses, or resumes when the daemon says the meeting is already paused. Asking first and then acting
    /// would race with a second click; this way each request is judged on the state the daemon holds.
    func toggleSession(on connection: DaemonConnection) throws(CLIError) -> JSONValue {
        do {
            return try connection.call(CommandName.sessionPause)
        } catch .rejected(let error) where error.code == .invalidState {
            return try call(on: connection, CommandName.sessionResume)
        } catch {
            throw Self.cliError(error)
        }
    }
}

extension Format {
    /// `by pocketsphinx`, `stopped: speech recognition failed: …` or `off`.
    static func transcriptionState(_ session: JSONValue) -> String {
        if let error = session["transcription"]?["error"]?.stringValue { return "stopped: \(error)" }
        return session["transcription"]?["engine"]?.stringValue.map { "by \($0)" } ?? "off"
    }

    /// `running`, `starting` (a speech command that has not written yet), `stopped: …` or `off`.
    static func speechState(_ session: JSONValue) -> String {
        if let error = session["transcription"]?["error"]?.stringValue { return "stopped: \(error)" }
        return session["transcription"]?["state"]?.stringValue ?? "off"
    }

    /// `virtmic, recording` or `default, not recording (why)`.
    static func audioState(_ session: JSONValue) -> String {
        let audio = session["audio"]
        let device = string(audio?["device"])
        if audio?["recording"] == true { return "\(device), recording" }
        return "\(device), not recording\(audio?["error"]?.stringValue.map { " (\($0))" } ?? "")"
    }

    /// `call.monitor, recording`, `call.monitor, recording, silent for 12 s`, `call.monitor, not recording
    /// (why)`, or `off (why)`.
    static func callAudioState(_ session: JSONValue) -> String? {
        guard let call = session["callAudio"], call != .null else { return nil }
        guard call["state"] == "recording" else {
            return "\(string(call["state"]))\(call["reason"]?.stringValue.map { " (\($0))" } ?? "")"
        }
        var text = "\(string(call["device"])), \(call["recording"] == true ? "recording" : "not recording")"
        if let error = call["error"]?.stringValue { text += " (\(error))" }
        if call["silent"] == true {
            text += ", silent for \(Int(call["silentSeconds"]?.numberValue?.double ?? 0)) s (the wrong device?)"
        }
        return text
    }

    static func session(_ session: JSONValue) -> String {
        var text = Format.sessionLine(session) + "\n"
        if let heard = StatusLine.speakingInTurn(session) { text += "speaking:   \(heard)\n" }
        text +=
            "remaining:  \(DurationText.clock(int(session["durationRemaining"]))) of \(DurationText.clock(int(session["duration"])))\n"
        text += "meeting:    \(string(session["meeting"]))\n"
        let audio = session["audio"]
        if audio?["recording"] == true {
            text +=
                "audio:      recording from \(string(audio?["device"])), \(Int(audio?["seconds"]?.numberValue?.double ?? 0)) s\n"
        } else {
            text += "audio:      not recording\(audio?["error"]?.stringValue.map { " (\($0))" } ?? "")\n"
        }
        if let call = callAudioState(session) { text += "call:       \(call)\n" }
        text += "transcript: \(transcriptionState(session))\n"
        let transcript = string(session["transcript"])
        // A long meeting's session object holds only the transcript's end.
        let isTail = (session["transcriptOffset"]?.numberValue?.int64 ?? 0) > 0
        if !transcript.isEmpty { text += "\n\(isTail ? "…" : "")\(transcript)\n" }
        return text
    }
}
