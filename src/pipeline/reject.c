/*
 * pipeline/reject.c - poison records: when a step fails with a runtime
 * error (overflow, invalid cast, ...) in a filter or projection over its
 * input, the runtime undoes the step (rt_rolled_back, worker.c); this file
 * finds the input rows that fail, takes them out of the pending input and
 * reports them, so that the step can run again over the rest.
 *
 * Finding them: every relation's pending pieces are evaluated again
 * through the linear operators that read that relation (rt_probe: pure,
 * nothing pushed, no state touched), a morsel at a time; a morsel that
 * fails is halved until single rows remain, so k bad rows among n cost
 * O(n + k log n) row evaluations. The rows are row-local by construction
 * (filters and projections see one row at a time), so a row that fails
 * alone is exactly a row that makes the step fail.
 *
 * Taking them out: the relation's piece list is rebuilt from slices of the
 * same chunks (and sub-ranges of generated pieces) around the bad rows.
 * The journal already holds the step's original input; a replay fails the
 * same way and rejects the same rows (the probe is deterministic), so the
 * decision need not be journaled apart.
 *
 * When no row fails on its own (an aggregate's SUM past BIGINT, a product
 * of joined columns), the rows are taken in order - relation by relation,
 * pieces in order - and the failing prefix is found by bisection over dry
 * steps (rt_step_dry: run, then undo whatever happened): the row that ends
 * the longest prefix that succeeds is the one that makes the step fail; it
 * is rejected and the search goes on past it. Each rejection costs about
 * log2(rows) dry steps; only with every stateful operator able to undo.
 *
 * Reporting: a log line per rejected row (the first few per step), the
 * counters per input slot (statistics), per HTTP batch token (the ingress
 * response of wait=true, the commit of a transaction), and a list of
 * (relation, record text, error) the controller hands to the error
 * relation sluice_errors when the program has one.
 */
#include <stdio.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../io/format.h"
#include "pipeline_int.h"

#define PROBE_ROWS 65536
#define LOG_PER_STEP 10

/* A rejected record for the errors table. */
typedef struct ErrRow {
    int rel;
    char *text, *why;
} ErrRow;

typedef struct Finder {
    Pipeline *p;
    int rel;
    Arena *a;        /* slices and generated rows for probing */
    int64_t *bad;    /* row indexes (of the current piece) that fail */
    char **why;      /* ... and their errors */
    int64_t nbad, capbad, capwhy;
    ErrRow *rows;    /* for the errors table */
    int64_t nrows, caprows;
} Finder;

/* Rows [lo, hi) of c fail somewhere: narrow down to the single rows. */
static void find_bad(Finder *f, const Chunk *c, int64_t base, int64_t lo, int64_t hi)
{
    Err e = {0};
    Chunk *s = chunk_slice(f->a, c, lo, hi - lo);
    if (!rt_probe(f->p->be->rt, f->rel, s, &e))
        return;
    if (hi - lo == 1) {
        VEC_RESERVE(f->bad, f->capbad, f->nbad + 1);
        VEC_RESERVE(f->why, f->capwhy, f->nbad + 1);
        f->bad[f->nbad] = base + lo;
        f->why[f->nbad++] = sl_strdup(e.msg);
        return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    find_bad(f, c, base, lo, mid);
    find_bad(f, c, base, mid, hi);
}

/* Rows [off, off + n) of piece pc as a chunk in a. */
static Chunk *piece_rows(const Relation *r, const Piece *pc, int64_t off, int64_t n, Arena *a)
{
    if (pc->chunk)
        return chunk_slice(a, pc->chunk, off, n);
    Chunk *c = chunk_new(a, r->ncol, r->types, n);
    pc->fill(pc->src, pc->plan, pc->start + off, n, c, a);
    if (pc->negate)
        for (int64_t i = 0; i < c->n; i++)
            c->w[i] = -c->w[i];
    return c;
}

/* Piece for rows [off, off + n) of pc, in pd's arena. */
static Piece *sub_piece(Pending *pd, const Piece *pc, int64_t off, int64_t n)
{
    Piece *q = arena_zalloc(pd->a, sizeof(*q));
    *q = *pc;
    q->next = NULL;
    if (pc->chunk) {
        q->chunk = chunk_slice(pd->a, pc->chunk, off, n);
    } else {
        q->start = pc->start + off;
        q->count = n;
    }
    return q;
}

/* The statistics slot and HTTP batch each piece of relation rel came
   from: units of rel cover its pieces in order, row counts tell where one
   ends; HTTP batches own their pieces. */
static void piece_origin(Pipeline *p, Pending *pd, int rel, const Piece *pc, int64_t *row0,
                         int *slot, InBatch **batch)
{
    *slot = -1;
    *batch = NULL;
    int64_t seen = 0;
    for (Unit *u = pd->units; u; u = u->next) {
        if (u->rel != rel)
            continue;
        if (*row0 < seen + u->rows) {
            *slot = u->slot;
            break;
        }
        seen += u->rows;
    }
    for (InBatch *b = pd->batches; b; b = b->next) {
        if (b->rel != rel)
            continue;
        for (Piece *q = b->head; q; q = q->next) {
            if (q == pc) {
                *batch = b;
                return;
            }
            if (q == b->tail)
                break;
        }
    }
}

static void note(Pipeline *p, Finder *f, int slot, InBatch *b, const Chunk *rows, int64_t r,
                 const char *why, int64_t *logged)
{
    int rel = f->rel;
    const Relation *R = &p->c->rels[rel];
    RowSchema rs = {R->ncol, (const char *const *)R->colnames, R->types};
    Buf text = {0};
    fmt_json_row(&rs, rows, r, &text);
    if (rows->w[r] < 0) { /* a deletion: say so, as the ingress format would */
        Buf d = {0};
        buf_printf(&d, "{\"delete\": %.*s}", (int)text.n, (const char *)text.p);
        buf_free(&text);
        text = d;
    }
    if (*logged < LOG_PER_STEP)
        fprintf(stderr, "sluice: step %lld: rejected a record of table %s: %s: %.*s\n",
                (long long)rt_steps(p->be->rt) + 1, R->name, why,
                (int)(text.n > 2000 ? 2000 : text.n), (const char *)text.p);
    (*logged)++;
    pthread_mutex_lock(&p->mu);
    if (slot >= 0)
        p->fig.slots[slot].rejected++;
    p->rej.total++;
    snprintf(p->rej.last, sizeof(p->rej.last), "%s", why);
    if (b)
        rejects_note_token(&p->rej, b->token, why);
    pthread_mutex_unlock(&p->mu);
    if (p->err_rel >= 0 && rel != p->err_rel) {
        buf_putc(&text, 0);
        *VEC_PUSH(f->rows, f->nrows, f->caprows) = (ErrRow){rel, (char *)text.p, sl_strdup(why)};
        return;
    }
    buf_free(&text);
}

/* A string copied into pd's arena. */
static Str arena_str(Pending *pd, const char *s)
{
    size_t n = strlen(s);
    char *d = arena_alloc(pd->a, n + 1);
    memcpy(d, s, n + 1);
    return (Str){d, (uint32_t)n};
}

/* The rejected records as rows of the errors table, in this step. */
static void add_error_rows(Pipeline *p, Pending *pd, Finder *f)
{
    const Relation *E = &p->c->rels[p->err_rel];
    Chunk *c = chunk_new(pd->a, E->ncol, E->types, f->nrows);
    for (int64_t i = 0; i < f->nrows; i++) {
        c->col[0].i[i] = rt_steps(p->be->rt) + 1;
        c->col[1].s[i] = arena_str(pd, p->c->rels[f->rows[i].rel].name);
        c->col[2].s[i] = arena_str(pd, f->rows[i].text);
        c->col[3].s[i] = arena_str(pd, f->rows[i].why);
        c->w[i] = 1;
        sl_free(f->rows[i].text);
        sl_free(f->rows[i].why);
    }
    c->n = f->nrows;
    Piece *pc = arena_zalloc(pd->a, sizeof(*pc));
    pc->chunk = c;
    pend_append(p, pd, p->err_rel, pc, c->n);
}

int64_t reject_isolate(Pipeline *p, Pending *pd)
{
    int64_t total = 0, logged = 0;
    Finder f = {.p = p, .a = arena_new(1 << 20)};
    for (int rel = 0; rel < p->c->nrels; rel++) {
        Seq *s = &pd->seq[rel];
        if (!s->head || s->rows == 0 || rel == p->err_rel)
            continue;
        const Relation *R = &p->c->rels[rel];
        f.rel = rel;
        Piece *head = NULL, *tail = NULL;
        int64_t row0 = 0, removed = 0;
        bool changed = false;
        for (Piece *pc = s->head; pc; pc = pc == s->tail ? NULL : pc->next) {
            int64_t n = pc->chunk ? pc->chunk->n : pc->count;
            int64_t keep_from = 0;
            f.nbad = 0;
            for (int64_t off = 0; off < n; off += PROBE_ROWS) {
                int64_t cnt = n - off < PROBE_ROWS ? n - off : PROBE_ROWS;
                arena_reset(f.a);
                Chunk *c = piece_rows(R, pc, off, cnt, f.a);
                int64_t before = f.nbad;
                find_bad(&f, c, off, 0, cnt);
                if (f.nbad > before) {
                    int slot;
                    InBatch *b;
                    int64_t at = row0;
                    piece_origin(p, pd, rel, pc, &at, &slot, &b);
                    for (int64_t k = before; k < f.nbad; k++)
                        note(p, &f, slot, b, c, f.bad[k] - off, f.why[k], &logged);
                }
            }
            /* the piece again, around its bad rows */
            for (int64_t k = 0; k < f.nbad; k++) {
                if (f.bad[k] > keep_from)
                    piece_list_append(&head, &tail, sub_piece(pd, pc, keep_from,
                                                              f.bad[k] - keep_from));
                keep_from = f.bad[k] + 1;
                sl_free(f.why[k]);
            }
            if (f.nbad == 0) {
                Piece *q = arena_zalloc(pd->a, sizeof(*q));
                *q = *pc;
                q->next = NULL;
                piece_list_append(&head, &tail, q);
            } else {
                changed = true;
                if (keep_from < n)
                    piece_list_append(&head, &tail, sub_piece(pd, pc, keep_from, n - keep_from));
            }
            removed += f.nbad;
            row0 += n;
        }
        if (changed) {
            s->head = head;
            s->tail = tail;
            s->rows -= removed;
            pd->rows -= removed;
            total += removed;
        }
    }
    if (f.nrows)
        add_error_rows(p, pd, &f);
    sl_free(f.rows);
    if (logged > LOG_PER_STEP)
        fprintf(stderr, "sluice: step %lld: %lld more records rejected (not shown)\n",
                (long long)rt_steps(p->be->rt) + 1, (long long)(logged - LOG_PER_STEP));
    sl_free(f.bad);
    sl_free(f.why);
    arena_free(f.a);
    return total;
}

/* ---- rejection by dry steps ---- */

#define MAX_STEP_REJECTS 64

/* Set pd's input to the first m rows (in relation order) of the original
   pieces orig, leaving out the rows at the original indexes rej[0..nrej)
   (ascending). New piece lists; the original pieces are untouched. */
static void build_prefix(Pipeline *p, Pending *pd, const Seq *orig, const int64_t *rej,
                         int64_t nrej, int64_t m)
{
    int64_t g = 0, k = 0; /* original index of the piece's first row; next rej */
    for (int rel = 0; rel < p->c->nrels; rel++) {
        Seq *out = &pd->seq[rel];
        memset(out, 0, sizeof(*out));
        for (Piece *pc = orig[rel].head; pc; pc = pc == orig[rel].tail ? NULL : pc->next) {
            int64_t n = pc->chunk ? pc->chunk->n : pc->count;
            int64_t from = 0;
            while (from < n && m > 0) {
                int64_t to = k < nrej && rej[k] < g + n ? rej[k] - g : n; /* next cut */
                int64_t take = to - from < m ? to - from : m;
                if (take > 0) {
                    piece_list_append(&out->head, &out->tail, sub_piece(pd, pc, from, take));
                    out->rows += take;
                    m -= take;
                }
                if (to < n && take == to - from) { /* skip the rejected row */
                    k++;
                    from = to + 1;
                } else {
                    from = to;
                }
            }
            while (k < nrej && rej[k] < g + n) /* (when m ran out) */
                k++;
            g += n;
        }
    }
}

/* Dry-run the first m remaining rows; 0 when they pass. */
static int dry_prefix(Pipeline *p, Pending *pd, const Seq *orig, const int64_t *rej,
                      int64_t nrej, int64_t m, Err *err)
{
    build_prefix(p, pd, orig, rej, nrej, m);
    pend_set_input(p, pd);
    return rt_step_dry(p->be->rt, err);
}

/* Original row i (in relation order): its relation, piece, offset in the
   piece and the relation's row index of the piece's first row. */
static Piece *locate(Pipeline *p, const Seq *orig, int64_t i, int *rel, int64_t *off,
                     int64_t *row0)
{
    for (int r = 0; r < p->c->nrels; r++) {
        int64_t base = 0;
        for (Piece *q = orig[r].head; q; q = q == orig[r].tail ? NULL : q->next) {
            int64_t n = q->chunk ? q->chunk->n : q->count;
            if (i < n) {
                *rel = r;
                *off = i;
                *row0 = base;
                return q;
            }
            i -= n;
            base += n;
        }
    }
    return NULL;
}

int64_t reject_by_steps(Pipeline *p, Pending *pd, Err *err)
{
    (void)err;
    if (!rt_can_undo(p->be->rt))
        return 0;
    int nrels = p->c->nrels;
    Seq *orig = sl_malloc(sizeof(Seq) * (size_t)nrels);
    memcpy(orig, pd->seq, sizeof(Seq) * (size_t)nrels);
    int64_t total = 0, logged = 0, nrej = 0;
    int64_t rej[MAX_STEP_REJECTS] = {0};
    for (int r = 0; r < nrels; r++)
        total += orig[r].rows;
    Finder f = {.p = p, .a = arena_new(1 << 16)};
    Err e = {0};
    int64_t lo = 0; /* the first lo remaining rows pass */
    if (dry_prefix(p, pd, orig, rej, 0, 0, &e))
        goto out_restore; /* the step fails without input: no row to blame */
    while (nrej < MAX_STEP_REJECTS) {
        err_clear(&e);
        if (!dry_prefix(p, pd, orig, rej, nrej, total - nrej, &e))
            break; /* the rest passes */
        Err why = e;
        int64_t hi = total - nrej; /* the first hi remaining rows fail */
        while (hi - lo > 1) {
            int64_t mid = lo + (hi - lo) / 2;
            err_clear(&e);
            if (dry_prefix(p, pd, orig, rej, nrej, mid, &e)) {
                hi = mid;
                why = e;
            } else {
                lo = mid;
            }
        }
        /* remaining row hi - 1 tips the step over: its original index */
        int64_t i = hi - 1;
        for (int64_t k = 0; k < nrej && rej[k] <= i; k++)
            i++;
        int rel;
        int64_t off, row0;
        Piece *pc = locate(p, orig, i, &rel, &off, &row0);
        if (!pc)
            break;
        arena_reset(f.a);
        Chunk *c = piece_rows(&p->c->rels[rel], pc, off, 1, f.a);
        int slot;
        InBatch *b;
        int64_t at = row0 + off;
        f.rel = rel;
        piece_origin(p, pd, rel, pc, &at, &slot, &b);
        note(p, &f, slot, b, c, 0, why.msg, &logged);
        rej[nrej++] = i;
        lo = hi - 1; /* the rows before the rejected one still pass */
    }
out_restore:
    build_prefix(p, pd, orig, rej, nrej, total - nrej);
    pd->rows -= nrej;
    if (f.nrows)
        add_error_rows(p, pd, &f);
    sl_free(f.rows);
    sl_free(orig);
    arena_free(f.a);
    if (nrej == MAX_STEP_REJECTS) {
        fprintf(stderr, "sluice: step %lld: %d records rejected one by one; giving up on "
                        "this step\n", (long long)rt_steps(p->be->rt) + 1, MAX_STEP_REJECTS);
        return 0;
    }
    return nrej;
}

/* ---- per-token rejections (the ingress response of wait=true) ---- */

void rejects_note_token(Rejects *r, int64_t token, const char *why)
{
    for (int i = 0; i < REJECT_TOKENS; i++)
        if (r->tok[i].token == token && r->tok[i].n > 0) {
            r->tok[i].n++;
            return;
        }
    RejTok *t = &r->tok[r->next++ % REJECT_TOKENS];
    t->token = token;
    t->n = 1;
    snprintf(t->why, sizeof(t->why), "%s", why);
}

int64_t pipeline_token_rejected(Pipeline *p, int64_t token, char *why, size_t whylen)
{
    int64_t n = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < REJECT_TOKENS; i++)
        if (p->rej.tok[i].token == token && p->rej.tok[i].n > 0) {
            n = p->rej.tok[i].n;
            if (why && whylen)
                snprintf(why, whylen, "%s", p->rej.tok[i].why);
        }
    pthread_mutex_unlock(&p->mu);
    return n;
}
