import Glibc
import SyncUpsPOSIX
import Synchronization
import Testing

@Suite struct SerialWorkerTests {
    final class Record: Sendable {
        let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Jobs run in order, off the caller's thread, and `finish` returns only once the queued ones are done
    /// (at shutdown, a meeting's details being written are finished before the process exits).
    @Test func runsJobsInOrderOnItsThreadAndFinishesThemBeforeStopping() throws {
        let worker = try SerialWorker(name: "test-worker")
        let record = Record()
        let caller = pthread_self()
        let gate = try WakeSignal()
        worker.run {
            gate.wait()  // holds the queue until everything below is queued
            record.add("first, on the caller's thread: \(pthread_equal(pthread_self(), caller) != 0)")
        }
        for index in 1...100 { worker.run { record.add("\(index)") } }
        #expect(record.all.isEmpty)
        gate.signal()
        worker.finish()
        #expect(record.all == ["first, on the caller's thread: false"] + (1...100).map { "\($0)" })
        // After `finish`, work is not lost: it runs on the caller's thread.
        worker.run { record.add("after finish, on the caller's thread: \(pthread_equal(pthread_self(), caller) != 0)") }
        #expect(record.all.last == "after finish, on the caller's thread: true")
    }

    @Test func runsAJobOnTheCallersThreadRatherThanDropItWhenTheQueueIsFull() throws {
        let worker = try SerialWorker(name: "test-worker", capacity: 1)
        let record = Record()
        let gate = try WakeSignal()
        let started = try WakeSignal()
        worker.run {
            started.signal()
            gate.wait()
        }
        started.wait()
        worker.run { record.add("queued") }
        worker.run { record.add("inline") }  // the queue holds one: this one runs now
        #expect(record.all == ["inline"])
        // `tryRun` drops it instead (a cue that would play late).
        #expect(!worker.tryRun { record.add("dropped") })
        gate.signal()
        worker.finish()
        #expect(record.all == ["inline", "queued"])
        #expect(!worker.tryRun { record.add("after finish") })
        #expect(record.all == ["inline", "queued"])
    }
}
