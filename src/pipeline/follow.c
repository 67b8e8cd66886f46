/*
 * pipeline/follow.c - a follower of a scale-out pipeline (ranks > 0): the
 * loop that receives one command at a time from the coordinator (dist.c,
 * whose header describes the protocol) and answers it over this host's
 * share of the workers, the file inputs this host reads (kept until a
 * step takes them), the output connectors it writes (each step's changes
 * of their views gathered from every host and handed to this host's
 * Delivery, io/deliver.c, whose figures ride on every reply: fol_outputs)
 * and this host's share of every checkpoint (a child forked by
 * snapshot.c's ckpt_fork, its report sent with a later reply).
 * Every reply carries the host's figures; pipeline_follow_failed answers
 * the first command when this rank could not even start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../cluster/net.h"
#include "../io/deliver.h"
#include "../zset/key.h"
#include "../zset/spill.h"
#include "backend.h"
#include "boot.h"
#include "dist_wire.h"
#include "journal.h"
#include "snapshot.h"


static int64_t cpu_msecs(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 +
           (int64_t)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
}

/* This host's figures: fixed part, then per relation (changes, net rows),
   then per node the divisions by zero, then its memory (step arenas, the
   node where the last step passed its allowance or -1, its cache of
   spilled blocks, whether a spill failed, its spill counters: cache hits
   and misses, runs spilled, on disk and merged away, files kept for a
   checkpoint's child and their bytes; per stateful node its rows, bytes
   in memory and on disk, cache hits and misses, bytes of its traces: one
   walk of the state, which also gives the fixed part's state bytes and
   what cannot spill to the budget, pm), then the delivery figures of the
   outputs it writes (deliver_report_put). */
static void put_figures(const Circuit *c, Runtime *rt, Delivery *dl, PMemHost *pm, Buf *b)
{
    NodeMem *nodes = sl_calloc((size_t)c->nnodes + 1, sizeof(NodeMem));
    int nn = backend_local_mem(c, rt, nodes);
    pmem_host_walked(pm, c, nodes, nn);
    size_t state = 0;
    for (int i = 0; i < nn; i++)
        state += nodes[i].bytes;
    put64(b, (int64_t)mem_rss_bytes());
    put64(b, (int64_t)mem_peak_rss_bytes());
    put64(b, (int64_t)state);
    put64(b, cpu_msecs());
    put64(b, rt_remote_bytes(rt));
    put64(b, rt_steps(rt));
    put64(b, (int64_t)(rt_remote_secs(rt) * 1e6));
    for (int i = 0; i < c->nrels; i++) {
        int64_t ch, rows;
        backend_local_rel_figures(c, rt, i, &ch, &rows);
        put64(b, ch);
        put64(b, rows);
    }
    for (int n = 0; n < c->nnodes; n++)
        put64(b, rt_divzero_node(rt, n));
    put64(b, (int64_t)rt_arena_bytes(rt));
    put64(b, rt_step_memory_node(rt));
    put64(b, (int64_t)pmem_host_cache_bytes(pm));
    put64(b, pmem_host_failed(pm));
    SpillStats ss; /* its spill counters (dist.c HostFig.spill) */
    spill_stats(&ss);
    int64_t held_files;
    size_t held_bytes;
    spill_store_held(&held_files, &held_bytes);
    put64(b, ss.hits);
    put64(b, ss.misses);
    put64(b, ss.runs_spilled);
    put64(b, ss.runs_live);
    put64(b, ss.runs_merged);
    put64(b, held_files);
    put64(b, (int64_t)held_bytes);
    put32(b, nn);
    for (int i = 0; i < nn; i++) {
        const NodeMem *d = &nodes[i];
        put32(b, d->node);
        put64(b, d->rows);
        put64(b, (int64_t)d->bytes);
        put64(b, (int64_t)d->disk_bytes);
        put64(b, d->cache_hits);
        put64(b, d->cache_misses);
        put64(b, (int64_t)d->trace_bytes);
    }
    sl_free(nodes);
    deliver_report_put(dl, b);
}

/* A STEP's memory allowance (pipeline/memory.c, pmem_before_step): with
   a limit, this host's workers may allocate the room its resident memory
   leaves under it, at least floor (the whole limit on the retry after a
   step past it: every trace run that can spill goes to files and what was
   freed goes back to the system first), shared among them; every host
   bounds the step or none does (worker.c). */
static void step_allowance(Runtime *rt, PMemHost *pm, int64_t limit, int64_t floor, bool retry)
{
    bool bounded = limit > 0 && floor > 0;
    pmem_host_before_step(pm, bounded, bounded && retry);
    if (!bounded) {
        rt_set_step_memory(rt, 0);
        return;
    }
    if (retry) {
        malloc_trim(0);
        mem_big_trim();
    }
    int64_t rss = (int64_t)mem_rss_bytes(), room = limit > rss ? limit - rss : 0;
    if (room < floor)
        room = floor;
    int64_t per = room / rt_workers(rt);
    rt_set_step_memory(rt, per > 0 ? per : 1);
}

void pipeline_follow_failed(const char *why)
{
    int H = net_hosts();
    Buf *send = host_bufs_new(H), *recv = host_bufs_new(H);
    net_exchange(send, recv); /* the first command, whatever it is */
    put32(&send[0], SL_ECONFIG);
    put32(&send[0], (int32_t)strlen(why));
    buf_append(&send[0], why, strlen(why));
    net_exchange(send, recv);
    host_bufs_free(send, H);
    host_bufs_free(recv, H);
}

/* ---------------------------------------------------------------- follower */

/* Rows a follower read for one of its file inputs, kept until a step
   takes them. */
typedef struct Kept {
    Arena *a;
    Piece *head, *tail;
    int64_t base, n;      /* row number of the first, rows kept */
} Kept;

/* A follower's share of fault tolerance. */
typedef struct Fol {
    const PipelineOpts *o;
    Store *st;
    pid_t pid;            /* the checkpoint child, or 0 */
    int fd;
    int64_t step;         /* its checkpoint's step */
    double end;           /* its deadline (ckpt_clock; 0: none) */
    Buf report;
    bool done;            /* report complete, not sent yet */
    char *prev_state;     /* this host's files of the last checkpoint (JSON) */
} Fol;

static int fol_store(Fol *f, Err *err)
{
    if (f->st)
        return 0;
    if (!f->o->storage)
        return err_set(err, SL_ECONFIG, "no storage configured on this host");
    return store_open_member(f->o->storage, &f->st, err);
}

/* SLUICE_CRASH_AT=after-checkpoint:N (storage.h): a follower's N-th share
   of a checkpoint is written. */
static void crash_after_share(void)
{
    static int64_t shares;
    store_crash_at_count("after-checkpoint", ++shares);
}

/* Read what the child reported so far; done once it exited. */
static void fol_poll(Fol *f)
{
    if (!f->pid || f->done)
        return;
    char chunk[65536];
    bool late = false;
    for (;;) {
        ssize_t k = read(f->fd, chunk, sizeof(chunk));
        if (k > 0) {
            buf_append(&f->report, chunk, (size_t)k);
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EAGAIN) {
            if (!f->end || ckpt_clock() < f->end)
                return;
            late = true; /* it hangs past its deadline */
            break;
        }
        break; /* EOF */
    }
    if (late) { /* killed; its report says so, ahead */
        ckpt_reap_until(f->fd, f->pid, f->end, f->o->checkpoint_timeout, &f->report);
        f->pid = 0;
        f->done = true;
        return;
    }
    close(f->fd);
    int status = 0;
    while (waitpid(f->pid, &status, 0) < 0 && errno == EINTR)
        ;
    spill_store_release_owner(f->pid); /* the spill files it read (ckpt_fork) */
    if (WIFEXITED(status) && WEXITSTATUS(status) == 137 && getenv("SLUICE_CRASH_AT"))
        _exit(137);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        buf_puts(&f->report, "\nDIED\n");
    else
        crash_after_share();
    f->pid = 0;
    f->done = true;
}

/* Append the finished report (if any) to a reply. */
static void fol_report(Fol *f, Buf *b)
{
    fol_poll(f);
    if (!f->done) {
        put32(b, 0);
        return;
    }
    put32(b, 1);
    put64(b, f->step);
    put32(b, (int32_t)f->report.n);
    buf_append(b, f->report.p, f->report.n);
    /* its files are what unchanged nodes keep next time */
    cJSON *state = cJSON_CreateArray();
    int64_t a = 0, bb = 0, c = 0;
    Err e = {0};
    sl_free(f->prev_state);
    f->prev_state = NULL;
    if (!ckpt_parse_report(buf_cstr(&f->report), state, &a, &bb, &c, &e)) {
        char *t = cJSON_PrintUnformatted(state);
        f->prev_state = sl_strdup(t);
        cJSON_free(t);
    }
    cJSON_Delete(state);
    buf_reset(&f->report);
    f->done = false;
}

/* Make what this host's output connectors wrote durable (a checkpoint
   that records their offsets, or a journal record after a step, counts
   on it). */
static int sync_outputs(Connectors *cs, Err *err)
{
    for (int j = 0; j < cs->nout; j++)
        if (!output_remote(cs->out[j]) && output_sync(cs->out[j], err))
            return err->code;
    return 0;
}

static void fol_ckpt(Fol *f, const Circuit *c, Runtime *rt, Connectors *cs, int64_t step,
                     bool full)
{
    if (f->pid) { /* cannot happen: the coordinator runs one at a time */
        Buf junk = BUF_INIT;
        ckpt_reap_until(f->fd, f->pid, f->end, f->o->checkpoint_timeout, &junk);
        buf_free(&junk);
        f->pid = 0;
    }
    buf_reset(&f->report);
    f->step = step;
    f->done = false;
    Err e = {0};
    int nn = c->nnodes;
    bool *dirty = sl_calloc((size_t)nn + 1, sizeof(bool));
    for (int n = 0; n < nn; n++)
        dirty[n] = full || !f->prev_state || rt_node_changed(rt, n);
    int rc = sync_outputs(cs, &e);
    if (!rc)
        rc = fol_store(f, &e);
    if (!rc)
        rc = ckpt_fork(f->st, rt, nn, dirty, full ? NULL : f->prev_state, &f->pid, &f->fd, &e);
    sl_free(dirty);
    if (rc) {
        buf_printf(&f->report, "ERR %s\n", e.msg);
        f->done = true;
        return;
    }
    fcntl(f->fd, F_SETFL, fcntl(f->fd, F_GETFL) | O_NONBLOCK);
    f->end = f->o->checkpoint_timeout > 0 ? ckpt_clock() + f->o->checkpoint_timeout : 0;
    rt_clear_changed(rt);
}

static int fol_restore(Fol *f, const Circuit *c, Runtime *rt, const uint8_t *text, size_t n,
                       int W0, Err *err)
{
    char *s = sl_malloc(n + 1);
    memcpy(s, text, n);
    s[n] = 0;
    cJSON *state = cJSON_Parse(s);
    int rc = 0;
    if (!state)
        rc = err_set(err, SL_EIO, "the checkpoint state does not parse");
    else if (cJSON_GetArraySize(state) > 0 && !(rc = fol_store(f, err)))
        rc = ckpt_load_state(f->st, rt, c->nnodes, state, W0, err);
    cJSON_Delete(state);
    sl_free(f->prev_state);
    /* re-sharded state (another worker count) has no files of its own yet */
    f->prev_state = rc || W0 != rt_total_workers(rt) ? NULL : s;
    if (!f->prev_state)
        sl_free(s);
    rt_clear_changed(rt);
    return rc;
}

/* Decode a STEP command's pieces into per (local worker, relation) lists. */
/* Pieces for rows [start, start + count) of what k keeps, from arena a. */
static Piece *kept_slice(Kept *k, int64_t start, int64_t count, Arena *a)
{
    Piece *head = NULL, *tail = NULL;
    int64_t at = k->base;
    for (Piece *pc = k->head; pc && count > 0; pc = pc->next) {
        int64_t n = pc->chunk->n;
        if (start < at + n) {
            int64_t off = start - at, take = SL_MIN(n - off, count);
            Piece *q = arena_zalloc(a, sizeof(*q));
            q->chunk = chunk_slice(a, pc->chunk, off, take);
            if (tail)
                tail->next = q;
            else
                head = q;
            tail = q;
            start += take;
            count -= take;
        }
        at += n;
    }
    return count > 0 ? NULL : head;
}

static void kept_drop(Kept *k, int n)
{
    for (int j = 0; j < n; j++) {
        if (k[j].a)
            arena_reset(k[j].a);
        k[j].head = k[j].tail = NULL;
        k[j].n = 0;
    }
}

static int take_pieces(const Circuit *c, Runtime *rt, Connectors *cs, Kept *kept, Rd *r,
                       Arena *a, Err *err)
{
    int nl = rt_workers(rt);
    Piece **tails = arena_zalloc(a, sizeof(Piece *) * (size_t)nl * (size_t)(c->nrels + 1));
    while (r->p < r->end && !r->bad) {
        int lw = rd32(r), rel = rd32(r), kind = rd32(r);
        if (r->bad || lw < 0 || lw >= nl || rel < 0 || rel >= c->nrels)
            return err_set(err, SL_ERUNTIME, "malformed step input from the coordinator");
        Piece *pc = arena_zalloc(a, sizeof(*pc));
        const Relation *rr = &c->rels[rel];
        if (kind == 2) {
            int conn = rd32(r);
            int64_t start = rd64(r), count = rd64(r);
            Piece *l = !r->bad && conn >= 0 && conn < cs->nin && count > 0 && start >= 0 &&
                               start <= INT64_MAX - count
                           ? kept_slice(&kept[conn], start, count, a)
                           : NULL;
            if (!l)
                return err_set(err, SL_ERUNTIME,
                               "step input names %lld rows from row %lld of input %d, which this "
                               "host does not hold",
                               (long long)count, (long long)start, conn);
            Piece **t = &tails[(size_t)lw * (size_t)c->nrels + (size_t)rel];
            for (Piece *q = l; q;) {
                Piece *nx = q->next;
                q->next = NULL;
                if (*t)
                    (*t)->next = q;
                else
                    rt_set_input(rt, lw, rel, q);
                *t = q;
                q = nx;
            }
            continue;
        }
        if (kind == 1) {
            int conn = rd32(r);
            pc->plan = rd32(r);
            pc->negate = rd32(r) != 0;
            pc->start = rd64(r);
            pc->count = rd64(r);
            if (r->bad || conn < 0 || conn >= cs->nin || !input_gen(cs->in[conn]))
                return err_set(err, SL_ERUNTIME, "step input names no generator");
            input_gen_piece(cs->in[conn], pc);
        } else {
            int64_t n = rd_count64(r, 12); /* a row: 8 bytes of weight, 4 of length, ... */
            if (r->bad)
                return err_set(err, SL_ERUNTIME, "malformed step input from the coordinator");
            Chunk *ch = chunk_new(a, rr->ncol, rr->types, n ? n : 1);
            size_t pad = 9 * (size_t)rr->ncol + 1;
            for (int64_t i = 0; i < n && !r->bad; i++) {
                ch->w[i] = rd64(r);
                int32_t len = rd32(r);
                const uint8_t *row = len >= 0 ? rd_bytes(r, (size_t)len) : NULL;
                if (!row) {
                    r->bad = true;
                    break;
                }
                /* checked against its length on a zero-padded copy, so that
                   a damaged row cannot make the decoder read past it; the
                   decoded strings point into the copy (in a) */
                uint8_t *copy = arena_alloc(a, (size_t)len + pad);
                memcpy(copy, row, (size_t)len);
                memset(copy + len, 0, pad);
                if (key_skip(copy, rr->types, rr->ncol) != copy + len) {
                    r->bad = true;
                    break;
                }
                key_decode(copy, rr->types, rr->ncol, ch, 0, i);
            }
            if (r->bad)
                return err_set(err, SL_ERUNTIME, "malformed step input from the coordinator");
            ch->n = n;
            pc->chunk = ch;
        }
        if (r->bad)
            return err_set(err, SL_ERUNTIME, "malformed step input from the coordinator");
        Piece **t = &tails[(size_t)lw * (size_t)c->nrels + (size_t)rel];
        if (*t)
            (*t)->next = pc;
        else
            rt_set_input(rt, lw, rel, pc);
        *t = pc;
    }
    return 0;
}

/* The step's changes of the relations the coordinator wants (want[nwant]:
   its outputs' views and egress subscriptions). */
static void put_changes(const Circuit *c, Runtime *rt, const int *want, int nwant, Buf *b)
{
    put32(b, nwant);
    for (int k = 0; k < nwant; k++)
        put_rel_changes(c, rt, want[k], b);
}

/* Whether p[0..n) is a whole number of xrec records. */
static bool xrec_fits(const uint8_t *p, int64_t n)
{
    int64_t at = 0;
    while (at < n) {
        uint32_t kn, vn;
        if (n - at < 16)
            return false;
        memcpy(&kn, p + at, 4);
        memcpy(&vn, p + at + 4, 4);
        if ((int64_t)kn + (int64_t)vn > n - at - 16)
            return false;
        at += 16 + (int64_t)kn + (int64_t)vn;
    }
    return true;
}

/* A batch of xrec records. */
static Batch *xrec_batch(const Buf *x)
{
    BatchBuilder *bb = bb_new();
    size_t pos = 0;
    XRec r;
    while (xrec_next(x, &pos, &r))
        bb_add(bb, r.k, r.kn, NULL, 0, r.w);
    return bb_finish(bb);
}

/* Deliver step's changes of every view this host writes output connectors
   of: this host's own and those other hosts sent (got, per relation),
   consolidated into one batch per view, as a single host would, through
   this host's Delivery (io/deliver.c: retries, the queue, dead letters;
   src_wall: when the step's input arrived, for the lag), then sync each
   output when the journal counts on it (sync). A quiet step (replayed,
   already written) is only counted (output_account). snap[j], when not
   empty, replaces output j's changes once (a bootstrap's snapshot: BOOT). */
static int write_outputs(const Circuit *c, Runtime *rt, Connectors *cs, Delivery *dl, int me,
                         Buf *got, Buf *snap, int64_t step, bool quiet, bool sync,
                         double src_wall, Err *err)
{
    const Batch **chg = sl_calloc((size_t)cs->nout + 1, sizeof(*chg));
    Batch **own = sl_calloc((size_t)c->nrels + 1, sizeof(*own));
    Batch **snapb = sl_calloc((size_t)cs->nout + 1, sizeof(*snapb));
    int rc = 0;
    for (int rel = 0; rel < c->nrels; rel++) {
        if (!host_writes(cs, me, rel))
            continue;
        BatchBuilder *bb = bb_new();
        backend_local_changes(rt, c->rels[rel].sink, bb);
        size_t pos = 0;
        XRec x;
        while (xrec_next(&got[rel], &pos, &x))
            bb_add(bb, x.k, x.kn, NULL, 0, x.w);
        Batch *b = own[rel] = bb_finish(bb);
        for (int j = 0; j < cs->nout; j++) {
            OutputConn *oc = cs->out[j];
            if (output_remote(oc) || output_rel(oc) != rel)
                continue;
            chg[j] = b;
            if (snap[j].n) { /* bootstrapping: a new destination's snapshot (BOOT) */
                chg[j] = snapb[j] = xrec_batch(&snap[j]);
                buf_reset(&snap[j]);
            }
            if (quiet) /* replayed: already written; counted as written */
                output_account(oc, step, chg[j]);
        }
    }
    if (quiet)
        deliver_account(dl, step, chg);
    else if (dl)
        rc = deliver_step(dl, step, chg, src_wall, err);
    else
        rc = err_set(err, SL_ERUNTIME, "step %lld: this host's outputs have no delivery",
                     (long long)step);
    for (int j = 0; j < cs->nout && !rc && sync && !quiet; j++)
        if (!output_remote(cs->out[j]) && output_sync(cs->out[j], err))
            rc = err->code ? err->code : SL_EIO;
    for (int rel = 0; rel < c->nrels; rel++)
        if (own[rel])
            batch_unref(own[rel]);
    for (int j = 0; j < cs->nout; j++)
        if (snapb[j])
            batch_unref(snapb[j]);
    sl_free(snapb);
    sl_free(own);
    sl_free(chg);
    return rc;
}

/* The end of a STEP when outputs are spread (outputs_spread). In the reply
   exchange every other host sent this one its status and its changes of
   the views this host writes (put_owner_part, now in recv); unless the
   step failed on some host, they are written here (write_outputs), or
   only counted when the step is quiet (replayed, already written). Then SLUICE_CRASH_AT=after-step, and
   the third exchange: this host's error, if any, and the offset and
   counters of each output connector it writes, for the coordinator's
   proxies (journal, checkpoints, /stats), then its delivery figures. */
static void fol_outputs(const Circuit *c, Runtime *rt, Connectors *cs, Delivery *dl, Buf *send,
                        Buf *recv, int src, bool quiet, bool sync, double src_wall, Buf *got,
                        Buf *snap)
{
    int H = net_hosts(), me = net_host();
    bool mine = host_writes_any(cs, me), ok = !src && !rt_rolled_back(rt);
    Err e = {0};
    int rc = 0;
    for (int rel = 0; rel < c->nrels && mine; rel++)
        buf_reset(&got[rel]);
    for (int h = 0; h < H && mine && !rc; h++) {
        if (h == me)
            continue;
        const uint8_t *p = recv[h].p ? recv[h].p : (const uint8_t *)"";
        Rd r = {p, p + recv[h].n, false};
        if (rd32(&r))
            ok = false;
        int32_t n = rd32(&r);
        for (int k = 0; k < n && !r.bad; k++) {
            int32_t rel = rd32(&r);
            int64_t len = rd64(&r);
            const uint8_t *data = len >= 0 ? rd_bytes(&r, (size_t)len) : NULL;
            if (r.bad || !data || rel < 0 || rel >= c->nrels || !host_writes(cs, me, rel) ||
                !xrec_fits(data, len))
                r.bad = true;
            else
                buf_append(&got[rel], data, (size_t)len);
        }
        if (r.bad)
            rc = err_set(&e, SL_ERUNTIME, "malformed changes from host %d (%s)", h,
                         net_host_name(h));
    }
    if (mine && !rc && ok)
        rc = write_outputs(c, rt, cs, dl, me, got, snap, rt_steps(rt), quiet, sync, src_wall,
                           &e);
    if (!src && !rc && !rt_rolled_back(rt))
        store_crash_at_count("after-step", rt_steps(rt)); /* tests: storage.h */
    for (int h = 0; h < H; h++)
        buf_reset(&send[h]);
    if (mine) {
        Buf *b = &send[0];
        put32(b, rc);
        put32(b, (int32_t)strlen(e.msg));
        buf_append(b, e.msg, strlen(e.msg));
        int32_t n = 0;
        for (int j = 0; j < cs->nout; j++)
            n += !output_remote(cs->out[j]);
        put32(b, n);
        for (int j = 0; j < cs->nout; j++) {
            OutputConn *oc = cs->out[j];
            if (output_remote(oc))
                continue;
            put32(b, j);
            put64(b, output_offset(oc));
            put64(b, output_records(oc));
            put64(b, output_bytes(oc));
        }
        deliver_report_put(dl, b);
    }
    net_set_activity("reporting this host's outputs");
    net_exchange(send, recv);
}

static void put_contents(const Circuit *c, Runtime *rt, int rel, Buf *b)
{
    size_t at = b->n;
    put64(b, 0);
    const Relation *r = &c->rels[rel];
    if (rel >= 0 && rel < c->nrels && r->materialized && r->sink >= 0)
        rt_sink_contents(rt, r->sink, b);
    int64_t len = (int64_t)(b->n - at - 8);
    memcpy(b->p + at, &len, 8);
}

/* The launcher's stop (SIGUSR1 to every rank): rank 0 stops the pipeline;
   here it only ends an output's wait for its server (output_set_stop), as
   a stop does on one host, so that rank 0 hears of the step's failure. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_signal = 1;
}

static bool stopping(void *arg)
{
    (void)arg;
    return stop_signal != 0;
}

static bool giveup_now(void *arg)
{
    (void)arg;
    return true;
}

/* This host's Delivery over the outputs it writes (io/deliver.c), opened
   as host 0 opens its own: once they are positioned (every OUTSET for
   them came), or at the latest at the first step. Its queues and dead
   letters are in the storage directory when it is a local one (the same
   for every host), else in memory. NULL with err set when it cannot open. */
static Delivery *fol_deliver_open(Connectors *cs, const PipelineOpts *o, Err *err)
{
    bool s3 = o->storage && !strncmp(o->storage, "s3://", 5);
    DeliverOpts dopt = {o->storage && !s3 ? o->storage : NULL,
                        o->storage && o->fault_tolerance == FT_EXACTLY_ONCE, stopping, NULL};
    return deliver_open(cs, &dopt, err);
}

int pipeline_follow(const Circuit *c, const PipelineOpts *o, Err *err)
{
    int H = net_hosts(), me = net_host();
    Connectors cs;
    /* generators, the file inputs this host reads, the outputs it writes */
    if (connectors_open_part(c, true, me, H, &cs, err))
        return err->code;
    bool spread = outputs_spread(&cs);
    if (host_writes_any(&cs, me)) {
        struct sigaction sa = {0};
        sa.sa_handler = on_stop_signal;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGUSR1, &sa, NULL);
        for (int j = 0; j < cs.nout; j++)
            output_set_stop(cs.out[j], stopping, NULL);
    }
    /* the journal counts on each step's output being durable */
    bool sync = o->storage && o->fault_tolerance == FT_EXACTLY_ONCE;
    Buf *got = sl_calloc((size_t)c->nrels + 1, sizeof(Buf));
    Buf *snap = sl_calloc((size_t)cs.nout + 1, sizeof(Buf)); /* per output: a BOOT's snapshot */
    BootPlan *boot = NULL; /* the bootstrap plan of the next step (BOOT) */
    connectors_set_parse_threads(&cs, o->workers > H ? (o->workers + H - 1) / H : 1);
    Kept *kept = sl_calloc((size_t)cs.nin + 1, sizeof(Kept));
    PMemHost *pm = pmem_host_start(o, me, H); /* (before the runtime: its traces spill) */
    Runtime *rt = rt_new_part(c, o->workers, me, H);
    Fol fol = {.o = o, .fd = -1};
    Buf *send = host_bufs_new(H);
    Buf *recv = host_bufs_new(H);
    Arena *a = arena_new(1 << 16);
    Delivery *dl = NULL;
    int owned = 0, outsets = 0; /* outputs this host writes; OUTSETs for them so far */
    for (int j = 0; j < cs.nout; j++)
        owned += !output_remote(cs.out[j]);
    int rc = 0;
    for (bool stop = false; !stop;) {
        for (int h = 0; h < H; h++)
            buf_reset(&send[h]);
        net_set_activity("waiting for the coordinator's next command");
        net_exchange(send, recv);
        const uint8_t *msg = recv[0].p ? recv[0].p : (const uint8_t *)""; /* empty: no NULL+0 */
        Rd r = {msg, msg + recv[0].n, false};
        int kind = rd32(&r), arg = rd32(&r);
        int64_t step = rd64(&r);
        int nw = rd32(&r);
        for (int k = 0; k < nw && !r.bad; k++) {
            int rel = rd32(&r), on = rd32(&r);
            if (rel >= 0 && rel < c->nrels && c->rels[rel].sink >= 0)
                for (int w = 0; w < rt_workers(rt); w++)
                    op_sink_watch(rt_op(rt, w, c->rels[rel].sink), on != 0);
        }
        Err e = {0};
        int src = 0;
        if (r.bad) {
            src = err_set(&e, SL_ERUNTIME, "malformed command from the coordinator");
            kind = DC_STOP;
        }
        arena_reset(a);
        int nwant = 0, *want = NULL; /* a STEP's relations for the coordinator */
        double src_wall = 0;         /* when its input arrived (the outputs' lag) */
        if (kind == DC_STEP) {
            char what[96];
            snprintf(what, sizeof(what), "in step %lld", (long long)step + 1);
            net_set_activity(what);
            if (rt_steps(rt) != step)
                rt_set_steps(rt, step);
            int64_t wbits = rd64(&r);
            memcpy(&src_wall, &wbits, 8);
            if (!(src_wall >= 0 && src_wall < 1e11))
                src_wall = 0;
            int64_t limit = rd64(&r), floor = rd64(&r), retry = rd64(&r);
            step_allowance(rt, pm, limit, floor, retry != 0);
            nwant = rd_count32(&r, 4);
            want = arena_alloc(a, sizeof(int) * (size_t)(nwant + 1));
            for (int k = 0; k < nwant; k++) {
                want[k] = rd32(&r);
                if (want[k] < 0 || want[k] >= c->nrels)
                    r.bad = true;
            }
            if (r.bad) {
                nwant = 0;
                src = err_set(&e, SL_ERUNTIME, "malformed step command from the coordinator");
            } else {
                src = take_pieces(c, rt, &cs, kept, &r, a, &e);
            }
            if (!src && owned && !dl && !(dl = fol_deliver_open(&cs, o, &e)))
                src = e.code ? e.code : SL_EIO;
            int src2 = rt_step(rt, src ? &(Err){0} : &e);
            if (!src)
                src = src2;
            /* (with outputs spread: once they are written, fol_outputs) */
            if (!src && !spread && !rt_rolled_back(rt))
                store_crash_at_count("after-step", rt_steps(rt)); /* tests: storage.h */
            if (!rt_rolled_back(rt)) { /* (undone: it runs again, with the same rows) */
                kept_drop(kept, cs.nin); /* a step takes everything read */
                trace_tidy_all(rt_workers(rt)); /* the merges the step deferred (zset/trace.h) */
                pmem_host_after_step(pm, rt); /* spill until the state fits */
            }
        } else if (kind == DC_DROP) {
            kept_drop(kept, cs.nin);
        } else if (kind == DC_RELEASE) { /* the oldest checkpoint kept: sources may let go */
            int32_t n = rd_count32(&r, 4);
            for (int k = 0; k < n && !r.bad; k++) {
                int32_t j = rd32(&r);
                InPos pos;
                rd_pos(&r, &pos);
                if (!r.bad && j >= 0 && j < cs.nin && !input_remote(cs.in[j]))
                    input_release(cs.in[j], &pos);
            }
        } else if (kind == DC_CKPT) {
            int64_t ck = rd64(&r);
            fol_ckpt(&fol, c, rt, &cs, ck, arg != 0);
        } else if (kind == DC_BOOT) { /* the next step is a bootstrap step */
            boot_plan_free(boot);
            boot = boot_plan_get(c, &r);
            int32_t n = boot ? rd_count32(&r, 12) : 0;
            for (int k = 0; k < n && !r.bad; k++) {
                int32_t j = rd32(&r);
                int64_t len = rd64(&r);
                const uint8_t *data = len >= 0 ? rd_bytes(&r, (size_t)len) : NULL;
                if (r.bad || !data || j < 0 || j >= cs.nout || output_remote(cs.out[j]) ||
                    !xrec_fits(data, len)) {
                    r.bad = true;
                    break;
                }
                buf_reset(&snap[j]);
                buf_append(&snap[j], data, (size_t)len);
            }
            if (!boot || r.bad)
                src = err_set(&e, SL_ERUNTIME, "malformed bootstrap plan from the coordinator");
            else
                rt_set_boot(rt, boot->run, boot->is_new, arg ? boot_feed(boot, rt) : NULL);
        } else if (kind == DC_RESTORE) {
            int64_t at = rd64(&r);
            rt_free(rt); /* fresh instances, then the saved state */
            rt = rt_new_part(c, o->workers, me, H);
            src = fol_restore(&fol, c, rt, r.p, (size_t)(r.end - r.p), arg, &e);
            rt_set_steps(rt, at);
        }
        Buf *b = &send[0];
        buf_reset(b);
        put32(b, src);
        put32(b, (int32_t)strlen(e.msg));
        buf_append(b, e.msg, strlen(e.msg));
        if (kind == DC_STOP && dl) { /* the coordinator waited for the queues already */
            Err fe = {0};
            deliver_finish(dl, giveup_now, NULL, &fe);
        }
        put_figures(c, rt, dl, pm, b);
        fol_report(&fol, b);
        if (kind == DC_STEP) {
            put_changes(c, rt, want, nwant, b);
            for (int h = 1; h < H && spread; h++) /* the other outputs' hosts */
                if (h != me && host_writes_any(&cs, h))
                    put_owner_part(c, rt, &cs, h, src || !rt_rolled_back(rt) ? src : SL_ERUNTIME,
                                   &send[h]);
        } else if (kind == DC_CONTENTS)
            put_contents(c, rt, arg, b);
        else if (kind == DC_READ && arg >= 0 && arg < cs.nin && !input_remote(cs.in[arg])) {
            InputConn *ic = cs.in[arg];
            Kept *k = &kept[arg];
            int64_t max = rd64(&r);
            Err re = {0};
            int rrc = 0;
            if (rd32(&r)) /* bootstrapping: from the beginning again */
                rrc = input_rewind(ic, &re);
            if (rd32(&r)) {
                InPos pos;
                rd_pos(&r, &pos);
                if (!rrc)
                    rrc = input_seek(ic, &pos, &re);
            }
            bool target = rd32(&r) != 0; /* replaying: read up to this position */
            InPos to;
            if (target)
                rd_pos(&r, &to);
            input_set_replay(ic, target);
            if (target && !r.bad)
                input_replay_to(ic, &to);
            if (r.bad && !rrc)
                rrc = err_set(&re, SL_ERUNTIME, "malformed read command from the coordinator");
            if (!k->a)
                k->a = arena_new(1 << 20);
            if (!k->head)
                k->base = input_rows(ic);
            Piece *list = NULL;
            int64_t n = rrc ? -1 : input_next(ic, max, k->a, 1, &list, &re);
            if (n < 0) { /* the reply says why instead */
                buf_reset(b);
                put32(b, re.code ? re.code : SL_EIO);
                put32(b, (int32_t)strlen(re.msg));
                buf_append(b, re.msg, strlen(re.msg));
            } else {
                for (Piece *pc = list; pc; pc = pc->next)
                    if (!pc->chunk)
                        sl_panic("a file input gave a piece without rows");
                piece_list_append(&k->head, &k->tail, list);
                k->n += n;
                InPos pos;
                input_pos(ic, &pos);
                put64(b, n);
                put_pos(b, &pos);
                put32(b, input_done(ic));
                put64(b, (int64_t)ft_hash_pieces(list, 0));
                double wait = input_wait(ic);
                int64_t wbits, times[INPUT_TIMES_MAX];
                memcpy(&wbits, &wait, 8);
                put64(b, wbits);
                int nts = n > 0 ? input_source_times(ic, times, INPUT_TIMES_MAX) : 0;
                put32(b, nts);
                for (int i = 0; i < nts; i++)
                    put64(b, times[i]);
            }
        } else if (kind == DC_OUTSET && arg >= 0 && arg < cs.nout &&
                   !output_remote(cs.out[arg])) {
            OutputConn *oc = cs.out[arg];
            int64_t off = rd64(&r), records = rd64(&r), bytes = rd64(&r);
            if (rd32(&r)) { /* the delivery counters of a checkpoint (deliver_open takes them) */
                int64_t at = rd64(&r), v[6];
                for (int k = 0; k < 6; k++)
                    v[k] = rd64(&r);
                if (!r.bad)
                    deliver_restore_counts(oc, at, &(DeliverCounts){v[0], v[1], v[2], v[3],
                                                                     v[4], v[5]});
            }
            Err oe = {0};
            if (r.bad)
                err_set(&oe, SL_ERUNTIME, "malformed output command from the coordinator");
            else
                output_set_counts(oc, records, bytes);
            int orc = r.bad || output_truncate(oc, off, &oe);
            /* every output of this host positioned: its queues load (deliver_open) */
            if (!orc && ++outsets >= owned && !dl && !(dl = fol_deliver_open(&cs, o, &oe)))
                orc = 1;
            if (orc) { /* the reply says why instead */
                buf_reset(b);
                put32(b, oe.code ? oe.code : SL_EIO);
                put32(b, (int32_t)strlen(oe.msg));
                buf_append(b, oe.msg, strlen(oe.msg));
            } else {
                put64(b, output_offset(oc));
            }
        } else if (kind == DC_LOOKUP) {
            int lw = rd32(&r), kn = rd32(&r);
            const uint8_t *k = kn >= 0 ? rd_bytes(&r, (size_t)kn) : NULL;
            uint32_t n = 0;
            const uint8_t *row = NULL;
            if (!r.bad && k && lw >= 0 && lw < rt_workers(rt) && arg >= 0 && arg < c->nnodes &&
                c->nodes[arg]->k == OPK_UPSERT)
                row = op_upsert_row(rt_op(rt, lw, arg), k, (size_t)kn, &n);
            put32(b, row ? (int32_t)n : 0);
            if (row)
                buf_append(b, row, n);
        } else if (kind == DC_STOP)
            stop = true;
        net_exchange(send, recv);
        if (kind == DC_STEP && spread)
            fol_outputs(c, rt, &cs, dl, send, recv, src, arg != 0, sync, src_wall, got, snap);
    }
    host_bufs_free(send, H);
    host_bufs_free(recv, H);
    for (int i = 0; i < c->nrels; i++)
        buf_free(&got[i]);
    sl_free(got);
    for (int j = 0; j < cs.nout; j++)
        buf_free(&snap[j]);
    sl_free(snap);
    boot_plan_free(boot);
    arena_free(a);
    if (fol.pid) {
        Buf junk = BUF_INIT;
        ckpt_reap_until(fol.fd, fol.pid, fol.end, o->checkpoint_timeout, &junk);
        buf_free(&junk);
    }
    buf_free(&fol.report);
    sl_free(fol.prev_state);
    for (int j = 0; j < cs.nin; j++)
        if (kept[j].a)
            arena_free(kept[j].a);
    sl_free(kept);
    store_close(fol.st);
    rt_free(rt);
    pmem_host_free(pm); /* after the traces: their spilled files go first */
    deliver_close(dl);
    connectors_close(&cs);
    return rc;
}


