/*
 * tests/circuit/harness.h - property-test harness for operators (DBSP
 * style): a view's integrated output must equal the view evaluated from
 * scratch over the integrated input, for any cutting of the input into
 * steps and any number of workers.
 *
 * A test gives a SQL program, the tables to feed (column value domains)
 * and, per materialized view to check, a reference function written plainly
 * in C over the current table contents. h_run then:
 *   1. generates a random stream of insertions and deletions (deletions only
 *      of rows present) from a fixed seed, in phases that fill the tables,
 *      thin them out, drain them completely and fill them again;
 *   2. cuts it into steps four ways (one step; one change per step; random
 *      small steps including empty ones; random large steps whose rows are
 *      consolidated per worker, so weights other than +-1 occur) and runs
 *      each cut with 1, 2 and 4 workers, giving each worker its share of a
 *      step's rows (round-robin, contiguous or random, sometimes in two
 *      pieces, sometimes none);
 *   3. checks, after every step of every cut but the single-step one (and
 *      after that one's only step), that the sum of each view's sink
 *      contents over all workers equals the reference over the input
 *      integrated so far, and that the final contents are byte-identical
 *      across all runs;
 *   4. in every cut of more than one step, after about one step in five,
 *      restarts from a checkpoint (h_restart: every operator's save(), a
 *      fresh runtime, load()) and checks again, so every operator's
 *      checkpoint is proven by the same properties as its steps; one
 *      restart in three changes the worker count (load_split re-shards).
 * Failures clean up first (workers joined, memory freed), print the
 * difference to stderr, then fail the cmocka test. SL_PROP_ROUNDS=N in the
 * environment repeats every property with N seeds (a longer soak).
 */
#ifndef SL_TESTS_CIRCUIT_HARNESS_H
#define SL_TESTS_CIRCUIT_HARNESS_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/arena.h"
#include "base/mem.h"
#include "circuit/circuit.h"
#include "runtime/runtime.h"
#include "sql/sql.h"
#include "storage/storage.h"
#include "zset/hmap.h"
#include "zset/key.h"
#include "zset/spill.h"
#include "zset/trace.h"

/* With h_spill on (a test sets it around h_run), the memory budget is one
   byte: after every step every trace run moves to spill files, spilled
   runs are merged by the spine's rule (streaming, file to file), and the
   next steps read them back through a cache of a few blocks. */
static bool h_spill;

static inline Runtime *h_rt_new(const Circuit *c, int W)
{
    trace_track_new(h_spill);
    Runtime *rt = rt_new(c, W);
    trace_track_new(false);
    return rt;
}

static inline void h_spill_setup(bool on)
{
    h_spill = on;
    SpillConf conf = {
        .limit = on ? 1 : 0, .cache_bytes = 512, .block_bytes = 96, .min_run = 0, .merge = true};
    if (on)
        spill_store_setup(NULL, 0, 1, &conf);
    else
        spill_store_close();
}

static inline bool h_spill_all(char *msg, size_t n)
{
    Err e = {0};
    if (h_spill && (spill_enforce(0, NULL, &e) || spill_compact(NULL, &e))) {
        snprintf(msg, n, "spill: %s", e.msg);
        return false;
    }
    return true;
}

#define H_MAXC 8 /* columns per table or view */
#define H_MAXT 4 /* tables per program */
#define H_MAXV 4 /* checked views per program */

/* ---- values, rows, multisets of rows ---------------------------------- */

typedef struct HVal {
    bool null;
    int64_t i;     /* PHYS_I64 */
    double f;      /* PHYS_F64 */
    const char *s; /* PHYS_STR (not NUL-terminated in engine output) */
    uint32_t n;
} HVal;

typedef struct HRow {
    HVal v[H_MAXC];
} HRow;

/* Rows with multiplicities m (tables hold every copy with m = 1). */
typedef struct HRows {
    HRow *r;
    int64_t *m;
    int64_t n, cap;
} HRows;

static inline HVal h_null(void) { return (HVal){.null = true}; }
static inline HVal h_int(int64_t x) { return (HVal){.i = x}; }
static inline HVal h_dbl(double x) { return (HVal){.f = x}; }
static inline HVal h_str(const char *s, uint32_t n) { return (HVal){.s = s, .n = n}; }

static inline void h_rows_add(HRows *rs, const HRow *r, int64_t m)
{
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 64;
        rs->r = sl_realloc(rs->r, sizeof(HRow) * (size_t)rs->cap);
        rs->m = sl_realloc(rs->m, sizeof(int64_t) * (size_t)rs->cap);
    }
    rs->r[rs->n] = *r;
    rs->m[rs->n++] = m;
}
static inline void h_emit(HRows *out, const HRow *r) { h_rows_add(out, r, 1); }
static inline void h_rows_free(HRows *rs)
{
    sl_free(rs->r);
    sl_free(rs->m);
    memset(rs, 0, sizeof(*rs));
}

/* Exact value equality for values of the same column. */
static inline bool h_val_eq(const HVal *a, const HVal *b, Phys ph)
{
    if (a->null || b->null)
        return a->null == b->null;
    switch (ph) {
    case PHYS_I64: return a->i == b->i;
    case PHYS_F64: return a->f == b->f;
    default: return a->n == b->n && (a->n == 0 || !memcmp(a->s, b->s, a->n));
    }
}

/* Byte-wise string comparison (SQL order of VARCHAR, as key.h encodes it). */
static inline int h_str_cmp(const HVal *a, const HVal *b)
{
    uint32_t m = a->n < b->n ? a->n : b->n;
    int c = m ? memcmp(a->s, b->s, m) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return (a->n > b->n) - (a->n < b->n);
}

/* SQL order, NULL first. */
static inline int h_val_cmp(const HVal *a, const HVal *b, Phys ph)
{
    if (a->null || b->null)
        return (int)b->null - (int)a->null;
    switch (ph) {
    case PHYS_I64: return (a->i > b->i) - (a->i < b->i);
    case PHYS_F64: return (a->f > b->f) - (a->f < b->f);
    default: return h_str_cmp(a, b);
    }
}

/* Helpers for reference functions (they do not know column types: unused
   fields of a value are zero, strings have s != NULL). */
static inline bool h_same(const HVal *a, const HVal *b)
{
    if (a->null || b->null)
        return a->null == b->null;
    if (a->i != b->i || a->f != b->f || !a->s != !b->s)
        return false;
    return !a->s || h_str_cmp(a, b) == 0;
}
/* SQL `a = b` is TRUE (so NULL never matches). */
static inline bool h_sql_eq(const HVal *a, const HVal *b)
{
    return !a->null && !b->null && h_same(a, b);
}
static inline bool h_str_is(const HVal *v, const char *s)
{
    return !v->null && v->s && v->n == strlen(s) && !memcmp(v->s, s, v->n);
}
/* Distinct values of columns cols[0..n) of t's rows, as rows whose v[0..n)
   are the key (in first-seen order). */
static inline void h_group_keys(const HRows *t, const int *cols, int n, HRows *keys)
{
    for (int64_t i = 0; i < t->n; i++) {
        HRow k;
        memset(&k, 0, sizeof(k));
        for (int j = 0; j < n; j++)
            k.v[j] = t->r[i].v[cols[j]];
        bool seen = false;
        for (int64_t g = 0; g < keys->n && !seen; g++) {
            bool eq = true;
            for (int j = 0; j < n && eq; j++)
                eq = h_same(&keys->r[g].v[j], &k.v[j]);
            seen = eq;
        }
        if (!seen)
            h_rows_add(keys, &k, 1);
    }
}
/* Row i of t is in group key (columns cols[0..n)). */
static inline bool h_in_group(const HRow *r, const int *cols, int n, const HRow *key)
{
    for (int j = 0; j < n; j++)
        if (!h_same(&r->v[cols[j]], &key->v[j]))
            return false;
    return true;
}

/* Phys of each column, for interpreting HRows. */
typedef struct HShape {
    int ncol;
    Phys ph[H_MAXC];
    const SqlType *types;
} HShape;

static inline int h_row_cmp(const HRow *a, const HRow *b, const HShape *sh)
{
    for (int j = 0; j < sh->ncol; j++) {
        int c = h_val_cmp(&a->v[j], &b->v[j], sh->ph[j]);
        if (c)
            return c;
    }
    return 0;
}

typedef struct HSortCtx {
    const HRows *rows;
    const HShape *sh;
} HSortCtx;

static inline int h_idx_cmp(const void *x, const void *y, void *ctx)
{
    const HSortCtx *k = ctx;
    return h_row_cmp(&k->rows->r[*(const int64_t *)x], &k->rows->r[*(const int64_t *)y], k->sh);
}

/* Sort rows and merge equal ones (multiplicities summed, zeros dropped). */
static inline void h_normalize(HRows *rs, const HShape *sh)
{
    int64_t *idx = sl_malloc(sizeof(int64_t) * (size_t)(rs->n + 1));
    for (int64_t i = 0; i < rs->n; i++)
        idx[i] = i;
    HSortCtx ctx = {rs, sh};
    qsort_r(idx, (size_t)rs->n, sizeof(int64_t), h_idx_cmp, &ctx);
    HRows out = {0};
    for (int64_t k = 0; k < rs->n; k++) {
        const HRow *r = &rs->r[idx[k]];
        if (out.n && h_row_cmp(&out.r[out.n - 1], r, sh) == 0)
            out.m[out.n - 1] += rs->m[idx[k]];
        else
            h_rows_add(&out, r, rs->m[idx[k]]);
    }
    HRows fin = {0};
    for (int64_t k = 0; k < out.n; k++)
        if (out.m[k] != 0)
            h_rows_add(&fin, &out.r[k], out.m[k]);
    h_rows_free(&out);
    h_rows_free(rs);
    sl_free(idx);
    *rs = fin;
}

static inline bool h_row_close(const HRow *a, const HRow *b, const HShape *sh, double tol)
{
    for (int j = 0; j < sh->ncol; j++) {
        const HVal *x = &a->v[j], *y = &b->v[j];
        if (sh->ph[j] == PHYS_F64 && !x->null && !y->null) {
            double s = fmax(1.0, fmax(fabs(x->f), fabs(y->f)));
            if (!(fabs(x->f - y->f) <= tol * s))
                return false;
        } else if (!h_val_eq(x, y, sh->ph[j])) {
            return false;
        }
    }
    return true;
}

static inline void h_print_row(FILE *f, const HRow *r, int64_t m, const HShape *sh)
{
    fprintf(f, "    (");
    for (int j = 0; j < sh->ncol; j++) {
        const HVal *v = &r->v[j];
        if (j)
            fprintf(f, ", ");
        if (v->null)
            fprintf(f, "NULL");
        else if (sh->ph[j] == PHYS_I64)
            fprintf(f, "%lld", (long long)v->i);
        else if (sh->ph[j] == PHYS_F64)
            fprintf(f, "%.17g", v->f);
        else
            fprintf(f, "'%.*s'", (int)v->n, v->s);
    }
    fprintf(f, ") x %lld\n", (long long)m);
}

static inline void h_print_rows(FILE *f, const char *title, const HRows *rs, const HShape *sh)
{
    fprintf(f, "  %s: %lld distinct rows\n", title, (long long)rs->n);
    for (int64_t i = 0; i < rs->n && i < 60; i++)
        h_print_row(f, &rs->r[i], rs->m[i], sh);
    if (rs->n > 60)
        fprintf(f, "    ...\n");
}

/* ---- the program under test -------------------------------------------- */

/* String domain: value k of a string column is h_strs[k]. */
static const char *const h_strs[] = {"", "a", "ab", "b", "ba", "Z\xc3\xbcrich", "x y z"};

typedef struct HColGen {
    int lo, hi;   /* values lo..hi (string columns: indexes into h_strs;
                     DOUBLE columns: lo/4..hi/4 in quarters) */
    int null_pct; /* chance of NULL, percent (nullable columns only) */
} HColGen;

typedef struct HTable {
    const char *name; /* NULL ends the list */
    int ncol;
    HColGen col[H_MAXC];
    int weight; /* relative share of the changes (0 counts as 1) */
} HTable;

/* Reference: the view over tabs[] (the spec's tables, in order, each row
   once per copy), rows appended to out with h_emit. */
typedef void (*HRefFn)(const HRows *tabs, HRows *out);

typedef struct HView {
    const char *name; /* NULL ends the list */
    HRefFn ref;
} HView;

typedef struct HSpec {
    const char *sql;
    HTable tables[H_MAXT + 1];
    HView views[H_MAXV + 1];
    int nchanges;   /* before the drains; a few hundred */
    uint64_t seed;
    bool end_empty; /* drain every table at the end */
    double tol;     /* relative tolerance for DOUBLE columns (0: 1e-9) */
} HSpec;

/* ---- PRNG (splitmix64) -------------------------------------------------- */

static inline uint64_t h_rnd(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline int64_t h_below(uint64_t *st, int64_t n) { return (int64_t)(h_rnd(st) % (uint64_t)n); }

/* ---- the change stream ----------------------------------------------------- */

typedef struct HChange {
    int table;
    int64_t w; /* +1 insert, -1 delete */
    HRow row;
} HChange;

typedef struct HChanges {
    HChange *c;
    int64_t n, cap;
} HChanges;

typedef struct HGen {
    const HSpec *spec;
    int ntables;
    const SqlType *types[H_MAXT];
    HRows tabs[H_MAXT];
    uint64_t st;
    HChanges out;
} HGen;

static inline void h_push_change(HGen *g, int t, int64_t w, const HRow *r)
{
    HChanges *cs = &g->out;
    if (cs->n == cs->cap) {
        cs->cap = cs->cap ? cs->cap * 2 : 256;
        cs->c = sl_realloc(cs->c, sizeof(HChange) * (size_t)cs->cap);
    }
    cs->c[cs->n++] = (HChange){t, w, *r};
}

static inline void h_remove_at(HRows *rs, int64_t i)
{
    rs->r[i] = rs->r[rs->n - 1];
    rs->m[i] = rs->m[rs->n - 1];
    rs->n--;
}

static inline int h_pick_table(HGen *g)
{
    int total = 0;
    for (int t = 0; t < g->ntables; t++)
        total += g->spec->tables[t].weight > 0 ? g->spec->tables[t].weight : 1;
    int64_t x = h_below(&g->st, total);
    for (int t = 0; t < g->ntables; t++) {
        x -= g->spec->tables[t].weight > 0 ? g->spec->tables[t].weight : 1;
        if (x < 0)
            return t;
    }
    return g->ntables - 1;
}

static inline void h_gen_insert(HGen *g, int t)
{
    const HTable *tb = &g->spec->tables[t];
    HRows *rs = &g->tabs[t];
    HRow r;
    memset(&r, 0, sizeof(r));
    if (rs->n && h_below(&g->st, 100) < 15) {
        r = rs->r[h_below(&g->st, rs->n)]; /* an exact duplicate */
    } else {
        for (int j = 0; j < tb->ncol; j++) {
            const HColGen *cg = &tb->col[j];
            if (cg->null_pct && h_below(&g->st, 100) < cg->null_pct) {
                r.v[j] = h_null();
                continue;
            }
            int64_t v = cg->lo + h_below(&g->st, cg->hi - cg->lo + 1);
            if (type_phys(g->types[t][j]) == PHYS_STR)
                r.v[j] = h_str(h_strs[v], (uint32_t)strlen(h_strs[v]));
            else if (type_phys(g->types[t][j]) == PHYS_F64)
                r.v[j] = h_dbl((double)v / 4); /* quarters: sums stay exact */
            else
                r.v[j] = h_int(v);
        }
    }
    h_rows_add(rs, &r, 1);
    h_push_change(g, t, 1, &r);
}

static inline void h_gen_delete_at(HGen *g, int t, int64_t i)
{
    HRow r = g->tabs[t].r[i];
    h_remove_at(&g->tabs[t], i);
    h_push_change(g, t, -1, &r);
}

/* n changes; each deletes a present row with probability pdel percent. */
static inline void h_gen_phase(HGen *g, int n, int pdel)
{
    for (int k = 0; k < n; k++) {
        int t = h_pick_table(g);
        if (g->tabs[t].n && h_below(&g->st, 100) < pdel)
            h_gen_delete_at(g, t, h_below(&g->st, g->tabs[t].n));
        else
            h_gen_insert(g, t);
    }
}

/* Delete every row of every table, in random order. */
static inline void h_gen_drain(HGen *g)
{
    for (;;) {
        int64_t total = 0;
        for (int t = 0; t < g->ntables; t++)
            total += g->tabs[t].n;
        if (!total)
            return;
        int64_t x = h_below(&g->st, total);
        for (int t = 0; t < g->ntables; t++) {
            if (x < g->tabs[t].n) {
                h_gen_delete_at(g, t, x);
                break;
            }
            x -= g->tabs[t].n;
        }
    }
}

/* ---- running a circuit ------------------------------------------------------- */

typedef struct HEnc {
    uint8_t *p;
    size_t n;
    int64_t w;
} HEnc;

typedef struct HCanon { /* a view's contents: sorted encodings, summed weights */
    HEnc *e;
    int64_t n;
} HCanon;

static inline void h_canon_free(HCanon *c)
{
    for (int64_t i = 0; i < c->n; i++)
        sl_free(c->e[i].p);
    sl_free(c->e);
    memset(c, 0, sizeof(*c));
}

static inline int h_enc_cmp(const void *x, const void *y)
{
    const HEnc *a = x, *b = y;
    size_t m = a->n < b->n ? a->n : b->n;
    int c = m ? memcmp(a->p, b->p, m) : 0;
    if (c)
        return c;
    return (a->n > b->n) - (a->n < b->n);
}

/* Sum of the sink's contents over all workers. */
typedef struct HCollect {
    HCanon *c;
    int64_t *cap;
} HCollect;

static inline void h_collect_row(void *arg, const uint8_t *k, size_t kn, int64_t w)
{
    HCollect *x = arg;
    HCanon *c = x->c;
    if (c->n == *x->cap) {
        *x->cap = *x->cap ? *x->cap * 2 : 64;
        c->e = sl_realloc(c->e, sizeof(HEnc) * (size_t)*x->cap);
    }
    uint8_t *p = sl_malloc(kn ? kn : 1);
    memcpy(p, k, kn);
    c->e[c->n++] = (HEnc){p, kn, w};
}

static inline HCanon h_collect(Runtime *rt, int sink)
{
    HCanon c = {0};
    int64_t cap = 0;
    HCollect x = {&c, &cap};
    for (int w = 0; w < rt_workers(rt); w++)
        op_sink_rows(rt_op(rt, w, sink), h_collect_row, &x);
    if (c.n)
        qsort(c.e, (size_t)c.n, sizeof(HEnc), h_enc_cmp);
    int64_t o = 0;
    for (int64_t i = 0; i < c.n; i++) {
        if (o && h_enc_cmp(&c.e[o - 1], &c.e[i]) == 0) {
            c.e[o - 1].w += c.e[i].w;
            sl_free(c.e[i].p);
        } else {
            c.e[o++] = c.e[i];
        }
    }
    c.n = o;
    o = 0;
    for (int64_t i = 0; i < c.n; i++) {
        if (c.e[i].w == 0)
            sl_free(c.e[i].p);
        else
            c.e[o++] = c.e[i];
    }
    c.n = o;
    return c;
}

/* Decode canonical contents into rows (strings point into c). */
static inline void h_decode(const HCanon *c, const HShape *sh, HRows *out)
{
    Arena *a = arena_new(4096);
    Chunk *ch = chunk_new(a, sh->ncol, sh->types, 1);
    ch->n = 1;
    for (int64_t i = 0; i < c->n; i++) {
        HRow r;
        memset(&r, 0, sizeof(r));
        key_decode(c->e[i].p, sh->types, sh->ncol, ch, 0, 0);
        for (int j = 0; j < sh->ncol; j++) {
            const Vec *v = &ch->col[j];
            if (vec_is_null(v, 0))
                r.v[j] = h_null();
            else if (v->i)
                r.v[j] = h_int(v->i[0]);
            else if (v->f)
                r.v[j] = h_dbl(v->f[0]);
            else
                r.v[j] = h_str(v->s[0].p, v->s[0].n);
        }
        h_rows_add(out, &r, c->e[i].w);
    }
    arena_free(a);
}

typedef struct HCtx {
    const HSpec *spec;
    Circuit *c;
    int ntables, nviews;
    int trel[H_MAXT];
    int vrel[H_MAXV];
    HShape vshape[H_MAXV];
    HChanges changes;
    char what[256]; /* current configuration, for messages */
    char msg[2048]; /* first failure */
} HCtx;

/* Compare view v's contents with its reference over tabs; false (with
   ctx->msg set and details on stderr) on a difference. */
static inline bool h_check_view(HCtx *x, Runtime *rt, int v, const HRows *tabs, int64_t step)
{
    const HSpec *s = x->spec;
    const Relation *rel = &x->c->rels[x->vrel[v]];
    const HShape *sh = &x->vshape[v];
    HCanon c = h_collect(rt, rel->sink);
    HRows got = {0}, want = {0};
    bool ok = true;
    h_decode(&c, sh, &got);
    for (int64_t i = 0; i < got.n; i++)
        if (got.m[i] <= 0) {
            ok = false;
            snprintf(x->msg, sizeof(x->msg),
                     "view %s, %s, after step %lld: a row has integrated weight %lld",
                     rel->name, x->what, (long long)step, (long long)got.m[i]);
            break;
        }
    s->views[v].ref(tabs, &want);
    h_normalize(&got, sh);
    h_normalize(&want, sh);
    double tol = s->tol > 0 ? s->tol : 1e-9;
    if (ok) {
        bool same = got.n == want.n;
        for (int64_t i = 0; same && i < got.n; i++)
            same = got.m[i] == want.m[i] && h_row_close(&got.r[i], &want.r[i], sh, tol);
        if (!same) {
            ok = false;
            snprintf(x->msg, sizeof(x->msg),
                     "view %s, %s, after step %lld: integrated output differs from the "
                     "reference (details on stderr)",
                     rel->name, x->what, (long long)step);
        }
    }
    if (!ok) {
        fprintf(stderr, "%s\n", x->msg);
        h_print_rows(stderr, "engine", &got, sh);
        h_print_rows(stderr, "reference", &want, sh);
    }
    h_rows_free(&got);
    h_rows_free(&want);
    h_canon_free(&c);
    return ok;
}

static inline void h_apply(HRows *tabs, const HChange *ch, const HShape *tsh)
{
    HRows *rs = &tabs[ch->table];
    if (ch->w > 0) {
        h_rows_add(rs, &ch->row, 1);
        return;
    }
    for (int64_t i = 0; i < rs->n; i++)
        if (h_row_cmp(&rs->r[i], &ch->row, &tsh[ch->table]) == 0) {
            h_remove_at(rs, i);
            return;
        }
    fail_msg("harness: deleting a row that is not present");
}

/* Fill chunk row r from an HRow. */
static inline void h_put_row(Chunk *c, int64_t r, const HRow *row, int64_t w, Arena *a)
{
    for (int j = 0; j < c->ncol; j++) {
        Vec *v = &c->col[j];
        const HVal *x = &row->v[j];
        if (v->nul)
            v->nul[r] = x->null;
        if (v->i)
            v->i[r] = x->null ? 0 : x->i;
        else if (v->f)
            v->f[r] = x->null ? 0 : x->f;
        else if (x->null)
            v->s[r] = (Str){"", 0};
        else /* string bytes owned by the step's input arena */
            v->s[r] = (Str){arena_strndup(a, x->s, x->n), x->n};
    }
    c->w[r] = w;
}

typedef struct HEnt { /* one input row for a worker and its weight */
    const HRow *r;
    int64_t w;
} HEnt;

static inline Runtime *h_restart(HCtx *x, Runtime *rt, int nw, bool *ok);

/*
 * One run: the changes cut into steps of sizes sizes[0..nsteps), on W
 * workers. With consolidate, each worker's share of a step is summed per
 * distinct row first (weights other than +-1, zero-sum rows left out).
 * Checks every view after every step when per_step, else after the last.
 * Final contents go to final[] (caller frees). Returns false with x->msg
 * set on the first failure; always frees the runtime.
 */
static inline bool h_run_one(HCtx *x, const int64_t *sizes, int64_t nsteps, int W, bool per_step,
                             bool consolidate, uint64_t seed, HCanon *final)
{
    const Circuit *c = x->c;
    Runtime *rt = h_rt_new(c, W);
    HRows tabs[H_MAXT];
    HShape tsh[H_MAXT];
    uint64_t st = seed, rst = seed ^ 0xc4ec4;
    bool ok = true;
    int64_t pos = 0;
    memset(tabs, 0, sizeof(tabs));
    for (int t = 0; t < x->ntables; t++) {
        const Relation *r = &c->rels[x->trel[t]];
        tsh[t].ncol = r->ncol;
        tsh[t].types = r->types;
        for (int j = 0; j < r->ncol; j++)
            tsh[t].ph[j] = type_phys(r->types[j]);
    }
    int64_t *who = sl_malloc(sizeof(int64_t) * (size_t)(x->changes.n + 1));
    HEnt *ents = sl_malloc(sizeof(HEnt) * (size_t)(x->changes.n + 1));
    for (int64_t s = 0; s < nsteps && ok; s++) {
        Arena *a = arena_new(1 << 12); /* fresh each step: stale pointers trip ASan */
        const HChange *ch = x->changes.c + pos;
        int64_t n = sizes[s];
        int mode = (int)((s + (int64_t)W) % 3);
        for (int64_t i = 0; i < n; i++)
            who[i] = mode == 0   ? i % W
                     : mode == 1 ? i * W / (n ? n : 1)
                                 : h_below(&st, W);
        for (int t = 0; t < x->ntables; t++) {
            const Relation *rel = &c->rels[x->trel[t]];
            for (int w = 0; w < W; w++) {
                int64_t k = 0;
                for (int64_t i = 0; i < n; i++) {
                    if (ch[i].table != t || who[i] != w)
                        continue;
                    int64_t e = k;
                    if (consolidate)
                        for (e = 0; e < k && h_row_cmp(ents[e].r, &ch[i].row, &tsh[t]); e++)
                            ;
                    if (e == k)
                        ents[k++] = (HEnt){&ch[i].row, ch[i].w};
                    else
                        ents[e].w += ch[i].w;
                }
                int64_t kept = 0;
                for (int64_t e = 0; e < k; e++)
                    if (ents[e].w != 0)
                        ents[kept++] = ents[e];
                k = kept;
                if (k == 0) {
                    if (s % 2 == 0) {
                        rt_set_input(rt, w, x->trel[t], NULL);
                    } else { /* an empty piece */
                        Piece *p = arena_zalloc(a, sizeof(Piece));
                        p->chunk = chunk_new(a, rel->ncol, rel->types, 0);
                        rt_set_input(rt, w, x->trel[t], p);
                    }
                    continue;
                }
                /* one chunk, or two pieces split at a random row */
                int64_t cut = k >= 2 && h_below(&st, 3) == 0 ? 1 + h_below(&st, k - 1) : k;
                Chunk *c1 = chunk_new(a, rel->ncol, rel->types, cut);
                Chunk *c2 = chunk_new(a, rel->ncol, rel->types, k - cut);
                for (int64_t e = 0; e < k; e++) {
                    Chunk *d = e < cut ? c1 : c2;
                    h_put_row(d, d->n, ents[e].r, ents[e].w, a);
                    d->n++;
                }
                Piece *p1 = arena_zalloc(a, sizeof(Piece));
                p1->chunk = c1;
                if (c2->n) {
                    Piece *p2 = arena_zalloc(a, sizeof(Piece));
                    p2->chunk = c2;
                    p1->next = p2;
                }
                rt_set_input(rt, w, x->trel[t], p1);
            }
        }
        Err err = {0};
        /* one step in three first runs, fails and is undone (rollback of a
           poison step), then runs again: the integral must not notice */
        rt_set_trial(rt, ((uint64_t)s * 2654435761u >> 5) % 3 == 1);
        if (rt_step(rt, &err)) {
            snprintf(x->msg, sizeof(x->msg), "%s: step %lld failed: %s", x->what, (long long)s,
                     err.msg);
            ok = false;
        }
        if (ok)
            ok = h_spill_all(x->msg, sizeof(x->msg));
        arena_free(a);
        for (int64_t i = 0; i < n; i++)
            h_apply(tabs, &ch[i], tsh);
        pos += n;
        if (ok && (per_step || s == nsteps - 1))
            for (int v = 0; v < x->nviews && ok; v++)
                ok = h_check_view(x, rt, v, tabs, s);
        /* restart from a checkpoint after about one step in five (not in
           the one-step cut, which keeps the plain path covered) */
        if (ok && nsteps > 1 && h_below(&rst, 5) == 0) {
            /* one restart in three changes the worker count (1..4) */
            int nw = h_below(&rst, 3) == 0 ? 1 + (int)h_below(&rst, 4) : W;
            rt = h_restart(x, rt, nw, &ok);
            W = nw;
            if (ok && per_step) /* the restored state shows the same contents */
                for (int v = 0; v < x->nviews && ok; v++)
                    ok = h_check_view(x, rt, v, tabs, s);
        }
    }
    if (ok)
        for (int v = 0; v < x->nviews; v++)
            final[v] = h_collect(rt, c->rels[x->vrel[v]].sink);
    sl_free(who);
    sl_free(ents);
    for (int t = 0; t < x->ntables; t++)
        h_rows_free(&tabs[t]);
    rt_free(rt);
    return ok;
}

/*
 * Simulated restart from a checkpoint: save every operator instance's
 * state, free the runtime, build a fresh one with the same workers and load
 * the state into it. Every later check then proves that save/load lost
 * nothing (the old runtime is gone, so nothing can point into it).
 */
static inline Runtime *h_restart(HCtx *x, Runtime *rt, int nw, bool *ok)
{
    const Circuit *c = x->c;
    int W = rt_workers(rt), nn = c->nnodes;
    int64_t steps = rt_steps(rt);
    BatchList *saved = sl_calloc((size_t)W * (size_t)nn, sizeof(BatchList));
    for (int w = 0; w < W; w++)
        for (int n = 0; n < nn; n++)
            if (rt_save(rt, w, n, &saved[w * nn + n]))
                *ok = false;
    rt_free(rt);
    Runtime *nr = h_rt_new(c, nw);
    rt_set_steps(nr, steps);
    Batch *const **lists = sl_calloc((size_t)W, sizeof(Batch **));
    int *counts = sl_calloc((size_t)W, sizeof(int));
    for (int w = 0; w < nw && *ok; w++)
        for (int n = 0; n < nn && *ok; n++) {
            Err err = {0};
            int rc;
            if (nw == W) {
                BatchList *l = &saved[w * nn + n];
                rc = rt_load(nr, w, n, l->b, l->n, &err);
            } else { /* another worker count: every old worker's state, re-sharded */
                for (int k = 0; k < W; k++) {
                    lists[k] = saved[k * nn + n].b;
                    counts[k] = saved[k * nn + n].n;
                }
                rc = rt_load_split(nr, w, n, lists, counts, W, &err);
            }
            if (rc) {
                snprintf(x->msg, sizeof(x->msg),
                         "%s: load of node %d, worker %d (of %d; saved on %d) failed: %s",
                         x->what, n, w, nw, W, err.msg);
                *ok = false;
            }
        }
    sl_free(lists);
    sl_free(counts);
    for (int i = 0; i < W * nn; i++)
        batchlist_free(&saved[i]);
    sl_free(saved);
    return nr;
}

static inline bool h_canon_eq(const HCanon *a, const HCanon *b)
{
    if (a->n != b->n)
        return false;
    for (int64_t i = 0; i < a->n; i++)
        if (a->e[i].w != b->e[i].w || h_enc_cmp(&a->e[i], &b->e[i]))
            return false;
    return true;
}

enum { H_CUT_ONE, H_CUT_EACH, H_CUT_RANDOM, H_CUT_LARGE, H_NCUTS };

/* The whole property for one spec and seed; fails the cmocka test on a
   difference. */
static inline void h_run_seed(const HSpec *s)
{
    static const int workers[] = {1, 2, 4};
    static const char *const cut_names[] = {"one step", "one change per step", "random steps",
                                            "random large consolidated steps"};
    HCtx *x = sl_calloc(1, sizeof(*x));
    Err err = {0};
    x->spec = s;
    if (circuit_compile(s->sql, &x->c, &err)) {
        sl_free(x);
        fail_msg("compile error at %d:%d: %s", err.line, err.col, err.msg);
    }
    const Circuit *c = x->c;
    while (x->ntables < H_MAXT && s->tables[x->ntables].name)
        x->ntables++;
    while (x->nviews < H_MAXV && s->views[x->nviews].name)
        x->nviews++;
    HGen g = {0};
    g.spec = s;
    g.ntables = x->ntables;
    g.st = s->seed;
    for (int t = 0; t < x->ntables; t++) {
        int r = circuit_find_rel(c, s->tables[t].name);
        assert_true(r >= 0);
        assert_true(c->rels[r].is_table);
        assert_int_equal(c->rels[r].ncol, s->tables[t].ncol);
        for (int j = 0; j < s->tables[t].ncol; j++)
            if (s->tables[t].col[j].null_pct)
                assert_true(c->rels[r].types[j].nullable);
        x->trel[t] = r;
        g.types[t] = c->rels[r].types;
    }
    for (int v = 0; v < x->nviews; v++) {
        int r = circuit_find_rel(c, s->views[v].name);
        assert_true(r >= 0);
        assert_true(c->rels[r].materialized);
        assert_true(c->rels[r].sink >= 0);
        assert_true(c->rels[r].ncol <= H_MAXC);
        x->vrel[v] = r;
        x->vshape[v].ncol = c->rels[r].ncol;
        x->vshape[v].types = c->rels[r].types;
        for (int j = 0; j < c->rels[r].ncol; j++)
            x->vshape[v].ph[j] = type_phys(c->rels[r].types[j]);
    }

    /* fill, thin out, drain, fill again, thin out (, drain) */
    int n = s->nchanges;
    h_gen_phase(&g, n * 30 / 100, 15);
    h_gen_phase(&g, n * 25 / 100, 75);
    h_gen_drain(&g);
    h_gen_phase(&g, n * 30 / 100, 30);
    h_gen_phase(&g, n * 15 / 100, 55);
    if (s->end_empty)
        h_gen_drain(&g);
    for (int t = 0; t < x->ntables; t++)
        h_rows_free(&g.tabs[t]);
    x->changes = g.out;
    int64_t total = x->changes.n;

    /* the cuts */
    int64_t *sizes[H_NCUTS], nsteps[H_NCUTS];
    uint64_t st = s->seed ^ 0x5eed;
    sizes[H_CUT_ONE] = sl_malloc(sizeof(int64_t));
    sizes[H_CUT_ONE][0] = total;
    nsteps[H_CUT_ONE] = 1;
    sizes[H_CUT_EACH] = sl_malloc(sizeof(int64_t) * (size_t)(total + 1));
    for (int64_t i = 0; i < total; i++)
        sizes[H_CUT_EACH][i] = 1;
    nsteps[H_CUT_EACH] = total ? total : 1;
    if (!total)
        sizes[H_CUT_EACH][0] = 0;
    sizes[H_CUT_RANDOM] = sl_malloc(sizeof(int64_t) * (size_t)(2 * total + 4));
    nsteps[H_CUT_RANDOM] = 0;
    sizes[H_CUT_RANDOM][nsteps[H_CUT_RANDOM]++] = 0; /* start with an empty step */
    for (int64_t left = total, empties = 0; left > 0;) {
        int64_t k = h_below(&st, 10) == 0 && empties < total ? 0 : 1 + h_below(&st, 30);
        empties += k == 0;
        k = k > left ? left : k;
        sizes[H_CUT_RANDOM][nsteps[H_CUT_RANDOM]++] = k;
        left -= k;
    }
    sizes[H_CUT_RANDOM][nsteps[H_CUT_RANDOM]++] = 0; /* and end with one */
    sizes[H_CUT_LARGE] = sl_malloc(sizeof(int64_t) * (size_t)(total + 1));
    nsteps[H_CUT_LARGE] = 0;
    for (int64_t left = total; left > 0;) {
        int64_t k = 1 + h_below(&st, 150);
        k = k > left ? left : k;
        sizes[H_CUT_LARGE][nsteps[H_CUT_LARGE]++] = k;
        left -= k;
    }
    if (!nsteps[H_CUT_LARGE])
        sizes[H_CUT_LARGE][nsteps[H_CUT_LARGE]++] = 0;

    HCanon first[H_MAXV], cur[H_MAXV];
    memset(first, 0, sizeof(first));
    bool have_first = false, ok = true;
    for (int k = 0; k < H_NCUTS && ok; k++)
        for (size_t wi = 0; wi < ARRAY_LEN(workers) && ok; wi++) {
            int W = workers[wi];
            memset(cur, 0, sizeof(cur));
            snprintf(x->what, sizeof(x->what), "%s (%lld steps), %d worker%s", cut_names[k],
                     (long long)nsteps[k], W, W == 1 ? "" : "s");
            ok = h_run_one(x, sizes[k], nsteps[k], W, k != H_CUT_ONE, k == H_CUT_LARGE,
                           s->seed * 31 + (uint64_t)(k * 7 + W), cur);
            if (!ok)
                break;
            if (!have_first) {
                memcpy(first, cur, sizeof(cur));
                have_first = true;
                continue;
            }
            for (int v = 0; v < x->nviews && ok; v++)
                if (!h_canon_eq(&first[v], &cur[v])) {
                    ok = false;
                    snprintf(x->msg, sizeof(x->msg),
                             "view %s: final contents with %s differ from those with one "
                             "step and 1 worker",
                             c->rels[x->vrel[v]].name, x->what);
                }
            for (int v = 0; v < x->nviews; v++)
                h_canon_free(&cur[v]);
        }
    for (int v = 0; v < x->nviews; v++)
        h_canon_free(&first[v]);
    for (int k = 0; k < H_NCUTS; k++)
        sl_free(sizes[k]);
    sl_free(x->changes.c);
    circuit_free(x->c);
    char msg[sizeof(x->msg)];
    memcpy(msg, x->msg, sizeof(msg));
    sl_free(x);
    if (!ok)
        fail_msg("seed %llu: %s", (unsigned long long)s->seed, msg);
}

/* The property with the spec's seed, and with SL_PROP_ROUNDS-1 more seeds
   when that environment variable is set (a longer soak). */
static inline void h_run(const HSpec *s)
{
    const char *e = getenv("SL_PROP_ROUNDS");
    long rounds = e ? strtol(e, NULL, 10) : 1;
    for (long r = 0; r < (rounds > 1 ? rounds : 1); r++) {
        HSpec one = *s;
        one.seed = s->seed + (uint64_t)r * 1000003u;
        h_run_seed(&one);
    }
}

#endif
