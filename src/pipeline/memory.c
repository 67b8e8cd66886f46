/*
 * pipeline/memory.c - the memory budget and the memory breakdown
 * (docs/memory.md). In: the limit from PipelineOpts (or the machine), the
 * operators' `mem` figures (circuit/op.h), the spill cache (zset/spill.h),
 * what steps allocate (runtime.h). Out: spilling and merging spilled runs
 * between steps, each step's allowance and the rows per step, and the
 * MemStats that /stats, /metrics and `sluice stats` show.
 *
 * The budget covers operator state: trace runs (which can spill), hash
 * maps (aggregate groups, top-k, window and ASOF partitions, PRIMARY KEY
 * rows, materialized contents and emit_final holds, which spill through
 * traces of their own) and the cache of spilled
 * blocks read back. After every step pmem_after_step asks
 * spill_enforce to move the largest runs to files until the state fits,
 * then spill_compact to merge spilled runs;
 * what cannot spill counts with the figures of the last walk. When even
 * spilling every run cannot keep the state within the limit, the reason
 * and the largest node are published (MemStats.pressure) and logged once.
 *
 * The whole process counts (pmem_before_step, once resident memory
 * passes half the limit, or from the start with --memory-limit): each
 * step's workers may allocate only the room left under the limit
 * (rt_set_step_memory); what a step allocated at its highest, and the
 * resident memory the state does not explain (the baseline), count with
 * the state when spilling; the rows per step follow what a step allocates
 * per row; freed memory goes back to the system after large steps and
 * spills. A step past its allowance is undone, run again once after
 * spilling everything, and otherwise held: its input waits, the inputs
 * pause, and the pressure message names the node (pmem_step_failed).
 *
 * Scale-out: every host spills its own traces under the limit (which
 * applies to each host) into its own directory: followers through
 * pmem_host_* (follow.c), after each of their steps, as pmem_after_step
 * does here; the coordinator's judge counts, per host, its state that
 * cannot spill and its spill cache.
 *
 * Figures: walking the state (every group of an aggregate) is not free,
 * so pmem_refresh walks no more often than 20 times its own cost (at most
 * ~5% of the controller's time) and at most every 10 ms, except after a
 * step that spilled or merged (pmem_after_step): the step's stats_publish
 * walks then, before the pushes the step consumed are acknowledged
 * (step.c), so a client that waited sees the state after the spill.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../base/mem.h"
#include "../cluster/net.h"
#include "../storage/storage.h"
#include "../zset/spill.h"
#include "pipeline_int.h"

struct PMem {
    size_t limit;
    const char *source;
    NodeMem *nodes;          /* controller's walk */
    int nnodes;
    size_t state, disk, arena, unspillable;
    double last, cost;       /* when the last walk ended, what it cost */
    bool walked;
    char pressure[384];
    bool said;               /* pressure logged */
    bool hold;               /* inputs paused: the state cannot fit */
    MemStats pub;            /* published copy (p->mu) */
    /* the whole process under the limit (pmem_before_step) */
    bool watch;              /* resident memory is past half the limit:
                                every step is bounded and measured */
    size_t rss;              /* resident memory, last reading */
    size_t base;             /* ... that the state does not explain */
    size_t trans;            /* a step's own allocations (decaying maximum) */
    double per_row;          /* ... per input row (0: not measured yet) */
    int64_t rows_in;         /* input rows of the step under way */
    int64_t rows_max;        /* the step size asked for (--step-rows) */
    bool auto_steps;         /* no --step-rows: steps follow their arenas */
    double arena_per_row;    /* step arena and exchanged bytes of a worker per
                                input row of its share (decaying maximum; 0:
                                not yet) */
    /* scale-out: every host's memory (gather_hosts; sizes as in MemStats) */
    int nhosts;              /* 0 with one process */
    HostMem *hosts;
    NodeMem *host_nodes;     /* nhosts * (nnodes of the circuit + 1) */
    NodeMem *total_nodes;
    int ntotal;
    size_t total_state, total_disk, total_arena;
    bool stuck;              /* a step did not fit: its input waits (pmem_step_failed) */
    bool retry;              /* ... and runs once more after spilling everything */
};

/* The cgroup v2 limit of this process, 0 when none. */
static size_t cgroup_limit(void)
{
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (!f)
        return 0;
    char buf[64] = {0};
    size_t v = 0;
    if (fgets(buf, sizeof(buf), f) && strncmp(buf, "max", 3))
        v = (size_t)strtoull(buf, NULL, 10);
    fclose(f);
    return v;
}

static size_t mem_total(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemTotal: %zu kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

/* The limit (0: none) and where it comes from, from the options or the
   machine (each host's own with --hosts). */
static size_t resolve_limit(const PipelineOpts *o, const char **source)
{
    if (o->memory_limit > 0) {
        *source = "flag";
        /* a fixed mmap threshold: large blocks (batches, spilled runs read
           back) go back to the system when freed, instead of glibc raising
           the threshold and keeping them in the heap after the first free */
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        return (size_t)o->memory_limit;
    }
    if (o->memory_limit < 0) {
        *source = "none";
        return 0;
    }
    size_t cg = cgroup_limit(), tot = mem_total();
    if (cg && (!tot || cg < tot)) {
        *source = "cgroup";
        return cg / 10 * 8;
    }
    if (tot) {
        *source = "meminfo";
        return tot / 10 * 8;
    }
    *source = "none";
    return 0;
}

/* Spilling under limit: the files of this host (host of hosts; -1 of 0:
   one process) in the local storage directory, else a scratch directory;
   the runtime's traces, made on this thread from now, take part in the
   budget (one-shot queries run elsewhere and do not). */
static void spill_start(const PipelineOpts *o, size_t limit, int host, int hosts)
{
    SpillConf conf = {.limit = limit, .block_bytes = 256u << 10, .min_run = 64u << 10};
    const char *e = getenv("SLUICE_SPILL_BLOCK"); /* tests: small blocks */
    if (e && atoll(e) > 0)
        conf.block_bytes = (size_t)atoll(e);
    /* an eighth of the limit, at least 4 blocks, at most 64 MiB */
    conf.cache_bytes = limit / 8;
    if (conf.cache_bytes < 4 * conf.block_bytes)
        conf.cache_bytes = 4 * conf.block_bytes;
    if (conf.cache_bytes > (64u << 20))
        conf.cache_bytes = 64u << 20;
    e = getenv("SLUICE_SPILL_MERGE"); /* experiments: 0 keeps spilled runs apart */
    conf.merge = !(e && !strcmp(e, "0"));
    e = getenv("SLUICE_SPILL_MIN_RUN");
    if (e && atoll(e) >= 0)
        conf.min_run = (size_t)atoll(e);
    bool local = o->storage && strncmp(o->storage, "s3://", 5);
    spill_store_setup(local ? o->storage : NULL, host, hosts, &conf);
    trace_track_new(true);
    e = getenv("SLUICE_TRACE_DEFER"); /* experiments: 0 merges inside the step */
    trace_defer(!(e && !strcmp(e, "0"))); /* merges after each step: trace_tidy_all */
}

void pmem_start(Pipeline *p, const PipelineOpts *o)
{
    PMem *m = sl_calloc(1, sizeof(*m));
    p->pm = m;
    m->limit = resolve_limit(o, &m->source);
    m->watch = o->memory_limit > 0; /* chosen, so probably tight: bound steps at once */
    spill_start(o, m->limit, 0, net_hosts());
}

/* Default steps (no --step-rows): a step's operators' outputs live in
   the workers' step arenas until it ends (a join's matches, the filters
   over them), and the records its stateful operators receive through
   the exchanges stay in their buffers until then too (each sorted into
   one more copy, the operator's consolidated batch), so a backfill cut
   into the largest steps touches fresh memory for all of them at once:
   page faults and peak memory. The rows per step follow what a step held
   per input row, its arena and its exchanged records (XCHG_HELD times),
   so that one worker's share stays near STEP_ARENA (the first step,
   unmeasured, has STEP_FIRST rows per worker); steps whose outputs and
   exchanges are small keep the default size. Counting the exchanges
   halved the peak memory of top-k and window queries (Nexmark q18/q19:
   steps of 150K rows instead of up to 524K) and saved CPU time: fewer
   fresh pages. */
#define STEP_ARENA ((size_t)64 << 20)
#define STEP_FIRST 131072
#define STEP_LEAST 16384 /* rows per worker at the least */
#define XCHG_HELD 1 /* (2, the batch too, made q9's steps too small: slower) */

void pmem_start_steps(Pipeline *p)
{
    PMem *m = p->pm;
    m->rows_max = p->step_rows;
    m->auto_steps = p->o.step_rows <= 0 && m->limit;
    /* the first steps under a flagged limit, unmeasured: as many rows as
       take an eighth of the limit at 1 KiB each (4096 to 65536 rows; a
       top-k or window step that reads back a partition per row takes
       about that), growing twofold per step once measured (adapt_step):
       65536 rows peaked at 2.6x a 32 MB limit in the first step */
    int64_t first = (int64_t)(m->limit / 8 / 1024);
    first = first < 4096 ? 4096 : first > 65536 ? 65536 : first;
    if (m->watch && p->step_rows > first)
        p->step_rows = first;
    else if (m->auto_steps && p->step_rows > (int64_t)p->W * STEP_FIRST)
        p->step_rows = (int64_t)p->W * STEP_FIRST;
}

void pmem_free(Pipeline *p)
{
    PMem *m = p->pm;
    if (!m)
        return;
    SpillStats ss;
    spill_stats(&ss);
    if (ss.runs_spilled > 0)
        fprintf(stderr,
                "sluice: memory: %lld trace runs spilled under the limit of %.1f MB; spilled "
                "blocks read %lld times from the cache, %lld from files; %lld spilled runs "
                "merged away\n",
                (long long)ss.runs_spilled, (double)m->limit / 1048576.0, (long long)ss.hits,
                (long long)ss.misses, (long long)ss.runs_merged);
    spill_store_close();
    sl_free(m->nodes);
    sl_free(m->pub.nodes);
    sl_free(m->hosts);
    sl_free(m->host_nodes);
    sl_free(m->total_nodes);
    sl_free(m->pub.hosts);
    sl_free(m->pub.host_nodes);
    sl_free(m->pub.total_nodes);
    sl_free(m);
    p->pm = NULL;
}

static double now_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_bytes(const void *a, const void *b)
{
    const NodeMem *x = a, *y = b;
    return x->bytes + x->disk_bytes < y->bytes + y->disk_bytes   ? 1
           : x->bytes + x->disk_bytes > y->bytes + y->disk_bytes ? -1
                                                                 : x->node - y->node;
}

/* The bytes of a node's state that cannot spill: all but its traces'
   (a join's and a DISTINCT's state is its traces; an aggregate's MIN/MAX
   value sets are traces, its groups are not). */
static size_t fixed_bytes(const NodeMem *d)
{
    return d->bytes > d->trace_bytes ? d->bytes - d->trace_bytes : 0;
}

/* The node of nodes[0, n) with the most state that cannot spill, or NULL. */
static const NodeMem *largest_fixed(const NodeMem *nodes, int n)
{
    const NodeMem *top = NULL;
    for (int i = 0; i < n; i++)
        if (fixed_bytes(&nodes[i]) > 0 && (!top || fixed_bytes(&nodes[i]) > fixed_bytes(top)))
            top = &nodes[i];
    return top;
}

/* Walk every stateful node of this process's workers. */
static void walk(Pipeline *p)
{
    PMem *m = p->pm;
    const Circuit *c = p->c;
    Runtime *rt = p->be->rt;
    if (!m->nodes)
        m->nodes = sl_calloc((size_t)c->nnodes + 1, sizeof(NodeMem));
    m->nnodes = backend_local_mem(c, rt, m->nodes);
    m->state = m->disk = m->unspillable = 0;
    for (int i = 0; i < m->nnodes; i++) {
        const NodeMem *d = &m->nodes[i];
        m->state += d->bytes;
        m->disk += d->disk_bytes;
        m->unspillable += fixed_bytes(d);
    }
    qsort(m->nodes, (size_t)m->nnodes, sizeof(NodeMem), by_bytes);
    m->arena = rt_arena_bytes(rt);
}

/* Scale-out: every host's memory as of its last reply (host 0's from the
   walk), each host's nodes most bytes first, and the sums per node and in
   all. Followers walk their state for every reply (follow.c), so this
   reads figures only. */
static void gather_hosts(Pipeline *p)
{
    PMem *m = p->pm;
    Backend *be = p->be;
    const Circuit *c = p->c;
    if (be->hosts <= 1 || !be->ops->host_mem)
        return;
    size_t per = (size_t)c->nnodes + 1;
    if (!m->hosts) {
        m->nhosts = be->hosts;
        m->hosts = sl_calloc((size_t)be->hosts, sizeof(HostMem));
        m->host_nodes = sl_calloc((size_t)be->hosts * per, sizeof(NodeMem));
        m->total_nodes = sl_calloc(per, sizeof(NodeMem));
    }
    HostStats *hs = sl_calloc((size_t)m->nhosts, sizeof(HostStats));
    int nhs = be->ops->host_stats(be, hs);
    /* per node, indexed by node number while summing */
    NodeMem *sum = sl_calloc(per, sizeof(NodeMem));
    bool *seen = sl_calloc(per, sizeof(bool));
    m->total_state = m->total_disk = m->total_arena = 0;
    for (int h = 0; h < m->nhosts; h++) {
        HostMem *hm = &m->hosts[h];
        NodeMem *nodes = &m->host_nodes[(size_t)h * per];
        memset(hm, 0, sizeof(*hm));
        hm->first = (int)((size_t)h * per);
        if (h < nhs) {
            snprintf(hm->name, sizeof(hm->name), "%s", hs[h].name);
            hm->rss_bytes = hs[h].rss_bytes;
        }
        int n;
        if (h == 0) {
            memcpy(nodes, m->nodes, sizeof(NodeMem) * (size_t)m->nnodes);
            n = m->nnodes;
            hm->arena_bytes = m->arena;
            SpillStats ss;
            spill_stats(&ss);
            hm->cache_bytes = ss.cache_bytes;
            hm->cache_hits = ss.hits;
            hm->cache_misses = ss.misses;
            hm->spilled_runs = ss.runs_spilled;
            hm->runs_on_disk = ss.runs_live;
            hm->runs_merged = ss.runs_merged;
            spill_store_held(&hm->held_files, &hm->held_bytes);
        } else {
            n = be->ops->host_mem(be, h, nodes, hm);
            if (n < 0)
                continue; /* no figures yet */
            qsort(nodes, (size_t)n, sizeof(NodeMem), by_bytes);
        }
        hm->valid = true;
        hm->nnodes = n;
        for (int i = 0; i < n; i++) {
            const NodeMem *d = &nodes[i];
            hm->state_bytes += d->bytes;
            hm->disk_bytes += d->disk_bytes;
            hm->unspillable_bytes += fixed_bytes(d);
            NodeMem *t = &sum[d->node];
            if (!seen[d->node]) {
                *t = *d;
                seen[d->node] = true;
                continue;
            }
            t->rows += d->rows;
            t->bytes += d->bytes;
            t->disk_bytes += d->disk_bytes;
            t->cache_hits += d->cache_hits;
            t->cache_misses += d->cache_misses;
            t->trace_bytes += d->trace_bytes;
        }
        m->total_state += hm->state_bytes;
        m->total_disk += hm->disk_bytes;
        m->total_arena += hm->arena_bytes;
    }
    m->ntotal = 0;
    for (int n = 0; n < c->nnodes; n++)
        if (seen[n])
            m->total_nodes[m->ntotal++] = sum[n];
    qsort(m->total_nodes, (size_t)m->ntotal, sizeof(NodeMem), by_bytes);
    sl_free(sum);
    sl_free(seen);
    sl_free(hs);
}

/* Scale-out: is another host's resident memory past half the limit
   (which applies to each host)? */
static bool others_past_half(const PMem *m)
{
    for (int h = 1; h < m->nhosts; h++)
        if (m->hosts[h].valid && m->hosts[h].rss_bytes > m->limit / 2)
            return true;
    return false;
}

/* What cannot spill in this version (the pause message lists it): the
   rest of the state (traces, aggregate groups, top-k, window and ASOF
   partitions, PRIMARY KEY tables' rows, materialized contents, rows
   emit_final views hold) spills. */
#define CANNOT_SPILL "spilled runs' indexes, the distinct emit_final values of spilled rows"

/* Can the state fit? When what cannot spill (with the cache) is larger
   than the limit, say so once, naming the largest such node, and hold the
   inputs until it fits again. */
static void judge(Pipeline *p)
{
    PMem *m = p->pm;
    if (!m->limit || m->stuck ||
        (m->hold && m->pressure[0] == 's' && !strncmp(m->pressure, "spilling", 8)))
        return;
    SpillStats ss;
    spill_stats(&ss);
    size_t resident = m->unspillable + ss.cache_bytes;
    /* the largest state that cannot spill */
    const NodeMem *top = largest_fixed(m->nodes, m->nnodes);
    char where[96] = ""; /* scale-out: which host */
    /* the limit applies to each host, and each spills its own traces: what
       counts on another host is its state that cannot spill and its
       cache (all of its state when a spill failed there) */
    for (int h = 1; h < m->nhosts && !(resident > m->limit && top); h++) {
        const HostMem *hm = &m->hosts[h];
        size_t fixed = hm->spill_failed ? hm->state_bytes : hm->unspillable_bytes + hm->cache_bytes;
        if (!hm->valid || fixed <= m->limit || !hm->nnodes)
            continue;
        resident = fixed;
        /* its largest node that cannot spill (or any, after a failed spill) */
        top = hm->spill_failed ? NULL : largest_fixed(&m->host_nodes[hm->first], hm->nnodes);
        if (!top)
            top = &m->host_nodes[hm->first];
        snprintf(where, sizeof(where), "host %d (%.40s): %s", h, hm->name,
                 hm->spill_failed ? "spilling failed there; " : "");
    }
    if (m->nhosts > 1 && !where[0])
        snprintf(where, sizeof(where), "host 0 (%s): ", m->hosts[0].name);
    if (resident > m->limit && top) {
        snprintf(m->pressure, sizeof(m->pressure),
                 "%sstate that cannot spill (%zu bytes) exceeds the memory limit (%zu bytes); "
                 "largest: node %d (%s of %s, %zu bytes); cannot spill: " CANNOT_SPILL,
                 where, resident, m->limit, top->node, top->kind, p->c->rels[top->rel].name,
                 where[0] && strstr(where, "spilling failed") ? top->bytes : fixed_bytes(top));
        if (!m->said)
            fprintf(stderr, "sluice: memory: %s; inputs are paused\n", m->pressure);
        m->said = m->hold = true;
    } else {
        m->pressure[0] = 0;
        m->said = m->hold = false;
    }
}

bool pmem_refresh(Pipeline *p, bool force)
{
    PMem *m = p->pm;
    /* at most 5% of the controller's time walking */
    double now = now_secs(), gap = m->cost * 20 > 0.01 ? m->cost * 20 : 0.01;
    if (m->walked && !force && now - m->last < gap)
        return false;
    walk(p);
    gather_hosts(p);
    m->rss = mem_rss_bytes();
    m->watch = m->limit && (m->rss > m->limit / 2 || !strcmp(m->source, "flag") ||
                            others_past_half(m));
    m->last = now_secs();
    m->cost = m->last - now;
    m->walked = true;
    judge(p);
    SpillStats ss;
    spill_stats(&ss);
    const char *dir = spill_store_where();
    pthread_mutex_lock(&p->mu);
    MemStats *o = &m->pub;
    NodeMem *keep = o->nodes, *keep_hn = o->host_nodes, *keep_tn = o->total_nodes;
    HostMem *keep_h = o->hosts;
    memset(o, 0, sizeof(*o));
    o->nodes = keep ? keep : sl_calloc((size_t)p->c->nnodes + 1, sizeof(NodeMem));
    o->hosts = keep_h;
    o->host_nodes = keep_hn;
    o->total_nodes = keep_tn;
    memcpy(o->nodes, m->nodes, sizeof(NodeMem) * (size_t)m->nnodes);
    o->nnodes = m->nnodes;
    o->limit = m->limit;
    o->limit_source = m->source;
    o->state_bytes = m->state;
    o->disk_bytes = m->disk;
    o->cache_bytes = ss.cache_bytes;
    o->cache_hits = ss.hits;
    o->cache_misses = ss.misses;
    o->spilled_runs = ss.runs_spilled;
    o->runs_on_disk = ss.runs_live;
    o->runs_merged = ss.runs_merged;
    spill_store_held(&o->held_files, &o->held_bytes);
    o->arena_bytes = m->arena;
    o->age_secs = m->last; /* made an age by pipeline_stats */
    snprintf(o->spill_dir, sizeof(o->spill_dir), "%s", dir ? dir : "");
    snprintf(o->pressure, sizeof(o->pressure), "%s", m->pressure);
    o->hold = m->hold;
    if (m->nhosts) {
        size_t per = (size_t)p->c->nnodes + 1;
        if (!o->hosts) {
            o->hosts = sl_calloc((size_t)m->nhosts, sizeof(HostMem));
            o->host_nodes = sl_calloc((size_t)m->nhosts * per, sizeof(NodeMem));
            o->total_nodes = sl_calloc(per, sizeof(NodeMem));
        }
        o->nhosts = m->nhosts;
        memcpy(o->hosts, m->hosts, sizeof(HostMem) * (size_t)m->nhosts);
        memcpy(o->host_nodes, m->host_nodes, sizeof(NodeMem) * (size_t)m->nhosts * per);
        o->ntotal = m->ntotal;
        memcpy(o->total_nodes, m->total_nodes, sizeof(NodeMem) * per);
        o->total_state_bytes = m->total_state;
        o->total_disk_bytes = m->total_disk;
        o->total_arena_bytes = m->total_arena;
    }
    pthread_mutex_unlock(&p->mu);
    return true;
}

/* Bytes of state the spill budget sees outside the traces' runs: what
   cannot spill, plus (when watching) the process's baseline and a step's
   own allocations. */
static size_t other_bytes(const PMem *m)
{
    return m->unspillable + (m->watch ? m->base + m->trans : 0);
}

void pmem_before_step(Pipeline *p, int64_t rows)
{
    PMem *m = p->pm;
    if (!m || !m->limit)
        return;
    m->rows_in = rows;
    Runtime *rt = p->be->rt;
    Backend *be = p->be;
    be->step_limit = be->step_floor = 0;
    be->step_retry = false;
    if (!m->watch) {
        rt_set_step_memory(rt, 0);
        return;
    }
    if (!rt_can_undo_step(rt)) {
        /* no allowance (a top-k, window or emit_final cannot undo a step),
           but the step is measured all the same (a bound it never
           reaches), so that the rows per step follow what it allocates:
           such a step reads back the spilled partitions it touches. With
           several hosts every host bounds a step or none does (the hosts
           agree on failures after each phase, runtime/worker.c), so STEP
           carries the same unreachable bound: each host gives its workers
           what that leaves (follow.c, step_allowance) and counts what its
           step allocated, with its baseline, when it spills */
        rt_set_step_memory(rt, INT64_MAX / 4);
        if (be->hosts > 1)
            be->step_limit = be->step_floor = INT64_MAX / 4;
        return;
    }
    /* what the step may allocate: the room left under the limit, at least
       a quarter of it (and 16 MiB); on the retry after spilling all it can,
       the whole limit (and 64 MiB): a step that needs more than that on
       its own cannot fit */
    size_t rss = mem_rss_bytes(), floor = m->retry ? m->limit : m->limit / 4;
    if (floor < (m->retry ? 64u << 20 : 16u << 20))
        floor = m->retry ? 64u << 20 : 16u << 20;
    SpillStats ss;
    spill_stats(&ss);
    size_t known = spill_resident() + m->unspillable + ss.cache_bytes;
    m->base = rss > known ? rss - known : 0;
    size_t room = m->limit > rss ? m->limit - rss : 0;
    if (room < floor)
        room = floor;
    rt_set_step_memory(rt, (int64_t)(room / (size_t)rt_workers(rt)));
    /* the other hosts: the same from their own resident memory (follow.c) */
    be->step_limit = (int64_t)m->limit;
    be->step_floor = (int64_t)floor;
    be->step_retry = m->retry;
}

/* Adapt the rows per step to what a step allocates per input row: as
   many as take about an eighth of the limit (from 4096 rows up to
   --step-rows, at most doubling from one step to the next); back to
   --step-rows when memory is plentiful again. */
static void adapt_step(Pipeline *p, PMem *m)
{
    if (!m->rows_max)
        m->rows_max = p->step_rows;
    int64_t want = m->rows_max;
    if (m->watch && m->per_row > 0)
        want = (int64_t)((double)(m->limit / 8) / m->per_row);
    if (m->auto_steps && m->arena_per_row > 0) {
        int64_t fit = (int64_t)((double)STEP_ARENA / m->arena_per_row);
        fit = (fit < STEP_LEAST ? STEP_LEAST : fit) * p->W;
        want = fit < want ? fit : want;
    }
    if (want > 2 * p->step_rows)
        want = 2 * p->step_rows;
    if (want > m->rows_max)
        want = m->rows_max;
    int64_t least = m->rows_max < 4096 ? m->rows_max : 4096; /* (never above --step-rows) */
    p->step_rows = want < least ? least : want;
}

int pmem_after_step(Pipeline *p, Err *err)
{
    PMem *m = p->pm;
    if (!m || !m->limit)
        return 0;
    if (!m->walked)
        pmem_refresh(p, true);
    if (m->watch) {
        size_t t = (size_t)rt_step_memory_peak(p->be->rt);
        m->trans = t > m->trans / 4 * 3 ? t : m->trans / 4 * 3;
        if (m->rows_in > 0 && t > 0) { /* (a decaying maximum too) */
            double r = (double)t / (double)m->rows_in;
            m->per_row = r > m->per_row * 0.75 ? r : m->per_row * 0.75;
        }
    }
    if (m->auto_steps && m->rows_in > 0) {
        double share = (double)m->rows_in / p->W;
        size_t held = rt_step_arena_used(p->be->rt) + XCHG_HELD * rt_step_exchanged(p->be->rt);
        double r = (double)held / (share > 1 ? share : 1);
        m->arena_per_row = r > m->arena_per_row * 0.75 ? r : m->arena_per_row * 0.75;
    }
    m->retry = false;
    Err e = {0};
    size_t spilled = 0;
    int merged = 0;
    int rc = spill_enforce(other_bytes(m), &spilled, &e);
    if (!rc)
        rc = spill_compact(&merged, &e);
    if (spilled || merged)
        m->last = 0; /* the figures changed: the next refresh (the step's
                        stats_publish) walks, whatever the throttle says */
    if (rc) {
        snprintf(m->pressure, sizeof(m->pressure), "spilling failed: %.200s", e.msg);
        if (!m->said)
            fprintf(stderr, "sluice: memory: %s; inputs are paused\n", m->pressure);
        m->said = m->hold = true;
        return 0; /* the state stays in memory; no more input grows it */
    }
    adapt_step(p, m);
    if (m->watch || spilled) {
        /* give what the step and the spilled runs freed back to the system */
        if (spilled || m->trans > m->limit / 8) {
            malloc_trim(0);
            mem_big_trim();
        }
        m->rss = mem_rss_bytes();
        m->watch = m->rss > m->limit / 2 || !strcmp(m->source, "flag") || others_past_half(m);
    }
    judge(p);
    return 0;
}

bool pmem_step_failed(Pipeline *p, bool stall_ok)
{
    PMem *m = p->pm;
    char name[64] = "", where[96] = "";
    int host = 0;
    int node = m && m->limit ? p->be->ops->mem_node(p->be, &host, name, sizeof(name)) : -1;
    if (!m || !m->limit || node == -1)
        return false;
    if (p->be->hosts > 1) /* (the limit applies to each host) */
        snprintf(where, sizeof(where), " on host %d (%s)", host, name);
    if (!m->retry && !m->stuck) {
        /* once: move every run that can spill to files, and try again */
        Err e = {0};
        spill_enforce(SIZE_MAX / 4, NULL, &e);
        malloc_trim(0);
        mem_big_trim();
        m->retry = true;
        pmem_before_step(p, m->rows_in);
        return true;
    }
    m->retry = false;
    rt_set_step_memory(p->be->rt, 0);
    p->be->step_limit = p->be->step_floor = 0;
    p->be->step_retry = false;
    if (!stall_ok)
        return false;
    m->stuck = m->hold = true;
    const Circuit *c = p->c;
    if (node >= 0) {
        const char *kind = backend_mem_kind(c->nodes[node]->k);
        snprintf(m->pressure, sizeof(m->pressure),
                 "step %lld needs more memory than the limit (%zu bytes) leaves%s, in node %d "
                 "(%s of %s); its input waits",
                 (long long)rt_steps(p->be->rt) + 1, m->limit, where, node,
                 kind ? kind : "operator", c->rels[c->nodes[node]->owner].name);
    } else {
        snprintf(m->pressure, sizeof(m->pressure),
                 "step %lld needs more memory than the limit (%zu bytes) leaves%s, reading "
                 "its input; its input waits",
                 (long long)rt_steps(p->be->rt) + 1, m->limit, where);
    }
    fprintf(stderr, "sluice: memory: %s; inputs are paused\n", m->pressure);
    m->said = true;
    pmem_refresh(p, true);
    return false;
}

bool pmem_step_stuck(Pipeline *p) { return p->pm && p->pm->stuck; }

bool pmem_hold(Pipeline *p) { return p->pm && p->pm->hold; }

bool pmem_bounded(Pipeline *p) { return p->pm && p->pm->limit; }

void pmem_stats(Pipeline *p, MemStats *out, double now)
{
    /* under p->mu (pipeline_stats) */
    PMem *m = p->pm;
    memset(out, 0, sizeof(*out));
    if (!m)
        return;
    *out = m->pub;
    out->nodes = sl_calloc((size_t)m->pub.nnodes + 1, sizeof(NodeMem));
    if (m->pub.nnodes)
        memcpy(out->nodes, m->pub.nodes, sizeof(NodeMem) * (size_t)m->pub.nnodes);
    out->age_secs = m->pub.age_secs > 0 ? now - m->pub.age_secs : 0;
    out->hosts = NULL;
    out->host_nodes = out->total_nodes = NULL;
    if (m->pub.nhosts && m->pub.hosts) {
        size_t per = (size_t)p->c->nnodes + 1, nh = (size_t)m->pub.nhosts;
        out->hosts = sl_malloc(sizeof(HostMem) * nh);
        memcpy(out->hosts, m->pub.hosts, sizeof(HostMem) * nh);
        out->host_nodes = sl_malloc(sizeof(NodeMem) * nh * per);
        memcpy(out->host_nodes, m->pub.host_nodes, sizeof(NodeMem) * nh * per);
        out->total_nodes = sl_malloc(sizeof(NodeMem) * per);
        memcpy(out->total_nodes, m->pub.total_nodes, sizeof(NodeMem) * per);
    } else {
        out->nhosts = 0;
    }
}

/* ---- a follower's own budget (follow.c) ----

   Every host spills its own traces under the limit, which applies to each
   host, into its own directory (spill_start). The follower spills after
   each step as host 0 does (pmem_after_step): what cannot spill counts
   with the figures of its last walk (every reply walks), and in a bounded
   step (the coordinator watches: STEP carries the limit) the baseline and
   what a step allocates count too. */
struct PMemHost {
    size_t limit;
    int host;
    size_t unspillable;  /* the last walk's state that cannot spill */
    size_t base, trans;  /* baseline, a step's own allocations (decaying maximum) */
    bool bounded;        /* the step under way is bounded and measured */
    bool failed;         /* a spill failed: nothing more spills (host 0 pauses) */
};

PMemHost *pmem_host_start(const PipelineOpts *o, int host, int hosts)
{
    PMemHost *h = sl_calloc(1, sizeof(*h));
    const char *source;
    h->limit = resolve_limit(o, &source);
    h->host = host;
    spill_start(o, h->limit, host, hosts);
    return h;
}

void pmem_host_walked(PMemHost *h, const Circuit *c, const NodeMem *nodes, int n)
{
    if (!h)
        return;
    (void)c;
    h->unspillable = 0;
    for (int i = 0; i < n; i++)
        h->unspillable += fixed_bytes(&nodes[i]);
}

void pmem_host_before_step(PMemHost *h, bool bounded, bool retry)
{
    if (!h || !h->limit)
        return;
    h->bounded = bounded;
    if (retry && !h->failed) { /* as pmem_step_failed: every run that can spill goes */
        Err e = {0};
        if (spill_enforce(SIZE_MAX / 4, NULL, &e)) {
            fprintf(stderr, "sluice: memory: host %d (%s): spilling failed: %s\n", h->host,
                    net_host_name(h->host), e.msg);
            h->failed = true;
        }
    }
    if (!bounded)
        return;
    SpillStats ss;
    spill_stats(&ss);
    size_t rss = mem_rss_bytes(), known = spill_resident() + h->unspillable + ss.cache_bytes;
    h->base = rss > known ? rss - known : 0;
}

void pmem_host_after_step(PMemHost *h, Runtime *rt)
{
    if (!h || !h->limit || h->failed)
        return;
    if (h->bounded) {
        size_t t = (size_t)rt_step_memory_peak(rt);
        h->trans = t > h->trans / 4 * 3 ? t : h->trans / 4 * 3;
    }
    Err e = {0};
    size_t spilled = 0;
    int rc = spill_enforce(h->unspillable + (h->bounded ? h->base + h->trans : 0), &spilled, &e);
    if (!rc)
        rc = spill_compact(NULL, &e);
    if (rc) {
        fprintf(stderr, "sluice: memory: host %d (%s): spilling failed: %s\n", h->host,
                net_host_name(h->host), e.msg);
        h->failed = true; /* the state stays in memory; host 0 pauses the inputs */
        return;
    }
    if (spilled || (h->bounded && h->trans > h->limit / 8)) {
        malloc_trim(0);
        mem_big_trim();
    }
}

size_t pmem_host_cache_bytes(const PMemHost *h)
{
    if (!h || !h->limit)
        return 0;
    SpillStats ss;
    spill_stats(&ss);
    return ss.cache_bytes;
}

bool pmem_host_failed(const PMemHost *h) { return h && h->failed; }

void pmem_host_free(PMemHost *h)
{
    if (!h)
        return;
    SpillStats ss;
    spill_stats(&ss);
    if (ss.runs_spilled > 0)
        fprintf(stderr,
                "sluice: memory: host %d (%s): %lld trace runs spilled under the limit of %.1f "
                "MB; spilled blocks read %lld times from the cache, %lld from files; %lld "
                "spilled runs merged away\n",
                h->host, net_host_name(h->host), (long long)ss.runs_spilled,
                (double)h->limit / 1048576.0, (long long)ss.hits, (long long)ss.misses,
                (long long)ss.runs_merged);
    spill_store_close();
    sl_free(h);
}
