import Foundation
import SyncUpsCore
import Testing

@Suite struct SyncUpValidationTests {
    let id = SyncUp.ID(UUID(counting: 0xDEAD))

    /// Found by an attack: a title of one character (an "e" and 300,000 combining accents) and 1000 names of
    /// 128 emoji were within the limits in characters, and made a sync-up no reply could hold.
    @Test func refusesTitlesAndNamesTooLargeInBytesThoughShortInCharacters() throws {
        let title = "e" + String(repeating: "\u{301}", count: 300_000)
        #expect(title.count == 1)
        #expect(throws: ValidationError.self) { try SyncUpDraft(title: title).validated(id: id, uuid: .incrementing()) }
        let name = String(repeating: "👍🏽", count: 100)  // 100 characters, 800 bytes
        #expect(name.count == 100)
        #expect(throws: ValidationError.self) {
            try SyncUpDraft(title: "x", attendeeNames: [name]).validated(id: id, uuid: .incrementing())
        }
        let names = (0..<1000).map { "Attendee \($0) " + String(repeating: "x", count: 100) }
        #expect(throws: ValidationError.self) {
            try SyncUpDraft(title: "x", durationSeconds: 3600, attendeeNames: names).validated(
                id: id, uuid: .incrementing())
        }
        let fits = try SyncUpDraft(title: "x", durationSeconds: 3600, attendeeNames: Array(names.prefix(500)))
            .validated(id: id, uuid: .incrementing())
        #expect(fits.attendees.count == 500)
    }

    @Test func createsWithTheAppsDefaults() throws {
        let syncUp = try SyncUpDraft(title: "Engineering").validated(id: id, uuid: .incrementing())
        #expect(syncUp.duration == .seconds(300))
        #expect(syncUp.theme == .bubblegum)
        #expect(syncUp.meetings.isEmpty)
        #expect(syncUp.attendees == [Attendee(id: Attendee.ID(UUID(counting: 0)), name: "")])
    }

    /// The app's `addAndConfirmValidatesAttendees`: blank and whitespace-only attendees are dropped, and if that
    /// leaves nobody the first attendee stays.
    @Test func dropsBlankAttendeesButKeepsOne() throws {
        let syncUp = try SyncUpDraft(title: "Design", attendeeNames: ["", "    "]).validated(
            id: id, uuid: .incrementing())
        #expect(syncUp.attendees == [Attendee(id: Attendee.ID(UUID(counting: 0)), name: "")])
        #expect(syncUp.title == "Design")
    }

    @Test func keepsNamedAttendeesInOrderAndTrimsThem() throws {
        let draft = SyncUpDraft(title: "  Design \n", attendeeNames: [" Blob ", "\t", "Blob Jr"])
        let syncUp = try draft.validated(id: id, uuid: .incrementing())
        #expect(syncUp.title == "Design")
        #expect(syncUp.attendees.map(\.name) == ["Blob", "Blob Jr"])
        #expect(syncUp.attendees.map(\.id.rawValue) == [UUID(counting: 0), UUID(counting: 2)])
    }

    @Test(arguments: [0, -5, 86_401])
    func rejectsDurationsOutsideOneSecondToADay(seconds: Int) {
        #expect(throws: ValidationError.self) {
            try SyncUpDraft(title: "x", durationSeconds: seconds).validated(id: id, uuid: .incrementing())
        }
    }

    @Test(arguments: [1, 90, 86_400])
    func acceptsDurationsFromOneSecondToADay(seconds: Int) throws {
        let syncUp = try SyncUpDraft(title: "x", durationSeconds: seconds).validated(id: id, uuid: .incrementing())
        #expect(syncUp.duration == .seconds(seconds))
    }

    @Test func rejectsUnknownThemesListingTheValidOnes() {
        #expect(
            throws: ValidationError(
                field: "theme",
                message:
                    "unknown theme \"mauve\"; valid themes: bubblegum, buttercup, indigo, lavender, magenta, navy, "
                    + "orange, oxblood, periwinkle, poppy, purple, seafoam, sky, tan, teal, yellow"
            )
        ) {
            try SyncUpDraft(title: "x", themeName: "mauve").validated(id: id, uuid: .incrementing())
        }
    }

    @Test func rejectsOverlongTitlesAndNames() {
        #expect(throws: ValidationError.self) {
            try SyncUpDraft(title: String(repeating: "x", count: 257)).validated(id: id, uuid: .incrementing())
        }
        #expect(throws: ValidationError.self) {
            try SyncUpDraft(title: "x", attendeeNames: [String(repeating: "y", count: 129)])
                .validated(id: id, uuid: .incrementing())
        }
    }

    // MARK: - Editing

    func blobs() throws -> SyncUp {
        try SyncUpDraft(title: "Design", attendeeNames: ["Blob", "Blob Jr", "Blob Sr"]).validated(
            id: id, uuid: .incrementing())
    }

    @Test func editsOnlyTheGivenFields() throws {
        var syncUp = try blobs()
        let before = syncUp
        try syncUp.apply(SyncUpUpdate(title: "Blob's Meeting", themeName: "lavender"), uuid: .incrementing())
        #expect(syncUp.title == "Blob's Meeting")
        #expect(syncUp.theme == .lavender)
        #expect(syncUp.attendees == before.attendees)
        #expect(syncUp.duration == before.duration)
    }

    @Test func keepsRenamesAndRemovesAttendeesByID() throws {
        var syncUp = try blobs()
        let (blob, blobSr) = (syncUp.attendees[0], syncUp.attendees[2])
        let uuid = UUIDGenerator { UUID(counting: 99) }
        try syncUp.apply(
            SyncUpUpdate(attendees: [
                AttendeeChange(id: blobSr.id, name: "Blob Senior"), AttendeeChange(id: nil, name: "Blob Esq"),
                AttendeeChange(id: blob.id, name: "Blob"),
            ]),
            uuid: uuid
        )
        #expect(syncUp.attendees.map(\.name) == ["Blob Senior", "Blob Esq", "Blob"])
        #expect(syncUp.attendees.map(\.id) == [blobSr.id, Attendee.ID(UUID(counting: 99)), blob.id])
    }

    /// A blank title, a new attendee without a name and a rename to nothing are refused, not lost silently.
    @Test func refusesBlankTitlesAndBlankNamesInAnEdit() throws {
        #expect(throws: ValidationError.self) { try SyncUpDraft(title: " \n").validated(id: id, uuid: .incrementing()) }
        var syncUp = try blobs()
        let before = syncUp
        #expect(throws: ValidationError.self) { try syncUp.apply(SyncUpUpdate(title: ""), uuid: .incrementing()) }
        let added =
            syncUp.attendees.map { AttendeeChange(id: $0.id, name: $0.name) } + [AttendeeChange(id: nil, name: " ")]
        #expect(throws: ValidationError.self) {
            try syncUp.apply(SyncUpUpdate(attendees: added), uuid: .incrementing())
        }
        let renamed = syncUp.attendees.map { AttendeeChange(id: $0.id, name: "") }
        #expect(throws: ValidationError.self) {
            try syncUp.apply(SyncUpUpdate(attendees: renamed), uuid: .incrementing())
        }
        #expect(syncUp == before)
    }

    /// Attendees blank in the file (an outside edit), listed by id in an edit, are kept as they are: the edit
    /// renaming one of them dropped the others without a word (attack 97), and re-sending the list unchanged
    /// changed it.
    @Test func keepsBlankAttendeesAnEditListsByID() throws {
        var syncUp = try blobs()
        // Blank in the file is whitespace too (attack 98: "   " could never be listed).
        syncUp.attendees = syncUp.attendees.enumerated().map { Attendee(id: $1.id, name: $0 == 1 ? "   " : "") }
        let ids = syncUp.attendees.map(\.id)
        let unchanged = syncUp
        try syncUp.apply(
            SyncUpUpdate(attendees: ids.map { AttendeeChange(id: $0, name: "") }), uuid: .incrementing())
        #expect(syncUp == unchanged)
        try syncUp.apply(
            SyncUpUpdate(attendees: ids.enumerated().map { AttendeeChange(id: $1, name: $0 == 0 ? "Ann" : " ") }),
            uuid: .incrementing())
        #expect(syncUp.attendees.map(\.id) == ids)
        #expect(syncUp.attendees.map(\.name) == ["Ann", "   ", ""])
    }

    /// Shown the same everywhere (the CLI, the bars, the desktop): blank is whitespace too (attack 98: `show`
    /// printed a row of spaces where it printed `(no name)` for an empty one).
    @Test func showsABlankNameAsNoName() {
        #expect(["", "   ", "\t"].map(Attendee.shown) == ["(no name)", "(no name)", "(no name)"])
        #expect(Attendee.shown("Ann") == "Ann")
    }

    @Test func neverLeavesASyncUpWithoutAttendees() throws {
        var syncUp = try blobs()
        try syncUp.apply(SyncUpUpdate(attendees: []), uuid: UUIDGenerator { UUID(counting: 7) })
        #expect(syncUp.attendees == [Attendee(id: Attendee.ID(UUID(counting: 7)), name: "")])
    }

    @Test func rejectsUnknownAndRepeatedAttendeeIDs() throws {
        var syncUp = try blobs()
        let before = syncUp
        #expect(throws: ValidationError.self) {
            try syncUp.apply(
                SyncUpUpdate(attendees: [AttendeeChange(id: Attendee.ID(UUID(counting: 42)), name: "X")]), uuid: .random
            )
        }
        let first = syncUp.attendees[0].id
        #expect(throws: ValidationError.self) {
            try syncUp.apply(
                SyncUpUpdate(attendees: [AttendeeChange(id: first, name: "A"), AttendeeChange(id: first, name: "B")]),
                uuid: .random
            )
        }
        #expect(syncUp == before)
    }

    @Test func changesNothingWhenAnyFieldIsInvalid() throws {
        var syncUp = try blobs()
        let before = syncUp
        #expect(throws: ValidationError.self) {
            try syncUp.apply(SyncUpUpdate(title: "New", durationSeconds: 0), uuid: .random)
        }
        #expect(syncUp == before)
    }

    @Test func splitsTheDurationEvenlyInWholeSeconds() {
        let attendees = (0..<7).map { Attendee(id: Attendee.ID(UUID(counting: $0))) }
        #expect(SyncUp(id: id, attendees: attendees, duration: .seconds(300)).secondsPerAttendee == 42)
        #expect(SyncUp(id: id, attendees: [], duration: .seconds(300)).secondsPerAttendee == 0)
    }

    /// A share under a second would be 0 whole seconds: the floor would never pass. Refused, with the numbers.
    @Test func refusesADurationShorterThanOneSecondForEachAttendee() throws {
        #expect(
            throws: ValidationError(
                field: "duration",
                message: "2 seconds cannot give each of 3 attendees a whole second; make it at least 3 seconds")
        ) {
            try SyncUpDraft(title: "x", durationSeconds: 2, attendeeNames: ["A", "B", "C"]).validated(
                id: id, uuid: .incrementing())
        }
        #expect(
            try SyncUpDraft(title: "x", durationSeconds: 3, attendeeNames: ["A", "B", "C"]).validated(
                id: id, uuid: .incrementing()
            ).secondsPerAttendee == 1)
        var syncUp = try SyncUpDraft(title: "x", durationSeconds: 2, attendeeNames: ["A", "B"]).validated(
            id: id, uuid: .incrementing())
        let before = syncUp
        #expect(throws: ValidationError.self) {
            try syncUp.apply(
                SyncUpUpdate(attendees: (0..<3).map { AttendeeChange(id: nil, name: "N\($0)") }), uuid: .random)
        }
        #expect(throws: ValidationError.self) { try syncUp.apply(SyncUpUpdate(durationSeconds: 1), uuid: .random) }
        #expect(syncUp == before)
    }

    /// One loaded from the file as it is (the app allows it) can still be renamed.
    @Test func editsOtherFieldsOfASyncUpWhoseSharesAreAlreadyUnderASecond() throws {
        let attendees = (0..<3).map { Attendee(id: Attendee.ID(UUID(counting: $0))) }
        var syncUp = SyncUp(id: id, attendees: attendees, duration: .seconds(2))
        try syncUp.apply(SyncUpUpdate(title: "Renamed"), uuid: .random)
        #expect(syncUp.title == "Renamed")
    }
}
