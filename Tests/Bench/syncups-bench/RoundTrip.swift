import Glibc
import SyncUpsPOSIX
import Synchronization

/// Request round trips and throughput: one client sequential and pipelined, and 50 clients at once.
struct RoundTripResult {
    var sequentialP50: Double
    var sequentialP99: Double
    var pipelinedPerSecond: Double
    var concurrentP50: Double
    var concurrentP99: Double
    var concurrentPerSecond: Double
}

enum RoundTrip {
    static func measure(path: String, dialect: LineClient.Dialect, command: String, scale: Double) throws
        -> RoundTripResult
    {
        let client = try LineClient(path: path, dialect: dialect)
        let request = command == "ping" ? client.pingRequest : client.statusRequest
        // Warm up, then sequential.
        for _ in 0..<500 { _ = try client.roundTrip(request) }
        var sequential = Samples()
        for _ in 0..<Int(20_000 * scale) { sequential.add(try client.roundTrip(request)) }

        // Pipelined: batches of 64 requests in flight.
        let batch = Array([[UInt8]](repeating: request, count: 64).joined())
        let batches = Int(1_500 * scale)
        let start = MonotonicInstant.now()
        for _ in 0..<batches {
            try client.send(batch)
            for _ in 0..<64 { try client.readResponse() }
        }
        let pipelined = Double(batches * 64) / (MonotonicInstant.now() - start).seconds

        // 50 clients, each sequential, all at once.
        let perClient = Int(2_000 * scale)
        let latencies = SharedSamples()
        let concurrentStart = MonotonicInstant.now()
        let threads = try (0..<50).map { _ in
            try DedicatedThread(name: "bench-client") {
                guard let client = try? LineClient(path: path, dialect: dialect) else {
                    latencies.fail()
                    return
                }
                var local = Samples()
                for _ in 0..<perClient {
                    guard let time = try? client.roundTrip(request) else {
                        latencies.fail()
                        return
                    }
                    local.add(time)
                }
                latencies.add(local)
            }
        }
        for thread in threads { thread.join() }
        let elapsed = (MonotonicInstant.now() - concurrentStart).seconds
        let concurrent = latencies.all
        if latencies.failures > 0 { Console.error("warning: \(latencies.failures) concurrent clients failed\n") }
        return RoundTripResult(
            sequentialP50: sequential.p50,
            sequentialP99: sequential.p99,
            pipelinedPerSecond: pipelined,
            concurrentP50: concurrent.p50,
            concurrentP99: concurrent.p99,
            concurrentPerSecond: Double(concurrent.count) / elapsed
        )
    }
}

/// Samples gathered by several threads.
final class SharedSamples: Sendable {
    private let samples = Mutex(Samples())
    private let failureCount = Atomic(0)

    func fail() { failureCount.wrappingAdd(1, ordering: .relaxed) }
    var failures: Int { failureCount.load(ordering: .relaxed) }

    func add(_ local: Samples) {
        samples.withLock { all in for value in local.values { all.add(value) } }
    }

    var all: Samples { samples.withLock { $0 } }
}
