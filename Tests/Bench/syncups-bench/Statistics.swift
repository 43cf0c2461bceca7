import SyncUpsPOSIX

/// Latencies in nanoseconds, and what a report says about them.
struct Samples {
    private(set) var values: [Int64] = []

    mutating func add(_ value: Int64) { values.append(value) }
    mutating func add(_ duration: Duration) { values.append(duration.nanoseconds) }

    func percentile(_ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
        return Double(sorted[index])
    }

    var p50: Double { percentile(0.5) }
    var p99: Double { percentile(0.99) }
    var max: Double { Double(values.max() ?? 0) }
    var count: Int { values.count }

    mutating func add(_ other: Samples) { values += other.values }
}

/// The median of a few repeated measurements.
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func microseconds(_ nanoseconds: Double) -> String { String(format1: nanoseconds / 1000) + " µs" }
func milliseconds(_ nanoseconds: Double) -> String { String(format2: nanoseconds / 1_000_000) + " ms" }

extension String {
    init(format1 value: Double) { self = String((value * 10).rounded() / 10) }
    init(format2 value: Double) { self = String((value * 100).rounded() / 100) }
}
