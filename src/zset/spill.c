/*
 * zset/spill.c - spilled runs, the block cache and the budget's
 * enforcement (spill.h). In: spine batches that trace.c hands over when
 * spill_enforce chooses them, cut here into blocks of about block_bytes
 * and written through the installed SpillIO, one file per run with its
 * blocks end to end (storage/spill.c: each block in the batch file format
 * of checkpoints). Out: blocks read back for probes, pinned
 * while read, and whole runs for merges and checkpoints.
 *
 * One process-wide state under one mutex: workers probe their own traces
 * concurrently, but share the cache. The cache keeps at most cache_bytes
 * of unpinned blocks (pinned ones are always kept: a probe reads them);
 * which unpinned block goes first is the policy below ("the cache").
 * Enforcement runs between steps, when no probe is under way.
 */
#include "spill.h"

#include <pthread.h>
#include <stdio.h>

#include "../base/hash.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "hmap.h"

typedef struct CEnt {
    Batch *b;
    size_t bytes;
    int pins;
    uint64_t id;
    struct CEnt *prev, *next; /* list of unpinned entries, newest at head */
    bool in_lru;
    uint64_t last;  /* G.tick of its latest read */
    uint64_t gap;   /* reads between its last two reads (0: read once) */
} CEnt;

/* Blocks evicted lately: id -> the tick of their latest read, so that a
   block read again soon after its eviction knows its reuse distance. */
#define GHOST_MAX 1024
typedef struct Ghost {
    uint64_t last;
    int slot; /* its place in G.ghost_ring */
} Ghost;

static struct {
    pthread_mutex_t mu;
    bool has_io;
    SpillIO io;
    SpillConf conf;
    HMap *cache;      /* id -> CEnt */
    CEnt *head, *tail;
    size_t cached;    /* bytes of every cached block (pinned or not) */
    uint64_t tick;    /* block reads (pins) so far: the policy's clock */
    HMap *ghost;      /* id -> Ghost */
    uint64_t *ghost_ring; /* GHOST_MAX ids, oldest at ghost_next */
    int ghost_next, nghost;
    size_t disk;
    int64_t hits, misses, runs;
    int64_t live, merges; /* spilled runs alive now; merges of two into one */
    uint64_t next_id;
    struct Owner {
        void *o;
        const SpillOwner *ops;
    } *traces;
    int ntraces, captraces;
} G = {.mu = PTHREAD_MUTEX_INITIALIZER, .conf = {0, 64u << 20, 256u << 10, 64u << 10, true}};

void spill_configure(const SpillIO *io, const SpillConf *conf)
{
    pthread_mutex_lock(&G.mu);
    G.has_io = io != NULL;
    if (io)
        G.io = *io;
    G.conf = *conf;
    if (!G.conf.block_bytes)
        G.conf.block_bytes = 256u << 10;
    pthread_mutex_unlock(&G.mu);
}

void spill_conf(SpillConf *out)
{
    pthread_mutex_lock(&G.mu);
    *out = G.conf;
    pthread_mutex_unlock(&G.mu);
}

static void (*read_error)(const char *msg); /* spill_on_read_error */

void spill_on_read_error(void (*fn)(const char *msg)) { read_error = fn; }

/* A block that cannot be read back: the state is lost to this process. */
static __attribute__((noreturn)) void read_failed(const Spilled *s, int i, const Err *err)
{
    char msg[SPILL_NAME_MAX + sizeof(err->msg) + 96];
    snprintf(msg, sizeof(msg), "spilled trace block %s@%llu cannot be read back: %s", s->name,
             (unsigned long long)s->blk[i].off, err->msg[0] ? err->msg : "wrong tuple count");
    if (read_error)
        read_error(msg);
    sl_panic("%s", msg);
}

/* ---- the cache (G.mu held) ----
 *
 * Least recently used first fails two ways here: a lookup that walks more
 * runs than the cache holds blocks (or steps that read more blocks, in
 * key order, than it holds) reads the same blocks in the same order
 * again, and LRU evicts each just before its next read: no hits at all;
 * and one pass over blocks read once (a merge's neighbour, a scan of cold
 * state) flushes the blocks that are read over and over. The policy ranks
 * by reuse distance instead (the number of block reads between a block's
 * last two reads: G.tick counts reads), in the spirit of LIRS/CLOCK-Pro:
 *  1. blocks read once go first, the oldest first (a scan stays out);
 *  2. then blocks whose reuse is overdue (not read for twice their
 *     distance: the working set moved on), the oldest first;
 *  3. then the block expected to be read again last (last + gap largest).
 *     A loop of blocks longer than the cache so keeps a fixed set of them
 *     (each pass hits them) and lets the others through.
 * A block evicted is remembered (ids only, GHOST_MAX of them), so one read
 * again after its eviction gets its reuse distance (a loop of more blocks
 * than the cache holds is only seen that way). Choosing a victim walks the
 * unpinned blocks (at most cache_bytes / block_bytes: 256 by default),
 * once per eviction, i.e. once per block read from a file.
 */

static void lru_unlink(CEnt *e)
{
    if (!e->in_lru)
        return;
    if (e->prev)
        e->prev->next = e->next;
    else
        G.head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        G.tail = e->prev;
    e->prev = e->next = NULL;
    e->in_lru = false;
}

static void lru_push(CEnt *e)
{
    e->prev = NULL;
    e->next = G.head;
    if (G.head)
        G.head->prev = e;
    G.head = e;
    if (!G.tail)
        G.tail = e;
    e->in_lru = true;
}

static void cache_remove(CEnt *e)
{
    uint64_t id = e->id;
    lru_unlink(e);
    G.cached -= e->bytes;
    batch_unref(e->b);
    hmap_delete(G.cache, (const uint8_t *)&id, sizeof(id), sl_hash(&id, sizeof(id)));
    sl_free(e);
}

static void ghost_add(uint64_t id, uint64_t last)
{
    if (!G.ghost) {
        G.ghost = hmap_new(sizeof(Ghost));
        G.ghost_ring = sl_malloc(sizeof(uint64_t) * GHOST_MAX);
    }
    int slot = G.ghost_next;
    G.ghost_next = (slot + 1) % GHOST_MAX;
    if (G.nghost == GHOST_MAX) { /* the oldest goes, unless read back since */
        uint64_t old = G.ghost_ring[slot];
        uint64_t h = sl_hash(&old, sizeof(old));
        Ghost *g = hmap_find(G.ghost, (const uint8_t *)&old, sizeof(old), h);
        if (g && g->slot == slot)
            hmap_delete(G.ghost, (const uint8_t *)&old, sizeof(old), h);
    } else {
        G.nghost++;
    }
    G.ghost_ring[slot] = id;
    bool created;
    Ghost *g = hmap_upsert(G.ghost, (const uint8_t *)&id, sizeof(id), sl_hash(&id, sizeof(id)),
                           &created);
    *g = (Ghost){last, slot};
}

/* The reads since block id was last read, when it was evicted lately; 0 otherwise. */
static uint64_t ghost_gap(uint64_t id)
{
    if (!G.ghost)
        return 0;
    uint64_t h = sl_hash(&id, sizeof(id));
    Ghost *g = hmap_find(G.ghost, (const uint8_t *)&id, sizeof(id), h);
    if (!g)
        return 0;
    uint64_t gap = G.tick - g->last;
    hmap_delete(G.ghost, (const uint8_t *)&id, sizeof(id), h); /* (its ring slot goes stale) */
    return gap;
}

/* The unpinned block to evict first (the policy above), or NULL. */
static CEnt *cache_victim(void)
{
    CEnt *best = NULL;
    int bc = -1;
    uint64_t bs = 0;
    for (CEnt *e = G.head; e; e = e->next) {
        uint64_t age = G.tick - e->last, score;
        int c;
        if (!e->gap) {
            c = 2, score = age;
        } else if (age > 2 * e->gap) {
            c = 1, score = age;
        } else {
            c = 0, score = e->last + e->gap;
        }
        if (c > bc || (c == bc && score >= bs)) {
            best = e;
            bc = c;
            bs = score;
        }
    }
    return best;
}

/* Evict unpinned blocks while the cache holds more than its bound. */
static void cache_trim(void)
{
    while (G.head && G.cached > G.conf.cache_bytes) {
        CEnt *e = cache_victim();
        ghost_add(e->id, e->last);
        cache_remove(e);
    }
}

/* Block e is read now. */
static void cache_touch(CEnt *e)
{
    G.tick++;
    e->gap = G.tick - e->last;
    e->last = G.tick;
}

static CEnt *cache_find(uint64_t id)
{
    if (!G.cache)
        return NULL;
    CEnt **pe = hmap_find(G.cache, (const uint8_t *)&id, sizeof(id), sl_hash(&id, sizeof(id)));
    return pe ? *pe : NULL;
}

/* ---- spilled runs ---- */

/* The installed IO and block size (false: nothing spills). */
static bool io_of(SpillIO *io, size_t *bsz)
{
    pthread_mutex_lock(&G.mu);
    bool has = G.has_io;
    *io = G.io;
    *bsz = G.conf.block_bytes;
    pthread_mutex_unlock(&G.mu);
    return has;
}

/* A run being written: its file is made with its first block. */
typedef struct RunOut {
    const SpillIO *io;
    Spilled *s;
    void *w;          /* the IO's writer, NULL before the first block */
    int capb;
} RunOut;

/* Write part (a consolidated, non-empty batch) as the next block of o->s. */
static int put_block(RunOut *o, const Batch *part, Err *err)
{
    const SpillIO *io = o->io;
    Spilled *s = o->s;
    if (!o->w) {
        int rc = io->create(io->ctx, s->name, &o->w, err);
        if (rc) {
            s->name[0] = 0;
            return rc;
        }
    }
    SpillBlock *bk = VEC_PUSH(s->blk, s->nblocks, o->capb);
    memset(bk, 0, sizeof(*bk));
    int rc = io->append(io->ctx, o->w, part, &bk->off, &bk->disk, err);
    if (rc) {
        s->nblocks--;
        return rc;
    }
    bk->n = part->n;
    bk->firstn = (uint32_t)batch_klen(part, 0);
    bk->first = sl_malloc(bk->firstn ? bk->firstn : 1);
    memcpy(bk->first, batch_key(part, 0), bk->firstn);
    s->disk += bk->disk;
    s->n += part->n;
    s->bytes += batch_bytes(part);
    pthread_mutex_lock(&G.mu);
    bk->id = ++G.next_id;
    pthread_mutex_unlock(&G.mu);
    return 0;
}

/* A run being written; published by finish_run. */
static RunOut new_run(const SpillIO *io)
{
    Spilled *s = sl_calloc(1, sizeof(*s));
    s->refs = 1;
    return (RunOut){.io = io, .s = s};
}

static void close_file(RunOut *o)
{
    if (o->w)
        o->io->close(o->io->ctx, o->w);
    o->w = NULL;
}

static void finish_run(RunOut *o)
{
    close_file(o);
    Spilled *s = o->s;
    pthread_mutex_lock(&G.mu);
    G.disk += s->disk;
    G.live++;
    pthread_mutex_unlock(&G.mu);
}

/* Drop a run that was never published (its file too). */
static void abandon_run(RunOut *o)
{
    close_file(o);
    Spilled *s = o->s;
    pthread_mutex_lock(&G.mu);
    G.disk += s->disk; /* spilled_unref takes it off again */
    G.live++;
    pthread_mutex_unlock(&G.mu);
    spilled_unref(s);
}

int spill_write(const Batch *b, Spilled **out, Err *err)
{
    SpillIO io;
    size_t bsz;
    if (!io_of(&io, &bsz))
        return err_set(err, SL_ECONFIG, "spilling is not configured");
    RunOut o = new_run(&io);
    for (int64_t lo = 0; lo < b->n;) {
        int64_t hi = lo + 1;
        while (hi < b->n && batch_off(b, hi) - batch_off(b, lo) < bsz)
            hi++;
        Batch *part = batch_slice(b, lo, hi);
        int rc = put_block(&o, part, err);
        batch_unref(part);
        if (rc) {
            abandon_run(&o);
            return rc;
        }
        lo = hi;
    }
    finish_run(&o);
    pthread_mutex_lock(&G.mu);
    G.runs++;
    pthread_mutex_unlock(&G.mu);
    *out = o.s;
    return 0;
}

/* ---- merging spilled runs, block by block ---- */

/* A spilled run read one block at a time (straight from its file: a
   merge reads every block once, so it does not go through the cache), or
   a batch in memory as one block (s NULL). */
typedef struct Stream {
    const Spilled *s;
    const SpillIO *io;
    int blk;          /* the block loaded, or nblocks at the end */
    Batch *b;         /* ... its tuples */
    int64_t i;        /* next tuple of b */
} Stream;

/* Load the block after the current one (or the first); false at the end. */
static bool stream_next_block(Stream *st)
{
    if (st->b)
        batch_unref(st->b);
    st->b = NULL;
    st->i = 0;
    if (!st->s)
        return false;
    while (++st->blk < st->s->nblocks) {
        const SpillBlock *bk = &st->s->blk[st->blk];
        Err err = {0};
        if (st->io->get(st->io->ctx, st->s->name, bk->off, bk->disk, &st->b, &err) ||
            st->b->n != bk->n)
            read_failed(st->s, st->blk, &err);
        if (st->b->n > 0)
            return true;
        batch_unref(st->b);
        st->b = NULL;
    }
    return false;
}

static bool stream_open(Stream *st, const Spilled *s, const SpillIO *io)
{
    *st = (Stream){.s = s, .io = io, .blk = -1};
    return stream_next_block(st);
}

/* Step past the current tuple; false at the end of the run. */
static bool stream_advance(Stream *st)
{
    if (++st->i < st->b->n)
        return true;
    return stream_next_block(st);
}

static int tuple_cmp(const Batch *a, int64_t i, const Batch *b, int64_t j);

/* spill_merge of in[0..nin) and, unless NULL, the batch mem (in memory). */
static int merge(const Batch *mem, Spilled *const *in, int nin, Spilled **out, Err *err)
{
    SpillIO io;
    size_t bsz;
    if (!io_of(&io, &bsz))
        return err_set(err, SL_ECONFIG, "spilling is not configured");
    int nall = nin + (mem != NULL);
    if (NEVER(nall < 1 || nall > SPILL_MERGE_MAX))
        return err_set(err, SL_ECONFIG, "cannot merge %d spilled runs at once", nall);
    RunOut o = new_run(&io);
    int rc = 0, live = 0;
    Stream st[SPILL_MERGE_MAX];
    bool has[SPILL_MERGE_MAX];
    for (int i = 0; i < nin; i++)
        live += has[i] = stream_open(&st[i], in[i], &io);
    if (mem) { /* the last stream: one block, the batch itself */
        st[nin] = (Stream){.s = NULL, .io = &io, .blk = 0, .b = NULL, .i = 0};
        if (mem->n > 0) {
            batch_ref((Batch *)mem);
            st[nin].b = (Batch *)mem;
        }
        live += has[nin] = mem->n > 0;
        nin++;
    }
    BatchBuilder *bb = bb_new();
    size_t fill = 0;
    while (live > 0) {
        /* the smallest tuple among the runs, its weights summed */
        int lo = -1;
        for (int i = 0; i < nin; i++)
            if (has[i] && (lo < 0 || tuple_cmp(st[i].b, st[i].i, st[lo].b, st[lo].i) < 0))
                lo = i;
        const Batch *fb = st[lo].b;
        int64_t fi = st[lo].i, w = 0;
        bool eq[SPILL_MERGE_MAX];
        for (int i = 0; i < nin; i++) {
            eq[i] = has[i] && (i == lo || tuple_cmp(st[i].b, st[i].i, fb, fi) == 0);
            if (eq[i] && unlikely(__builtin_add_overflow(w, st[i].b->w[st[i].i], &w)))
                sl_panic("z-set weight overflow merging spilled runs");
        }
        if (w != 0) {
            bb_add(bb, batch_key(fb, fi), batch_klen(fb, fi), batch_val(fb, fi),
                   batch_vlen(fb, fi), w);
            fill += batch_tlen(fb, fi);
        }
        /* the output block ends here once full (each tuple is emitted
           once, so no tuple spans two blocks) */
        if (fill >= bsz) {
            Batch *part = bb_finish(bb);
            bb = bb_new();
            fill = 0;
            if (part->n > 0)
                rc = put_block(&o, part, err);
            batch_unref(part);
            if (rc)
                break;
        }
        for (int i = 0; i < nin; i++) /* (fb may go with the stream's block) */
            if (eq[i] && !(has[i] = stream_advance(&st[i])))
                live--;
    }
    Batch *part = bb_finish(bb);
    if (!rc && part->n > 0)
        rc = put_block(&o, part, err);
    batch_unref(part);
    for (int i = 0; i < nin; i++)
        if (st[i].b)
            batch_unref(st[i].b);
    if (rc) {
        abandon_run(&o);
        return rc;
    }
    finish_run(&o);
    pthread_mutex_lock(&G.mu);
    G.merges += nin - 1;
    G.runs += mem != NULL; /* the batch spilled, straight into the merge */
    pthread_mutex_unlock(&G.mu);
    *out = o.s;
    return 0;
}

int spill_merge(Spilled *const *in, int nin, Spilled **out, Err *err)
{
    return merge(NULL, in, nin, out, err);
}

int spill_merge_batch(const Batch *b, Spilled *const *in, int nin, Spilled **out, Err *err)
{
    return merge(b, in, nin, out, err);
}

void spilled_ref(Spilled *s) { s->refs++; }

void spilled_unref(Spilled *s)
{
    if (!s || NEVER(s->refs <= 0) || --s->refs > 0)
        return;
    pthread_mutex_lock(&G.mu);
    for (int i = 0; i < s->nblocks; i++) {
        CEnt *e = cache_find(s->blk[i].id);
        if (e && ALWAYS(e->pins == 0))
            cache_remove(e);
        sl_free(s->blk[i].first);
    }
    if (G.has_io && s->name[0])
        G.io.drop(G.io.ctx, s->name);
    G.disk -= s->disk;
    G.live--;
    pthread_mutex_unlock(&G.mu);
    sl_free(s->blk);
    sl_free(s);
}

size_t spilled_index_bytes(const Spilled *s)
{
    size_t n = sizeof(*s) + (size_t)s->nblocks * sizeof(SpillBlock);
    for (int i = 0; i < s->nblocks; i++)
        n += s->blk[i].firstn;
    return n;
}

static int key_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : an < bn ? -1 : an > bn;
}

/* Tuple order (batch.h, batch_merge): the bytes of key and value together. */
static int tuple_cmp(const Batch *a, int64_t i, const Batch *b, int64_t j)
{
    return key_cmp(batch_key(a, i), batch_tlen(a, i), batch_key(b, j), batch_tlen(b, j));
}

int spilled_seek(const Spilled *s, int from, const uint8_t *k, size_t kn)
{
    /* the last block whose first key is < k (equal keys may begin in it) */
    int lo = from, hi = s->nblocks; /* answer in [from, nblocks) */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (key_cmp(s->blk[mid].first, s->blk[mid].firstn, k, kn) < 0)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

const Batch *spill_pin(const Spilled *s, int i, bool *hit)
{
    const SpillBlock *bk = &s->blk[i];
    uint64_t id = bk->id;
    pthread_mutex_lock(&G.mu);
    CEnt *e = cache_find(id);
    if (e) {
        lru_unlink(e);
        e->pins++;
        cache_touch(e);
        G.hits++;
        pthread_mutex_unlock(&G.mu);
        *hit = true;
        return e->b;
    }
    SpillIO io = G.io;
    G.misses++;
    pthread_mutex_unlock(&G.mu);
    *hit = false;
    Batch *b = NULL;
    Err err = {0};
    if (io.get(io.ctx, s->name, bk->off, bk->disk, &b, &err) || b->n != bk->n)
        read_failed(s, i, &err);
    pthread_mutex_lock(&G.mu);
    if (!G.cache)
        G.cache = hmap_new(sizeof(CEnt *));
    bool created;
    CEnt **pe = hmap_upsert(G.cache, (const uint8_t *)&id, sizeof(id), sl_hash(&id, sizeof(id)),
                            &created);
    if (!created) { /* another thread read it meanwhile (never: one owner) */
        (*pe)->pins++;
        lru_unlink(*pe);
        cache_touch(*pe);
        pthread_mutex_unlock(&G.mu);
        batch_unref(b);
        return (*pe)->b;
    }
    e = sl_calloc(1, sizeof(*e));
    e->b = b;
    e->bytes = batch_bytes(b);
    e->pins = 1;
    e->id = id;
    e->last = ++G.tick;
    e->gap = ghost_gap(id);
    *pe = e;
    G.cached += e->bytes;
    cache_trim();
    pthread_mutex_unlock(&G.mu);
    return b;
}

void spill_unpin(const Spilled *s, int i)
{
    uint64_t id = s->blk[i].id;
    pthread_mutex_lock(&G.mu);
    CEnt *e = cache_find(id);
    if (ALWAYS(e) && ALWAYS(e->pins > 0) && --e->pins == 0) {
        lru_push(e);
        cache_trim();
    }
    pthread_mutex_unlock(&G.mu);
}

Batch *spilled_load(const Spilled *s)
{
    Batch **parts = sl_malloc(sizeof(Batch *) * (size_t)(s->nblocks + 1));
    for (int i = 0; i < s->nblocks; i++) {
        bool hit;
        parts[i] = (Batch *)spill_pin(s, i, &hit);
    }
    Batch *all = batch_concat(parts, s->nblocks);
    for (int i = 0; i < s->nblocks; i++)
        spill_unpin(s, i);
    sl_free(parts);
    return all;
}

/* ---- registry and enforcement ---- */

void spill_register(void *o, const SpillOwner *ops)
{
    pthread_mutex_lock(&G.mu);
    *VEC_PUSH(G.traces, G.ntraces, G.captraces) = (struct Owner){o, ops};
    pthread_mutex_unlock(&G.mu);
}

void spill_unregister(void *o)
{
    pthread_mutex_lock(&G.mu);
    for (int i = 0; i < G.ntraces; i++)
        if (G.traces[i].o == o) {
            G.traces[i] = G.traces[--G.ntraces];
            break;
        }
    if (G.ntraces == 0) {
        sl_free(G.traces);
        G.traces = NULL;
        G.captraces = 0;
    }
    pthread_mutex_unlock(&G.mu);
}

size_t spill_resident(void)
{
    size_t resident = 0; /* traces are not made or freed between steps */
    for (int i = 0; i < G.ntraces; i++)
        resident += G.traces[i].ops->resident(G.traces[i].o);
    return resident;
}

int spill_enforce(size_t other_bytes, size_t *spilled, Err *err)
{
    return spill_enforce_times(other_bytes, 2, spilled, err);
}

int spill_enforce_times(size_t other_bytes, int times, size_t *spilled, Err *err)
{
    if (spilled)
        *spilled = 0;
    pthread_mutex_lock(&G.mu);
    bool on = G.has_io && G.conf.limit > 0;
    SpillConf conf = G.conf;
    pthread_mutex_unlock(&G.mu);
    if (!on)
        return 0;
    /* traces are not made or freed between steps: the list is stable here */
    size_t resident = 0;
    for (int i = 0; i < G.ntraces; i++)
        resident += G.traces[i].ops->resident(G.traces[i].o);
    pthread_mutex_lock(&G.mu);
    size_t cache = G.cached;
    pthread_mutex_unlock(&G.mu);
    /* runs in memory count twice (times): a merge holds the old runs and
       the new one at once until the step ends */
    while ((size_t)times * resident + other_bytes + cache > conf.limit) {
        struct Owner *best = NULL;
        size_t bsz = 0;
        for (int i = 0; i < G.ntraces; i++) {
            size_t sz = G.traces[i].ops->largest(G.traces[i].o);
            if (sz >= conf.min_run && sz > bsz) {
                best = &G.traces[i];
                bsz = sz;
            }
        }
        if (!best)
            break;
        int rc = best->ops->spill_largest(best->o, err);
        if (rc)
            return rc;
        /* counted again: what spills may land in another owner's memory
           first (an aggregate's groups become a run of its cold trace) */
        resident = 0;
        for (int i = 0; i < G.ntraces; i++)
            resident += G.traces[i].ops->resident(G.traces[i].o);
        if (spilled)
            *spilled += bsz;
    }
    return 0;
}

int spill_compact(int *merged, Err *err)
{
    if (merged)
        *merged = 0;
    pthread_mutex_lock(&G.mu);
    bool on = G.has_io && G.conf.limit > 0 && G.conf.merge;
    pthread_mutex_unlock(&G.mu);
    if (!on)
        return 0;
    for (int i = 0; i < G.ntraces; i++) {
        int n = 0;
        int rc = G.traces[i].ops->compact(G.traces[i].o, &n, err);
        if (merged)
            *merged += n;
        if (rc)
            return rc;
    }
    return 0;
}

void spill_stats(SpillStats *out)
{
    pthread_mutex_lock(&G.mu);
    out->cache_bytes = G.cached;
    out->disk_bytes = G.disk;
    out->hits = G.hits;
    out->misses = G.misses;
    out->runs_spilled = G.runs;
    out->runs_live = G.live;
    out->runs_merged = G.merges;
    pthread_mutex_unlock(&G.mu);
}
