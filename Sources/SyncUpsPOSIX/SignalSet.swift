import CSyncUpsShims
import Glibc

/// Signals delivered as readable events on a signalfd instead of asynchronous handlers.
///
/// `block(_:)` must run on the main thread before any other thread starts, so every thread inherits the
/// mask and the signals queue up for the loop instead of interrupting some thread.
public final class SignalReader {
    public let descriptor: FileDescriptor

    /// Blocks `signals` for this thread (and the threads it will start) and opens a signalfd for them.
    public init(_ signals: [CInt]) throws(SystemError) {
        var mask = sigset_t()
        sigemptyset(&mask)
        for signal in signals { sigaddset(&mask, signal) }
        try syscall("pthread_sigmask") { pthread_sigmask(SIG_BLOCK, &mask, nil) == 0 ? 0 : -1 }
        descriptor = FileDescriptor(
            rawValue: try syscall("signalfd") { signalfd(-1, &mask, CInt(SFD_CLOEXEC) | CInt(SFD_NONBLOCK)) }
        )
    }

    deinit {
        descriptor.close()
    }

    /// The signals received since the last call, oldest first.
    public func drain() -> [CInt] {
        var received: [CInt] = []
        var info = signalfd_siginfo()
        while retryingInterrupts({ Glibc.read(descriptor.rawValue, &info, MemoryLayout<signalfd_siginfo>.size) })
            == MemoryLayout<signalfd_siginfo>.size
        {
            received.append(CInt(info.ssi_signo))
        }
        return received
    }

    /// Makes writes to a closed socket or pipe fail with `EPIPE` instead of killing the process.
    public static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Restores the default disposition and an empty mask, for a child process before `exec`.
    public static func unblockAll() {
        var mask = sigset_t()
        sigemptyset(&mask)
        pthread_sigmask(SIG_SETMASK, &mask, nil)
    }
}
