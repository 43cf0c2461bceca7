import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization
import Testing

@testable import SyncUpsDaemon

/// The start-up sweep of profiles of people in no sync-up (`voices/orphaned/`) touches only what is the
/// daemon's: the attack's C3 had a `voices/orphaned` symlinked out of the data directory, and files the daemon
/// never put there, counted toward the 100 and deleted; and a wrong `sync-ups.json` set aside and deleted
/// hundreds of profiles in one start.
@Suite struct OrphanedVoicesTests {
    let directory = TemporaryDirectory("orphaned-voices")

    func id(_ number: Int) -> String {
        let digits = String(number)
        return "00000000-0000-0000-0000-" + String(repeating: "0", count: 12 - digits.count) + digits
    }

    /// A data directory of one sync-up of one person, whose profile is there, with `orphans` profiles of
    /// people in no sync-up beside it.
    func data(orphans: Int) -> (data: String, kept: String) {
        let syncUp = SyncUp.fixture(attendees: 1)
        let data = directory.dataDirectory(holding: [syncUp])
        mkdir(data + "/voices", 0o700)
        let kept = syncUp.attendees[0].id.description
        for id in [kept] + (0..<orphans).map({ id($0 + 1) }) {
            Files.write(data + "/voices/\(id).json", VoiceProfileValidationFile.sane)
        }
        return (data, kept)
    }

    /// `count` files named like profiles, holding something else.
    func foreignFiles(in path: String, count: Int) {
        for number in 1...count { Files.write(path + "/\(id(5000 + number)).json", #"{"my":"data \#(number)"}"#) }
    }

    /// Starts a daemon and waits until its voices' writer has done what start-up queued (a forget runs after).
    func start(_ data: String) throws -> InProcessDaemon {
        let daemon = try InProcessDaemon(dataDirectory: data)
        let done = Atomic(false)
        daemon.voices.forget([Attendee.ID(uuidString: id(999_999))!]) { _ in
            done.store(true, ordering: .sequentiallyConsistent)
        }
        let deadline = MonotonicInstant.now() + .seconds(10)
        while !done.load(ordering: .sequentiallyConsistent) && MonotonicInstant.now() < deadline {
            _ = daemon.turn(waitingUpTo: 20)
        }
        let isDone = done.load(ordering: .sequentiallyConsistent)
        #expect(isDone)
        return daemon
    }

    /// Before: `victim dir had 150 files, now: 100` (and the orphan moved out of the data directory).
    @Test func aSymlinkedSetAsideDirectoryIsRefusedAndNothingItPointsToIsTouched() throws {
        let (data, _) = data(orphans: 1)
        let victim = directory.appending("victim")
        mkdir(victim, 0o700)
        foreignFiles(in: victim, count: 150)
        #expect(symlink(victim, data + "/voices/orphaned") == 0)
        let daemon = try start(data)
        #expect(Files.list(victim).count == 150, "files outside the data directory were deleted")
        #expect(Files.exists(data + "/voices/\(id(1)).json"), "the orphan left the data directory")
        let client = LoopClient(try daemon.connect(), daemon)
        let warnings = try client.result("status")["persistence"]?["warnings"]?.arrayValue ?? []
        #expect(warnings.contains { $0.stringValue?.contains("symbolic link") == true }, "\(warnings)")
    }

    /// Before: 50 of the 150 files that were never profiles were deleted as "set aside longest".
    @Test func filesTheDaemonDidNotSetAsideAreNeitherCountedNorDeleted() throws {
        let (data, _) = data(orphans: 1)
        mkdir(data + "/voices/orphaned", 0o700)
        foreignFiles(in: data + "/voices/orphaned", count: 150)
        _ = try start(data)
        #expect(Files.list(data + "/voices/orphaned").count == 151)
        #expect(Files.readString(data + "/voices/orphaned/\(id(1)).json") == VoiceProfileValidationFile.sane)
    }

    /// A `sync-ups.json` that names none of 150 people (the wrong file restored): all 150 are set aside and
    /// none deleted in that start. Before, the 50 beyond 100 were deleted at once.
    @Test func oneStartSetsAsideManyProfilesAndDeletesNone() throws {
        let (data, kept) = data(orphans: 150)
        _ = try start(data)
        #expect(Files.list(data + "/voices/orphaned").count == 150, "profiles were deleted by one start")
        #expect(Files.list(data + "/voices") == ["\(kept).json", "orphaned"].sorted())
    }
}

/// The attack's C10: a start-up sweep that cannot set a profile aside (the disk full) says so in `status`,
/// and keeps the profile where it was. Before, `status` said it was set aside; only the log said otherwise.
@Suite struct OrphanedVoicesFailureTests {
    @Test func aProfileThatCannotBeSetAsideIsSaidToStayWhereItIs() throws {
        let directory = TemporaryDirectory("orphaned-full")
        let data = directory.dataDirectory(holding: [SyncUp.fixture(attendees: 1)])
        mkdir(data + "/voices", 0o700)
        let orphan = data + "/voices/00000000-0000-0000-0000-0000000000F0.json"
        Files.write(orphan, VoiceProfileValidationFile.sane)
        let faults = FaultyFileSystem()
        faults.fail(.rename, with: Errno(rawValue: ENOSPC))
        let daemon = try InProcessDaemon(dataDirectory: data, fileSystem: faults.fileSystem)
        faults.heal()
        let client = LoopClient(try daemon.connect(), daemon)
        let warnings = try client.result("status")["persistence"]?["warnings"]?.arrayValue ?? []
        #expect(
            warnings.contains { $0.stringValue?.contains("cannot set aside 1 profiles") == true }, "\(warnings)")
        #expect(!warnings.contains { $0.stringValue?.contains("voices: set aside") == true }, "\(warnings)")
        #expect(Files.readString(orphan) == VoiceProfileValidationFile.sane)
    }
}

/// The attack's C6: an attendee two sync-ups name (one copied inside `sync-ups.json` by hand, with the same
/// ids) keeps their voice profile when one of the sync-ups is deleted or drops them: a profile goes only with
/// the last sync-up that names its person. Before, it was deleted for good while the other still named them.
@Suite struct SharedAttendeeVoiceTests {
    @Test(arguments: ["syncups.delete", "syncups.update"])
    func anAttendeeAnotherSyncUpNamesKeepsTheirProfile(_ command: String) throws {
        let directory = TemporaryDirectory("shared-attendee")
        let one = SyncUp.fixture(seed: 1, title: "One", attendees: 2)
        let two = SyncUp(
            id: SyncUp.ID(UUID(counting: 9999)), attendees: one.attendees, duration: one.duration, meetings: [],
            theme: one.theme, title: "Two")
        let data = directory.dataDirectory(holding: [one, two])
        mkdir(data + "/voices", 0o700)
        let ann = one.attendees[0].id
        let profile = data + "/voices/\(ann).json"
        Files.write(profile, VoiceProfileValidationFile.sane)
        let daemon = try InProcessDaemon(dataDirectory: data)
        let client = LoopClient(try daemon.connect(), daemon)
        if command == "syncups.delete" {
            _ = try client.result(command, ["id": .string(one.id.description)])
        } else {
            let bob = one.attendees[1]
            _ = try client.result(
                command,
                [
                    "id": .string(one.id.description),
                    "attendees": [["id": .string(bob.id.description), "name": .string(bob.name)]],
                ])
        }
        #expect(Files.readString(profile) == VoiceProfileValidationFile.sane, "Two's Ann lost her voice")
        // Once no sync-up names her, it goes.
        _ = try client.result("syncups.delete", ["id": .string(two.id.description)])
        #expect(!Files.exists(profile))
    }
}
