import FoundationEssentials
import Glibc
import SyncUpsPOSIX

/// A directory of the daemon's own where files nothing names any more are set aside rather than deleted
/// (`voices/orphaned/`, `meetings/orphaned/`): the roster that left them out may lack a sync-up the user will
/// restore. One set of rules for every kind: never a symbolic link or another user's directory, each file
/// marked with when it was set aside, and the longest aside deleted beyond `maximum` once they waited `grace`.
public struct AsideDirectory: Sendable {
    public let path: String
    /// What it holds, for a refusal: "set-aside voice profiles".
    public let contents: String

    public init(path: String, contents: String) {
        self.path = path
        self.contents = contents
    }

    /// The most items kept aside once they have waited `grace`: beyond it the longest aside are deleted.
    public static let maximum = 100

    /// How long an item set aside is kept whatever their number: a wrong `sync-ups.json` restored sets aside
    /// everything it lacks at once, and none of it is deleted before the user has had weeks to notice
    /// (`persistence.warnings` says so) and put the right file back, which brings it all back. Setting aside is
    /// a rename, so waiting costs no disk the files did not already take.
    public static let grace: Duration = .seconds(30 * 86_400)

    /// The nanoseconds of the modification time the daemon gives a file it sets aside (its seconds are when):
    /// the mark of its own. Only a file so marked is counted, and ever deleted; any other file there (put by
    /// the user or another program, or one whose file system keeps whole seconds) is left alone.
    static let mark = 314_159_265

    /// Why the directory is not the daemon's own to use, or nil when it is, or is missing (it is made when
    /// needed). It must be a directory of this user, not a symbolic link (never followed: what it points to is
    /// not the data directory), as the socket's directory must be (`OwnDirectory`). When it is not, nothing
    /// is set aside, counted, brought back or deleted there.
    public func problem() -> String? {
        switch OwnDirectory.problem(at: path, owner: geteuid()) {
        case nil: nil
        case .cannotExamine(let error): "cannot examine \(path): \(error)"
        case .unfit(let reason): "refusing \(path) for \(contents): \(reason)"
        }
    }

    /// The names in the directory (none when it is not the daemon's own, or missing).
    public func names() -> [String] {
        guard problem() == nil else { return [] }
        return (try? DirectoryListing.names(in: path)) ?? []
    }

    public func path(of name: String) -> String { FilePath.join(path, name) }

    /// Moves `source` into the directory (made if missing) as `name`, marked as set aside at `seconds`.
    func move(_ source: String, as name: String, at seconds: Int, fileSystem: FileSystem) throws(SystemError) {
        try DataDirectory.makeDirectories(path)
        try fileSystem.rename(source, path(of: name))
        let when = timespec(tv_sec: seconds, tv_nsec: Self.mark)
        _ = withUnsafePointer(to: (when, when)) {
            $0.withMemoryRebound(to: timespec.self, capacity: 2) {
                utimensat(AT_FDCWD, path(of: name), $0, AT_SYMLINK_NOFOLLOW)
            }
        }
    }

    /// When the daemon set `name` aside (seconds), or nil when it is not a regular file with its mark.
    func markedSeconds(of name: String) -> Int? {
        var info = stat()
        guard lstat(path(of: name), &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mtim.tv_nsec == Self.mark
        else { return nil }
        return Int(info.st_mtim.tv_sec)
    }

    /// Of `marked` (an item and when it was set aside), those beyond `maximum`, longest aside first, among
    /// those set aside more than `grace` before `now` (seconds) and not in `fresh`.
    static func overflow<Item: Hashable>(
        _ marked: [(item: Item, seconds: Int)], keeping fresh: Set<Item>, now: Int, order: (Item) -> String
    ) -> [Item] {
        guard marked.count > maximum else { return [] }
        let cutoff = now - Int(grace.components.seconds)
        return marked.filter { $0.seconds < cutoff && !fresh.contains($0.item) }
            .sorted { ($0.seconds, order($0.item)) < ($1.seconds, order($1.item)) }
            .prefix(marked.count - maximum).map(\.item)
    }

    /// The log and `status` of a sweep into the directory: `topic` ("voices"), `items` naming a number of them
    /// ("3 profiles of people"), how many were to move and moved, the failure if any, and `kept`, where those
    /// not moved stay. Returns the warnings (none when nothing was to move).
    public func report(
        topic: String, items: (Int) -> String, of count: Int, moved: Int, failure: String?, kept: String,
        logger: Logger
    ) -> [String] {
        var warnings: [String] = []
        if let failure {
            let warning =
                "\(topic): cannot set aside \(items(count - moved)) in no sync-up (\(failure)); "
                + "kept them in \(kept), tried again at the next start"
            logger.error(warning)
            warnings.append(warning)
        }
        guard moved > 0 else { return warnings }
        let warning =
            "\(topic): set aside \(items(moved)) in no sync-up in \(path) "
            + "(a sync-up that names them again gets them back; moving one back to \(kept) "
            + "restores it; beyond \(Self.maximum) the longest aside are deleted once they have "
            + "waited \(Self.grace.components.seconds / 86_400) days)"
        logger.warning(warning)
        return [warning] + warnings
    }

    /// Why a sweep of `count` items nothing names must keep them in place, said in the log and returned for
    /// `status`, or nil when it may set them aside: a roster not read from `sync-ups.json` whole (a fallback to
    /// `.prev`, one write behind, or an empty start) may lack what names them; a directory not the daemon's own
    /// is refused.
    public func keptInPlace(
        topic: String, items: (Int) -> String, of count: Int, rosterIsFromFile: Bool, logger: Logger
    ) -> [String]? {
        let warning: String
        if !rosterIsFromFile {
            warning =
                "\(topic): kept \(items(count)) in none of the sync-ups loaded, which did not "
                + "come from \(DataDirectory.fileName) itself: it may hold them"
        } else if let problem = problem() {
            warning = "\(topic): kept \(items(count)) in no sync-up in place: \(problem)"
        } else {
            return nil
        }
        logger.warning(warning)
        return [warning]
    }
}
