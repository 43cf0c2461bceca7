import CSyncUpsShims

/// Blocking work (reading a file, listing a directory, asking a file's length) runs on a helper thread,
/// never on the event loop's (ARCHITECTURE.md, "The owner and its threads"): one slow disk must not stop
/// every client. Debug builds check it: `EventLoop.runOnce` marks its thread while it handles a turn (and
/// `advanceTime(by:)` while it fires a manual clock's timers), and the
/// project's blocking functions call `check` first, which counts a call made there (per thread, so a test
/// that turns a loop asserts its own count stays put) and names it on standard error. Release builds
/// compile it away.
public enum BlockingWork {
    /// Notes that `what` is about to block, which must not be on a loop's thread.
    @inline(__always)
    public static func check(_ what: @autoclosure () -> String) {
        #if DEBUG
            guard syncups_loop_turn_depth() > 0 else { return }
            syncups_note_blocking_call_on_loop()
            Console.error("blocking work on the event loop's thread: \(what())\n")
        #endif
    }

    /// How many blocking calls this thread has made inside a loop's turn (always 0 in release builds).
    public static var callsOnLoopOnThisThread: Int { Int(syncups_blocking_calls_on_loop()) }

}
