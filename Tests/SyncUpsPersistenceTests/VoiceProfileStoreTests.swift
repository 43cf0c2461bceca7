import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import SyncUpsVoice
import Testing

@Suite struct VoiceProfileStoreTests {
    let directory = TemporaryDirectory("voices")
    var store: VoiceProfileStore { VoiceProfileStore(dataDirectory: DataDirectory(path: directory.path)) }
    let ann = Attendee.ID(uuidString: "00000000-0000-0000-0000-00000000000A")!
    let ben = Attendee.ID(uuidString: "00000000-0000-0000-0000-00000000000B")!

    func learned(_ seconds: Double) -> VoiceProfile {
        var profile = VoiceProfile()
        profile.learn((0..<256).map { Float($0) / 1000 + 0.123_456_7 }, seconds: seconds, at: 1_764_640_000)
        return profile
    }

    @Test func profilesLastAcrossStoresKeyedByAttendee() throws {
        try store.save(learned(9.6), for: ann)
        try store.save(learned(3.2), for: ben)
        let loaded = VoiceProfileStore(dataDirectory: DataDirectory(path: directory.path)).loadAll()
        #expect(loaded.warnings == [])
        #expect(loaded.profiles == [ann: learned(9.6), ben: learned(3.2)])
        #expect(
            Files.list(directory.appending("voices")).sorted() == [
                ann.description + ".json", ben.description + ".json",
            ])
        // Nothing of it in sync-ups.json's place.
        #expect(!Files.exists(directory.appending("sync-ups.json")))
    }

    enum Damage: CaseIterable, Sendable {
        case truncated, garbage, shortEmbedding, otherModel, otherFormat

        func apply(_ bytes: [UInt8]) -> [UInt8] {
            let text = String(decoding: bytes, as: UTF8.self)
            return switch self {
            case .truncated: Array(bytes.prefix(bytes.count / 2))
            case .garbage: Array("\u{0}\u{1}not json".utf8)
            case .shortEmbedding: Array(text.replacing(",0.1", with: "", maxReplacements: 1).utf8)
            case .otherModel: Array(text.replacing(VoiceModel.version, with: "ecapa-2").utf8)
            case .otherFormat: Array(text.replacing("\"format\":1", with: "\"format\":2").utf8)
            }
        }
    }

    @Test(arguments: Damage.allCases)
    func anUnusableFileIsSetAsideWithAWarningAndRelearned(damage: Damage) throws {
        try store.save(learned(9.6), for: ann)
        try store.save(learned(3.2), for: ben)
        let path = store.path(of: ann)
        let original = try #require(Files.read(path))
        let damaged = damage.apply(original)
        #expect(damaged != original)
        Files.write(path, damaged)
        let loaded = store.loadAll()
        // The other attendee's profile is untouched; ann's starts over.
        #expect(loaded.profiles == [ben: learned(3.2)])
        #expect(loaded.warnings.count == 1)
        #expect(loaded.warnings.first?.contains("set aside as \(path).bad, relearning") == true, "\(loaded.warnings)")
        #expect(Files.read(path + ".bad") == damaged)
        #expect(!Files.exists(path))
        // Relearning writes a new file beside the one set aside.
        try store.save(learned(1.6), for: ann)
        #expect(store.loadAll().profiles[ann] == learned(1.6))
    }

    @Test func theWarningSaysWhatIsWrong() throws {
        try store.save(learned(9.6), for: ann)
        let path = store.path(of: ann)
        Files.write(
            path,
            Array(
                String(decoding: Files.read(path)!, as: UTF8.self).replacing(VoiceModel.version, with: "ecapa-2").utf8))
        guard case .failure(let warning) = store.load(ann) else {
            Issue.record("a profile of another model was used")
            return
        }
        #expect(
            warning.message
                == "voice profile \(path) is from another model version (learned with ecapa-2): set aside as \(path).bad, relearning"
        )
    }

    @Test func forgettingRemovesTheProfileAndAnythingSetAside() throws {
        try store.save(learned(9.6), for: ann)
        try store.save(learned(9.6), for: ben)
        Files.write(store.path(of: ann) + ".bad", "old")
        try store.remove([ann])
        #expect(store.loadAll().profiles.keys.sorted() == [ben])
        #expect(Files.list(directory.appending("voices")) == [ben.description + ".json"])
        try store.remove([ann])  // twice is fine
    }

    /// K3's tail: a profile set aside (its person in no sync-up) waits in `voices/orphaned/`, comes back when
    /// its person does, is deleted by a forget, and no more than `maximumAside` wait: the longest aside go.
    @Test func profilesSetAsideComeBackAndAreBounded() throws {
        func id(_ number: Int) -> Attendee.ID {
            let digits = String(number)
            return Attendee.ID(
                uuidString: "00000000-0000-0000-0000-" + String(repeating: "0", count: 12 - digits.count) + digits)!
        }
        let count = VoiceProfileStore.maximumAside + 2
        var deleted: [Attendee.ID] = []
        for number in 1...count {  // one a day
            try store.save(learned(Double(number)), for: id(number))
            deleted += try store.setAside(
                [id(number)], at: Date(timeIntervalSince1970: 1_764_640_000 + Double(number) * 86_400))
        }
        #expect(deleted == [id(1), id(2)])
        #expect(store.loadAll().profiles.isEmpty)
        #expect(store.asideAttendees() == Set((3...count).map(id)))
        #expect(try store.bringBack(id(50)).get() == learned(50))
        #expect(store.loadAll().profiles == [id(50): learned(50)])
        #expect(try store.bringBack(id(1)).get() == nil, "deleted for good")
        try store.remove([id(60)])
        #expect(!store.asideAttendees().contains(id(60)), "a forget deletes a set-aside profile too")
    }

    /// Many set aside at once (a wrong `sync-ups.json` restored) are all kept for `asideGrace`, however many:
    /// only then do the longest aside beyond `maximumAside` go, and never those set aside by the same call.
    @Test func profilesSetAsideTogetherWaitTheirGraceBeforeAnyIsDeleted() throws {
        func id(_ number: Int) -> Attendee.ID {
            let digits = String(number)
            return Attendee.ID(
                uuidString: "00000000-0000-0000-0000-" + String(repeating: "0", count: 12 - digits.count) + digits)!
        }
        let start = Date(timeIntervalSince1970: 1_764_640_000)
        let many = (1...VoiceProfileStore.maximumAside + 50).map(id)
        for attendee in many { try store.save(learned(1), for: attendee) }
        #expect(try store.setAside(many, at: start).isEmpty)
        #expect(store.asideAttendees().count == many.count)
        let almost = start.addingTimeInterval(VoiceProfileStore.asideGrace.seconds - 60)
        try store.save(learned(2), for: id(1000))
        #expect(try store.setAside([id(1000)], at: almost).isEmpty, "deleted before their grace ended")
        let after = start.addingTimeInterval(VoiceProfileStore.asideGrace.seconds + 60)
        try store.save(learned(3), for: id(1001))
        let deleted = try store.setAside([id(1001)], at: after)
        #expect(deleted == Array(many.prefix(52)))
        #expect(store.asideAttendees() == Set(many.dropFirst(52) + [id(1000), id(1001)]))
    }

    /// A `voices/orphaned` that is a symbolic link is not followed: nothing is set aside there, counted,
    /// brought back or deleted (a forget of an attendee named like a file there leaves it).
    @Test func aSymlinkedSetAsideDirectoryIsRefused() throws {
        let elsewhere = directory.appending("elsewhere")
        mkdir(elsewhere, 0o700)
        Files.write(elsewhere + "/\(ben).json", "not ours")
        try store.save(learned(1), for: ann)
        #expect(symlink(elsewhere, store.asideDirectory) == 0)
        #expect(store.asideDirectoryProblem()?.contains("symbolic link") == true)
        #expect(throws: SystemError.self) { try store.setAside([ann], at: Date(timeIntervalSince1970: 0)) }
        #expect(store.loadAll().profiles == [ann: learned(1)])
        #expect(store.asideAttendees().isEmpty)
        #expect(try store.bringBack(ben).get() == nil)
        try store.remove([ben])
        #expect(Files.readString(elsewhere + "/\(ben).json") == "not ours")
    }

    @Test func noDirectoryIsNoProfiles() {
        let loaded = store.loadAll()
        #expect(loaded.profiles.isEmpty && loaded.warnings.isEmpty)
    }
}

@Suite struct VoiceProfileValidationTests {
    let directory = TemporaryDirectory("voices")
    var store: VoiceProfileStore { VoiceProfileStore(dataDirectory: DataDirectory(path: directory.path)) }
    let ann = Attendee.ID(uuidString: "00000000-0000-0000-0000-00000000000A")!

    init() { mkdir(directory.appending("voices"), 0o755) }

    static func file(seconds: String = "9.6", updated: String = "1764640000", sum: String = "0.1") -> String {
        "{\"format\":1,\"model\":\"\(VoiceModel.version)\",\"seconds\":\(seconds),\"updated\":\(updated),"
            + "\"sum\":[\(Array(repeating: sum, count: 256).joined(separator: ","))]}\n"
    }

    /// Files that parse but are nonsense: a sum with no direction, more speech than a lifetime, a date before
    /// 1970, a sum far longer than the windows learned could make.
    @Test(arguments: [
        file(sum: "0"), file(seconds: "1e308"), file(updated: "-5"), file(sum: "1e38"), file(seconds: "-1"),
    ])
    func nonsenseThatParsesIsSetAsideWithAWarning(text: String) {
        let path = store.path(of: ann)
        Files.write(path, text)
        let loaded = store.loadAll()
        #expect(loaded.profiles.isEmpty)
        #expect(
            loaded.warnings.count == 1 && loaded.warnings[0].contains("set aside as \(path).bad"), "\(loaded.warnings)")
        #expect(!Files.exists(path))
    }

    @Test func aFileTooLargeToBeAProfileIsSaidToBeTooLarge() {
        let path = store.path(of: ann)
        Files.write(path, String(repeating: " ", count: 2 << 20))
        let loaded = store.loadAll()
        #expect(loaded.profiles.isEmpty)
        #expect(
            loaded.warnings == [
                "voice profile \(path) is too large (2097152 bytes; a profile is a few kilobytes): set aside as \(path).bad, relearning"
            ])
    }

    @Test func aSaneHandWrittenFileLoads() {
        Files.write(store.path(of: ann), Self.file())
        let loaded = store.loadAll()
        #expect(loaded.warnings == [])
        #expect(loaded.profiles[ann]?.seconds == 9.6)
    }
}
