/* LD_PRELOAD shim for ThreadSanitizer runs (scripts/test-sanitize.sh).
 *
 * Debian's librdkafka starts its threads and takes its locks with C11 <threads.h> (thrd_create, mtx_lock, ...).
 * glibc implements those on its internal pthread functions without going through the PLT, so TSan's pthread
 * interceptors never see them: a thread TSan does not know crashes inside TSan's runtime as soon as it calls an
 * intercepted function (malloc, a callback into Swift), and locks TSan does not see would hide the happens-before
 * between librdkafka's threads and ours. Routing the C11 calls to the public pthread functions (which the
 * TSan-instrumented test binary intercepts) makes librdkafka's threads and locks visible. glibc's mtx_t and cnd_t
 * share the layout of pthread_mutex_t and pthread_cond_t (glibc implements them as casts), so the casts are exact. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>
#include <time.h>
#include <errno.h>

struct trampoline { thrd_start_t start; void *argument; };

static void *run_c11_thread(void *context) {
    struct trampoline call = *(struct trampoline *)context;
    free(context);
    return (void *)(intptr_t)call.start(call.argument);
}

static int c11_result(int error) {
    switch (error) {
    case 0: return thrd_success;
    case ETIMEDOUT: return thrd_timedout;
    case EBUSY: return thrd_busy;
    case ENOMEM: return thrd_nomem;
    default: return thrd_error;
    }
}

int thrd_create(thrd_t *thread, thrd_start_t start, void *argument) {
    struct trampoline *call = malloc(sizeof *call);
    if (call == NULL) return thrd_nomem;
    call->start = start;
    call->argument = argument;
    int error = pthread_create((pthread_t *)thread, NULL, run_c11_thread, call);
    if (error != 0) free(call);
    return c11_result(error);
}

int thrd_join(thrd_t thread, int *result) {
    void *value = NULL;
    int error = pthread_join((pthread_t)thread, &value);
    if (error == 0 && result != NULL) *result = (int)(intptr_t)value;
    return c11_result(error);
}

int thrd_detach(thrd_t thread) { return c11_result(pthread_detach((pthread_t)thread)); }

int mtx_init(mtx_t *mutex, int type) {
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    if (type & mtx_recursive) pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);
    int error = pthread_mutex_init((pthread_mutex_t *)mutex, &attributes);
    pthread_mutexattr_destroy(&attributes);
    return c11_result(error);
}

int mtx_lock(mtx_t *mutex) { return c11_result(pthread_mutex_lock((pthread_mutex_t *)mutex)); }
int mtx_trylock(mtx_t *mutex) { return c11_result(pthread_mutex_trylock((pthread_mutex_t *)mutex)); }
int mtx_unlock(mtx_t *mutex) { return c11_result(pthread_mutex_unlock((pthread_mutex_t *)mutex)); }
int mtx_timedlock(mtx_t *restrict mutex, const struct timespec *restrict deadline) {
    return c11_result(pthread_mutex_timedlock((pthread_mutex_t *)mutex, deadline));
}
void mtx_destroy(mtx_t *mutex) { pthread_mutex_destroy((pthread_mutex_t *)mutex); }

int cnd_init(cnd_t *condition) { return c11_result(pthread_cond_init((pthread_cond_t *)condition, NULL)); }
int cnd_signal(cnd_t *condition) { return c11_result(pthread_cond_signal((pthread_cond_t *)condition)); }
int cnd_broadcast(cnd_t *condition) { return c11_result(pthread_cond_broadcast((pthread_cond_t *)condition)); }
int cnd_wait(cnd_t *condition, mtx_t *mutex) {
    return c11_result(pthread_cond_wait((pthread_cond_t *)condition, (pthread_mutex_t *)mutex));
}
int cnd_timedwait(cnd_t *restrict condition, mtx_t *restrict mutex, const struct timespec *restrict deadline) {
    return c11_result(pthread_cond_timedwait((pthread_cond_t *)condition, (pthread_mutex_t *)mutex, deadline));
}
void cnd_destroy(cnd_t *condition) { pthread_cond_destroy((pthread_cond_t *)condition); }
