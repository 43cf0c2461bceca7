import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import Synchronization

/// Encodes and writes `sync-ups.json` on its own thread, so a large file or a slow `fsync` never delays a
/// request or a meeting's tick. Only the sync-ups that changed since the last write are encoded again
/// (`SyncUpsFileEncoder`), into a buffer kept from one write to the next.
///
/// Jobs replace each other: if three snapshots arrive while one is being written, only the newest is
/// written next. Results go back to the event loop through a mailbox.
final class StoreWriter: Sendable {
    struct Job: Sendable {
        var generation: Int
        var syncUps: [SyncUp]
    }

    enum Result: Sendable {
        case written(generation: Int, identity: FileIdentity)
        case failed(generation: Int, error: SystemError)
        /// The file on disk was not the one last written or loaded: another program changed it.
        case conflict(generation: Int)
    }

    private struct State {
        var pending: Job?
        var isStopping = false
    }

    private let file: AtomicFile
    private let state = Mutex(State())
    private let wake: WakeSignal
    private let results: Mailbox<Result>
    private let recentWrites: RecentWrites
    /// What the loop and the writer agree is on disk; checked just before every rename.
    let disk: Mutex<DiskState>
    private let thread = Mutex<DedicatedThread?>(nil)
    /// Used by the writer thread, and after it has stopped by the final flush.
    private let encoding = Mutex(Encoding())

    init(file: AtomicFile, results: Mailbox<Result>, recentWrites: RecentWrites, disk: DiskState) throws(SystemError) {
        self.file = file
        self.results = results
        self.recentWrites = recentWrites
        self.disk = Mutex(disk)
        self.wake = try WakeSignal()
    }

    func start() throws(SystemError) {
        let thread = try DedicatedThread(name: "syncups-store") { [self] in run() }
        self.thread.withLock { $0 = thread }
    }

    /// Queues `job`, replacing any job not yet started.
    func submit(_ job: Job) {
        state.withLock { $0.pending = job }
        wake.signal()
    }

    /// Finishes the job in progress, drops any queued one, and ends the thread.
    func stop() {
        state.withLock {
            $0.isStopping = true
            $0.pending = nil
        }
        wake.signal()
        let thread = self.thread.withLock { $0.take() }
        thread?.join()
    }

    private func run() {
        while true {
            wake.wait()
            let (job, isStopping) = state.withLock { state in
                let job = state.pending
                state.pending = nil
                return (job, state.isStopping)
            }
            if isStopping { return }
            if let job { results.post(perform(job)) }
        }
    }

    /// Encodes and writes one snapshot. Also used directly (not on the thread) for the final flush.
    func perform(_ job: Job) -> Result {
        encoding.withLock { encoding in
            encoding.encoder.encode(job.syncUps, into: &encoding.output)
            return write(encoding.output, generation: job.generation)
        }
    }

    private func write(_ bytes: [UInt8], generation: Int) -> Result {
        recentWrites.remember(bytes)
        do {
            let identity = try file.write(bytes) { current in
                disk.withLock { $0.accepts(generation, replacing: current) }
            }
            disk.withLock { $0.identity = identity }
            return .written(generation: generation, identity: identity)
        } catch {
            switch error {
            case .system(let error): return .failed(generation: generation, error: error)
            case .conflict: return .conflict(generation: generation)
            }
        }
    }
}

/// The writer's encoder and its output buffer, kept from one save to the next: only changed sync-ups are
/// encoded again, and the buffer's pages are already mapped.
private struct Encoding: Sendable {
    var encoder = SyncUpsFileEncoder()
    var output: [UInt8] = []
}

/// The file on disk as the store last knew it, and the oldest snapshot still allowed to replace it.
struct DiskState: Sendable {
    /// The identity of the file last written by us or loaded; a different one on disk means an outside edit.
    var identity: FileIdentity?
    /// Snapshots older than this were overtaken by another program's edit and must not be written.
    var minimumGeneration = 0

    func accepts(_ generation: Int, replacing current: FileIdentity?) -> Bool {
        generation >= minimumGeneration && (current == nil || current == identity)
    }
}

/// Fingerprints of the last few files this process wrote, so a change notification for one of them is
/// recognised by content (not by mtime, which another program can equal).
final class RecentWrites: Sendable {
    private let fingerprints = Mutex<[ContentFingerprint]>([])

    func remember(_ bytes: [UInt8]) {
        let fingerprint = ContentFingerprint(bytes)
        fingerprints.withLock {
            $0.append(fingerprint)
            if $0.count > 8 { $0.removeFirst() }
        }
    }

    func contains(_ bytes: [UInt8]) -> Bool {
        let fingerprint = ContentFingerprint(bytes)
        return fingerprints.withLock { $0.contains(fingerprint) }
    }
}

/// The length and a 64-bit hash of a file's bytes. Four independent lanes of eight bytes each keep the
/// multiplier busy (a 100 MB file hashes in a few milliseconds). Not cryptographic: it tells our own writes
/// from other programs' edits, not from an attacker.
public struct ContentFingerprint: Hashable, Sendable {
    public var count: Int
    public var hash: UInt64

    public init(_ bytes: [UInt8]) {
        count = bytes.count
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        var lanes: (UInt64, UInt64, UInt64, UInt64) = (
            0xCBF2_9CE4_8422_2325 ^ UInt64(bytes.count), 0x8422_2325_CBF2_9CE4, 0x7F4A_7C15_9E37_79B9, 1
        )
        var tail: UInt64 = 0
        bytes.withUnsafeBytes { buffer in
            let blocks = buffer.count / 32
            for block in 0..<blocks {
                let offset = block * 32
                lanes.0 = (lanes.0 ^ buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* multiplier
                lanes.1 = (lanes.1 ^ buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)) &* multiplier
                lanes.2 = (lanes.2 ^ buffer.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)) &* multiplier
                lanes.3 = (lanes.3 ^ buffer.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self)) &* multiplier
                lanes.0 ^= lanes.0 >> 29
                lanes.1 ^= lanes.1 >> 29
                lanes.2 ^= lanes.2 >> 29
                lanes.3 ^= lanes.3 >> 29
            }
            for index in (blocks * 32)..<buffer.count {
                tail = (tail ^ UInt64(buffer[index])) &* 0x0000_0100_0000_01B3
            }
        }
        var hash = lanes.0
        for lane in [lanes.1, lanes.2, lanes.3, tail] {
            hash = (hash ^ lane) &* multiplier
            hash ^= hash >> 32
        }
        self.hash = hash
    }
}
