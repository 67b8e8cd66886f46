/*
 * base/forkgate.c - sl_fork: fork() that waits until no other thread is
 * inside the allocator.
 *
 * A child forked from a threaded process has one thread, the forking one;
 * every lock another thread held at that moment stays held in the child
 * for ever. The checkpoint's child allocates (it saves operator state,
 * compresses, builds its report), so a fork taken while an HTTP thread,
 * say, was refilling its allocator cache leaves a child that blocks on
 * its first allocation needing that lock: the checkpoint never completes
 * and nothing says why (seen under load: the child waiting in
 * SizeClassAllocator64::GetFromAllocator of ASan's allocator, the writer
 * thread waiting for its report).
 *
 * glibc's malloc takes its own locks around fork() (its atfork handlers),
 * so a release build is safe as it is. GCC 12's AddressSanitizer runtime,
 * which the debug build and the tests use, does not (LLVM added that in
 * December 2023, llvm-project pull request 75290). So in ASan builds this
 * file defines the allocation entry points (malloc, free, calloc,
 * realloc, the aligned ones, strdup and strndup, which ASan serves from
 * its allocator directly): the executable's definitions come before the
 * runtime's for every library too. Each passes a readers-writer gate as
 * a reader and calls the runtime's own function (__interceptor_*, which
 * records the stack as usual); sl_fork takes the gate as the writer, so
 * it forks once the allocations in progress have ended and holds new ones
 * back until the fork returns. The gate prefers the writer: a stream of
 * short allocations cannot keep the fork waiting. The forking thread
 * itself passes freely while it holds the gate (the C library's atfork
 * handlers may allocate).
 *
 * In the child the gate is set up anew (a rwlock taken by the parent's
 * thread cannot be released under the child's thread id).
 *
 * The definitions come with sl_fork: a program that links it (through
 * pipeline/snapshot.c) gets the gate. Not gated: what ASan allocates
 * inside its other interceptors (wcsdup, realpath and getcwd with a NULL
 * buffer, __strdup), which nothing here calls while a checkpoint forks.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

#include "forkgate.h"

void (*forkgate_on_wait)(void);

static pthread_rwlock_t gate = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static __thread bool forking; /* this thread holds the gate as the writer */

void forkgate_enter(void)
{
    if (!forking)
        pthread_rwlock_rdlock(&gate);
}

void forkgate_leave(void)
{
    if (!forking)
        pthread_rwlock_unlock(&gate);
}

pid_t sl_fork(void)
{
    if (pthread_rwlock_trywrlock(&gate) == EBUSY) {
        if (forkgate_on_wait)
            forkgate_on_wait();
        pthread_rwlock_wrlock(&gate);
    }
    forking = true;
    pid_t pid = fork();
    int e = errno;
    forking = false;
    if (pid == 0) {
        static const pthread_rwlock_t fresh = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
        gate = fresh;
    } else {
        pthread_rwlock_unlock(&gate);
    }
    errno = e;
    return pid;
}

#if defined(__SANITIZE_ADDRESS__)

void *__interceptor_malloc(size_t n);
void __interceptor_free(void *p);
void *__interceptor_calloc(size_t k, size_t n);
void *__interceptor_realloc(void *p, size_t n);
void *__interceptor_reallocarray(void *p, size_t k, size_t n);
int __interceptor_posix_memalign(void **out, size_t align, size_t n);
void *__interceptor_aligned_alloc(size_t align, size_t n);
void *__interceptor_memalign(size_t align, size_t n);
void *__interceptor_valloc(size_t n);
void *__interceptor_pvalloc(size_t n);
char *__interceptor_strdup(const char *s);
char *__interceptor_strndup(const char *s, size_t n);

#define GATED(type, call)                                                                          \
    do {                                                                                           \
        forkgate_enter();                                                                          \
        type r_ = call;                                                                            \
        forkgate_leave();                                                                          \
        return r_;                                                                                 \
    } while (0)

void *malloc(size_t n) { GATED(void *, __interceptor_malloc(n)); }
void *calloc(size_t k, size_t n) { GATED(void *, __interceptor_calloc(k, n)); }
void *realloc(void *p, size_t n) { GATED(void *, __interceptor_realloc(p, n)); }
void *reallocarray(void *p, size_t k, size_t n) { GATED(void *, __interceptor_reallocarray(p, k, n)); }
int posix_memalign(void **out, size_t align, size_t n) { GATED(int, __interceptor_posix_memalign(out, align, n)); }
void *aligned_alloc(size_t align, size_t n) { GATED(void *, __interceptor_aligned_alloc(align, n)); }
void *memalign(size_t align, size_t n) { GATED(void *, __interceptor_memalign(align, n)); }
void *valloc(size_t n) { GATED(void *, __interceptor_valloc(n)); }
void *pvalloc(size_t n) { GATED(void *, __interceptor_pvalloc(n)); }
char *strdup(const char *s) { GATED(char *, __interceptor_strdup(s)); }
char *strndup(const char *s, size_t n) { GATED(char *, __interceptor_strndup(s, n)); }

/* LeakSanitizer exempts what the dynamic linker allocates (thread-local
   storage vectors of threads a library leaves running, librdkafka's or
   Open MPI's) by the address its allocation came from; through the gate
   that address is in this file, so the exemption is restated here as a
   suppression of the linker's module. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:ld-linux-x86-64.so.2\n"; }

void free(void *p)
{
    forkgate_enter();
    __interceptor_free(p);
    forkgate_leave();
}
#endif
