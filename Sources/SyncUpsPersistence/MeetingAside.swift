import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// The files of meetings nothing names (no sync-up, no journal, no recorded deletion: a deletion whose record
/// could not be written before the daemon stopped) set aside in `meetings/orphaned/` rather than kept for good
/// or deleted: the rules of `AsideDirectory`, as the voice profiles' (`VoiceProfileStore.setAside`).
public struct MeetingAside: Sendable {
    public let directory: DataDirectory
    let fileSystem: FileSystem

    public init(directory: DataDirectory, fileSystem: FileSystem = .live) {
        self.directory = directory
        self.fileSystem = fileSystem
    }

    public var aside: AsideDirectory {
        AsideDirectory(path: FilePath.join(directory.meetingsDirectory, "orphaned"), contents: "set-aside meetings")
    }

    /// The files a meeting leaves once saved: set aside, brought back. Its journal never is (recovery's).
    static let suffixes = [MeetingFiles.audio, MeetingFiles.callAudio, MeetingFiles.details]

    /// The names of the files of `meeting` that can be set aside.
    public static func suffixes(of meeting: Meeting.ID) -> [String] {
        suffixes.map { meeting.description + "." + $0 }
    }

    /// `<meeting-id>.<suffix>` of a saved meeting's file, or nil.
    static func meeting(named name: String) -> Meeting.ID? {
        guard let dot = name.firstIndex(of: "."), suffixes.contains(String(name[name.index(after: dot)...])) else {
            return nil
        }
        return Meeting.ID(uuidString: String(name[..<dot]))
    }

    /// The meetings with files in `meetings/` (details, audio, call audio) that `known` lacks and no journal
    /// covers, with their file names. Symbolic links are files like any other: renamed, never followed.
    public func unnamed(known: Set<Meeting.ID>) -> [Meeting.ID: [String]] {
        BlockingWork.check("listing the meetings' files")
        let names = (try? DirectoryListing.names(in: directory.meetingsDirectory)) ?? []
        var found: [Meeting.ID: [String]] = [:]
        for name in names {
            guard let meeting = Self.meeting(named: name), !known.contains(meeting) else { continue }
            found[meeting, default: []].append(name)
        }
        return found.filter { meeting, _ in
            fileSystem.identity(directory.sidecar(meeting, MeetingFiles.journal)) == nil
        }
    }

    /// The meetings with files set aside now (none when the directory is not the daemon's own).
    public func asideMeetings() -> Set<Meeting.ID> {
        Set(aside.names().compactMap(Self.meeting(named:)))
    }

    /// Moves the meetings' files aside, each marked with `now`, then deletes the files of the meetings longest
    /// aside beyond `AsideDirectory.maximum` of those set aside more than `AsideDirectory.grace` before `now`
    /// (never one set aside by this call). Every file is tried. Returns the meetings all of whose files moved,
    /// those pruned, and the first failure (its file left in place); nothing moves into a directory that is
    /// not the daemon's own (the failure says so).
    public func setAside(_ meetings: [Meeting.ID: [String]], at now: Date) -> (
        moved: Set<Meeting.ID>, pruned: [Meeting.ID], failure: SystemError?
    ) {
        BlockingWork.check("setting aside \(meetings.count) meeting(s)")
        if let problem = aside.problem() { return ([], [], SystemError(problem, Errno(rawValue: ELOOP))) }
        let seconds = Int(now.timeIntervalSince1970.rounded(.down))
        var failure: SystemError?
        var moved: Set<Meeting.ID> = []
        for (meeting, names) in meetings {
            var all = true
            for name in names {
                do {
                    try aside.move(
                        FilePath.join(directory.meetingsDirectory, name), as: name, at: seconds, fileSystem: fileSystem)
                } catch {
                    all = false
                    failure = failure ?? error
                }
            }
            if all { moved.insert(meeting) }
        }
        var marked: [Meeting.ID: Int] = [:]
        var files: [Meeting.ID: [String]] = [:]
        for name in aside.names() {
            guard let meeting = Self.meeting(named: name) else { continue }
            files[meeting, default: []].append(name)
            if let when = aside.markedSeconds(of: name) { marked[meeting] = max(marked[meeting] ?? when, when) }
        }
        let pruned = AsideDirectory.overflow(
            marked.map { ($0.key, $0.value) }, keeping: Set(meetings.keys), now: seconds, order: \.description)
        for meeting in pruned {
            for name in files[meeting] ?? [] where aside.markedSeconds(of: name) != nil {
                fileSystem.unlink(aside.path(of: name))
            }
        }
        return (moved, pruned, failure)
    }

    /// Moves the meeting's set-aside files back to `meetings/` (none over a file there: that one is the
    /// meeting's now, and the one aside stays). Returns the names moved back and the first failure.
    public func bringBack(_ meeting: Meeting.ID) -> (names: [String], failure: SystemError?) {
        BlockingWork.check("bringing back a meeting's files")
        guard aside.problem() == nil else { return ([], nil) }
        var names: [String] = []
        var failure: SystemError?
        for suffix in Self.suffixes {
            let name = meeting.description + "." + suffix
            let target = FilePath.join(directory.meetingsDirectory, name)
            guard fileSystem.identity(aside.path(of: name)) != nil,
                fileSystem.identity(target) == nil
            else { continue }
            do {
                try fileSystem.rename(aside.path(of: name), target)
                names.append(name)
            } catch {
                failure = failure ?? error
            }
        }
        return (names, failure)
    }

}
