// Naming the calling thread for the operating system (glibc's pthread_setname_np, which Swift's Glibc module does
// not export: glibc declares it only under _GNU_SOURCE). Linux keeps the first 15 bytes of the name.
#include <pthread.h>

extern int pthread_setname_np(pthread_t thread, const char *name);

static inline int cthread_name_current(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
