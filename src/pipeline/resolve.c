/*
 * pipeline/resolve.c - the pending input of a step (or of an open
 * transaction): per table, pieces in the order they apply; partial updates
 * of PRIMARY KEY tables resolved into whole rows; the split across workers.
 *
 * Order. For a PRIMARY KEY table the order of changes matters (an insert
 * replaces, a delete removes). The upsert operator applies a step's rows
 * in worker order, each worker's list in order (op_upsert.c), so
 * pend_set_input cuts each table's sequence into W contiguous ranges:
 * worker 0 gets the first rows, worker W-1 the last.
 *
 * Partial updates ({"update": {...}} over HTTP) name the key and some
 * columns; the others keep their current values. The current row of a key
 * is the latest pending change of that key if any, else the upsert
 * operator's row (between steps, on whichever host owns the key: the step
 * backend's lookup, op_upsert_row). Pending changes are
 * indexed lazily: the first update for a table in a step builds an
 * overlay (key -> row encoding, or deleted) from the table's pending
 * pieces, and every later piece keeps it current. A resolved update is an
 * insertion of the merged row, which the upsert operator turns into
 * -old +new. An update of a key that does not exist is dropped, counted as
 * an error of the table's HTTP input and logged.
 */
#include <stdio.h>

#include "../base/mem.h"
#include "../expr/text.h"
#include "../zset/key.h"
#include "pipeline_int.h"

#define MAX_LOGGED 20

typedef struct Ov {
    uint8_t *enc; /* the row's encoding (owned), NULL = deleted */
    uint32_t n;
} Ov;

void pend_init(Pipeline *p, Pending *pd)
{
    memset(pd, 0, sizeof(*pd));
    pd->a = arena_new(1 << 20);
    pd->seq = sl_calloc((size_t)p->c->nrels + 1, sizeof(Seq));
    pd->ov = sl_calloc((size_t)p->c->nrels + 1, sizeof(HMap *));
    pd->slot_rows = sl_calloc((size_t)p->fig.nslots + 1, sizeof(int64_t));
    pd->conn_rows = sl_calloc((size_t)p->cs.nin + 1, sizeof(int64_t));
    pd->conn_hash = sl_calloc((size_t)p->cs.nin + 1, sizeof(uint64_t));
}

static void ov_free(HMap *m)
{
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(m, &it, &k, &kn, &pl))
        sl_free(((Ov *)pl)->enc);
    hmap_free(m);
}

void pend_reset(Pipeline *p, Pending *pd)
{
    for (InBatch *b = pd->batches; b;) {
        InBatch *n = b->next;
        inbatch_free(b);
        b = n;
    }
    for (int i = 0; i < p->c->nrels; i++)
        if (pd->ov[i]) {
            ov_free(pd->ov[i]);
            pd->ov[i] = NULL;
        }
    memset(pd->seq, 0, sizeof(Seq) * (size_t)p->c->nrels);
    memset(pd->slot_rows, 0, sizeof(int64_t) * (size_t)p->fig.nslots);
    pd->batches = pd->batches_tail = NULL;
    pd->units = pd->units_tail = NULL;
    pd->rows = 0;
    pd->max_token = 0;
    pd->max_seq = 0;
    memset(pd->conn_rows, 0, sizeof(int64_t) * (size_t)p->cs.nin);
    memset(pd->conn_hash, 0, sizeof(uint64_t) * (size_t)p->cs.nin);
    arena_reset(pd->a);
}

void pend_free(Pipeline *p, Pending *pd)
{
    pend_reset(p, pd);
    arena_free(pd->a);
    sl_free(pd->seq);
    sl_free(pd->ov);
    sl_free(pd->slot_rows);
    sl_free(pd->conn_rows);
    sl_free(pd->conn_hash);
}

/* Record row r of c (weight w) in the overlay of a PRIMARY KEY table. */
static void ov_apply(Pipeline *p, HMap *ov, const Relation *r, const Chunk *c, int64_t row)
{
    int64_t w = c->w[row];
    if (w == 0)
        return;
    buf_reset(&p->kb);
    key_encode(c, r->pk, r->npk, row, &p->kb);
    bool created;
    Ov *e = hmap_upsert(ov, p->kb.p, p->kb.n, sl_hash(p->kb.p, p->kb.n), &created);
    sl_free(e->enc);
    e->enc = NULL;
    if (w > 0) {
        buf_reset(&p->vb);
        key_encode_row(c, row, &p->vb);
        e->enc = sl_malloc(p->vb.n);
        memcpy(e->enc, p->vb.p, p->vb.n);
        e->n = (uint32_t)p->vb.n;
    }
}

/* Apply every row of a piece list to the overlay (generated pieces are
   generated into scratch memory first). */
static void ov_apply_pieces(Pipeline *p, HMap *ov, const Relation *r, Piece *pc, int64_t rows)
{
    for (int64_t seen = 0; pc && seen < rows; pc = pc->next) {
        if (!pc->chunk && !pc->fill) { /* rows read on another host (scale-out) */
            seen += pc->count;
            continue;
        }
        if (pc->chunk) {
            for (int64_t i = 0; i < pc->chunk->n; i++)
                ov_apply(p, ov, r, pc->chunk, i);
            seen += pc->chunk->n;
            continue;
        }
        for (int64_t off = 0; off < pc->count; off += 1024) {
            int64_t n = SL_MIN(1024, pc->count - off);
            arena_reset(p->scratch);
            Chunk *c = chunk_new(p->scratch, r->ncol, r->types, n);
            pc->fill(pc->src, pc->plan, pc->start + off, n, c, p->scratch);
            for (int64_t i = 0; i < c->n; i++) {
                if (pc->negate)
                    c->w[i] = -c->w[i];
                ov_apply(p, ov, r, c, i);
            }
        }
        seen += pc->count;
    }
}

void pend_append(Pipeline *p, Pending *pd, int rel, Piece *list, int64_t rows)
{
    if (!list)
        return;
    Seq *s = &pd->seq[rel];
    if (pd->ov[rel])
        ov_apply_pieces(p, pd->ov[rel], &p->c->rels[rel], list, rows);
    piece_list_append(&s->head, &s->tail, list);
    s->rows += rows;
    pd->rows += rows;
}

/* Merge the current row into the update at row `row` of c; false when the
   key has no current row. */
static bool merge_update(Pipeline *p, Pending *pd, InBatch *b, const Relation *r, Chunk *c,
                         int64_t row, const uint8_t *present)
{
    int rel = b->rel;
    buf_reset(&p->kb);
    key_encode(c, r->pk, r->npk, row, &p->kb);
    const uint8_t *cur = NULL;
    Ov *e = pd->ov[rel] ? hmap_find(pd->ov[rel], p->kb.p, p->kb.n, sl_hash(p->kb.p, p->kb.n))
                        : NULL;
    if (e) {
        cur = e->enc;
    } else { /* on the worker that owns the key, on whichever host */
        cur = p->be->ops->lookup(p->be, r->node, p->kb.p, p->kb.n, b->a);
    }
    if (!cur)
        return false;
    arena_reset(p->scratch);
    Chunk *tmp = chunk_new(p->scratch, r->ncol, r->types, 1);
    key_decode(cur, r->types, r->ncol, tmp, 0, 0);
    tmp->n = 1;
    for (int j = 0; j < r->ncol; j++) {
        if (present[j])
            continue;
        Vec *d = &c->col[j];
        const Vec *sv = &tmp->col[j];
        if (d->nul)
            d->nul[row] = sv->nul ? sv->nul[0] : 0;
        if (d->i)
            d->i[row] = sv->i[0];
        else if (d->f)
            d->f[row] = sv->f[0];
        else if (d->x)
            d->x[row] = sv->x[0];
        else
            d->s[row] = (Str){arena_strndup(b->a, sv->s[0].p, sv->s[0].n), sv->s[0].n};
    }
    c->w[row] = 1;
    return true;
}

/* Drop the rows of weight 0 from c. */
static void compact(Chunk *c)
{
    int64_t k = 0;
    for (int64_t r = 0; r < c->n; r++) {
        if (c->w[r] == 0)
            continue;
        if (k != r) {
            for (int j = 0; j < c->ncol; j++) {
                Vec *v = &c->col[j];
                if (v->i)
                    v->i[k] = v->i[r];
                else if (v->f)
                    v->f[k] = v->f[r];
                else if (v->x)
                    v->x[k] = v->x[r];
                else
                    v->s[k] = v->s[r];
                if (v->nul)
                    v->nul[k] = v->nul[r];
            }
            c->w[k] = c->w[r];
        }
        k++;
    }
    c->n = k;
}

void resolve_batch(Pipeline *p, Pending *pd, InBatch *b)
{
    int rel = b->rel;
    const Relation *r = &p->c->rels[rel];
    if (!r->npk || (!b->upd && !pd->ov[rel]))
        return;
    if (!pd->ov[rel]) {
        pd->ov[rel] = hmap_new(sizeof(Ov));
        ov_apply_pieces(p, pd->ov[rel], r, pd->seq[rel].head, pd->seq[rel].rows);
    }
    HMap *ov = pd->ov[rel];
    UpdMark *m = b->upd;
    int64_t missing = 0;
    for (Piece *pc = b->head; pc; pc = pc->next) {
        Chunk *c = pc->chunk;
        bool dead = false;
        for (int64_t i = 0; i < c->n; i++) {
            if (m && m->c == c && m->row == i) {
                if (!merge_update(p, pd, b, r, c, i, m->present)) {
                    c->w[i] = 0;
                    dead = true;
                    missing++;
                    if (++p->upd_missing <= MAX_LOGGED) {
                        Buf t = BUF_INIT;
                        for (int k = 0; k < r->npk; k++) {
                            Vec *v = &c->col[r->pk[k]];
                            buf_printf(&t, "%s%s=", k ? ", " : "", r->colnames[r->pk[k]]);
                            text_format_vec(v, i, &t);
                        }
                        fprintf(stderr,
                                "sluice: table %s, http: update of a key that does not exist "
                                "(%s); ignored\n",
                                r->name, buf_cstr(&t));
                        buf_free(&t);
                    }
                }
                m = m->next;
            }
            ov_apply(p, ov, r, c, i);
        }
        if (dead)
            compact(c);
    }
    b->upd = b->upd_tail = NULL;
    if (missing) {
        pthread_mutex_lock(&p->mu);
        p->fig.slots[p->cs.nin + rel].errors += missing;
        pthread_mutex_unlock(&p->mu);
    }
}

/* Append a piece for worker w (copied, or a slice [off, off+take) of pc). */
static void put_piece(Pending *pd, Piece **heads, Piece **tails, int w, const Piece *pc,
                      int64_t off, int64_t take)
{
    Piece *q = arena_zalloc(pd->a, sizeof(*q));
    if (pc->chunk) {
        q->chunk = chunk_slice(pd->a, pc->chunk, off, take);
    } else {
        *q = *pc;
        q->next = NULL;
        q->start = pc->start + off;
        q->count = take;
    }
    if (tails[w])
        tails[w]->next = q;
    else
        heads[w] = q;
    tails[w] = q;
}

/* -1 for rows any worker may take; for rows another host read itself (a
   scale-out placeholder: no chunk, no generator), that host. */
static int piece_host(const Pipeline *p, const Piece *pc)
{
    return !pc->chunk && !pc->fill ? input_owner(p->cs.in[pc->plan]) : -1;
}

/* Split the pieces of s with piece_host() == host (rows rows in all)
   evenly and in order over workers [lo, hi). */
static void split(Pipeline *p, Pending *pd, const Seq *s, int host, int64_t rows, int lo, int hi,
                  Piece **heads, Piece **tails)
{
    int n = hi - lo;
    if (rows <= 0 || n <= 0)
        return;
    int64_t per = (rows + n - 1) / n, room = per;
    int w = lo;
    for (Piece *pc = s->head; pc; pc = pc->next) {
        if (piece_host(p, pc) == host) {
            int64_t total = pc->chunk ? pc->chunk->n : pc->count;
            for (int64_t off = 0; off < total;) {
                int64_t take = SL_MIN(room, total - off);
                put_piece(pd, heads, tails, w, pc, off, take);
                off += take;
                room -= take;
                if (room == 0 && w < hi - 1) {
                    w++;
                    room = per;
                }
            }
        }
        if (pc == s->tail)
            break;
    }
}

void pend_set_input(Pipeline *p, Pending *pd)
{
    int W = p->W;
    Piece **heads = sl_calloc((size_t)W, sizeof(Piece *));
    Piece **tails = sl_calloc((size_t)W, sizeof(Piece *));
    /* rows per host that read them itself (index 0: rows for any worker) */
    Backend *be = p->be;
    int64_t *rows = sl_calloc((size_t)be->hosts + 1, sizeof(int64_t));
    for (int rel = 0; rel < p->c->nrels; rel++) {
        Seq *s = &pd->seq[rel];
        memset(heads, 0, sizeof(Piece *) * (size_t)W);
        memset(tails, 0, sizeof(Piece *) * (size_t)W);
        if (W == 1) {
            heads[0] = s->head;
        } else if (s->rows > 0) {
            /* rows another host read (scale-out) stay on its workers; the
               rest is spread over all */
            memset(rows, 0, sizeof(int64_t) * (size_t)(be->hosts + 1));
            for (Piece *pc = s->head; pc; pc = pc->next) {
                rows[piece_host(p, pc) + 1] += pc->chunk ? pc->chunk->n : pc->count;
                if (pc == s->tail)
                    break;
            }
            split(p, pd, s, -1, rows[0], 0, W, heads, tails);
            for (int h = 1; h < be->hosts; h++)
                split(p, pd, s, h, rows[h + 1], be_first_worker(be, h),
                      be_first_worker(be, h + 1), heads, tails);
        }
        for (int w = 0; w < W; w++)
            be->ops->set_input(be, w, rel, heads[w]);
    }
    sl_free(rows);
    sl_free(heads);
    sl_free(tails);
}

int sample_events(Pipeline *p, int rel, Piece *list, int64_t rows, int col, Arena *a,
                  int64_t **out, int max)
{
    const Relation *r = &p->c->rels[rel];
    int64_t stride = rows / max > 1 ? rows / max : 1;
    int64_t *ev = arena_alloc(a, sizeof(int64_t) * (size_t)max);
    int n = 0;
    int64_t base = 0, next = 0;
    for (Piece *pc = list; pc && n < max && base < rows; pc = pc->next) {
        int64_t total = pc->chunk ? pc->chunk->n : pc->count;
        for (; next < base + total && n < max; next += stride) {
            int64_t i = next - base;
            if (pc->chunk) {
                const Vec *v = &pc->chunk->col[col];
                if (!vec_is_null(v, i))
                    ev[n++] = v->i[i];
                continue;
            }
            arena_reset(p->scratch);
            Chunk *c = chunk_new(p->scratch, r->ncol, r->types, 1);
            pc->fill(pc->src, pc->plan, pc->start + i, 1, c, p->scratch);
            if (c->n == 1 && !vec_is_null(&c->col[col], 0))
                ev[n++] = c->col[col].i[0];
        }
        base += total;
    }
    *out = ev;
    return n;
}
