/*
 * circuit/op_linear.c - stateless operators. Linear, so each is applied to
 * the changes directly: source (this worker's share of a table's input),
 * map (filter then project, over a selection vector: survivors are not
 * copied before projection), union (concatenation), negate and unnest (a
 * row per array element).
 */
#include "op.h"

#include <stdlib.h>

#include "../base/hash.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "../expr/array.h"

/* Sources are fed by the worker a morsel at a time (runtime/worker.c);
   evaluated on their own they have nothing to give. */
static int eval_source(Op *op, OpEnv *env, Chunk **in)
{
    op->out = op_empty(env->arena, op->node);
    return 0;
}

/* The constant row: on worker 0 in the first step, with weight 1. */
static int eval_const(Op *op, OpEnv *env, Chunk **in)
{
    Chunk *c = chunk_new(env->arena, 0, NULL, 1);
    if (env->step == 0 && env->worker == 0) {
        c->w[0] = 1;
        c->n = 1;
    }
    op->out = c;
    return 0;
}

/*
 * Common subexpressions of a map. A subexpression that the filter (or, in
 * a map without one, a projection) evaluates over all of its input rows
 * (not inside a later AND/OR operand, a CASE branch or a later COALESCE
 * operand) and that occurs again, in the filter or in a projection, is
 * evaluated once per row, first, as an extra column of the input; every
 * occurrence reads that column (Nexmark q21's LOWER(channel), in four
 * WHENs of one CASE). It runs over exactly the rows it ran over before, so
 * values are as without sharing, and a division by zero in it counts once
 * a row. The CNode keeps the expressions as written (EXPLAIN, lineage);
 * the map's state holds the rewritten ones.
 */
#define SHARED_MAX 16

typedef struct MapSt {
    Arena *a;      /* the rewritten expressions */
    int ncol_in;   /* input columns: shared[i] becomes column ncol_in + i */
    Expr *shared[SHARED_MAX];
    int nshared;
    Expr *filter;
    Expr **proj;
} MapSt;

/* The subexpressions of e evaluated over all rows e is, parents first. */
static void collect_uncond(Expr *e, Expr ***v, int *n, int *cap)
{
    if (!e)
        return;
    *VEC_PUSH(*v, *n, *cap) = e;
    bool first_only = e->k == E_AND || e->k == E_OR || e->k == E_CASE || e->k == E_COALESCE;
    for (int i = 0; i < (first_only && e->na ? 1 : e->na); i++)
        collect_uncond(e->a[i], v, n, cap);
}

/*
 * Every occurrence of a subexpression of the map, with a hash of its shape
 * that expressions equal by expr_same share. Occurrences are counted by
 * looking up the hash and confirming with expr_same, so the search costs
 * about the size of the expressions, not its cube (a + a + ... + a of
 * thousands of terms sent to /query compared every chain with every other).
 */
typedef struct Occ {
    uint64_t h;
    const Expr *e;
} Occ;

typedef struct Occs {
    Occ *v; /* in the order visited, then sorted by hash */
    int n, cap;
    Occ *byptr; /* the same, sorted by address */
} Occs;

static uint64_t shape_hash(const Expr *e, Occs *o)
{
    if (!e)
        return 0x9e3779b97f4a7c15ULL;
    uint64_t buf[8 + 2];
    int k = 0;
    buf[k++] = (uint64_t)e->k | (uint64_t)(uint32_t)e->na << 32;
    buf[k++] = (uint64_t)(uint32_t)e->col | (uint64_t)(uint32_t)e->fn << 32;
    buf[k++] = sl_hash(&e->t, sizeof(e->t));
    if (e->k == E_CONST) {
        buf[k++] = e->cnull;
        if (!e->cnull)
            switch (type_phys(e->t)) {
            case PHYS_I64:
                buf[k++] = (uint64_t)e->ci;
                break;
            case PHYS_I128:
                buf[k++] = sl_hash(&e->cx, sizeof(e->cx));
                break;
            case PHYS_F64:
                buf[k++] = sl_hash(&e->cf, sizeof(e->cf));
                break;
            case PHYS_STR:
                buf[k++] = sl_hash(e->cs.p, e->cs.n);
                break;
            }
    }
    uint64_t h = sl_hash(buf, sizeof(uint64_t) * (size_t)k);
    for (int i = 0; i < e->na; i++) {
        uint64_t c[2] = {h, shape_hash(e->a[i], o)};
        h = sl_hash(c, sizeof(c));
    }
    *VEC_PUSH(o->v, o->n, o->cap) = (Occ){h, e};
    return h;
}

static int occ_by_hash(const void *a, const void *b)
{
    const Occ *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h;
}

static int occ_by_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const Occ *)a)->e, y = (uintptr_t)((const Occ *)b)->e;
    return x < y ? -1 : x > y;
}

/* The first of the n occurrences (sorted by cmp) matching key, or NULL. */
static const Occ *occ_find(const Occ *v, int n, const Occ *key, int (*cmp)(const void *, const void *))
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cmp(&v[mid], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && cmp(&v[lo], key) == 0 ? &v[lo] : NULL;
}

static uint64_t hash_of(const Occs *o, const Expr *e)
{
    const Occ *x = occ_find(o->byptr, o->n, &(Occ){0, e}, occ_by_ptr);
    return x ? x->h : 0;
}

/* Occurrences of c among the n sorted by hash in v (c's hash h). */
static int count_same(const Occ *v, int n, uint64_t h, const Expr *c)
{
    const Occ *x = occ_find(v, n, &(Occ){h, NULL}, occ_by_hash);
    int k = 0;
    for (; x && x < v + n && x->h == h; x++)
        k += expr_same(x->e, c);
    return k;
}

/* e with every occurrence of a shared expression (hashes sh) replaced by
   its column; unchanged subtrees are e's own. */
static Expr *share(const MapSt *m, const Occs *o, const uint64_t *sh, Expr *e)
{
    if (!e)
        return NULL;
    uint64_t h = hash_of(o, e);
    for (int i = 0; i < m->nshared; i++)
        if (sh[i] == h && expr_same(e, m->shared[i]))
            return expr_col(m->a, m->ncol_in + i, e->t);
    Expr *c = e;
    for (int i = 0; i < e->na; i++) {
        Expr *x = share(m, o, sh, e->a[i]);
        if (x != e->a[i] && c == e) {
            c = arena_alloc(m->a, sizeof(*c));
            *c = *e;
            c->a = arena_alloc(m->a, sizeof(Expr *) * (size_t)e->na);
            memcpy(c->a, e->a, sizeof(Expr *) * (size_t)e->na);
        }
        c->a[i] = x;
    }
    return c;
}

static void free_map(Op *op)
{
    MapSt *m = op->st;
    if (m)
        arena_free(m->a);
    sl_free(m);
}

/* The map's shared subexpressions (none: no state). */
static void map_share(Op *op)
{
    const CNode *n = op->node;
    Expr **cand = NULL;
    int ncand = 0, capcand = 0;
    if (n->filter)
        collect_uncond(n->filter, &cand, &ncand, &capcand);
    else /* (after a filter, the projections see only the rows it kept) */
        for (int j = 0; j < n->ncol; j++)
            collect_uncond(n->proj[j], &cand, &ncand, &capcand);
    Occs o = {0};
    shape_hash(n->filter, &o);
    for (int j = 0; j < n->ncol; j++)
        shape_hash(n->proj[j], &o);
    o.byptr = sl_malloc(sizeof(Occ) * (size_t)(o.n ? o.n : 1));
    if (o.n) {
        memcpy(o.byptr, o.v, sizeof(Occ) * (size_t)o.n);
        qsort(o.byptr, (size_t)o.n, sizeof(Occ), occ_by_ptr);
        qsort(o.v, (size_t)o.n, sizeof(Occ), occ_by_hash);
    }
    /* the subexpressions of those shared so far (sorted by hash) */
    Occ *inside = NULL;
    int ninside = 0, capinside = 0;
    MapSt *m = NULL;
    uint64_t sh[SHARED_MAX];
    for (int i = 0; i < ncand; i++) {
        Expr *c = cand[i];
        if (c->k == E_COL || c->k == E_CONST || (m && m->nshared == SHARED_MAX))
            continue;
        uint64_t h = hash_of(&o, c);
        if (count_same(inside, ninside, h, c) > 0) /* in (or equal to) one already shared */
            continue;
        if (count_same(o.v, o.n, h, c) < 2)
            continue;
        if (!m) {
            m = sl_calloc(1, sizeof(*m));
            m->a = arena_new(4096);
            m->ncol_in = op->circuit->nodes[n->in[0]]->ncol;
        }
        sh[m->nshared] = h;
        m->shared[m->nshared++] = c;
        Occs sub = {0};
        shape_hash(c, &sub);
        for (int j = 0; j < sub.n; j++)
            *VEC_PUSH(inside, ninside, capinside) = sub.v[j];
        sl_free(sub.v);
        qsort(inside, (size_t)ninside, sizeof(Occ), occ_by_hash);
    }
    sl_free(cand);
    sl_free(inside);
    if (m) {
        m->filter = share(m, &o, sh, n->filter);
        m->proj = arena_alloc(m->a, sizeof(Expr *) * (size_t)(n->ncol ? n->ncol : 1));
        for (int j = 0; j < n->ncol; j++)
            m->proj[j] = share(m, &o, sh, n->proj[j]);
    }
    sl_free(o.v);
    sl_free(o.byptr);
    if (!m)
        return;
    op->st = m;
    op->free = free_map;
}

static int eval_map(Op *op, OpEnv *env, Chunk **in)
{
    const CNode *n = op->node;
    const MapSt *ms = op->st;
    Chunk *src = in[0];
    const Expr *filter = n->filter;
    Expr *const *proj = n->proj;
    if (ms && src->n) {
        /* the input with the shared subexpressions as extra columns */
        Chunk *x = arena_alloc(env->arena, sizeof(*x));
        *x = *src;
        x->ncol = src->ncol + ms->nshared;
        x->col = arena_alloc(env->arena, sizeof(Vec) * (size_t)x->ncol);
        memcpy(x->col, src->col, sizeof(Vec) * (size_t)src->ncol);
        for (int i = 0; i < ms->nshared; i++)
            if (expr_eval(ms->shared[i], src, NULL, src->n, env->ev, &x->col[src->ncol + i]))
                return SL_ERUNTIME;
        src = x;
        filter = ms->filter;
        proj = ms->proj;
    }
    int32_t *sel = NULL;
    int64_t m = src->n;
    if (filter && src->n) {
        sel = arena_alloc(env->arena, sizeof(int32_t) * (size_t)src->n);
        if (expr_filter(filter, src, NULL, src->n, env->ev, sel, &m))
            return SL_ERUNTIME;
    }
    Chunk *out = arena_alloc(env->arena, sizeof(*out));
    out->ncol = n->ncol;
    out->n = out->cap = m;
    out->col = arena_alloc(env->arena, sizeof(Vec) * (size_t)(n->ncol ? n->ncol : 1));
    for (int j = 0; j < n->ncol; j++) {
        if (m == 0) {
            vec_init(&out->col[j], env->arena, n->types[j], 0);
            continue;
        }
        if (expr_eval(proj[j], src, sel, m, env->ev, &out->col[j]))
            return SL_ERUNTIME;
        out->col[j].t = n->types[j];
        if (n->types[j].nullable && !out->col[j].nul)
            out->col[j].nul = arena_zalloc(env->arena, (size_t)m);
        else if (!n->types[j].nullable)
            out->col[j].nul = NULL;
    }
    if (sel) {
        out->w = arena_alloc(env->arena, sizeof(int64_t) * (size_t)(m ? m : 1));
        for (int64_t i = 0; i < m; i++)
            out->w[i] = src->w[sel[i]];
    } else {
        out->w = src->w;
    }
    op->out = out;
    return 0;
}

static int eval_union(Op *op, OpEnv *env, Chunk **in)
{
    const CNode *n = op->node;
    int64_t total = 0;
    for (int i = 0; i < n->nin; i++)
        total += in[i]->n;
    Chunk *out = chunk_new(env->arena, n->ncol, n->types, total);
    for (int i = 0; i < n->nin; i++) {
        Chunk *s = in[i];
        size_t k = (size_t)out->n, m = (size_t)s->n;
        for (int j = 0; j < n->ncol; j++) {
            Vec *d = &out->col[j], *v = &s->col[j];
            if (d->i)
                memcpy(d->i + k, v->i, m * sizeof(int64_t));
            else if (d->f)
                memcpy(d->f + k, v->f, m * sizeof(double));
            else if (d->x)
                memcpy(d->x + k, v->x, m * sizeof(i128));
            else
                memcpy(d->s + k, v->s, m * sizeof(Str));
            if (d->nul) {
                if (v->nul)
                    memcpy(d->nul + k, v->nul, m);
                else
                    memset(d->nul + k, 0, m);
            }
        }
        memcpy(out->w + k, s->w, m * sizeof(int64_t));
        out->n += s->n;
    }
    op->out = out;
    return 0;
}

static int eval_negate(Op *op, OpEnv *env, Chunk **in)
{
    Chunk *s = in[0];
    Chunk *out = arena_alloc(env->arena, sizeof(*out));
    *out = *s;
    out->w = arena_alloc(env->arena, sizeof(int64_t) * (size_t)(s->n ? s->n : 1));
    for (int64_t i = 0; i < s->n; i++)
        out->w[i] = -s->w[i];
    op->out = out;
    return 0;
}

/* Rows of an input row's arrays zipped: the longest array's length, the
   shorter ones padded with NULL (PostgreSQL's UNNEST(a, b)). */
static void copy_row(Chunk *out, int64_t o, const Chunk *s, int64_t r)
{
    for (int j = 0; j < s->ncol; j++) {
        Vec *d = &out->col[j];
        const Vec *v = &s->col[j];
        if (d->i)
            d->i[o] = v->i[r];
        else if (d->x)
            d->x[o] = v->x[r];
        else if (d->f)
            d->f[o] = v->f[r];
        else
            d->s[o] = v->s[r];
        if (d->nul)
            d->nul[o] = v->nul ? v->nul[r] : 0;
    }
}

static void set_null(Vec *d, int64_t o);
static int64_t unnest_rows(const CNode *n, const Chunk *s, int64_t r);

/* UNNEST(a1, ..., ak): arrays at unnest_col.., elements at nin.. (the
   element types nullable: the padding), the position after them. Also
   one array when unnest_outer (a row of NULLs for NULL or {}). */
static int eval_unnest_zip(Op *op, OpEnv *env, const Chunk *s, int na)
{
    const CNode *n = op->node;
    int nin = s->ncol;
    int64_t total = 0;
    for (int64_t r = 0; r < s->n; r++)
        total += SL_MAX(unnest_rows(n, s, r), n->unnest_outer);
    Chunk *out = chunk_new(env->arena, n->ncol, n->types, total ? total : 1);
    ArrIt *it = sl_calloc((size_t)na, sizeof(ArrIt));
    bool *live = sl_calloc((size_t)na, sizeof(bool));
    int64_t *len = sl_calloc((size_t)na, sizeof(int64_t));
    for (int64_t r = 0; r < s->n; r++) {
        int64_t m = unnest_rows(n, s, r);
        bool pad = !m && n->unnest_outer; /* one row of NULLs */
        if (pad)
            m = 1;
        if (!m)
            continue;
        for (int j = 0; j < na; j++) {
            const Vec *av = &s->col[n->unnest_col + j];
            live[j] = !vec_is_null(av, r) && av->s[r].n;
            len[j] = live[j] ? arr_len(av->t, av->s[r]) : 0;
            if (live[j])
                arr_it(&it[j], av->t, av->s[r]);
        }
        for (int64_t at = 0; at < m; at++) {
            int64_t o = out->n;
            copy_row(out, o, s, r);
            for (int j = 0; j < na; j++) {
                ArrElem e;
                if (at < len[j] && arr_next(&it[j], &e))
                    arr_get_vec(&out->col[nin + j], o, &e, env->arena);
                else
                    set_null(&out->col[nin + j], o);
            }
            if (n->ordinality && pad)
                set_null(&out->col[nin + na], o);
            else if (n->ordinality)
                out->col[nin + na].i[o] = at + 1;
            out->w[o] = s->w[r];
            out->n = o + 1;
        }
        for (int j = 0; j < na; j++)
            if (live[j])
                arr_it_done(&it[j]);
    }
    sl_free(it);
    sl_free(live);
    sl_free(len);
    op->out = out;
    return 0;
}

static int64_t unnest_rows(const CNode *n, const Chunk *s, int64_t r)
{
    int64_t m = 0;
    for (int j = 0; j < SL_MAX(n->unnest_n, 1); j++) {
        const Vec *av = &s->col[n->unnest_col + j];
        if (!vec_is_null(av, r) && av->s[r].n)
            m = SL_MAX(m, arr_len(av->t, av->s[r]));
    }
    return m;
}

static void set_null(Vec *d, int64_t o)
{
    static const Str empty = {"", 0};
    if (d->i)
        d->i[o] = 0;
    else if (d->x)
        d->x[o] = 0;
    else if (d->f)
        d->f[o] = 0;
    else
        d->s[o] = empty;
    d->nul[o] = 1;
}

/* LEFT JOIN UNNEST(...) ON cond (filter: cond over the output row): the
   rows of the inner UNNEST for which cond is TRUE; an input row none of
   whose rows is kept gives one row of NULL elements (and position). */
static int eval_unnest_on(Op *op, OpEnv *env, const Chunk *s, int na)
{
    const CNode *n = op->node;
    CNode inner = *n;
    inner.unnest_outer = false;
    Op iop = *op;
    iop.node = &inner;
    if (eval_unnest_zip(&iop, env, s, na))
        return SL_ERUNTIME;
    const Chunk *all = iop.out;
    /* the input row of each row of `all`: rows come per input row, in order */
    int64_t *src = arena_alloc(env->arena, sizeof(int64_t) * (size_t)(all->n + 1));
    for (int64_t r = 0, o = 0; r < s->n; r++)
        for (int64_t k = unnest_rows(&inner, s, r); k > 0; k--)
            src[o++] = r;
    int32_t *sel = arena_alloc(env->arena, sizeof(int32_t) * (size_t)(all->n + 1));
    int64_t m = 0;
    if (all->n && expr_filter(n->filter, all, NULL, all->n, env->ev, sel, &m))
        return SL_ERUNTIME;
    bool *kept = arena_zalloc(env->arena, (size_t)(s->n + 1));
    for (int64_t i = 0; i < m; i++)
        kept[src[sel[i]]] = true;
    int64_t total = m;
    for (int64_t r = 0; r < s->n; r++)
        total += !kept[r];
    Chunk *out = chunk_new(env->arena, n->ncol, n->types, total ? total : 1);
    int nin = s->ncol;
    for (int64_t r = 0, i = 0; r < s->n; r++) {
        if (!kept[r]) {
            int64_t o = out->n;
            copy_row(out, o, s, r);
            for (int j = nin; j < n->ncol; j++)
                set_null(&out->col[j], o);
            out->w[o] = s->w[r];
            out->n = o + 1;
            continue;
        }
        for (; i < m && src[sel[i]] == r; i++) {
            int64_t o = out->n;
            copy_row(out, o, all, sel[i]);
            out->w[o] = all->w[sel[i]];
            out->n = o + 1;
        }
    }
    op->out = out;
    return 0;
}

/* One row per element of the ARRAY column unnest_col of each input row;
   with unnest_n > 1 arrays, one row per position of the longest. */
static int eval_unnest(Op *op, OpEnv *env, Chunk **in)
{
    const CNode *n = op->node;
    const Chunk *s = in[0];
    int na = SL_MAX(n->unnest_n, 1);
    if (n->filter)
        return eval_unnest_on(op, env, s, na);
    if (na > 1 || n->unnest_outer)
        return eval_unnest_zip(op, env, s, na);
    const Vec *av = &s->col[n->unnest_col];
    int nin = s->ncol;
    int64_t total = 0;
    for (int64_t r = 0; r < s->n; r++)
        if (!vec_is_null(av, r))
            total += arr_len(av->t, av->s[r]);
    Chunk *out = chunk_new(env->arena, n->ncol, n->types, total ? total : 1);
    for (int64_t r = 0; r < s->n; r++) {
        if (vec_is_null(av, r) || !av->s[r].n)
            continue;
        ArrIt it;
        ArrElem e;
        int64_t at = 0;
        arr_it(&it, av->t, av->s[r]);
        while (arr_next(&it, &e)) {
            int64_t o = out->n;
            copy_row(out, o, s, r); /* the input columns */
            arr_get_vec(&out->col[nin], o, &e, env->arena);
            if (n->ordinality)
                out->col[nin + 1].i[o] = ++at;
            out->w[o] = s->w[r];
            out->n = o + 1;
        }
        arr_it_done(&it);
    }
    op->out = out;
    return 0;
}

int op_linear_init(Op *op)
{
    switch (op->node->k) {
    case OPK_SOURCE: op->eval = eval_source; break;
    case OPK_CONST: op->eval = eval_const; break;
    case OPK_MAP:
        op->eval = eval_map;
        map_share(op);
        break;
    case OPK_UNION: op->eval = eval_union; break;
    case OPK_UNNEST: op->eval = eval_unnest; break;
    default: op->eval = eval_negate; break;
    }
    return 0;
}
