/*
 * io/deliver_figs.c - the figures of delivery (deliver.c): what /stats and
 * /metrics show per output (deliver_stats), the reports that carry them
 * from the host that writes an output to the coordinator's proxy of it
 * (deliver_report_put, deliver_report_take: scale-out), the dead letters
 * GET /dead_letter lists, and the counters across a restart.
 *
 * Counters across restarts. A checkpoint keeps each output's changes,
 * sent, acknowledged, retried and dead-lettered records and the last step
 * C they count in full (deliver_counts; the manifest's "delivery"). At a
 * restart from that checkpoint (at step S) the counters go on from there
 * (deliver__restore): the records that were pending then (changes -
 * acknowledged - dead, in steps C+1..S) and are no longer queued were
 * delivered before the crash: acknowledged, except the dead letters the
 * file holds for those steps; queued steps after S count as changes anew.
 * The journal's replayed steps after S are counted as delivered when the
 * destination had them at the restart (deliver_account for a quiet step;
 * deliver_step for the last, which the destination skips), each with the
 * dead letters its step left; the others are queued, counted when loaded. Attempts that failed between
 * the checkpoint and the crash are not known: "retried" (and "sent", by
 * as much) may come out lower than an uninterrupted run's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../base/wire.h"
#include "deliver_int.h"

typedef struct LagSample {
    float lag;
    int64_t w;
} LagSample;

static int lag_cmp(const void *a, const void *b)
{
    float x = ((const LagSample *)a)->lag, y = ((const LagSample *)b)->lag;
    return (x > y) - (x < y);
}

/* Output o's figures (under mu). */
static void stats_of(DOut *o, DeliverStats *s)
{
    if (o->remote) {
        *s = o->rs;
        return;
    }
    memset(s, 0, sizeof(*s));
    s->changes = o->changes;
    s->counted = o->counted;
    s->sent = o->sent;
    s->acked = o->acked;
    s->retried = o->retried;
    s->dead = o->dead;
    s->pending = o->qrecs + o->inflight;
    s->pending_bytes = (int64_t)o->qbytes;
    s->queued_steps = o->qsteps;
    s->failing = o->failing;
    const DeliverCfg *c = &o->oc->dcfg;
    s->backpressure = o->qrecs > c->max_queued_records || (int64_t)o->qbytes > c->max_queued_bytes;
    if (o->failing)
        snprintf(s->error, sizeof(s->error), "%s", o->error);
    /* weighted percentiles over the samples sorted by lag */
    int n = o->nlag;
    LagSample *ls = sl_malloc((size_t)n * sizeof(*ls) + 1);
    int64_t tot = 0;
    for (int i = 0; i < n; i++) {
        ls[i] = (LagSample){o->lag[i], o->lagw[i]};
        tot += o->lagw[i];
    }
    qsort(ls, (size_t)n, sizeof(*ls), lag_cmp);
    s->lag_n = tot;
    double *dst[3] = {&s->lag_p50, &s->lag_p95, &s->lag_p99};
    const double q[3] = {0.5, 0.95, 0.99};
    for (int k = 0; k < 3 && tot > 0; k++) {
        int64_t want = (int64_t)ceil(q[k] * (double)tot), acc = 0;
        for (int i = 0; i < n; i++) {
            acc += ls[i].w;
            if (acc >= want) {
                *dst[k] = ls[i].lag;
                break;
            }
        }
    }
    sl_free(ls);
}

void deliver_stats(Delivery *d, int out, DeliverStats *s)
{
    memset(s, 0, sizeof(*s));
    if (!d || out < 0 || out >= d->n)
        return;
    pthread_mutex_lock(&d->mu);
    stats_of(&d->o[out], s);
    pthread_mutex_unlock(&d->mu);
}

/* ---------------------------------------------------------------- scale-out reports */

static void put_str(Buf *b, const char *s)
{
    int32_t n = (int32_t)strlen(s);
    put32(b, n);
    buf_append(b, s, (size_t)n);
}

static void rd_str(Rd *r, char *dst, size_t n)
{
    int32_t len = rd32(r);
    const uint8_t *p = len >= 0 ? rd_bytes(r, (size_t)len) : NULL;
    if (!p) {
        r->bad = true;
        dst[0] = 0;
        return;
    }
    snprintf(dst, n, "%.*s", len, (const char *)p);
}

static int64_t dbits(double v)
{
    int64_t b;
    memcpy(&b, &v, 8);
    return b;
}

static double bitsd(int64_t b)
{
    double v;
    memcpy(&v, &b, 8);
    return v == v ? v : 0; /* (no NaN from a damaged report) */
}

void deliver_report_put(Delivery *d, Buf *b)
{
    size_t at = b->n;
    put32(b, 0);
    if (!d)
        return;
    size_t start = b->n;
    int32_t n = 0;
    put32(b, 0);
    pthread_mutex_lock(&d->mu);
    for (int j = 0; j < d->n; j++) {
        DOut *o = &d->o[j];
        if (o->remote)
            continue;
        DeliverStats s;
        stats_of(o, &s);
        put32(b, j);
        const int64_t v[10] = {s.changes, s.sent,          s.acked,        s.retried, s.dead,
                               s.pending, s.pending_bytes, s.queued_steps, s.lag_n, s.counted};
        for (int k = 0; k < 10; k++)
            put64(b, v[k]);
        put64(b, dbits(s.lag_p50));
        put64(b, dbits(s.lag_p95));
        put64(b, dbits(s.lag_p99));
        put32(b, (s.failing ? 1 : 0) | (s.backpressure ? 2 : 0) | (o->fatal ? 4 : 0));
        put_str(b, s.error);
        put32(b, o->fatal ? (o->fatal_err.code ? o->fatal_err.code : SL_EIO) : 0);
        put_str(b, o->fatal ? o->fatal_err.msg : "");
        /* dead letters kept in memory travel as they change: the length
           the coordinator keeps of what it has, then what follows */
        if (o->dlfd >= 0) {
            put64(b, -1);
        } else {
            size_t keep = SL_MIN(o->dl_sent, o->dl_low);
            put64(b, (int64_t)keep);
            put64(b, (int64_t)(o->dlmem.n - keep));
            if (o->dlmem.n > keep)
                buf_append(b, o->dlmem.p + keep, o->dlmem.n - keep);
            o->dl_sent = o->dl_low = o->dlmem.n;
        }
        n++;
    }
    pthread_mutex_unlock(&d->mu);
    memcpy(b->p + start, &n, 4);
    int32_t len = (int32_t)(b->n - start);
    memcpy(b->p + at, &len, 4);
}

int deliver_report_take(Connectors *cs, const char *host, const uint8_t *p, size_t len)
{
    Rd r = {p, p + len, false};
    if (len == 0)
        return 0;
    int32_t n = rd_count32(&r, 4);
    for (int k = 0; k < n && !r.bad; k++) {
        int32_t j = rd32(&r);
        DeliverStats s;
        memset(&s, 0, sizeof(s));
        int64_t *v[10] = {&s.changes, &s.sent,          &s.acked,        &s.retried, &s.dead,
                          &s.pending, &s.pending_bytes, &s.queued_steps, &s.lag_n, &s.counted};
        for (int i = 0; i < 10; i++)
            *v[i] = rd64(&r);
        s.lag_p50 = bitsd(rd64(&r));
        s.lag_p95 = bitsd(rd64(&r));
        s.lag_p99 = bitsd(rd64(&r));
        int32_t flags = rd32(&r);
        s.failing = flags & 1;
        s.backpressure = (flags & 2) != 0;
        rd_str(&r, s.error, sizeof(s.error));
        int32_t fcode = rd32(&r);
        char fmsg[sizeof(((Err *)0)->msg)];
        rd_str(&r, fmsg, sizeof(fmsg));
        int64_t keep = rd64(&r), dn = keep >= 0 ? rd64(&r) : 0;
        const uint8_t *dl = dn > 0 ? rd_bytes(&r, (size_t)dn) : NULL;
        if (r.bad || j < 0 || j >= cs->nout || dn < 0 || !output_remote(cs->out[j]))
            return -1;
        DOut *o = cs->out[j]->deliv;
        if (!o) /* no Delivery yet (the start-up): the next report counts */
            continue;
        Delivery *d = o->d;
        pthread_mutex_lock(&d->mu);
        o->rs = s;
        snprintf(o->host, sizeof(o->host), "%s", host);
        if ((flags & 4) && !o->fatal) {
            o->fatal = true;
            err_set(&o->fatal_err, fcode ? fcode : SL_EIO, "host %s: %s", host, fmsg);
            pthread_cond_broadcast(&d->cv);
        }
        if (keep >= 0 && o->dlfd < 0 && (size_t)keep <= o->dlmem.n) {
            o->dlmem.n = (size_t)keep;
            if (dl)
                buf_append(&o->dlmem, dl, (size_t)dn);
        }
        pthread_mutex_unlock(&d->mu);
    }
    return r.bad ? -1 : 0;
}

/* Whether output o answers to name: its view's name or its full name. */
static bool named(const Delivery *d, const DOut *o, const char *name, const char *view)
{
    (void)d;
    return !strcmp(o->oc->name, name) || (view && !strcasecmp(view, name));
}

/* The dead letters of o (its file, or the in-memory copy) into text. */
static void dead_text(DOut *o, Buf *text)
{
    if (o->dlfd >= 0) {
        struct stat st;
        if (!fstat(o->dlfd, &st) && st.st_size > 0) {
            buf_reserve(text, (size_t)st.st_size);
            ssize_t r = pread(o->dlfd, text->p, (size_t)st.st_size, 0);
            text->n = r > 0 ? (size_t)r : 0;
        }
    } else {
        buf_append(text, o->dlmem.p, o->dlmem.n);
    }
}

bool deliver_dead_letters(Delivery *d, const char *name, Buf *out)
{
    bool any = false;
    buf_puts(out, "{\"output\":");
    deliver__json_str(out, name);
    buf_puts(out, ",\"records\":[");
    int64_t count = 0;
    pthread_mutex_lock(&d->mu);
    for (int j = 0; j < d->n; j++) {
        DOut *o = &d->o[j];
        /* "view V, connector N (transport)": the view's name is word 2 */
        char view[192] = "";
        if (!strncmp(o->oc->name, "view ", 5)) {
            snprintf(view, sizeof(view), "%s", o->oc->name + 5);
            char *c = strchr(view, ',');
            if (c)
                *c = 0;
        }
        if (!named(d, o, name, view))
            continue;
        any = true;
        Buf text = BUF_INIT;
        dead_text(o, &text);
        for (size_t i = 0; i < text.n;) {
            const char *l = (const char *)text.p + i;
            const char *nl = memchr(l, '\n', text.n - i);
            if (!nl)
                break;
            if (count++)
                buf_putc(out, ',');
            buf_append(out, l, (size_t)(nl - l));
            i = (size_t)(nl - (const char *)text.p) + 1;
        }
        buf_free(&text);
    }
    pthread_mutex_unlock(&d->mu);
    buf_printf(out, "],\"count\":%lld}", (long long)count);
    return any;
}

/* ---------------------------------------------------------------- across restarts */

int64_t deliver__dead_between(DOut *o, int64_t lo, int64_t hi)
{
    if (hi <= lo)
        return 0;
    Buf text = BUF_INIT;
    dead_text(o, &text);
    int64_t n = 0;
    for (size_t i = 0; i < text.n;) {
        const char *l = (const char *)text.p + i;
        const char *nl = memchr(l, '\n', text.n - i);
        if (!nl)
            break;
        if ((size_t)(nl - l) > 8 && !strncmp(l, "{\"step\":", 8)) {
            long long s = strtoll(l + 8, NULL, 10);
            n += s > lo && s <= hi;
        }
        i = (size_t)(nl - (const char *)text.p) + 1;
    }
    buf_free(&text);
    return n;
}

const char *const deliver_count_names[6] = {"changes", "sent",  "acked",
                                            "retried", "dead",  "counted"};

bool deliver_counts(OutputConn *oc, DeliverCounts *c)
{
    DOut *o = oc->deliv;
    memset(c, 0, sizeof(*c));
    if (!o)
        return false;
    pthread_mutex_lock(&o->d->mu);
    if (o->remote)
        *c = (DeliverCounts){o->rs.changes, o->rs.sent, o->rs.acked, o->rs.retried,
                             o->rs.dead, o->rs.counted};
    else
        *c = (DeliverCounts){o->changes, o->sent, o->acked, o->retried, o->dead, o->counted};
    pthread_mutex_unlock(&o->d->mu);
    return true;
}

void deliver_restore_counts(OutputConn *oc, int64_t step, const DeliverCounts *c)
{
    oc->dl_saved = true;
    oc->dl_saved_step = step;
    oc->dl_saved_c = *c;
}

bool deliver_saved_counts(OutputConn *oc, int64_t *step, DeliverCounts *c)
{
    if (!oc->dl_saved)
        return false;
    *step = oc->dl_saved_step;
    *c = oc->dl_saved_c;
    return true;
}

void deliver__restore(DOut *o)
{
    int64_t done = deliver__committed(o->oc);
    o->counted = o->done0 = done;
    if (!o->oc->dl_saved)
        return;
    const DeliverCounts *r = &o->oc->dl_saved_c;
    int64_t S = o->oc->dl_saved_step, upto = 0, past = 0;
    for (QEnt *e = o->head; e; e = e->next)
        *(e->step <= S ? &upto : &past) += e->recs;
    int64_t gone = r->changes - r->acked - r->dead - upto; /* pending then, delivered since */
    if (gone < 0)
        gone = 0;
    int64_t dd = deliver__dead_between(o, r->counted, SL_MIN(S, done));
    if (dd > gone)
        dd = gone;
    o->changes = r->changes + past; /* (queue_load counted every queued step) */
    o->sent = r->sent + gone;
    o->acked = r->acked + gone - dd;
    o->retried = r->retried;
    o->dead = r->dead + dd;
}

void deliver_account(Delivery *d, int64_t step, const Batch *const *changes)
{
    if (!d)
        return;
    for (int j = 0; j < d->n; j++) {
        DOut *o = &d->o[j];
        const Batch *b = changes[j];
        if (o->remote || !b || b->n == 0)
            continue;
        pthread_mutex_lock(&d->mu);
        /* a destination that says what it committed had it at the start
           (else the step was queued: counted when loaded); the others
           wrote it (that is what a quiet step is) */
        if (!o->oc->ops->committed || step <= o->done0) {
            int64_t recs = deliver__recs(b), dd = deliver__dead_between(o, step - 1, step);
            o->changes += recs;
            o->sent += recs;
            o->acked += recs - dd;
            o->dead += dd;
            if (step > o->counted)
                o->counted = step;
        }
        pthread_mutex_unlock(&d->mu);
    }
}
