import FoundationEssentials
import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization
import Testing

@testable import SyncUpsDaemon

/// The whole daemon (server, command handler, session controller, machine) on a loop whose clock the test
/// moves: a meeting's seconds, the stall and the partial-line limits pass in microseconds, each timer at its
/// own deadline, and nothing happens while time stands still.
@Suite struct VirtualTimeTests {
    static let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)

    static func daemon(_ directory: TemporaryDirectory) throws -> InProcessDaemon {
        try daemon(path: directory.path)
    }

    static func daemon(path: String) throws -> InProcessDaemon {
        try InProcessDaemon(dataDirectory: path, clock: .manual(startingAt: start))
    }

    /// `daemon(_:)` logging to `log`.
    static func daemon(_ directory: TemporaryDirectory, log: LogLines) throws -> InProcessDaemon {
        try InProcessDaemon(dataDirectory: directory.path, logger: log.logger, clock: .manual(startingAt: start))
    }

    /// A minute-long sync-up of one attendee, the client that created it, and a second client following `topic`.
    static func soloSyncUp(_ daemon: InProcessDaemon, watching topic: String) throws -> (LoopClient, LoopClient, String)
    {
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result("syncups.create", ["title": "Solo", "duration": 60, "attendees": ["Ann"]])
        let id = try #require(created["id"]?.stringValue)
        let watcher = LoopClient(try daemon.connect(), daemon)
        _ = try watcher.result("subscribe", ["topics": [.string(topic)], "snapshot": false])
        return (client, watcher, id)
    }

    /// `soloSyncUp` with its meeting started (no audio): the client, the watcher, the sync-up's and the meeting's ids.
    static func startedMeeting(_ daemon: InProcessDaemon, watching topic: String) throws
        -> (LoopClient, LoopClient, String, String)
    {
        let (client, watcher, id) = try Self.soloSyncUp(daemon, watching: topic)
        let started = try client.result("session.start", ["syncup": .string(id), "audio": false])
        return (client, watcher, id, try #require(started["meeting"]?.stringValue))
    }

    /// A meeting of `syncUp` started by `client` (no audio), 2 s long and saved, returned once its details
    /// are on disk and reported (its journal gone): from then on they are read from the file.
    static func savedMeeting(of syncUp: String, by client: LoopClient, in directory: TemporaryDirectory) throws
        -> String
    {
        let started = try client.result("session.start", ["syncup": .string(syncUp), "audio": false])
        let meeting = try #require(started["meeting"]?.stringValue)
        client.daemon.advanceTime(by: .seconds(2))
        _ = try client.result("session.end", ["action": "save"])
        let journal = directory.path + "/meetings/" + meeting + ".recording.json"
        _ = try client.waitForStatus { _ in !Files.exists(journal) }
        return meeting
    }

    /// A meeting of `soloSyncUp`'s saved with its details' path blocked by a directory (the write fails, for
    /// root too), once the first failure is published: the client, the daemon's watcher, the ids.
    static func meetingWhoseDetailsFail(_ daemon: InProcessDaemon, in directory: TemporaryDirectory) throws
        -> (LoopClient, LoopClient, String, String)
    {
        let (client, watcher, id, meeting) = try Self.startedMeeting(daemon, watching: "daemon")
        // A directory where the details file goes: its write fails, for root too.
        #expect(mkdir(directory.path + "/meetings/" + meeting + ".json", 0o700) == 0)
        #expect(mkdir(directory.path + "/meetings/" + meeting + ".json/in-the-way", 0o700) == 0)
        _ = try client.result("session.end", ["action": "save"])
        _ = try watcher.events(until: "persistence.failed")
        return (client, watcher, id, meeting)
    }

    /// Moves time on by the longest back-off (30 s), so the next retry of `meeting`'s failing details write
    /// runs, and turns the loop until `log` shows its failure: the tries logged, once it has (deadline 20 s).
    /// The retry after it is armed only once this one has failed.
    static func retryFailingDetails(of meeting: String, _ daemon: InProcessDaemon, log: LogLines) -> Int {
        func tries() -> Int { log.count(containing: "cannot write the meeting's details", meeting) }
        let before = tries()
        daemon.advanceTime(by: .seconds(30))
        let deadline = MonotonicInstant.now() + .seconds(20)
        while tries() == before, MonotonicInstant.now() < deadline { daemon.turn(waitingUpTo: 10) }
        return tries()
    }

    /// The app's own `timer` test through the whole daemon: 3 attendees, 6 seconds, speakers 0, 1, 1, 2, 2,
    /// then saved because time is up, with each turn exactly its share.
    @Test func runsTheAppsSixSecondMeetingInVirtualTime() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result(
            "syncups.create", ["title": "Design", "duration": 6, "attendees": ["Blob", "Blob Jr", "Blob Sr"]])
        let id = try #require(created["id"]?.stringValue)
        let watcher = LoopClient(try daemon.connect(), daemon)
        _ = try watcher.result("subscribe", ["topics": ["session"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": .string(id), "audio": false])
        #expect(started["secondsElapsed"] == 0)

        // Time stands still: however often the loop turns, no tick.
        for _ in 0..<50 { daemon.turn() }
        watcher.drainSocket()
        #expect(!watcher.hasLine { $0["event"] == "session.tick" })

        var ticks: [(speaker: Int64?, elapsed: Int64?)] = []
        for second in 1...6 {
            daemon.advanceTime(by: .seconds(1))
            let tick = try watcher.events(until: "session.tick").last?["data"]?["session"]
            ticks.append((tick?["speakerIndex"]?.numberValue?.int64, tick?["secondsElapsed"]?.numberValue?.int64))
            #expect(ticks.last?.elapsed == Int64(second))
        }
        #expect(ticks.map(\.speaker) == [0, 1, 1, 2, 2, 2])
        let ended = try watcher.events(until: "session.ended").last?["data"]
        #expect(ended?["outcome"] == "saved")
        #expect(ended?["reason"] == "time is up")
        let meeting = try #require(ended?["meeting"]?["id"]?.stringValue)

        let got = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meeting)])
        let rows = try #require(got["insights"]?["attendees"]?.arrayValue)
        // Virtual time is exact: each turn is its share to the nanosecond, however busy the machine.
        #expect(rows.map { $0["floor"] } == [2, 2, 2])
        #expect(got["insights"]?["realSeconds"] == 6)
        #expect(got["insights"]?["pausedSeconds"] == 0)
    }

    /// A running meeting refuses an edit that leaves it nobody with a name (`invalid_argument`, nothing
    /// changed, the meeting's speaker kept); at rest, the same edit leaves the app's one blank attendee.
    @Test func anEditLeavingTheRunningMeetingNobodyIsRefusedAndChangesNothing() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let (client, watcher, id, _) = try Self.startedMeeting(daemon, watching: "syncups")
        try client.send(
            JSONWriter().string([
                "id": "r", "cmd": "syncups.update", "args": ["id": .string(id), "attendees": .array([])],
            ]) + "\n")
        let refused = try client.reply(to: "r")
        #expect(refused["error"]?["code"] == "invalid_argument")
        #expect(
            refused["error"]?["message"]?.stringValue?.hasPrefix(
                "attendees: the sync-up's meeting is running and this leaves it nobody with a name") == true)
        #expect(try client.result("syncups.get", ["id": .string(id)])["attendees"]?[0]?["name"] == "Ann")
        #expect(try client.result("session.get")["speaker"]?["name"] == "Ann")

        _ = try client.result("session.end", ["action": "discard"])
        let emptied = try client.result("syncups.update", ["id": .string(id), "attendees": .array([])])
        #expect(emptied["attendees"]?.arrayValue?.map { $0["name"] } == [""])
        // The refusal published nothing: the only change its watcher sees is the one made at rest.
        let updates = try watcher.events(until: "syncup.updated").filter { $0["event"] == "syncup.updated" }
        #expect(updates.count == 1)
    }

    /// A wake-up 12 s late (the daemon stopped, or starved; here the virtual clock moves on unseen) catches
    /// up tick by tick: each tick says its own second and speaker, and each floor change is said once, with
    /// the speaker it went to. Before, every caught-up event carried the state after the last tick: twelve
    /// ticks of second 15 and three `session.speaker` events all naming the fourth speaker.
    @Test func aLateWakeUpPublishesEachCaughtUpTickWithItsOwnState() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result(
            "syncups.create", ["title": "Four", "duration": 20, "attendees": ["A", "B", "C", "D"]])
        let id = try #require(created["id"]?.stringValue)
        let watcher = LoopClient(try daemon.connect(), daemon)
        _ = try watcher.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        daemon.advanceTime(by: .seconds(3))
        _ = try watcher.take { $0["event"] == "session.tick" && $0["data"]?["session"]?["secondsElapsed"] == 3 }
        daemon.wakeLate(after: .seconds(12))
        // Up to the last floor change (after the tick of second 15), or the first with the old code's state.
        let events = try watcher.take {
            $0["event"] == "session.speaker" && $0["data"]?["session"]?["speakerIndex"] == 3
        }.filter { $0["event"] != nil }
        let ticks = events.filter { $0["event"] == "session.tick" }.compactMap {
            $0["data"]?["session"]?["secondsElapsed"]?.numberValue?.int64
        }
        let speakers = events.filter { $0["event"] == "session.speaker" }.compactMap {
            $0["data"]?["session"]?["speakerIndex"]?.numberValue?.int64
        }
        #expect(ticks == Array(4...15), "\(ticks)")
        #expect(speakers == [1, 2, 3], "\(speakers)")
    }

    #if DEBUG
        /// A meeting from start to its saved details, every read of it and its deletion, with no blocking work
        /// on the loop's thread (`BlockingWork`): `meetings.get` asked the moment the meeting is saved, while
        /// its details may still be being written, asked the disk for the audio's length on the loop before,
        /// and a delete listed `meetings/` and unlinked its files there.
        @Test func aMeetingAndEveryReadOfItDoNoBlockingWorkOnTheLoop() throws {
            let directory = TemporaryDirectory("virtual")
            let daemon = try Self.daemon(directory)
            let client = LoopClient(try daemon.connect(), daemon)
            let before = BlockingWork.callsOnLoopOnThisThread
            let created = try client.result("syncups.create", ["title": "Solo", "duration": 2, "attendees": ["Ann"]])
            let id = try #require(created["id"]?.stringValue)
            let watcher = LoopClient(try daemon.connect(), daemon)
            _ = try watcher.result("subscribe", ["topics": ["session"], "snapshot": false])
            _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
            daemon.advanceTime(by: .seconds(2))
            let ended = try watcher.events(until: "session.ended").last?["data"]
            let meeting = try #require(ended?["meeting"]?["id"]?.stringValue)
            let got = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meeting)])
            #expect(got["id"] == .string(meeting))
            _ = try client.result("syncups.get", ["id": .string(id)])
            _ = try client.result("status")
            // Its details written and reported: its journal goes only after that (a meeting deleted before
            // has its details file removed when they are reported, by the session's clean-up, a case of its own).
            let meetings = directory.path + "/meetings"
            let deadline = MonotonicInstant.now() + .seconds(10)
            while access(meetings + "/" + meeting + ".recording.json", F_OK) == 0 && MonotonicInstant.now() < deadline {
                daemon.turn(waitingUpTo: 10)
            }
            #expect(access(meetings + "/" + meeting + ".json", F_OK) == 0)
            // A delete's files are removed off the loop, and gone by the time its reply arrives.
            _ = try client.result("meetings.delete", ["syncup": .string(id), "meeting": .string(meeting)])
            #expect(try !DirectoryListing.names(in: meetings).contains { $0.hasPrefix(meeting) })
            #expect(BlockingWork.callsOnLoopOnThisThread == before)
        }

        /// A discarded meeting's files (its journal, written at the start) are removed off the loop, on the
        /// journal writer's thread: the loop listed `meetings/` for their temporary files in `.discardMeeting`
        /// before.
        @Test func aDiscardedMeetingDoesNoBlockingWorkOnTheLoop() throws {
            let directory = TemporaryDirectory("virtual")
            let daemon = try Self.daemon(directory)
            let (client, watcher, id) = try Self.soloSyncUp(daemon, watching: "session")
            _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
            let meetings = directory.path + "/meetings"
            let deadline = MonotonicInstant.now() + .seconds(10)
            while (try? DirectoryListing.names(in: meetings))?.isEmpty ?? true, MonotonicInstant.now() < deadline {
                daemon.turn(waitingUpTo: 10)
            }
            #expect(try !DirectoryListing.names(in: meetings).isEmpty, "the journal is written at the start")
            let before = BlockingWork.callsOnLoopOnThisThread
            _ = try client.result("session.end", ["action": "discard"])
            let ended = try watcher.events(until: "session.ended").last?["data"]
            #expect(ended?["outcome"] == "discarded")
            while try !DirectoryListing.names(in: meetings).isEmpty, MonotonicInstant.now() < deadline {
                daemon.turn(waitingUpTo: 10)
            }
            #expect(try DirectoryListing.names(in: meetings) == [])
            #expect(BlockingWork.callsOnLoopOnThisThread == before)
        }

        /// A meeting with audio (ALSA's real `null` device) started, recorded and saved, with no blocking work
        /// on the loop: the capture device was opened there, inside `session.start`, before.
        @Test func aMeetingWithAudioStartedRecordedAndEndedDoesNoBlockingWorkOnTheLoop() throws {
            let directory = TemporaryDirectory("virtual")
            let daemon = try Self.daemon(directory)
            let (client, watcher, id) = try Self.soloSyncUp(daemon, watching: "session")
            let before = BlockingWork.callsOnLoopOnThisThread
            let started = try client.result(
                "session.start", ["syncup": .string(id), "audio": true, "transcribe": false])
            #expect(started["audio"]?["recording"] == true)
            #expect(started["warnings"] == [])
            daemon.advanceTime(by: .seconds(1))
            _ = try client.result("session.end", ["action": "save"])
            let ended = try watcher.events(until: "session.ended").last?["data"]
            #expect(ended?["outcome"] == "saved")
            let meeting = try #require(ended?["meeting"]?["id"]?.stringValue)
            let meetings = directory.path + "/meetings/"
            let deadline = MonotonicInstant.now() + .seconds(10)
            while access(meetings + meeting + ".recording.json", F_OK) == 0 && MonotonicInstant.now() < deadline {
                daemon.turn(waitingUpTo: 10)
            }
            #expect(access(meetings + meeting + ".wav", F_OK) == 0)
            #expect(access(meetings + meeting + ".json", F_OK) == 0)
            #expect(BlockingWork.callsOnLoopOnThisThread == before)
        }

        /// A meeting deleted while its details are being written (the clean-up worker held until the delete
        /// is answered): the details file written after the delete is removed by the clean-up worker, as a
        /// discard's files are; the loop listed `meetings/` and unlinked it before.
        @Test func aMeetingDeletedWhileItsDetailsAreWrittenHasThemRemovedOffTheLoop() throws {
            let directory = TemporaryDirectory("virtual")
            let daemon = try Self.daemon(directory)
            let (client, watcher, id, meeting) = try Self.startedMeeting(daemon, watching: "session")
            let before = BlockingWork.callsOnLoopOnThisThread
            let gate = try Gate()
            gate.close()
            daemon.session.cleanup.run { gate.pass() }
            _ = try client.result("session.end", ["action": "save"])
            _ = try watcher.events(until: "session.ended")
            _ = try client.result("meetings.delete", ["syncup": .string(id), "meeting": .string(meeting)])
            // The details written (the job after the write has run: the write's report is in the mailbox).
            let written = try BlockingQueue<Bool>(capacity: 1)
            daemon.session.cleanup.run { written.push(true) }
            gate.open()
            #expect(written.pop() == true)
            #expect(access(directory.path + "/meetings/" + meeting + ".json", F_OK) == 0)
            let meetings = directory.path + "/meetings"
            let deadline = MonotonicInstant.now() + .seconds(10)
            while (try? DirectoryListing.names(in: meetings))?.contains(where: { $0.hasPrefix(meeting) }) == true,
                MonotonicInstant.now() < deadline
            {
                daemon.turn(waitingUpTo: 10)
            }
            #expect(try !DirectoryListing.names(in: meetings).contains { $0.hasPrefix(meeting) })
            #expect(BlockingWork.callsOnLoopOnThisThread == before)
        }
    #endif

    /// Where a test's manual clock starts against CLOCK_MONOTONIC.
    enum ClockStart: String, CaseIterable, CustomTestStringConvertible {
        /// An hour ahead: as `start` (1000 s) is on a machine booted less than 17 minutes ago.
        case anHourAhead
        /// At boot (CLOCK_MONOTONIC's 0): as `start` is on a machine up for hours.
        case atBoot

        var instant: MonotonicInstant {
            switch self {
            case .anHourAhead: .now() + .seconds(3600)
            case .atBoot: MonotonicInstant(nanoseconds: 0)
            }
        }
        var testDescription: String { rawValue }
    }

    /// A capture device runs in real time whatever the loop's clock says: its frame 0 is the meeting's start as
    /// CLOCK_MONOTONIC sees it. It was the loop's instant: on a manual clock ahead of CLOCK_MONOTONIC the capture
    /// waited for the real clock to get there and recorded nothing (every test of a meeting with audio or a
    /// transcript failed on a machine up less than 17 minutes); on one behind it, it read ALSA's `null` as fast
    /// as it gives (about a gigabyte a second) until its file held the hours since.
    @Test(arguments: ClockStart.allCases)
    func theCaptureRecordsInRealTimeWhateverTheLoopsClock(_ clock: ClockStart) throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try InProcessDaemon(dataDirectory: directory.path, clock: .manual(startingAt: clock.instant))
        let (client, _, id) = try Self.soloSyncUp(daemon, watching: "session")
        let asked = MonotonicInstant.now()
        let started = try client.result("session.start", ["syncup": .string(id), "audio": true, "transcribe": false])
        #expect(started["audio"]?["recording"] == true)
        var recorded = 0.0
        let deadline = asked + .seconds(15)
        while recorded < 1, MonotonicInstant.now() < deadline {
            daemon.turn(waitingUpTo: 10)
            recorded = try client.result("session.get")["audio"]?["seconds"]?.numberValue?.double ?? 0
            // The file's length is rounded to 0.1 s; what the device gave may be a period ahead of the clock.
            let passed = (MonotonicInstant.now() - asked).seconds
            guard recorded <= passed + 0.5 else {
                Issue.record("\(recorded) s recorded in \(passed) s")
                break
            }
        }
        #expect(recorded >= 1, "the capture recorded \(recorded) s in 15 s")
        _ = try client.result("session.end", ["action": "discard"])
    }

    /// A meeting whose details cannot be written, then deleted: `status` stops reporting the error, and the
    /// `persistence.recovered` event says so too (the deletion cleared the error silently before, so a client
    /// that followed `persistence.failed` kept showing it).
    @Test func deletingAMeetingWhoseDetailsFailedToWritePublishesTheRecovery() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let (client, watcher, id, meeting) = try Self.meetingWhoseDetailsFail(daemon, in: directory)
        #expect(try client.result("status")["persistence"]?["lastError"] != .null)
        // The obstruction goes (the details' retry is not due in virtual time): else the deletion could not
        // remove the meeting's files either, a failure of its own that `status` would name.
        let details = directory.path + "/meetings/" + meeting + ".json"
        #expect(rmdir(details + "/in-the-way") == 0 && rmdir(details) == 0)
        _ = try client.result("meetings.delete", ["syncup": .string(id), "meeting": .string(meeting)])
        #expect(try client.result("status")["persistence"]?["lastError"] == .null)
        let recovered = try watcher.take(timeout: .seconds(5)) { $0["event"] == "persistence.recovered" }
        #expect(recovered.last?["event"] == "persistence.recovered")
    }

    /// A deleted meeting's details are no longer retried, and neither is their timer left waiting: `status`'s
    /// `timers` is 0 again at once (it stayed 1 until the stale retry fired, up to 30 s later).
    @Test func deletingAMeetingWhoseDetailsFailedLeavesNoRetryTimer() throws {
        let directory = TemporaryDirectory("virtual")
        let log = LogLines()
        let daemon = try Self.daemon(directory, log: log)
        let (client, _, id, meeting) = try Self.meetingWhoseDetailsFail(daemon, in: directory)
        #expect(try client.result("status")["timers"] != 0)
        // Three failures: the next retry is 2 s away.
        for attempt in 2...3 { #expect(Self.retryFailingDetails(of: meeting, daemon, log: log) == attempt) }
        // The obstruction goes, else the deletion's own removal of the files would fail and be retried.
        let details = directory.path + "/meetings/" + meeting + ".json"
        #expect(rmdir(details + "/in-the-way") == 0 && rmdir(details) == 0)
        _ = try client.result("meetings.delete", ["syncup": .string(id), "meeting": .string(meeting)])
        // The deletion's own write of sync-ups.json, on its thread.
        let deadline = MonotonicInstant.now() + .seconds(10)
        while try client.result("status")["persistence"]?["unsavedChanges"] != false
            && MonotonicInstant.now() < deadline
        {
            daemon.advanceTime(by: .milliseconds(100))
            daemon.turn(waitingUpTo: 10)
        }
        let status = try client.result("status")
        #expect(
            status["timers"] == 0,
            "timers from \(daemon.timerOrigins): \(status)\nlog:\n\(log.all.joined(separator: "\n"))")
    }

    /// A request line completed while the daemon was stopped (SIGSTOP, a stalled loop) longer than the
    /// partial-line limit is answered: the timer firing late reads what arrived meanwhile before it judges
    /// the line. Before, it fired first and cut off the client with `request_timeout`.
    @Test func aLineCompletedWhileTheDaemonWasStoppedIsAnswered() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let client = LoopClient(try daemon.connect(), daemon)
        try client.send(#"{"id":"half","cmd":"pi"#)
        daemon.advanceTime(by: .seconds(1))
        try client.send(#"ng"}"# + "\n")  // sent while the daemon does not run
        daemon.wakeLate(after: .seconds(12))
        let reply = try client.take(timeout: .seconds(5)) { $0["id"] == "half" }.last
        #expect(reply?["ok"] == true, "\(reply ?? .null)")
    }

    /// A pause holds the timer for exactly as long as virtual time says, and the seconds after it count on.
    @Test func aPauseHoldsTheTimerForAsLongAsItLasts() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result("syncups.create", ["title": "Solo", "duration": 4, "attendees": ["Ann"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        daemon.advanceTime(by: .milliseconds(1500))
        _ = try client.result("session.pause")
        daemon.advanceTime(by: .seconds(30))
        #expect(try client.result("session.get")["secondsElapsed"] == 1)
        _ = try client.result("session.resume")
        // The second that was half run when the pause came ends half a second after the resume.
        daemon.advanceTime(by: .milliseconds(499))
        #expect(try client.result("session.get")["secondsElapsed"] == 1)
        daemon.advanceTime(by: .milliseconds(1))
        #expect(try client.result("session.get")["secondsElapsed"] == 2)
    }

    /// A request line left incomplete is answered `request_timeout` and closed at the limit, not before;
    /// another client's complete lines are answered meanwhile.
    @Test func closesAConnectionWhoseRequestLineStaysIncompleteAtTheLimit() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let stalled = LoopClient(try daemon.connect(), daemon)
        let patient = LoopClient(try daemon.connect(), daemon)
        try stalled.send(#"{"cmd":"pi"#)
        daemon.turn()
        daemon.advanceTime(by: .milliseconds(9_999))
        // A line completed in time is answered as usual, however it was split.
        try patient.send(#"{"id":"split","cmd":"#)
        daemon.advanceTime(by: .zero)
        try patient.send(#""ping"}"# + "\n")
        #expect(try patient.reply(to: "split")["result"] == "pong")
        stalled.drainSocket()
        #expect(!stalled.hasLine { _ in true })
        daemon.advanceTime(by: .milliseconds(1))
        let reply = try stalled.take { $0["error"] != nil }.last
        #expect(reply?["error"]?["code"] == "request_timeout")
        #expect(reply?["id"] == .null)
        #expect(try patient.result("ping") == "pong")
    }

    /// A subscriber whose socket is full and who reads nothing is cut off once it has read nothing for the
    /// stall limit, counted from its last progress; the producer goes on.
    @Test func cutsOffASubscriberThatReadsNothingForTheStallLimit() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let (sleeper, producer) = try Self.sleepingSubscriber(of: daemon)
        daemon.advanceTime(by: .milliseconds(9_990))
        #expect(try producer.result("status")["subscribers"] == 1)
        daemon.advanceTime(by: .milliseconds(10))
        #expect(try producer.result("status")["subscribers"] == 0)
        withExtendedLifetime(sleeper) {}  // its socket stayed open
    }

    /// A subscriber that reads nothing (a stopped `syncupsctl watch`) while 4000 changes are made is cut off
    /// once 1 MiB of its output waits, and said so; the producer gets every reply and a watcher reading along
    /// every event, in order. Time stands still, so the stall limit cannot cut it off first: in real time
    /// (`SubscriptionTests`, before) a loaded machine took over its 10 s to make the 1 MiB, and the stopped
    /// client was cut off as one that read nothing.
    @Test func aSubscriberThatReadsNothingIsCutOffAtTheOutputLimitWhileEveryoneElseIsServed() throws {
        let directory = TemporaryDirectory("virtual")
        let lines = Mutex<[String]>([])
        let logger = Logger(minimumLevel: .info) { _, message, _ in lines.withLock { $0.append(message) } }
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, logger: logger, clock: .manual(startingAt: Self.start))
        let stopped = LoopClient(try daemon.connect(sendBufferBytes: 4096), daemon)
        var size: CInt = 4096
        setsockopt(stopped.fd.rawValue, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        _ = try stopped.result("subscribe", ["topics": ["syncups"], "snapshot": false])
        let watcher = LoopClient(try daemon.connect(), daemon)
        _ = try watcher.result("subscribe", ["topics": ["syncups"], "snapshot": false])
        let producer = LoopClient(try daemon.connect(), daemon)
        let created = try producer.result("syncups.create", ["title": "x", "attendees": ["Blob", "Blob Jr"]])
        _ = try watcher.events(until: "syncup.created")
        let id = try #require(created["id"])
        #expect(try producer.result("status")["subscribers"] == 2)

        // Each event is about 450 bytes: 4000 of them overflow the stopped client's 1 MiB.
        var lastSeq: Int64 = 0
        for chunk in 0..<20 {
            var batch = ""
            for index in (chunk * 200)..<(chunk * 200 + 200) {
                let title = JSONValue.string("title \(index) " + String(repeating: "x", count: 200))
                batch +=
                    JSONWriter().string([
                        "id": .int(index), "cmd": "syncups.update", "args": ["id": id, "title": title],
                    ]) + "\n"
            }
            try producer.send(batch)
            for index in (chunk * 200)..<(chunk * 200 + 200) {
                let reply = try producer.take { $0["id"] == .int(index) }.last
                #expect(reply?["ok"] == true)
            }
            for _ in 0..<200 {
                let event = try #require(try watcher.take { $0["event"] == "syncup.updated" }.last)
                let seq = try #require(event["seq"]?.numberValue?.int64)
                #expect(seq == lastSeq + 1 || lastSeq == 0)
                lastSeq = seq
            }
        }
        #expect(try producer.result("status")["subscribers"] == 1)
        let cutOff = lines.withLock { $0.filter { $0.contains("over the 1048576-byte limit") } }
        #expect(cutOff.count == 1 && cutOff[0].contains("it has"), "\(cutOff)")
        withExtendedLifetime(stopped) {}  // its socket stayed open
    }

    /// The stall limit counts from the subscriber's last read: one that read at 5 s is not cut off at the
    /// first deadline (its timer fires then, finds the deadline moved, and is armed again) but at 15 s.
    @Test func aSubscriberThatReadSomeIsCutOffAStallAfterItsLastRead() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let (sleeper, producer) = try Self.sleepingSubscriber(of: daemon)
        daemon.advanceTime(by: .seconds(5))
        sleeper.drainSocket()
        daemon.advanceTime(by: .zero)  // the socket takes more of what waits
        #expect(sleeper.hasLine { $0["event"] == "syncup.updated" })
        daemon.advanceTime(by: .seconds(5))
        #expect(try producer.result("status")["subscribers"] == 1)
        daemon.advanceTime(by: .milliseconds(4_990))
        #expect(try producer.result("status")["subscribers"] == 1)
        daemon.advanceTime(by: .milliseconds(10))
        #expect(try producer.result("status")["subscribers"] == 0)
    }

    /// A subscriber that read everything while the daemon was stopped past the stall's deadline (SIGSTOP, a
    /// stalled loop) is sent the rest, not cut off: the timer firing late sends first. Before, it closed the
    /// connection as "it read nothing for 10 seconds" (the attack's B4: 3 of 3 runs).
    @Test func aSubscriberThatReadEverythingWhileTheDaemonWasStoppedIsNotCutOff() throws {
        let directory = TemporaryDirectory("virtual")
        let daemon = try Self.daemon(directory)
        let (sleeper, producer) = try Self.sleepingSubscriber(of: daemon)
        daemon.advanceTime(by: .seconds(1))
        sleeper.drainSocket()  // while the daemon does not run
        daemon.wakeLate(after: .seconds(12))
        #expect(try producer.result("status")["subscribers"] == 1)
        #expect(sleeper.hasLine { $0["event"] == "syncup.updated" })
    }

    /// A subscriber with small socket buffers, and a producer whose 100 changes fill them with events the
    /// subscriber does not read: its output waits from now on.
    static func sleepingSubscriber(of daemon: InProcessDaemon) throws -> (sleeper: LoopClient, producer: LoopClient) {
        let sleeper = LoopClient(try daemon.connect(sendBufferBytes: 4096), daemon)
        var size: CInt = 4096
        setsockopt(sleeper.fd.rawValue, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        _ = try sleeper.result("subscribe", ["topics": ["syncups"], "snapshot": false])
        let producer = LoopClient(try daemon.connect(), daemon)
        let created = try producer.result("syncups.create", ["title": "y"])
        let id = try #require(created["id"])
        for index in 0..<100 {
            _ = try producer.result(
                "syncups.update", ["id": id, "title": .string("\(index) " + String(repeating: "y", count: 250))])
        }
        #expect(try producer.result("status")["subscribers"] == 1)
        return (sleeper, producer)
    }

    /// A stand-up's reminder shows at its lead on the wall clock (a minute before a 09:01 start), not a second
    /// before and not after; the wall clock moves with the loop's virtual time, and the scheduler's wall-clock
    /// timer is one of the loop's. (`ScheduleCommandTests` shows the reminder on a real session bus.)
    @Test func aReminderShowsAtItsLeadOnTheWallClockNotASecondBefore() throws {
        let directory = TemporaryDirectory("reminder")
        // Monday 3 May 2027, 08:59:30 UTC: the reminder of a 09:01 start with a minute's lead is 30 s away.
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, wallClock: .fixed(Date(timeIntervalSince1970: 1_809_334_770)),
            clock: .manual(startingAt: Self.start))
        let (client, watcher, id) = try Self.soloSyncUp(daemon, watching: "daemon")
        let set = try client.result(
            "schedule.set", ["syncup": .string(id), "schedule": "daily 09:01", "timeZone": "UTC", "reminder": 1])
        #expect(set["inSeconds"] == 90)

        daemon.advanceTime(by: .seconds(29))
        watcher.drainSocket()
        #expect(!watcher.hasLine { $0["event"] == "schedule.reminder" }, "a second before its time")
        daemon.advanceTime(by: .seconds(1))
        watcher.drainSocket()
        let reminder = try #require(try watcher.events(until: "schedule.reminder").last?["data"])
        #expect(reminder["startSeconds"] == 1_809_334_860)
        #expect(reminder["late"] == false)
        #expect(reminder["title"] == "Solo")
        // Once: the next is tomorrow's.
        daemon.advanceTime(by: .seconds(3600))
        watcher.drainSocket()
        #expect(!watcher.hasLine { $0["event"] == "schedule.reminder" })
        // 10:00:00 now: tomorrow's 09:01 is 23 h 1 min away.
        #expect(try client.result("status")["next"]?["inSeconds"] == 82_860)
    }
}
