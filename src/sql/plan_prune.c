/*
 * sql/plan_prune.c - a join keeps only the columns that are read: the last
 * pass of the compiler (compile.c, once every statement is planned).
 *
 * A join keeps both inputs' integrals in its traces and encodes every
 * input row into the exchange, so a column nobody reads after the join
 * (Nexmark's `extra`, `url`, `description`: hundreds of bytes a row) still
 * costs its encoding, copies, sorting and memory for ever. When every
 * consumer of a join's output is a map (filter and projections), the
 * columns they name are the ones read; the pass puts a map in front of
 * each join input that replaces every other nullable or string column by
 * a constant (NULL, or '' when the column is NOT NULL): the join's
 * output keeps its shape, and those columns cost a byte or two. Key
 * columns stay. The maps are ordinary nodes, so checkpoints and the
 * program diff (progdiff.c: a join keeps its inputs' integrals) see the
 * narrowed streams as what the join keeps.
 *
 * Node ids stay a topological order: each new map gets the id just before
 * its join and every later id moves up.
 */
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

/* The output columns of node n that its consumers read, in need[]; false
   when a consumer is not a map (then it may read any of them). */
static bool read_cols(const Circuit *c, const CNode *n, bool *need)
{
    for (int i = n->id + 1; i < c->nnodes; i++) {
        const CNode *m = c->nodes[i];
        for (int j = 0; j < m->nin; j++) {
            if (m->in[j] != n->id)
                continue;
            if (m->k != OPK_MAP)
                return false;
            mark_cols(m->filter, need, n->ncol);
            for (int k = 0; k < m->ncol; k++)
                mark_cols(m->proj[k], need, n->ncol);
        }
    }
    for (int r = 0; r < c->nrels; r++) /* a relation's stream is read as a whole */
        if (c->rels[r].node == n->id)
            return false;
    return true;
}

/* The map in front of side `side` of join j (need: over j's output), or
   NULL when it would drop nothing. */
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

void sql__prune_joins(P *p)
{
    Circuit *c = p->c;
    int n0 = c->nnodes, added = 0;
    CNode **before = arena_zalloc(p->a, sizeof(CNode *) * (size_t)(2 * n0 + 1));
    for (int i = 0; i < n0; i++) {
        const CNode *j = c->nodes[i];
        if (j->k != OPK_JOIN)
            continue;
        bool *need = arena_zalloc(p->a, sizeof(bool) * (size_t)(j->ncol + 1));
        if (!read_cols(c, j, need))
            continue;
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
