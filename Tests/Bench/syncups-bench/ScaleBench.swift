import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Synchronization

/// The daemon with many sync-ups: lookups by id and by prefix must stay flat from 10 to 30,000, and an
/// outside edit of a 100 MB file must not hold up anyone's `ping` (it is read and decoded off the loop).
enum ScaleBench {
    struct Lookups {
        var count: Int
        var byID: Samples
        var byPrefix: Samples
        var listPage: Samples
        /// Milliseconds from exec to the greeting with these sync-ups, median of three.
        var startToReady: Double
        /// The daemon's resident memory once the lookups are done and it has been idle for a second.
        var idleResidentKiB: Int
    }

    /// `count` small sync-ups (three attendees, no meetings) with random ids, as the daemon makes them: what
    /// a lookup searches, without the file's bulk.
    static func dataDirectory(count: Int) throws -> (String, [String]) {
        let directory = temporaryDirectory("scale-\(count)")
        let syncUps = (0..<count).map { index in
            let template = SyncUp.fixture(seed: index + 1, title: "Team \(index)")
            return SyncUp(
                id: SyncUp.ID(UUID()), attendees: template.attendees, duration: template.duration, meetings: [],
                theme: template.theme, title: template.title)
        }
        try AtomicFile(path: directory + "/sync-ups.json").write(SyncUpsFile.encode(syncUps))
        return (directory, syncUps.map(\.id.description))
    }

    static func lookups(count: Int, requests: Int) throws -> Lookups {
        let (directory, ids) = try dataDirectory(count: count)
        let startToReady = try DaemonBench.startToReady(dataDirectory: directory, repeats: 3)
        let daemon = try Daemon.syncupsd(dataDirectory: directory)
        defer { daemon.stop() }
        let connection = try LineConnection(path: daemon.socketPath)
        var result = Lookups(
            count: count, byID: Samples(), byPrefix: Samples(), listPage: Samples(), startToReady: startToReady,
            idleResidentKiB: 0)
        for round in 0..<requests {
            let id = ids[(round * 7919) % ids.count]
            var start = MonotonicInstant.now()
            _ = try connection.request(#"{"cmd":"syncups.get","args":{"id":"\#(id)"}}"#)
            result.byID.add(MonotonicInstant.now() - start)
            start = MonotonicInstant.now()
            // Random ids: eight characters are unique among 30,000 but for a one-in-ten-thousand chance.
            _ = try connection.request(#"{"cmd":"syncups.get","args":{"id":"\#(id.prefix(8).lowercased())"}}"#)
            result.byPrefix.add(MonotonicInstant.now() - start)
            if round % 10 == 0 {
                start = MonotonicInstant.now()
                // Always a whole page of 10, so that the reply is the same size at every count.
                let offset = (round * 31) % max(1, ids.count - 9)
                _ = try connection.request(#"{"cmd":"syncups.list","args":{"offset":\#(offset),"limit":10}}"#)
                result.listPage.add(MonotonicInstant.now() - start)
            }
        }
        var pause = timespec(tv_sec: 1, tv_nsec: 0)
        nanosleep(&pause, nil)
        result.idleResidentKiB = ProcessSample(pid: daemon.pid).residentKiB
        return result
    }

    struct OutsideEdit {
        var bytes: Int
        /// Pings answered while the file was replaced, read, decoded and the reload published.
        var pings: Samples
        var subscribersLeft: Int
        var subscribers: Int
        var reloadMilliseconds: Double
    }

    /// Replaces sync-ups.json with a file of about `megabytes` MB while one client pings in a loop and
    /// `subscribers` follow the sync-ups; until every subscriber has its `syncups.reloaded`.
    static func outsideEdit(megabytes: Int, subscribers count: Int) throws -> OutsideEdit {
        let daemon = try Daemon.syncupsd()
        defer { daemon.stop() }
        var subscribers: [LineConnection] = []
        for _ in 0..<count {
            let subscriber = try LineConnection(path: daemon.socketPath, receiveTimeout: .milliseconds(10))
            _ = try subscriber.request(#"{"cmd":"subscribe","args":{"topics":["syncups"],"snapshot":false}}"#)
            subscribers.append(subscriber)
        }
        // About 10 KB a sync-up (10 meetings of 1 KB transcripts).
        let syncUps = (0..<(megabytes * 100)).map { SyncUp.realistic(index: $0) }
        let bytes = SyncUpsFile.encode(syncUps)
        let staging = daemon.directory + "/edit.json"
        try AtomicFile(path: staging).write(bytes)

        // The pinger has a thread of its own, so its round trips are all it measures.
        let pinger = try LineConnection(path: daemon.socketPath)
        for _ in 0..<200 { _ = try pinger.request(#"{"cmd":"ping"}"#) }  // warm
        let isDone = Atomic(false)
        let pings = Mutex(Samples())
        let thread = try DedicatedThread(name: "bench-pinger") {
            while !isDone.load(ordering: .relaxed) {
                let sent = MonotonicInstant.now()
                guard (try? pinger.request(#"{"cmd":"ping"}"#)) != nil else { return }
                let elapsed = MonotonicInstant.now() - sent
                pings.withLock { $0.add(elapsed) }
            }
        }
        let start = MonotonicInstant.now()
        rename(staging, daemon.directory + "/data/sync-ups.json")
        var reloaded = Set<Int>()
        var closed = Set<Int>()
        while reloaded.count + closed.count < count && MonotonicInstant.now() - start < .seconds(120) {
            for (index, subscriber) in subscribers.enumerated()
            where !reloaded.contains(index) && !closed.contains(index) {
                do {
                    if let line = try subscriber.readLine(), line.starts(with: #"{"event":"syncups.reloaded""#.utf8) {
                        reloaded.insert(index)
                    }
                } catch {
                    closed.insert(index)
                }
            }
        }
        isDone.store(true, ordering: .relaxed)
        thread.join()
        let elapsed = MonotonicInstant.now() - start
        return OutsideEdit(
            bytes: bytes.count, pings: pings.withLock { $0 }, subscribersLeft: reloaded.count, subscribers: count,
            reloadMilliseconds: Double(elapsed.nanoseconds) / 1e6)
    }
}
