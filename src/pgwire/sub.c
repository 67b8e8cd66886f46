/*
 * pgwire/sub.c - SUBSCRIBE [TO] view [WITH (SNAPSHOT [= false])] and
 * COPY (SUBSCRIBE view) TO STDOUT: a view's changes streamed to the
 * session, one row per changed tuple: the step that produced it, its
 * weight (+n inserted, -n deleted), then the view's columns. SUBSCRIBE
 * sends a RowDescription and DataRows; the COPY form CopyData lines in
 * text format (tab-separated, \N for NULL). A materialized view first
 * gives its current contents (the snapshot, at the step it was taken;
 * WITH (SNAPSHOT = false) skips it); the stream goes on until the client
 * sends anything or leaves, or the pipeline stops.
 *
 * Subscribing runs on the controller between steps (pipeline_call), so
 * the snapshot and the changes after it meet exactly. After every step the
 * controller's hook (pg_subs_after_step, added with pipeline_add_hooks)
 * encodes each watched view's consolidated changes once per form and
 * appends them to every subscriber's queue. A queue is bounded (SUB_QUEUE
 * bytes): a subscriber that falls that far behind is dropped with an
 * error, so a slow client never stalls the pipeline. The session thread
 * sends what its queue holds and watches its socket meanwhile.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../base/mem.h"
#include "../expr/text.h"
#include "../sql/sql.h"
#include "../zset/batch.h"
#include "../zset/key.h"
#include "../zset/xrec.h"
#include "pg_int.h"

#define SUB_QUEUE ((size_t)16 << 20)

typedef enum SubState { SUB_ACTIVE, SUB_ENDED, SUB_DROPPED, SUB_CLOSED } SubState;

struct PgSub {
    PgSub *next;
    int rel;
    bool copy;               /* CopyData lines, else DataRows */
    SubState state;
    Buf q;                   /* encoded messages not sent yet */
    pthread_cond_t cv;
};

/* The messages of tuples (row encodings) with weights into out. */
static void encode(const Relation *r, int ncol, const uint8_t *const *keys, const int64_t *w,
                   int64_t n, int64_t step, bool copy, Buf *out)
{
    Arena *a = arena_new(4096);
    Chunk *row = chunk_new(a, r->ncol, r->types, 1);
    row->n = 1;
    Buf cell = BUF_INIT;
    char num[32];
    for (int64_t i = 0; i < n; i++) {
        key_decode(keys[i], r->types, r->ncol, row, 0, 0);
        buf_putc(out, copy ? 'd' : 'D');
        size_t start = out->n;
        buf_append(out, "\0\0\0\0", 4);
        if (!copy) {
            uint16_t nc = htons((uint16_t)(ncol + 2));
            buf_append(out, &nc, 2);
        }
        for (int j = -2; j < ncol; j++) {
            const char *t = num;
            size_t tn;
            bool null = false;
            if (j < 0) {
                tn = (size_t)snprintf(num, sizeof(num), "%lld", (long long)(j == -2 ? step : w[i]));
            } else {
                const Vec *v = &row->col[j];
                null = vec_is_null(v, 0);
                buf_reset(&cell);
                if (!null && v->t.kind == TK_BOOL)
                    buf_putc(&cell, v->i[0] ? 't' : 'f');
                else if (!null)
                    text_format_vec(v, 0, &cell);
                t = (const char *)cell.p;
                tn = cell.n;
            }
            if (copy) {
                if (j > -2)
                    buf_putc(out, '\t');
                if (null) {
                    buf_puts(out, "\\N");
                    continue;
                }
                for (size_t k = 0; k < tn; k++) {
                    char ch = t[k];
                    if (ch == '\\' || ch == '\t' || ch == '\n' || ch == '\r') {
                        buf_putc(out, '\\');
                        ch = ch == '\t' ? 't' : ch == '\n' ? 'n' : ch == '\r' ? 'r' : ch;
                    }
                    buf_putc(out, ch);
                }
                continue;
            }
            uint32_t len = htonl(null ? 0xFFFFFFFFu : (uint32_t)tn);
            buf_append(out, &len, 4);
            if (!null)
                buf_append(out, t, tn);
        }
        if (copy)
            buf_putc(out, '\n');
        uint32_t len = htonl((uint32_t)(out->n - start));
        memcpy(out->p + start, &len, 4);
    }
    buf_free(&cell);
    arena_free(a);
}

static int visible_cols(const Relation *r) { return r->ncol - (r->is_table ? 0 : r->nhidden); }

static void push(PgServer *s, PgSub *u, const Buf *m)
{
    if (u->state != SUB_ACTIVE || !m->n)
        return;
    if (u->q.n + m->n > SUB_QUEUE) {
        fprintf(stderr, "sluice: pg: a subscriber of %s was dropped: it reads too slowly "
                        "(%zu bytes queued)\n", s->c->rels[u->rel].name, u->q.n);
        u->state = SUB_DROPPED;
    } else {
        buf_append(&u->q, m->p, m->n);
    }
    pthread_cond_signal(&u->cv);
}

static void sub_free(PgSub *u)
{
    buf_free(&u->q);
    pthread_cond_destroy(&u->cv);
    sl_free(u);
}

void pg_subs_after_step(void *arg, Pipeline *p, int64_t step)
{
    PgServer *s = arg;
    const Circuit *c = s->c;
    pthread_mutex_lock(&s->mu);
    for (PgSub **pu = &s->subs; *pu;) {
        PgSub *u = *pu;
        if (u->state == SUB_CLOSED) {
            *pu = u->next;
            pipeline_track_changes(p, u->rel, false);
            sub_free(u);
            continue;
        }
        pu = &u->next;
    }
    Buf m[2] = {BUF_INIT, BUF_INIT};
    for (int rel = 0; rel < c->nrels; rel++) {
        bool need[2] = {false, false};
        for (PgSub *u = s->subs; u; u = u->next)
            if (u->rel == rel && u->state == SUB_ACTIVE)
                need[u->copy] = true;
        if (!need[0] && !need[1])
            continue;
        const Batch *b = pipeline_changes(p, rel);
        if (!b || !b->n)
            continue;
        const uint8_t **keys = sl_malloc(sizeof(*keys) * (size_t)b->n);
        for (int64_t i = 0; i < b->n; i++)
            keys[i] = batch_key(b, i);
        for (int f = 0; f < 2; f++) {
            buf_reset(&m[f]);
            if (need[f])
                encode(&c->rels[rel], visible_cols(&c->rels[rel]), keys, b->w, b->n, step, f,
                       &m[f]);
        }
        sl_free(keys);
        for (PgSub *u = s->subs; u; u = u->next)
            if (u->rel == rel)
                push(s, u, &m[u->copy]);
    }
    pthread_mutex_unlock(&s->mu);
    buf_free(&m[0]);
    buf_free(&m[1]);
}

void pg_subs_end_all(PgServer *s)
{
    pthread_mutex_lock(&s->mu);
    for (PgSub *u = s->subs; u; u = u->next)
        if (u->state == SUB_ACTIVE) {
            u->state = SUB_ENDED;
            pthread_cond_signal(&u->cv);
        }
    pthread_mutex_unlock(&s->mu);
}

void pg_subs_free(PgServer *s)
{
    for (PgSub *u = s->subs; u;) {
        PgSub *n = u->next;
        sub_free(u);
        u = n;
    }
    s->subs = NULL;
}

typedef struct SubCall {
    PgServer *s;
    PgSub *u;
    bool snapshot;
    Buf raw;
    int64_t step;
} SubCall;

/* On the controller, between steps. */
static void subscribe(Pipeline *p, void *arg)
{
    SubCall *sc = arg;
    pipeline_track_changes(p, sc->u->rel, true);
    if (sc->snapshot)
        pipeline_contents_raw(p, sc->u->rel, &sc->raw);
    sc->step = pipeline_step(p);
    pthread_mutex_lock(&sc->s->mu);
    sc->u->next = sc->s->subs;
    sc->s->subs = sc->u;
    pthread_mutex_unlock(&sc->s->mu);
}

/* Has the client sent anything or left? */
static bool client_spoke(PgConn *c)
{
    struct pollfd pf = {c->fd, POLLIN, 0};
    return poll(&pf, 1, 0) > 0;
}

int pg_subscribe(PgConn *c, const char *sql, bool copy, PgErr *e)
{
    PgServer *s = c->s;
    const char *p = sql;
    pg_accept_kw(&p, "TO");
    char name[256];
    if (!pg_name_at(&p, name, sizeof(name)))
        return pg_err(e, "42601", "syntax error: expected SUBSCRIBE view");
    bool snapshot = true, snap_given = false;
    if (pg_accept_kw(&p, "WITH")) {
        p = pg_skip_ws(p);
        bool paren = *p == '(';
        p += paren;
        if (!pg_accept_kw(&p, "SNAPSHOT"))
            return pg_err(e, "0A000", "SUBSCRIBE takes only WITH (SNAPSHOT [= true | false])");
        snap_given = true;
        p = pg_skip_ws(p);
        if (*p == '=')
            p++;
        if (pg_accept_kw(&p, "FALSE") || pg_accept_kw(&p, "OFF"))
            snapshot = false;
        else if (!pg_accept_kw(&p, "TRUE"))
            pg_accept_kw(&p, "ON");
        p = pg_skip_ws(p);
        if (paren && *p == ')')
            p++;
    }
    p = pg_skip_ws(p);
    if (*p && *p != ';')
        return pg_err(e, "42601", "syntax error at the end of SUBSCRIBE");
    int rel = circuit_find_rel(s->c, name);
    if (rel < 0)
        return pg_err(e, "42P01", "relation \"%s\" does not exist", name);
    const Relation *r = &s->c->rels[rel];
    if (r->sink < 0) {
        pg_err(e, "55000", "table %s has no change stream to follow", r->name);
        snprintf(e->hint, sizeof(e->hint), "declare it WITH ('materialized' = 'true'), or "
                                           "follow a view over it");
        return -1;
    }
    if (!r->materialized) {
        if (snap_given && snapshot) {
            pg_err(e, "55000", "a snapshot needs the contents of %s, which is not materialized",
                   r->name);
            snprintf(e->hint, sizeof(e->hint), "declare it as CREATE MATERIALIZED VIEW %s",
                     r->name);
            return -1;
        }
        snapshot = false;
    }
    PgSub *u = sl_calloc(1, sizeof(*u));
    u->rel = rel;
    u->copy = copy;
    pthread_cond_init(&u->cv, NULL);
    SubCall sc = {s, u, snapshot, BUF_INIT, 0};
    if (pipeline_call(s->p, subscribe, &sc)) {
        sub_free(u);
        buf_free(&sc.raw);
        return pg_err(e, "57P01", "the pipeline is stopping; no new subscriptions");
    }
    int ncol = visible_cols(r);
    /* the header */
    if (copy) {
        pg_begin(c, 'H');
        buf_putc(&c->out, 0);
        pg_i16(c, ncol + 2);
        for (int j = 0; j < ncol + 2; j++)
            pg_i16(c, 0);
        pg_end(c);
    } else {
        PgRes d = {0};
        pgres_cols(&d, ncol + 2);
        pgres_col(&d, 0, "step", 20);
        pgres_col(&d, 1, "weight", 20);
        for (int j = 0; j < ncol; j++)
            pgres_col(&d, j + 2, r->colnames[j], pg_type_oid(r->types[j]));
        pg_send_desc(c, &d);
        pgres_free(&d);
    }
    if (snapshot) {
        size_t pos = 0;
        XRec x;
        int64_t n = 0;
        while (xrec_next(&sc.raw, &pos, &x))
            n++;
        const uint8_t **keys = sl_malloc(sizeof(*keys) * (size_t)(n + 1));
        int64_t *w = sl_malloc(sizeof(*w) * (size_t)(n + 1));
        pos = 0;
        for (int64_t i = 0; xrec_next(&sc.raw, &pos, &x); i++)
            keys[i] = x.k, w[i] = x.w;
        encode(r, ncol, keys, w, n, sc.step, copy, &c->out);
        sl_free(keys);
        sl_free(w);
    }
    buf_free(&sc.raw);
    /* the stream */
    Buf chunk = BUF_INIT;
    SubState st = SUB_ACTIVE;
    while (pg_flush(c)) {
        pthread_mutex_lock(&s->mu);
        if (!u->q.n && u->state == SUB_ACTIVE) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += 200 * 1000000L;
            if (dl.tv_nsec >= 1000000000L)
                dl.tv_sec++, dl.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&u->cv, &s->mu, &dl);
        }
        buf_reset(&chunk);
        buf_append(&chunk, u->q.p, u->q.n);
        buf_reset(&u->q);
        st = u->state;
        pthread_mutex_unlock(&s->mu);
        buf_append(&c->out, chunk.p, chunk.n);
        if (st != SUB_ACTIVE || client_spoke(c))
            break;
    }
    buf_free(&chunk);
    pthread_mutex_lock(&s->mu);
    u->state = SUB_CLOSED; /* the next step's hook unregisters it */
    pthread_mutex_unlock(&s->mu);
    if (st == SUB_DROPPED)
        return pg_err(e, "53400", "the subscription was dropped: the client read too slowly "
                                  "(more than %zu bytes queued)", SUB_QUEUE);
    if (st == SUB_ENDED && copy) {
        pg_begin(c, 'c');
        pg_end(c);
    }
    if (st == SUB_ENDED)
        pg_send_complete(c, "SUBSCRIBE");
    else
        c->broken = true; /* the client spoke or left: end the session */
    return 0;
}
