#include "CSyncUpsShims.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void syncups_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = '\0';
    pthread_setname_np(pthread_self(), truncated);
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
