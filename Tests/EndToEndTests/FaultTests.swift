import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization
import Testing

/// Faults a laptop and a week of uptime bring: SIGKILL mid-work, a full disk, other programs editing the file.
@Suite struct FaultTests {
    static let iterations =
        Int(Subprocess.currentEnvironment()["SYNCUPS_STRESS_ITERATIONS"] ?? "").map { max(10, $0 / 100) } ?? 5

    /// Acknowledged changes with when they were acknowledged, from a writer thread; `signal` hears of each.
    final class Acknowledged: Sendable {
        private let titles = Mutex<[(String, MonotonicInstant)]>([])
        private let stop = Mutex(false)
        private let ended = Mutex(false)
        let signal: ChangeSignal
        init() throws { signal = try ChangeSignal() }
        func add(_ title: String) {
            titles.withLock { $0.append((title, .now())) }
            signal.changed()
        }
        var all: [(String, MonotonicInstant)] { titles.withLock { $0 } }
        var isStopped: Bool { stop.withLock { $0 } }
        func finish() { stop.withLock { $0 = true } }
        /// The writer has stopped (told to, or a request failed).
        var hasWriterEnded: Bool { ended.withLock { $0 } }
        func writerEnded() {
            ended.withLock { $0 = true }
            signal.changed()
        }
        /// How many changes were acknowledged more than `margin` after the first one: those since the first
        /// is older than `margin`.
        func count(laterThanTheFirstBy margin: Duration) -> Int {
            titles.withLock { titles in titles.first.map { first in titles.count { $0.1 - first.1 > margin } } ?? 0 }
        }
    }

    /// A change acknowledged longer than this before a kill must be on disk. It waits at most the store's
    /// one-second throttle window, plus the write in flight when the window ends, plus its own write:
    /// encoding and writing a few MB into the page cache, no fsync (that comes after the file is in place).
    /// Allow 1.5 s for the two writes of a debug build under the suite's load. (With the fsync first, a busy
    /// disk once held every change back for 3.7 s.)
    static let margin = Duration.milliseconds(2_500)

    @Test func losesOnlyWhatTheWriteThrottleHeldBackWhenABusyDaemonIsKilledOverAndOver() throws {
        let directory = TemporaryDirectory("kill")
        var generation = 0
        for iteration in 0..<Self.iterations {
            let daemon = try DaemonProcess(
                arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"], directory: directory)
            let setup = try daemon.client()
            let status = try setup.result("status")
            // Nothing was ever found corrupt: every kill left a file that parses.
            let warnings = status["persistence"]?["warnings"]?.arrayValue ?? []
            #expect(!warnings.contains { $0.stringValue?.contains("does not parse") == true })
            if iteration > 0 {
                #expect(
                    warnings.contains { $0.stringValue?.hasPrefix("recovered a meeting") == true },
                    "the meeting killed mid-way is recovered")
            }
            let syncUp = try setup.result(
                "syncups.create", ["title": .string("meeting \(iteration)"), "duration": 600, "attendees": ["A", "B"]])
            _ = try setup.result("session.start", ["syncup": syncUp["id"]!, "transcribe": false])

            let acknowledged = try Acknowledged()
            let path = daemon.socketPath
            let base = generation
            let writer = try DedicatedThread(name: "busy-writer") {
                defer { acknowledged.writerEnded() }
                guard let client = try? RawClient(path: path) else { return }
                var count = 0
                while !acknowledged.isStopped {
                    let title = "g\(base)-\(count)"
                    guard (try? client.result("syncups.create", ["title": .string(title)])) != nil else { return }
                    acknowledged.add(title)
                    count += 1
                }
            }
            // Kill once the writer has had a random number of changes acknowledged since the first one became
            // older than the margin: some acknowledged changes must then be on disk, and the kill falls at a
            // random point of the throttle's window and of the write in flight.
            let extra = Int.random(in: 1...300)
            let reached = acknowledged.signal.wait(timeout: .seconds(60)) {
                acknowledged.count(laterThanTheFirstBy: Self.margin) >= extra || acknowledged.hasWriterEnded
            }
            let killedAt = MonotonicInstant.now()
            #expect(daemon.stop(signal: SIGKILL) == .signaled(SIGKILL))
            acknowledged.finish()
            writer.join()
            generation += 1
            try #require(
                reached && acknowledged.count(laterThanTheFirstBy: Self.margin) >= extra,
                "the writer never had \(extra) changes acknowledged past the margin (\(acknowledged.all.count) in all) before it stopped or 60 s passed"
            )

            let file = try #require(Files.read(directory.appending("data/sync-ups.json")))
            let titles = Set(try JSONParser().parse(file).arrayValue?.compactMap { $0["title"]?.stringValue } ?? [])
            let old = acknowledged.all.filter { killedAt - $0.1 > Self.margin }
            #expect(!old.isEmpty, "some changes were acknowledged more than \(Self.margin) before the kill")
            if old.contains(where: { !titles.contains($0.0) }) {
                // Lost changes: keep the daemon's own account (its store logs failures) and what is on disk.
                let listing = try? CommandResult.run("/bin/ls", ["-la", "--full-time", directory.appending("data")])
                let log = daemon.log.contents.split(separator: "\n").filter { !$0.contains("debug: ") }
                Issue.record("daemon log:\n\(log.joined(separator: "\n"))\ndata:\n\(listing?.standardOutput ?? "")")
            }
            for (title, at) in old {
                #expect(
                    titles.contains(title), "\(title) was acknowledged \(killedAt - at) before the kill and is lost")
            }
        }
    }

    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs needs root (CI runs as root)"))
    func keepsTheStateAndAudioAsFarAsPossibleWhenTheDiskFills() throws {
        let mount = try SmallDisk(size: "600k")
        defer { mount.unmount() }
        let alsa = try ALSAFixture(microphone: SpeechFixture.pattern(seconds: 60))
        let daemon = try DaemonProcess(
            arguments: ["--data-dir", mount.path, "--audio-device", "virtmic", "--no-cue", "--speech-engine", "none"],
            environment: alsa.environment
        )
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create", ["title": "Before the disk filled", "duration": 600, "attendees": ["A"]])
        #expect(
            try waitFor {
                Files.readString(mount.appending("sync-ups.json"))?.contains("Before the disk filled") == true
            })
        let before = try #require(Files.read(mount.appending("sync-ups.json")))
        _ = try client.result("subscribe", ["topics": ["session", "daemon"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": created["id"]!, "transcribe": false])
        let meetingID = try #require(started["meeting"]?.stringValue)
        // 600 KiB hold about 18 s of audio; fill most of it now.
        Files.write(mount.appending("filler"), [UInt8](repeating: 1, count: 480 * 1024))
        let audioError = try client.nextEvent("session.error", timeout: .seconds(20))
        #expect(
            audioError["data"]?["message"]?.stringValue?.hasSuffix("No space left on device; recording goes on") == true
        )
        // A change now cannot be written either; the file on disk keeps its last good content.
        _ = try client.result("syncups.update", ["id": created["id"]!, "title": "During"])
        let failed = try client.nextEvent("persistence.failed")
        #expect(failed["data"]?["error"]?.stringValue?.contains("No space left on device") == true)
        #expect(Files.read(mount.appending("sync-ups.json")) == before)
        let failing = try client.result("status")["persistence"]
        #expect(failing?["lastError"] != .null && failing?["unsavedChanges"] == true && failing?["synced"] == false)
        // Space comes back: everything catches up.
        unlink(mount.appending("filler"))
        _ = try client.nextEvent("persistence.recovered", timeout: .seconds(20))
        #expect(Files.readString(mount.appending("sync-ups.json"))?.contains("During") == true)
        let recovered = try client.result("status")["persistence"]
        #expect(recovered?["lastError"] == .null && recovered?["synced"] == true)
        _ = try client.result("session.end", ["action": "save"])
        let ended = try client.nextEvent("session.ended")
        #expect(ended["data"]?["outcome"] == "saved")
        let meeting = try client.result("meetings.get", ["syncup": created["id"]!, "meeting": .string(meetingID)])
        // The audio missed while the disk was full is silence now: audio time is still meeting time.
        let seconds = try #require(meeting["audio"]?["seconds"]?.numberValue?.double)
        let elapsed = try #require(ended["data"]?["session"]?["secondsElapsed"]?.numberValue?.double)
        #expect(abs(seconds - elapsed) < 1.5)
    }

    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs needs root (CI runs as root)"))
    func keepsTheJournalOfAMeetingSavedWhileTheDiskIsFullUntilTheMeetingIsWritten() throws {
        let mount = try SmallDisk(size: "400k")
        defer { mount.unmount() }
        let arguments = ["--data-dir", mount.path, "--audio-device", "null", "--no-cue", "--speech-engine", "none"]
        let first = try DaemonProcess(arguments: arguments)
        let client = try first.client()
        let created = try client.result("syncups.create", ["title": "Full", "duration": 600, "attendees": ["A"]])
        let id = try #require(created["id"])
        #expect(try waitFor { Files.readString(mount.appending("sync-ups.json"))?.contains("Full") == true })
        _ = try client.result("subscribe", ["topics": ["session", "daemon"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": id, "transcribe": false])
        let meetingID = try #require(started["meeting"]?.stringValue)
        let journal = mount.appending("meetings/\(meetingID).recording.json")
        #expect(Files.exists(journal))
        // Fill every byte left, then save: the meeting is in memory, but cannot reach sync-ups.json.
        let filler = open(mount.appending("filler"), O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 1, count: 4096)
        while write(filler, block, block.count) > 0 {}
        close(filler)
        _ = try client.result("session.end", ["action": "save"])
        // Both come, in either order: the write fails on the store's thread while the session ends.
        var events: [String: JSONValue] = [:]
        while events["session.ended"] == nil || events["persistence.failed"] == nil {
            let event = try client.readJSON(timeout: .seconds(15))
            if let name = event["event"]?.stringValue { events[name] = event }
        }
        #expect(events["session.ended"]?["data"]?["outcome"] == "saved")
        // The journal is all that holds the meeting on disk now: it stays.
        #expect(Files.exists(journal))
        #expect(first.stop(signal: SIGKILL) == .signaled(SIGKILL))

        // With space again, the next start recovers the meeting from the journal.
        unlink(mount.appending("filler"))
        let second = try DaemonProcess(arguments: arguments)
        let again = try second.client()
        let meeting = try again.result("meetings.get", ["syncup": id, "meeting": .string(meetingID)])
        #expect(meeting["interrupted"] == true)
        #expect(
            try waitFor {
                !Files.exists(journal)
                    && Files.readString(mount.appending("sync-ups.json"))?.contains(meetingID) == true
            })
    }

    @Test func neverLosesNorSilentlyOverwritesOutsideEditsMadeWhileClientsWrite() throws {
        let daemon = try DaemonProcess(arguments: ["--speech-engine", "none"])
        let client = try daemon.client()
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["syncups", "daemon"], "snapshot": false])
        let file = daemon.dataPath + "/sync-ups.json"
        for round in 0..<5 {
            // Clients write...
            for index in 0..<20 { _ = try client.result("syncups.create", ["title": .string("r\(round)-\(index)")]) }
            // ...an editor saves a valid file in the middle of it: it becomes the state.
            let edited =
                #"[{"attendees":[],"duration":[0,60000000000000000000],"id":"0000000\#(round)-0000-0000-0000-000000000000","meetings":[],"theme":"sky","title":"edited \#(round)"}]"#
                .replacingSixtySeconds
            Files.replace(file, with: edited)
            var reloaded: JSONValue?
            while reloaded == nil {
                let event = try watcher.readJSON()
                if event["event"] == "syncups.reloaded" { reloaded = event }
            }
            #expect(reloaded?["data"]?["syncups"]?[0]?["title"]?.stringValue == "edited \(round)")
            #expect(try client.result("syncups.list")["total"] == 1)
            // ...and one that does not parse is kept aside, byte for byte, and the state rewritten.
            Files.replace(file, with: "{ broken \(round)")
            let warning = try watcher.nextEvent("daemon.warning")
            let message = warning["data"]?["message"]?.stringValue ?? ""
            let movedTo = try #require(
                message.split(separator: " ").first { $0.contains(".corrupt-") }.map { String($0.dropLast()) })
            #expect(Files.readString(movedTo) == "{ broken \(round)")
            #expect(try waitFor { Files.readString(file)?.contains("edited \(round)") == true })
        }
    }

    /// A backup put back, as `git checkout` or a sync tool does: the daemon reloads it, and the sync-up added
    /// since never comes back, neither in the list nor in the file.
    @Test func reloadsARestoredEarlierFileAndNeverWritesOverIt() throws {
        let daemon = try DaemonProcess(arguments: ["--speech-engine", "none"])
        let client = try daemon.client()
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["syncups"], "snapshot": false])
        let file = daemon.dataPath + "/sync-ups.json"
        _ = try client.result("syncups.create", ["title": "One"])
        #expect(try waitFor { Files.readString(file)?.contains("One") == true })
        let backup = try #require(Files.readString(file))
        _ = try client.result("syncups.create", ["title": "Two"])
        #expect(try waitFor { Files.readString(file)?.contains("Two") == true })
        Files.replace(file, with: backup)
        var reloaded: JSONValue?
        while reloaded == nil {
            let event = try watcher.readJSON()
            if event["event"] == "syncups.reloaded" { reloaded = event }
        }
        #expect(reloaded?["data"]?["total"] == 1)
        #expect(try client.result("syncups.list")["syncups"]?[0]?["title"] == "One")
        #expect(try client.result("syncups.list")["total"] == 1)
        _ = try client.result("syncups.create", ["title": "Three"])
        #expect(try waitFor { Files.readString(file)?.contains("Three") == true })
        #expect(Files.readString(file)?.contains("Two") == false)
    }

    /// A sync-up copied by hand inside sync-ups.json, meetings and all: both hold the same meeting ids, so the
    /// same files. The daemon says so at start and on a reload, and deleting one copy, or its meeting, keeps
    /// the files the other still holds; they go with the last sync-up that holds the meeting.
    @Test func keepsTheFilesOfAMeetingThatASyncUpCopiedByHandStillHolds() throws {
        let directory = TemporaryDirectory("copied")
        let original = SyncUp.realistic(index: 0, meetingCount: 2, transcriptBytes: 16)
        var copy = SyncUp.realistic(index: 1, meetingCount: 0, transcriptBytes: 16)
        copy.meetings = [original.meetings[1]]
        let data = directory.dataDirectory(holding: [original, copy])
        let (own, shared) = (original.meetings[0].id, original.meetings[1].id)
        func files(of meeting: Meeting.ID) -> [String] {
            Files.list(data + "/meetings").filter { $0.hasPrefix(meeting.description) }.sorted()
        }
        for meeting in [own, shared] {
            for suffix in ["wav", "json"] { Files.write(data + "/meetings/\(meeting).\(suffix)", "recorded") }
        }
        let daemon = try DaemonProcess(arguments: ["--speech-engine", "none"], directory: directory)
        let client = try daemon.client()
        let warnings = try client.result("status")["persistence"]?["warnings"]?.arrayValue ?? []
        #expect(
            warnings.contains {
                $0.stringValue?.hasPrefix("1 meeting is in more than one sync-up (copied by hand?): \(shared)") == true
            }, "\(warnings)")

        _ = try client.result("syncups.delete", ["id": .string(original.id.description)])
        #expect(files(of: own).isEmpty)
        #expect(files(of: shared) == ["\(shared).json", "\(shared).wav"], "the copy still holds the meeting")
        _ = try client.result(
            "meetings.delete", ["syncup": .string(copy.id.description), "meeting": .string("\(shared)")])
        #expect(files(of: shared).isEmpty, "no sync-up holds it any more")

        // The same copy made while the daemon runs: a warning with the reload.
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["daemon"], "snapshot": false])
        Files.replace(
            daemon.dataPath + "/sync-ups.json",
            with: String(decoding: SyncUpsFile.encode([original, copy]), as: UTF8.self))
        let warning = try watcher.nextEvent("daemon.warning")["data"]?["message"]?.stringValue ?? ""
        #expect(warning.hasPrefix("1 meeting is in more than one sync-up"), "\(warning)")
        #expect(warning.contains("\"Team 0\", \"Team 1\""), "\(warning)")
    }

    /// The disk is full when a meeting is saved: its details (attendees, segments) stay in memory and in
    /// the journal, the write is retried and reported, and the meeting is complete once space returns, also
    /// after a restart; a daemon killed while the disk is full completes it at the next start.
    @Test(
        .enabled(if: geteuid() == 0, "mounting a small tmpfs needs root (CI runs as root)"), arguments: [false, true])
    func aMeetingSavedOnAFullDiskIsCompleteOnceSpaceReturns(killedWhileFull: Bool) throws {
        let mount = try SmallDisk(size: "400k")
        defer { mount.unmount() }
        let arguments = ["--data-dir", mount.path, "--audio-device", "null", "--no-cue", "--speech-engine", "none"]
        let first = try DaemonProcess(arguments: arguments)
        let client = try first.client()
        let created = try client.result(
            "syncups.create", ["title": "Full", "duration": 600, "attendees": ["Ann", "Bo"]])
        let id = try #require(created["id"])
        #expect(try waitFor { Files.readString(mount.appending("sync-ups.json"))?.contains("Full") == true })
        _ = try client.result("subscribe", ["topics": ["session", "daemon"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": id, "audio": false])
        let meetingID = try #require(started["meeting"]?.stringValue)
        let filler = open(mount.appending("filler"), O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 1, count: 4096)
        while write(filler, block, block.count) > 0 {}
        close(filler)
        _ = try client.result("session.end", ["action": "save"])
        var failures: [String] = []
        while !failures.contains(where: { $0.contains("details") }) {
            let event = try client.nextEvent("persistence.failed", timeout: .seconds(15))
            failures.append(event["data"]?["error"]?.stringValue ?? "")
        }
        let ids: JSONValue = ["syncup": id, "meeting": .string(meetingID)]
        func attendees(_ client: RawClient) throws -> [String] {
            try client.result("meetings.get", ids)["attendees"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
                ?? []
        }
        #expect(try attendees(client) == ["Ann", "Bo"], "kept in memory while the disk is full")
        #expect(try client.result("status")["persistence"]?["lastError"] != .null)
        let journal = mount.appending("meetings/\(meetingID).recording.json")
        #expect(Files.exists(journal))

        if killedWhileFull {
            #expect(first.stop(signal: SIGKILL) == .signaled(SIGKILL))
            unlink(mount.appending("filler"))
        } else {
            unlink(mount.appending("filler"))
            // The retries get through once there is space: the details file, then the journal goes.
            #expect(
                try waitFor { Files.exists(mount.appending("meetings/\(meetingID).json")) && !Files.exists(journal) })
            // The files go on the writers' threads before the loop hears of it: `status` follows within a turn.
            #expect(try waitFor { try client.result("status")["persistence"]?["lastError"] == .null })
            #expect(first.stop() == .exited(0))
        }
        let second = try DaemonProcess(arguments: arguments)
        #expect(try attendees(try second.client()) == ["Ann", "Bo"])
        #expect(try waitFor { Files.exists(mount.appending("meetings/\(meetingID).json")) && !Files.exists(journal) })
        #expect(second.stop() == .exited(0))
        let third = try DaemonProcess(arguments: arguments)
        #expect(try attendees(try third.client()) == ["Ann", "Bo"])
        #expect(try third.client().result("syncups.get", ["id": id])["meetingsTotal"] == 1)
    }

    /// A stale copy of sync-ups.json synced back by another program, without the sync-up being recorded:
    /// the recording goes on and is saved, the sync-up restored with it; its audio is never deleted.
    @Test func anOutsideEditThatDropsTheRecordedSyncUpNeverLosesTheMeeting() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"])
        let client = try daemon.client()
        let created = try client.result("syncups.create", ["title": "Recorded", "attendees": ["Ann", "Bo"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.result("subscribe", ["topics": ["syncups", "session", "daemon"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
        let meetingID = try #require(started["meeting"]?.stringValue)
        let audio = daemon.dataPath + "/meetings/\(meetingID).wav"
        #expect(try waitFor { Files.exists(audio) })

        let stale =
            #"[{"attendees":[],"duration":[0,60000000000000000000],"id":"00000001-0000-0000-0000-000000000000","meetings":[],"theme":"sky","title":"Other"}]"#
            .replacingSixtySeconds
        Files.replace(daemon.dataPath + "/sync-ups.json", with: stale)
        let warning = try client.nextEvent("daemon.warning")
        #expect(warning["data"]?["message"]?.stringValue?.contains("the meeting goes on") == true)
        #expect(try client.result("session.get")["state"] == "running")
        #expect(Files.exists(audio))
        _ = try client.nextEvent("session.tick")

        _ = try client.result("session.end", ["action": "save"])
        let ended = try client.nextEvent("session.ended")
        #expect(ended["data"]?["outcome"] == "saved")
        let restored = try client.result("syncups.get", ["id": .string(id)])
        #expect(restored["title"] == "Recorded")
        #expect(restored["meetings"]?[0]?["id"]?.stringValue == meetingID)
        #expect(try client.result("syncups.list")["total"] == 2)
        #expect(Files.exists(audio))
        let meeting = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meetingID)])
        #expect(meeting["audio"] != .null)
        #expect(meeting["attendees"]?.arrayValue?.count == 2)
        // And it is on disk: a restart finds both.
        #expect(daemon.stop() == .exited(0))
        let again = try DaemonProcess(directory: daemon.directory)
        #expect(try again.client().result("syncups.get", ["id": .string(id)])["meetingsTotal"] == 1)
    }

    @Test func keepsIdsAndNamesInsideTheDataDirectory() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"])
        let client = try daemon.client()
        let hostile = "../../../../tmp/escaped"
        let created = try client.result("syncups.create", ["title": .string(hostile), "attendees": [.string(hostile)]])
        _ = try client.result("session.start", ["syncup": created["id"]!, "transcribe": false])
        _ = try client.result("session.end", ["action": "save"])
        #expect(try client.request("syncups.get", ["id": .string(hostile)])["error"]?["code"] == "not_found")
        #expect(
            try client.request("meetings.get", ["syncup": created["id"]!, "meeting": "../../x"])["error"]?["code"]
                == "not_found")
        #expect(!Files.exists("/tmp/escaped"))
        // The details are written off the loop after the end's reply: their temporary file (`.<id>.json.tmp-…`)
        // is there until its rename (once in a CI run on a loaded machine).
        let meetings = daemon.dataPath + "/meetings"
        #expect(try waitFor { !Files.list(meetings).contains { $0.hasPrefix(".") } }, "\(Files.list(meetings))")
        for name in Files.list(meetings) {
            #expect(
                name.count == 36 + 4 || name.count == 36 + 5 || name.hasSuffix(".recording.json"),
                "unexpected file \(name)")
        }
    }

    @Test func refusesASymlinkPlantedAtTheSocket() throws {
        let directory = TemporaryDirectory("symlink")
        let target = directory.appending("elsewhere")
        symlink(target, directory.appending("syncupsd.sock"))
        let daemon = try DaemonProcess(directory: directory, waitForReady: false)
        #expect(daemon.waitForExit() == .exited(1))
        #expect(daemon.log.contents.contains("is a symbolic link; refusing to follow or replace it"))
        #expect(!Files.exists(target))
    }
}
