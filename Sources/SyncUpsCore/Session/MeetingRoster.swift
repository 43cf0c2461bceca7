/// The people of one meeting, taken from its sync-up when it starts and owned by the meeting from then on:
/// who is in the rotation and in which order, who is absent today, who has had the floor. Keyed by attendee
/// id, so a rename is one field and whatever else a meeting learns about a person (a voice, say) can be kept
/// beside them.
///
/// The rotation is everyone who has had the floor, in the order they had it, then everyone present who has
/// not, in the sync-up's order: what already happened is never reordered, and the speaker is always the last
/// of those who had the floor. Shares are the app's: the duration divided by the people in the rotation.
public struct MeetingRoster: Sendable, Equatable {
    /// One person of the meeting.
    public struct Member: Sendable, Equatable {
        public var attendee: Attendee {
            didSet { if attendee.name != oldValue.name { nameKey = NameKey.of(attendee.name) } }
        }
        /// `NameKey.of(attendee.name)`, kept: looking a name up in a roster of a thousand folds one name, not
        /// a thousand.
        public private(set) var nameKey: String
        /// Marked absent for today (`session.start {absent}`, `session.absent`): not in the rotation.
        public var isAbsent = false
        /// Removed from the sync-up during the meeting: not in the rotation from then on.
        public var hasLeft = false
        /// Whether they have had the floor in this meeting (what already happened: they stay in the rotation).
        public var hasHadTheFloor = false

        public init(attendee: Attendee, isAbsent: Bool = false) {
            self.attendee = attendee
            self.nameKey = NameKey.of(attendee.name)
            self.isAbsent = isAbsent
        }

        public var id: Attendee.ID { attendee.id }
    }

    /// Everyone the meeting has known, in the order they come in the rotation.
    public private(set) var members: [Member]
    /// The ids of those who had the floor, in the order they had it (the last one has it now).
    public private(set) var speakers: [Attendee.ID] = []

    /// Everyone in `attendees` present.
    public init(_ attendees: [Attendee]) {
        members = attendees.map { Member(attendee: $0) }
    }

    /// The roster of a meeting of `syncUp`, with `absent` (names or ids, see `member(named:)`) marked absent.
    /// Throws, changing nothing, for a name that is nobody's, one that is several people's, or for an absent
    /// list that leaves nobody.
    public init(_ attendees: [Attendee], absent: [String]) throws(RosterError) {
        self.init(attendees)
        let lookup = absent.isEmpty ? nil : Lookup(members)
        for text in absent {
            let index = try index(named: text, lookup: lookup)
            guard !members[index].isAbsent else {
                throw RosterError("\"\(members[index].attendee.name)\" is already absent (listed twice)")
            }
            members[index].isAbsent = true
        }
        guard attendees.isEmpty || !rotation.isEmpty else {
            throw RosterError("everyone would be absent: a meeting needs at least one attendee present")
        }
    }

    // MARK: - Derived

    /// Who takes turns, in order: those who had the floor, then those present who have not.
    public var rotation: [Attendee] {
        // By index, not a search a speaker: a roster of a thousand is a thousand steps, not a million.
        let byID = Dictionary(members.map { ($0.id, $0.attendee) }, uniquingKeysWith: { first, _ in first })
        return speakers.compactMap { byID[$0] }
            + members.filter { !$0.hasHadTheFloor && !$0.isAbsent && !$0.hasLeft }.map(\.attendee)
    }

    /// How many take turns (`rotation.count`, without building it).
    public var rotationCount: Int {
        speakers.count + members.count(where: { !$0.hasHadTheFloor && !$0.isAbsent && !$0.hasLeft })
    }

    /// The first of those waiting for the floor, if anybody is.
    public var next: Attendee? { members.first { !$0.hasHadTheFloor && !$0.isAbsent && !$0.hasLeft }?.attendee }

    /// The member with `id`, as named now.
    public func attendee(_ id: Attendee.ID) -> Attendee? { members.first { $0.id == id }?.attendee }

    /// Who the saved meeting lists: everyone who had the floor and everyone present at its end, in the
    /// rotation's order (someone removed before their turn was not at the meeting; the absent are `absent`).
    public var meetingAttendees: [Attendee] { rotation }

    /// Those marked absent who never had the floor, in the sync-up's order.
    public var absent: [Attendee] { members.filter { $0.isAbsent && !$0.hasHadTheFloor }.map(\.attendee) }

    /// Whoever has the floor (the last to be given it), if anybody has yet.
    public var speakerID: Attendee.ID? { speakers.last }

    /// Whether the one with the floor has left the sync-up or been marked absent since it was given.
    public var speakerIsGone: Bool {
        guard let id = speakerID, let member = members.first(where: { $0.id == id }) else { return false }
        return member.hasLeft || member.isAbsent
    }

    /// The app's share: the duration divided by the people in the rotation, in whole seconds.
    public func share(of durationSeconds: Int) -> Int {
        let count = rotationCount
        return count == 0 ? durationSeconds : durationSeconds / count
    }

    // MARK: - Changes

    /// `id` has the floor from now on (they are the next of the rotation).
    mutating func giveFloor(to id: Attendee.ID) {
        guard let index = members.firstIndex(where: { $0.id == id }) else { return }
        members[index].hasHadTheFloor = true
        speakers.append(id)
    }

    /// The sync-up's attendees are now `attendees`: renames apply at once; someone no longer listed leaves
    /// the rotation (staying in the meeting if they had the floor); someone new joins it at their place in the
    /// sync-up's order among those still waiting. Someone who left and comes back (the same id) is back.
    mutating func follow(_ attendees: [Attendee]) {
        // Linear, by dictionaries: a roster of a thousand is edited in a thousand steps, not a million.
        let listed = Dictionary(attendees.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var positions: [Attendee.ID: Int] = [:]
        for index in members.indices {
            positions[members[index].id] = index
            members[index].hasLeft = listed[members[index].id] == nil
            if let current = listed[members[index].id], current != members[index].attendee {
                members[index].attendee = current
            }
        }
        // Someone new goes after whoever comes before them in the sync-up (the furthest of them in the
        // roster), so the waiting keep the sync-up's order; several after the same one, in the sync-up's order.
        var joining: [Int: [Member]] = [:]
        var furthest = -1
        for attendee in attendees {
            if let position = positions[attendee.id] {
                furthest = max(furthest, position)
            } else if positions.updateValue(-2, forKey: attendee.id) == nil {
                joining[furthest, default: []].append(Member(attendee: attendee))
            }
        }
        guard !joining.isEmpty else { return }
        var merged = joining[-1] ?? []
        for index in members.indices { merged += [members[index]] + (joining[index] ?? []) }
        members = merged
    }

    /// Marks `text` (a name or an id) absent for today, or back. Throws, changing nothing, for a stranger,
    /// someone absent (or present) already, someone who already had the floor, or the last one present.
    mutating func mark(_ text: String, absent: Bool) throws(RosterError) -> Attendee {
        let index = try index(named: text)
        let member = members[index]
        let name = "\"\(member.attendee.name)\""
        guard !member.hasLeft else { throw RosterError("\(name) is no longer an attendee of this sync-up") }
        guard member.isAbsent != absent else {
            throw RosterError(absent ? "\(name) is already absent" : "\(name) is not absent")
        }
        if absent {
            guard member.id != speakerID else {
                throw RosterError("\(name) has the floor: session.next gives it to the next one")
            }
            guard !member.hasHadTheFloor else { throw RosterError("\(name) already had the floor in this meeting") }
        }
        members[index].isAbsent = absent
        return member.attendee
    }

    /// The index of the member named `text`: an attendee id (or a prefix of at least 4 characters), or a name
    /// compared as `NameKey` compares (ignoring case, accents and surrounding or repeated spaces).
    func index(named text: String, lookup: Lookup? = nil) throws(RosterError) -> Int {
        if let id = Attendee.ID(uuidString: text),
            let index = lookup.map({ $0.byID[id] }) ?? members.firstIndex(where: { $0.id == id })
        {
            return index
        }
        let key = NameKey.of(text)
        let named = lookup.map { $0.byKey[key] ?? [] } ?? members.indices.filter { members[$0].nameKey == key }
        switch named.count {
        case 1: return named[0]
        case 0:
            // An id prefix (4+ characters) works here as wherever an id does.
            switch lookup?.ids.resolve(text) ?? IDPrefix.resolve(text, in: members.map(\.id.description)) {
            case .found(let index): return index
            case .ambiguous(let indices):
                let ids = indices.map { members[$0].id.description }.joined(separator: ", ")
                throw RosterError("id prefix \"\(text)\" matches \(indices.count) attendees: \(ids)")
            case .notFound, .tooShort: break
            }
            let names = members.filter { !$0.hasLeft }.map { "\"\($0.attendee.name)\"" }.joined(separator: ", ")
            throw RosterError("no attendee \"\(text)\" in this meeting (attendees: \(names))")
        default:
            let ids = named.map { members[$0].id.description }.joined(separator: ", ")
            throw RosterError("\(named.count) attendees are named \"\(text)\": give one of their ids (\(ids))")
        }
    }
}

extension MeetingRoster {
    /// The members' indices by id, name key and id prefix, for many lookups at once (a start with a thousand
    /// absent): valid while the members do not move.
    struct Lookup {
        var byID: [Attendee.ID: Int] = [:]
        var byKey: [String: [Int]] = [:]
        var ids: IDIndex

        init(_ members: [Member]) {
            for (index, member) in members.enumerated() {
                byID[member.id] = byID[member.id] ?? index
                byKey[member.nameKey, default: []].append(index)
            }
            ids = IDIndex(members.map(\.id.description))
        }
    }
}

/// A roster change that cannot be made, with the reason (→ `invalid_argument` on the wire).
public struct RosterError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
