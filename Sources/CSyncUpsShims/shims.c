#include "CSyncUpsShims.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void syncups_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = '\0';
    pthread_setname_np(pthread_self(), truncated);
}

int syncups_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, signal);
}

int syncups_become_child_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

int syncups_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

struct epoll_event *syncups_epoll_events_alloc(int count) {
    return calloc((size_t)count, sizeof(struct epoll_event));
}

uint32_t syncups_epoll_event_events(const struct epoll_event *events, int index) {
    return events[index].events;
}

uint64_t syncups_epoll_event_data(const struct epoll_event *events, int index) {
    return events[index].data.u64;
}

int syncups_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}

int syncups_accept_nonblocking(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

int syncups_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int syncups_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], const int *dups,
                  int dup_count, int new_process_group) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) return result;
    result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return result;
    }
    int highest = 2;
    for (int i = 0; i < dup_count; i++) {
        int from = dups[2 * i], to = dups[2 * i + 1];
        if (to > highest) highest = to;
        // dup2 onto itself would keep FD_CLOEXEC, and a source that an earlier pair overwrote would be
        // the wrong file: Subprocess moves every source that is also a target to a spare number first.
        posix_spawn_file_actions_adddup2(&actions, from, to);
    }
    // Nothing else reaches the child, not even a descriptor some library opened without close-on-exec
    // (ALSA's null device keeps /dev/full open) or one the daemon itself inherited.
    posix_spawn_file_actions_addclosefrom_np(&actions, highest + 1);
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGHUP);
    posix_spawnattr_setsigmask(&attributes, &empty);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (new_process_group) {
        posix_spawnattr_setpgroup(&attributes, 0);
        flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&attributes, flags);
    result = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return result;
}

// MARK: - A supervised child: its own process group, a parent-death signal, and a PID namespace if it may

/// What the child of `syncups_spawn_supervised` needs; it shares this memory with its parent until execve.
struct supervised_child {
    const char *path;
    char *const *argv;
    char *const *envp;
    const int *dups;
    int dup_count;
    int contain;
    char uid_map[32];
    char gid_map[32];
    /// Set by the child when a step failed: its errno, and whether it was entering the namespace.
    int error;
    int failed_containing;
};

static int write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t length = (ssize_t)strlen(text);
    ssize_t written = write(fd, text, (size_t)length);
    int saved = errno;
    close(fd);
    errno = saved;
    return written == length ? 0 : -1;
}

/// Runs in the child, on its own stack but in the parent's memory: only async-signal-safe calls.
static int supervised_child_main(void *argument) {
    struct supervised_child *child = argument;
    // Every handler the parent installed would run in the parent's memory: back to the default (what is
    // ignored stays ignored, as across execve, but for the four the daemon blocks or ignores).
    struct sigaction default_action;
    memset(&default_action, 0, sizeof default_action);
    default_action.sa_handler = SIG_DFL;
    for (int signal = 1; signal < NSIG; signal++) {
        struct sigaction current;
        if (sigaction(signal, NULL, &current) != 0) continue;
        int always = signal == SIGPIPE || signal == SIGTERM || signal == SIGINT || signal == SIGHUP;
        if (current.sa_handler != SIG_DFL && (current.sa_handler != SIG_IGN || always)) {
            sigaction(signal, &default_action, NULL);
        }
    }
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) goto failed;
    if (setpgid(0, 0) != 0) goto failed;
    int highest = 2;
    for (int i = 0; i < child->dup_count; i++) {
        int from = child->dups[2 * i], to = child->dups[2 * i + 1];
        if (to > highest) highest = to;
        if (dup2(from, to) < 0) goto failed;  // Subprocess never passes a source that is also a target
    }
    if (syscall(SYS_close_range, highest + 1, ~0U, 0) != 0) {
        for (int fd = highest + 1; fd < 65536; fd++) close(fd);
    }
    if (child->contain) {
        // The one mapping an unprivileged process may write for itself: its own ids. setgroups must be
        // denied first (absent before Linux 3.19). After the descriptors are closed: a daemon out of them
        // still has room here.
        if (write_text("/proc/self/setgroups", "deny") != 0 && errno != ENOENT) goto contain_failed;
        if (write_text("/proc/self/uid_map", child->uid_map) != 0) goto contain_failed;
        if (write_text("/proc/self/gid_map", child->gid_map) != 0) goto contain_failed;
    }
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, NULL);
    execve(child->path, child->argv, child->envp);
failed:
    child->error = errno;
    _exit(127);
contain_failed:
    child->error = errno;
    child->failed_containing = 1;
    _exit(127);
}

int syncups_spawn_supervised(pid_t *pid, const char *path, char *const argv[], char *const envp[], const int *dups,
                             int dup_count, int contain, int *contained) {
    struct supervised_child child;
    memset(&child, 0, sizeof child);
    child.path = path;
    child.argv = argv;
    child.envp = envp;
    child.dups = dups;
    child.dup_count = dup_count;
    snprintf(child.uid_map, sizeof child.uid_map, "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
    snprintf(child.gid_map, sizeof child.gid_map, "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
    const size_t stack_size = 64 * 1024;
    char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return errno;
    // No handler may run in the child before it has reset them: it shares this memory.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int result = 0;
    for (;;) {
        child.contain = contain;
        child.error = 0;
        child.failed_containing = 0;
        int flags = CLONE_VM | CLONE_VFORK | SIGCHLD | (contain ? CLONE_NEWUSER | CLONE_NEWPID : 0);
        pid_t started = clone(supervised_child_main, stack + stack_size, flags, &child);
        if (started < 0) {
            if (contain && (errno == EPERM || errno == EINVAL || errno == ENOSPC || errno == EUSERS)) {
                contain = 0;
                continue;
            }
            result = errno;
            break;
        }
        if (child.error != 0) {
            waitpid(started, NULL, 0);
            if (child.failed_containing) {
                contain = 0;
                continue;
            }
            result = child.error;
            break;
        }
        *pid = started;
        *contained = contain;
        break;
    }
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    munmap(stack, stack_size);
    return result;
}

static _Thread_local int loop_turn_depth;
static _Thread_local long blocking_calls_on_loop;

void syncups_loop_turn_enter(void) { loop_turn_depth++; }

void syncups_loop_turn_leave(void) { loop_turn_depth--; }

int syncups_loop_turn_depth(void) { return loop_turn_depth; }

void syncups_note_blocking_call_on_loop(void) { blocking_calls_on_loop++; }

long syncups_blocking_calls_on_loop(void) { return blocking_calls_on_loop; }
