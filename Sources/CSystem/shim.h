#ifndef BOUNCER_CSYSTEM_SHIM_H
#define BOUNCER_CSYSTEM_SHIM_H
// Linux kernel APIs that Glibc's Swift module map does not expose, plus a few static-inline
// adapters so Swift never has to spell packed structs, flag enums or sockaddr casts.
// No _GNU_SOURCE here: it changes glibc's fd_set (fds_bits vs __fds_bits), and two modules that see one struct
// defined two ways fail to build from a clean module cache (CSystem vs Dispatch's CDispatch).
#include <sys/syscall.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// CPUs in this thread's affinity mask; -1 on failure. The raw syscall (it returns the bytes of mask it wrote) because
// glibc's sched_getaffinity and CPU_COUNT need _GNU_SOURCE (see above). 1,024 CPUs at most, like glibc's cpu_set_t.
static inline int bouncer_affinity_cpu_count(void) {
    unsigned long mask[1024 / (8 * sizeof(unsigned long))];
    memset(mask, 0, sizeof mask);
    long written = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
    if (written <= 0) return -1;
    int count = 0;
    for (long i = 0; i < written / (long)sizeof(unsigned long); i++) count += __builtin_popcountl(mask[i]);
    return count;
}

// epoll_event is packed on x86_64; these adapters keep the layout question in C.
static const uint32_t bouncer_EPOLLIN = EPOLLIN;
static const uint32_t bouncer_EPOLLOUT = EPOLLOUT;
static const uint32_t bouncer_EPOLLERR = EPOLLERR;
static const uint32_t bouncer_EPOLLHUP = EPOLLHUP;
static const uint32_t bouncer_EPOLLRDHUP = EPOLLRDHUP;
static const uint32_t bouncer_EPOLLET = EPOLLET;
static const uint32_t bouncer_EPOLLEXCLUSIVE = EPOLLEXCLUSIVE;

static inline int bouncer_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int bouncer_epoll_add(int epfd, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = token;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static inline int bouncer_epoll_del(int epfd, int fd) {
    struct epoll_event ev;  // non-NULL for kernels before 2.6.9
    memset(&ev, 0, sizeof ev);
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &ev);
}

/// Opaque buffer of `count` epoll_event records; Swift reads it through the accessors below.
static inline void *bouncer_epoll_events_alloc(int count) {
    return calloc((size_t)count, sizeof(struct epoll_event));
}
static inline int bouncer_epoll_wait(int epfd, void *events, int count, int timeoutMs) {
    return epoll_wait(epfd, (struct epoll_event *)events, count, timeoutMs);
}
static inline uint32_t bouncer_epoll_event_flags(const void *events, int i) {
    return ((const struct epoll_event *)events)[i].events;
}
static inline uint64_t bouncer_epoll_event_token(const void *events, int i) {
    return ((const struct epoll_event *)events)[i].data.u64;
}

static inline int bouncer_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
static inline int bouncer_eventfd_signal(int fd) {
    uint64_t one = 1;
    return (int)write(fd, &one, sizeof one);
}
static inline void bouncer_eventfd_drain(int fd) {
    uint64_t value;
    (void)read(fd, &value, sizeof value);
}

static inline int bouncer_errno(void) { return errno; }
// Names the calling thread for the kernel (`comm`: top -H, ps -L), at most 15 bytes plus NUL (longer is cut).
// prctl, not a write to /proc/thread-self/comm: no file is opened (the unit's read-only file system checks hold).
static inline int bouncer_set_thread_name(const char *name) { return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }


/// Creates a non-blocking listening TCP socket bound to host:port (numeric IPv4/IPv6 or a name).
/// Returns the fd, or -1 with errno set; on getaddrinfo failure returns -2 and sets *gaiError.
static inline int bouncer_listen(const char *host, int port, int backlog, int *gaiError) {
    struct addrinfo hints, *res = NULL;
    char portText[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    snprintf(portText, sizeof portText, "%d", port);
    int rc = getaddrinfo(host, portText, &hints, &res);
    if (rc != 0) { *gaiError = rc; return -2; }
    int fd = -1;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0) break;
        int saved = errno;
        close(fd);
        errno = saved;
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/// The port a socket is bound to, or -1.
static inline int bouncer_local_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -1;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

/// accept4 with non-blocking + close-on-exec and TCP_NODELAY (small JSON responses);
/// writes the peer's numeric address into `peer` (NUL-terminated, at most `peerLen` bytes).
static inline int bouncer_accept(int listenFd, char *peer, int peerLen) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int fd = accept4(listenFd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (peer != NULL && peerLen > 0) {
        peer[0] = 0;
        if (ss.ss_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, peer, (socklen_t)peerLen);
        } else if (ss.ss_family == AF_INET6) {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, peer, (socklen_t)peerLen);
        }
    }
    return fd;
}

/// send(2) with MSG_NOSIGNAL so a peer that vanished yields EPIPE, never SIGPIPE.
static inline ssize_t bouncer_send(int fd, const void *bytes, size_t count) {
    return send(fd, bytes, count, MSG_NOSIGNAL);
}

static inline void bouncer_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

#endif
