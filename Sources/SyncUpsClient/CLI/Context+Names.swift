import SyncUpsJSON
import SyncUpsProtocol

/// How a command line names things, beyond the ids the daemon resolves: a sync-up by its title or a title
/// prefix, a meeting as `latest` or `latest~N`, as git names commits.
extension Context {
    /// The full id of the sync-up `text` names: an id or a unique id prefix (the daemon's rule) first, else a
    /// title, ignoring case, else a unique title prefix. Several matching titles is an error that lists them.
    func syncUpID(_ text: String, on connection: DaemonConnection) throws(CLIError) -> String {
        let byID: CLIError
        do {
            let syncUp = try connection.call("syncups.get", ["id": .string(text), "meetingsLimit": 1])
            return Format.string(syncUp["id"])
        } catch .rejected(let error) where error.code == .notFound || error.code == .invalidArgument {
            byID = .rejected(code: error.code.rawValue, message: error.message)
        } catch {
            throw Self.cliError(error)
        }
        let all = try Syncupsctl.allSyncUps(self, on: connection)
        let wanted = text.lowercased()
        let exact = all.filter { Format.string($0["title"]).lowercased() == wanted }
        let matches = exact.isEmpty ? all.filter { Format.string($0["title"]).lowercased().hasPrefix(wanted) } : exact
        guard matches.count <= 1 else {
            let listed = matches.map { "\(Format.shortID(Format.string($0["id"]))) \"\(Format.string($0["title"]))\"" }
            throw .rejected(
                code: "invalid_argument",
                message:
                    "\"\(text)\" matches \(matches.count) sync-ups: \(listed.joined(separator: ", ")); give more of the title or the id"
            )
        }
        guard let match = matches.first, !wanted.isEmpty else { throw byID }
        return Format.string(match["id"])
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
            on: connection, "syncups.get",
            ["id": .string(syncUpID), "meetingsOffset": .int(back), "meetingsLimit": .int(1)])
        let meetings = syncUp["meetings"]?.arrayValue ?? []
        guard let meeting = meetings.first else {
            let total = Format.int(syncUp["meetingsTotal"])
            throw .rejected(
                code: "not_found",
                message:
                    "\"\(Format.string(syncUp["title"]))\" has \(total) meeting\(total == 1 ? "" : "s"), so no \(text)")
        }
        return Format.string(meeting["id"])
    }

    /// Both ids of a `SYNCUP MEETING` pair of arguments.
    func meetingIDs(_ syncUp: String, _ meeting: String, on connection: DaemonConnection) throws(CLIError) -> (
        syncUp: String, meeting: String
    ) {
        let syncUpID = try syncUpID(syncUp, on: connection)
        return (syncUpID, try meetingID(meeting, syncUp: syncUpID, on: connection))
    }
}
