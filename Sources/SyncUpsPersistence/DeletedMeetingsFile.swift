import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX

/// `deleted-meetings.json` in the data directory: the meetings the user deleted (or discarded, or whose
/// sync-up they deleted) whose files are not all removed yet. A journal left behind recovers its meeting at the
/// next start, and a recording left behind would stay for good; this record, written durably by the journal's
/// thread before it removes any file of theirs, tells recovery that the meeting was deleted and the next start
/// what to finish removing, so a kill -9 in the middle (a deleted sync-up's thousands of meetings take a
/// while) neither brings a meeting back nor leaves its files. Beside `sync-ups.json`, which stays as the app
/// writes it.
///
/// Usually absent: an entry goes once its files are removed, and the file with the last one.
public struct DeletedMeetingsFile: Sendable {
    public static let fileName = "deleted-meetings.json"

    public let path: String
    /// Its writes' (a `FaultyFileSystem`'s in tests, to fill the disk).
    let fileSystem: FileSystem

    public init(directory: DataDirectory, fileSystem: FileSystem = .live) {
        path = FilePath.join(directory.path, Self.fileName)
        self.fileSystem = fileSystem
    }

    /// The meetings it names; none when it is absent. One that cannot be read names none, and says why (the
    /// journals it guarded then recover their meetings, as before it existed: nothing is lost).
    public func load() -> (meetings: Set<Meeting.ID>, problem: String?) {
        let read: (identity: FileIdentity, bytes: [UInt8]?)
        do {
            read = try SyncUpStore.readIdentified(path, readsIf: { $0.size <= 16 << 20 })
        } catch {
            if error.errno == .noSuchFile { return ([], nil) }
            return ([], "cannot read \(Self.fileName): \(error)")
        }
        guard let bytes = read.bytes, let json = try? JSONParser().parse(bytes), let ids = json["meetings"]?.arrayValue
        else { return ([], "\(Self.fileName) is not a list of meetings (or over 16 MiB); ignored it") }
        return (Set(ids.compactMap { $0.stringValue.flatMap(Meeting.ID.init(uuidString:)) }), nil)
    }

    /// The prefix of its temporary files: a kill while it is written leaves one, which the next start removes.
    var temporaryPrefix: String { AtomicFile(path: path).temporaryPrefix }

    /// Records exactly `meetings`, atomically and durably; removes the file when there are none.
    func write(_ meetings: Set<Meeting.ID>) throws(SystemError) {
        guard !meetings.isEmpty else {
            guard unlink(path) == 0 || Errno.current == .noSuchFile else {
                throw SystemError("unlink(\(path))", Errno.current)
            }
            return
        }
        let ids = meetings.map(\.description).sorted().map(JSONValue.string)
        var bytes = JSONWriter(options: JSONWriter.Options(isPretty: true)).encode(["meetings": .array(ids)])
        bytes.append(0x0A)
        try AtomicFile(path: path, fileSystem: fileSystem).write(bytes)
    }
}
