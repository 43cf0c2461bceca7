import Glibc
import SyncUpsBus
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport

/// The MPRIS player's delay: from a change asked on the socket (pause, resume) to its event reaching a
/// socket subscriber, and to `PropertiesChanged` reaching a client of a private session bus (sd-bus, on this
/// process's own event loop). The goal: the bus within 5 ms of the socket's event.
enum BusBench {
    static func run(rounds: Int) throws -> JSONValue {
        print("\n== MPRIS: a change → its socket event and its PropertiesChanged on the session bus (\(rounds) rounds)")
        let bus = try SessionBusFixture()
        let daemon = try Daemon.syncupsd(["--audio-device", "null", "--notify", "none"], environment: bus.environment)
        defer { daemon.stop() }
        let control = try LineClient(path: daemon.socketPath, dialect: .syncupsd)
        try control.send(
            Array(#"{"cmd":"syncups.create","args":{"title":"bench","duration":3600,"attendees":["A","B"]}}"#.utf8)
                + [0x0A])
        let created = try control.readResponseText()
        guard let range = created.firstRange(of: #""id":""#) else { throw SystemError("no id in \(created)", .ioError) }
        let id = String(created[range.upperBound...].prefix(36))

        let loop = try EventLoop(busyPollWindow: .zero)
        let subscriber = try UnixSocket.connect(path: daemon.socketPath)
        defer { subscriber.close() }
        try UnixSocket.sendAll(
            subscriber, Array(#"{"cmd":"subscribe","args":{"topics":["session"],"snapshot":false}}"#.utf8) + [0x0A])
        var lines = 0
        var byte: UInt8 = 0
        while lines < 2 && read(subscriber.rawValue, &byte, 1) == 1 { if byte == 0x0A { lines += 1 } }
        try subscriber.setNonBlocking()

        var socketAt: MonotonicInstant?
        var busAt: MonotonicInstant?
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        _ = try loop.watch(subscriber, for: .readable) { _ in
            while true {
                let count = buffer.withUnsafeMutableBytes { read(subscriber.rawValue, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                let text = String(decoding: buffer[0..<count], as: UTF8.self)
                if text.contains("session.paused") || text.contains("session.resumed") {
                    socketAt = socketAt ?? loop.now()
                }
            }
        }
        let client = SessionBus(loop: loop, environment: bus.environment, logger: .discarding)
        client.onConnection.append { connection in
            connection.matchSignal(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged") { _ in
                busAt = busAt ?? loop.now()
            }
        }
        client.start()
        try control.send(
            Array(#"{"cmd":"session.start","args":{"syncup":"\#(id)","audio":false,"transcribe":false}}"#.utf8)
                + [0x0A])
        try control.readResponse()

        var toSocket = Samples()
        var toBus = Samples()
        var behind = Samples()
        var missed = 0
        for round in 0..<(rounds + 5) {
            socketAt = nil
            busAt = nil
            let command = round.isMultiple(of: 2) ? "session.pause" : "session.resume"
            let start = loop.now()
            try control.send(Array(#"{"cmd":"\#(command)"}"#.utf8) + [0x0A])
            let deadline = start + .seconds(2)
            while socketAt == nil || busAt == nil, loop.now() < deadline { loop.runOnce(timeoutMilliseconds: 100) }
            try control.readResponse()
            guard round >= 5 else { continue }  // the first rounds warm up (and wait for the bus's match)
            guard let socketAt, let busAt else {
                missed += 1
                continue
            }
            toSocket.add(socketAt - start)
            toBus.add(busAt - start)
            behind.add(busAt - socketAt)
        }
        client.close()
        print("| from the request to | p50 | p99 | max |")
        print("|---|---|---|---|")
        for (label, samples) in [
            ("the socket subscriber's event", toSocket), ("PropertiesChanged on the bus", toBus),
            ("PropertiesChanged after the socket's event", behind),
        ] {
            print(
                "| \(label) | \(microseconds(samples.p50)) | \(microseconds(samples.p99)) | \(microseconds(samples.max)) |"
            )
        }
        if missed > 0 { print("(\(missed) rounds without both within 2 s)") }
        return [
            "rounds": .int(toBus.count), "missed": .int(missed),
            "toSocketMicroseconds": ["p50": .double(toSocket.p50 / 1000), "p99": .double(toSocket.p99 / 1000)],
            "toBusMicroseconds": ["p50": .double(toBus.p50 / 1000), "p99": .double(toBus.p99 / 1000)],
            "busAfterSocketMicroseconds": [
                "p50": .double(behind.p50 / 1000), "p99": .double(behind.p99 / 1000), "max": .double(behind.max / 1000),
            ],
        ]
    }
}
