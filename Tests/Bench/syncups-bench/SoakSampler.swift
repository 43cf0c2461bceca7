import Glibc
import SyncUpsJSON
import SyncUpsPOSIX

/// The daemon as /proc shows it at one moment of the soak, with the daemon's own count of connections.
struct ProcessPoint: Sendable {
    /// Seconds since the load started.
    var elapsed: Double
    var residentKiB: Int
    /// Entries of /proc/PID/fd.
    var descriptors: Int
    /// Entries of /proc/PID/task.
    var threads: Int
    var cpuSeconds: Double
    /// `status`'s `connections` (the sampler's own included), nil if it did not answer.
    var connections: Int?
    /// Requests the clients had completed by then.
    var requests: Int

    init(pid: pid_t, elapsed: Double, connections: Int?, requests: Int) {
        self.elapsed = elapsed
        residentKiB = ProcessSample.statusField(pid, "VmRSS:") ?? 0
        descriptors = ((try? DirectoryListing.names(in: "/proc/\(pid)/fd")) ?? []).count
        threads = ((try? DirectoryListing.names(in: "/proc/\(pid)/task")) ?? []).count
        cpuSeconds = ProcessSample.cpuSeconds(pid)
        self.connections = connections
        self.requests = requests
    }

    var json: JSONValue {
        [
            "elapsedSeconds": .double(elapsed), "residentKiB": .int(residentKiB), "descriptors": .int(descriptors),
            "threads": .int(threads), "cpuSeconds": .double(cpuSeconds),
            "connections": connections.map(JSONValue.int) ?? .null, "requests": .int(requests),
        ]
    }
}

/// Samples the daemon every `interval` seconds from the start of the load to its end, and notes what its
/// descriptors point to at the end of the warm-up and at the end, so that a leak can be named.
enum SoakSampler {
    struct Result: Sendable {
        var points: [ProcessPoint] = []
        /// Open descriptors by what they point to, at the sample ending the warm-up and at the last one.
        var descriptorsAfterWarmUp: [String: Int] = [:]
        var descriptorsAtEnd: [String: Int] = [:]
    }

    static func sample(daemon: Daemon, run: SoakRun, seconds: Int, warmUp: Double, interval: Int) -> Result {
        var result = Result()
        var connection = try? LineConnection(path: run.socketPath)
        var tick = 0
        while true {
            let elapsed = min(tick * interval, seconds)
            sleep(until: run.start + .seconds(elapsed))
            if let termination = daemon.process.poll() {
                run.daemonEnded(termination, at: (MonotonicInstant.now() - run.start).seconds)
                break
            }
            if connection == nil { connection = try? LineConnection(path: run.socketPath) }
            var connections: Int?
            if let reply = try? connection?.request(#"{"cmd":"status"}"#) {
                connections = LineScan.integer("connections", in: reply)
            } else {
                connection = nil
            }
            let point = ProcessPoint(
                pid: daemon.pid, elapsed: Double(elapsed), connections: connections, requests: run.requestCount)
            result.points.append(point)
            if result.descriptorsAfterWarmUp.isEmpty && Double(elapsed) >= warmUp {
                result.descriptorsAfterWarmUp = descriptorTable(daemon.pid)
            }
            if elapsed >= seconds {
                result.descriptorsAtEnd = descriptorTable(daemon.pid)
                break
            }
            tick += 1
        }
        return result
    }

    /// The daemon's open descriptors counted by what they point to: a path, or a kind (`socket`,
    /// `anon_inode:[eventfd]`), with the access mode, since a leak of `/dev/null` opened for appending is
    /// not the same as one opened for reading. Ids in file names (meeting recordings) are folded together.
    static func descriptorTable(_ pid: pid_t) -> [String: Int] {
        var table: [String: Int] = [:]
        for name in (try? DirectoryListing.names(in: "/proc/\(pid)/fd")) ?? [] {
            var buffer = [CChar](repeating: 0, count: 4096)
            let count = readlink("/proc/\(pid)/fd/\(name)", &buffer, buffer.count - 1)
            guard count > 0 else { continue }
            var target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let bracket = target.firstIndex(of: "["), target.hasPrefix("socket:") || target.hasPrefix("pipe:") {
                target = String(target[..<bracket].dropLast())
            }
            target = foldingIDs(target)
            let flags = ProcessSample.octalField("/proc/\(pid)/fdinfo/\(name)", "flags:") ?? 0
            let access = ["read", "write", "read-write", "?"][flags & 0o3]
            table[target + " (" + access + ((flags & 0o2000) != 0 ? ", append" : "") + ")", default: 0] += 1
        }
        return table
    }

    /// `…/meetings/0C5E…-….wav` → `…/meetings/<id>.wav`.
    private static func foldingIDs(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        let name = Array(path[path.index(after: slash)...].utf8)
        let isID =
            name.count >= 36
            && name.prefix(36).enumerated().allSatisfy { offset, byte in
                [8, 13, 18, 23].contains(offset) ? byte == 0x2D : (0x30...0x39 ~= byte || 0x41...0x46 ~= byte)
            }
        guard isID else { return path }
        return path[...slash] + "<id>" + String(decoding: name.dropFirst(36), as: UTF8.self)
    }
}

extension ProcessSample {
    /// A field of a /proc file written in octal (`flags:` in fdinfo).
    static func octalField(_ path: String, _ name: String) -> Int? {
        guard let fd = try? FileDescriptor.open(path, O_RDONLY), let bytes = try? fd.readToEnd() else { return nil }
        fd.close()
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name) {
            return Int(line.dropFirst(name.count).trimmingPrefix(while: { $0 == " " || $0 == "\t" }), radix: 8)
        }
        return nil
    }
}
