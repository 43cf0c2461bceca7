/// What a client asks for when it creates a sync-up; `validated` turns it into a `SyncUp` the app's way.
public struct SyncUpDraft: Sendable, Equatable {
    public var title: String
    public var durationSeconds: Int?
    public var themeName: String?
    public var attendeeNames: [String]

    public init(title: String, durationSeconds: Int? = nil, themeName: String? = nil, attendeeNames: [String] = []) {
        self.title = title
        self.durationSeconds = durationSeconds
        self.themeName = themeName
        self.attendeeNames = attendeeNames
    }

    /// The sync-up this draft describes, following the app's "Add" button: the title trimmed, attendees with
    /// blank or whitespace-only names dropped, and if none remain, one attendee with a blank name kept so the
    /// sync-up always has somebody to time.
    public func validated(id: SyncUp.ID, uuid: UUIDGenerator) throws(ValidationError) -> SyncUp {
        let title = try SyncUpFields.title(title)
        let duration = try durationSeconds.map { (seconds) throws(ValidationError) in try SyncUpFields.duration(seconds)
        }
        let theme = try themeName.map { (name) throws(ValidationError) in try SyncUpFields.theme(name) }
        let changes = attendeeNames.map { AttendeeChange(id: nil, name: $0) }
        let attendees = try SyncUpFields.attendees(changes, existing: [], uuid: uuid)
        try SyncUpFields.checkShares(duration ?? SyncUp.defaultDuration, attendees: attendees.count)
        return SyncUp(
            id: id,
            attendees: attendees,
            duration: duration ?? SyncUp.defaultDuration,
            theme: theme ?? .bubblegum,
            title: title
        )
    }
}

/// One attendee in an edit: an existing one (by id, renamed or not) or a new one (no id).
public struct AttendeeChange: Sendable, Equatable {
    public var id: Attendee.ID?
    public var name: String

    public init(id: Attendee.ID?, name: String) {
        self.id = id
        self.name = name
    }
}

/// What a client asks to change in a sync-up; fields left nil stay as they are.
public struct SyncUpUpdate: Sendable, Equatable {
    public var title: String?
    public var durationSeconds: Int?
    public var themeName: String?
    /// The complete new attendee list, in order; existing attendees not listed are removed.
    public var attendees: [AttendeeChange]?

    public init(
        title: String? = nil,
        durationSeconds: Int? = nil,
        themeName: String? = nil,
        attendees: [AttendeeChange]? = nil
    ) {
        self.title = title
        self.durationSeconds = durationSeconds
        self.themeName = themeName
        self.attendees = attendees
    }

    public var isEmpty: Bool { title == nil && durationSeconds == nil && themeName == nil && attendees == nil }
}

extension SyncUp {
    /// Applies `update` with the same rules as creating: all fields are checked before any is changed. A new
    /// attendee named as one of `former` (someone removed earlier, `FormerAttendees`) gets their id back.
    public mutating func apply(_ update: SyncUpUpdate, uuid: UUIDGenerator, former: [Attendee] = [])
        throws(ValidationError)
    {
        var copy = self
        if let title = update.title { copy.title = try SyncUpFields.title(title) }
        if let seconds = update.durationSeconds { copy.duration = try SyncUpFields.duration(seconds) }
        if let name = update.themeName { copy.theme = try SyncUpFields.theme(name) }
        if let changes = update.attendees {
            copy.attendees = try SyncUpFields.attendees(
                changes, existing: attendees, uuid: uuid, refusesBlanks: true, former: former)
        }
        // Checked only when it could change: one loaded from the file as it is can still be renamed.
        if update.durationSeconds != nil || update.attendees != nil {
            try SyncUpFields.checkShares(copy.duration, attendees: copy.attendees.count)
        }
        self = copy
    }
}

// MARK: - Field rules

/// The checks shared by create and edit.
enum SyncUpFields {
    /// Control characters (NUL, escape, bell…) would end up in terminals, bars and exported files; tabs and
    /// line breaks are allowed (output for one line folds them).
    static func checkPrintable(_ text: String, field: String) throws(ValidationError) {
        guard
            let bad = text.unicodeScalars.first(where: {
                ($0.value < 0x20 && !["\t", "\n", "\r"].contains($0)) || (0x7F...0x9F).contains($0.value)
            })
        else { return }
        let code = String(bad.value, radix: 16, uppercase: true)
        throw ValidationError(
            field: field,
            message: "contains the control character U+\(String(repeating: "0", count: 4 - code.count))\(code)")
    }

    static func title(_ raw: String) throws(ValidationError) -> String {
        try checkPrintable(raw, field: "title")
        let title = raw.trimmingWhitespace()
        // A blank title cannot be shown, named on a command line or told apart from another.
        guard !title.isEmpty else {
            throw ValidationError(field: "title", message: "is blank; give the sync-up a title")
        }
        guard title.count <= SyncUpLimits.maxTitleLength else {
            throw ValidationError(field: "title", message: "longer than \(SyncUpLimits.maxTitleLength) characters")
        }
        guard title.utf8.count <= SyncUpLimits.maxTitleBytes else {
            throw ValidationError(field: "title", message: "longer than \(SyncUpLimits.maxTitleBytes) bytes of UTF-8")
        }
        return title
    }

    static func duration(_ seconds: Int) throws(ValidationError) -> Duration {
        guard SyncUpLimits.durationSeconds.contains(seconds) else {
            throw ValidationError(
                field: "duration",
                message: "must be from 1 second to 24 hours (1 to 86400 seconds), got \(seconds)"
            )
        }
        return .seconds(seconds)
    }

    /// Each attendee gets `duration / attendees` whole seconds (the session's timer ticks in seconds): a
    /// share under one second would be 0, and the floor would never pass. The app divides exactly and would
    /// give fractions; this refuses instead, saying how long it must be.
    static func checkShares(_ duration: Duration, attendees: Int) throws(ValidationError) {
        let seconds = Int(duration.components.seconds)
        guard seconds < attendees else { return }
        throw ValidationError(
            field: "duration",
            message:
                "\(seconds) second\(seconds == 1 ? "" : "s") cannot give each of \(attendees) attendees a whole second; make it at least \(attendees) seconds"
        )
    }

    static func theme(_ name: String) throws(ValidationError) -> Theme {
        guard let theme = Theme(named: name) else {
            let names = Theme.allCases.map(\.rawValue)
            throw ValidationError(
                field: "theme",
                message:
                    "unknown theme \"\(name)\"\(Suggestion.phrase(for: name, among: names)); valid themes: \(names.joined(separator: ", "))"
            )
        }
        return theme
    }

    /// The new attendee list: names trimmed, blank ones dropped (by an edit, only those it refuses), existing ids kept (for a name alone too, when
    /// it is the name of someone present whom the list does not name by id), new ids made. If nobody is
    /// left, the first listed attendee stays with a blank name (the app's rule), or a new blank one if the list
    /// was empty. An edit (`refusesBlanks`) refuses a blank name where it would be lost silently: a new
    /// attendee without a name, or someone renamed to nothing (the app's Add form drops blank rows instead).
    static func attendees(
        _ changes: [AttendeeChange],
        existing: [Attendee],
        uuid: UUIDGenerator,
        refusesBlanks: Bool = false,
        former: [Attendee] = []
    ) throws(ValidationError) -> [Attendee] {
        guard changes.count <= SyncUpLimits.maxAttendees else {
            throw ValidationError(field: "attendees", message: "more than \(SyncUpLimits.maxAttendees) attendees")
        }
        var seen = Set<Attendee.ID>()
        var all: [Attendee] = []
        var namesBytes = 0
        // Looked up by dictionary: a list of a thousand is checked in a thousand steps, not a million.
        let existingByID = Dictionary(existing.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let namedByID = Set(changes.compactMap(\.id))
        var presentByKey: [String: [Attendee]] = [:]
        for attendee in existing where !namedByID.contains(attendee.id) {
            presentByKey[NameKey.of(attendee.name), default: []].append(attendee)
        }
        var formerByKey: [String: Attendee] = [:]
        for attendee in former { formerByKey[NameKey.of(attendee.name)] = attendee }
        for (index, change) in changes.enumerated() {
            try checkPrintable(change.name, field: "attendees[\(index)].name")
            let name = change.name.trimmingWhitespace()
            // Someone blank in the file (whitespace too, "   ") listed by id: kept as the file has them, not refused.
            let blankInFile =
                name.isEmpty
                ? change.id.flatMap { existingByID[$0] }.flatMap { Attendee.isBlank($0.name) ? $0 : nil } : nil
            if refusesBlanks, name.isEmpty, blankInFile == nil {
                throw ValidationError(
                    field: "attendees[\(index)].name",
                    message: "is blank; an attendee needs a name (to remove someone, leave them out of the list)")
            }
            guard name.count <= SyncUpLimits.maxNameLength else {
                throw ValidationError(
                    field: "attendees[\(index)].name",
                    message: "longer than \(SyncUpLimits.maxNameLength) characters"
                )
            }
            guard name.utf8.count <= SyncUpLimits.maxNameBytes else {
                throw ValidationError(
                    field: "attendees[\(index)].name",
                    message: "longer than \(SyncUpLimits.maxNameBytes) bytes of UTF-8")
            }
            namesBytes += name.utf8.count
            guard namesBytes <= SyncUpLimits.maxNamesBytes else {
                throw ValidationError(
                    field: "attendees",
                    message: "the names add up to over \(SyncUpLimits.maxNamesBytes) bytes of UTF-8")
            }
            let id: Attendee.ID
            let key = name.isEmpty ? "" : NameKey.of(name)
            if let existingID = change.id {
                guard existingByID[existingID] != nil else {
                    throw ValidationError(
                        field: "attendees[\(index)].id",
                        message: "no attendee \(existingID) in this sync-up"
                    )
                }
                guard seen.insert(existingID).inserted else {
                    throw ValidationError(
                        field: "attendees[\(index)].id", message: "attendee \(existingID) listed twice")
                }
                id = existingID
            } else if !key.isEmpty, let present = presentByKey[key]?.first(where: { !seen.contains($0.id) }) {
                // Someone already here, listed by name alone: the same person, not a new one of the same name.
                seen.insert(present.id)
                id = present.id
            } else if !key.isEmpty, let returning = formerByKey[key], existingByID[returning.id] == nil,
                !namedByID.contains(returning.id), seen.insert(returning.id).inserted
            {
                id = returning.id  // the same person as before their removal
            } else {
                id = Attendee.ID(uuid())
            }
            // An unchanged list changes nothing.
            all.append(blankInFile ?? Attendee(id: id, name: name))
        }
        // An edit keeps who it lists by id, blank as they were (it refuses every other blank above): dropping
        // them removed people without a word (attack 97). Creating drops blank rows, as the app's form does.
        let listed = refusesBlanks ? all : all.filter { !$0.name.isEmpty }
        if !listed.isEmpty { return listed }
        return [all.first ?? Attendee(id: Attendee.ID(uuid()))]
    }
}

extension String {
    /// The string without leading and trailing whitespace (spaces, tabs, newlines and Unicode spaces).
    public func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }) else { return "" }
        let last = lastIndex(where: { !$0.isWhitespace })!
        return String(self[first...last])
    }
}
