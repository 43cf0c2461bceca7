import FoundationEssentials
import Glibc
import SyncUpsAudio
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// Turns each request into a call on the daemon's state and a result. `commands` has one row per command:
/// 15 call a method of this type, most named after the command; the other 12 (`ping`, `themes.list`,
/// `session.get`/`next`/`pause`/`resume`/`absent`/`back`, `schedule.list`/`clear`, `devices`, `voices`) answer
/// in the row's closure or call their owner there (`SessionController`, `Scheduler`, `VoiceService`). protocol.md
/// documents every command here, and the two change together.
final class CommandHandler {
    let state: DaemonState
    let server: Server
    let store: SyncUpStore
    let session: SessionController
    let voices: VoiceService
    let status: StatusInfo

    /// Facts for `status` that are fixed at start-up or owned elsewhere.
    struct StatusInfo {
        var version: String
        var socketPath: String
        var startedAt: MonotonicInstant
        var startDate: Date
        var loadWarnings: [String]
        /// The session bus, the MPRIS player (the `desktop` object).
        var desktop: DesktopStatus
        /// The stand-ups' schedules (`schedule.*`, the `next` object).
        var scheduler: Scheduler?
    }

    init(
        state: DaemonState, server: Server, store: SyncUpStore, session: SessionController, voices: VoiceService,
        status: StatusInfo
    ) {
        self.state = state
        self.server = server
        self.store = store
        self.session = session
        self.voices = voices
        self.status = status
    }

    /// One command: its name, the arguments it takes, and what runs it. The dispatcher, the
    /// `unknown_command` message and the argument check all read this one table.
    struct Command: Sendable {
        typealias Run = @Sendable (CommandHandler, Arguments, Connection) throws(ProtocolError) -> ReplyBody
        typealias RunValue = @Sendable (CommandHandler, Arguments, Connection) throws(ProtocolError) -> JSONValue

        /// What runs it: a closure that makes the reply, or (most commands) one whose result is a JSON value,
        /// which `handle` makes the reply of (no closure around it: one call fewer on every request's path).
        enum Body: Sendable {
            case reply(Run)
            case value(RunValue)
        }

        let name: String
        let arguments: [String]
        let body: Body

        init(_ name: String, _ arguments: [String] = [], _ run: @escaping Run) {
            self.name = name
            self.arguments = arguments
            self.body = .reply(run)
        }

        /// A command whose result is a JSON value.
        init(_ name: String, _ arguments: [String] = [], value: @escaping RunValue) {
            self.name = name
            self.arguments = arguments
            self.body = .value(value)
        }
    }

    /// Every command, in the order protocol.md documents them.
    static let commands: [Command] = [
        Command(CommandName.ping, value: { _, _, _ in "pong" }),
        // `status` is what bars and scripts poll: it is written straight into bytes.
        Command(CommandName.status) { (handler, _, _) throws(ProtocolError) in .encoded(handler.statusReply()) },
        Command(CommandName.themesList, value: { _, _, _ in .array(Theme.allCases.map(WireFormat.theme)) }),
        Command(
            CommandName.syncUpsList, ["offset", "limit"],
            value: { (handler, arguments, _) throws(ProtocolError) in
                try handler.listSyncUps(arguments)
            }),
        Command(
            CommandName.syncUpsGet, ["id", "meetingsOffset", "meetingsLimit"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in try handler.getSyncUp(arguments)
            }),
        Command(
            CommandName.syncUpsCreate, ["title", "duration", "theme", "attendees"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in try handler.createSyncUp(arguments)
            }),
        Command(CommandName.syncUpsUpdate, ["id", "title", "duration", "theme", "attendees"]) {
            (handler, arguments, _) throws(ProtocolError) in try handler.updateSyncUp(arguments)
        },
        Command(CommandName.syncUpsDelete, ["id"]) { (handler, arguments, _) throws(ProtocolError) in
            try handler.deleteSyncUp(arguments)
        },
        Command(CommandName.meetingsGet, ["syncup", "meeting", "segmentsOffset", "segmentsLimit"]) {
            (handler, arguments, _) throws(ProtocolError) in try handler.getMeeting(arguments)
        },
        Command(CommandName.meetingsDelete, ["syncup", "meeting"]) { (handler, arguments, _) throws(ProtocolError) in
            try handler.deleteMeeting(arguments)
        },
        Command(
            CommandName.transcriptGet, ["syncup", "meeting", "offset", "limit"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in try handler.getTranscript(arguments)
            }),
        Command(CommandName.sessionStart, ["syncup", "audio", "transcribe", "call", "absent"]) {
            (handler, arguments, _) throws(ProtocolError) in try handler.startSession(arguments)
        },
        Command(CommandName.sessionGet, value: { handler, _, _ in handler.session.json }),
        Command(
            CommandName.sessionNext,
            value: { (handler, _, _) throws(ProtocolError) in
                try handler.session.request(.next)
            }),
        Command(
            CommandName.sessionPause,
            value: { (handler, _, _) throws(ProtocolError) in
                try handler.session.request(.pause)
            }),
        Command(
            CommandName.sessionResume,
            value: { (handler, _, _) throws(ProtocolError) in
                try handler.session.request(.resume)
            }),
        Command(CommandName.sessionEnd, ["action"]) { (handler, arguments, _) throws(ProtocolError) in
            try handler.endSession(arguments)
        },
        Command(
            CommandName.sessionAbsent, ["attendee"],
            value: { (handler, arguments, _) throws(ProtocolError) in
                try handler.session.request(.markAbsent(try arguments.string("attendee")))
            }),
        Command(
            CommandName.sessionBack, ["attendee"],
            value: { (handler, arguments, _) throws(ProtocolError) in
                try handler.session.request(.markBack(try arguments.string("attendee")))
            }),
        Command(CommandName.scheduleList, value: { handler, _, _ in handler.status.scheduler?.list() ?? .array([]) }),
        Command(
            CommandName.scheduleSet, ["syncup", "schedule", "timeZone", "reminder", "autoStart"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in try handler.setSchedule(arguments)
            }),
        Command(
            CommandName.scheduleClear, ["syncup"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in
                try handler.scheduler().clear(syncUp: try arguments.string("syncup"))
            }),
        Command(CommandName.devices, value: { handler, _, _ in handler.session.devicesJSON }),
        Command(CommandName.voices, value: { handler, _, _ in handler.voices.json(handler.state.syncUps) }),
        Command(CommandName.voicesForget, ["attendee"]) { (handler, arguments, _) throws(ProtocolError) in
            try handler.forgetVoice(arguments)
        },
        Command(
            CommandName.subscribe, ["topics", "snapshot"],
            value: { (handler, arguments, connection) throws(ProtocolError) in
                try handler.subscribe(arguments, connection)
            }),
        Command(
            CommandName.unsubscribe, ["topics"],
            value: { (handler, arguments, connection) throws(ProtocolError) in
                try handler.unsubscribe(arguments, connection)
            }),
    ]

    private static let commandsByName = Dictionary(uniqueKeysWithValues: commands.map { ($0.name, $0) })

    func handle(_ request: Request, from connection: Connection) -> Result<ReplyBody, ProtocolError> {
        do throws(ProtocolError) {
            guard let command = Self.commandsByName[request.command] else {
                throw ProtocolError(
                    .unknownCommand,
                    "unknown command \"\(request.command)\"; commands: \(Self.commands.map(\.name).joined(separator: ", "))"
                )
            }
            let arguments = try Arguments(request, allowed: command.arguments)
            switch command.body {
            case .reply(let run): return .success(try run(self, arguments, connection))
            case .value(let run): return .success(.value(try run(self, arguments, connection)))
            }
        } catch {
            return .failure(error)
        }
    }

    // MARK: - Daemon

    /// The part of `status` that never changes, encoded once: `{"version":…,…,"dataFile":"…"`, and the load's
    /// warnings.
    private lazy var statusEncoder: StatusEncoder = {
        var prefix = JSONWriter().encode(
            [
                "version": .string(status.version),
                "protocol": .int(Wire.protocolVersion),
                "pid": .int(Int(getpid())),
                "startedAt": .string(UTCTime(status.startDate).rfc3339),
                "socket": .string(status.socketPath),
                "dataDirectory": .string(state.dataDirectory.path),
                "dataFile": .string(state.dataDirectory.syncUpsFile),
            ]
        )
        prefix.removeLast()  // the closing brace: the changing fields follow
        return StatusEncoder(prefix: prefix, warnings: status.loadWarnings)
    }()

    /// `status` is what bars and scripts poll, so it is written straight to bytes (`StatusEncoder`), into this
    /// buffer, reused. Not a cache: the one cache of its reply is the server's `ReplayCache`, whose generation
    /// comes from `replayGeneration(for:)`.
    private var statusBuffer: [UInt8] = []

    /// The stamp of the last replayable `status`; the generation counts its changes.
    private var lastStamp: StatusFields.Counters?
    private var statusGeneration = 0
    /// The settings' names as of `settingsNamesGeneration` (read again only when the settings change).
    private var settingsNames = StatusFields.SettingsNames(speechEngine: nil, audioDevice: "", voices: "")
    private var settingsNamesGeneration = -1

    /// The session's settings' generation with the voice model's: both change on SIGHUP, and the names
    /// `status` says with them.
    private var settingsGeneration: Int { session.settingsGeneration &+ voices.modelGeneration }

    /// The numbers `status` says, now.
    private func statusCounters(uptimeMilliseconds: Int64) -> StatusFields.Counters {
        StatusFields.Counters(
            uptimeMilliseconds: uptimeMilliseconds, syncUps: state.syncUps.count, meetings: state.meetingCount,
            connections: server.connections.count, subscribers: server.subscriberCount, seq: server.seq,
            timers: server.loop.scheduledTimerCount,
            hasUnsavedChanges: store.hasUnsavedChanges || status.scheduler?.hasUnsavedChanges == true,
            isSynced: store.isDurable, settingsGeneration: settingsGeneration,
            desktopGeneration: status.desktop.generation, scheduleGeneration: status.scheduler?.generation ?? 0,
            spareChanges: session.spare.phaseChanges)
    }

    /// Everything `status` says that can change, now.
    private func statusFields(uptimeMilliseconds: Int64) -> StatusFields {
        if settingsNamesGeneration != settingsGeneration {
            settingsNamesGeneration = settingsGeneration
            settingsNames = StatusFields.SettingsNames(
                speechEngine: session.engineName, audioDevice: session.settings.audioDeviceName,
                voices: voices.model.status)
        }
        return StatusFields(
            counters: statusCounters(uptimeMilliseconds: uptimeMilliseconds), session: session.json,
            settings: settingsNames, speechSpare: session.spare.phase.rawValue,
            next: status.scheduler?.statusJSON ?? .null, desktop: status.desktop.json,
            persistenceError: persistenceError,
            failingWarnings: state.recoveredDetailsWarnings.filter { isStillFailing($0.key) }.map(\.value).sorted())
    }

    /// Whether a recovered meeting's details still wait to be written: its warning holds until then.
    private func isStillFailing(_ meeting: Meeting.ID) -> Bool {
        state.detailsWrites.details(of: meeting) != nil
    }

    /// The generation of a reply with this stamp: a status bar, or a client asking many times within a
    /// millisecond, gets the same reply again (`Server.replayGeneration`) without its being encoded again.
    private func statusGeneration(of stamp: StatusFields.Counters) -> Int {
        if stamp != lastStamp {
            lastStamp = stamp
            statusGeneration += 1
        }
        return statusGeneration
    }

    /// As of the request line being handled.
    private var uptimeMilliseconds: Int64 { (server.lineTime.nanoseconds - status.startedAt.nanoseconds) / 1_000_000 }

    /// `Server.replayGeneration`: only `status` (without arguments) is replayed. While no session runs and no
    /// write fails, `StatusFields.stamp` is the counters alone, so only they are read here (building a
    /// running session's object, or copying strings, would cost more than the replay saves).
    func replayGeneration(for request: Request) -> Int? {
        guard request.command == CommandName.status, request.arguments.isEmpty else { return nil }
        guard
            let stamp = StatusFields.stamp(
                statusCounters(uptimeMilliseconds: uptimeMilliseconds), isSessionRunning: session.active != nil,
                persistenceError: persistenceError,
                hasFailingWarnings: state.recoveredDetailsWarnings.keys.contains(where: isStillFailing))
        else {
            lastStamp = nil
            return nil
        }
        return statusGeneration(of: stamp)
    }

    private func statusReply() -> [UInt8] {
        let fields = statusFields(uptimeMilliseconds: uptimeMilliseconds)
        // Reused: the server drops the previous reply's reference before the next request, so this
        // buffer is uniquely held again and refilling it allocates nothing.
        var bytes = statusBuffer
        statusBuffer = []
        defer { statusBuffer = bytes }
        bytes.removeAll(keepingCapacity: true)
        statusEncoder.encode(fields, into: &bytes)
        return bytes
    }

    /// The last failed write of the user's data, if it still fails (`DaemonState.failingWrites`).
    var persistenceError: String? { state.failingWrites.lastError }

    // MARK: - Sync-ups

    private func listSyncUps(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
        let page = try Paging(arguments, offsetKey: "offset", limitKey: "limit", limits: server.limits)
        let (items, next) = page.take(state.syncUps, budget: server.limits.maxReplyBytes * 7 / 8) {
            WireFormat.syncUp($0, meetings: .summary)
        }
        return ["syncups": .array(items), "total": .int(state.syncUps.count), "next": next.map(JSONValue.int) ?? .null]
    }

    private func getSyncUp(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
        // Every argument is checked before any lookup: a type error is always `invalid_argument`.
        let id = try arguments.string("id")
        let page = try Paging(arguments, offsetKey: "meetingsOffset", limitKey: "meetingsLimit", limits: server.limits)
        let syncUp = state.syncUps[try state.index(of: id)]
        let (meetings, next) = page.take(syncUp.meetings, budget: server.limits.maxReplyBytes * 7 / 8) {
            WireFormat.meeting($0, includesTranscript: true)
        }
        guard case .object(var object) = WireFormat.syncUp(syncUp, meetings: .summary) else { return .null }
        object["meetings"] = .array(meetings)
        object["meetingsTotal"] = .int(syncUp.meetings.count)
        object["meetingsNext"] = next.map(JSONValue.int) ?? .null
        return .object(object)
    }

    private func createSyncUp(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
        let draft = SyncUpDraft(
            title: try arguments.string("title"),
            durationSeconds: try arguments.optionalInt("duration"),
            themeName: try arguments.optionalString("theme"),
            attendeeNames: try arguments.optionalStrings("attendees") ?? []
        )
        return WireFormat.syncUp(try state.create(draft), meetings: .full)
    }

    private func updateSyncUp(_ arguments: Arguments) throws(ProtocolError) -> ReplyBody {
        // Every argument is checked before any lookup: a type error is always `invalid_argument`.
        let id = try arguments.string("id")
        var update = SyncUpUpdate(
            title: try arguments.optionalString("title"),
            durationSeconds: try arguments.optionalInt("duration"),
            themeName: try arguments.optionalString("theme")
        )
        let elements = try arguments.optionalArray("attendees")
        for (position, element) in (elements ?? []).enumerated() {
            _ = try Self.attendeeChange(element, at: position, in: nil)
        }
        let index = try state.index(of: id)
        if let elements {
            let current = state.syncUps[index].attendees
            // Indexed once: a list of a thousand ids is resolved in a thousand lookups, not a million.
            let ids = IDIndex(current.map(\.id.description))
            update.attendees = try elements.enumerated().map { (position, element) throws(ProtocolError) in
                try Self.attendeeChange(element, at: position, in: (current, ids))
            }
        }
        guard !update.isEmpty else {
            throw .invalidArgument("nothing to change: give title, duration, theme or attendees")
        }
        let before = state.syncUps[index].attendees.map(\.id)
        let updated = try state.update(index, with: update)
        // A removed attendee's voice goes with them, unless another sync-up names them too (copied by hand); a
        // renamed one keeps it (profiles are keyed by id).
        let removed = Set(before).subtracting(state.syncUps.attendeeIDs)
        let result = WireFormat.syncUp(updated, meetings: .summary)
        guard !removed.isEmpty else { return .value(result) }
        let reply = PendingReply(parts: 1, outcome: .success(.value(result)))
        forgetVoices(removed, then: reply)
        return .awaited(reply)
    }

    /// Forgets the attendees' voices (`VoiceService.forget`); their files' removal is one of `reply`'s parts
    /// (done on the voice writer's thread), so the client that asked finds them gone when it reads the reply.
    /// With `failing`, a profile that stays fails the reply with what it says.
    private func forgetVoices(
        _ attendees: Set<Attendee.ID>, then reply: PendingReply,
        failing: (@Sendable (SystemError) -> ProtocolError)? = nil
    ) {
        voices.forget(attendees) { error in reply.partDone(failing: error.flatMap { failing?($0) }) }
    }

    /// `voices.forget`: the attendee (an id or a unique prefix of one, in any sync-up) starts over.
    private func forgetVoice(_ arguments: Arguments) throws(ProtocolError) -> ReplyBody {
        let text = try arguments.string("attendee")
        let attendees = state.syncUps.flatMap(\.attendees)
        let attendee: Attendee
        switch IDPrefix.resolve(text, in: attendees.map(\.id.description)) {
        case .found(let index): attendee = attendees[index]
        case .notFound: throw .notFound("no attendee \(text)")
        case .tooShort:
            throw .invalidArgument("attendee \"\(text)\" is too short: give the full id or at least 4 characters")
        case .ambiguous(let indices): throw .invalidArgument("\(text) is the start of \(indices.count) attendees' ids")
        }
        let result: JSONValue = ["id": .string(attendee.id.description), "name": .string(attendee.name)]
        let reply = PendingReply(parts: 1, outcome: .success(.value(result)))
        let name = attendee.name
        forgetVoices([attendee.id], then: reply) { error in
            ProtocolError(.internalError, "the voice profile of \(name) stays: \(error)")
        }
        return .awaited(reply)
    }

    /// `{"id"?: "<id or prefix>", "name": "…"}` or a bare name string (a new attendee). With `current` nil
    /// only the shape is checked.
    private static func attendeeChange(
        _ element: JSONValue, at position: Int, in current: (attendees: [Attendee], ids: IDIndex)?
    ) throws(ProtocolError) -> AttendeeChange {
        if case .string(let name) = element { return AttendeeChange(id: nil, name: name) }
        guard case .object(let object) = element else {
            throw .invalidArgument(
                "\"attendees[\(position)]\" must be an object {\"id\"?, \"name\"} or a name, got \(element.typeName)")
        }
        for key in object.keys where key != "id" && key != "name" {
            throw .invalidArgument("unknown field \"\(key)\" in \"attendees[\(position)]\" (takes \"id\", \"name\")")
        }
        guard case .string(let name)? = object["name"] else {
            throw .invalidArgument("\"attendees[\(position)].name\" must be a string")
        }
        switch object["id"] {
        case nil, .null?:
            return AttendeeChange(id: nil, name: name)
        case .string(let text)?:
            guard let current else { return AttendeeChange(id: nil, name: name) }
            switch current.ids.resolve(text) {
            case .found(let index): return AttendeeChange(id: current.attendees[index].id, name: name)
            case .notFound: throw .invalidArgument("\"attendees[\(position)].id\": no attendee \(text) in this sync-up")
            case .tooShort: throw .invalidArgument("\"attendees[\(position)].id\": \"\(text)\" is too short")
            case .ambiguous:
                throw .invalidArgument("\"attendees[\(position)].id\": \"\(text)\" matches several attendees")
            }
        case let other?:
            throw .invalidArgument("\"attendees[\(position)].id\" must be a string, got \(other.typeName)")
        }
    }

    private func deleteSyncUp(_ arguments: Arguments) throws(ProtocolError) -> ReplyBody {
        let (syncUp, _) = state.delete(try state.index(of: try arguments.string("id")))
        let result: JSONValue = ["id": .string(syncUp.id.description), "title": .string(syncUp.title)]
        let reply = PendingReply(parts: 2, outcome: .success(.value(result)))
        // Not those another sync-up names too (copied by hand): their profiles stay.
        forgetVoices(Set(syncUp.attendees.map(\.id)).subtracting(state.syncUps.attendeeIDs), then: reply)
        status.scheduler?.forget(syncUp.id)
        // Its meetings' files (and a meeting of it being recorded, discarded) go on the journal writer's thread.
        session.whenJournalsCaughtUp { reply.partDone() }
        return .awaited(reply)
    }

    /// The reply to a delete, once the deleted meetings' files are gone (the journal writer removes them, off
    /// the loop, and records a deletion whose files stay), so the client that asked finds them gone when it
    /// reads the reply, and a kill after it does not bring them back; at once when there are none.
    private func removingFiles(of meetings: [Meeting.ID], then result: JSONValue) -> ReplyBody {
        guard !meetings.isEmpty else { return .value(result) }
        return afterJournalsCaughtUp(result)
    }

    /// `result`, once the journal writer has done what was queued so far (`SessionController.whenJournalsCaughtUp`).
    private func afterJournalsCaughtUp(_ result: JSONValue) -> ReplyBody {
        let reply = PendingReply(parts: 1, outcome: .success(.value(result)))
        session.whenJournalsCaughtUp { reply.partDone() }
        return .awaited(reply)
    }

    // MARK: - Meetings

    /// The meeting from the state; its details (a file of up to hundreds of megabytes for a long meeting, or
    /// the copy in memory while it is being written) and its audio's length are read off the loop.
    private func getMeeting(_ arguments: Arguments) throws(ProtocolError) -> ReplyBody {
        let syncUpText = try arguments.string("syncup")
        let meetingText = try arguments.string("meeting")
        let page = try Paging(arguments, offsetKey: "segmentsOffset", limitKey: "segmentsLimit", limits: server.limits)
        let (syncUpIndex, meetingIndex) = try state.meetingIndex(syncUp: syncUpText, meeting: meetingText)
        let syncUp = state.syncUps[syncUpIndex]
        let meeting = syncUp.meetings[meetingIndex]
        guard case .object(var found) = WireFormat.meeting(meeting, includesTranscript: true) else {
            return .value(.null)
        }
        found["syncup"] = ["id": .string(syncUp.id.description), "title": .string(syncUp.title)]
        let object = found
        let directory = state.dataDirectory
        let budget = server.limits.maxReplyBytes * 7 / 8
        let pending = state.detailsWrites.details(of: meeting.id)?.details
        // Nil when abandoned (the client left): the read stops at its next chunk, or before the page is made.
        let reply: @Sendable (() -> Bool) -> JSONValue? = { isAbandoned in
            guard !isAbandoned() else { return nil }
            let details: Result<MeetingDetails?, MeetingDetails.Unreadable>
            do throws(MeetingDetails.Unreadable) {
                if let pending {
                    details = .success(pending)
                } else {
                    details = .success(try MeetingDetails.read(meeting.id, in: directory, while: { !isAbandoned() }))
                }
            } catch {
                if error == .abandoned { return nil }
                details = .failure(error)
            }
            guard !isAbandoned() else { return nil }
            return Self.meetingReply(
                object, details: details, audio: directory.sidecar(meeting.id, MeetingFiles.audio), page: page,
                budget: budget)
        }
        // Off the loop even when the details are in memory (still being written): the audio file's length is
        // asked of the disk.
        let detailsPath = directory.sidecar(meeting.id, MeetingFiles.details)
        return .later { isAbandoned in
            let made = reply(isAbandoned)
            // A long meeting's details were parsed into small blocks (about 7 bytes for each of the file's), under
            // the mmap threshold: freed by now, they stay resident until the heap is trimmed (a 96 MB file had left
            // the daemon at 661 MB, attack 37's C7).
            if pending == nil, FilePath.size(at: detailsPath) ?? 0 >= 1 << 20 {
                Memory.releaseFreePages()
            }
            return made.map { .success(.value($0)) } ?? .failure(ProtocolError(.internalError, "abandoned"))
        }
    }

    /// `meetings.get`'s reply: `meeting`'s object with its details and its audio file's length.
    private static func meetingReply(
        _ meeting: JSONObject, details read: Result<MeetingDetails?, MeetingDetails.Unreadable>,
        audio audioPath: String, page: Paging, budget: Int
    ) -> JSONValue {
        var object = meeting
        var details: MeetingDetails? = nil
        object["detailsError"] = .null
        switch read {
        case .success(let found): details = found
        case .failure(let error): object["detailsError"] = .string(error.description)
        }
        object["interrupted"] = .bool(details?.isInterrupted ?? false)
        object["audio"] =
            WAVFile.seconds(at: audioPath).map { ["file": .string(audioPath), "seconds": .double($0)] } ?? .null
        object["attendees"] = .array((details?.attendees ?? []).map(\.json))
        object["absent"] = .array((details?.absent ?? []).map(\.json))
        if let problems = details?.problems, !problems.isEmpty {
            object["detailsProblems"] = .array(problems.map(JSONValue.string))
        }
        object["insights"] = details?.insights?.json ?? .null
        // The segments are paged within what the rest of the reply leaves (a long meeting has megabytes).
        let used = JSONWriter().encode(.object(object)).count
        let (segments, next) = page.take(details?.segments ?? [], budget: budget - used) { $0.json }
        object["segments"] = .array(segments)
        object["segmentsTotal"] = .int(details?.segments.count ?? 0)
        object["segmentsNext"] = next.map(JSONValue.int) ?? .null
        return .object(object)
    }

    /// A page of a saved meeting's transcript (`syncup` and `meeting` given) or of the running session's.
    private func getTranscript(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
        let syncUpText = try arguments.optionalString("syncup")
        let meetingText = try arguments.optionalString("meeting")
        let offset = try arguments.optionalInt("offset") ?? 0
        // JSON escaping can make text six times longer (control characters): a page always fits a reply.
        let maximum = server.limits.maxReplyBytes / 8
        let limit = try arguments.optionalInt("limit") ?? maximum
        guard offset >= 0 else { throw .invalidArgument("\"offset\" must not be negative") }
        guard (1...maximum).contains(limit) else { throw .invalidArgument("\"limit\" must be from 1 to \(maximum)") }
        let transcript: String
        switch (syncUpText, meetingText) {
        case (let syncUp?, let meeting?):
            let (syncUpIndex, meetingIndex) = try state.meetingIndex(syncUp: syncUp, meeting: meeting)
            transcript = state.syncUps[syncUpIndex].meetings[meetingIndex].transcript
        case (nil, nil):
            guard let live = session.transcript else {
                throw ProtocolError(
                    .noSession, "no meeting is being recorded; give \"syncup\" and \"meeting\" for a saved one")
            }
            transcript = live
        default:
            throw .invalidArgument(
                "give both \"syncup\" and \"meeting\" (a saved meeting), or neither (the running one)")
        }
        let window = TranscriptWindow.page(of: transcript, from: offset, maxBytes: limit)
        var object = JSONObject()
        object.append("text", .string(String(window.text)))
        object.append("offset", .int(window.offset))
        object.append("bytes", .int(window.totalBytes))
        object.append("next", window.next.map(JSONValue.int) ?? .null)
        return .object(object)
    }

    private func deleteMeeting(_ arguments: Arguments) throws(ProtocolError) -> ReplyBody {
        let (syncUpIndex, meetingIndex) = try state.meetingIndex(
            syncUp: try arguments.string("syncup"),
            meeting: try arguments.string("meeting")
        )
        let syncUpID = state.syncUps[syncUpIndex].id
        let (meeting, orphaned) = state.deleteMeeting(syncUpIndex, meetingIndex)
        return removingFiles(
            of: orphaned, then: ["syncup": .string(syncUpID.description), "meeting": .string(meeting.id.description)])
    }

    // MARK: - Schedules

    private func scheduler() throws(ProtocolError) -> Scheduler {
        guard let scheduler = status.scheduler else {
            throw ProtocolError(.invalidState, "this daemon keeps no schedules")
        }
        return scheduler
    }

    private func setSchedule(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
        let reminder = try arguments.optionalInt("reminder")
        if let reminder, !(0...1440).contains(reminder) {
            throw ProtocolError(.invalidArgument, "reminder: \(reminder) minutes; give 0 to 1440")
        }
        return try scheduler().set(
            syncUp: try arguments.string("syncup"), schedule: try arguments.string("schedule"),
            timeZone: try arguments.optionalString("timeZone"), reminder: reminder,
            autoStart: try arguments.optionalBool("autoStart"))
    }

    // MARK: - Sessions

    private func startSession(_ arguments: Arguments) throws(ProtocolError) -> ReplyBody {
        return try session.start(
            syncUp: try arguments.string("syncup"),
            audio: try arguments.optionalBool("audio"),
            transcribe: try arguments.optionalBool("transcribe"),
            call: try arguments.optionalBool("call"),
            absent: try arguments.optionalStrings("absent") ?? []
        )
    }

    /// A discard is answered once its files are gone (or recorded as deleted): a kill -9 right after the
    /// reply does not bring the meeting back.
    private func endSession(_ arguments: Arguments) throws(ProtocolError) -> ReplyBody {
        let action = try arguments.optionalChoice("action", ["save", "discard"]) ?? "save"
        let result = try session.request(.end(action == "save" ? .save : .discard))
        guard action == "discard" else { return .value(result) }
        return afterJournalsCaughtUp(result)
    }

    // MARK: - Subscriptions

    private func topics(_ arguments: Arguments) throws(ProtocolError) -> Set<Topic>? {
        guard let names = try arguments.optionalStrings("topics") else { return nil }
        var topics = Set<Topic>()
        for name in names {
            guard let topic = Topic(rawValue: name) else {
                throw .invalidArgument(
                    "unknown topic \"\(name)\"; topics: \(Topic.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            topics.insert(topic)
        }
        return topics
    }

    private func subscribe(_ arguments: Arguments, _ connection: Connection) throws(ProtocolError) -> JSONValue {
        let requested = try topics(arguments) ?? Set(Topic.allCases)
        guard !requested.isEmpty else { throw .invalidArgument("\"topics\" is empty; omit it to subscribe to all") }
        let wantsSnapshot = try arguments.optionalBool("snapshot") ?? true
        let all = connection.topics.union(requested)
        var result = JSONObject()
        result.append("seq", .int(server.seq))
        result.append("topics", .array(Topic.allCases.filter(all.contains).map { .string($0.rawValue) }))
        if wantsSnapshot {
            var snapshot = JSONObject()
            if requested.contains(.syncups) {
                for member in state.firstPage().members { snapshot.append(member.key, member.value) }
            }
            if requested.contains(.session) { snapshot.append("session", session.json) }
            if requested.contains(.daemon) {
                snapshot.append("daemon", ["persistenceError": .optional(persistenceError)])
            }
            result.append("snapshot", .object(snapshot))
        }
        // Everything that can fail comes before subscribing, the size of the reply too: a refused subscribe
        // leaves the connection as it was.
        let size = JSONWriter().encode(.object(result)).count
        guard size < server.limits.maxReplyBytes - 1024 else {
            throw ProtocolError(
                .internalError,
                "the snapshot would be \(size) bytes, over the \(server.limits.maxReplyBytes)-byte limit; subscribe with \"snapshot\": false and page with syncups.list"
            )
        }
        try server.setTopics(all, for: connection)
        return .object(result)
    }

    private func unsubscribe(_ arguments: Arguments, _ connection: Connection) throws(ProtocolError) -> JSONValue {
        let remaining = connection.topics.subtracting(try topics(arguments) ?? Set(Topic.allCases))
        try server.setTopics(remaining, for: connection)
        return ["topics": .array(Topic.allCases.filter(remaining.contains).map { .string($0.rawValue) })]
    }
}

/// `offset`/`limit` arguments, and taking a page of items that also fits a byte budget.
struct Paging: Sendable {
    var offset: Int
    var limit: Int

    init(offset: Int, limit: Int) {
        self.offset = offset
        self.limit = limit
    }

    init(_ arguments: Arguments, offsetKey: String, limitKey: String, limits: Limits) throws(ProtocolError) {
        offset = try arguments.optionalInt(offsetKey) ?? 0
        limit = try arguments.optionalInt(limitKey) ?? limits.maxPageSize
        guard offset >= 0 else { throw .invalidArgument("\"\(offsetKey)\" must not be negative") }
        guard (1...limits.maxPageSize).contains(limit) else {
            throw .invalidArgument("\"\(limitKey)\" must be from 1 to \(limits.maxPageSize)")
        }
    }

    /// The page's encoded items and the offset of the next page (nil at the end). A page stops early when
    /// its encoding would pass `budget` bytes, but always holds at least one item.
    func take<Item>(_ items: [Item], budget: Int, encode: (Item) -> JSONValue) -> ([JSONValue], Int?) {
        var page: [JSONValue] = []
        var bytes = 0
        var index = min(offset, items.count)
        let writer = JSONWriter()
        while index < items.count && page.count < limit {
            let value = encode(items[index])
            bytes += writer.encode(value).count + 1
            if bytes > budget && !page.isEmpty { break }
            page.append(value)
            index += 1
        }
        return (page, index < items.count ? index : nil)
    }
}
