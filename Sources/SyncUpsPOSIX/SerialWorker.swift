import Synchronization

/// One thread that runs blocking jobs in the order given, for work the event loop must not wait for
/// (joining a recorder's threads, writing and fsyncing a meeting's files). Idle, it sleeps in `read` on an
/// eventfd: no wake-ups. `run` never drops a job: with the queue full, or after `finish`, it runs on the
/// caller's thread; `tryRun` drops it instead.
public final class SerialWorker: Sendable {
    public typealias Job = @Sendable () -> Void

    private let queue: BlockingQueue<Job>
    private let thread: DedicatedThread
    /// The jobs queued and not finished yet (the one running included).
    private let unfinished = Unfinished()

    private final class Unfinished: Sendable {
        let count = Atomic<Int>(0)
    }

    public init(name: String, capacity: Int = 256) throws(SystemError) {
        let queue = try BlockingQueue<Job>(capacity: capacity)
        self.queue = queue
        thread = try DedicatedThread(name: name) {
            while let job = queue.pop() { job() }
        }
    }

    /// Queues `job` to run after the jobs queued before it.
    public func run(_ job: @escaping Job) {
        if !tryRun(job) { job() }
    }

    /// Queues `job` like `run`, but drops it when the queue is full or finished (for work that is only
    /// worth doing soon, and must never run on the caller's thread); returns whether it was queued.
    @discardableResult
    public func tryRun(_ job: @escaping Job) -> Bool {
        let unfinished = unfinished
        unfinished.count.add(1, ordering: .sequentiallyConsistent)
        let isQueued = queue.push {
            job()
            unfinished.count.subtract(1, ordering: .sequentiallyConsistent)
        }
        if !isQueued { unfinished.count.subtract(1, ordering: .sequentiallyConsistent) }
        return isQueued
    }

    /// No job is queued or running: `finish` would return at once (unless another thread queues one first).
    public var isIdle: Bool { unfinished.count.load(ordering: .sequentiallyConsistent) == 0 }

    /// Runs every queued job, then ends the thread; returns when they are done. For shutdown: what was
    /// started (a meeting's details being written) is finished before the process exits.
    public func finish() {
        queue.close()
        thread.join()  // joins once; a second `finish` returns at once
    }

    /// Ends the thread after the jobs queued, without waiting for them: for a worker whose job may never
    /// return (a device's call), which must not hold up the caller. Later jobs are refused as after `finish`.
    public func close() {
        queue.close()
    }

    deinit {
        queue.close()
    }
}
