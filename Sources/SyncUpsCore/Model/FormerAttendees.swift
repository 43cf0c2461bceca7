import SyncUpsJSON

/// The people removed from each sync-up, so that someone added back by the same name is the same person (the
/// same attendee id) to the history, the insights and `stats`. Kept by the daemon beside `sync-ups.json`
/// (which stays the app's format); names are compared as `NameKey` compares them: case, accents and spaces at
/// either end or repeated inside do not count.
public struct FormerAttendees: Sendable, Equatable {
    /// Per sync-up, the attendees removed from it, the latest removal of a name last.
    public private(set) var bySyncUp: [SyncUp.ID: [Attendee]] = [:]

    public init() {}

    /// The former attendee of `syncUp` called `name`, if there is one.
    public func attendee(named name: String, in syncUp: SyncUp.ID) -> Attendee? {
        let key = NameKey.of(name)
        guard !key.isEmpty else { return nil }
        return bySyncUp[syncUp]?.last { NameKey.of($0.name) == key }
    }

    /// The former attendees of `syncUp`.
    public func of(_ syncUp: SyncUp.ID) -> [Attendee] { bySyncUp[syncUp] ?? [] }

    /// `old` became `new`: whoever was removed is remembered (one entry a name: the latest), whoever is in it
    /// again is no longer former. Returns whether anything changed.
    @discardableResult
    public mutating func follow(_ old: SyncUp, to new: SyncUp) -> Bool {
        let kept = Set(new.attendees.map(\.id))
        let before = bySyncUp[new.id] ?? []
        var former = before.filter { !kept.contains($0.id) }
        // One per name, the latest removal last: by key, so a thousand removed fold a thousand names.
        var removedKeys = Set<String>()
        var removed: [Attendee] = []
        for attendee in old.attendees where !kept.contains(attendee.id) {
            let key = NameKey.of(attendee.name)
            guard !key.isEmpty else { continue }
            if !removedKeys.insert(key).inserted { removed.removeAll { NameKey.of($0.name) == key } }
            removed.append(attendee)
        }
        if !removedKeys.isEmpty { former.removeAll { removedKeys.contains(NameKey.of($0.name)) } }
        former += removed
        guard former != before else { return false }
        bySyncUp[new.id] = former.isEmpty ? nil : former
        return true
    }

    /// What is remembered for sync-ups that `syncUps` does not have (a hand edit, or a file from elsewhere),
    /// said so; kept, in case that sync-up comes back (another program's edit of sync-ups.json).
    public func problems(against syncUps: [SyncUp]) -> [String] {
        let known = Set(syncUps.map(\.id))
        return bySyncUp.keys.filter { !known.contains($0) }.map(\.description).sorted().map {
            "syncups.\($0) is not a sync-up of sync-ups.json; its entries are kept but used by none"
        }
    }

    /// A sync-up was deleted: its former attendees go with it.
    @discardableResult
    public mutating func forget(_ syncUp: SyncUp.ID) -> Bool { bySyncUp.removeValue(forKey: syncUp) != nil }

    // MARK: - JSON

    public var json: JSONValue {
        var object = JSONObject()
        object.append("version", 1)
        var syncUps = JSONObject()
        for (id, attendees) in bySyncUp.sorted(by: { $0.key.description < $1.key.description }) {
            syncUps.append(id.description, .array(attendees.map(\.json)))
        }
        object.append("syncups", .object(syncUps))
        return .object(object)
    }

    /// Reads what `json` wrote, with what it could not use (a hand edit): an entry that is not an attendee, a
    /// sync-up id that is not one, an attendee or a name listed twice (the later one is used).
    public static func read(_ json: JSONValue) -> (FormerAttendees, problems: [String]) {
        var former = FormerAttendees()
        var problems: [String] = []
        guard case .object(let syncUps)? = json["syncups"] else {
            return (former, ["no \"syncups\" object: nothing remembered"])
        }
        for member in syncUps.members {
            guard let id = SyncUp.ID(uuidString: member.key) else {
                problems.append("\"\(member.key)\" is not a sync-up id; ignored")
                continue
            }
            var list: [Attendee] = []
            for (index, entry) in (member.value.arrayValue ?? []).enumerated() {
                guard let attendee = Attendee(json: entry) else {
                    problems.append("syncups.\(member.key)[\(index)] is not an attendee ({\"id\",\"name\"}); ignored")
                    continue
                }
                let key = NameKey.of(attendee.name)
                guard !key.isEmpty else {
                    problems.append(
                        "syncups.\(member.key)[\(index)] has a blank name: nobody can be added back by it; ignored")
                    continue
                }
                if let extra = entry.objectValue?.keys.filter({ $0 != "id" && $0 != "name" }), !extra.isEmpty {
                    problems.append(
                        "syncups.\(member.key)[\(index)] (\(attendee.name)) has fields other than id and name ("
                            + extra.joined(separator: ", ") + "); they are not kept")
                }
                if list.contains(where: { $0.id == attendee.id || NameKey.of($0.name) == key }) {
                    problems.append(
                        "syncups.\(member.key)[\(index)] (\(attendee.name)) repeats an attendee or a name; the later one is kept"
                    )
                    list.removeAll { $0.id == attendee.id || NameKey.of($0.name) == key }
                }
                list.append(attendee)
            }
            if !list.isEmpty { former.bySyncUp[id] = list }
        }
        return (former, problems)
    }
}
