/*
 * server/egress.c - POST /egress/{view}?format=json|csv[&snapshot=true]
 * [&backpressure=true]: stream a view's changes, one chunk per step:
 *   {"sequence_number": STEP, "json_data": [{"insert": row}, {"delete": row}]}
 * (CSV: "text_data": lines of the row's fields and its weight). With
 * snapshot=true a first chunk ("snapshot": true) holds the current
 * contents of a materialized view.
 *
 * Subscribing runs on the controller between steps (pipeline_call): it
 * switches the sink's change collection on, copies the contents for the
 * snapshot and registers the subscriber, so the snapshot and the changes
 * that follow meet exactly. After every step the controller's hook
 * formats each watched view's consolidated changes once per format and
 * appends the message (reference-counted) to every subscriber's queue.
 * Each stream's MHD thread sleeps in the content reader until its queue
 * has data.
 *
 * A subscriber's queue is bounded (ServerOpts.egress_buffer bytes). When a
 * message does not fit: without backpressure the subscriber is
 * disconnected (its socket shut down) and the reason logged, so a slow
 * client never stalls the pipeline; with backpressure=true the controller
 * waits until the client has read enough (or leaves, or the pipeline
 * stops), but not forever: a subscriber that reads nothing for
 * ServerOpts.egress_stall seconds while the pipeline waits on it is
 * disconnected too (reason logged) and the steps go on. While it waits,
 * egress_stalled says on whom (GET /status shows it). Subscribers whose
 * connection ended are unregistered by the next hook. Streams are exempt
 * from the connection idle timeout: a view may rightly not change for
 * long.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "../base/mem.h"
#include "../io/format.h"
#include "../zset/xrec.h"
#include "../zset/key.h"
#include "http_int.h"

typedef struct Msg {
    int refs;
    size_t n;
    int64_t records;
    char data[];
} Msg;

typedef enum SubState { SUB_ACTIVE, SUB_ENDED, SUB_DROPPED, SUB_CLOSED } SubState;

typedef struct Sub {
    struct Sub *next;
    struct Egress *e;
    int64_t id;
    int rel;
    bool csv, backpressure, snapshot;
    SubState state;
    int refs;               /* registry + response */
    bool registered;
    Msg **q;                /* ring of queued messages */
    int qhead, qn, qcap;
    size_t off;             /* bytes of q[qhead] already sent */
    size_t qbytes;
    double last_read;       /* when the client last took bytes (mono secs) */
    int fd;
    pthread_cond_t cv;
} Sub;

struct Egress {
    Server *s;
    pthread_mutex_t mu;
    pthread_cond_t room;    /* a subscriber read or left (backpressure waits) */
    Sub *subs;
    int64_t next_id;
    EgressStats *st;        /* per relation */
    Sub *stall;             /* the subscriber the hook waits on, or NULL */
    double stall_since;
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool egress_stalled(Egress *e, int64_t *sub, int *rel, double *secs)
{
    pthread_mutex_lock(&e->mu);
    bool st = e->stall != NULL;
    if (st) {
        *sub = e->stall->id;
        *rel = e->stall->rel;
        *secs = mono_now() - e->stall_since;
    }
    pthread_mutex_unlock(&e->mu);
    return st;
}

Egress *egress_new(Server *s)
{
    Egress *e = sl_calloc(1, sizeof(*e));
    e->s = s;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->room, NULL);
    e->st = sl_calloc((size_t)s->c->nrels + 1, sizeof(EgressStats));
    return e;
}

static void msg_unref(Msg *m)
{
    if (--m->refs == 0)
        sl_free(m);
}

/* Under e->mu: drop one reference; frees the subscriber at zero. */
static void sub_unref(Sub *u)
{
    if (--u->refs > 0)
        return;
    for (int i = 0; i < u->qn; i++)
        msg_unref(u->q[(u->qhead + i) % u->qcap]);
    sl_free(u->q);
    pthread_cond_destroy(&u->cv);
    sl_free(u);
}

static void sub_push(Sub *u, Msg *m, bool front)
{
    if (u->qn == u->qcap) {
        int cap = u->qcap ? u->qcap * 2 : 8;
        Msg **q = sl_malloc(sizeof(Msg *) * (size_t)cap);
        for (int i = 0; i < u->qn; i++)
            q[i] = u->q[(u->qhead + i) % u->qcap];
        sl_free(u->q);
        u->q = q;
        u->qhead = 0;
        u->qcap = cap;
    }
    m->refs++;
    if (front) {
        u->qhead = (u->qhead + u->qcap - 1) % u->qcap;
        u->q[u->qhead] = m;
    } else {
        u->q[(u->qhead + u->qn) % u->qcap] = m;
    }
    u->qn++;
    u->qbytes += m->n;
}

void egress_free(Egress *e)
{
    pthread_mutex_lock(&e->mu);
    for (Sub *u = e->subs; u;) {
        Sub *n = u->next;
        u->registered = false;
        sub_unref(u);
        u = n;
    }
    e->subs = NULL;
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->room);
    sl_free(e->st);
    sl_free(e);
}

void egress_end_all(Egress *e)
{
    pthread_mutex_lock(&e->mu);
    for (Sub *u = e->subs; u; u = u->next)
        if (u->state == SUB_ACTIVE) {
            u->state = SUB_ENDED;
            pthread_cond_signal(&u->cv);
        }
    pthread_cond_broadcast(&e->room);
    pthread_mutex_unlock(&e->mu);
}

void egress_stats(Egress *e, EgressStats *out, int n)
{
    pthread_mutex_lock(&e->mu);
    memcpy(out, e->st, sizeof(EgressStats) * (size_t)n);
    pthread_mutex_unlock(&e->mu);
}

/* ---------------------------------------------------------------- formatting */

/* s[0..n) as a JSON string. */
static void json_str(Buf *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    buf_putc(out, '"');
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        buf_append(out, s + from, i - from);
        from = i + 1;
        char esc[7] = {'\\', (char)ch, 0};
        if (ch == '\n')
            esc[1] = 'n';
        else if (ch == '\r')
            esc[1] = 'r';
        else if (ch == '\t')
            esc[1] = 't';
        else if (ch < 0x20) {
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[ch >> 4];
            esc[5] = hex[ch & 15];
            buf_append(out, esc, 6);
            continue;
        }
        buf_append(out, esc, 2);
    }
    buf_append(out, s + from, n - from);
    buf_putc(out, '"');
}

/* The message for the tuples of b (row encodings) with their weights, or
   for a snapshot (b = contents: positive weights, rows repeated). */
static Msg *format_msg(const Relation *r, const Batch *b, bool csv, int64_t seq, bool snapshot)
{
    RowSchema s = {r->ncol, (const char *const *)r->colnames, r->types};
    Arena *a = arena_new(4096);
    Chunk *row = chunk_new(a, r->ncol, r->types, 1);
    row->n = 1;
    Buf out = BUF_INIT, obj = BUF_INIT, text = BUF_INIT;
    int64_t records = 0;
    buf_printf(&out, "{\"sequence_number\":%lld,", (long long)seq);
    if (snapshot)
        buf_puts(&out, "\"snapshot\":true,");
    buf_puts(&out, csv ? "\"text_data\":" : "\"json_data\":[");
    bool first = true;
    for (int64_t i = 0; i < b->n; i++) {
        int64_t w = b->w[i];
        if (snapshot && w <= 0)
            continue;
        int64_t reps = w < 0 ? -w : w;
        key_decode(batch_key(b, i), r->types, r->ncol, row, 0, 0);
        buf_reset(&obj);
        records += reps;
        if (csv) {
            /* the row's fields and its weight, as file_output writes them */
            fmt_csv_row(row, 0, &obj);
            buf_printf(&obj, ",%lld\n", (long long)(snapshot ? 1 : w));
            for (int64_t k = 0; k < (snapshot ? w : 1); k++)
                buf_append(&text, obj.p, obj.n);
            continue;
        }
        fmt_json_row(&s, row, 0, &obj);
        for (int64_t k = 0; k < reps; k++) {
            if (!first)
                buf_putc(&out, ',');
            first = false;
            buf_puts(&out, w > 0 ? "{\"insert\":" : "{\"delete\":");
            buf_append(&out, obj.p, obj.n);
            buf_putc(&out, '}');
        }
    }
    if (csv) {
        json_str(&out, (const char *)text.p, text.n);
        buf_puts(&out, "}\n");
    } else {
        buf_puts(&out, "]}\n");
    }
    Msg *m = sl_malloc(sizeof(Msg) + out.n);
    m->refs = 0;
    m->n = out.n;
    m->records = records;
    memcpy(m->data, out.p, out.n);
    buf_free(&out);
    buf_free(&obj);
    buf_free(&text);
    arena_free(a);
    return m;
}

/* ---------------------------------------------------------------- the hook */

static void drop(Egress *e, Sub *u, const char *why)
{
    const Relation *r = &e->s->c->rels[u->rel];
    fprintf(stderr,
            "sluice: http: egress subscriber %lld of %s disconnected: %s (%zu bytes queued, "
            "limit %lld; %s)\n",
            (long long)u->id, r->name, why, u->qbytes, (long long)e->s->o.egress_buffer,
            u->backpressure ? "the steps go on without it"
                            : "use backpressure=true to make the pipeline wait instead");
    fflush(stderr);
    u->state = SUB_DROPPED;
    e->st[u->rel].dropped++;
    if (u->fd >= 0)
        shutdown(u->fd, SHUT_RDWR);
    pthread_cond_signal(&u->cv);
}

void egress_after_step(Egress *e, Pipeline *p, int64_t step)
{
    const Circuit *c = e->s->c;
    size_t limit = (size_t)e->s->o.egress_buffer;
    pthread_mutex_lock(&e->mu);
    /* unregister the subscribers whose connection is gone */
    for (Sub **pu = &e->subs; *pu;) {
        Sub *u = *pu;
        if (u->state == SUB_CLOSED) {
            *pu = u->next;
            pipeline_track_changes(p, u->rel, false);
            e->st[u->rel].subscribers--;
            u->registered = false;
            sub_unref(u);
            continue;
        }
        pu = &u->next;
    }
    if (!e->subs) {
        pthread_mutex_unlock(&e->mu);
        return;
    }
    /* which (relation, format) messages this step needs */
    int n = c->nrels;
    uint8_t *need = sl_calloc((size_t)n * 2 + 1, 1);
    for (Sub *u = e->subs; u; u = u->next)
        if (u->state == SUB_ACTIVE)
            need[u->rel * 2 + u->csv] = 1;
    pthread_mutex_unlock(&e->mu);

    Msg **msgs = sl_calloc((size_t)n * 2 + 1, sizeof(Msg *));
    for (int i = 0; i < n * 2; i++) {
        if (!need[i])
            continue;
        const Batch *b = pipeline_changes(p, i / 2);
        if (b && b->n)
            msgs[i] = format_msg(&c->rels[i / 2], b, i % 2, step, false);
    }
    pthread_mutex_lock(&e->mu);
    /* the hook's own reference: a reader may consume (and release) a
       message while this loop waits for a backpressured subscriber */
    for (int i = 0; i < n * 2; i++)
        if (msgs[i])
            msgs[i]->refs = 1;
    for (int i = 0; i < n; i++)
        if (msgs[i * 2] || msgs[i * 2 + 1])
            e->st[i].steps++;
    for (Sub *u = e->subs; u; u = u->next) {
        Msg *m = msgs[u->rel * 2 + u->csv];
        if (!m || u->state != SUB_ACTIVE)
            continue;
        if (u->backpressure) {
            double t0 = mono_now();
            while (u->state == SUB_ACTIVE && u->qn > 0 && u->qbytes + m->n > limit &&
                   !pipeline_stop_requested(p)) {
                double since = u->last_read > t0 ? u->last_read : t0;
                e->stall = u;
                e->stall_since = since;
                if (mono_now() - since >= e->s->o.egress_stall) {
                    char why[160];
                    snprintf(why, sizeof(why),
                             "it read nothing for %.0f s while the pipeline waited on it "
                             "(backpressure=true; sluice run --egress-stall-timeout)",
                             mono_now() - since);
                    drop(e, u, why);
                    break;
                }
                struct timespec dl;
                clock_gettime(CLOCK_REALTIME, &dl);
                dl.tv_nsec += 100 * 1000000L;
                if (dl.tv_nsec >= 1000000000L) {
                    dl.tv_sec++;
                    dl.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&e->room, &e->mu, &dl);
            }
            e->stall = NULL;
            if (u->state != SUB_ACTIVE)
                continue;
        } else if (u->qn > 0 && u->qbytes + m->n > limit) {
            drop(e, u, "the client reads too slowly");
            continue;
        }
        sub_push(u, m, false);
        e->st[u->rel].records += m->records;
        pthread_cond_signal(&u->cv);
    }
    for (int i = 0; i < n * 2; i++)
        if (msgs[i])
            msg_unref(msgs[i]);
    pthread_mutex_unlock(&e->mu);
    sl_free(msgs);
    sl_free(need);
}

/* ---------------------------------------------------------------- streams */

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    Sub *u = cls;
    Egress *e = u->e;
    (void)pos;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        if (u->qn > 0) {
            Msg *m = u->q[u->qhead];
            size_t k = m->n - u->off;
            if (k > max)
                k = max;
            memcpy(buf, m->data + u->off, k);
            u->off += k;
            u->last_read = mono_now();
            if (u->off == m->n) {
                u->qhead = (u->qhead + 1) % u->qcap;
                u->qn--;
                u->qbytes -= m->n;
                u->off = 0;
                e->st[u->rel].bytes += (int64_t)m->n;
                msg_unref(m);
                pthread_cond_broadcast(&e->room);
            }
            pthread_mutex_unlock(&e->mu);
            return (ssize_t)k;
        }
        if (u->state == SUB_ENDED) {
            pthread_mutex_unlock(&e->mu);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (u->state != SUB_ACTIVE) {
            pthread_mutex_unlock(&e->mu);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        pthread_cond_wait(&u->cv, &e->mu);
    }
}

static void reader_free(void *cls)
{
    Sub *u = cls;
    Egress *e = u->e;
    pthread_mutex_lock(&e->mu);
    if (u->state == SUB_ACTIVE || u->state == SUB_ENDED || u->state == SUB_DROPPED)
        u->state = SUB_CLOSED;
    u->fd = -1;
    pthread_cond_broadcast(&e->room);
    sub_unref(u);
    pthread_mutex_unlock(&e->mu);
}

typedef struct SubCall {
    Egress *e;
    Sub *u;
    Buf raw;
    int64_t step;
} SubCall;

/* On the controller, between steps. */
static void subscribe(Pipeline *p, void *arg)
{
    SubCall *sc = arg;
    Sub *u = sc->u;
    pipeline_track_changes(p, u->rel, true);
    if (u->snapshot)
        pipeline_contents_raw(p, u->rel, &sc->raw);
    sc->step = pipeline_step(p);
    pthread_mutex_lock(&sc->e->mu);
    u->registered = true;
    u->refs++;
    u->next = sc->e->subs;
    sc->e->subs = u;
    sc->e->st[u->rel].subscribers++;
    pthread_mutex_unlock(&sc->e->mu);
}

int egress_begin(Req *q)
{
    Server *s = q->s;
    int rel = req_relation(q, "/egress/", "view");
    if (rel < 0)
        return 0;
    const Relation *r = &s->c->rels[rel];
    const char *fmt = req_arg(q, "format");
    bool bad = false;
    bool snapshot = req_flag(q, "snapshot", &bad) || req_flag(q, "send_snapshot", &bad);
    bool bp = req_flag(q, "backpressure", &bad);
    if (bad)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "InvalidParameter", NULL,
                         "snapshot and backpressure must be true or false");
    if (fmt && strcmp(fmt, "json") && strcmp(fmt, "csv"))
        return req_error(q, MHD_HTTP_BAD_REQUEST, "InvalidParameter", NULL,
                         "format must be json or csv, not \"%s\"", fmt);
    if (r->sink < 0)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "NoChangeStream", NULL,
                         "table %s has no change stream to follow: declare it WITH "
                         "('materialized' = 'true'), or follow a view over it",
                         r->name);
    if (snapshot && !r->materialized)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "NotMaterialized", NULL,
                         "snapshot=true needs the contents of %s, which is not materialized: "
                         "declare it as CREATE MATERIALIZED VIEW %s (or a table WITH "
                         "('materialized' = 'true'))",
                         r->name, r->name);
    Egress *e = s->eg;
    Sub *u = sl_calloc(1, sizeof(*u));
    u->e = e;
    u->rel = rel;
    u->csv = fmt && !strcmp(fmt, "csv");
    u->backpressure = bp;
    u->snapshot = snapshot;
    u->refs = 1; /* the response */
    u->last_read = mono_now();
    pthread_cond_init(&u->cv, NULL);
    /* a stream may rightly carry nothing for long: no idle timeout */
    MHD_set_connection_option(q->conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)0);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    u->fd = ci ? ci->connect_fd : -1;
    pthread_mutex_lock(&e->mu);
    u->id = ++e->next_id;
    pthread_mutex_unlock(&e->mu);
    SubCall sc = {e, u, BUF_INIT, 0};
    if (pipeline_call(s->p, subscribe, &sc)) {
        pthread_mutex_lock(&e->mu);
        sub_unref(u);
        pthread_mutex_unlock(&e->mu);
        buf_free(&sc.raw);
        return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "PipelineStopping", NULL,
                         "the pipeline is stopping; no new subscriptions");
    }
    if (snapshot) {
        BatchBuilder *bb = bb_new();
        size_t pos = 0;
        XRec x;
        while (xrec_next(&sc.raw, &pos, &x))
            bb_add(bb, x.k, x.kn, NULL, 0, x.w);
        Batch *b = bb_finish(bb);
        Msg *m = format_msg(r, b, u->csv, sc.step, true);
        batch_unref(b);
        pthread_mutex_lock(&e->mu);
        sub_push(u, m, true); /* before any change queued meanwhile */
        if (m->refs == 0)
            sl_free(m);
        pthread_cond_signal(&u->cv);
        pthread_mutex_unlock(&e->mu);
    }
    buf_free(&sc.raw);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, reader, u, reader_free);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    int rc = MHD_queue_response(q->conn, MHD_HTTP_OK, resp) == MHD_YES ? 0 : -1;
    MHD_destroy_response(resp);
    q->responded = true;
    return rc;
}
