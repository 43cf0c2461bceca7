import Glibc
import SyncUpsPOSIX

/// A subscriber to every topic that reads every event, as a status bar does, and checks that none is
/// missing: `seq` grows by one with every event the daemon publishes, so an all-topics subscriber must see
/// each number, in order, from the one after its `subscribe` reply's `seq`.
///
/// It also times the meeting's clock: the interval between consecutive `session.tick` events (from
/// `session.started` to the first tick, then tick to tick), and whether `secondsElapsed` ever skips.
enum SoakSubscriber {
    struct Result: Sendable {
        var index: Int
        var events = 0
        /// Events whose `seq` never arrived.
        var missing = 0
        /// Events that arrived with a `seq` not above the previous one.
        var outOfOrder = 0
        var ticks = 0
        var tickIntervals = Samples()
        /// Ticks whose `secondsElapsed` was not one more than the previous tick's.
        var skippedSeconds = 0
        /// Why the subscription ended before the run did, if it did.
        var failure: String?
    }

    /// Reads events until `stop` says so; `subscribed` is called once the subscription is in place.
    static func read(index: Int, socketPath: String, subscribed: () -> Void, until stop: () -> Bool) -> Result {
        var result = Result(index: index)
        let connection: LineConnection
        var expected: Int
        do {
            connection = try LineConnection(path: socketPath)
            let reply = try connection.request(#"{"id":1,"cmd":"subscribe","args":{"snapshot":false}}"#)
            guard LineScan.isSuccess(reply), let seq = LineScan.integer("seq", in: reply) else {
                throw SoakFailure("subscribe failed: \(String(decoding: reply, as: UTF8.self))")
            }
            expected = seq + 1
        } catch {
            result.failure = "\(error)"
            subscribed()
            return result
        }
        subscribed()

        var lastTick: MonotonicInstant?
        var lastElapsed: Int?
        while !stop() {
            let line: [UInt8]
            do {
                guard let read = try connection.readLine() else { continue }
                line = read
            } catch {
                result.failure = "\(error)"
                break
            }
            let now = MonotonicInstant.now()
            guard let name = LineScan.eventName(line), let seq = LineScan.integer("seq", in: line) else {
                result.failure = "not an event: \(String(decoding: line.prefix(200), as: UTF8.self))"
                break
            }
            result.events += 1
            if seq > expected { result.missing += seq - expected }
            if seq < expected { result.outOfOrder += 1 }
            expected = max(expected, seq + 1)

            switch name {
            case "session.started":
                lastTick = now
                lastElapsed = 0
            case "session.tick":
                result.ticks += 1
                if let lastTick { result.tickIntervals.add(now - lastTick) }
                let elapsed = LineScan.integer("secondsElapsed", in: line)
                if let lastElapsed, let elapsed, elapsed != lastElapsed + 1 { result.skippedSeconds += 1 }
                lastTick = now
                lastElapsed = elapsed
            case "session.ending", "session.ended", "session.paused":
                lastTick = nil
                lastElapsed = nil
            default:
                break
            }
        }
        return result
    }
}

/// The subscriber that never reads: it subscribes to everything, reads the reply, and then lets events pile
/// up. The daemon must cut it off (after `stallTimeoutSeconds` without progress, or past `maxOutputBytes`
/// unread) without the other subscribers noticing. It then connects again and stalls again.
enum StalledSubscriber {
    struct Cycle: Sendable {
        /// Seconds into the run when it subscribed.
        var subscribedAt: Double
        /// Seconds from subscribing until the daemon closed the connection; nil if the run ended first.
        var cutOffAfter: Double?
        /// Bytes the kernel held unread for it when it was cut off.
        var unreadBytes = 0
    }

    /// `POLLRDHUP`, which Glibc's module map leaves out (it needs `_GNU_SOURCE`).
    static let readHangUp: Int16 = 0x2000

    struct Result: Sendable {
        var cycles: [Cycle] = []
        var failure: String?
    }

    static func stall(socketPath: String, start: MonotonicInstant, subscribed: () -> Void, until stop: () -> Bool)
        -> Result
    {
        var result = Result()
        var hasSignalled = false
        defer { if !hasSignalled { subscribed() } }
        while !stop() {
            let connection: LineConnection
            do {
                connection = try LineConnection(path: socketPath)
                let reply = try connection.request(#"{"id":1,"cmd":"subscribe","args":{"snapshot":false}}"#)
                guard LineScan.isSuccess(reply) else {
                    throw SoakFailure("subscribe failed: \(String(decoding: reply, as: UTF8.self))")
                }
            } catch {
                result.failure = "\(error)"
                return result
            }
            let subscribedAt = MonotonicInstant.now()
            var cycle = Cycle(subscribedAt: (subscribedAt - start).seconds)
            if !hasSignalled {
                hasSignalled = true
                subscribed()
            }
            // Watch for the hang-up without reading: POLLHUP comes with the daemon's close.
            while !stop() {
                var poller = pollfd(fd: connection.fd.rawValue, events: Self.readHangUp, revents: 0)
                guard poll(&poller, 1, 100) > 0 else { continue }
                if poller.revents & (Int16(POLLHUP | POLLERR) | Self.readHangUp) != 0 {
                    cycle.cutOffAfter = (MonotonicInstant.now() - subscribedAt).seconds
                    var unread: CInt = 0
                    _ = ioctl(connection.fd.rawValue, UInt(FIONREAD), &unread)
                    cycle.unreadBytes = Int(unread)
                    break
                }
            }
            result.cycles.append(cycle)
            if cycle.cutOffAfter == nil { break }
            sleep(until: MonotonicInstant.now() + .seconds(1))
        }
        return result
    }
}
