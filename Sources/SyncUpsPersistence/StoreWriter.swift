import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import Synchronization

/// Encodes and writes `sync-ups.json` on its own thread, so a large file or a slow disk never delays a
/// request or a meeting's tick. Only the sync-ups that changed since the last write are encoded again
/// (`SyncUpsFileEncoder`), and the file is written from the encoded pieces, never assembled in memory.
///
/// Two threads, one per step of `VersionedFile`: `syncups-store` puts each version in place, and
/// `syncups-fsync` makes it durable. A slow `fsync` holds up neither the next version nor a killed daemon's
/// data; versions that pile up behind it are dropped unsynced, only the newest is synced.
///
/// Jobs replace each other: if three snapshots arrive while one is being written, only the newest is
/// written next. Results go back to the event loop through a mailbox.
final class StoreWriter: Sendable {
    struct Job: Sendable {
        var generation: Int
        var syncUps: [SyncUp]
        /// The people removed from each sync-up: written first, when changed, so that no `sync-ups.json`
        /// that drops someone is on disk before their id is remembered.
        var former: FormerAttendees
    }

    enum Result: Sendable {
        /// In place: a daemon killed from now on keeps it. Not yet durable.
        case written(generation: Int)
        /// Synced with its directory: it survives a power cut too.
        case durable(generation: Int)
        /// Not written; the file on disk is as it was.
        case failed(generation: Int, error: SystemError)
        /// In place, but its `fsync` failed: a power cut may lose it, so the state must be written again.
        case notDurable(generation: Int, error: SystemError)
        /// The file on disk was not the one last written or loaded: another program changed it.
        case conflict(generation: Int)
        /// What the file on disk turned out to be, after `examine` (a change notification or a conflict).
        case examined(FileExamination)
    }

    private struct State {
        var pending: Job?
        var examinationRequested = false
        var isStopping = false
    }

    private struct Placed: Sendable {
        var generation: Int
        var version: VersionedFile.Version
    }

    private struct SyncState {
        var placed: [Placed] = []
        var isStopping = false
    }

    private let file: VersionedFile
    private let state = Mutex(State())
    private let wake: WakeSignal
    private let syncState = Mutex(SyncState())
    private let syncWake: WakeSignal
    private let results: Mailbox<Result>
    /// What the loop and the writer agree is on disk; checked just before every rename and by every
    /// examination.
    let disk: Mutex<DiskState>
    private let threads = Mutex<[DedicatedThread]>([])
    /// Kept from one write to the next, so only changed sync-ups are encoded again. Used by the writer
    /// thread, and after it has stopped by the final flush.
    private let encoder = Mutex(SyncUpsFileEncoder())
    private let formerFile: FormerAttendeesFile
    /// What `former-attendees.json` holds (as loaded, then as last written).
    private let writtenFormer: Mutex<FormerAttendees>

    init(
        file: VersionedFile, formerFile: FormerAttendeesFile, former: FormerAttendees, results: Mailbox<Result>,
        disk: DiskState
    ) throws(SystemError) {
        self.file = file
        self.formerFile = formerFile
        self.writtenFormer = Mutex(former)
        self.results = results
        self.disk = Mutex(disk)
        self.wake = try WakeSignal()
        self.syncWake = try WakeSignal()
    }

    func start() throws(SystemError) {
        let writer = try DedicatedThread(name: "syncups-store") { [self] in runWriter() }
        let syncer = try DedicatedThread(name: "syncups-fsync") { [self] in runSyncer() }
        threads.withLock { $0 = [writer, syncer] }
    }

    /// Queues `job`, replacing any job not yet started.
    func submit(_ job: Job) {
        state.withLock { $0.pending = job }
        wake.signal()
    }

    /// Asks the writer thread to read and decode the file on disk (another program may have changed it) before
    /// its next write; the answer comes back as `.examined`. Reading a large file never stalls the loop.
    func examine() {
        state.withLock { $0.examinationRequested = true }
        wake.signal()
    }

    /// Finishes the job in progress, drops any queued one, makes the newest version in place durable, and
    /// ends both threads.
    func stop() {
        state.withLock {
            $0.isStopping = true
            $0.pending = nil
        }
        wake.signal()
        let threads = self.threads.withLock { threads in
            defer { threads.removeAll() }
            return threads
        }
        threads.first?.join()
        syncState.withLock { $0.isStopping = true }
        syncWake.signal()
        threads.last?.join()
    }

    private func runWriter() {
        while true {
            wake.wait()
            let (job, examines, isStopping) = state.withLock { state in
                let job = state.pending
                let examines = state.examinationRequested
                state.pending = nil
                state.examinationRequested = false
                return (job, examines, state.isStopping)
            }
            if isStopping { return }
            // First, as the file is now. A job queued meanwhile still cannot replace another program's file:
            // the identity check before its rename refuses it.
            if examines { results.post(.examined(FileExamination.run(file.path, disk: disk))) }
            guard let job else { continue }
            let (result, version) = place(job)
            results.post(result)
            if let version {
                syncState.withLock { $0.placed.append(Placed(generation: job.generation, version: version)) }
                syncWake.signal()
            }
        }
    }

    private func runSyncer() {
        while true {
            syncWake.wait()
            let (placed, isStopping) = syncState.withLock { state in
                defer { state.placed.removeAll() }
                return (state.placed, state.isStopping)
            }
            if let newest = placed.last {
                // Older versions were replaced before their turn: only the newest needs to reach the device.
                for older in placed.dropLast() { file.abandon(older.version) }
                results.post(makeDurable(newest))
            }
            if isStopping { return }
        }
    }

    /// Encodes and writes one snapshot, synchronously and both steps: the final flush, after `stop`.
    func perform(_ job: Job) -> Result {
        let (result, version) = place(job)
        guard let version else { return result }
        return makeDurable(Placed(generation: job.generation, version: version))
    }

    /// Step one: the former attendees if they changed (durably), then encode, write and put in place.
    private func place(_ job: Job) -> (Result, VersionedFile.Version?) {
        if writtenFormer.withLock({ $0 != job.former }) {
            do {
                try formerFile.write(job.former)
                writtenFormer.withLock { $0 = job.former }
            } catch {
                return (.failed(generation: job.generation, error: error), nil)
            }
        }
        let pieces = encoder.withLock { $0.encode(job.syncUps) }
        let generation = job.generation
        var fingerprint = ContentFingerprint.Hasher()
        do {
            let version = try file.put(
                pieces: pieces,
                eachChunk: { fingerprint.combine($0) },
                replacingIf: { current, _ in disk.withLock { $0.accepts(generation, replacing: current) } }
            )
            // Only now, and only this version, is ours: the change notification it causes is examined on this
            // thread, after this.
            let placed = fingerprint.finalize()
            disk.withLock {
                $0.identity = version.identity
                $0.fingerprint = placed
            }
            return (.written(generation: generation), version)
        } catch {
            switch error {
            case .system(let error): return (.failed(generation: generation, error: error), nil)
            case .conflict: return (.conflict(generation: generation), nil)
            }
        }
    }

    /// Step two: `fsync`, then free what `.prev` held before.
    private func makeDurable(_ placed: Placed) -> Result {
        do {
            try file.makeDurable(placed.version)
        } catch {
            return .notDurable(generation: placed.generation, error: error)
        }
        file.deleteRetiredVersion()
        return .durable(generation: placed.generation)
    }
}

/// What the file at the store's path is, judged off the loop: read through one descriptor (identity and
/// bytes describe the same file), never read back when it is the very file this process put in place.
///
/// Only the file in place as the store knows it is ours: the version it last renamed there (or loaded, or
/// reloaded), by identity, or a copy of that version's bytes (a `touch`, a `cp` of the same content). An
/// earlier version of ours put back (a backup restored, a `git checkout`) is another program's edit: it is
/// the state now, and the store must never write over it.
enum FileExamination: Sendable {
    /// Not there (deleted): the state in memory must be written back.
    case missing
    /// There but not readable as a regular file (its mode changed, it is a FIFO...): kept aside.
    case unreadable(String)
    /// Our own write, or the same bytes: nothing changed.
    case ours(FileIdentity)
    /// Another program's valid file: it is the state now.
    case edited(FileIdentity, [SyncUp])
    /// Another program's file that does not parse: kept aside.
    case invalid(FileIdentity, reason: String)

    static func run(_ path: String, disk: borrowing Mutex<DiskState>) -> FileExamination {
        let identity: FileIdentity
        let bytes: [UInt8]?
        do {
            (identity, bytes) = try SyncUpStore.readIdentified(
                path, readsIf: { identity in disk.withLock { $0.identity != identity } })
        } catch {
            return error.errno == .noSuchFile ? .missing : .unreadable(error.description)
        }
        guard let bytes else { return .ours(identity) }
        let fingerprint = ContentFingerprint(bytes)
        guard disk.withLock({ $0.fingerprint != fingerprint }) else { return .ours(identity) }
        do {
            let syncUps = try SyncUpsFile.decode(bytes)
            // Its content is the state from now on, so a second notification of the same edit is ours. Its
            // identity is not set here: the loop does that with the generation it overtakes, so that no
            // write queued before the edit can replace it.
            disk.withLock { $0.fingerprint = fingerprint }
            return .edited(identity, syncUps)
        } catch {
            return .invalid(identity, reason: error.description)
        }
    }
}

/// The file on disk as the store last knew it, and the oldest snapshot still allowed to replace it.
struct DiskState: Sendable {
    /// The identity of the file last written by us or loaded; a different one on disk means an outside edit.
    var identity: FileIdentity?
    /// The content of the file last written by us or reloaded: the same bytes under another identity are
    /// ours still. Nil until the store first writes or reloads.
    var fingerprint: ContentFingerprint?
    /// Snapshots older than this were overtaken by another program's edit and must not be written.
    var minimumGeneration = 0

    func accepts(_ generation: Int, replacing current: FileIdentity?) -> Bool {
        generation >= minimumGeneration && (current == nil || current == identity)
    }
}

/// The length and a 64-bit hash of a file's bytes. Four independent lanes of eight bytes each keep the
/// multiplier busy (a 100 MB file hashes in a few milliseconds). Not cryptographic: it tells our own writes
/// from other programs' edits, not from an attacker.
public struct ContentFingerprint: Hashable, Sendable {
    public var count: Int
    public var hash: UInt64

    public init(_ bytes: [UInt8]) {
        self.init(pieces: [bytes])
    }

    /// The fingerprint of the pieces' concatenation, without making it.
    public init(pieces: [[UInt8]]) {
        var hasher = Hasher()
        for piece in pieces { piece.withUnsafeBytes { hasher.combine($0) } }
        self = hasher.finalize()
    }

    /// Fingerprints bytes given in parts: the result is the fingerprint of their concatenation.
    public struct Hasher: Sendable {
        static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        private var count = 0
        private var lanes: (UInt64, UInt64, UInt64, UInt64) = (
            0xCBF2_9CE4_8422_2325, 0x8422_2325_CBF2_9CE4, 0x7F4A_7C15_9E37_79B9, 1
        )
        /// Bytes that do not yet fill a 32-byte block: the first `pendingCount` of `pending`.
        private var pending = [UInt8](repeating: 0, count: 32)
        private var pendingCount = 0

        public init() {}

        public mutating func combine(_ bytes: UnsafeRawBufferPointer) {
            count += bytes.count
            var start = 0
            if pendingCount > 0 {
                start = min(32 - pendingCount, bytes.count)
                stash(UnsafeRawBufferPointer(rebasing: bytes[0..<start]))
                guard pendingCount == 32 else { return }
                pending.withUnsafeBytes { block($0, at: 0) }
                pendingCount = 0
            }
            let blocks = (bytes.count - start) / 32
            for index in 0..<blocks { block(bytes, at: start + index * 32) }
            stash(UnsafeRawBufferPointer(rebasing: bytes[(start + blocks * 32)...]))
        }

        private mutating func stash(_ bytes: UnsafeRawBufferPointer) {
            guard !bytes.isEmpty else { return }
            pending.withUnsafeMutableBytes { buffer in
                UnsafeMutableRawBufferPointer(rebasing: buffer[pendingCount...]).copyMemory(from: bytes)
            }
            pendingCount += bytes.count
        }

        private mutating func block(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
            func mix(_ lane: inout UInt64, _ at: Int) {
                lane = (lane ^ bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)) &* Self.multiplier
                lane ^= lane >> 29
            }
            mix(&lanes.0, offset)
            mix(&lanes.1, offset + 8)
            mix(&lanes.2, offset + 16)
            mix(&lanes.3, offset + 24)
        }

        public func finalize() -> ContentFingerprint {
            var tail: UInt64 = 0
            for byte in pending[0..<pendingCount] { tail = (tail ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
            var hash = lanes.0 ^ UInt64(count)
            for lane in [lanes.1, lanes.2, lanes.3, tail] {
                hash = (hash ^ lane) &* Self.multiplier
                hash ^= hash >> 32
            }
            return ContentFingerprint(count: count, hash: hash)
        }
    }

    private init(count: Int, hash: UInt64) {
        self.count = count
        self.hash = hash
    }
}
