#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic and not imported by Swift:
   these typed wrappers are the only way the Swift layer calls them. */
static inline CURLcode ccurl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_write_cb(CURL *h, curl_write_callback cb) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb); }
static inline CURLcode ccurl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_ptr(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_socket_cb(CURLM *m, curl_socket_callback cb) { return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, cb); }
static inline CURLMcode ccurl_multi_setopt_timer_cb(CURLM *m, curl_multi_timer_callback cb) { return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, cb); }
static inline CURLcode ccurl_easy_setopt_closesocket_cb(CURL *h, curl_closesocket_callback cb) { return curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, cb); }
/* The last value of response header `name` of the finished transfer on `h` (the final response, not 1xx or
   redirects), or NULL. The pointer is valid until the handle is reused or cleaned up. */
static inline const char *ccurl_easy_header_value(CURL *h, const char *name) {
    struct curl_header *header = NULL;
    if (curl_easy_header(h, name, 0, CURLH_HEADER, -1, &header) != CURLHE_OK || header == NULL) return NULL;
    size_t amount = header->amount;
    if (amount > 1 && curl_easy_header(h, name, amount - 1, CURLH_HEADER, -1, &header) != CURLHE_OK) return NULL;
    return header ? header->value : NULL;
}
static inline CURLcode ccurl_easy_setopt_xferinfo_cb(CURL *h, curl_xferinfo_callback cb) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cb); }

/* The AppStore HTTP client drives libcurl's multi interface with epoll on one thread. <sys/epoll.h> is not part of
   Swift's Glibc module, and `struct epoll_event` is packed on x86_64, so these helpers keep it out of Swift. */
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <unistd.h>
#include <errno.h>
#include <time.h>
#include <sys/syscall.h>

static inline int ccurl_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }
static inline int ccurl_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
static inline uint32_t ccurl_epoll_in(void) { return EPOLLIN; }
static inline uint32_t ccurl_epoll_out(void) { return EPOLLOUT; }
static inline uint32_t ccurl_epoll_err(void) { return EPOLLERR | EPOLLHUP; }

/* op: 0 add, 1 modify, 2 delete. Returns 0 or -1 (errno set). */
static inline int ccurl_epoll_ctl(int epfd, int op, int fd, uint32_t events) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = 0;
    ev.data.fd = fd;
    int ops[3] = {EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_DEL};
    return epoll_ctl(epfd, ops[op], fd, &ev);
}

/* Waits like epoll_wait, writing ready descriptors and their event masks into parallel arrays. */
static inline int ccurl_epoll_wait(int epfd, int *fds, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event ready[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, ready, max, timeout_ms);
    for (int i = 0; i < n; i++) { fds[i] = ready[i].data.fd; events[i] = ready[i].events; }
    return n;
}

/* As ccurl_epoll_wait with a microsecond timeout (epoll_pwait2, Linux 5.11+; millisecond epoll_wait otherwise).
   timeout_us < 0 waits indefinitely. */
static inline int ccurl_epoll_wait_us(int epfd, int *fds, uint32_t *events, int max, long timeout_us) {
    struct epoll_event ready[256];
    if (max > 256) max = 256;
    int n;
#ifdef SYS_epoll_pwait2
    static int unsupported = 0;
    if (!unsupported) {
        struct timespec ts = { timeout_us / 1000000, (timeout_us % 1000000) * 1000 };
        n = (int)syscall(SYS_epoll_pwait2, epfd, ready, max, timeout_us < 0 ? NULL : &ts, NULL, (size_t)0);
        if (n < 0 && errno == ENOSYS) {
            unsupported = 1;
            n = epoll_wait(epfd, ready, max, timeout_us < 0 ? -1 : (int)((timeout_us + 999) / 1000));
        }
    } else {
        n = epoll_wait(epfd, ready, max, timeout_us < 0 ? -1 : (int)((timeout_us + 999) / 1000));
    }
#else
    n = epoll_wait(epfd, ready, max, timeout_us < 0 ? -1 : (int)((timeout_us + 999) / 1000));
#endif
    for (int i = 0; i < n; i++) { fds[i] = ready[i].data.fd; events[i] = ready[i].events; }
    return n;
}

static inline void ccurl_eventfd_signal(int fd) { uint64_t one = 1; ssize_t r = write(fd, &one, sizeof one); (void)r; }
static inline void ccurl_eventfd_drain(int fd) { uint64_t value; ssize_t r = read(fd, &value, sizeof value); (void)r; }
#endif
#endif
