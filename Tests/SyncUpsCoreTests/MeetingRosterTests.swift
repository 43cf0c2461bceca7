import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// A meeting's own roster: edits of its sync-up and today's absences, at every phase, through the pure machine.
@Suite struct MeetingRosterTests {
    let now = Date(timeIntervalSince1970: 1_234_567_890)
    let meetingID = Meeting.ID(UUID(counting: 0))

    func start(_ syncUp: SyncUp, absent: [String] = [], transcribes: Bool = false) throws -> SessionMachine {
        let roster = try MeetingRoster(syncUp.attendees, absent: absent)
        var (machine, effects) = SessionMachine.start(
            syncUp: syncUp, meetingID: meetingID, startDate: now, records: transcribes, transcribes: transcribes,
            roster: roster)
        if transcribes {
            effects = machine.handle(.recorderStarted(warnings: []), at: 0)
            effects = machine.handle(.voiceListenerUnavailable("voices off"), at: 0)
            effects = machine.handle(.recognizerStarted(startedAhead: false), at: 0)
        }
        #expect(effects.contains(.armTimer(at: 1_000_000_000)))
        return machine
    }

    func ticks(_ machine: inout SessionMachine, _ count: Int) {
        for _ in 0..<count { _ = machine.handle(.timerTicked) }
    }

    func words(_ text: String, at start: Double) -> RecognizedSpeech {
        RecognizedSpeech(
            isFinal: true, text: text, words: [TranscriptWord(word: text, start: start, end: start + 0.4)])
    }

    // MARK: - The scenarios

    /// Three attendees, 18 s; `next`, `next` (C has the floor), then the sync-up edited to [A]: everyone who
    /// had the floor stays in the meeting with their real times, and no word goes to C after they left.
    @Test func removingAttendeesMidMeetingRewritesNothingThatHappened() throws {
        var machine = try start(.fixture(attendees: 3, seconds: 18), transcribes: true)
        _ = machine.handle(.timerTicked)
        _ = try machine.request(.next, at: 1.5)
        _ = try machine.request(.next, at: 3)
        var edited = machine.syncUp
        edited.attendees = [edited.attendees[0]]
        _ = machine.handle(.syncUpEdited(edited), at: 6.11)
        _ = machine.handle(.speechRecognized(words("after", at: 7)), at: 8)
        let turns = machine.record.turns.map { ($0.speaker.name, $0.start, $0.end) }
        #expect(turns.map(\.0) == ["Blob 1", "Blob 2", "Blob 3"])
        #expect(turns.map(\.1) == [0, 1.5, 3] && turns.map(\.2) == [1.5, 3, 6.11])
        #expect(machine.roster.meetingAttendees.map(\.name) == ["Blob 1", "Blob 2", "Blob 3"])
        #expect(machine.record.segments.last?.speaker == nil, "nobody had the floor after Blob 3 left")
        _ = try machine.request(.end(.save), at: 9)
        _ = machine.handle(.recorderStopped, at: 9)
        _ = machine.handle(.recognizerFinished, at: 9)
        let insights = MeetingInsights(
            timeline: machine.record.timeline(durationSeconds: 18), attendees: machine.roster.meetingAttendees,
            segments: machine.record.segments)
        #expect(insights.attendees.map(\.turns) == [1, 1, 1])
        #expect(insights.attendees.map { ($0.floor * 1000).rounded() / 1000 } == [1.5, 1.5, 3.11])
    }

    /// `edit Design --remove-attendee "Blob Jr"` while Blob Jr speaks, then Blob Jr added back and `next`:
    /// the floor goes on at once, and the elapsed time never goes back.
    @Test func theElapsedTimeNeverGoesBackwards() throws {
        var machine = try start(.fixture(attendees: 3, seconds: 900))  // 300 s each
        var elapsed = [machine.secondsElapsed]
        _ = try machine.request(.next)  // Blob 2 from 300
        ticks(&machine, 11)
        elapsed.append(machine.secondsElapsed)
        let all = machine.syncUp.attendees
        var edited = machine.syncUp
        edited.attendees = [all[0], all[2]]
        _ = machine.handle(.syncUpEdited(edited))
        #expect(machine.speaker == all[2] && machine.record.turns[1].end == 311)
        elapsed.append(machine.secondsElapsed)
        edited.attendees = all
        _ = machine.handle(.syncUpEdited(edited))  // back, with the same id: waiting again? No: had the floor.
        elapsed.append(machine.secondsElapsed)
        _ = try? machine.request(.next)
        elapsed.append(machine.secondsElapsed)
        #expect(elapsed == elapsed.sorted(), "elapsed went \(elapsed)")
        #expect(machine.record.turns.map(\.speaker.name) == ["Blob 1", "Blob 2", "Blob 3"])
    }

    /// A new attendee joins the rotation among those waiting, in the sync-up's order; the shares follow.
    @Test func anAddedAttendeeTakesTheirTurnFromTheNextTurn() throws {
        var machine = try start(.fixture(attendees: 2, seconds: 30))  // 15 s each
        ticks(&machine, 5)
        var edited = machine.syncUp
        edited.attendees.append(Attendee(id: Attendee.ID(UUID(counting: 77)), name: "Zoë"))
        #expect(machine.handle(.syncUpEdited(edited)) == [.publish(.updated), .writeJournal])
        #expect(machine.secondsPerAttendee == 10 && machine.speaker?.name == "Blob 1")
        ticks(&machine, 5)  // 10: Blob 2
        #expect(machine.speaker?.name == "Blob 2")
        ticks(&machine, 10)  // 20: Zoë
        #expect(machine.speaker?.name == "Zoë" && machine.speakerIndex == 2)
    }

    /// A rename shows at once: the speaker, and the saved attendees; the turns say who had the floor then.
    @Test func aRenameShowsAtOnce() throws {
        var machine = try start(.fixture(attendees: 2, seconds: 20))
        var edited = machine.syncUp
        edited.attendees[0].name = "Blob Sr"
        _ = machine.handle(.syncUpEdited(edited))
        #expect(machine.speaker?.name == "Blob Sr")
        #expect(machine.roster.meetingAttendees.map(\.name) == ["Blob Sr", "Blob 2"])
        #expect(machine.record.turns.map(\.speaker.id) == [edited.attendees[0].id])
    }

    /// The app empties a sync-up to one blank attendee; a running meeting refuses an edit that leaves nobody
    /// with a name (it would hand the floor to nobody), and only for its own sync-up.
    @Test func anEditThatLeavesTheMeetingNobodyWithANameIsRefused() throws {
        let machine = try start(.fixture(attendees: 2, seconds: 20))
        var edited = machine.syncUp
        edited.attendees = [Attendee(id: Attendee.ID(UUID(counting: 78)), name: "")]
        #expect(machine.refusal(ofEdit: edited)?.hasPrefix("attendees: the sync-up's meeting is running") == true)
        edited.attendees[0].name = " \t"
        #expect(machine.refusal(ofEdit: edited) != nil, "a blank name is nobody")
        edited.attendees.append(Attendee(id: Attendee.ID(UUID(counting: 79)), name: "Zoë"))
        #expect(machine.refusal(ofEdit: edited) == nil, "someone is left")
        var other = SyncUp.fixture(seed: 2, attendees: 1, seconds: 20)
        other.attendees[0].name = ""
        #expect(machine.refusal(ofEdit: other) == nil, "another sync-up is at rest")
    }

    /// An outside edit of the file can leave the running meeting nobody with a name (the daemon follows the
    /// file): the sync-up's title is still editable then, and so is adding someone (attack 96: refused).
    @Test func afterAnOutsideEditLeftNobodyOnlyAChangeOfTheAttendeesIsJudged() throws {
        var machine = try start(.fixture(attendees: 2, seconds: 20))
        var blank = machine.syncUp
        for index in blank.attendees.indices { blank.attendees[index].name = "" }
        _ = machine.handle(.syncUpEdited(blank))
        var renamed = machine.syncUp
        renamed.title = "Renamed"
        #expect(machine.refusal(ofEdit: renamed) == nil)
        var emptied = machine.syncUp
        emptied.attendees.removeLast()
        #expect(machine.refusal(ofEdit: emptied) != nil, "a change that still leaves nobody")
        var added = machine.syncUp
        added.attendees.append(Attendee(id: Attendee.ID(UUID(counting: 81)), name: "Zed"))
        #expect(machine.refusal(ofEdit: added) == nil)
    }

    // MARK: - Absent today

    @Test func absentAtTheStartAreOutOfTheRotationAndTheSharesAreOverThosePresent() throws {
        var machine = try start(.fixture(attendees: 4, seconds: 40), absent: ["blob 1"])
        #expect(machine.speaker?.name == "Blob 2" && machine.secondsPerAttendee == 13)
        ticks(&machine, 13)
        #expect(machine.speaker?.name == "Blob 3")
        ticks(&machine, 13)
        #expect(machine.speaker?.name == "Blob 4")
        ticks(&machine, 14)
        #expect(machine.isOver)
        #expect(machine.roster.absent.map(\.name) == ["Blob 1"])
        let insights = MeetingInsights(
            timeline: machine.record.timeline(durationSeconds: 40), attendees: machine.roster.meetingAttendees,
            segments: [], absent: machine.roster.absent)
        #expect(insights.attendees.map(\.attendee.name) == ["Blob 2", "Blob 3", "Blob 4", "Blob 1"])
        #expect(insights.attendees.map(\.isAbsent) == [false, false, false, true])
        #expect(insights.attendees.map(\.share) == [13, 13, 14, 0])
        #expect(insights.turnsCutShort == 0, "an absent person's zero is not a turn cut short")
    }

    @Test func markingAbsentAndBackMidMeeting() throws {
        var machine = try start(.fixture(attendees: 4, seconds: 40))  // 10 s each
        ticks(&machine, 5)
        #expect(try machine.request(.markAbsent("Blob 3")) == [.publish(.updated), .writeJournal])
        #expect(machine.secondsPerAttendee == 13 && machine.syncUp.attendees.count == 4)
        ticks(&machine, 8)  // 13
        #expect(machine.speaker?.name == "Blob 2")
        #expect(try machine.request(.markBack("BLOB  3 ")) == [.publish(.updated), .writeJournal])
        #expect(machine.secondsPerAttendee == 10)
        ticks(&machine, 7)  // 20: Blob 3 back in their place
        #expect(machine.speaker?.name == "Blob 3")
    }

    @Test(arguments: [
        (["Nobody"], "no attendee \"Nobody\" in this meeting"),
        (["Blob 1", "Blob 2"], "everyone would be absent"),
        (["Blob 1", "blob 1"], "\"Blob 1\" is already absent"),
    ])
    func refusesAnAbsentListThatCannotBe(absent: [String], message: String) {
        #expect {
            try MeetingRoster(SyncUp.fixture(attendees: 2, seconds: 20).attendees, absent: absent)
        } throws: { error in
            (error as? RosterError)?.reason.hasPrefix(message) == true
        }
    }

    @Test func refusesAbsencesThatCannotBeAndChangesNothing() throws {
        var machine = try start(.fixture(attendees: 3, seconds: 30))
        _ = try machine.request(.next)
        let before = machine
        let cases: [(SessionMachine.Request, String)] = [
            (.markAbsent("Zoë"), "no attendee \"Zoë\" in this meeting"),
            (.markAbsent("Blob 1"), "\"Blob 1\" already had the floor in this meeting"),
            (.markAbsent("Blob 2"), "\"Blob 2\" has the floor: session.next gives it to the next one"),
            (.markBack("Blob 3"), "\"Blob 3\" is not absent"),
        ]
        for (request, message) in cases {
            #expect {
                try machine.request(request)
            } throws: { error in
                let rejection = error as? SessionRejection
                return rejection?.isInvalidArgument == true && rejection?.reason.hasPrefix(message) == true
            }
            #expect(machine == before)
        }
        var twins = machine.syncUp
        twins.attendees[2].name = "Blob 1"
        _ = machine.handle(.syncUpEdited(twins))
        #expect(throws: SessionRejection.self) { try machine.request(.markAbsent("blob 1")) }
    }

    // MARK: - Every change at every phase

    enum Phase: String, CaseIterable { case running, paused, lastSpeaker, saving }
    enum Change: String, CaseIterable { case rename, removeWaiting, removeSpeaker, add, absent, back }

    @Test(arguments: Phase.allCases, Change.allCases)
    func everyRosterChangeAtEveryPhaseKeepsWhatHappened(phase: Phase, change: Change) throws {
        var machine = try start(.fixture(attendees: 4, seconds: 40), absent: ["Blob 4"], transcribes: true)
        ticks(&machine, 3)
        switch phase {
        case .running: break
        case .paused: _ = try machine.request(.pause)
        case .lastSpeaker: for _ in 0..<3 { _ = try machine.request(.next) }
        case .saving: _ = try machine.request(.end(.save))
        }
        if phase == .lastSpeaker { #expect(machine.phase == .ending && machine.pendingEnding == nil) }
        let before = machine
        let elapsed = machine.secondsElapsed
        let all = machine.syncUp.attendees
        var edited = machine.syncUp
        var request: SessionMachine.Request?
        switch change {
        case .rename: edited.attendees[1].name = "Renamed"
        case .removeWaiting: edited.attendees.remove(at: 2)
        case .removeSpeaker: edited.attendees.removeAll { $0.id == machine.speaker?.id }
        case .add: edited.attendees.append(Attendee(id: Attendee.ID(UUID(counting: 99)), name: "New"))
        case .absent: request = .markAbsent("Blob 3")
        case .back: request = .markBack("Blob 4")
        }
        var refused = false
        if let request {
            do { _ = try machine.request(request) } catch { refused = true }
        } else {
            _ = machine.handle(.syncUpEdited(edited))
        }
        // Saving: the meeting is over; nothing changes its people.
        if phase == .saving {
            #expect(machine.roster == before.roster && machine.record == before.record)
            #expect(request == nil || refused)
            return
        }
        if refused { #expect(machine == before) }
        #expect(machine.secondsElapsed >= elapsed)
        // What happened is kept: the turns before stay as they were (only the current one may end).
        let old = before.record.turns
        #expect(Array(machine.record.turns.prefix(old.count - 1)) == Array(old.dropLast()))
        #expect(machine.record.turns[old.count - 1].start == old.last!.start)
        // Everyone who had the floor is in the saved meeting; the speaker is never someone gone or absent
        // (unless their turn ended with them).
        let listed = Set(machine.roster.meetingAttendees.map(\.id))
        #expect(machine.record.turns.allSatisfy { listed.contains($0.speaker.id) })
        if machine.phase != .ending, let speaker = machine.speaker {
            #expect(edited.attendees.contains { $0.id == speaker.id })
            #expect(!machine.roster.absent.contains(speaker))
        }
        // Its last speaker gone, a meeting at its end cannot resume: nobody would hold the floor.
        if machine.phase == .ending && machine.roster.speakerIsGone {
            let waiting = machine
            #expect(throws: SessionRejection.self) { try machine.request(.resume) }
            #expect(machine == waiting)
            return
        }
        // The rest of the meeting runs to its end, the elapsed time only growing.
        if machine.phase != .running { _ = try machine.request(.resume) }
        var last = machine.secondsElapsed
        while !machine.isOver && machine.pendingEnding == nil {
            _ = machine.handle(.timerTicked)
            #expect(machine.secondsElapsed >= last)
            last = machine.secondsElapsed
        }
        #expect(all.count == 4)
    }

    // MARK: - Endings

    /// Ended at 3.835 and saved when the recorder stopped 5 ms later: the last turn ends at the meeting's end,
    /// not at the save (before: 3.84 against an end of 3.835).
    @Test func theLastTurnEndsExactlyWhereTheMeetingEnded() throws {
        var machine = try start(.fixture(attendees: 2, seconds: 60), transcribes: true)
        _ = try machine.request(.next, at: 1.5)
        _ = try machine.request(.end(.save), at: 3.835)
        _ = machine.handle(.recorderStopped, at: 3.84)
        _ = machine.handle(.recognizerFinished, at: 3.84)
        let timeline = machine.record.timeline(durationSeconds: 60)
        #expect(timeline.end == 3.835)
        #expect(timeline.turns.last?.end == 3.835)
    }

    /// A pause that lasts to `session.end` is part of the meeting's time, not the save's wait.
    @Test func aPauseThatLastsToTheEndCountsAsPaused() throws {
        var machine = try start(.fixture(attendees: 2, seconds: 60), transcribes: true)
        _ = try machine.request(.pause, at: 2)
        _ = try machine.request(.end(.save), at: 5)
        _ = machine.handle(.recorderStopped, at: 5.5)
        _ = machine.handle(.recognizerFinished, at: 6)
        let insights = MeetingInsights(
            timeline: machine.record.timeline(durationSeconds: 60), attendees: machine.roster.meetingAttendees,
            segments: [])
        #expect(insights.realSeconds == 5 && insights.pausedSeconds == 3)
        #expect(insights.attendees[0].floor == 2)
    }

    @Test func discardingWorksAtTheLastSpeaker() throws {
        var machine = try start(.fixture(attendees: 2, seconds: 20))
        _ = try machine.request(.next)
        _ = try machine.request(.next)
        #expect(machine.phase == .ending)
        #expect(try machine.request(.end(.discard)) == [.discardMeeting, .finish, .publish(.ended(.discarded))])
    }

    /// What a crash after the last turn leaves in the journal is enough for the insights: the open turn closes
    /// where the meeting was ended.
    @Test(arguments: [false, true])
    func aTimelineEndedButNotSavedClosesItsTurnWhereTheMeetingEnded(byTime: Bool) throws {
        var machine = try start(.fixture(attendees: 2, seconds: 20), transcribes: true)
        if byTime {
            ticks(&machine, 20)
        } else {
            ticks(&machine, 3)
            _ = try machine.request(.next)
            _ = try machine.request(.next)
        }
        let timeline = machine.record.timeline(durationSeconds: 20)
        #expect(timeline.turns.last?.end == nil)
        let json = try #require(MeetingTimeline(json: timeline.json))
        let closed = try #require(json.closed)
        #expect(closed.turns.last?.end == (byTime ? 20 : 10))
        let insights = MeetingInsights(timeline: closed, attendees: machine.roster.meetingAttendees, segments: [])
        #expect(insights.realSeconds == (byTime ? 20 : 10))
        // Mid-turn (not ended): no insights rather than made-up ones.
        var running = try start(.fixture(attendees: 2, seconds: 20))
        ticks(&running, 3)
        #expect(running.record.timeline(durationSeconds: 20).closed == nil)
    }

    // MARK: - One row per person

    /// A month of stand-ups: every day someone is absent, or removed and added back by name (any case or
    /// accents), or renamed. `stats` over them has one row per person, each with their absences.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func aMonthOfEditsAndAbsencesKeepsOneRowPerPerson(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let uuid = UUIDGenerator.incrementing()
        var syncUp = try SyncUpDraft(title: "Équipe", durationSeconds: 40, attendeeNames: ["Zoë", "Ann", "Bob", "Cy"])
            .validated(id: SyncUp.ID(UUID(counting: 9_999)), uuid: uuid)
        var former = FormerAttendees()
        var insights: [MeetingInsights] = []
        var absences: [String: Int] = [:]
        for _ in 0..<30 {
            let index = Int(random.next() % UInt64(syncUp.attendees.count))
            let person = syncUp.attendees[index]
            var absent: [String] = []
            switch random.next() % 3 {
            case 0:
                absent = [NameKey.of(person.name).uppercased()]
                absences[NameKey.of(person.name), default: 0] += 1
            case 1:
                // Removed, then back by the same name spelled another way.
                var update = SyncUpUpdate(
                    attendees: syncUp.attendees.filter { $0 != person }.map {
                        AttendeeChange(id: $0.id, name: $0.name)
                    })
                var edited = syncUp
                try edited.apply(update, uuid: uuid, former: former.of(syncUp.id))
                former.follow(syncUp, to: edited)
                syncUp = edited
                update.attendees?.append(AttendeeChange(id: nil, name: " \(person.name.lowercased()) "))
                try edited.apply(update, uuid: uuid, former: former.of(syncUp.id))
                former.follow(syncUp, to: edited)
                syncUp = edited
                #expect(syncUp.attendees.last?.id == person.id)
            default:
                break
            }
            var machine = try start(syncUp, absent: absent)
            while !machine.isOver { _ = machine.handle(.timerTicked) }
            insights.insert(
                MeetingInsights(
                    timeline: machine.record.timeline(durationSeconds: 40), attendees: machine.roster.meetingAttendees,
                    segments: [], absent: machine.roster.absent), at: 0)
        }
        let stats = AttendeeStats.of(insights)
        #expect(stats.count == 4, "\(stats.map(\.attendee.name))")
        #expect(Set(stats.map { NameKey.of($0.attendee.name) }) == ["zoe", "ann", "bob", "cy"])
        for row in stats {
            let missed = absences[NameKey.of(row.attendee.name), default: 0]
            #expect(row.absences == missed && row.meetings + missed == 30, "\(row)")
        }
    }

    @Test func statsHaveOneRowPerPersonAcrossIdsAndCountAbsences() {
        let old = Attendee(id: Attendee.ID(UUID(counting: 1)), name: "Zoë")
        let returned = Attendee(id: Attendee.ID(UUID(counting: 2)), name: " zoe ")
        let other = Attendee(id: Attendee.ID(UUID(counting: 3)), name: "Ann")
        func row(_ attendee: Attendee, turns: Int, absent: Bool = false) -> MeetingInsights.AttendeeInsights {
            .init(attendee: attendee, share: 10, floor: absent ? 0 : 10, speaking: 0, turns: turns, isAbsent: absent)
        }
        func meeting(_ rows: [MeetingInsights.AttendeeInsights]) -> MeetingInsights {
            MeetingInsights(plannedSeconds: 20, realSeconds: 20, pausedSeconds: 0, turnsCutShort: 0, attendees: rows)
        }
        let stats = AttendeeStats.of([
            meeting([row(returned, turns: 1), row(other, turns: 1)]),
            meeting([row(other, turns: 1), row(returned, turns: 0, absent: true)]),
            meeting([row(old, turns: 1), row(other, turns: 1)]),
        ])
        #expect(stats.map(\.attendee.name) == [" zoe ", "Ann"])
        #expect(stats.map(\.meetings) == [2, 3])
        #expect(stats.map(\.absences) == [1, 0])
        #expect(stats[0].averageFloor == 10)
    }
}
