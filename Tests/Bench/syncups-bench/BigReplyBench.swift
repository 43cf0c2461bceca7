import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Synchronization

/// Clients pipelining big replies (`syncups.list` pages of about 285 KB) while a meeting runs: the loop must
/// still send each second's `session.tick` on time and answer another client's `ping`. Before replies
/// yielded, four such clients delayed the ticks by up to half a second.
enum BigReplyBench {
    struct Result {
        var replyBytes: Int
        var replies: Int
        var seconds: Double
        /// How late each tick reached a subscriber, against the earliest tick's second (nanoseconds).
        var tickLateness: Samples
        var pings: Samples
    }

    /// What the client threads share with the run.
    final class Shared: Sendable {
        let isDone = Atomic(false)
        let replies = Atomic(0)
        let pings = Mutex(Samples())
    }

    /// `clients` connections each keep `depth` list requests in flight for `seconds`.
    static func measure(clients: Int, depth: Int, seconds: Int) throws -> Result {
        let directory = TemporaryDirectory("big-replies")
        // About 3 KB a sync-up in a list (its meetings as {id,date}): 100 a page.
        let syncUps = (0..<100).map { SyncUp.realistic(index: $0, meetingCount: 28, transcriptBytes: 16) }
        let data = directory.dataDirectory(holding: syncUps)
        let daemon = try Daemon.syncupsd(["--audio-device", "null"], dataDirectory: data)
        defer {
            daemon.stop()
            withExtendedLifetime(directory) {}
        }
        let list = #"{"cmd":"syncups.list","args":{"limit":100}}"#
        let control = try LineConnection(path: daemon.socketPath)
        let replyBytes = try control.request(list).count + 1
        let id = syncUps[0].id.description
        let started = try control.request(#"{"cmd":"session.start","args":{"syncup":"\#(id)"}}"#)
        guard started.prefix(48).firstRange(of: #""ok":true"#.utf8) != nil else {
            throw SoakFailure("session.start failed: \(String(decoding: started, as: UTF8.self).prefix(300))")
        }
        let subscriber = try LineConnection(path: daemon.socketPath, receiveTimeout: .milliseconds(50))
        _ = try subscriber.request(#"{"cmd":"subscribe","args":{"topics":["session"],"snapshot":false}}"#)

        let shared = Shared()
        var threads: [DedicatedThread] = []
        for index in 0..<clients {
            let connection = try LineConnection(path: daemon.socketPath)
            threads.append(
                try DedicatedThread(name: "bench-big-\(index)") {
                    do {
                        for _ in 0..<depth { try connection.send(list) }
                        while !shared.isDone.load(ordering: .relaxed) {
                            guard try connection.readLine() != nil else { continue }
                            shared.replies.add(1, ordering: .relaxed)
                            try connection.send(list)
                        }
                    } catch {}
                })
        }
        let pinger = try LineConnection(path: daemon.socketPath)
        threads.append(
            try DedicatedThread(name: "bench-pinger") {
                while !shared.isDone.load(ordering: .relaxed) {
                    let sent = MonotonicInstant.now()
                    guard (try? pinger.request(#"{"cmd":"ping"}"#, timeout: .seconds(30))) != nil else { return }
                    let elapsed = MonotonicInstant.now() - sent
                    shared.pings.withLock { $0.add(elapsed) }
                }
            })
        let start = MonotonicInstant.now()
        var arrivals: [Int64] = []
        while MonotonicInstant.now() - start < .seconds(seconds) {
            guard let line = try subscriber.readLine() else { continue }
            if LineScan.eventName(line) == "session.tick" { arrivals.append(MonotonicInstant.now().nanoseconds) }
        }
        let elapsed = MonotonicInstant.now() - start
        shared.isDone.store(true, ordering: .relaxed)
        for thread in threads { thread.join() }
        // Tick i is due one second after tick i-1's due time: against the earliest, each one's lateness.
        var lateness = Samples()
        if let first = arrivals.first {
            let offsets = arrivals.enumerated().map { $1 - first - Int64($0) * 1_000_000_000 }
            let earliest = offsets.min() ?? 0
            for offset in offsets { lateness.add(offset - earliest) }
        }
        return Result(
            replyBytes: replyBytes, replies: shared.replies.load(ordering: .relaxed),
            seconds: Double(elapsed.nanoseconds) / 1e9, tickLateness: lateness, pings: shared.pings.withLock { $0 })
    }
}
