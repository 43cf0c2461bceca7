import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Synchronization
import Testing

/// The one retrying writer of the schedules and the voice profiles: a failed write is retried with the user's
/// files' back-off from the owner's latest state, and a change during a write is written after it.
@Suite struct RetryingFileWriterTests {
    /// The owner's state and what the writer thread saw of it.
    final class Owner: Sendable {
        let state = Mutex(0)
        let failing = Mutex(true)
        let attempts = Mutex<[Int]>([])
        let saved = Mutex(0)
        /// Nothing is left to write (what failed was forgotten or deleted).
        let isEmpty = Mutex(false)
    }

    /// A writer on a manual clock of an owner whose writes fail (until told otherwise), counting the changes of
    /// its error, with the write of the owner's first state (1) started.
    final class Writing {
        let loop: EventLoop
        let owner = Owner()
        let writer: RetryingFileWriter
        private(set) var errorChanges = 0

        init() throws {
            loop = try EventLoop(clock: .manual(startingAt: MonotonicInstant(nanoseconds: 1_000_000_000)))
            writer = RetryingFileWriter(
                loop: loop, threadName: "test-writer", writing: "the test file", logger: .discarding)
            writer.prepare = { [owner] in
                guard !owner.isEmpty.withLock({ $0 }) else { return nil }
                let version = owner.state.withLock { $0 }
                return RetryingFileWriter.Write(
                    run: {
                        owner.attempts.withLock { $0.append(version) }
                        return owner.failing.withLock { $0 }
                            ? "cannot write the test file: No space left on device" : nil
                    },
                    written: { owner.saved.withLock { $0 = max($0, version) } })
            }
            writer.onErrorChange = { [unowned self] in errorChanges += 1 }
            owner.state.withLock { $0 = 1 }
            writer.changed()
        }
    }

    @Test func aFailedWriteIsRetriedWithTheStoresBackOffAndTheLatestState() throws {
        let writing = try Writing()
        let (loop, owner, writer) = (writing.loop, writing.owner, writing.writer)
        defer { writer.close() }
        #expect(loop.run(until: { writer.lastError != nil }))
        #expect(writing.errorChanges == 1)
        // Two changes while failing: written by the retry, not at once, and only the latest.
        owner.state.withLock { $0 = 2 }
        writer.changed()
        owner.state.withLock { $0 = 3 }
        writer.changed()
        var backoff = StoreRetry.backoff
        for attempt in 2...4 {
            let delay = backoff.next()
            loop.advanceTime(by: delay - .milliseconds(1))
            _ = loop.runOnce(timeoutMilliseconds: 0)
            #expect(owner.attempts.withLock { $0.count } == attempt - 1, "no retry before \(delay)")
            loop.advanceTime(by: .milliseconds(1))
            #expect(
                loop.run(until: { owner.attempts.withLock { $0.count } == attempt && writer.isWaitingToRetry }),
                "a retry after \(delay)")
        }
        #expect(owner.attempts.withLock { $0 } == [1, 3, 3, 3])
        #expect(writer.lastError?.contains("No space left") == true)
        // The disk has room again: the next retry writes, the error goes, and the back-off starts over.
        owner.failing.withLock { $0 = false }
        loop.advanceTime(by: backoff.next())
        #expect(loop.run(until: { writer.lastError == nil && owner.saved.withLock { $0 } == 3 }))
        #expect(writing.errorChanges == 2)
        owner.failing.withLock { $0 = true }
        writer.changed()
        #expect(loop.run(until: { owner.attempts.withLock { $0.count } == 6 && writer.isWaitingToRetry }))
        loop.advanceTime(by: StoreRetry.initialDelay)
        #expect(loop.run(until: { owner.attempts.withLock { $0.count } == 7 }), "the back-off started over")
    }

    /// The attack's K6: a voice profile whose write failed was forgotten, so the retry found nothing to write,
    /// and `lastError` (and `status.persistence.lastError`, with `persistence.recovered` held back) stayed
    /// until a restart.
    @Test func aRetryThatFindsNothingLeftToWriteEndsTheFailure() throws {
        let writing = try Writing()
        let (loop, owner, writer) = (writing.loop, writing.owner, writing.writer)
        defer { writer.close() }
        #expect(loop.run(until: { writer.lastError != nil && writer.isWaitingToRetry }))
        owner.isEmpty.withLock { $0 = true }
        writer.changed()
        loop.advanceTime(by: StoreRetry.initialDelay)
        #expect(loop.run(until: { !writer.isBusy }))
        #expect(writer.lastError == nil)
        #expect(writing.errorChanges == 2)
        #expect(owner.attempts.withLock { $0 } == [1])
        // The next write starts with the back-off's first delay again.
        owner.isEmpty.withLock { $0 = false }
        writer.changed()
        #expect(loop.run(until: { owner.attempts.withLock { $0.count } == 2 && writer.isWaitingToRetry }))
        loop.advanceTime(by: StoreRetry.initialDelay)
        #expect(loop.run(until: { owner.attempts.withLock { $0.count } == 3 }))
    }
}
