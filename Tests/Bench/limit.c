/*
 * syncups-limit: the physical limit that make bench measures syncupsd and MPD against, and the client that
 * measures all three. Built by syncups-bench with cc; not part of the daemon.
 *
 *   syncups-limit server SOCKET REPLY_BYTES
 *       A minimal epoll server on a Unix socket: a one-line greeting, then for each request line one fixed
 *       reply line of exactly REPLY_BYTES bytes (newline included). What any line server on this machine
 *       must at least spend: read the requests, find the newlines, write the replies, wait in epoll.
 *   syncups-limit client SOCKET line|mpd BATCH TOTAL
 *       Writes BATCH `status` requests, then reads their BATCH replies, until TOTAL requests are answered;
 *       prints the requests per second. `line`: one reply line per request (syncupsd, the limit server);
 *       `mpd`: reply lines up to "OK".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum { READ_SIZE = 64 * 1024, MAX_EVENTS = 64 };

static void die(const char *what) {
    perror(what);
    exit(1);
}

static struct sockaddr_un address(const char *path) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        fprintf(stderr, "socket path too long: %s\n", path);
        exit(64);
    }
    strcpy(a.sun_path, path);
    return a;
}

/* ---- server ---- */

struct client {
    int fd;
    char *out; /* unsent replies */
    size_t start, end, capacity;
    size_t partial; /* bytes of a request line read without its newline yet */
};

static const char *reply;
static size_t reply_size;

static void queue_bytes(struct client *c, const char *bytes, size_t count) {
    if (c->start == c->end) c->start = c->end = 0;
    if (c->end + count > c->capacity) {
        if (c->start > 0) {
            memmove(c->out, c->out + c->start, c->end - c->start);
            c->end -= c->start;
            c->start = 0;
        }
        while (c->end + count > c->capacity) c->capacity = c->capacity ? c->capacity * 2 : 64 * 1024;
        c->out = realloc(c->out, c->capacity);
        if (!c->out) die("realloc");
    }
    memcpy(c->out + c->end, bytes, count);
    c->end += count;
}

/* Sends what the socket takes; returns 0 once everything is sent, 1 if some waits, -1 if the client is gone. */
static int flush(struct client *c) {
    while (c->start < c->end) {
        ssize_t n = send(c->fd, c->out + c->start, c->end - c->start, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return 1;
            return -1;
        }
        c->start += (size_t)n;
    }
    return 0;
}

static void close_client(int epoll, struct client *c) {
    epoll_ctl(epoll, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->out);
    free(c);
}

static void set_interest(int epoll, struct client *c, int writable) {
    struct epoll_event event = {.events = writable ? EPOLLOUT : EPOLLIN, .data.ptr = c};
    epoll_ctl(epoll, EPOLL_CTL_MOD, c->fd, &event);
}

static int server(const char *path, size_t size) {
    if (size < 1) {
        fprintf(stderr, "REPLY_BYTES must be at least 1\n");
        return 64;
    }
    char *line = malloc(size);
    memset(line, 'x', size - 1);
    line[size - 1] = '\n';
    reply = line;
    reply_size = size;

    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listener < 0) die("socket");
    struct sockaddr_un a = address(path);
    unlink(path);
    if (bind(listener, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    if (listen(listener, 128) < 0) die("listen");
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);
    static char input[READ_SIZE];
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int count = epoll_wait(epoll, events, MAX_EVENTS, -1);
        if (count < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int i = 0; i < count; i++) {
            struct client *c = events[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    c = calloc(1, sizeof *c);
                    c->fd = fd;
                    struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &e);
                    static const char hello[] = "{\"event\":\"hello\"}\n";
                    queue_bytes(c, hello, sizeof hello - 1);
                    if (flush(c) < 0) close_client(epoll, c);
                }
                continue;
            }
            if (events[i].events & EPOLLOUT) {
                int state = flush(c);
                if (state < 0) {
                    close_client(epoll, c);
                    continue;
                }
                if (state == 0) set_interest(epoll, c, 0);
                continue;
            }
            ssize_t n = read(c->fd, input, sizeof input);
            if (n <= 0) {
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                close_client(epoll, c);
                continue;
            }
            for (char *p = input, *end = input + n; (p = memchr(p, '\n', (size_t)(end - p))); p++) {
                queue_bytes(c, reply, reply_size);
            }
            int state = flush(c);
            if (state < 0) close_client(epoll, c);
            else if (state > 0) set_interest(epoll, c, 1);
        }
    }
}

/* ---- client ---- */

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int client(const char *path, int is_mpd, long batch, long total) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    struct sockaddr_un a = address(path);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    const char *request = is_mpd ? "status\n" : "{\"cmd\":\"status\"}\n";
    size_t request_size = strlen(request);
    char *requests = malloc(request_size * (size_t)batch);
    for (long i = 0; i < batch; i++) memcpy(requests + (size_t)i * request_size, request, request_size);

    enum { BUFFER = 1 << 20 };
    char *buffer = malloc(BUFFER);
    size_t used = 0; /* bytes of an incomplete line at the front of buffer */
    /* The greeting: one line. */
    for (;;) {
        ssize_t n = read(fd, buffer + used, BUFFER - used);
        if (n <= 0) die("read greeting");
        char *newline = memchr(buffer, '\n', used + (size_t)n);
        used += (size_t)n;
        if (newline) {
            size_t rest = used - (size_t)(newline + 1 - buffer);
            memmove(buffer, newline + 1, rest);
            used = rest;
            break;
        }
    }
    if (used) {
        fprintf(stderr, "unexpected bytes after the greeting\n");
        return 1;
    }
    struct pollfd pfd = {.fd = fd};
    double start = now_seconds();
    long answered = 0;
    while (answered < total) {
        long wanted = batch < total - answered ? batch : total - answered;
        size_t to_send = request_size * (size_t)wanted, sent = 0;
        long replies = 0;
        while (replies < wanted) {
            pfd.events = POLLIN | (sent < to_send ? POLLOUT : 0);
            if (poll(&pfd, 1, -1) < 0) {
                if (errno == EINTR) continue;
                die("poll");
            }
            if ((pfd.revents & POLLOUT) && sent < to_send) {
                ssize_t n = send(fd, requests + sent, to_send - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno != EAGAIN && errno != EINTR) die("send");
                if (n > 0) sent += (size_t)n;
            }
            if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t n = recv(fd, buffer + used, BUFFER - used, MSG_DONTWAIT);
                if (n == 0) {
                    fprintf(stderr, "the server closed the connection\n");
                    return 1;
                }
                if (n < 0) {
                    if (errno == EAGAIN || errno == EINTR) continue;
                    die("recv");
                }
                char *p = buffer, *end = buffer + used + n, *newline;
                while ((newline = memchr(p, '\n', (size_t)(end - p)))) {
                    if (!is_mpd || (newline - p == 2 && p[0] == 'O' && p[1] == 'K') ||
                        (newline - p >= 3 && memcmp(p, "ACK", 3) == 0))
                        replies++;
                    p = newline + 1;
                }
                used = (size_t)(end - p);
                memmove(buffer, p, used);
                if (used == BUFFER) {
                    fprintf(stderr, "a reply line over %d bytes\n", BUFFER);
                    return 1;
                }
            }
        }
        if (replies > wanted) {
            fprintf(stderr, "more replies than requests\n");
            return 1;
        }
        answered += wanted;
    }
    double elapsed = now_seconds() - start;
    printf("%.1f\n", (double)total / elapsed);
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc == 4 && strcmp(argv[1], "server") == 0) return server(argv[2], (size_t)atol(argv[3]));
    if (argc == 6 && strcmp(argv[1], "client") == 0 && (!strcmp(argv[3], "line") || !strcmp(argv[3], "mpd")))
        return client(argv[2], strcmp(argv[3], "mpd") == 0, atol(argv[4]), atol(argv[5]));
    fprintf(stderr, "usage: syncups-limit server SOCKET REPLY_BYTES\n"
                    "       syncups-limit client SOCKET line|mpd BATCH TOTAL\n");
    return 64;
}
