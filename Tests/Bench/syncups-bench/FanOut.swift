import CSyncUpsShims
import Glibc
import SyncUpsPOSIX

/// Time from a change to the last of N subscribers having read its event.
enum FanOut {
    static func measure(socketPath: String, subscribers count: Int, rounds: Int) throws -> Samples {
        let control = try LineClient(path: socketPath, dialect: .syncupsd)
        try control.send(Array(#"{"cmd":"syncups.create","args":{"title":"fan-out","attendees":["A"]}}"#.utf8) + [0x0A])
        let created = try control.readResponseText()
        guard let range = created.firstRange(of: #""id":""#) else { throw SystemError("no id in \(created)", .ioError) }
        let id = String(created[range.upperBound...].prefix(36))

        var sockets: [FileDescriptor] = []
        let epoll = epoll_create1(CInt(EPOLL_CLOEXEC))
        defer {
            for fd in sockets { fd.close() }
            close(epoll)
        }
        for index in 0..<count {
            let client = try UnixSocket.connect(path: socketPath)
            let subscribe = Array(#"{"cmd":"subscribe","args":{"topics":["syncups"],"snapshot":false}}"#.utf8) + [0x0A]
            try UnixSocket.sendAll(client, subscribe)
            // Greeting and subscribe reply: two lines.
            var lines = 0
            var byte: UInt8 = 0
            while lines < 2 && read(client.rawValue, &byte, 1) == 1 { if byte == 0x0A { lines += 1 } }
            try client.setNonBlocking()
            _ = syncups_epoll_ctl(epoll, EPOLL_CTL_ADD, client.rawValue, EPOLLIN.rawValue, UInt64(index))
            sockets.append(client)
        }
        let events = syncups_epoll_events_alloc(256)!
        defer { free(events) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var samples = Samples()
        for round in 0..<(rounds + 3) {
            var received = [Bool](repeating: false, count: count)
            var done = 0
            let start = MonotonicInstant.now()
            try control.send(
                Array(#"{"cmd":"syncups.update","args":{"id":"\#(id)","title":"round \#(round)"}}"#.utf8) + [0x0A])
            while done < count {
                let ready = epoll_wait(epoll, events, 256, 10_000)
                guard ready > 0 else { throw SystemError("fan-out: subscribers stopped receiving", .ioError) }
                for slot in 0..<Int(ready) {
                    let index = Int(syncups_epoll_event_data(events, CInt(slot)))
                    // Each subscriber gets exactly one line per round; reading it whole is enough.
                    while true {
                        let n = buffer.withUnsafeMutableBytes {
                            read(sockets[index].rawValue, $0.baseAddress, $0.count)
                        }
                        if n <= 0 { break }
                        if !received[index] && buffer[0..<n].contains(0x0A) {
                            received[index] = true
                            done += 1
                        }
                    }
                }
            }
            let elapsed = MonotonicInstant.now() - start
            try control.readResponse()
            if round >= 3 { samples.add(elapsed) }  // the first rounds warm up
        }
        return samples
    }
}
