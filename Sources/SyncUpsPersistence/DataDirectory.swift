import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// Where syncupsd keeps its data: `sync-ups.json`, its previous version, and per-meeting sidecar files.
///
/// ```
/// $XDG_DATA_HOME/syncups/          (default ~/.local/share/syncups/, or --data-dir)
///   sync-ups.json                  the SyncUps app's file, nothing added
///   sync-ups.json.prev             the version before the last write
///   sync-ups.json.corrupt-<UTC>    a file that failed to parse, moved aside, never deleted
///   meetings/<meeting-id>.wav      the meeting's audio
///   meetings/<meeting-id>.json     what the app's model has no field for (segments, flags)
///   meetings/orphaned/             files of meetings nothing named at a start, set aside (`MeetingAside`)
///   syncupsd.lock                  the pid of the daemon using the directory (it flocks the directory)
/// ```
public struct DataDirectory: Sendable, Equatable {
    public let path: String

    public init(path: String) {
        self.path = FilePath.trimmingTrailingSlashes(path)
    }

    public static let fileName = "sync-ups.json"

    public var syncUpsFile: String { FilePath.join(path, Self.fileName) }
    public var previousFile: String { syncUpsFile + ".prev" }
    public var meetingsDirectory: String { FilePath.join(path, "meetings") }
    /// Names the pid of the daemon that holds the directory locked (`LockFile`): a second one refuses to start.
    public var lockFile: String { FilePath.join(path, "syncupsd.lock") }

    /// `meetings/<meeting-id>.<suffix>`. The id is a parsed UUID, so the name cannot leave the directory.
    public func sidecar(_ meeting: Meeting.ID, _ suffix: String) -> String {
        FilePath.join(meetingsDirectory, meeting.description + "." + suffix)
    }

    /// `$XDG_DATA_HOME/syncups`, else `$HOME/.local/share/syncups`; nil when neither variable is usable.
    public static func defaultPath(environment: [String: String]) -> String? {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return FilePath.join(data, "syncups") }
        if let home = environment["HOME"], home.hasPrefix("/") { return FilePath.join(home, ".local/share/syncups") }
        return nil
    }

    /// Creates the directory alone (and missing parents), mode 0700; an existing one is left as it is.
    public func createTopLevel() throws(SystemError) {
        try Self.makeDirectories(path)
    }

    /// Creates the directory and `meetings/` (and missing parents), mode 0700.
    public func create() throws(SystemError) {
        try Self.makeDirectories(path)
        try Self.makeDirectories(meetingsDirectory)
    }

    /// Runs `write`, and once more after creating the directory and `meetings/` again if it failed for
    /// want of them (removed while the daemon ran).
    public func writingAgainIfGone(_ write: () throws(SystemError) -> Void) throws(SystemError) {
        do {
            try write()
        } catch {
            guard error.errno == .noSuchFile else { throw error }
            try create()
            try write()
        }
    }

    static func makeDirectories(_ path: String) throws(SystemError) {
        for prefix in FilePath.ancestors(of: path) {
            if mkdir(prefix, 0o700) != 0 && Errno.current != .fileExists {
                throw SystemError("mkdir(\(prefix))", .current)
            }
        }
    }

    /// Removes every file of `meeting` (its audio, segments, any journal, and the temporary files a crash
    /// between writing and renaming one of them left); missing files are fine. Returns the first removal that
    /// failed (naming the file), after trying every other: what a deletion must retry.
    @discardableResult
    public func removeSidecars(of meeting: Meeting.ID) -> SystemError? {
        removeSidecars(of: [meeting])[meeting]
    }

    /// `removeSidecars` for several meetings (a deleted sync-up's), reading the directory once: the first
    /// failure of each meeting whose files do not all go.
    public func removeSidecars(of meetings: [Meeting.ID]) -> [Meeting.ID: SystemError] {
        guard !meetings.isEmpty else { return [:] }
        BlockingWork.check("removing the files of \(meetings.count) meeting(s)")
        var failures: [Meeting.ID: SystemError] = [:]
        func remove(_ path: String, of meeting: Meeting.ID) {
            guard unlink(path) != 0, Errno.current != .noSuchFile, failures[meeting] == nil else { return }
            failures[meeting] = SystemError("unlink \(FilePath.name(of: path))", .current)
        }
        for meeting in meetings {
            for suffix in MeetingFiles.suffixes { remove(sidecar(meeting, suffix), of: meeting) }
        }
        let ids = Dictionary(meetings.map { ($0.description, $0) }, uniquingKeysWith: { first, _ in first })
        do throws(SystemError) {
            for name in try DirectoryListing.names(in: meetingsDirectory) where AtomicFile.isTemporaryName(name) {
                // `.<meeting-id>.<suffix>.tmp-<pid>-<n>`
                if let meeting = ids[String(name.dropFirst().prefix { $0 != "." })] {
                    remove(FilePath.join(meetingsDirectory, name), of: meeting)
                }
            }
        } catch {
            if error.errno != .noSuchFile {
                for meeting in meetings where failures[meeting] == nil { failures[meeting] = error }
            }
        }
        return failures
    }

    /// Removes the temporary files of `meetings/` that a crash left behind (start-up only: one daemon per
    /// directory, so none of them is being written).
    func removeStaleMeetingTemporaryFiles(fileSystem: FileSystem) {
        for name in (try? DirectoryListing.names(in: meetingsDirectory)) ?? [] where AtomicFile.isTemporaryName(name) {
            fileSystem.unlink(FilePath.join(meetingsDirectory, name))
        }
    }
}

/// The kinds of sidecar files a meeting can have.
public enum MeetingFiles {
    public static let audio = "wav"
    /// The call (`--call-audio`), in step with `audio` frame for frame: a second mono file, so each stays the
    /// crash-safe WAV `audio` is and a player or recognizer can take either side alone.
    public static let callAudio = "call.wav"
    public static let details = "json"
    /// Written while a meeting is being recorded; its presence at start-up means the daemon crashed mid-meeting.
    public static let journal = "recording.json"
    static let suffixes = [audio, callAudio, details, journal]
}
