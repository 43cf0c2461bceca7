import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// The start-up sweep of meetings' files that nothing names (`meetings/orphaned/`, `MeetingSweep`): it judges
/// only against a `sync-ups.json` read whole, after the journals' recovery, never through a symbolic link,
/// and a meeting a roster names again gets its files back.
@Suite struct OrphanedMeetingsSweepTests {
    let directory = TemporaryDirectory("orphaned-meetings")
    let orphan = Meeting.ID(UUID(counting: 91))

    /// The files of `orphan` that no sync-up names, in `data`'s `meetings/`.
    func orphanFiles(in data: String) -> [String] {
        [data + "/meetings/\(orphan).json", data + "/meetings/\(orphan).wav"]
    }

    func writeOrphan(in data: String) {
        Files.write(orphanFiles(in: data)[0], #"{"meeting":"\#(orphan)"}"#)
        Files.write(orphanFiles(in: data)[1], "RIFF")
    }

    func warnings(_ daemon: InProcessDaemon) throws -> [String] {
        let client = LoopClient(try daemon.connect(), daemon)
        return (try client.result("status")["persistence"]?["warnings"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    @Test func aStartOnSyncUpsJSONReadWholeSetsAsideTheFilesOfAMeetingItDoesNotName() throws {
        let data = directory.dataDirectory(holding: [SyncUp.fixture()])
        writeOrphan(in: data)
        let daemon = try InProcessDaemon(dataDirectory: data)
        for file in orphanFiles(in: data) {
            #expect(!Files.exists(file))
            #expect(Files.exists(file.replacingOccurrences(of: "/meetings/", with: "/meetings/orphaned/")))
        }
        #expect(try warnings(daemon).contains { $0.contains("set aside the files of 1 meetings") })
    }

    /// `.prev` (one write behind) may lack a meeting the real file names: nothing is moved, `status` says why.
    @Test(arguments: ["fallback to .prev", "empty start"])
    func aStartNotOnSyncUpsJSONMovesNothing(_ start: String) throws {
        let data = directory.dataDirectory(holding: [SyncUp.fixture()])
        if start == "fallback to .prev" {
            Files.write(data + "/sync-ups.json.prev", Files.readString(data + "/sync-ups.json") ?? "")
        }
        Files.write(data + "/sync-ups.json", #"{"oops": tr"#)
        writeOrphan(in: data)
        let daemon = try InProcessDaemon(dataDirectory: data)
        for file in orphanFiles(in: data) { #expect(Files.exists(file), "\(file) moved after a fallback") }
        #expect(!Files.exists(data + "/meetings/orphaned"))
        #expect(try warnings(daemon).contains { $0.contains("kept the files of 1 meetings in none of the sync-ups") })
    }

    /// A meeting a crash left running (its journal, not yet in `sync-ups.json`) is recovered, not set aside.
    @Test func aMeetingAJournalCoversIsRecoveredNotSetAside() throws {
        let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        var meeting = ""
        var syncUp = ""
        do {
            let crashed = try InProcessDaemon(dataDirectory: directory.path, clock: .manual(startingAt: start))
            let client = LoopClient(try crashed.connect(), crashed)
            let created = try client.result("syncups.create", ["title": "Crash", "duration": 60, "attendees": ["A"]])
            syncUp = try #require(created["id"]?.stringValue)
            let started = try client.result("session.start", ["syncup": created["id"]!, "audio": false])
            meeting = try #require(started["meeting"]?.stringValue)
        }
        let audio = directory.path + "/meetings/\(meeting).wav"
        Files.write(audio, "RIFF")  // beside its journal, as a recording leaves it
        #expect(Files.exists(directory.path + "/meetings/\(meeting).recording.json"))
        let daemon = try InProcessDaemon(dataDirectory: directory.path, clock: .manual(startingAt: start))
        let client = LoopClient(try daemon.connect(), daemon)
        let listed = try client.result("syncups.get", ["id": .string(syncUp)])["meetings"]?.arrayValue ?? []
        #expect(listed.map { $0["id"]?.stringValue } == [meeting])
        #expect(Files.exists(audio), "the recovered meeting's audio was set aside")
        #expect(!Files.exists(directory.path + "/meetings/orphaned"))
    }

    /// A backup restored while the daemon runs names the meeting again: its files come back to `meetings/`.
    @Test func aMeetingARosterNamesAgainGetsItsFilesBack() throws {
        var syncUp = SyncUp.fixture()
        let data = directory.dataDirectory(holding: [syncUp])
        writeOrphan(in: data)
        let daemon = try InProcessDaemon(dataDirectory: data)
        for file in orphanFiles(in: data) { #expect(!Files.exists(file)) }
        syncUp.meetings = [Meeting(id: orphan, date: Date(timeIntervalSince1970: 1_700_000_000), transcript: "back")]
        Files.write(data + "/sync-ups.json.new", SyncUpsFile.encode([syncUp]))
        rename(data + "/sync-ups.json.new", data + "/sync-ups.json")
        let deadline = MonotonicInstant.now() + .seconds(10)
        while !orphanFiles(in: data).allSatisfy(Files.exists) && MonotonicInstant.now() < deadline {
            _ = daemon.turn(waitingUpTo: 20)
        }
        for file in orphanFiles(in: data) { #expect(Files.exists(file), "\(file) was not brought back") }
        #expect(Files.readString(orphanFiles(in: data)[0])?.contains(orphan.description) == true)
    }

    /// A `meetings/orphaned` that is a symbolic link is never followed: the orphan stays where it is, nothing
    /// the link points to is touched, and `status` says why.
    @Test func aSymlinkedSetAsideDirectoryIsRefused() throws {
        let data = directory.dataDirectory(holding: [SyncUp.fixture()])
        writeOrphan(in: data)
        let victim = directory.appending("victim")
        mkdir(victim, 0o700)
        Files.write(victim + "/mine.txt", "mine")
        #expect(symlink(victim, data + "/meetings/orphaned") == 0)
        let daemon = try InProcessDaemon(dataDirectory: data)
        for file in orphanFiles(in: data) { #expect(Files.exists(file), "\(file) left through the link") }
        #expect(Files.list(victim) == ["mine.txt"])
        #expect(try warnings(daemon).contains { $0.contains("symbolic link") })
    }
}
