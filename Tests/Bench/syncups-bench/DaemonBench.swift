import Glibc
import SyncUpsPOSIX

/// The daemon as a process: start to ready, idle memory and wake-ups, the cost of a running meeting.
enum DaemonBench {
    /// Milliseconds from exec to the socket answering with its greeting, with `dataDirectory` loaded.
    static func startToReady(dataDirectory: String, repeats: Int) throws -> Double {
        var times: [Double] = []
        for _ in 0..<repeats {
            let directory = temporaryDirectory("start")
            let socket = directory + "/socket"
            let start = MonotonicInstant.now()
            let process = try Subprocess(
                executable: productsDirectory + "/syncupsd",
                arguments: [
                    "--socket", socket, "--data-dir", dataDirectory, "--no-config", "--log-level", "error",
                    "--speech-engine", "none",
                ],
                standardInput: .null,
                standardOutput: .null,
                standardError: .null
            )
            while true {
                if let client = try? LineClient(path: socket, dialect: .syncupsd) {
                    _ = client
                    break
                }
                if MonotonicInstant.now() - start > .seconds(20) { break }
            }
            times.append(Double((MonotonicInstant.now() - start).nanoseconds))
            process.send(SIGTERM)
            _ = process.wait()
        }
        return median(times)
    }

    struct Activity {
        var residentKiB: Int
        var wakeupsPerSecond: Double
        var cpuPercent: Double
    }

    /// Context switches (all threads) and CPU over `seconds` of a daemon left alone.
    static func observe(_ daemon: Daemon, seconds: Int) -> Activity {
        let before = ProcessSample(pid: daemon.pid)
        var pause = timespec(tv_sec: seconds, tv_nsec: 0)
        nanosleep(&pause, nil)
        let after = ProcessSample(pid: daemon.pid)
        return Activity(
            residentKiB: after.residentKiB,
            wakeupsPerSecond: Double(after.contextSwitches - before.contextSwitches) / Double(seconds),
            cpuPercent: (after.cpuSeconds - before.cpuSeconds) / Double(seconds) * 100
        )
    }

    /// Starts a long meeting without speech (audio from ALSA's null device) and observes the daemon.
    static func meeting(_ daemon: Daemon, seconds: Int) throws -> Activity {
        let client = try LineClient(path: daemon.socketPath, dialect: .syncupsd)
        try client.send(
            Array(#"{"cmd":"syncups.create","args":{"title":"bench","duration":3600,"attendees":["A","B","C"]}}"#.utf8)
                + [0x0A])
        let created = try client.readResponseText()
        let id = created.firstRange(of: #""id":""#).map { String(created[$0.upperBound...].prefix(36)) } ?? ""
        try client.send(Array(#"{"cmd":"session.start","args":{"syncup":"\#(id)","transcribe":false}}"#.utf8) + [0x0A])
        _ = try client.readResponseText()
        // Let the capture settle, then measure.
        var pause = timespec(tv_sec: 2, tv_nsec: 0)
        nanosleep(&pause, nil)
        let activity = observe(daemon, seconds: seconds)
        try client.send(Array(#"{"cmd":"session.end","args":{"action":"discard"}}"#.utf8) + [0x0A])
        _ = try client.readResponseText()
        return activity
    }
}
