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

    /// Queues a job that holds `worker` until the signal returned is given; returns once that job runs.
    static func hold(_ worker: SerialWorker) throws -> WakeSignal {
        let gate = try WakeSignal()
        let started = try WakeSignal()
        worker.run {
            started.signal()
            gate.wait()
        }
        started.wait()
        return gate
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
        let gate = try Self.hold(worker)
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

    /// `isIdle` is false while a job runs or waits in the queue, true once all are done; a job dropped
    /// (`tryRun` on a full or finished queue) is not counted. Shutdown joins a worker only when it is idle.
    @Test func isIdleOnlyWhenNoJobIsQueuedOrRunning() throws {
        let worker = try SerialWorker(name: "test-worker", capacity: 1)
        #expect(worker.isIdle)
        let gate = try Self.hold(worker)
        #expect(!worker.isIdle, "a job is running")
        #expect(worker.tryRun {})
        #expect(!worker.tryRun {}, "the queue holds one")
        gate.signal()
        worker.finish()
        #expect(worker.isIdle)
        #expect(!worker.tryRun {})
        #expect(worker.isIdle, "a dropped job counted as unfinished")
    }
}
