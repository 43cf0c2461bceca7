import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol

/// How a command line names things, beyond the ids the daemon resolves: a sync-up by its title or (except to
/// delete it) a title prefix, a meeting as `latest` or `latest~N`, as git names commits.
extension Context {
    /// The full id of the sync-up `text` names, by rank: an exact full id; else a title equal to `text` byte
    /// for byte; else a title equal as `NameKey` compares them (ignoring case, accents and extra spaces). Each
    /// rank wins outright over the ones after it (a sync-up titled `6587` is not another whose id starts with
    /// 6587, and "équipe café" is not "Équipe Café" when both exist); two or more at one rank are an error that
    /// lists them by id. Then a unique id prefix (4+ characters, the daemon's rule) or, unless
    /// `titlePrefixes` is false (commands that delete), a unique title prefix.
    func syncUpID(_ text: String, on connection: DaemonConnection, titlePrefixes: Bool = true) throws(CLIError)
        -> String
    {
        let all = try Syncupsctl.allSyncUps(self, on: connection)
        func id(_ syncUp: JSONValue) -> String { Format.string(syncUp["id"]) }
        func title(_ syncUp: JSONValue) -> String { NameKey.of(Format.string(syncUp["title"])) }
        if let exact = all.first(where: { id($0).lowercased() == text.lowercased() }) { return id(exact) }
        // Bytes, not `String`'s `==`, which calls a decomposed é equal to a precomposed one.
        let sameBytes = all.filter { Format.string($0["title"]).utf8.elementsEqual(text.utf8) }
        if sameBytes.count == 1 { return id(sameBytes[0]) }
        guard sameBytes.isEmpty else {
            throw Self.ambiguous(
                "\"\(text)\" is the title of \(sameBytes.count) sync-ups", sameBytes,
                hint: "name one by its id (syncupsctl ids lists them)")
        }
        let wanted = NameKey.of(text)
        let sameTitle = all.filter { !wanted.isEmpty && title($0) == wanted }
        if sameTitle.count == 1 { return id(sameTitle[0]) }
        guard sameTitle.isEmpty else {
            throw Self.ambiguous(
                "\"\(text)\" is the title of \(sameTitle.count) sync-ups, ignoring case, accents and spaces",
                sameTitle, hint: "write the title exactly or name one by its id (syncupsctl ids lists them)")
        }
        var matches: [JSONValue] = []
        var byID: CLIError?
        do {
            let syncUp = try connection.call(CommandName.syncUpsGet, ["id": .string(text), "meetingsLimit": 1])
            matches += all.filter { id($0) == Format.string(syncUp["id"]) }
        } catch .rejected(let error) where error.code == .notFound || error.code == .invalidArgument {
            if error.code == .invalidArgument { byID = .rejected(code: error.code.rawValue, message: error.message) }
        } catch {
            throw Self.cliError(error)
        }
        var prefixed: [JSONValue] = []
        for syncUp in all where !wanted.isEmpty && title(syncUp).hasPrefix(wanted) {
            if !matches.contains(where: { id($0) == id(syncUp) }) { prefixed.append(syncUp) }
        }
        if !titlePrefixes {
            if let match = matches.first { return id(match) }
            guard prefixed.isEmpty else {
                throw Self.ambiguous(
                    "\"\(text)\" is only the start of a title, which does not name a sync-up to delete", prefixed,
                    hint: "write the whole title or the id (4+ characters)")
            }
            throw byID ?? .rejected(code: "not_found", message: "no sync-up with the id or title \"\(text)\"")
        }
        matches += prefixed
        guard matches.count <= 1 else {
            throw Self.ambiguous(
                "\"\(text)\" matches \(matches.count) sync-ups", matches, hint: "give more of the title or the id")
        }
        if let match = matches.first { return id(match) }
        throw byID ?? .rejected(code: "not_found", message: "no sync-up with the id or title \"\(text)\"")
    }

    /// Several sync-ups fit: each by its short id and title.
    private static func ambiguous(_ what: String, _ syncUps: [JSONValue], hint: String) -> CLIError {
        let listed = syncUps.map {
            "\(Format.shortID(Format.string($0["id"]))) \"\(Format.string($0["title"]).visibleOnOneLine)\""
        }
        return .rejected(code: "invalid_argument", message: "\(what): \(listed.joined(separator: ", ")); \(hint)")
    }

    /// The id of the meeting `text` names in the sync-up `syncUpID`: `latest` (the newest), `latest~N` (the
    /// one N before it), or an id or id prefix, passed on as it is.
    func meetingID(_ text: String, syncUp syncUpID: String, on connection: DaemonConnection) throws(CLIError)
        -> String
    {
        let lowered = text.lowercased()
        guard lowered.hasPrefix("latest") else { return text }
        let back: Int
        if lowered == "latest" {
            back = 0
        } else if lowered.hasPrefix("latest~"), let count = Int(lowered.dropFirst("latest~".count)), count >= 0 {
            back = count
        } else {
            return text
        }
        // The one meeting asked for, by offset: a page holds at most `maxPageSize`, so `latest~N` past the
        // first page must not be read from it (and `back + 1` would overflow for the largest N).
        let syncUp = try call(
            on: connection, CommandName.syncUpsGet,
            ["id": .string(syncUpID), "meetingsOffset": .int(back), "meetingsLimit": .int(1)])
        let meetings = syncUp["meetings"]?.arrayValue ?? []
        guard let meeting = meetings.first else {
            let total = Format.int(syncUp["meetingsTotal"])
            throw .rejected(
                code: "not_found",
                message:
                    "\"\(Format.name(syncUp["title"]))\" has \(total) meeting\(total == 1 ? "" : "s"), so no \(text)")
        }
        return Format.string(meeting["id"])
    }

    /// Both ids of a `SYNCUP MEETING` pair of arguments (`titlePrefixes` as `syncUpID` takes it).
    func meetingIDs(
        _ syncUp: String, _ meeting: String, on connection: DaemonConnection, titlePrefixes: Bool = true
    ) throws(CLIError) -> (syncUp: String, meeting: String) {
        let syncUpID = try syncUpID(syncUp, on: connection, titlePrefixes: titlePrefixes)
        return (syncUpID, try meetingID(meeting, syncUp: syncUpID, on: connection))
    }
}
