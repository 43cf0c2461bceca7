import Glibc
import SyncUpsJSON
import SyncUpsPOSIX

/// A speech command that floods its output, while a client pings in a loop: the daemon's resident memory
/// and the ping's latency must stay flat whatever the engine writes (garbage lines, or valid finals as
/// fast as the 4 MiB/s limit lets through).
enum FloodBench {
    struct Result {
        var pings: Samples
        var startKiB: Int
        var peakKiB: Int
        var endedMilliseconds: Double
    }

    /// `engine` is the speech command; the meeting runs `seconds`, then is saved.
    static func measure(engine: String, seconds: Int) throws -> Result {
        let daemon = try Daemon.syncupsd([
            "--audio-device", "null", "--speech-engine", "command", "--speech-command", engine,
        ])
        defer { daemon.stop() }
        let client = try LineConnection(path: daemon.socketPath)
        let created = try client.request(#"{"cmd":"syncups.create","args":{"title":"Flood","attendees":["Ann"]}}"#)
        guard let id = try JSONParser().parse(created)["result"]?["id"]?.stringValue else {
            throw SoakFailure("no sync-up id")
        }
        let startKiB = ProcessSample(pid: daemon.pid).residentKiB
        let started = try client.request(#"{"cmd":"session.start","args":{"syncup":"\#(id)"}}"#)
        guard try JSONParser().parse(started)["result"]?["transcription"]?["engine"] == "command" else {
            throw SoakFailure(
                "the meeting did not start with the speech command: \(String(decoding: started, as: UTF8.self))")
        }
        var pings = Samples()
        var peakKiB = startKiB
        let end = MonotonicInstant.now() + .seconds(seconds)
        var round = 0
        while MonotonicInstant.now() < end {
            let sent = MonotonicInstant.now()
            _ = try client.request(#"{"cmd":"ping"}"#, timeout: .seconds(60))
            pings.add(MonotonicInstant.now() - sent)
            round += 1
            if round % 100 == 0 { peakKiB = max(peakKiB, ProcessSample(pid: daemon.pid).residentKiB) }
        }
        peakKiB = max(peakKiB, ProcessSample(pid: daemon.pid).residentKiB)
        let ending = MonotonicInstant.now()
        _ = try client.request(#"{"cmd":"session.end","args":{"action":"save"}}"#, timeout: .seconds(60))
        return Result(
            pings: pings, startKiB: startKiB, peakKiB: peakKiB,
            endedMilliseconds: Double((MonotonicInstant.now() - ending).nanoseconds) / 1e6)
    }

    /// The two floods: lines that are not JSON as fast as `yes` writes them, and valid 200-byte finals at
    /// 3 MB/s (under the 4 MiB/s at which an engine is stopped for flooding).
    static func engines() throws -> [(String, String)] {
        let script = temporaryDirectory("flood") + "/finals.py"
        let fd = try FileDescriptor.open(script, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        try fd.writeAll(
            Array(
                #"""
                import sys, time
                line = b'{"type":"final","text":"yesterday i finished the review and today i will deploy the service, no blockers for me, thank you all, see you tomorrow at nine","words":[]}\n'
                start, written = time.time(), 0
                while True:
                    sys.stdout.buffer.write(line * 100)
                    sys.stdout.flush()
                    written += len(line) * 100
                    time.sleep(max(0.0, written / 3e6 - (time.time() - start)))

                """#.utf8))
        fd.close()
        return [
            ("garbage lines", "yes 'this is not json' & exec cat > /dev/null"),
            ("valid finals, 3 MB/s", "python3 \(script) & exec cat > /dev/null"),
        ]
    }
}
