import CSyncUpsShims
import Glibc
import Synchronization

/// A named OS thread for blocking C calls (`snd_pcm_readi`, `ps_process_raw`, `fsync`), kept off the event
/// loop and off Swift's small cooperative pool.
///
/// Keep the value to `join()` the thread; drop it and the thread is detached, so its stack is freed when it
/// ends (an exited thread nobody joins keeps its stack forever).
public final class DedicatedThread: Sendable {
    private let thread: pthread_t
    private let isJoined = Atomic<Bool>(false)

    private final class Box {
        let name: String
        let body: () -> Void

        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Starts `body` on a new thread named `name` (at most 15 bytes are shown by `ps`). `body` is `sending`:
    /// what it captures is handed over to the new thread and no longer touched by the caller.
    public init(name: String, _ body: sending @escaping () -> Void) throws(SystemError) {
        let box = Unmanaged.passRetained(Box(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread,
            nil,
            { argument in
                let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
                syncups_set_thread_name(box.name)
                box.body()
                return nil
            },
            box
        )
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw SystemError("pthread_create(\(name))", Errno(rawValue: result))
        }
        self.thread = thread
    }

    /// Waits for the thread to finish. Only the first call joins; a later one returns at once.
    public func join() {
        guard !isJoined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pthread_join(thread, nil)
    }

    deinit {
        if !isJoined.load(ordering: .acquiring) { pthread_detach(thread) }
    }
}
