import Glibc
import SyncUpsPOSIX

/// The physical limit the request path is measured against: `Tests/Bench/limit.c`, a minimal C epoll server
/// answering each line with a fixed reply of the size of syncupsd's `status` reply, and the C client that
/// writes batches of B requests and then reads their B replies, against it, syncupsd and MPD alike.
enum LimitBench {
    /// The batch sizes of the table.
    static let batches = [1, 8, 64, 512, 4096]

    /// Compiles `limit.c` (next to this target's directory) with `cc -O2` into `.build/bench`; returns the
    /// executable's path.
    static func build() throws -> String {
        let here = #filePath
        let source = String(here[..<here.firstRange(of: "/syncups-bench/")!.lowerBound]) + "/limit.c"
        mkdir(".build", 0o755)
        mkdir(".build/bench", 0o755)
        let executable = ".build/bench/syncups-limit"
        let compiler = try Subprocess(
            executable: "/usr/bin/cc", arguments: ["-O2", "-Wall", "-o", executable, source], standardInput: .null,
            standardOutput: .null, standardError: .inherit)
        guard case .exited(0) = compiler.wait() else {
            throw SystemError("cc could not build \(source)", .ioError)
        }
        return executable
    }

    /// The limit server, answering every line with `replyBytes` bytes (newline included).
    static func server(_ executable: String, replyBytes: Int, wrapper: [String] = []) throws -> Daemon {
        let directory = temporaryDirectory("limit")
        return try Daemon(
            executable: executable, arguments: ["server", directory + "/socket", String(replyBytes)],
            socketPath: directory + "/socket", directory: directory, wrapper: wrapper)
    }

    /// Puts this process, every thread of it, and what it starts from now on, on `cpus` (a `taskset` list such
    /// as "1" or "0-1"); returns whether it could.
    static func pinThisProcess(to cpus: String) -> Bool {
        let output = try? CommandOutput.run("taskset", ["-a", "-p", "-c", cpus, String(getpid())])
        return output?.contains("new affinity list") ?? false
    }

    /// The size in bytes (newline included) of the reply to one `status` request.
    static func statusReplyBytes(_ socketPath: String) throws -> Int {
        let client = try LineClient(path: socketPath, dialect: .syncupsd)
        try client.send(client.statusRequest)
        return try client.readResponse()
    }

    /// Requests per second: batches of `batch` `status` requests, each batch's replies read before the next.
    static func throughput(
        _ executable: String, socketPath: String, dialect: LineClient.Dialect, batch: Int, total: Int
    ) throws -> Double {
        let output = try CommandOutput.run(
            executable,
            ["client", socketPath, dialect == .mpd ? "mpd" : "line", String(batch), String(total)])
        guard let rate = Double(output.split(separator: "\n").first ?? "") else {
            throw SystemError("the limit client failed against \(socketPath): \(output.prefix(200))", .ioError)
        }
        return rate
    }

    /// The sequential round trip's median over `count` requests (after a warm-up).
    static func roundTripP50(_ socketPath: String, dialect: LineClient.Dialect, count: Int) throws -> Double {
        let client = try LineClient(path: socketPath, dialect: dialect)
        let request = client.statusRequest
        for _ in 0..<500 { _ = try client.roundTrip(request) }
        var samples = Samples()
        for _ in 0..<count { samples.add(try client.roundTrip(request)) }
        return samples.p50
    }

    struct PingCost {
        var pingsPerSecond: Double
        /// The daemon's CPU time (user and system, all threads) per ping, in nanoseconds.
        var cpuPerPing: Double
        /// The daemon's CPU over the run's wall time, in percent of one core.
        var cpuPercent: Double
    }

    /// A client pinging in a loop for `seconds`: what the daemon spends on it.
    static func pingCost(_ daemon: Daemon, seconds: Double) throws -> PingCost {
        let client = try LineClient(path: daemon.socketPath, dialect: .syncupsd)
        let request = client.pingRequest
        for _ in 0..<500 { _ = try client.roundTrip(request) }
        let before = ProcessSample(pid: daemon.pid)
        let start = MonotonicInstant.now()
        let end = start + .nanoseconds(Int64(seconds * 1e9))
        var pings = 0
        while MonotonicInstant.now() < end {
            for _ in 0..<100 { _ = try client.roundTrip(request) }
            pings += 100
        }
        let elapsed = (MonotonicInstant.now() - start).seconds
        let cpu = ProcessSample(pid: daemon.pid).cpuSeconds - before.cpuSeconds
        return PingCost(
            pingsPerSecond: Double(pings) / elapsed, cpuPerPing: cpu * 1e9 / Double(pings),
            cpuPercent: cpu / elapsed * 100)
    }
}
