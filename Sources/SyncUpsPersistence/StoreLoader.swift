import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// Reads `sync-ups.json` at start-up without ever destroying a byte of it.
///
/// A missing or empty file is an empty list, unless `.prev` holds sync-ups: an empty file is what a power cut
/// can leave of a version written but not yet synced (`VersionedFile`), so `.prev` is loaded then. A file
/// that does not parse is renamed to `sync-ups.json.corrupt-<UTC>` (never overwritten, never deleted) and
/// `.prev` is tried instead; if that is bad too it is moved aside the same way and the daemon starts empty,
/// saying so loudly.
public struct StoreLoader {
    let directory: DataDirectory
    let fileSystem: FileSystem
    let wallClock: WallClock
    /// Set when the state loaded is not what `sync-ups.json` holds (it came from `.prev`): write it back at once.
    private(set) var needsRewrite = false
    /// Set when the state loaded is `sync-ups.json`'s own, read whole: not `.prev`, and not the empty start of a
    /// missing, empty or damaged file. Only such a roster may judge what else refers to it (a voice profile of
    /// someone in no sync-up, a schedule of no sync-up): a fallback can lack what the real file held.
    private(set) var isFromFile = false

    init(directory: DataDirectory, fileSystem: FileSystem, wallClock: WallClock) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.wallClock = wallClock
    }

    mutating func load() -> (syncUps: [SyncUp], warnings: [String]) {
        var warnings: [String] = []
        let main = directory.syncUpsFile
        let outcome = Self.parse(main)
        switch outcome {
        case .loaded(let syncUps):
            isFromFile = true
            return (syncUps, warnings)
        case .missing, .empty:
            guard case .loaded(let syncUps) = Self.parse(directory.previousFile), !syncUps.isEmpty else {
                return ([], warnings)
            }
            let state = outcome == .empty ? "empty" : "missing"
            // No bytes to keep; gone, it cannot become `.prev` when the restored state is written back.
            if outcome == .empty { fileSystem.unlink(main) }
            warnings.append("\(main) is \(state); restored \(syncUps.count) sync-ups from \(directory.previousFile)")
            needsRewrite = true
            return (syncUps, warnings)
        case .invalid(let reason):
            let aside = Self.moveAside(main, fileSystem: fileSystem, at: wallClock())
            warnings.append("\(main) does not parse (\(reason)); moved it to \(aside ?? "nowhere (rename failed)")")
        }
        switch Self.parse(directory.previousFile) {
        case .loaded(let syncUps):
            warnings.append("restored \(syncUps.count) sync-ups from \(directory.previousFile)")
            needsRewrite = true
            return (syncUps, warnings)
        case .missing, .empty:
            warnings.append("no \(directory.previousFile) to fall back on; starting with no sync-ups")
        case .invalid(let reason):
            let aside = Self.moveAside(directory.previousFile, fileSystem: fileSystem, at: wallClock())
            warnings.append(
                "\(directory.previousFile) does not parse either (\(reason)); moved it to \(aside ?? "nowhere"); "
                    + "starting with no sync-ups"
            )
        }
        return ([], warnings)
    }

    enum Outcome: Equatable {
        case loaded([SyncUp])
        case missing
        /// Zero bytes.
        case empty
        case invalid(String)
    }

    /// Reads and decodes a file. Large files are mapped rather than read: at 10 MB that saves a fifth of
    /// start-up (no copy, no zeroed pages). A mapping dies with SIGBUS if another program truncates the
    /// file during the few milliseconds of decoding; small files, the usual case, are read to avoid even that.
    static func parse(_ path: String) -> Outcome {
        do {
            // One descriptor, checked to be a regular file, read or mapped.
            return try SyncUpStore.withRegularFile(path) { (fd, identity) throws(SystemError) -> Outcome in
                guard identity.size > 0 else { return .empty }
                do {
                    guard identity.size >= 1 << 20 else {
                        return .loaded(try SyncUpsFile.decode(try fd.readToEnd(sizeHint: Int(identity.size) + 1)))
                    }
                    let file = try MappedFile(fd: fd, size: Int(identity.size))
                    return .loaded(try SyncUpsFile.decode(buffer: file.bytes))
                } catch let error as SystemError {
                    throw error
                } catch {
                    return .invalid("\(error)")
                }
            }
        } catch {
            return error.errno == .noSuchFile ? .missing : .invalid(error.description)
        }
    }

    /// Renames `path` to `<path>.corrupt-<UTC stamp of date>` (with a counter if that exists); returns the
    /// new path.
    public static func moveAside(_ path: String, fileSystem: FileSystem, at date: Date) -> String? {
        let stamp = UTCTime(date).compactStamp
        for attempt in 0..<100 {
            let candidate = path + ".corrupt-" + stamp + (attempt == 0 ? "" : "-\(attempt)")
            guard fileSystem.identity(candidate) == nil else { continue }
            do {
                try fileSystem.rename(path, candidate)
                return candidate
            } catch {
                return nil
            }
        }
        return nil
    }
}
