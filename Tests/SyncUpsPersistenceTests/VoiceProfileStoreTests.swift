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
        for number in 1...count {
            try store.save(learned(Double(number)), for: id(number))
            deleted += try store.setAside([id(number)])
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
