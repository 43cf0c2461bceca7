import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX

/// `former-attendees.json` in the data directory: the daemon's memory of the people removed from each sync-up
/// (`FormerAttendees`), outside `sync-ups.json`, which stays as the app writes it. Small; written whole,
/// atomically and durably by the store's writer thread just before the `sync-ups.json` that drops the people
/// it remembers (`StoreWriter`), so a kill or a full disk never leaves a removal on disk without its ids: a
/// failed write is a failed save of the state, reported in `status.persistence` and retried.
public struct FormerAttendeesFile: Sendable {
    public static let fileName = "former-attendees.json"

    public let path: String
    let fileSystem: FileSystem

    public init(directory: DataDirectory, fileSystem: FileSystem = .live) {
        path = FilePath.join(directory.path, Self.fileName)
        self.fileSystem = fileSystem
    }

    /// The prefix of the temporary files of its writes, so start-up can remove ones a kill left behind.
    var temporaryPrefix: String { AtomicFile(path: path).temporaryPrefix }

    /// What the file holds, with what of it could not be used (none, or nothing remembered, when it is absent).
    /// A file that does not parse is moved aside (`.corrupt-<UTC>`, as `sync-ups.json` is), never overwritten.
    func load(at date: Date) -> (FormerAttendees, problems: [String]) {
        let read: (identity: FileIdentity, bytes: [UInt8]?)
        do {
            read = try SyncUpStore.readIdentified(path, readsIf: { $0.size <= 16 << 20 })
        } catch {
            if error.errno == .noSuchFile { return (FormerAttendees(), []) }
            return (FormerAttendees(), ["cannot read \(Self.fileName): \(error); starting without it"])
        }
        guard let bytes = read.bytes, let json = try? JSONParser().parse(bytes) else {
            let aside = StoreLoader.moveAside(path, fileSystem: fileSystem, at: date)
            return (
                FormerAttendees(),
                [
                    "\(Self.fileName) is not JSON (or over 16 MiB); moved it to \(aside ?? "nowhere (rename failed)"); "
                        + "starting without it"
                ]
            )
        }
        let (former, problems) = FormerAttendees.read(json)
        return (former, problems.map { "\(Self.fileName): \($0)" })
    }

    /// Writes `former`, atomically and durably; the error names the file.
    func write(_ former: FormerAttendees) throws(SystemError) {
        var bytes = JSONWriter(options: JSONWriter.Options(isPretty: true)).encode(former.json)
        bytes.append(0x0A)
        do {
            try AtomicFile(path: path, fileSystem: fileSystem).write(bytes)
        } catch {
            throw SystemError("\(Self.fileName), written first, failed: \(error.operation)", error.errno)
        }
    }
}
