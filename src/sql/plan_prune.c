/*
 * sql/plan_prune.c - a join keeps only the columns that are read: the last
 * pass of the compiler (compile.c, once every statement is planned).
 *
 * A join keeps both inputs' integrals in its traces and encodes every
 * input row into the exchange, so a column nobody reads after the join
 * (Nexmark's `extra`, `url`, `description`: hundreds of bytes a row) still
 * costs its encoding, copies, sorting and memory for ever. When every
 * consumer of a join's output is a map (filter and projections), the
 * columns they read are the ones needed; a map whose own consumers are
 * all maps (and which is no relation's stream) reads only the columns of
 * the outputs those read, and so on down chains of maps. The pass puts a
 * map in front of each join input that keeps only the needed columns and
 * the join keys (narrowing): the join's rows are narrower, its key
 * columns renumbered, and the maps reading its output have their column
 * numbers rewritten (an output of theirs nobody reads becomes a constant:
 * NULL, or zero / '' when NOT NULL). At least one column of each side
 * stays.
 *
 * CC_NO_NARROW (sql.h) compiles the older form instead, the circuit of
 * builds before join narrowing: the join's output keeps its shape and the
 * map replaces each unread nullable or string column by a constant (NULL,
 * or '' when NOT NULL); NOT NULL numbers stay. A storage whose checkpoints
 * hold that layout is restarted with it (cli/diff.c).
 *
 * The maps are ordinary nodes, so checkpoints and the program diff
 * (progdiff.c: a join keeps its inputs' integrals) see the narrowed
 * streams as what the join keeps.
 *
 * Node ids stay a topological order: each new map gets the id just before
 * its join and every later id moves up.
 */
#include <assert.h>
#include <string.h>

#include "../base/vec.h"
#include "sql_int.h"

/* Mark in need[0..ncol) the columns e reads. */
static void mark_cols(const Expr *e, bool *need, int ncol)
{
    if (!e)
        return;
    if (e->k == E_COL && e->col >= 0 && e->col < ncol)
        need[e->col] = true;
    for (int i = 0; i < e->na; i++)
        mark_cols(e->a[i], need, ncol);
}

/* Is node n a relation's stream (read as a whole)? */
static bool is_rel_node(const Circuit *c, int n)
{
    for (int r = 0; r < c->nrels; r++)
        if (c->rels[r].node == n)
            return true;
    return false;
}

/* Mark in need[] the columns map m reads to compute its outputs in
   out[0..m->ncol) (NULL: all of them) and its filter. */
static void map_reads(const CNode *m, const bool *out, bool *need, int ncol)
{
    mark_cols(m->filter, need, ncol);
    for (int k = 0; k < m->ncol; k++)
        if (!out || out[k])
            mark_cols(m->proj[k], need, ncol);
}

/* The output columns of node n that its consumers read, in need[]; false
   when a consumer is not a map (then it may read any of them). With deep,
   a consumer map that is no relation's stream and whose consumers are all
   maps counts only the outputs those read (recursively); its unread
   outputs to unread[m->id] (arena, when unread is not NULL). */
static bool read_cols(P *p, const CNode *n, bool *need, bool deep, bool **unread)
{
    const Circuit *c = p->c;
    for (int i = n->id + 1; i < c->nnodes; i++) {
        const CNode *m = c->nodes[i];
        for (int j = 0; j < m->nin; j++) {
            if (m->in[j] != n->id)
                continue;
            if (m->k != OPK_MAP)
                return false;
            bool *out = NULL;
            if (deep && !is_rel_node(c, m->id)) {
                out = arena_zalloc(p->a, sizeof(bool) * (size_t)(m->ncol + 1));
                if (!read_cols(p, m, out, true, NULL))
                    out = NULL;
            }
            map_reads(m, out, need, n->ncol);
            if (unread && out) {
                unread[m->id] = arena_zalloc(p->a, sizeof(bool) * (size_t)(m->ncol + 1));
                for (int k = 0; k < m->ncol; k++)
                    unread[m->id][k] = !out[k];
            }
        }
    }
    return !is_rel_node(c, n->id);
}

/* CC_NO_NARROW: the map in front of side `side` of join j (need: over
   j's output), or NULL when it would drop nothing. */
static CNode *narrowing(P *p, const CNode *j, int side, const bool *need)
{
    const CNode *src = p->c->nodes[j->in[side]];
    int off = side ? p->c->nodes[j->in[0]]->ncol : 0;
    const int *keys = side ? j->rkeys : j->lkeys;
    bool *keep = arena_zalloc(p->a, sizeof(bool) * (size_t)(src->ncol + 1));
    int dropped = 0;
    for (int k = 0; k < j->nkeys; k++)
        keep[keys[k]] = true;
    for (int i = 0; i < src->ncol; i++) {
        keep[i] = keep[i] || need[off + i] ||
                  (!src->types[i].nullable && type_phys(src->types[i]) != PHYS_STR);
        dropped += !keep[i];
    }
    if (!dropped)
        return NULL;
    CNode *m = arena_zalloc(p->a, sizeof(*m));
    m->k = OPK_MAP;
    m->nin = 1;
    m->in = arena_zalloc(p->a, sizeof(int));
    m->in[0] = src->id;
    m->ncol = src->ncol;
    m->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)(src->ncol + 1));
    memcpy(m->types, src->types, sizeof(SqlType) * (size_t)src->ncol);
    m->proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(src->ncol + 1));
    for (int i = 0; i < src->ncol; i++) {
        SqlType t = src->types[i];
        m->proj[i] = keep[i]      ? expr_col(p->a, i, t)
                     : t.nullable ? expr_const_null(p->a, t)
                                  : expr_const_str(p->a, t, "", 0);
    }
    m->rel = -1;
    m->owner = j->owner;
    return m;
}

/* A constant of type t for an output nobody reads. */
static Expr *unread_const(P *p, SqlType t)
{
    if (t.nullable)
        return expr_const_null(p->a, t);
    switch (type_phys(t)) {
    case PHYS_I64: return expr_const_i64(p->a, t, 0);
    case PHYS_F64: return expr_const_f64(p->a, t, 0);
    case PHYS_I128: return expr_const_dec(p->a, t, 0);
    case PHYS_STR: break;
    }
    return expr_const_str(p->a, t, "", 0);
}

/* A copy of e with column i read as column to[i] (>= 0 for every column
   e reads). */
static Expr *remap(P *p, const Expr *e, const int *to)
{
    if (!e)
        return NULL;
    Expr *x = arena_alloc(p->a, sizeof(*x));
    *x = *e;
    if (e->k == E_COL) {
        assert(to[e->col] >= 0);
        x->col = to[e->col];
    }
    if (e->na) {
        x->a = arena_alloc(p->a, sizeof(Expr *) * (size_t)e->na);
        for (int i = 0; i < e->na; i++)
            x->a[i] = remap(p, e->a[i], to);
    }
    return x;
}

/* Narrow join j to the columns in need[] (over its output) and its keys:
   the maps for its inputs to maps[0..1] (NULL for a side that keeps every
   column), its keys and output renumbered, the maps reading its output
   rewritten (unread[m]: their outputs nobody reads). The maps' count. */
static int narrow_join(P *p, CNode *j, const bool *need, CNode **maps, bool *const *unread)
{
    Circuit *c = p->c;
    int nl = c->nodes[j->in[0]]->ncol, nout = j->ncol;
    int *to = arena_alloc(p->a, sizeof(int) * (size_t)(nout + 1));
    int kept = 0, added = 0;
    for (int side = 0; side < 2; side++) {
        const CNode *src = c->nodes[j->in[side]];
        int off = side ? nl : 0, first = kept;
        int *keys = side ? j->rkeys : j->lkeys;
        bool *keep = arena_zalloc(p->a, sizeof(bool) * (size_t)(src->ncol + 1));
        for (int k = 0; k < j->nkeys; k++)
            keep[keys[k]] = true;
        int nk = 0;
        for (int i = 0; i < src->ncol; i++)
            nk += keep[i] = keep[i] || need[off + i];
        if (!nk && src->ncol) /* a side of a cross join nobody reads: its rows count */
            nk = keep[0] = true;
        for (int i = 0; i < src->ncol; i++)
            to[off + i] = keep[i] ? kept++ : -1;
        for (int k = 0; k < j->nkeys; k++)
            keys[k] = to[off + keys[k]] - first;
        maps[side] = NULL;
        if (nk == src->ncol)
            continue;
        CNode *m = arena_zalloc(p->a, sizeof(*m));
        m->k = OPK_MAP;
        m->nin = 1;
        m->in = arena_zalloc(p->a, sizeof(int));
        m->in[0] = src->id;
        m->ncol = nk;
        m->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)(nk + 1));
        m->proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nk + 1));
        for (int i = 0, o = 0; i < src->ncol; i++)
            if (keep[i]) {
                m->types[o] = src->types[i];
                m->proj[o++] = expr_col(p->a, i, src->types[i]);
            }
        m->rel = -1;
        m->owner = j->owner;
        maps[side] = m;
        added++;
    }
    if (!added)
        return 0;
    SqlType *types = arena_alloc(p->a, sizeof(SqlType) * (size_t)(kept + 1));
    for (int i = 0; i < nout; i++)
        if (to[i] >= 0)
            types[to[i]] = j->types[i];
    j->types = types;
    j->ncol = kept;
    for (int i = j->id + 1; i < c->nnodes; i++) {
        CNode *m = c->nodes[i];
        if (m->nin != 1 || m->in[0] != j->id)
            continue;
        assert(m->k == OPK_MAP);
        m->filter = remap(p, m->filter, to);
        for (int k = 0; k < m->ncol; k++)
            m->proj[k] = unread[m->id] && unread[m->id][k] ? unread_const(p, m->proj[k]->t)
                                                           : remap(p, m->proj[k], to);
    }
    return added;
}

void sql__prune_joins(P *p)
{
    Circuit *c = p->c;
    int n0 = c->nnodes, added = 0;
    CNode **before = arena_zalloc(p->a, sizeof(CNode *) * (size_t)(2 * n0 + 1));
    bool narrow = !(p->flags & CC_NO_NARROW);
    bool **unread = arena_zalloc(p->a, sizeof(bool *) * (size_t)(n0 + 1));
    for (int i = 0; i < n0; i++) {
        const CNode *j = c->nodes[i];
        if (j->k != OPK_JOIN)
            continue;
        bool *need = arena_zalloc(p->a, sizeof(bool) * (size_t)(j->ncol + 1));
        if (!read_cols(p, j, need, narrow, unread))
            continue;
        if (narrow) {
            added += narrow_join(p, c->nodes[i], need, &before[2 * i], unread);
            continue;
        }
        for (int side = 0; side < 2; side++) {
            before[2 * i + side] = narrowing(p, j, side, need);
            added += before[2 * i + side] != NULL;
        }
    }
    if (!added)
        return;
    /* renumber: the new maps just before their join */
    int *moved = arena_alloc(p->a, sizeof(int) * (size_t)(n0 + 1));
    CNode **nodes = arena_alloc(p->a, sizeof(CNode *) * (size_t)(n0 + added + 1));
    int n = 0;
    for (int i = 0; i < n0; i++) {
        for (int side = 0; side < 2; side++)
            if (before[2 * i + side])
                nodes[n++] = before[2 * i + side];
        moved[i] = n;
        nodes[n++] = c->nodes[i];
    }
    for (int i = 0; i < n0; i++) {
        CNode *x = c->nodes[i];
        for (int k = 0; k < x->nin; k++)
            x->in[k] = moved[x->in[k]];
        if (x->k == OPK_TEMPORAL)
            x->tclock = moved[x->tclock];
        for (int side = 0; side < 2; side++) {
            CNode *m = before[2 * i + side];
            if (m)
                m->in[0] = moved[m->in[0]];
        }
    }
    for (int i = 0; i < n; i++)
        nodes[i]->id = i;
    for (int i = 0; i < n0; i++) /* a join reads its maps */
        for (int side = 0; side < 2; side++)
            if (before[2 * i + side])
                c->nodes[i]->in[side] = before[2 * i + side]->id;
    for (int r = 0; r < c->nrels; r++) {
        Relation *rel = &c->rels[r];
        rel->node = rel->node >= 0 ? moved[rel->node] : rel->node;
        rel->sink = rel->sink >= 0 ? moved[rel->sink] : rel->sink;
    }
    c->nodes = nodes;
    c->nnodes = n;
    p->cap_nodes = n;
}
