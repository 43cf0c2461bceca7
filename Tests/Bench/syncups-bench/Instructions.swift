import Glibc
import SyncUpsPOSIX

/// Instructions per `status` request, counted by valgrind's callgrind: unlike times, the same on every run,
/// so a change to the request path shows up even on a noisy machine. Each daemon runs twice under
/// callgrind, once answering `requests` pipelined requests and once answering none; the difference over
/// the count is the cost of one request, start-up and shut-down cancelling out.
enum Instructions {
    static let requests = 20_000

    static func perStatusRequest(_ start: ([String]) throws -> Daemon, dialect: LineClient.Dialect) throws -> Double {
        func total(requests: Int) throws -> Double {
            let output = temporaryDirectory("callgrind") + "/callgrind.out"
            let daemon = try start(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + output])
            let client = try LineClient(path: daemon.socketPath, dialect: dialect)
            let batch = Array([[UInt8]](repeating: client.statusRequest, count: 64).joined())
            for _ in 0..<(requests / 64) {
                try client.send(batch)
                for _ in 0..<64 { try client.readResponse() }
            }
            daemon.stop()
            return try totalInstructions(output)
        }
        let loaded = try total(requests: requests / 64 * 64)
        let idle = try total(requests: 0)
        return (loaded - idle) / Double(requests / 64 * 64)
    }

    /// The `totals:` (or `summary:`) line of a callgrind output file.
    static func totalInstructions(_ path: String) throws -> Double {
        let fd = try FileDescriptor.open(path, O_RDONLY)
        defer { fd.close() }
        let text = String(decoding: try fd.readToEnd(), as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("totals:") || line.hasPrefix("summary:") {
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return value }
        }
        throw SystemError("no totals in \(path)", .ioError)
    }

    static var isAvailable: Bool { access("/usr/bin/valgrind", X_OK) == 0 }
}
