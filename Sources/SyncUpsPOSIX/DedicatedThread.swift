import CSyncUpsShims
import Glibc

/// A named OS thread for blocking C calls (`snd_pcm_readi`, `ps_process_raw`, `fsync`), kept off the event
/// loop and off Swift's small cooperative pool.
public final class DedicatedThread: Sendable {
    private let thread: pthread_t

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

    /// Waits for the thread to finish.
    public func join() {
        pthread_join(thread, nil)
    }
}
