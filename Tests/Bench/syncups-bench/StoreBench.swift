import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport

/// Saving and loading sync-ups.json of realistic size: 10 meetings of 1 KB transcripts per sync-up.
enum StoreBench {
    struct Result {
        var count: Int
        var bytes: Int
        /// Encoding every sync-up from scratch (`SyncUpsFile.encode`): what the first save after start-up does.
        var encode: Double
        /// The first save: everything encoded, into a new buffer.
        var firstSave: Double
        /// A save after one sync-up changed (a meeting added), until the new file is in place (what a killed
        /// daemon keeps): the store's steady state.
        var save: Double
        /// The same save until it is durable too (`fsync` of the file and the directory, the second step).
        var durableSave: Double
        /// Reading the file back and fingerprinting it: what the event loop does when inotify reports a file
        /// the store did not put in place itself (an outside edit, a copy). Its own versions are known by
        /// identity and not read.
        var readBack: Double
        var load: Double
    }

    static func file(count: Int) -> [SyncUp] { (0..<count).map { SyncUp.realistic(index: $0) } }

    static func measure(count: Int, repeats: Int) throws -> Result {
        var syncUps = file(count: count)
        let directory = temporaryDirectory("store")
        let path = directory + "/sync-ups.json"
        let file = VersionedFile(path: path, previousPath: path + ".prev")
        var encodes: [Double] = []
        for _ in 0..<repeats {
            let start = MonotonicInstant.now()
            let encoded = SyncUpsFile.encode(syncUps)
            encodes.append(Double((MonotonicInstant.now() - start).nanoseconds))
            precondition(!encoded.isEmpty)
        }

        // What the store's writer threads do for each snapshot: encode what changed, write it and put it in
        // place, fingerprinting each chunk as it goes (to recognise its own write when inotify reports it);
        // then fsync it and its directory.
        var encoder = SyncUpsFileEncoder()
        var saves: [Double] = []
        var durableSaves: [Double] = []
        var bytes = 0
        for round in 0...(repeats + 8) {
            if round > 0 { syncUps[(round * 7919) % count].meetings.insert(meeting(round), at: 0) }
            let start = MonotonicInstant.now()
            let pieces = encoder.encode(syncUps)
            var fingerprint = ContentFingerprint.Hasher()
            var written: ContentFingerprint?
            let version = try file.put(
                pieces: pieces,
                eachChunk: { fingerprint.combine($0) },
                replacingIf: { _, _ in
                    written = fingerprint.finalize()
                    return true
                }
            )
            saves.append(Double((MonotonicInstant.now() - start).nanoseconds))
            try file.makeDurable(version)
            durableSaves.append(Double((MonotonicInstant.now() - start).nanoseconds))
            // As the fsync thread does next: free the version that was in `.prev`.
            file.deleteRetiredVersion()
            bytes = pieces.reduce(0) { $0 + $1.count }
            precondition(written == ContentFingerprint(pieces: pieces))
        }

        var readBacks: [Double] = []
        for _ in 0..<repeats {
            let start = MonotonicInstant.now()
            let (fd, _) = try FileDescriptor.openRegularFile(path)
            let read = try fd.readToEnd(sizeHint: bytes + 1)
            fd.close()
            precondition(ContentFingerprint(read).count == bytes)
            readBacks.append(Double((MonotonicInstant.now() - start).nanoseconds))
        }

        var loads: [Double] = []
        for _ in 0..<repeats {
            // What start-up does: read and decode.
            let start = MonotonicInstant.now()
            let fd = try FileDescriptor.open(path, O_RDONLY)
            let read = try fd.readToEnd(sizeHint: bytes + 1)
            fd.close()
            let loaded = try SyncUpsFile.decode(read)
            loads.append(Double((MonotonicInstant.now() - start).nanoseconds))
            precondition(loaded == syncUps && read == SyncUpsFile.encode(syncUps))
        }
        TemporaryDirectory.removeTree(directory)
        return Result(
            count: count, bytes: bytes, encode: median(encodes), firstSave: saves[0],
            save: median(Array(saves.dropFirst())), durableSave: median(Array(durableSaves.dropFirst())),
            readBack: median(readBacks), load: median(loads))
    }

    /// A meeting as a session saves it: 1 KB of transcript.
    static func meeting(_ round: Int) -> Meeting {
        Meeting(
            id: Meeting.ID(UUID(counting: 9_000_000 + round)),
            date: Date(timeIntervalSinceReferenceDate: 900_000_000 + Double(round)),
            transcript: String(repeating: "Blob: finished the review. ", count: 38)
        )
    }

    /// Writes a data directory holding `count` sync-ups, for start-up measurements.
    static func dataDirectory(count: Int) throws -> String {
        let directory = temporaryDirectory("data-\(count)")
        try AtomicFile(path: directory + "/sync-ups.json").write(SyncUpsFile.encode(file(count: count)))
        return directory
    }
}
