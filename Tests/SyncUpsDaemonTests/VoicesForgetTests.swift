import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import SyncUpsVoice
import Synchronization
import Testing

@testable import SyncUpsDaemon

/// `voices.forget`: an attendee named like every other id argument, and a profile said to be forgotten is gone.
@Suite struct VoicesForgetTests {
    let directory = TemporaryDirectory("voices-forget")

    func request(_ daemon: InProcessDaemon, _ line: String) throws -> JSONValue {
        let reply = Array(line.utf8).withUnsafeBytes { daemon.handle($0) }
        return try JSONParser().parse(Array(reply.dropLast()))
    }

    /// A daemon with one sync-up of Solo and Ben, each with a learned profile on disk.
    func daemon() throws -> (InProcessDaemon, solo: String, ben: String) {
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        let created = try request(
            daemon, #"{"id":1,"cmd":"syncups.create","args":{"title":"Voices","attendees":["Solo","Ben"]}}"#)
        let ids = try #require(created["result"]?["attendees"]?.arrayValue).compactMap { $0["id"]?.stringValue }
        try #require(ids.count == 2)
        mkdir(directory.appending("voices"), 0o755)
        for id in ids { Files.write(path(id), VoiceProfileValidationFile.sane) }
        return (daemon, ids[0], ids[1])
    }

    func path(_ id: String) -> String { directory.appending("voices/\(id).json") }

    /// A profile of someone in no sync-up (the attack's orphan: a write that raced their removal) is set aside
    /// at start-up (`voices/orphaned/`), not loaded; a profile of someone in a sync-up is kept.
    @Test func aProfileOfSomeoneInNoSyncUpIsSetAsideAtStartUp() throws {
        let syncUp = SyncUp.fixture(attendees: 1)
        let data = directory.dataDirectory(holding: [syncUp])
        func profile(_ id: String) -> String { data + "/voices/\(id).json" }
        let kept = syncUp.attendees[0].id.description
        let orphan = "00000000-0000-0000-0000-0000000000F0"
        mkdir(data + "/voices", 0o700)
        for id in [kept, orphan] { Files.write(profile(id), VoiceProfileValidationFile.sane) }
        let daemon = try InProcessDaemon(dataDirectory: data)
        let deadline = MonotonicInstant.now() + .seconds(10)
        while Files.exists(profile(orphan)) && MonotonicInstant.now() < deadline { _ = daemon.turn(waitingUpTo: 50) }
        #expect(!Files.exists(profile(orphan)), "the orphan's profile is still there")
        #expect(Files.readString(data + "/voices/orphaned/\(orphan).json") == VoiceProfileValidationFile.sane)
        #expect(Files.exists(profile(kept)))
    }

    /// K3's tail: a start on `.prev` (sync-ups.json damaged) rewrites sync-ups.json without the sync-up B; the
    /// next clean start finds B's Cat in no sync-up. Her profile is set aside, said in `status`, and found
    /// again when B is restored (an outside edit while the daemon runs, or a file put back before a start).
    /// Before, that start deleted it for good.
    @Test(arguments: ["whileRunning", "beforeAStart"])
    func aProfileSetAsideAfterAFallbackComesBackWithItsPerson(restored: String) throws {
        let a = SyncUp.fixture(seed: 1, title: "A", attendees: 1)
        let b = SyncUp.fixture(seed: 2, title: "B", attendees: 1)
        let cat = b.attendees[0].id
        let data = directory.dataDirectory(holding: [a, b])
        Files.write(data + "/sync-ups.json.prev", SyncUpsFile.encode([a]))
        Files.write(data + "/sync-ups.json", #"{"oops": tr"#)
        mkdir(data + "/voices", 0o700)
        for attendee in a.attendees + b.attendees {
            Files.write(data + "/voices/\(attendee.id).json", VoiceProfileValidationFile.sane)
        }
        func catsSeconds(_ client: LoopClient) throws -> Double? {
            let attendees = try client.result("voices")["attendees"]?.arrayValue ?? []
            return attendees.first { $0["id"]?.stringValue == cat.description }?["seconds"]?.numberValue?.double
        }
        do {  // the start on .prev, which writes sync-ups.json anew at its first change
            let daemon = try VirtualTimeTests.daemon(path: data)
            let client = LoopClient(try daemon.connect(), daemon)
            _ = try client.result("syncups.create", ["title": "Probe"])
            _ = try client.waitForStatus(advancing: .milliseconds(500)) { _ in
                (try? SyncUpsFile.decode(Array((Files.readString(data + "/sync-ups.json") ?? "").utf8))) != nil
            }
        }
        #expect(Files.exists(data + "/voices/\(cat).json"), "the fallback start judged nobody")
        func start() throws -> LoopClient {
            let daemon = try VirtualTimeTests.daemon(path: data)
            return LoopClient(try daemon.connect(), daemon)
        }
        let aside = data + "/voices/orphaned/\(cat).json"
        func expectCatSetAside(_ client: LoopClient) throws {
            // A forget runs on the voices' writer after what start-up queued there, and is answered once done.
            let probe = try client.result("syncups.create", ["title": "Probe 2", "attendees": ["Probe"]])
            _ = try client.result("voices.forget", ["attendee": try #require(probe["attendees"]?[0]?["id"])])
            #expect(!Files.exists(data + "/voices/\(cat).json"))
            #expect(Files.readString(aside) == VoiceProfileValidationFile.sane, "Cat's profile was deleted")
            let warnings = try client.result("status")["persistence"]?["warnings"]?.arrayValue ?? []
            #expect(warnings.contains { $0.stringValue?.contains("set aside 1 profiles") == true }, "\(warnings)")
            #expect(warnings.contains { $0.stringValue?.contains("/voices/orphaned") == true }, "\(warnings)")
        }
        var running: LoopClient? = try start()
        try expectCatSetAside(try #require(running))
        // The user restores B, into the file as the daemon last wrote it: its write of Probe 2, due after the
        // throttle, is made first. (Moving the clock past it fired that write before the loop read inotify's
        // word of the user's edit, and the daemon's write replaced the edit: 1 loaded suite run in 5.)
        _ = try running?.waitForStatus(advancing: .milliseconds(500)) {
            $0["persistence"]?["unsavedChanges"] == false && $0["persistence"]?["synced"] == true
        }
        let current = try SyncUpsFile.decode(Array((Files.readString(data + "/sync-ups.json") ?? "").utf8))
        if restored == "beforeAStart" { running = nil }
        Files.write(data + "/sync-ups.json.new", SyncUpsFile.encode(current + [b]))
        rename(data + "/sync-ups.json.new", data + "/sync-ups.json")
        let client = try running ?? start()
        _ = try client.waitForStatus(advancing: .milliseconds(500)) { _ in (try? catsSeconds(client)) == 9.6 }
        #expect(Files.readString(data + "/voices/\(cat).json") == VoiceProfileValidationFile.sane)
        #expect(!Files.exists(aside))
    }

    /// A profile being brought back (its person named again) and forgotten at once stays forgotten: the move
    /// back runs first on the writer thread, the removal after it, and the profile the move read is not put
    /// back in memory when its message arrives after the forget.
    @Test func aProfileForgottenWhileItIsBroughtBackStaysForgotten() throws {
        let syncUp = SyncUp.fixture(attendees: 1)
        let data = directory.dataDirectory(holding: [syncUp])
        let cat = Attendee.ID(uuidString: "00000000-0000-0000-0000-0000000000CA")!
        mkdir(data + "/voices", 0o700)
        mkdir(data + "/voices/orphaned", 0o700)
        Files.write(data + "/voices/orphaned/\(cat).json", VoiceProfileValidationFile.sane)
        let daemon = try InProcessDaemon(dataDirectory: data)
        let removed = Mutex(false)
        daemon.voices.bringBack([cat])
        daemon.voices.forget([cat]) { _ in removed.withLock { $0 = true } }
        let deadline = MonotonicInstant.now() + .seconds(10)
        while !removed.withLock({ $0 }) && MonotonicInstant.now() < deadline { _ = daemon.turn(waitingUpTo: 20) }
        #expect(removed.withLock { $0 })
        for _ in 0..<5 { _ = daemon.turn(waitingUpTo: 20) }  // the move's message, posted before the removal
        #expect(daemon.voices.profiles[cat] == nil, "the forgotten profile is back in memory")
        #expect(!Files.exists(data + "/voices/\(cat).json") && !Files.exists(data + "/voices/orphaned/\(cat).json"))
    }

    /// K3: a `sync-ups.json` that is damaged (a torn write: restored from `.prev`, one write behind, which lacks
    /// the sync-up B) or gone with its `.prev` (the daemon starts empty) judges nobody's profile: Cat of B (and,
    /// with no file at all, everybody) keeps the voice learned; `status` says why, and B's schedule stays in
    /// `syncups.schedule`. Before, the start-up sweep deleted those profiles for good.
    @Test(arguments: ["garbage", "bothgone"])
    func aRosterNotReadFromSyncUpsJSONRemovesNoProfile(damage: String) throws {
        let a = SyncUp.fixture(seed: 1, title: "A", attendees: 2)
        let b = SyncUp.fixture(seed: 2, title: "B", attendees: 1)
        let data = directory.dataDirectory(holding: [a, b])
        Files.write(data + "/sync-ups.json.prev", SyncUpsFile.encode([a]))
        if damage == "garbage" {
            Files.write(data + "/sync-ups.json", #"{"oops": tr"#)
        } else {
            unlink(data + "/sync-ups.json")
            unlink(data + "/sync-ups.json.prev")
        }
        let scheduled =
            #"{"syncup":"\#(b.id)","schedule":"daily 10:00","timeZone":"UTC"}"#
        Files.write(data + "/syncups.schedule", #"{"version":1,"schedules":[\#(scheduled)]}"#)
        func profile(_ id: Attendee.ID) -> String { data + "/voices/\(id).json" }
        mkdir(data + "/voices", 0o700)
        let everyone = a.attendees + b.attendees
        for attendee in everyone { Files.write(profile(attendee.id), VoiceProfileValidationFile.sane) }
        let daemon = try VirtualTimeTests.daemon(path: data)
        let client = LoopClient(try daemon.connect(), daemon)
        // A forget runs on the voices' writer after any removal queued before it (the sweep's), and is answered
        // once done: by its reply, what start-up removed is gone.
        let probe = try client.result("syncups.create", ["title": "Probe", "attendees": ["Probe"]])
        let probeID = try #require(probe["attendees"]?[0]?["id"]?.stringValue)
        _ = try client.result("voices.forget", ["attendee": .string(probeID)])
        for attendee in everyone {
            #expect(Files.exists(profile(attendee.id)), "\(attendee.name)'s profile was removed (\(damage))")
        }
        let warnings = try client.result("status")["persistence"]?["warnings"]?.arrayValue ?? []
        #expect(warnings.contains { $0.stringValue?.contains("voices: kept") == true }, "\(warnings)")
        _ = try client.result(
            "schedule.set", ["syncup": try #require(probe["id"]), "schedule": "daily 09:00", "timeZone": "UTC"])
        let schedule = data + "/syncups.schedule"
        _ = try client.waitForStatus(advancing: .milliseconds(500)) { _ in
            (Files.readString(schedule) ?? "").contains("09:00")
        }
        let onDisk = Files.readString(schedule) ?? ""
        #expect(onDisk.contains(b.id.description), "B's schedule was dropped: \(onDisk)")
    }

    /// Solo's id cut to `length` characters (0 to 3) forgets nobody; four characters is enough.
    @Test(arguments: [0, 1, 3])
    func aPrefixShorterThanFourCharactersForgetsNobody(length: Int) throws {
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        let created = try request(
            daemon, #"{"id":1,"cmd":"syncups.create","args":{"title":"Solo","attendees":["Solo"]}}"#)
        let solo = try #require(created["result"]?["attendees"]?[0]?["id"]?.stringValue)
        mkdir(directory.appending("voices"), 0o755)
        Files.write(path(solo), VoiceProfileValidationFile.sane)
        let short = String(solo.prefix(length))
        let reply = try request(daemon, #"{"id":2,"cmd":"voices.forget","args":{"attendee":"\#(short)"}}"#)
        #expect(reply["error"]?["code"] == "invalid_argument", "\(reply)")
        #expect(Files.exists(path(solo)))
        let four = try request(daemon, #"{"id":3,"cmd":"voices.forget","args":{"attendee":"\#(solo.prefix(4))"}}"#)
        #expect(four["result"]?["name"] == "Solo", "\(four)")
        #expect(!Files.exists(path(solo)))
    }

    @Test func aProfileThatCannotBeRemovedFailsTheForgetSayingWhose() throws {
        let (daemon, solo, _) = try daemon()
        // A directory in the profile's place, with something in it: unlink fails (EISDIR), even for root.
        Files.write(path(solo) + ".bad", "x")
        unlink(path(solo) + ".bad")
        mkdir(path(solo) + ".bad", 0o755)
        Files.write(path(solo) + ".bad/inside", "x")
        let reply = try request(daemon, #"{"id":2,"cmd":"voices.forget","args":{"attendee":"\#(solo)"}}"#)
        #expect(reply["ok"] == false, "\(reply)")
        #expect(reply["error"]?["code"] == "internal")
        #expect(reply["error"]?["message"]?.stringValue?.contains("Solo") == true, "\(reply)")
    }
}

/// A hand-written profile that loads.
enum VoiceProfileValidationFile {
    static let sane =
        "{\"format\":1,\"model\":\"\(VoiceModel.version)\",\"seconds\":9.6,\"updated\":1764640000,"
        + "\"sum\":[\(Array(repeating: "0.1", count: 256).joined(separator: ","))]}\n"
}

/// A profile whose removal failed when its person left a sync-up (or the sync-up went) is a failed write of the
/// user's data: `status` names it and the voice writer retries it until it goes. Before, the error was
/// dropped (the reply was ok, `status` said nothing failed) and the file stayed until another forget or the
/// next start (the attack's B5).
@Suite struct VoiceRemovalRetryTests {
    let directory = TemporaryDirectory("voices-removal")

    @Test func aProfileThatCannotBeRemovedWhenItsPersonLeavesIsReportedAndRetried() throws {
        let daemon = try InProcessDaemon(
            dataDirectory: directory.path, clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000_000)))
        let client = LoopClient(try daemon.connect(), daemon)
        let created = try client.result("syncups.create", ["title": "Voices", "attendees": ["Solo", "Ben"]])
        let ids = try #require(created["attendees"]?.arrayValue).compactMap { $0["id"]?.stringValue }
        try #require(ids.count == 2)
        mkdir(directory.appending("voices"), 0o755)
        let ben = directory.appending("voices/\(ids[1]).json")
        Files.write(ben, VoiceProfileValidationFile.sane)
        // A directory in the place of Ben's set-aside file, with something in it: unlink fails (EISDIR).
        mkdir(ben + ".bad", 0o755)
        Files.write(ben + ".bad/inside", "x")
        let solo = created["attendees"]?.arrayValue?.first ?? .null
        _ = try client.result("syncups.update", ["id": created["id"] ?? .null, "attendees": [solo]])
        let failing = try client.waitForStatus { $0["persistence"]?["lastError"] != .null }
        #expect(failing["persistence"]?["lastError"]?.stringValue?.contains("voice profile") == true, "\(failing)")
        #expect(!Files.exists(ben))
        // The obstruction becomes a plain file: only a retry removes it.
        unlink(ben + ".bad/inside")
        rmdir(ben + ".bad")
        Files.write(ben + ".bad", "x")
        let deadline = MonotonicInstant.now() + .seconds(10)
        while Files.exists(ben + ".bad") && MonotonicInstant.now() < deadline {
            daemon.advanceTime(by: .milliseconds(500))
            daemon.turn(waitingUpTo: 10)
        }
        #expect(!Files.exists(ben + ".bad"))
        let recovered = try client.waitForStatus { $0["persistence"]?["lastError"] == .null }
        #expect(recovered["persistence"]?["lastError"] == .null)
    }
}
