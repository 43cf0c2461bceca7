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
        var encode: Double
        var save: Double
        var load: Double
    }

    static func file(count: Int) -> [SyncUp] { (0..<count).map { SyncUp.realistic(index: $0) } }

    static func measure(count: Int, repeats: Int) throws -> Result {
        let syncUps = file(count: count)
        let directory = temporaryDirectory("store")
        let path = directory + "/sync-ups.json"
        var encodes: [Double] = []
        var saves: [Double] = []
        var loads: [Double] = []
        var bytes = 0
        for _ in 0..<repeats {
            // What the store's writer thread does: encode, then the atomic write with its two fsyncs.
            let start = MonotonicInstant.now()
            let encoded = SyncUpsFile.encode(syncUps)
            let encodedAt = MonotonicInstant.now()
            try AtomicFile(path: path, previousPath: path + ".prev").write(encoded)
            let saved = MonotonicInstant.now()
            bytes = encoded.count
            encodes.append(Double((encodedAt - start).nanoseconds))
            saves.append(Double((saved - start).nanoseconds))
            // What start-up does: read and decode.
            let loadStart = MonotonicInstant.now()
            let fd = try FileDescriptor.open(path, O_RDONLY)
            let read = try fd.readToEnd(sizeHint: bytes + 1)
            fd.close()
            let loaded = try SyncUpsFile.decode(read)
            loads.append(Double((MonotonicInstant.now() - loadStart).nanoseconds))
            precondition(loaded.count == count)
        }
        return Result(count: count, bytes: bytes, encode: median(encodes), save: median(saves), load: median(loads))
    }

    /// Writes a data directory holding `count` sync-ups, for start-up measurements.
    static func dataDirectory(count: Int) throws -> String {
        let directory = temporaryDirectory("data-\(count)")
        try AtomicFile(path: directory + "/sync-ups.json").write(SyncUpsFile.encode(file(count: count)))
        return directory
    }
}
