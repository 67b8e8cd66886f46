/*
 * base/mem.c - checked allocation and resident-memory readings.
 *
 * Blocks of HUGE_MIN bytes and up (batches, sort indexes, exchange
 * buffers of a large step) are marked for transparent huge pages
 * (madvise MADV_HUGEPAGE, where the system leaves THP to madvise): one
 * fault maps 2 MiB instead of 4 KiB. A step that builds, sorts and merges
 * batches of tens of MB spent a third of its time in page faults on
 * fresh blocks (issue 16); resident memory grows by at most the part of
 * a huge page a block leaves untouched.
 */
#include "mem.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)
#define HUGE_MIN ((size_t)4 << 20)

/* Mark the huge pages wholly inside [p, p + n) for THP. */
static inline void advise_huge(void *p, size_t n)
{
    if (n < HUGE_MIN || !p)
        return;
    uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* a hint: failure changes nothing */
}

/* What this thread is doing (mem_set_doing): a printf format and its two
   numbers, read only when memory runs out. */
static _Thread_local const char *doing;
static _Thread_local int64_t doing_a, doing_b;

void mem_set_doing(const char *what, int64_t a, int64_t b)
{
    doing = what;
    doing_a = a;
    doing_b = b;
}

#include "budget.h"

/* Bytes of p (sign -1: being freed) to the calling thread's budget, if it
   has one (budget.h: the bound of an HTTP /query). */
static inline void budget_note(void *p, int sign)
{
    if (unlikely(budget__cur != NULL) && p)
        budget__count(sign * (int64_t)malloc_usable_size(p));
}

/* Out of memory: say what this thread was doing and end the process with
   status MEM_EXIT_OOM (nothing acknowledged is lost: with storage, the
   restart resumes from the checkpoint and the journal). No unwinding: the
   state of a half-done step is not worth saving. */
static void oom(size_t n)
{
    char what[256];
    snprintf(what, sizeof(what), doing ? doing : "running", (long long)doing_a,
             (long long)doing_b);
    fprintf(stderr,
            "sluice: out of memory allocating %zu bytes while %s (resident memory %.1f MB); "
            "the pipeline stops (exit status %d)\n",
            n, what, (double)mem_rss_bytes() / 1048576.0, MEM_EXIT_OOM);
    _exit(MEM_EXIT_OOM);
}

void *sl_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (unlikely(!p))
        oom(n);
    advise_huge(p, n);
    budget_note(p, 1);
    return p;
}

void *sl_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (unlikely(!p))
        oom(count * size);
    budget_note(p, 1);
    return p;
}

void *sl_realloc(void *p, size_t n)
{
    budget_note(p, -1);
    void *q = realloc(p, n ? n : 1);
    if (unlikely(!q))
        oom(n);
    advise_huge(q, n);
    budget_note(q, 1);
    return q;
}

void sl_free(void *p)
{
    budget_note(p, -1);
    free(p);
}

char *sl_strdup(const char *s) { return sl_strndup(s, strlen(s)); }

char *sl_strndup(const char *s, size_t n)
{
    char *p = sl_malloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static size_t status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0, flen = strlen(field);
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, field, flen) == 0) {
            kb = strtoull(line + flen, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb * 1024;
}

size_t mem_rss_bytes(void) { return status_kb("VmRSS:"); }
size_t mem_peak_rss_bytes(void) { return status_kb("VmHWM:"); }
