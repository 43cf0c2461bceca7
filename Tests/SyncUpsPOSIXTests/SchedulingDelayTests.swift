import SyncUpsPOSIX
import Testing

/// The capture thread reads its run-queue delay twice a chunk from one descriptor kept open: each reading is
/// the whole count again (read from the file's start), never the end of the file a second plain `read` finds.
@Suite struct SchedulingDelayTests {
    @Test func oneDescriptorReadsTheThreadsCountEveryTime() {
        let delay = SchedulingDelay()
        let readings = (0..<100).map { _ in delay.read() }
        #expect(readings.allSatisfy { $0 != nil }, "\(readings.prefix(3))")
        let values = readings.compactMap { $0 }
        #expect(values == values.sorted(), "the count went backwards")
    }
}
