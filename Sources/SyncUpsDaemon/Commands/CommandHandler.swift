import FoundationEssentials
import Glibc
import SyncUpsAudio
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// Turns each request into a call on the daemon's state and a result; one method per command, named after
/// it. protocol.md documents every command here, and the two change together.
final class CommandHandler {
    let state: DaemonState
    let server: Server
    let store: SyncUpStore
    let session: SessionController
    let status: StatusInfo

    /// Facts for `status` that are fixed at start-up or owned elsewhere.
    struct StatusInfo {
        var version: String
        var socketPath: String
        var startedAt: MonotonicInstant
        var startDate: Date
        var loadWarnings: [String]
    }

    init(state: DaemonState, server: Server, store: SyncUpStore, session: SessionController, status: StatusInfo) {
        self.state = state
        self.server = server
        self.store = store
        self.session = session
        self.status = status
    }

    /// One command: its name, the arguments it takes, and what runs it. The dispatcher, the
    /// `unknown_command` message and the argument check all read this one table.
    struct Command: Sendable {
        typealias Run = @Sendable (CommandHandler, Arguments, Connection) throws(ProtocolError) -> ReplyBody

        let name: String
        let arguments: [String]
        let run: Run

        init(_ name: String, _ arguments: [String] = [], _ run: @escaping Run) {
            self.name = name
            self.arguments = arguments
            self.run = run
        }

        /// A command whose result is a JSON value.
        init(
            _ name: String, _ arguments: [String] = [],
            value: @escaping @Sendable (CommandHandler, Arguments, Connection) throws(ProtocolError) -> JSONValue
        ) {
            self.init(name, arguments) { (handler, arguments, connection) throws(ProtocolError) in
                .value(try value(handler, arguments, connection))
            }
        }
    }

    /// Every command, in the order protocol.md documents them.
    static let commands: [Command] = [
        Command("ping", value: { _, _, _ in "pong" }),
        // `status` is what bars and scripts poll: it is written straight into bytes.
        Command("status") { (handler, _, _) throws(ProtocolError) in .encoded(handler.statusReply()) },
        Command("themes.list", value: { _, _, _ in .array(Theme.allCases.map(WireFormat.theme)) }),
        Command(
            "syncups.list", ["offset", "limit"],
            value: { (handler, arguments, _) throws(ProtocolError) in
                try handler.listSyncUps(arguments)
            }),
        Command(
            "syncups.get", ["id", "meetingsOffset", "meetingsLimit"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in try handler.getSyncUp(arguments)
            }),
        Command(
            "syncups.create", ["title", "duration", "theme", "attendees"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in try handler.createSyncUp(arguments)
            }),
        Command(
            "syncups.update", ["id", "title", "duration", "theme", "attendees"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in try handler.updateSyncUp(arguments)
            }),
        Command(
            "syncups.delete", ["id"],
            value: { (handler, arguments, _) throws(ProtocolError) in
                try handler.deleteSyncUp(arguments)
            }),
        Command("meetings.get", ["syncup", "meeting", "segmentsOffset", "segmentsLimit"]) {
            (handler, arguments, _) throws(ProtocolError) in try handler.getMeeting(arguments)
        },
        Command(
            "meetings.delete", ["syncup", "meeting"],
            value: { (handler, arguments, _) throws(ProtocolError) in
                try handler.deleteMeeting(arguments)
            }),
        Command(
            "transcript.get", ["syncup", "meeting", "offset", "limit"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in try handler.getTranscript(arguments)
            }),
        Command(
            "session.start", ["syncup", "audio", "transcribe", "call", "absent"],
            value: {
                (handler, arguments, _) throws(ProtocolError) in try handler.startSession(arguments)
            }),
        Command("session.get", value: { handler, _, _ in handler.session.json }),
        Command(
            "session.next",
            value: { (handler, _, _) throws(ProtocolError) in
                try handler.session.request(.next)
            }),
        Command(
            "session.pause",
            value: { (handler, _, _) throws(ProtocolError) in
                try handler.session.request(.pause)
            }),
        Command(
            "session.resume",
            value: { (handler, _, _) throws(ProtocolError) in
                try handler.session.request(.resume)
            }),
        Command(
            "session.end", ["action"],
            value: { (handler, arguments, _) throws(ProtocolError) in
                try handler.endSession(arguments)
            }),
        Command(
            "session.absent", ["attendee"],
            value: { (handler, arguments, _) throws(ProtocolError) in
                try handler.session.request(.markAbsent(try arguments.string("attendee")))
            }),
        Command(
            "session.back", ["attendee"],
            value: { (handler, arguments, _) throws(ProtocolError) in
                try handler.session.request(.markBack(try arguments.string("attendee")))
            }),
        Command("devices", value: { handler, _, _ in handler.session.devicesJSON }),
        Command(
            "subscribe", ["topics", "snapshot"],
            value: { (handler, arguments, connection) throws(ProtocolError) in
                try handler.subscribe(arguments, connection)
            }),
        Command(
            "unsubscribe", ["topics"],
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
            return .success(try command.run(self, try Arguments(request, allowed: command.arguments), connection))
        } catch {
            return .failure(error)
        }
    }

    // MARK: - Daemon

    /// The part of `status` that never changes, encoded once: `{"version":…,…,"dataFile":"…"`.
    private lazy var statusPrefix: [UInt8] = {
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
        return prefix
    }()

    /// `status` is what bars and scripts poll, so it is written straight to bytes: no JSONValue tree for the
    /// daemon's own fields (a running session's object is still built as one), no floating-point formatting,
    /// literals appended as raw bytes. The one fast path beside the general writer, kept for its figure:
    /// `make bench`'s instructions table gave 7,328 instructions per pipelined `status` this way and 38,669
    /// with the same object built as a `JSONValue` and written by `JSONWriter` (2026-12, one run each).
    private var statusBuffer: [UInt8] = []

    /// Everything the idle daemon's `status` says that can change, to the millisecond of its uptime.
    private struct StatusStamp: Equatable {
        var uptimeMilliseconds: Int64
        var syncUps: Int
        var meetings: Int
        var connections: Int
        var subscribers: Int
        var seq: Int
        var timers: Int
        var hasUnsavedChanges: Bool
        var isSynced: Bool
        /// The speech engine and audio device change with the settings, on SIGHUP (an integer: the stamp is
        /// taken for every 256th replayed `status`, and copying and comparing the two strings was most of it).
        var settingsGeneration: Int
    }

    /// What `status` says now, unless a session runs (its object changes without any of the other fields
    /// changing) or a write failed (rare; its message is not in the stamp); the generation counts the changes
    /// of that, and `statusBuffer` holds the reply to the last.
    private var statusStamp: StatusStamp?
    private var statusGeneration = 0

    /// The generation of the idle daemon's `status` (nil while a session runs), to the millisecond of its
    /// uptime: a status bar, or a client asking many times within a millisecond, gets the same reply again
    /// (`Server.replayGeneration`) without its being encoded again.
    private func currentStatusGeneration(uptimeMilliseconds: Int64) -> Int? {
        guard session.active == nil, persistenceError == nil else {
            statusStamp = nil
            return nil
        }
        let stamp = StatusStamp(
            uptimeMilliseconds: uptimeMilliseconds, syncUps: state.syncUps.count, meetings: state.meetingCount,
            connections: server.connections.count, subscribers: server.subscriberCount, seq: server.seq,
            timers: server.loop.scheduledTimerCount, hasUnsavedChanges: store.hasUnsavedChanges,
            isSynced: store.isDurable, settingsGeneration: session.settingsGeneration)
        if stamp != statusStamp {
            statusStamp = stamp
            statusGeneration += 1
            isStatusBufferCurrent = false
        }
        return statusGeneration
    }

    private var isStatusBufferCurrent = false

    /// As of the request line being handled.
    private var uptimeMilliseconds: Int64 { (server.lineTime.nanoseconds - status.startedAt.nanoseconds) / 1_000_000 }

    /// `Server.replayGeneration`: only `status` (without arguments) is replayed.
    func replayGeneration(for request: Request) -> Int? {
        guard request.command == "status", request.arguments.isEmpty else { return nil }
        return currentStatusGeneration(uptimeMilliseconds: uptimeMilliseconds)
    }

    private func statusReply() -> [UInt8] {
        let milliseconds = uptimeMilliseconds
        if currentStatusGeneration(uptimeMilliseconds: milliseconds) != nil {
            if isStatusBufferCurrent { return statusBuffer }
            isStatusBufferCurrent = true
        }
        return encodeStatus(uptimeMilliseconds: milliseconds)
    }

    private func encodeStatus(uptimeMilliseconds milliseconds: Int64) -> [UInt8] {
        // Reused: the server drops the previous reply's reference before the next request, so this
        // buffer is uniquely held again and refilling it allocates nothing.
        var bytes = statusBuffer
        statusBuffer = []
        defer { statusBuffer = bytes }
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: statusPrefix)
        func field(_ name: StaticString, _ value: Int) {
            JSONWriter.appendASCII(name, to: &bytes)
            JSONWriter.appendInteger(Int64(value), to: &bytes)
        }
        // Seconds with millisecond precision, as the shortest decimal ("12.3", not "12.300").
        field(#","uptime":"#, Int(milliseconds / 1000))
        var fraction = Int(milliseconds % 1000)
        if fraction > 0 {
            var digits = 3
            while fraction % 10 == 0 {
                fraction /= 10
                digits -= 1
            }
            bytes.append(UInt8(ascii: "."))
            for power in [100, 10, 1].suffix(digits) { bytes.append(UInt8(ascii: "0") + UInt8(fraction / power % 10)) }
        }
        // `syncups`, as everywhere else; `syncUps`, protocol 1's first name for it, stays for its clients.
        field(#","syncups":"#, state.syncUps.count)
        field(#","syncUps":"#, state.syncUps.count)
        field(#","meetings":"#, state.meetingCount)
        field(#","connections":"#, server.connections.count)
        field(#","subscribers":"#, server.subscriberCount)
        field(#","seq":"#, server.seq)
        field(#","timers":"#, server.loop.scheduledTimerCount)
        let writer = JSONWriter()
        JSONWriter.appendASCII(#","session":"#, to: &bytes)
        writer.write(session.json, into: &bytes)
        JSONWriter.appendASCII(#","speechEngine":"#, to: &bytes)
        if let engine = session.engineName {
            JSONWriter.writeString(engine, into: &bytes)
        } else {
            JSONWriter.appendASCII("null", to: &bytes)
        }
        JSONWriter.appendASCII(#","audioDevice":"#, to: &bytes)
        JSONWriter.writeString(session.settings.audioDeviceName, into: &bytes)
        JSONWriter.appendASCII(#","persistence":{"lastError":"#, to: &bytes)
        if let error = persistenceError {
            JSONWriter.writeString(error, into: &bytes)
        } else {
            JSONWriter.appendASCII("null", to: &bytes)
        }
        JSONWriter.appendASCII(
            store.hasUnsavedChanges ? #","unsavedChanges":true"# : #","unsavedChanges":false"#, to: &bytes)
        JSONWriter.appendASCII(store.isDurable ? #","synced":true"# : #","synced":false"#, to: &bytes)
        JSONWriter.appendASCII(#","warnings":["#, to: &bytes)
        for (index, warning) in status.loadWarnings.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(warning, into: &bytes)
        }
        JSONWriter.appendASCII("]}}", to: &bytes)
        return bytes
    }

    /// The last failed write of the user's data, if it still fails: `sync-ups.json` or a meeting's details.
    private var persistenceError: String? { store.lastError ?? session.detailsError }

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

    private func updateSyncUp(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
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
        return WireFormat.syncUp(try state.update(index, with: update), meetings: .summary)
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

    private func deleteSyncUp(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
        let syncUp = state.delete(try state.index(of: try arguments.string("id")))
        return ["id": .string(syncUp.id.description), "title": .string(syncUp.title)]
    }

    // MARK: - Meetings

    /// The meeting from the state; its details (a file of up to hundreds of megabytes for a long meeting) and
    /// its audio's length are read off the loop, unless the details are still in memory.
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
        let pending = state.detailsBeingWritten[meeting.id]
        let reply: @Sendable () -> JSONValue = {
            let details: Result<MeetingDetails?, MeetingDetails.Unreadable>
            do throws(MeetingDetails.Unreadable) {
                if let pending {
                    details = .success(pending)
                } else {
                    details = .success(try MeetingDetails.read(meeting.id, in: directory))
                }
            } catch {
                details = .failure(error)
            }
            return Self.meetingReply(
                object, details: details, audio: directory.sidecar(meeting.id, MeetingFiles.audio), page: page,
                budget: budget)
        }
        guard pending == nil else { return .value(reply()) }
        return .later { .success(.value(reply())) }
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

    private func deleteMeeting(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
        let (syncUpIndex, meetingIndex) = try state.meetingIndex(
            syncUp: try arguments.string("syncup"),
            meeting: try arguments.string("meeting")
        )
        let syncUpID = state.syncUps[syncUpIndex].id
        let meeting = state.deleteMeeting(syncUpIndex, meetingIndex)
        return ["syncup": .string(syncUpID.description), "meeting": .string(meeting.id.description)]
    }

    // MARK: - Sessions

    private func startSession(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
        return try session.start(
            syncUp: try arguments.string("syncup"),
            audio: try arguments.optionalBool("audio"),
            transcribe: try arguments.optionalBool("transcribe"),
            call: try arguments.optionalBool("call"),
            absent: try arguments.optionalStrings("absent") ?? []
        )
    }

    private func endSession(_ arguments: Arguments) throws(ProtocolError) -> JSONValue {
        let action = try arguments.optionalChoice("action", ["save", "discard"]) ?? "save"
        return try session.request(.end(action == "save" ? .save : .discard))
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
