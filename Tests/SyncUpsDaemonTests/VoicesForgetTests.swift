import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import SyncUpsVoice
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

    /// A profile of someone in no sync-up (the attack's orphan: a write that raced their removal) is removed at
    /// start-up; a profile of someone in a sync-up is kept.
    @Test func aProfileOfSomeoneInNoSyncUpIsRemovedAtStartUp() throws {
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
        #expect(Files.exists(profile(kept)))
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
