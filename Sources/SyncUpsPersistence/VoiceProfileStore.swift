import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsVoice

/// The attendees' voice profiles, `voices/<attendee-id>.json` in the data directory (not in sync-ups.json,
/// which stays the app's). A file that cannot be used (corrupt, truncated, learned by another model version)
/// is set aside as `<name>.bad` with a warning, and the profile is relearned from nothing: never a crash,
/// never a refusal to start.
public struct VoiceProfileStore: Sendable {
    public let directory: String
    public var fileSystem: FileSystem

    public init(dataDirectory: DataDirectory, fileSystem: FileSystem = .live) {
        directory = FilePath.join(dataDirectory.path, "voices")
        self.fileSystem = fileSystem
    }

    public func path(of attendee: Attendee.ID) -> String {
        FilePath.join(directory, attendee.description + ".json")
    }

    /// What was loaded, and a warning for each file set aside.
    public struct Loaded: Sendable {
        public var profiles: [Attendee.ID: VoiceProfile] = [:]
        public var warnings: [String] = []
    }

    /// Every profile in the directory (none if it does not exist).
    public func loadAll() -> Loaded {
        var loaded = Loaded()
        for name in (try? DirectoryListing.names(in: directory)) ?? [] where name.hasSuffix(".json") {
            guard let id = Attendee.ID(uuidString: String(name.dropLast(5))) else { continue }
            switch load(id) {
            case .success(let profile?): loaded.profiles[id] = profile
            case .success(nil): break
            case .failure(let warning): loaded.warnings.append(warning.message)
            }
        }
        return loaded
    }

    public struct Warning: Error, Sendable, Equatable {
        public var message: String
    }

    /// One attendee's profile; nil if there is none. A file that cannot be used is set aside (the failure
    /// says why and where it went).
    public func load(_ attendee: Attendee.ID) -> Result<VoiceProfile?, Warning> {
        let path = path(of: attendee)
        let bytes: [UInt8]
        var size: Int64 = 0
        do {
            let (fd, info) = try FileDescriptor.openRegularFile(path)
            defer { fd.close() }
            size = Int64(info.st_size)
            bytes = size > Self.maximumBytes ? [] : try fd.readToEnd(limit: Self.maximumBytes)
        } catch {
            if error.errno == .noSuchFile { return .success(nil) }
            return .failure(Warning(message: "voice profile \(path): \(error); relearning"))
        }
        let problem: String
        if size > Self.maximumBytes {
            problem = "too large (\(size) bytes; a profile is a few kilobytes)"
        } else {
            do { return .success(try VoiceProfileFile.decode(bytes)) } catch { problem = error.description }
        }
        let aside = path + ".bad"
        do {
            try fileSystem.rename(path, aside)
        } catch let renameError {
            return .failure(Warning(message: "voice profile \(path) is \(problem), and \(renameError); relearning"))
        }
        return .failure(Warning(message: "voice profile \(path) is \(problem): set aside as \(aside), relearning"))
    }

    /// The largest profile file read (one is about 5 KB); a larger one is set aside unread.
    static let maximumBytes: Int64 = 1 << 20

    /// Replaces the attendee's profile atomically (the directory is made if missing).
    public func save(_ profile: VoiceProfile, for attendee: Attendee.ID) throws(SystemError) {
        try DataDirectory.makeDirectories(directory)
        try AtomicFile(path: path(of: attendee), fileSystem: fileSystem).write(VoiceProfileFile.encode(profile))
    }

    /// Forgets the attendees' profiles (a forget request, a deleted attendee or sync-up), set aside ones too;
    /// missing files are fine. Every file is tried; the first failure (a profile that stays on disk) is thrown.
    public func remove(_ attendees: some Sequence<Attendee.ID>) throws(SystemError) {
        var failure: SystemError?
        let isAsideOurs = asideDirectoryProblem() == nil
        for attendee in attendees {
            for path in [path(of: attendee), path(of: attendee) + ".bad"]
                + (isAsideOurs ? [asidePath(of: attendee)] : [])
            {
                do {
                    try syscall("unlink(\(path))") { Glibc.unlink(path) }
                } catch  where error.errno == .noSuchFile {
                } catch {
                    failure = failure ?? error
                }
            }
        }
        if let failure { throw failure }
    }

    // MARK: - Set aside

    /// Where the profiles of people no sync-up names are set aside rather than deleted (`voices/orphaned/`):
    /// the roster that left them out may be missing a sync-up the user will restore. Moving a file back to
    /// `voices/` restores it, and a roster naming its person again brings it back (`bringBack`).
    public var asideDirectory: String { FilePath.join(directory, "orphaned") }

    public func asidePath(of attendee: Attendee.ID) -> String {
        FilePath.join(asideDirectory, attendee.description + ".json")
    }

    /// The most profiles kept aside once they have waited `asideGrace`: beyond it the longest aside are deleted.
    /// A profile that loaded is under `maximumBytes` (about 5 KB as the daemon writes it).
    public static let maximumAside = 100

    /// How long a profile set aside is kept whatever their number: a wrong `sync-ups.json` restored sets aside
    /// everybody it lacks at once (hundreds, in a large team), and none of them is deleted before the user has
    /// had weeks to notice (`persistence.warnings` says so) and put the right file back, which brings them all
    /// back. Setting aside is a rename, so waiting costs no disk the profiles did not already take.
    public static let asideGrace: Duration = .seconds(30 * 86_400)

    /// The nanoseconds of the modification time the daemon gives a profile it sets aside (its seconds are when):
    /// the mark of its own. Only a file so marked is counted, and ever deleted; any other file there (put by
    /// the user or another program, or a profile whose file system keeps whole seconds) is left alone.
    static let asideMark = 314_159_265

    /// Why `voices/orphaned/` is not the daemon's own to use, or nil when it is, or is missing (it is made when
    /// needed). It must be a directory of this user, not a symbolic link (never followed: what it points to is
    /// not the data directory), as the socket's directory must be (`OwnDirectory`). When it is not,
    /// nothing is set aside, counted, brought back or deleted there.
    public func asideDirectoryProblem() -> String? {
        switch OwnDirectory.problem(at: asideDirectory, owner: geteuid()) {
        case nil: nil
        case .cannotExamine(let error): "cannot examine \(asideDirectory): \(error)"
        case .unfit(let reason): "refusing \(asideDirectory) for set-aside voice profiles: \(reason)"
        }
    }

    /// The attendees whose profiles are set aside now (none when the directory is not the daemon's own).
    public func asideAttendees() -> Set<Attendee.ID> {
        guard asideDirectoryProblem() == nil else { return [] }
        let names = (try? DirectoryListing.names(in: asideDirectory)) ?? []
        return Set(
            names.lazy.filter { $0.hasSuffix(".json") }.compactMap { Attendee.ID(uuidString: String($0.dropLast(5))) })
    }

    /// Moves the attendees' profiles aside (their `.bad` files, unusable anyway, go), each marked with `now`,
    /// when it was set aside (`asideMark`), then deletes the longest aside beyond `maximumAside` of those the
    /// daemon set aside more than `asideGrace` before `now` (never one set aside by this call). Every file is
    /// tried; returns the attendees whose set-aside profiles were deleted, and throws the first failure (a
    /// profile left in place) or the refusal of a directory not the daemon's own (nothing moved).
    @discardableResult
    public func setAside(_ attendees: some Sequence<Attendee.ID>, at now: Date) throws(SystemError) -> [Attendee.ID] {
        if let problem = asideDirectoryProblem() { throw SystemError(problem, Errno(rawValue: ELOOP)) }
        let seconds = Int(now.timeIntervalSince1970.rounded(.down))
        var failure: SystemError?
        let attendees = Set(attendees)
        for attendee in attendees {
            fileSystem.unlink(path(of: attendee) + ".bad")
            do {
                try DataDirectory.makeDirectories(asideDirectory)
                try fileSystem.rename(path(of: attendee), asidePath(of: attendee))
                let when = timespec(tv_sec: seconds, tv_nsec: Self.asideMark)
                _ = withUnsafePointer(to: (when, when)) {
                    $0.withMemoryRebound(to: timespec.self, capacity: 2) {
                        utimensat(AT_FDCWD, asidePath(of: attendee), $0, AT_SYMLINK_NOFOLLOW)
                    }
                }
            } catch  where error.errno == .noSuchFile && fileSystem.identity(path(of: attendee)) == nil {
            } catch {
                failure = failure ?? error
            }
        }
        let deleted = overflow(keeping: attendees, before: seconds - Int(Self.asideGrace.components.seconds))
        for id in deleted { fileSystem.unlink(asidePath(of: id)) }
        if let failure { throw failure }
        return deleted
    }

    /// The profiles the daemon set aside (regular files with its mark) beyond `maximumAside`, longest aside
    /// first, of those set aside before `cutoff` (seconds) and not in `fresh`.
    private func overflow(keeping fresh: Set<Attendee.ID>, before cutoff: Int) -> [Attendee.ID] {
        let marked = asideAttendees().compactMap { id -> (id: Attendee.ID, seconds: Int)? in
            var info = stat()
            guard lstat(asidePath(of: id), &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                info.st_mtim.tv_nsec == Self.asideMark
            else { return nil }
            return (id, Int(info.st_mtim.tv_sec))
        }
        guard marked.count > Self.maximumAside else { return [] }
        return marked.filter { $0.seconds < cutoff && !fresh.contains($0.id) }
            .sorted { ($0.seconds, $0.id.description) < ($1.seconds, $1.id.description) }
            .prefix(marked.count - Self.maximumAside).map(\.id)
    }

    /// Moves the attendee's set-aside profile back to `voices/` and loads it: nil if none is aside, or if the
    /// attendee has a profile in place already (which is theirs now; the one aside stays).
    public func bringBack(_ attendee: Attendee.ID) -> Result<VoiceProfile?, Warning> {
        let aside = asidePath(of: attendee)
        guard asideDirectoryProblem() == nil, fileSystem.identity(aside) != nil,
            fileSystem.identity(path(of: attendee)) == nil
        else {
            return .success(nil)
        }
        do { try fileSystem.rename(aside, path(of: attendee)) } catch {
            return .failure(Warning(message: "voice profile \(aside): cannot move it back: \(error)"))
        }
        return load(attendee)
    }
}
