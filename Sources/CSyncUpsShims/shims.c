#include "CSyncUpsShims.h"
#include <pthread.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
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
    for (int i = 0; i < dup_count; i++) {
        int from = dups[2 * i], to = dups[2 * i + 1];
        // dup2 onto itself would keep FD_CLOEXEC, and a source that an earlier pair overwrote would be
        // the wrong file: Subprocess moves every source that is also a target to a spare number first.
        posix_spawn_file_actions_adddup2(&actions, from, to);
    }
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
