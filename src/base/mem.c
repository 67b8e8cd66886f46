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
 * A block is BIG_HDR bytes of header (the block's length in pages, a
 * magic, where its pieces start), then the caller's bytes. A piece is a
 * range of pages inside one mapping (one kernel VMA): mremap can move it
 * or cut it, not a range across mappings. The pool keeps up to BIG_POOL
 * freed pieces, pages and all. mem_big_alloc takes the smallest pooled
 * piece that is long enough (its tail, when long, pooled again), else
 * splices the block together: the largest pooled piece grown with mremap
 * to the block's length (the kernel moves its page tables and adds fresh
 * pages at the end), then the next largest pieces moved over that fresh
 * tail with mremap(MREMAP_FIXED), up to BIG_PIECES pieces. Only what the
 * pool cannot cover is fresh: a trace's merge output, larger than any run
 * it retired, takes the pages of all of them (the pages of separate
 * mappings cannot be joined into one mapping, but they can be moved next
 * to each other). Pieces stay apart: a freed block's pieces are pooled
 * one by one. One mutex: large blocks come and go a few times a step.
 */
#include <pthread.h>

#define BIG_HDR ((size_t)32)
#define BIG_MAGIC ((size_t)0x5b16b10c5b16b10cull)
#define BIG_POOL 64
#define BIG_PIECES 8                  /* pieces a spliced block has at most */
#define BIG_PIECE_MIN ((size_t)64 << 10) /* smaller pieces are unmapped, not pooled */
#define BIG_AGE 4 /* ticks a pooled piece waits for an allocation */

typedef struct BigMap {
    uint8_t *base;
    size_t len;
    uint64_t tick; /* big_ticks when pooled */
} BigMap;

/* The header: len 0 for a malloc block (the pool off); cut[0..ncut) the
   offsets where the pieces after the first start (ascending), NULL when
   the block is one piece. */
typedef struct BigHdr {
    size_t len, magic;
    size_t *cut;
    size_t ncut;
} BigHdr;
_Static_assert(sizeof(BigHdr) == BIG_HDR, "BigHdr is the header");

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
static size_t big_fresh; /* bytes of fresh pages mapped (mem_big_fresh) */

static size_t page_size(void)
{
    static size_t pg;
    if (!pg)
        pg = (size_t)sysconf(_SC_PAGESIZE);
    return pg;
}

static size_t big_len(size_t n)
{
    size_t pg = page_size();
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
   a piece to unmap (the oldest, when the pool is full; the piece itself
   when it is too small to keep), len 0 when none. */
static BigMap big_put_locked(uint8_t *base, size_t len)
{
    BigMap out = {NULL, 0, 0};
    if (len < BIG_PIECE_MIN)
        return (BigMap){base, len, 0};
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
    if (!len)
        return;
    pthread_mutex_lock(&big_mu);
    BigMap out = big_put_locked(base, len);
    pthread_mutex_unlock(&big_mu);
    if (out.len)
        munmap(out.base, out.len);
}

/* Take pooled piece i out (the caller holds big_mu). */
static BigMap big_pop_locked(int i)
{
    BigMap m = big_pool[i];
    big_pool[i] = big_pool[--big_n];
    big_bytes -= m.len;
    return m;
}

static int big_largest_locked(void)
{
    int best = -1;
    for (int i = 0; i < big_n; i++)
        if (best < 0 || big_pool[i].len > big_pool[best].len)
            best = i;
    return best;
}

static uint8_t *big_fresh_map(size_t len)
{
    uint8_t *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    big_advise(base, len);
    __atomic_fetch_add(&big_fresh, len, __ATOMIC_RELAXED);
    return base;
}

/* A block of len bytes made of pooled pages as far as the pool has them;
   NULL when the pool is empty (or the system refused). *cut and *ncut:
   where its pieces after the first start (malloc's array, NULL when 0). */
static uint8_t *big_take(size_t len, size_t **cut, size_t *ncut)
{
    *cut = NULL;
    *ncut = 0;
    pthread_mutex_lock(&big_mu);
    int best = -1;
    for (int i = 0; i < big_n; i++)
        if (big_pool[i].len >= len && (best < 0 || big_pool[i].len < big_pool[best].len))
            best = i;
    if (best >= 0) { /* one piece: its head (the tail stays pooled) */
        BigMap m = big_pop_locked(best);
        BigMap out = {NULL, 0, 0};
        if (m.len > len)
            out = big_put_locked(m.base + len, m.len - len);
        pthread_mutex_unlock(&big_mu);
        if (out.len)
            munmap(out.base, out.len);
        return m.base;
    }
    /* splice: the largest piece grown, the next largest moved over the
       fresh tail, largest first (fewest pieces), while they last */
    BigMap in[BIG_PIECES];
    int nin = 0;
    size_t have = 0;
    while (nin < BIG_PIECES && have < len && big_n > 0) {
        BigMap m = big_pop_locked(big_largest_locked());
        size_t use = m.len < len - have ? m.len : len - have;
        if (use < m.len) { /* the last one: its tail stays pooled */
            BigMap out = big_put_locked(m.base + use, m.len - use);
            if (out.len) {
                pthread_mutex_unlock(&big_mu);
                munmap(out.base, out.len);
                pthread_mutex_lock(&big_mu);
            }
            m.len = use;
        }
        in[nin++] = m;
        have += use;
    }
    pthread_mutex_unlock(&big_mu);
    if (nin == 0)
        return NULL;
    uint8_t *base = mremap(in[0].base, in[0].len, len, MREMAP_MAYMOVE);
    if (base == MAP_FAILED) {
        for (int i = 0; i < nin; i++)
            munmap(in[i].base, in[i].len);
        return NULL;
    }
    big_advise(base, len);
    size_t at = in[0].len, *c = malloc(sizeof(size_t) * BIG_PIECES), nc = 0;
    if (!c)
        oom(sizeof(size_t) * BIG_PIECES);
    for (int i = 1; i < nin; i++) {
        /* over the fresh pages mremap added: they were never touched */
        if (mremap(in[i].base, in[i].len, in[i].len, MREMAP_MAYMOVE | MREMAP_FIXED, base + at) ==
            MAP_FAILED) {
            munmap(in[i].base, in[i].len);
            continue; /* the fresh pages stay */
        }
        c[nc++] = at;
        at += in[i].len;
    }
    if (at < len) {
        __atomic_fetch_add(&big_fresh, len - at, __ATOMIC_RELAXED);
        if (nc > 0) /* the fresh tail is a piece of its own */
            c[nc++] = at;
    }
    if (nc == 0) {
        free(c);
        c = NULL;
    }
    *cut = c;
    *ncut = nc;
    return base;
}

void mem_big_use_pool(bool on) { big_on = on; }

void *mem_big_alloc(size_t n)
{
    if (!big_on) { /* a malloc block behind a header of length 0 */
        BigHdr *h = sl_malloc(n + BIG_HDR);
        *h = (BigHdr){0, BIG_MAGIC, NULL, 0};
        return (uint8_t *)h + BIG_HDR;
    }
    size_t len = big_len(n), *cut, ncut;
    uint8_t *base = big_take(len, &cut, &ncut);
    if (!base && !(base = big_fresh_map(len)))
        oom(n);
    *(BigHdr *)base = (BigHdr){len, BIG_MAGIC, cut, ncut};
    if (unlikely(budget__cur != NULL))
        budget__count((int64_t)len);
    return base + BIG_HDR;
}

/* The header of block p. */
static BigHdr *big_hdr(void *p)
{
    BigHdr *h = (BigHdr *)((uint8_t *)p - BIG_HDR);
    if (h->magic != BIG_MAGIC)
        sl_panic("mem_big: %p is not a large block", p);
    return h;
}

/* Pool the pages of block h from offset `from` on (a page boundary),
   piece by piece; h keeps the pieces before `from` and its length becomes
   `from` (when 0: h itself is pooled, not to be touched again). */
static void big_put_from(BigHdr *h, size_t from)
{
    uint8_t *base = (uint8_t *)h;
    BigMap put[BIG_PIECES + 1];
    int np = 0;
    size_t end = h->len, k = h->ncut;
    while (k > 0 && h->cut[k - 1] >= from) {
        put[np++] = (BigMap){base + h->cut[k - 1], end - h->cut[k - 1], 0};
        end = h->cut[--k];
    }
    put[np++] = (BigMap){base + from, end - from, 0};
    h->ncut = k;
    h->len = from;
    if (k == 0) {
        free(h->cut);
        h->cut = NULL;
    }
    for (int i = 0; i < np; i++) /* the header's piece last */
        big_put(put[i].base, put[i].len);
}

void *mem_big_realloc(void *p, size_t n)
{
    BigHdr *h = big_hdr(p);
    size_t len = h->len, nlen = big_len(n);
    if (len == 0) {
        h = sl_realloc(h, n + BIG_HDR);
        return (uint8_t *)h + BIG_HDR;
    }
    if (nlen == len)
        return p;
    if (nlen > len && h->ncut > 0) { /* pieces cannot grow as one: copy */
        void *q = mem_big_alloc(n);
        memcpy(q, p, len - BIG_HDR);
        mem_big_free(p);
        return q;
    }
    if (unlikely(budget__cur != NULL))
        budget__count((int64_t)nlen - (int64_t)len);
    if (nlen < len) {
        big_put_from(h, nlen);
    } else {
        void *g = mremap(h, len, nlen, MREMAP_MAYMOVE);
        if (g == MAP_FAILED)
            oom(n);
        __atomic_fetch_add(&big_fresh, nlen - len, __ATOMIC_RELAXED);
        h = g;
        big_advise(h, nlen);
        h->len = nlen;
    }
    return (uint8_t *)h + BIG_HDR;
}

void mem_big_free(void *p)
{
    if (!p)
        return;
    BigHdr *h = big_hdr(p);
    h->magic = 0;
    if (h->len == 0) {
        sl_free(h);
        return;
    }
    if (unlikely(budget__cur != NULL))
        budget__count(-(int64_t)h->len);
    big_put_from(h, 0);
}

/* Unmap the pooled pieces put there before tick `before`. */
static void big_drop(uint64_t before)
{
    BigMap drop[BIG_POOL];
    int nd = 0;
    pthread_mutex_lock(&big_mu);
    for (int i = 0; i < big_n;)
        if (big_pool[i].tick < before)
            drop[nd++] = big_pop_locked(i);
        else
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

size_t mem_big_fresh(void) { return __atomic_load_n(&big_fresh, __ATOMIC_RELAXED); }

int mem_big_pieces(const void *p)
{
    const BigHdr *h = (const BigHdr *)((const uint8_t *)p - BIG_HDR);
    return h->len == 0 ? 1 : (int)h->ncut + 1;
}
