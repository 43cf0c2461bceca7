import CSyncUpsShims
import Glibc

/// Notices that the process which started this one is gone, for a child that should not outlive it: a status
/// bar runs `syncupsctl watch` through `sh -c` and, when it stops, signals only that shell.
///
/// `start` asks the kernel for SIGTERM when the parent exits (`prctl(PR_SET_PDEATHSIG)`), which ends the
/// process at once, asleep or not. That signal follows the parent *thread* that forked us and is not sent
/// for a parent that died before the call; `isParentGone`, a changed `getppid()`, is the check to make at each
/// wake-up for the rest.
public struct ParentWatch: Sendable {
    /// The parent when the watch started.
    public let parent: pid_t

    /// Remembers the parent and arms the death signal; a parent that exits in between shows in `isParentGone`.
    public static func start(signal: CInt = SIGTERM) -> ParentWatch {
        let watch = ParentWatch(parent: getppid())
        _ = syncups_set_parent_death_signal(signal)
        return watch
    }

    /// True once the process has a new parent (init or a subreaper), because its own exited.
    public var isParentGone: Bool { getppid() != parent }
}
