/*
 * sql/plan_gsets.c - GROUP BY GROUPING SETS / ROLLUP / CUBE (expanded into
 * sets by parse_gsets.c) and GROUPING(...).
 *
 * Plan: one aggregation per grouping set, summed (UNION ALL). Over the map
 * of [group keys..., aggregate arguments...] that plan.c builds, set S gets
 *   MAP [S's keys, the arguments] -> OPK_AGG (group by S's keys; global
 *   when S is empty) -> MAP [every key: its column when in S, else NULL;
 *   every call: its aggregate's column, or GROUPING's constant for S]
 * and the sets' outputs are added up, laid out as plan.c's single
 * aggregate would be ([keys..., calls...], keys nullable), so HAVING, the
 * select list and ORDER BY bind over it unchanged (AggCtx.gtypes).
 *
 * Incremental by construction: every part is an existing operator (maps
 * and sums are linear, each aggregate keeps its own state), so inserts,
 * updates and deletes reach each set's groups as they reach a plain
 * GROUP BY's; the empty set is a global aggregate, one row even over no
 * input, as in PostgreSQL. Cost: one aggregate's state per set (CUBE of n
 * keys: 2^n aggregates; parse_gsets.c bounds the sets at 4096).
 *
 * GROUPING(k1, ..., kn) of set S: bit n-1-i set when ki is not in S
 * (PostgreSQL's order: the first argument is the most significant bit).
 */
#include <string.h>

#include "ast.h"
#include "sql_int.h"

int *sql__gsets_keys(P *p, AggCtx *ag)
{
    int *keyof = arena_alloc(p->a, sizeof(int) * (size_t)(ag->ngroup + 1));
    int n = 0;
    for (int i = 0; i < ag->ngroup; i++) {
        int k = 0;
        while (k < n && !sql__expr_equal(ag->group[k], ag->group[i]))
            k++;
        if (k == n)
            ag->group[n++] = ag->group[i];
        keyof[i] = k;
    }
    ag->ngroup = n;
    SqlType *gt = arena_alloc(p->a, sizeof(SqlType) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        gt[i] = ag->group[i]->t;
        gt[i].nullable = 1;
    }
    ag->gtypes = gt;
    return keyof;
}

/* One grouping set (in[k]: key k in it) planned over node in. */
static int plan_set(P *p, const AggCtx *ag, const AggSpec *specs, int in, const bool *inset)
{
    const CNode *src = p->c->nodes[in];
    int W = src->ncol, ng = ag->ngroup, m = 0, na = 0;
    int *pos = arena_alloc(p->a, sizeof(int) * (size_t)(ng + 1));
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(W + 1));
    for (int k = 0; k < ng; k++)
        if (inset[k]) {
            pos[k] = m;
            proj[m++] = expr_col(p->a, k, src->types[k]);
        } else {
            pos[k] = -1;
        }
    for (int c = ng; c < W; c++)
        proj[m + c - ng] = expr_col(p->a, c, src->types[c]);
    int node = sql__add_map(p, in, NULL, proj, m + W - ng);
    /* the aggregate over S's keys */
    AggSpec *sp = arena_alloc(p->a, sizeof(AggSpec) * (size_t)(ag->ncalls + 1));
    bool linear = true;
    for (int i = 0; i < ag->ncalls; i++) {
        if (ag->calls[i].grouping)
            continue;
        AggSpec *a = &sp[na++];
        *a = specs[i];
        a->col = specs[i].col - ng + m;
        if (a->nord) {
            a->ord = arena_alloc(p->a, sizeof(int) * (size_t)a->nord);
            for (int k = 0; k < a->nord; k++)
                a->ord[k] = specs[i].ord[k] - ng + m;
        }
        if (a->kind >= AGG_MIN || a->distinct)
            linear = false;
    }
    CNode *an = sql__add_node(p, OPK_AGG, 1, m + na);
    an->in[0] = node;
    an->ngroup = m;
    an->aggs = sp;
    an->naggs = na;
    an->linear = linear;
    an->global = m == 0;
    for (int k = 0; k < m; k++)
        an->types[k] = p->c->nodes[node]->types[k];
    for (int j = 0; j < na; j++)
        an->types[m + j] = sp[j].out_t;
    /* the common layout */
    Expr **out = arena_alloc(p->a, sizeof(Expr *) * (size_t)(ng + ag->ncalls + 1));
    for (int k = 0; k < ng; k++) {
        SqlType t = ag->gtypes ? ag->gtypes[k] : ag->group[k]->t; /* plain GROUP BY */
        out[k] = pos[k] >= 0 ? expr_col(p->a, pos[k], t) : expr_const_null(p->a, t);
    }
    for (int i = 0, j = 0; i < ag->ncalls; i++) {
        const AggCall *c = &ag->calls[i];
        if (c->grouping) {
            int64_t mask = 0;
            for (int a = 0; a < c->ngk; a++)
                if (!inset[c->gk[a]])
                    mask |= (int64_t)1 << (c->ngk - 1 - a);
            out[ng + i] = expr_const_i64(p->a, c->spec.out_t, mask);
        } else {
            out[ng + i] = expr_col(p->a, m + j, sp[j].out_t);
            j++;
        }
    }
    return sql__add_map(p, an->id, NULL, out, ng + ag->ncalls);
}

int sql__plan_gsets(P *p, const Select *q, const AggCtx *ag, const int *keyof,
                    const AggSpec *specs, int in)
{
    int ns = q->ngsets ? q->ngsets : 1, ng = ag->ngroup;
    int *nodes = arena_alloc(p->a, sizeof(int) * (size_t)ns);
    bool *inset = arena_alloc(p->a, sizeof(bool) * (size_t)(ng + 1));
    for (int s = 0; s < ns; s++) {
        memset(inset, 0, sizeof(bool) * (size_t)(ng + 1));
        if (q->ngsets) {
            for (int j = 0; j < q->gsetn[s]; j++)
                inset[keyof[q->gsets[s][j]]] = true;
        } else {
            for (int k = 0; k < ng; k++)
                inset[k] = true;
        }
        if ((nodes[s] = plan_set(p, ag, specs, in, inset)) < 0)
            return -1;
    }
    return sql__sum(p, nodes, ns);
}
