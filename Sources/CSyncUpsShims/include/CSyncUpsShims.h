// Linux system interfaces that Glibc's Swift module does not export (epoll, timerfd, signalfd, eventfd,
// inotify, SO_PEERCRED's struct ucred) and GNU-only calls that need _GNU_SOURCE.
#pragma once
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <signal.h>
#include <spawn.h>
#include <malloc.h>

/// Names the calling thread (visible in top, ps -L and /proc/<pid>/task/<tid>/comm); at most 15 bytes.
void syncups_set_thread_name(const char *name);

/// prctl(PR_SET_PDEATHSIG, signal): the kernel sends `signal` when the parent thread exits (prctl is variadic).
int syncups_set_parent_death_signal(int signal);

/// prctl(PR_SET_CHILD_SUBREAPER, 1): orphaned descendants are re-parented to this process, not to init.
int syncups_become_child_subreaper(void);

/// Debug builds' check that blocking work stays off the event loop (`BlockingWork`): how deep the calling
/// thread is inside an event loop's turn, and how many blocking calls it made there. Thread-local.
void syncups_loop_turn_enter(void);
void syncups_loop_turn_leave(void);
int syncups_loop_turn_depth(void);
void syncups_note_blocking_call_on_loop(void);
long syncups_blocking_calls_on_loop(void);

/// The credentials of the peer of a connected Unix socket (SO_PEERCRED); 0 on success, -1 with errno set.
int syncups_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// The epoll_event layout is packed on x86-64, which Swift cannot always import faithfully: accessors keep it right.
struct epoll_event *syncups_epoll_events_alloc(int count);
uint32_t syncups_epoll_event_events(const struct epoll_event *events, int index);
uint64_t syncups_epoll_event_data(const struct epoll_event *events, int index);
int syncups_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);

/// accept4() with SOCK_CLOEXEC | SOCK_NONBLOCK (GNU-only, so hidden from Swift's Glibc module).
int syncups_accept_nonblocking(int fd);

/// pipe2() with O_CLOEXEC; fds[0] is the read end.
int syncups_pipe_cloexec(int fds[2]);

/// posix_spawn with the child's signal mask emptied and SIGPIPE, SIGTERM, SIGINT and SIGHUP reset to their
/// defaults (the daemon blocks or ignores them, and a child must not inherit that). `dups` holds pairs
/// (from, to) to dup2 in the child; every other descriptor is close-on-exec already.
int syncups_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], const int *dups,
                  int dup_count, int new_process_group);

/// Like `syncups_spawn`, for a child that must take everything it starts with it (a speech command): it gets
/// its own process group and PR_SET_PDEATHSIG(SIGKILL) (sent when the calling *thread* ends), and, when
/// `contain` and the kernel lets this process create a user namespace, it runs as init of a PID namespace of
/// its own (in a user namespace that maps only the caller's uid and gid): when it ends, the kernel kills
/// every process left in the namespace, however it detached. `*contained` says whether it does; where user
/// namespaces are unavailable (EPERM, ENOSPC, EINVAL) it starts without one. A clone(CLONE_VM|CLONE_VFORK)
/// like posix_spawn's: returns once the child has called execve, with its error if that failed.
int syncups_spawn_supervised(pid_t *pid, const char *path, char *const argv[], char *const envp[], const int *dups,
                             int dup_count, int contain, int *contained);

/// libFuzzer's entry point for programs with their own main (only linked into `make fuzz` builds).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
