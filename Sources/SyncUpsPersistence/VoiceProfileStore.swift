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
    public var asideDirectory: String { aside.path }

    public var aside: AsideDirectory {
        AsideDirectory(path: FilePath.join(directory, "orphaned"), contents: "set-aside voice profiles")
    }

    public func asidePath(of attendee: Attendee.ID) -> String {
        aside.path(of: attendee.description + ".json")
    }

    /// The most profiles kept aside once they have waited `asideGrace` (`AsideDirectory.maximum`). A profile
    /// that loaded is under `maximumBytes` (about 5 KB as the daemon writes it).
    public static let maximumAside = AsideDirectory.maximum

    /// How long a profile set aside is kept whatever their number (`AsideDirectory.grace`).
    public static let asideGrace = AsideDirectory.grace

    /// Why `voices/orphaned/` is not the daemon's own to use, or nil when it is, or is missing
    /// (`AsideDirectory.problem`).
    public func asideDirectoryProblem() -> String? { aside.problem() }

    /// The attendees whose profiles are set aside now (none when the directory is not the daemon's own).
    public func asideAttendees() -> Set<Attendee.ID> {
        Set(
            aside.names().lazy.filter { $0.hasSuffix(".json") }.compactMap {
                Attendee.ID(uuidString: String($0.dropLast(5)))
            })
    }

    /// Moves the attendees' profiles aside (their `.bad` files, unusable anyway, go), each marked with `now`,
    /// when it was set aside, then deletes the longest aside beyond `maximumAside` of those the daemon set
    /// aside more than `asideGrace` before `now` (never one set aside by this call). Every file is tried;
    /// returns the attendees whose set-aside profiles were deleted, and throws the first failure (a profile
    /// left in place) or the refusal of a directory not the daemon's own (nothing moved).
    @discardableResult
    public func setAside(_ attendees: some Sequence<Attendee.ID>, at now: Date) throws(SystemError) -> [Attendee.ID] {
        if let problem = asideDirectoryProblem() { throw SystemError(problem, Errno(rawValue: ELOOP)) }
        let seconds = Int(now.timeIntervalSince1970.rounded(.down))
        var failure: SystemError?
        let attendees = Set(attendees)
        for attendee in attendees {
            fileSystem.unlink(path(of: attendee) + ".bad")
            do {
                try aside.move(
                    path(of: attendee), as: attendee.description + ".json", at: seconds, fileSystem: fileSystem)
            } catch  where error.errno == .noSuchFile && fileSystem.identity(path(of: attendee)) == nil {
            } catch {
                failure = failure ?? error
            }
        }
        let marked = asideAttendees().compactMap { id in
            aside.markedSeconds(of: id.description + ".json").map { (id, $0) }
        }
        let deleted = AsideDirectory.overflow(marked, keeping: attendees, now: seconds, order: \.description)
        for id in deleted { fileSystem.unlink(asidePath(of: id)) }
        if let failure { throw failure }
        return deleted
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
