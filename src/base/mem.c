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

/* ---- large blocks (mem.h) ----
 *
 * A block is a mapping: a BIG_HDR header (the mapping's length, a magic),
 * then the caller's bytes. The pool keeps up to BIG_POOL freed mappings,
 * pages and all; mem_big_alloc takes the smallest pooled mapping that is
 * long enough (its tail, when long, split off and pooled again: a
 * mapping's pages can be cut anywhere on a page boundary), else the
 * largest one grown with mremap (the kernel moves its page tables; only
 * the new tail is fresh). A trace's merge outputs grow with the trace, so
 * the largest ones still take fresh pages, but most bytes a backfill's
 * merges write land in pages they already wrote. One mutex: large blocks
 * come and go a few times a step.
 */
#include <pthread.h>

#define BIG_HDR ((size_t)16)
#define BIG_MAGIC ((size_t)0x5b16b10c5b16b10cull)
#define BIG_POOL 16
#define BIG_AGE 4 /* ticks a pooled mapping waits for an allocation */

typedef struct BigMap {
    uint8_t *base;
    size_t len;
    uint64_t tick; /* big_ticks when pooled */
} BigMap;

static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
#if defined(__SANITIZE_ADDRESS__)
static bool big_on = false; /* malloc blocks, so the leak check sees them */
#else
static bool big_on = true;
#endif
static BigMap big_pool[BIG_POOL];
static int big_n;
static uint64_t big_ticks;
static size_t big_bytes;

static size_t big_len(size_t n)
{
    static size_t pg;
    if (!pg)
        pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + BIG_HDR + pg - 1) & ~(pg - 1);
}

/* Mark a whole mapping for THP (advise_huge's aligned middle alone would
   split it into three, and mremap moves one mapping, not several). */
static void big_advise(void *base, size_t len)
{
    if (len >= HUGE_MIN)
        (void)madvise(base, len, MADV_HUGEPAGE); /* a hint: failure changes nothing */
}

/* Put [base, base + len) in the pool (the caller holds big_mu); returns
   a mapping to unmap (the oldest, when the pool is full), len 0 when none. */
static BigMap big_put_locked(uint8_t *base, size_t len)
{
    BigMap out = {NULL, 0, 0};
    if (big_n == BIG_POOL) {
        int o = 0;
        for (int i = 1; i < big_n; i++)
            if (big_pool[i].tick < big_pool[o].tick ||
                (big_pool[i].tick == big_pool[o].tick && big_pool[i].len < big_pool[o].len))
                o = i;
        out = big_pool[o];
        big_bytes -= out.len;
        big_pool[o] = big_pool[--big_n];
    }
    big_pool[big_n++] = (BigMap){base, len, big_ticks};
    big_bytes += len;
    return out;
}

static void big_put(uint8_t *base, size_t len)
{
    pthread_mutex_lock(&big_mu);
    BigMap out = big_put_locked(base, len);
    pthread_mutex_unlock(&big_mu);
    if (out.len)
        munmap(out.base, out.len);
}

/* A mapping of len bytes made of pooled pages as far as the pool has
   them; NULL when the pool is empty. */
static uint8_t *big_take(size_t len)
{
    pthread_mutex_lock(&big_mu);
    int best = -1;
    for (int i = 0; i < big_n; i++) {
        size_t l = big_pool[i].len, b = best < 0 ? 0 : big_pool[best].len;
        if (best < 0 || (l >= len ? b < len || l < b : b < len && l > b))
            best = i;
    }
    if (best < 0) {
        pthread_mutex_unlock(&big_mu);
        return NULL;
    }
    BigMap m = big_pool[best];
    big_pool[best] = big_pool[--big_n];
    big_bytes -= m.len;
    BigMap out = {NULL, 0, 0};
    if (m.len > len) /* the tail stays pooled */
        out = big_put_locked(m.base + len, m.len - len);
    pthread_mutex_unlock(&big_mu);
    if (out.len)
        munmap(out.base, out.len);
    if (m.len >= len)
        return m.base;
    void *g = mremap(m.base, m.len, len, MREMAP_MAYMOVE);
    if (g == MAP_FAILED) {
        munmap(m.base, m.len);
        return NULL;
    }
    big_advise(g, len);
    return g;
}

void mem_big_use_pool(bool on) { big_on = on; }

void *mem_big_alloc(size_t n)
{
    if (!big_on) { /* a malloc block behind a header of length 0 */
        size_t *h = sl_malloc(n + BIG_HDR);
        h[0] = 0;
        h[1] = BIG_MAGIC;
        return (uint8_t *)h + BIG_HDR;
    }
    size_t len = big_len(n);
    uint8_t *base = big_take(len);
    if (!base) {
        base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED)
            oom(n);
        big_advise(base, len);
    }
    ((size_t *)base)[0] = len;
    ((size_t *)base)[1] = BIG_MAGIC;
    if (unlikely(budget__cur != NULL))
        budget__count((int64_t)len);
    return base + BIG_HDR;
}

/* The mapping of block p and its length. */
static uint8_t *big_base(void *p, size_t *len)
{
    uint8_t *base = (uint8_t *)p - BIG_HDR;
    if (((size_t *)base)[1] != BIG_MAGIC)
        sl_panic("mem_big: %p is not a large block", p);
    *len = ((size_t *)base)[0];
    return base;
}

void *mem_big_realloc(void *p, size_t n)
{
    size_t len, nlen = big_len(n);
    uint8_t *base = big_base(p, &len);
    if (len == 0) {
        base = sl_realloc(base, n + BIG_HDR);
        return base + BIG_HDR;
    }
    if (nlen == len)
        return p;
    if (unlikely(budget__cur != NULL))
        budget__count((int64_t)nlen - (int64_t)len);
    if (nlen < len) {
        big_put(base + nlen, len - nlen);
    } else {
        void *g = mremap(base, len, nlen, MREMAP_MAYMOVE);
        if (g == MAP_FAILED)
            oom(n);
        base = g;
        big_advise(base, nlen);
    }
    ((size_t *)base)[0] = nlen;
    return base + BIG_HDR;
}

void mem_big_free(void *p)
{
    if (!p)
        return;
    size_t len;
    uint8_t *base = big_base(p, &len);
    ((size_t *)base)[1] = 0;
    if (len == 0) {
        sl_free(base);
        return;
    }
    if (unlikely(budget__cur != NULL))
        budget__count(-(int64_t)len);
    big_put(base, len);
}

/* Unmap the pooled mappings put there before tick `before`. */
static void big_drop(uint64_t before)
{
    BigMap drop[BIG_POOL];
    int nd = 0;
    pthread_mutex_lock(&big_mu);
    for (int i = 0; i < big_n;)
        if (big_pool[i].tick < before) {
            drop[nd++] = big_pool[i];
            big_bytes -= big_pool[i].len;
            big_pool[i] = big_pool[--big_n];
        } else
            i++;
    pthread_mutex_unlock(&big_mu);
    for (int i = 0; i < nd; i++)
        munmap(drop[i].base, drop[i].len);
}

void mem_big_tick(void)
{
    pthread_mutex_lock(&big_mu);
    uint64_t t = ++big_ticks;
    pthread_mutex_unlock(&big_mu);
    if (t >= BIG_AGE)
        big_drop(t - BIG_AGE + 1);
}

void mem_big_trim(void) { big_drop(UINT64_MAX); }

size_t mem_big_pooled(void)
{
    pthread_mutex_lock(&big_mu);
    size_t b = big_bytes;
    pthread_mutex_unlock(&big_mu);
    return b;
}
