import SyncUpsPOSIX

/// Writes one owner's files off the loop, one write at a time, and retries a failed write with the user's
/// files' back-off (`StoreRetry.backoff`: half a second, doubling to 30 s) from the owner's latest state until
/// one works. The failure is kept (`lastError`, for `status.persistence`) and logged once. Owned by the loop:
/// every method is called there, and the outcomes come back there.
///
/// The owner says what to write when asked (`prepare`, on the loop), so a retry or a write after the one
/// under way writes what is current, never a stale copy. Other blocking work on the same files (removing one)
/// goes through `run`, in order with the writes: a write under way can never bring back a file removed after it.
public final class RetryingFileWriter {
    /// One write, made on the loop from the owner's state.
    public struct Write {
        /// On the writer thread: writes, and returns why it failed (nil when it worked).
        public var run: @Sendable () -> String?
        /// On the loop, once `run` worked: what the owner now knows is on disk.
        public var written: () -> Void

        public init(run: @escaping @Sendable () -> String?, written: @escaping () -> Void = {}) {
            self.run = run
            self.written = written
        }
    }

    private let loop: EventLoop
    private let threadName: String
    /// What is written, for the log ("/…/syncups.schedule", "voice profiles").
    private let what: String
    private let logger: Logger
    /// What to write now, asked on the loop when a write starts (nil: nothing).
    public var prepare: () -> Write? = { nil }
    /// Started by the first write or job (a daemon without schedules starts no thread for them).
    private var worker: SerialWorker?
    private let outcomes: Mailbox<String?>?
    private var outcomesWatch: EventLoop.Watch?
    private var inFlight: Write?
    /// A change came while a write was under way: another write follows it.
    private var changedSince = false
    private var retryTimer: EventLoop.Timer?
    /// After `close`, work runs on the caller's thread.
    private var isClosed = false
    private var backoff = StoreRetry.backoff
    /// Why the last write failed, while writes still fail.
    public private(set) var lastError: String?
    /// Called when `lastError` comes or goes (the owner's status changes with it).
    public var onErrorChange: () -> Void = {}

    public init(loop: EventLoop, threadName: String, writing what: String, logger: Logger) {
        self.loop = loop
        self.threadName = threadName
        self.what = what
        self.logger = logger
        outcomes = try? Mailbox()
        outcomesWatch = try? outcomes?.attach(to: loop) { [unowned self] errors in
            for error in errors { finished(error) }
        }
    }

    /// Whether a write is under way or waiting for its retry.
    public var isBusy: Bool { inFlight != nil || retryTimer != nil }
    /// Whether a failed write waits for its retry (none under way).
    public var isWaitingToRetry: Bool { inFlight == nil && retryTimer != nil }

    /// The owner's state changed: written now, after the write under way, or by the retry while writes fail
    /// (which writes the latest state).
    public func changed() {
        if inFlight != nil {
            changedSince = true
        } else if retryTimer == nil {
            start()
        }
    }

    /// Runs blocking work on the writer thread after the writes and jobs queued before it.
    public func run(_ job: @escaping @Sendable () -> Void) {
        if let worker = startedWorker() { worker.run(job) } else { job() }
    }

    /// The daemon stops: cancels the retry and waits for the write under way and the jobs queued.
    public func close() {
        isClosed = true
        if let retryTimer { loop.cancel(retryTimer) }
        retryTimer = nil
        worker?.finish()
        worker = nil
        if let outcomesWatch { loop.unwatch(outcomesWatch) }
        outcomesWatch = nil
    }

    private func startedWorker() -> SerialWorker? {
        if worker == nil, !isClosed { worker = try? SerialWorker(name: threadName, capacity: 16) }
        return worker
    }

    private func start() {
        changedSince = false
        guard let write = prepare() else {
            // Nothing is left to write (what failed was forgotten or deleted): nothing fails any more.
            backoff.reset()
            if lastError != nil {
                logger.info("\(what): nothing left to write; the failed write is moot")
                lastError = nil
                onErrorChange()
            }
            return
        }
        inFlight = write
        guard let outcomes, outcomesWatch != nil, let worker = startedWorker() else {
            // No thread or no way back (out of descriptors): written here, and not retried.
            return finished(write.run(), retrying: false)
        }
        let run = write.run
        worker.run { outcomes.post(run()) }
    }

    private func finished(_ error: String?, retrying: Bool = true) {
        guard let write = inFlight else { return }
        inFlight = nil
        if let error {
            if lastError != error { logger.error(error) }
            let isNew = lastError == nil
            lastError = error
            if isNew { onErrorChange() }
            guard retrying, retryTimer == nil else { return }
            retryTimer = loop.schedule(after: backoff.next()) { [unowned self] in
                retryTimer = nil
                start()
            }
            return
        }
        write.written()
        backoff.reset()
        if lastError != nil {
            logger.info("\(what): written again")
            lastError = nil
            onErrorChange()
        }
        if changedSince { start() }
    }
}
