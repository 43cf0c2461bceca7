import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// tzdata's zones, read from `/usr/share/zoneinfo` (Debian's tzdata).
enum TimeZones {
    static let directory = "/usr/share/zoneinfo"

    /// The rules of zone `name`, or an `invalid_argument` that says why there are none.
    static func load(_ name: String) throws(ProtocolError) -> TimeZoneRules {
        // tzdata's links to the machine's zone: a schedule in one would move when the machine's zone does.
        guard name != "localtime", name != "posixrules" else {
            throw ProtocolError(
                .invalidArgument, "\"\(name)\" is not a zone's name: give a tzdata name such as Europe/Berlin or UTC")
        }
        let isWellFormed =
            !name.isEmpty && !name.hasPrefix("/") && !name.split(separator: "/").contains("..")
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/_-+".contains($0)) }
        guard isWellFormed, let bytes = readFile(FilePath.join(directory, name)),
            let rules = try? TimeZoneRules(name: name, tzif: bytes)
        else {
            throw ProtocolError(
                .invalidArgument, "no time zone \"\(name)\": give a tzdata name such as Europe/Berlin or UTC")
        }
        return rules
    }

    /// The machine's zone: `$TZ` when it names one, else where `/etc/localtime` links to, else UTC.
    static func systemName(environment: [String: String]) -> String {
        if let tz = environment["TZ"], !tz.isEmpty, (try? load(tz.hasPrefix(":") ? String(tz.dropFirst()) : tz)) != nil
        {
            return tz.hasPrefix(":") ? String(tz.dropFirst()) : tz
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/etc/localtime", &buffer, buffer.count - 1)
        if count > 0 {
            let target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let range = target.firstRange(of: "zoneinfo/") { return String(target[range.upperBound...]) }
        }
        return "UTC"
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let fd = try? FileDescriptor.open(path, O_RDONLY) else { return nil }
        defer { fd.close() }
        return try? fd.readToEnd()
    }
}

/// The sync-ups' stand-up schedules (`syncups.schedule` beside `sync-ups.json`, not in it): their reminders
/// and automatic starts on a wall-clock timer (`WallClockTimer`: right after a suspend, told when the clock
/// is set), decided by the pure `ReminderPlanner`. What a reminder does is `onAction`'s (the daemon shows a
/// notification; an automatic start starts the meeting).
final class Scheduler {
    private(set) var schedules: [SyncUp.ID: StandupSchedule] = [:]
    private var rules: [String: TimeZoneRules] = [:]
    private var planner = ReminderPlanner()
    private let path: String
    private let state: DaemonState
    private let logger: Logger
    private let now: () -> Int64
    private let wallClock: WallClock
    /// Entries of the file that could not be read (a hand edit), kept verbatim: written back at every save
    /// until that sync-up's schedule is set again, never dropped silently.
    private var unreadEntries: [(syncUp: String?, entry: JSONValue)] = []
    private let systemZone: String
    private var timer: WallClockTimer?
    /// Writes `syncups.schedule` on its own thread (started by the first change), retrying a failure with
    /// the latest schedules.
    private let writer: RetryingFileWriter
    private let fileSystem: FileSystem
    private let loop: EventLoop
    /// The schedules' version (bumped by each change) and the last one on disk.
    private var version = 0
    private var savedVersion = 0
    /// Whether a change is not on disk yet.
    var hasUnsavedChanges: Bool { savedVersion < version }
    /// Counts the changes of what `status` says about the schedules (for the replayed `status`).
    private(set) var generation = 0
    /// What a due reminder or automatic start does.
    var onAction: (ReminderPlanner.Action) -> Void = { _ in }

    static let fileName = "syncups.schedule"
    /// The largest file read (as the configuration file's): a larger one is moved aside, not read.
    static let maximumFileSize: Int64 = 1 << 20

    init(
        loop: EventLoop, directory: DataDirectory, state: DaemonState, logger: Logger, wallClock: WallClock,
        environment: [String: String] = [:], fileSystem: FileSystem = .live
    ) {
        self.loop = loop
        self.fileSystem = fileSystem
        self.state = state
        self.logger = logger
        self.path = FilePath.join(directory.path, Self.fileName)
        let now = { Int64(wallClock().timeIntervalSince1970.rounded(.down)) }
        self.now = now
        self.wallClock = wallClock
        self.systemZone = TimeZones.systemName(environment: environment)
        writer = RetryingFileWriter(loop: loop, threadName: "syncups-sched", writing: path, logger: logger)
        timer = try? WallClockTimer(loop: loop, now: now) { [unowned self] clockWasSet in
            if clockWasSet { logger.info("the wall clock was set: planning the stand-ups' reminders again") }
            evaluate()
        }
        writer.prepare = { [unowned self] in write() }
        writer.onErrorChange = { [unowned self] in
            generation += 1
            if let error = writer.lastError {
                state.writeFailed(.schedule, error)
            } else {
                state.writesWorked([.schedule])
            }
        }
    }

    /// Reads `syncups.schedule`; returns what could not be read (a warning each). A file over 1 MiB or not a
    /// schedule file is moved aside (`.corrupt-*`, as `sync-ups.json`); an entry that does not parse is kept
    /// verbatim in the file; the schedules of sync-ups that do not exist are dropped, with one warning, but
    /// only when `rosterIsFromFile` (the sync-ups are `sync-ups.json`'s own): after a fallback they are kept
    /// verbatim, as an unreadable entry is, since the sync-up may well exist.
    func load(rosterIsFromFile: Bool = true) -> [String] {
        // One descriptor for the size check and the read; only a missing file is "no schedules": any other
        // error (EACCES, EIO, not a regular file) sets the file aside, so the next save never overwrites it.
        let read: (identity: FileIdentity, bytes: [UInt8]?)
        do {
            read = try SyncUpStore.readIdentified(path, readsIf: { $0.size <= Self.maximumFileSize })
        } catch {
            if error.errno == .noSuchFile { return [] }
            let aside = StoreLoader.moveAside(path, fileSystem: fileSystem, at: wallClock())
            return ["cannot read \(path): \(error): not read, moved to \(aside ?? "(cannot move it)")"]
        }
        guard let bytes = read.bytes else {
            let aside = StoreLoader.moveAside(path, fileSystem: fileSystem, at: wallClock())
            return [
                "\(path) is over 1 MiB, more than a schedule file may hold: not read, moved to \(aside ?? "(cannot move it)")"
            ]
        }
        guard let file = try? JSONParser().parse(bytes), let list = file["schedules"]?.arrayValue else {
            let aside = StoreLoader.moveAside(path, fileSystem: fileSystem, at: wallClock())
            return ["\(path) is not a schedule file: not read, moved to \(aside ?? "(cannot move it)")"]
        }
        var warnings: [String] = []
        var unknown = 0
        let known = Set(state.syncUps.map(\.id))
        for entry in list {
            guard let id = entry["syncup"]?.stringValue.flatMap(SyncUp.ID.init(uuidString:)),
                let text = entry["schedule"]?.stringValue, let zone = entry["timeZone"]?.stringValue
            else {
                unreadEntries.append((entry["syncup"]?.stringValue, entry))
                warnings.append("\(path): an entry without syncup, schedule or timeZone is not used (kept in the file)")
                continue
            }
            guard known.contains(id) else {
                if !rosterIsFromFile { unreadEntries.append((id.description, entry)) }
                unknown += 1
                continue
            }
            do {
                let schedule = try StandupSchedule.parse(
                    text, timeZone: zone, reminderMinutes: Int(entry["reminderMinutes"]?.numberValue?.int64 ?? 5),
                    autoStart: entry["autoStart"] == true)
                rules[zone] = try TimeZones.load(zone)
                schedules[id] = schedule
            } catch {
                unreadEntries.append((id.description, entry))
                warnings.append("\(path): the schedule of \(id) is not used (kept in the file): \(error)")
            }
        }
        if unknown > 0 {
            warnings.append(
                rosterIsFromFile
                    ? "\(path): \(unknown) schedules of sync-ups that do not exist are dropped"
                    : "\(path): \(unknown) schedules of sync-ups not loaded are not used (kept in the file): "
                        + "the sync-ups were not loaded from \(DataDirectory.fileName) itself")
        }
        return warnings
    }

    func start() { evaluate() }

    // MARK: - Commands

    /// `schedule.set`: a new or changed schedule; bad input changes nothing.
    func set(syncUp text: String, schedule: String, timeZone: String?, reminder: Int?, autoStart: Bool?)
        throws(ProtocolError) -> JSONValue
    {
        let syncUp = state.syncUps[try state.index(of: text)]
        let old = schedules[syncUp.id]
        let zone = timeZone ?? old?.timeZone ?? systemZone
        let zoneRules = try TimeZones.load(zone)
        let parsed: StandupSchedule
        do {
            parsed = try StandupSchedule.parse(
                schedule, timeZone: zone, reminderMinutes: reminder ?? old?.reminderMinutes ?? 5,
                autoStart: autoStart ?? old?.autoStart ?? false)
        } catch {
            throw ProtocolError(.invalidArgument, error.description)
        }
        if let reason = parsed.nonexistentTime(from: now(), rules: zoneRules) {
            throw ProtocolError(.invalidArgument, reason)
        }
        rules[zone] = zoneRules
        schedules[syncUp.id] = parsed
        unreadEntries.removeAll { $0.syncUp?.uppercased() == syncUp.id.description }
        save()
        evaluate()
        return json(syncUp.id, parsed)
    }

    /// `schedule.clear`.
    func clear(syncUp text: String) throws(ProtocolError) -> JSONValue {
        let syncUp = state.syncUps[try state.index(of: text)]
        guard schedules.removeValue(forKey: syncUp.id) != nil else {
            throw ProtocolError(.notFound, "\"\(syncUp.title)\" has no schedule")
        }
        save()
        evaluate()
        return ["syncup": .string(syncUp.id.description), "cleared": true]
    }

    /// The sync-up was deleted: its schedule goes from the file too (it stayed there for good).
    func forget(_ id: SyncUp.ID) {
        let hadUnread = unreadEntries.contains { $0.syncUp?.uppercased() == id.description }
        unreadEntries.removeAll { $0.syncUp?.uppercased() == id.description }
        guard schedules.removeValue(forKey: id) != nil || hadUnread else { return }
        save()
        evaluate()
    }

    /// `schedule.list`: every schedule with its next start, soonest first.
    func list() -> JSONValue {
        let entries = schedules.compactMap { id, schedule in
            state.syncUps.contains { $0.id == id } ? (id, schedule) : nil
        }
        .sorted { (nextStart($0.0) ?? .max, $0.0) < (nextStart($1.0) ?? .max, $1.0) }
        return .array(entries.map { json($0.0, $0.1) })
    }

    private func nextStart(_ id: SyncUp.ID) -> Int64? {
        guard let schedule = schedules[id], let zone = rules[schedule.timeZone] else { return nil }
        guard let next = schedule.next(after: now(), rules: zone) else { return nil }
        // A start skipped ("Skip today") is not the next one.
        return next == planner.skipped(id) ? schedule.next(after: next, rules: zone) : next
    }

    private func json(_ id: SyncUp.ID, _ schedule: StandupSchedule) -> JSONValue {
        var object = JSONObject()
        object.append("syncup", .string(id.description))
        object.append("title", .string(state.syncUps.first { $0.id == id }?.title ?? ""))
        object.append("schedule", .string(schedule.text))
        object.append("timeZone", .string(schedule.timeZone))
        object.append("reminderMinutes", .int(schedule.reminderMinutes))
        object.append("autoStart", .bool(schedule.autoStart))
        if let next = nextStart(id) {
            object.append("next", .string(UTCTime(Date(timeIntervalSince1970: Double(next))).rfc3339))
            object.append("inSeconds", .int(Int(next - now())))
        } else {
            object.append("next", .null)
            object.append("inSeconds", .null)
        }
        return .object(object)
    }

    /// `status.next`: the soonest scheduled start, or null.
    var statusJSON: JSONValue {
        guard case .array(let all) = list(), let first = all.first, first["next"] != .null else { return .null }
        return first
    }

    // MARK: - Reminders

    /// Snooze: the reminder of `start` again in 5 minutes.
    func snooze(_ id: SyncUp.ID, start: Int64) {
        planner.snooze(id, start: start, until: now() + 300)
        evaluate()
    }

    /// Skip today: no more reminder and no automatic start for `start`.
    func skip(_ id: SyncUp.ID, start: Int64) {
        planner.skip(id, start: start)
        evaluate()
    }

    /// Performs what is due and arms the timer for what comes next.
    func evaluate() {
        var entries: [SyncUp.ID: ReminderPlanner.Entry] = [:]
        for (id, schedule) in schedules {
            guard let syncUp = state.syncUps.first(where: { $0.id == id }), let zone = rules[schedule.timeZone]
            else { continue }
            entries[id] = ReminderPlanner.Entry(schedule: schedule, rules: zone, meetingSeconds: syncUp.durationSeconds)
        }
        let (actions, wake) = planner.evaluate(now: now(), entries: entries)
        timer?.arm(at: wake)
        generation += 1
        for action in actions { onAction(action) }
    }

    private func save() {
        generation += 1
        version += 1
        writer.changed()  // failing: the retry writes the latest state
    }

    /// The current schedules' write, for the writer thread (a failure is reported in `lastError` and the log,
    /// and retried with the latest schedules until one works).
    private func write() -> RetryingFileWriter.Write {
        var list: [JSONValue] = []
        for (id, schedule) in schedules.sorted(by: { $0.key < $1.key }) {
            list.append([
                "syncup": .string(id.description), "schedule": .string(schedule.text),
                "timeZone": .string(schedule.timeZone), "reminderMinutes": .int(schedule.reminderMinutes),
                "autoStart": .bool(schedule.autoStart),
            ])
        }
        list += unreadEntries.map(\.entry)
        let bytes =
            JSONWriter(options: JSONWriter.Options(isPretty: true)).encode(
                ["version": 1, "schedules": .array(list)]) + [0x0A]
        let file = AtomicFile(path: path, fileSystem: fileSystem)
        let version = version
        return RetryingFileWriter.Write(
            run: {
                do { try file.write(bytes) } catch { return "cannot write \(file.path): \(error)" }
                return nil
            },
            written: { [unowned self] in savedVersion = max(savedVersion, version) })
    }

    /// Waits for the last write (the daemon stops).
    func close() {
        writer.close()
        timer?.arm(at: nil)
    }
}
