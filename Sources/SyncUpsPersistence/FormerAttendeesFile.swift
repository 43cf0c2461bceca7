import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX

/// `former-attendees.json` in the data directory: the daemon's memory of the people removed from each sync-up
/// (`FormerAttendees`), outside `sync-ups.json`, which stays as the app writes it. Small; written whole and
/// atomically on its own thread, the newest version only.
public final class FormerAttendeesFile: Sendable {
    public static let fileName = "former-attendees.json"

    private let path: String
    private let worker: SerialWorker

    public init(directory: DataDirectory) throws(SystemError) {
        path = FilePath.join(directory.path, Self.fileName)
        worker = try SerialWorker(name: "syncups-former")
    }

    /// What the file holds, with what of it could not be used (none, or nothing remembered, when it is absent).
    public func load() -> (FormerAttendees, problems: [String]) {
        let read: (identity: FileIdentity, bytes: [UInt8]?)
        do {
            read = try SyncUpStore.readIdentified(path, readsIf: { $0.size <= 16 << 20 })
        } catch {
            if error.errno == .noSuchFile { return (FormerAttendees(), []) }
            return (FormerAttendees(), ["cannot read \(Self.fileName): \(error); starting without it"])
        }
        guard let bytes = read.bytes, let json = try? JSONParser().parse(bytes) else {
            return (FormerAttendees(), ["\(Self.fileName) is not JSON (or over 16 MiB); starting without it"])
        }
        let (former, problems) = FormerAttendees.read(json)
        return (former, problems.map { "\(Self.fileName): \($0)" })
    }

    /// Writes `former` off the caller's thread; `onError` (on that thread) says why it could not.
    public func save(_ former: FormerAttendees, onError: @escaping @Sendable (SystemError) -> Void) {
        let path = path
        worker.run {
            var bytes = JSONWriter(options: JSONWriter.Options(isPretty: true)).encode(former.json)
            bytes.append(0x0A)
            do throws(SystemError) {
                try AtomicFile(path: path).write(bytes)
            } catch {
                onError(error)
            }
        }
    }

    /// Finishes the writes queued; for shutdown.
    public func finish() { worker.finish() }
}
