/*
 * sql/plan.c - the query planner: lowers a query of the AST (parse*.c)
 * into circuit nodes (circuit.h, added through plan_node.c), using the
 * binder (bind.c, bind_fn.c) for names and types of expressions. Views
 * reach it from compile.c, subqueries and WITH queries from the other
 * planner files.
 *
 * A query becomes, block by block:
 *   FROM items (comma lists and inner joins) joined left-deep in
 *   connectivity order: the first item written, then repeatedly the first
 *   item an equality conjunct connects to those joined so far, a cross
 *   product only when none is (single-item WHERE/ON conjuncts pushed below
 *   the joins as filters, equality conjuncts between the joined prefix and
 *   the next item used as join keys, other conjuncts filtered at the first
 *   join that has their columns, the columns then put back in FROM order;
 *   OUTER, NATURAL and USING joins are items planned as a unit by
 *   plan_join.c, their own order kept) -> GROUP BY/aggregates (a MAP
 *   computing group keys and aggregate arguments, then OPK_AGG; select-list
 *   aliases in GROUP BY and HAVING replaced by their expressions) -> HAVING,
 *   window functions (plan_window.c) and the select list (one MAP) ->
 *   DISTINCT -> set operations (plan_set.c). WITH queries and VALUES are
 *   planned by plan_set.c, subqueries in expressions by plan_subq.c,
 *   LIMIT by plan_window.c (top-k).
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/budget.h"
#include "../base/vec.h"
#include "../expr/nested.h"
#include "sql_int.h"

/* ---- FROM ---- */

static Scope scope_new(P *p, int n)
{
    Scope s = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(n ? n : 1)), n};
    return s;
}

typedef struct Item {
    PRel r;
    int off; /* first column in the combined scope */
} Item;

static int plan_from_leaf(P *p, FromItem *f, PRel *out, PushDown *cand)
{
    if (budget_stop())
        return budget_error(p->err);
    if (f->k == F_JOIN)
        return sql__plan_join_unit(p, f, out, cand);
    if (f->k == F_TVF) /* TUMBLE / HOP (plan_tvf.c) */
        return sql__plan_tvf(p, f, out);
    if (f->k == F_UNNEST)
        return perr(p, SL_EUNSUPPORTED, f->line, f->col,
                    "UNNEST in a RIGHT, FULL, NATURAL, USING or aliased join is not supported "
                    "yet (it may follow a comma, CROSS JOIN, [INNER] JOIN ... ON or LEFT JOIN "
                    "... ON TRUE)");
    if (f->k == F_NODE) { /* planned already (plan_subq.c) */
        out->node = f->node;
        out->s = *(Scope *)f->scope;
        return 0;
    }
    if (f->k == F_SUBQUERY) {
        if (sql__plan_query(p, f->sub, out))
            return p->err->code;
        for (int i = 0; i < out->s.n; i++)
            out->s.c[i].qual = f->alias;
        return sql__apply_col_aliases(p, f, out);
    }
    bool cte;
    if (sql__plan_cte_ref(p, f, out, &cte))
        return p->err->code;
    if (cte)
        return sql__apply_col_aliases(p, f, out);
    int r = circuit_find_rel(p->c, f->name);
    if (r < 0 && sql__rec_declared(p, f->name))
        return perr(p, SL_EUNSUPPORTED, f->line, f->col,
                    "recursive view \"%s\" is read before it is defined: a view may read a "
                    "declared recursive view only once its CREATE VIEW and those of the "
                    "declared views it reads are given (or is declared recursive itself, "
                    "to recurse with it)",
                    f->name);
    if (r < 0)
        return perr(p, SL_ESEMANTIC, f->line, f->col, "table or view \"%s\" does not exist",
                    f->name);
    Relation *rel = &p->c->rels[r];
    out->node = rel->node;
    out->s = scope_new(p, rel->ncol);
    for (int i = 0; i < rel->ncol; i++) {
        out->s.c[i].qual = f->alias ? f->alias : rel->name;
        out->s.c[i].name = rel->colnames[i];
        out->s.c[i].t = rel->types[i];
    }
    return sql__apply_col_aliases(p, f, out);
}

/* A FROM clause flattened: its leaves and its inner joins' ON conditions. */
typedef struct FromFlat {
    FromItem **leaves;
    int nleaves, cap_leaves;
    Ast **conds;
    int nconds, cap_conds;
} FromFlat;

/* Flatten the FROM item f into ff. */
static void collect_from(P *p, FromItem *f, FromFlat *ff)
{
    /* outer, NATURAL, USING and aliased joins are units (plan_join.c) */
    if (f->k != F_JOIN || f->jk == J_LEFT || f->jk == J_RIGHT || f->jk == J_FULL ||
        f->natural || f->nusing || f->alias || f->asof) {
        *VEC_PUSH_ARENA(p->a, ff->leaves, ff->nleaves, ff->cap_leaves) = f;
        return;
    }
    collect_from(p, f->l, ff);
    collect_from(p, f->r, ff);
    if (f->on)
        *VEC_PUSH_ARENA(p->a, ff->conds, ff->nconds, ff->cap_conds) = f->on;
}

static int plan_from(P *p, Select *q, PRel *out, Expr **residual, Ast ***subq, int *nsubq,
                     PushDown *opt);

/* The FROM item f flattened for an UNNEST inside it: inner joins into their
   leaves and ON conditions (as collect_from), and LEFT JOIN UNNEST(...) ON
   TRUE into the left side's leaves and the UNNEST marked outer (a function
   in FROM is lateral: it reads the items before it, per row of them). Sets
   *found when an UNNEST is a leaf. */
static int flatten_unnest(P *p, FromItem *f, FromFlat *ff, bool *found)
{
    if (f->k == F_JOIN && f->jk == J_LEFT && f->r->k == F_UNNEST && !f->natural &&
        !f->nusing && !f->alias && !f->asof) {
        bool on_true = !f->on || (f->on->k == A_BOOL && f->on->ival);
        if (!on_true && sql__has_subquery(f->on))
            return perr(p, SL_EUNSUPPORTED, f->on->line, f->on->col,
                        "a subquery in the ON condition of LEFT JOIN UNNEST(...) is not "
                        "supported yet");
        if (flatten_unnest(p, f->l, ff, found))
            return p->err->code;
        FromItem *u = arena_alloc(p->a, sizeof(*u));
        *u = *f->r;
        u->unnest_outer = true;
        u->unnest_on = on_true ? NULL : f->on;
        *VEC_PUSH_ARENA(p->a, ff->leaves, ff->nleaves, ff->cap_leaves) = u;
        *found = true;
        return 0;
    }
    if (f->k != F_JOIN || f->jk == J_LEFT || f->jk == J_RIGHT || f->jk == J_FULL ||
        f->natural || f->nusing || f->alias || f->asof) {
        *VEC_PUSH_ARENA(p->a, ff->leaves, ff->nleaves, ff->cap_leaves) = f;
        *found = *found || f->k == F_UNNEST;
        return 0;
    }
    if (flatten_unnest(p, f->l, ff, found) || flatten_unnest(p, f->r, ff, found))
        return p->err->code;
    if (f->on)
        *VEC_PUSH_ARENA(p->a, ff->conds, ff->nconds, ff->cap_conds) = f->on;
    return 0;
}

/* q with the UNNESTs inside its joins (flatten_unnest) brought up into its
   FROM list, the inner joins' ON conditions ANDed to WHERE; q itself when
   none is. */
static int lift_unnest(P *p, Select *q, Select *out)
{
    FromFlat ff = {0};
    bool found = false, joins = false;
    *out = *q;
    for (int i = 0; i < q->nfrom; i++)
        joins = joins || q->from[i]->k == F_JOIN;
    if (!joins)
        return 0;
    for (int i = 0; i < q->nfrom; i++)
        if (flatten_unnest(p, q->from[i], &ff, &found))
            return p->err->code;
    if (!found)
        return 0;
    out->from = ff.leaves;
    out->nfrom = ff.nleaves;
    for (int i = 0; i < ff.nconds; i++) {
        Ast *c = ff.conds[i];
        if (!out->where) {
            out->where = c;
            continue;
        }
        Ast *x = arena_zalloc(p->a, sizeof(*x));
        x->k = A_BIN;
        x->op = OP_AND;
        x->line = c->line;
        x->col = c->col;
        x->a = out->where;
        x->b = c;
        out->where = x;
    }
    return 0;
}

static Expr *remap_pos(P *p, const Expr *e, const int *pos);

/* FROM items..., UNNEST(e) [WITH ORDINALITY] [AS] u(x [, n]) (q: no
   WHERE): the items before it planned, with the WHERE conjuncts push
   offers (may be NULL: join keys and filters when they read those items
   only, pushed[] set), then per row one row per element of e (lateral: e
   reads their columns): an OPK_UNNEST over a map adding e's value, then a
   map dropping it. Output: the items' columns, the element (default name
   unnest) and the position (default ordinality). */
static int plan_unnest(P *p, Select *q, PRel *out, Ast ***subq, int *nsubq, PushDown *push)
{
    FromItem *u = q->from[q->nfrom - 1];
    Select q2 = *q;
    PRel pre;
    Expr *r2 = NULL;
    q2.nfrom--;
    q2.where = NULL;
    if (plan_from(p, &q2, &pre, &r2, subq, nsubq, push && push->n ? push : NULL))
        return p->err->code;
    CNode *src = p->c->nodes[pre.node];
    int n = src->ncol;
    AggCtx none = {0};
    BindCtx bc = {&pre.s, &none, "UNNEST"};
    int na = 1 + u->unnest_more.n; /* arrays, zipped when several */
    Expr **proj = sql__identity_proj(p, src, na);
    for (int j = 0; j < na; j++) {
        Ast *ax = j ? u->unnest_more.v[j - 1] : u->unnest_e;
        Expr *e = sql__bind(p, &bc, ax);
        if (!e)
            return p->err->code;
        if (e->t.kind != TK_ARRAY)
            return perr(p, SL_ESEMANTIC, ax->line, ax->col, "UNNEST needs an array, not %s",
                        tname(e->t));
        proj[n + j] = e;
    }
    int m = sql__add_map(p, pre.node, r2, proj, n + na);
    int nc = n + 2 * na + u->ordinality;
    CNode *un = sql__add_node(p, OPK_UNNEST, 1, nc);
    un->in[0] = m;
    un->unnest_col = n;
    un->unnest_n = na;
    un->ordinality = u->ordinality;
    memcpy(un->types, p->c->nodes[m]->types, sizeof(SqlType) * (size_t)(n + na));
    un->unnest_outer = u->unnest_outer;
    for (int j = 0; j < na; j++) {
        un->types[n + na + j] = type_elem(proj[n + j]->t);
        if (na > 1 || u->unnest_outer) /* padded with NULL */
            un->types[n + na + j].nullable = true;
    }
    if (u->ordinality)
        un->types[n + 2 * na] = type_make(TK_BIGINT, u->unnest_outer);
    un->label = "unnest";
    int nout = n + na + u->ordinality;
    Expr **fin = sql__identity_proj(p, un, 0);
    for (int j = 0; j < na + u->ordinality; j++)
        fin[n + j] = fin[n + na + j];
    out->node = sql__add_map(p, un->id, NULL, fin, nout);
    out->s = scope_new(p, nout);
    memcpy(out->s.c, pre.s.c, sizeof(SCol) * (size_t)n);
    for (int i = 0; i < na + u->ordinality; i++) {
        SCol *c = &out->s.c[n + i];
        c->qual = u->alias;
        c->name = i < u->ncol_aliases ? u->col_aliases[i] : i == na ? "ordinality" : "unnest";
        c->t = un->types[n + na + i];
    }
    if (u->ncol_aliases > na + u->ordinality)
        return perr(p, SL_ESEMANTIC, u->line, u->col,
                    "UNNEST gives %d columns, %d names given", na + u->ordinality,
                    u->ncol_aliases);
    if (u->unnest_on) { /* LEFT JOIN UNNEST ... ON cond: over the UNNEST's rows */
        BindCtx oc = {&out->s, &none, "ON"};
        Expr *w = sql__bind(p, &oc, u->unnest_on);
        if (!w || !(w = sql__bool_operand(p, w, u->unnest_on, "ON")))
            return p->err->code;
        int *pos = arena_alloc(p->a, sizeof(int) * (size_t)(nout + 1));
        for (int i = 0; i < nout; i++)
            pos[i] = i < n ? i : i + na; /* past the arrays */
        p->c->nodes[un->id]->filter = remap_pos(p, w, pos);
    }
    return 0;
}

/* No FROM: one constant row without columns; WHERE filters it. */
static int plan_no_from(P *p, Select *q, PRel *out, Expr **residual, Ast ***subq, int *nsubq)
{
    CNode *k = sql__add_node(p, OPK_CONST, 0, 0);
    k->label = "const";
    out->node = k->id;
    out->s = scope_new(p, 0);
    *residual = NULL;
    if (q->where && sql__has_subquery(q->where)) {
        *subq = arena_alloc(p->a, sizeof(Ast *));
        (*subq)[0] = q->where;
        *nsubq = 1;
    } else if (q->where) {
        AggCtx none = {0};
        BindCtx bc = {&out->s, &none, "WHERE"};
        Expr *w = sql__bind(p, &bc, q->where);
        if (!w || !(w = sql__bool_operand(p, w, q->where, "WHERE")))
            return p->err->code;
        *residual = w;
    }
    return 0;
}

/* ---- inner join order ---- */

/* Does every column e reads have a place (pos[col] >= 0) in the joined prefix? */
static bool refs_in(const Expr *e, const int *pos)
{
    if (e->k == E_COL && pos[e->col] < 0)
        return false;
    for (int i = 0; i < e->na; i++)
        if (!refs_in(e->a[i], pos))
            return false;
    return true;
}

/* e with column c (of the combined scope) read at pos[c] of the joined prefix. */
static Expr *remap_pos(P *p, const Expr *e, const int *pos)
{
    Expr *c = arena_alloc(p->a, sizeof(*c));
    *c = *e;
    if (e->k == E_COL)
        c->col = pos[e->col];
    if (e->na) {
        c->a = arena_alloc(p->a, sizeof(Expr *) * (size_t)e->na);
        for (int i = 0; i < e->na; i++)
            c->a[i] = remap_pos(p, e->a[i], pos);
    }
    return c;
}

/* The column of the combined scope that e reads first, or -1. */
static int first_col(const Expr *e)
{
    if (e->k == E_COL)
        return e->col;
    for (int i = 0; i < e->na; i++) {
        int c = first_col(e->a[i]);
        if (c >= 0)
            return c;
    }
    return -1;
}

/* The item (not joined yet) that side x of an equality reads alone, or -1. */
static int side_item(const Expr *x, const Item *items, const int *item_of, const bool *joined)
{
    int c = first_col(x);
    if (c < 0 || joined[item_of[c]])
        return -1;
    int k = item_of[c];
    return sql__refs_within(x, items[k].off, items[k].off + items[k].r.s.n) ? k : -1;
}

/* The next item to join: the first in FROM order that an unused equality
   conjunct connects to the joined prefix; when none is, the first not
   joined (a cross product no predicate avoids). One pass over the
   conjuncts, so planning n items stays O(n * conjuncts). */
static int pick_next(const Item *items, int nitems, const int *item_of, const bool *joined,
                     Expr **ce, const bool *used, int nconj, const int *pos)
{
    int best = nitems;
    for (int i = 0; i < nconj; i++) {
        const Expr *e;
        if (used[i] || !sql__join_eq(ce[i], &e))
            continue;
        for (int s = 0; s < 2; s++) {
            const Expr *x = e->a[s], *y = e->a[1 - s];
            int k = side_item(y, items, item_of, joined);
            if (k >= 0 && k < best && sql__refs_any(x) && refs_in(x, pos))
                best = k;
        }
    }
    for (int k = 0; k < nitems && best == nitems; k++)
        if (!joined[k])
            best = k;
    return best;
}

/* Filter *cur by the unused conjuncts whose columns the joined prefix has. */
static void attach_filters(P *p, int *cur, Expr **ce, bool *used, int nconj, const int *pos)
{
    Expr **f = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
    int nf = 0;
    for (int i = 0; i < nconj; i++)
        if (!used[i] && sql__refs_any(ce[i]) && refs_in(ce[i], pos)) {
            f[nf++] = remap_pos(p, ce[i], pos);
            used[i] = true;
        }
    if (nf) {
        CNode *src = p->c->nodes[*cur];
        *cur = sql__add_map(p, *cur, sql__and_all(p, f, nf), sql__identity_proj(p, src, 0),
                            src->ncol);
    }
}

/* Plan the FROM clause and WHERE; *residual is the conjunction of the
   conditions left to filter after the joins (NULL when none); WHERE/ON
   conjuncts containing subqueries are returned unbound in subq[0..nsubq). */
/* Bind WHERE conjunct x over s, or NULL (no error set) when it does not. */
static Expr *try_bind(P *p, Scope *s, Ast *x)
{
    Err tmp = {0}, *orig = p->err;
    AggCtx none = {0};
    BindCtx bc = {s, &none, "WHERE"};
    int unresolved = p->unresolved; /* a name not found here is no outer one */
    p->err = &tmp;
    Expr *e = sql__bind(p, &bc, x);
    if (e)
        e = sql__bool_operand(p, e, x, "WHERE");
    p->err = orig;
    p->unresolved = unresolved;
    return e;
}

/* FROM items..., UNNEST(...) u, rest... with the first UNNEST at from[iu]:
   (items..., u) planned first (it reads only the items before it), then,
   as one planned item, joined to the rest. The WHERE conjuncts without
   subqueries or NOW() are offered to the items before the UNNEST (join
   keys and filters there, as for any FROM list: no cross product of items
   WHERE links); the others stay for later. A pushed conjunct must read the
   same columns over the whole FROM list (an outer query's column a later
   item's name shadows does not): if one does not, the plan is dropped and
   made again without pushing. */
static int plan_from_unnest(P *p, Select *q, int iu, PRel *out, Expr **residual, Ast ***subq,
                            int *nsubq, PushDown *opt)
{
    FromItem *u = q->from[iu];
    int nu = 1 + u->unnest_more.n + u->ordinality; /* the UNNEST's columns */
    Ast **conj = NULL;
    int nconj = 0;
    if (q->where)
        sql__split_and(p, q->where, &conj, &nconj);
    PushDown push = {arena_alloc(p->a, sizeof(Ast *) * (size_t)(nconj + 1)), 0,
                     arena_zalloc(p->a, (size_t)(nconj + 1))};
    int *pi = arena_alloc(p->a, sizeof(int) * (size_t)(nconj + 1)); /* conj -> push.v */
    for (int i = 0; i < nconj; i++) {
        pi[i] = -1;
        if (!sql__has_subquery(conj[i]) && !sql__has_now(conj[i])) {
            pi[i] = push.n;
            push.v[push.n++] = conj[i];
        }
    }
    int mark = p->c->nnodes, nsubq0 = *nsubq;
    Ast **subq0 = *subq;
    for (int attempt = 0;; attempt++) {
        bool pushing = attempt == 0 && push.n;
        memset(push.pushed, 0, (size_t)(nconj + 1));
        Select pq = *q;
        pq.nfrom = iu + 1;
        pq.where = NULL;
        PRel pre;
        if (plan_unnest(p, &pq, &pre, subq, nsubq, pushing ? &push : NULL))
            return p->err->code;
        int nbefore = pre.s.n - nu; /* columns of the items before the UNNEST */
        /* the conjuncts not pushed */
        Ast **rest = arena_alloc(p->a, sizeof(Ast *) * (size_t)(nconj + 1));
        int nrest = 0;
        for (int i = 0; i < nconj; i++)
            if (pi[i] < 0 || !push.pushed[pi[i]])
                rest[nrest++] = conj[i];
        AggCtx none = {0};
        if (iu == q->nfrom - 1) {
            /* nothing after the UNNEST: WHERE applies to its rows */
            *out = pre;
            Expr **w = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nrest + 1));
            int nw = 0;
            Ast **v = arena_alloc(p->a, sizeof(Ast *) * (size_t)(*nsubq + nrest + 1));
            if (*nsubq)
                memcpy(v, *subq, sizeof(Ast *) * (size_t)*nsubq);
            *subq = v;
            for (int i = 0; i < nrest; i++) {
                if (sql__has_subquery(rest[i])) {
                    (*subq)[(*nsubq)++] = rest[i];
                    continue;
                }
                BindCtx wc = {&out->s, &none, "WHERE"};
                if (!(w[nw] = sql__bind(p, &wc, rest[i])) ||
                    !(w[nw] = sql__bool_operand(p, w[nw], rest[i], "WHERE")))
                    return p->err->code;
                nw++;
            }
            *residual = nw ? sql__and_all(p, w, nw) : NULL;
        } else {
            FromItem *f = arena_zalloc(p->a, sizeof(*f));
            f->k = F_NODE;
            f->line = q->from[0]->line;
            f->col = q->from[0]->col;
            f->node = pre.node;
            Scope *sc = arena_alloc(p->a, sizeof(*sc));
            *sc = pre.s;
            f->scope = sc;
            Select rq = *q;
            rq.nfrom = q->nfrom - iu;
            rq.from = arena_alloc(p->a, sizeof(FromItem *) * (size_t)rq.nfrom);
            rq.from[0] = f;
            memcpy(rq.from + 1, q->from + iu + 1, sizeof(FromItem *) * (size_t)(rq.nfrom - 1));
            rq.where = nrest ? rest[0] : NULL;
            for (int i = 1; i < nrest; i++) {
                Ast *x = arena_zalloc(p->a, sizeof(*x));
                x->k = A_BIN;
                x->op = OP_AND;
                x->line = rest[i]->line;
                x->col = rest[i]->col;
                x->a = rq.where;
                x->b = rest[i];
                rq.where = x;
            }
            if (plan_from(p, &rq, out, residual, subq, nsubq, opt))
                return p->err->code;
        }
        if (!pushing)
            return 0;
        /* each pushed conjunct over the whole FROM list: errors (an
           ambiguous name), and the same columns as where it was applied */
        bool same = true;
        for (int i = 0; i < push.n; i++) {
            if (!push.pushed[i])
                continue;
            BindCtx wc = {&out->s, &none, "WHERE"};
            Expr *e = sql__bind(p, &wc, push.v[i]);
            if (!e)
                return p->err->code;
            same = same && sql__refs_within(e, 0, nbefore);
        }
        if (same)
            return 0;
        p->c->nnodes = mark; /* drop this plan */
        *subq = subq0;
        *nsubq = nsubq0;
    }
}

static int plan_from(P *p, Select *q, PRel *out, Expr **residual, Ast ***subq, int *nsubq,
                     PushDown *opt)
{
    if (q->nfrom == 0)
        return plan_no_from(p, q, out, residual, subq, nsubq);
    Select lifted;
    if (lift_unnest(p, q, &lifted))
        return p->err->code;
    q = &lifted;
    for (int i = 0; i < q->nfrom; i++)
        if (q->from[i]->k == F_UNNEST)
            return plan_from_unnest(p, q, i, out, residual, subq, nsubq, opt);
    FromFlat ff = {0};
    for (int i = 0; i < q->nfrom; i++)
        collect_from(p, q->from[i], &ff);
    FromItem **leaves = ff.leaves;
    Ast **conds = ff.conds, **conj = NULL;
    int nleaves = ff.nleaves, nconds = ff.nconds, nconj = 0;
    if (q->where)
        sql__split_and(p, q->where, &conj, &nconj);
    for (int i = 0; i < nconds; i++)
        sql__split_and(p, conds[i], &conj, &nconj);
    /* conjuncts with subqueries are left to sql__plan_core (plan_subq.c),
       and so are temporal filters (NOW(): plan_temporal.c) */
    int nkeep = 0, nsq = 0;
    for (int i = 0; i < nconj; i++)
        nsq += sql__has_subquery(conj[i]) || sql__has_now(conj[i]);
    if (nsq) {
        Ast **v = arena_alloc(p->a, sizeof(Ast *) * (size_t)(*nsubq + nsq));
        if (*nsubq)
            memcpy(v, *subq, sizeof(Ast *) * (size_t)*nsubq);
        *subq = v;
    }
    for (int i = 0; i < nconj; i++) {
        if (sql__has_subquery(conj[i]) || sql__has_now(conj[i]))
            (*subq)[(*nsubq)++] = conj[i];
        else
            conj[nkeep++] = conj[i];
    }
    nconj = nkeep;
    /* the caller's optional conjuncts (opt) follow; outer-join units may
       apply any of them below their joins (cand.pushed) */
    int nreg = nconj;
    if (opt && opt->n) {
        Ast **v = arena_alloc(p->a, sizeof(Ast *) * (size_t)(nconj + opt->n));
        if (nconj)
            memcpy(v, conj, sizeof(Ast *) * (size_t)nconj);
        memcpy(v + nconj, opt->v, sizeof(Ast *) * (size_t)opt->n);
        conj = v;
        nconj += opt->n;
    }
    PushDown cand = {conj, nconj, arena_zalloc(p->a, (size_t)(nconj + 1))};

    Item *items = arena_zalloc(p->a, sizeof(Item) * (size_t)nleaves);
    int total = 0;
    for (int i = 0; i < nleaves; i++) {
        if (plan_from_leaf(p, leaves[i], &items[i].r, &cand))
            return p->err->code;
        items[i].off = total;
        total += items[i].r.s.n;
    }
    /* combined scope in FROM order */
    Scope all = scope_new(p, total);
    for (int i = 0; i < nleaves; i++)
        memcpy(all.c + items[i].off, items[i].r.s.c, sizeof(SCol) * (size_t)items[i].r.s.n);

    /* bind every conjunct over the combined scope */
    Expr **ce = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
    bool *used = arena_zalloc(p->a, (size_t)(nconj + 1));
    for (int i = 0; i < nconj; i++) {
        AggCtx none = {0};
        BindCtx bc = {&all, &none, "WHERE or ON"};
        if (i >= nreg) { /* optional: only if it binds here */
            ce[i] = cand.pushed[i] ? NULL : try_bind(p, &all, conj[i]);
            if (ce[i] || cand.pushed[i])
                opt->pushed[i - nreg] = true;
            used[i] = !ce[i];
            continue;
        }
        if (!(ce[i] = sql__bind(p, &bc, conj[i])) ||
            !(ce[i] = sql__bool_operand(p, ce[i], conj[i], "WHERE/ON")))
            return p->err->code;
        used[i] = cand.pushed[i]; /* already applied inside an outer join */
    }
    /* push single-item conjuncts below the joins */
    for (int k = 0; k < nleaves; k++) {
        Item *it = &items[k];
        int lo = it->off, hi = it->off + it->r.s.n;
        Expr **f = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
        int nf = 0;
        for (int i = 0; i < nconj; i++)
            if (!used[i] && sql__refs_any(ce[i]) && sql__refs_within(ce[i], lo, hi)) {
                f[nf++] = sql__remap(p, ce[i], 0, -lo);
                used[i] = true;
            }
        if (nf) {
            CNode *src = p->c->nodes[it->r.node];
            it->r.node = sql__add_map(p, it->r.node, sql__and_all(p, f, nf),
                                  sql__identity_proj(p, src, 0), src->ncol);
        }
    }
    /* inner joins in connectivity order (pick_next), then the columns back
       in FROM order */
    int *pos = arena_alloc(p->a, sizeof(int) * (size_t)(total + 1));
    bool *joined = arena_zalloc(p->a, (size_t)nleaves);
    for (int i = 0; i < total; i++)
        pos[i] = i < items[0].r.s.n ? i : -1;
    joined[0] = true;
    int *item_of = arena_alloc(p->a, sizeof(int) * (size_t)(total + 1));
    for (int k = 0; k < nleaves; k++)
        for (int i = 0; i < items[k].r.s.n; i++)
            item_of[items[k].off + i] = k;
    int cur = items[0].r.node;
    int curcols = items[0].r.s.n;
    bool moved = false;
    for (int step = 1; step < nleaves; step++) {
        int k = pick_next(items, nleaves, item_of, joined, ce, used, nconj, pos);
        Item *it = &items[k];
        int lo = it->off, hi = it->off + it->r.s.n;
        Expr **lk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
        Expr **rk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
        SqlType *kt = arena_alloc(p->a, sizeof(SqlType) * (size_t)(nconj + 1));
        bool *ns = arena_alloc(p->a, sizeof(bool) * (size_t)(nconj + 1));
        int nk = 0;
        for (int i = 0; i < nconj; i++) {
            const Expr *e;
            int how = used[i] ? 0 : sql__join_eq(ce[i], &e);
            if (!how)
                continue;
            Expr *a = e->a[0], *b = e->a[1];
            if (!sql__refs_any(a) || !sql__refs_any(b))
                continue;
            if (refs_in(a, pos) && sql__refs_within(b, lo, hi)) {
                /* a is left, b is right */
            } else if (refs_in(b, pos) && sql__refs_within(a, lo, hi)) {
                Expr *t = a;
                a = b;
                b = t;
            } else
                continue;
            lk[nk] = remap_pos(p, a, pos);
            rk[nk] = sql__remap(p, b, 0, -lo);
            kt[nk] = a->t; /* sql__compare() already cast both to one type */
            ns[nk] = how == 2;
            nk++;
            used[i] = true;
        }
        int *lcols, *rcols;
        int lnode = sql__join_side_ns(p, cur, lk, nk, kt, ns, &lcols);
        int rnode = sql__join_side_ns(p, it->r.node, rk, nk, kt, ns, &rcols);
        CNode *ln = p->c->nodes[lnode], *rn = p->c->nodes[rnode];
        cur = sql__join(p, lnode, rnode, lcols, rcols, nk);
        if (ln->ncol != curcols || rn->ncol != it->r.s.n) {
            /* drop computed key columns */
            Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(curcols + it->r.s.n));
            for (int i = 0; i < curcols; i++)
                proj[i] = expr_col(p->a, i, ln->types[i]);
            for (int i = 0; i < it->r.s.n; i++)
                proj[curcols + i] = expr_col(p->a, ln->ncol + i, rn->types[i]);
            cur = sql__add_map(p, cur, NULL, proj, curcols + it->r.s.n);
        }
        moved |= curcols != lo;
        for (int i = 0; i < it->r.s.n; i++)
            pos[lo + i] = curcols + i;
        joined[k] = true;
        curcols += it->r.s.n;
        /* conjuncts over several items: filtered at the first join that has
           all their columns (after the last one, the caller's residual) */
        if (step < nleaves - 1)
            attach_filters(p, &cur, ce, used, nconj, pos);
    }
    if (moved) { /* the joined columns back in FROM order */
        CNode *cn = p->c->nodes[cur];
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(total + 1));
        for (int i = 0; i < total; i++)
            proj[i] = expr_col(p->a, pos[i], cn->types[pos[i]]);
        cur = sql__add_map(p, cur, NULL, proj, total);
    }
    int nres = 0;
    Expr **rese = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
    for (int i = 0; i < nconj; i++)
        if (!used[i])
            rese[nres++] = ce[i];
    out->node = cur;
    out->s = all;
    *residual = sql__and_all(p, rese, nres);
    return 0;
}

/* ---- a query block ---- */

/* The select list's struct stars, `(x).*` and `s.*` (s a struct column,
   not a relation), replaced in q by one item `(x).f` per field f, named f
   (PostgreSQL's expansion; x is evaluated per field). */
static int expand_struct_stars(P *p, Select *q, Scope *s)
{
    int n = 0, more = 0;
    Ast **sx = arena_zalloc(p->a, sizeof(Ast *) * (size_t)(q->nitems + 1));
    const NestType **nt = arena_zalloc(p->a, sizeof(NestType *) * (size_t)(q->nitems + 1));
    for (int i = 0; i < q->nitems; i++) {
        Ast *e = q->items[i].e;
        if (e->k != A_STAR || (!e->a && !e->qual))
            continue;
        if (!e->a) { /* qual.*: a relation's columns, else a struct column's fields */
            bool rel = false, col = false;
            for (int j = 0; j < s->n; j++) {
                rel = rel || sql__star_includes(&s->c[j], e->qual);
                col = col || (s->c[j].name && !strcasecmp(s->c[j].name, e->qual) &&
                              s->c[j].t.kind == TK_ROW);
            }
            if (rel || !col)
                continue;
            Ast *c = arena_zalloc(p->a, sizeof(*c));
            c->k = A_COL;
            c->name = e->qual;
            c->line = e->line;
            c->col = e->col;
            sx[i] = c;
        } else
            sx[i] = e->a;
        AggCtx none = {0};
        BindCtx bc = {s, &none, "the select list"};
        Expr *x = sql__bind(p, &bc, sx[i]);
        if (!x)
            return p->err->code;
        if (x->t.kind != TK_ROW)
            return perr(p, SL_ESEMANTIC, e->line, e->col, "(x).* needs a struct, not %s",
                        tname(x->t));
        nt[i] = nest_get(x->t);
        more += nt[i]->n - 1;
    }
    bool any = false;
    for (int i = 0; i < q->nitems; i++)
        any = any || sx[i];
    if (!any)
        return 0;
    SelectItem *items = arena_zalloc(p->a, sizeof(SelectItem) * (size_t)(q->nitems + more));
    for (int i = 0; i < q->nitems; i++) {
        if (!sx[i]) {
            items[n++] = q->items[i];
            continue;
        }
        for (int f = 0; f < nt[i]->n; f++) {
            Ast *c = arena_zalloc(p->a, sizeof(*c));
            c->k = A_FUNC;
            c->name = ".";
            c->str = nt[i]->names[f];
            c->line = sx[i]->line;
            c->col = sx[i]->col;
            c->args.v = arena_alloc(p->a, sizeof(Ast *));
            c->args.v[0] = sx[i];
            c->args.n = c->args.cap = 1;
            items[n].e = c;
            items[n].alias = nt[i]->names[f];
            items[n].line = q->items[i].line;
            items[n].col = q->items[i].col;
            n++;
        }
    }
    q->items = items;
    q->nitems = n;
    return 0;
}

static const char *item_name(P *p, SelectItem *si, int i)
{
    if (si->alias)
        return si->alias;
    if (si->e->k == A_COL)
        return si->e->name;
    char *b = arena_alloc(p->a, 24);
    snprintf(b, 24, "EXPR$%d", i);
    return b;
}

/* ---- select-list aliases in GROUP BY and HAVING ----
   A bare name in GROUP BY (the whole key) or in HAVING (anywhere outside a
   subquery) that is no column of the FROM clause (nor of an outer query,
   for a correlated subquery) may name a select item by its alias (as
   MySQL, SQLite and Spark allow); an input column of that name wins, as in
   PostgreSQL, so no query valid without aliases changes meaning. Two items
   with the alias: an error naming both. The item's expression replaces the
   name before binding. */

static bool input_has(const Scope *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!s->c[i].hidden && !s->c[i].qual_only &&
            !strcasecmp(s->c[i].name, name))
            return true;
    return false;
}

/* The expression of the select item aliased x->name (*out; NULL if none),
   or -1 with p->err when two items have that alias. */
static int alias_of(P *p, Select *q, Ast *x, const char *clause, Ast **out)
{
    int first = -1;
    *out = NULL;
    for (int i = 0; i < q->nitems; i++) {
        SelectItem *it = &q->items[i];
        if (!it->alias || strcasecmp(it->alias, x->name) != 0)
            continue;
        if (first >= 0)
            return perr(p, SL_ESEMANTIC, x->line, x->col,
                        "%s name \"%s\" is ambiguous: it is the alias of the select items at "
                        "%d:%d and %d:%d",
                        clause, x->name, q->items[first].line, q->items[first].col, it->line,
                        it->col);
        first = i;
    }
    if (first >= 0)
        *out = q->items[first].e;
    return 0;
}

/* x with aliases replaced (copied along the changed paths), NULL with
   p->err on an ambiguous alias. */
static Ast *alias_subst(P *p, Select *q, const Scope *s, Ast *x, const char *clause)
{
    if (!x)
        return x;
    if (x->k == A_COL) {
        Ast *e = NULL;
        if (x->qual || x->subcol || input_has(s, x->name))
            return x;
        if (alias_of(p, q, x, clause, &e))
            return NULL;
        return e ? e : x;
    }
    if (x->k == A_SUBQUERY || x->k == A_EXISTS || x->over)
        return x;
    /* a NULL child (CASE without an operand, ...) stays NULL: only a NULL
       for a non-NULL child is an error */
    Ast *a = alias_subst(p, q, s, x->a, clause);
    if (x->a && !a)
        return NULL;
    Ast *b = alias_subst(p, q, s, x->b, clause);
    if (x->b && !b)
        return NULL;
    Ast *c = alias_subst(p, q, s, x->c, clause);
    if (x->c && !c)
        return NULL;
    Ast **args = x->args.v;
    for (int i = 0; i < x->args.n; i++) {
        Ast *y = alias_subst(p, q, s, x->args.v[i], clause);
        if (!y)
            return NULL;
        if (y != x->args.v[i] && args == x->args.v) {
            args = arena_alloc(p->a, sizeof(Ast *) * (size_t)x->args.n);
            memcpy(args, x->args.v, sizeof(Ast *) * (size_t)x->args.n);
        }
        args[i] = y;
    }
    if (a == x->a && b == x->b && c == x->c && args == x->args.v)
        return x;
    Ast *y = arena_alloc(p->a, sizeof(Ast));
    *y = *x;
    y->a = a;
    y->b = b;
    y->c = c;
    y->args.v = args;
    y->args.cap = x->args.n;
    return y;
}

/* An ORDER BY key that is a constant integer: a select-list position. */
static int order_ordinal(Ast *e)
{
    return e->k == A_INT ? (int)strtol(e->str, NULL, 10) : 0;
}

/* Resolve oq's ORDER BY against the select list proj[0..n) (names[]):
   by position, by output name, by an equal expression, else (bc != NULL)
   as a hidden column appended at proj[n + k]. */
static int resolve_order(P *p, Select *oq, BindCtx *bc, Expr **proj, int n, const char **names,
                         bool distinct, OrderOut *ord)
{
    ord->n = oq->norder;
    ord->col = arena_alloc(p->a, sizeof(int) * (size_t)(oq->norder + 1));
    ord->desc = arena_alloc(p->a, sizeof(bool) * (size_t)(oq->norder + 1));
    ord->nulls_first = arena_alloc(p->a, sizeof(bool) * (size_t)(oq->norder + 1));
    ord->nhidden = 0;
    for (int i = 0; i < oq->norder; i++) {
        OrderItem *o = &oq->order[i];
        Ast *e = o->e;
        int col = -1;
        ord->desc[i] = o->desc;
        ord->nulls_first[i] = o->nulls ? o->nulls == 1 : !o->desc;
        if (e->k == A_INT) {
            int k = order_ordinal(e);
            if (k < 1 || k > n)
                return perr(p, SL_ESEMANTIC, e->line, e->col,
                            "ORDER BY position %d is not in the select list (1..%d)", k, n);
            col = k - 1;
        } else if (e->k == A_COL && !e->qual) {
            for (int j = 0; j < n && col < 0; j++)
                if (names[j] && !strcasecmp(names[j], e->name))
                    col = j;
        }
        if (col < 0 && !bc)
            return perr(p, SL_ESEMANTIC, e->line, e->col,
                        "ORDER BY of a UNION/EXCEPT/INTERSECT must name an output column or "
                        "give its position");
        if (col < 0) {
            Expr *x = sql__bind(p, bc, e);
            if (!x)
                return p->err->code;
            for (int j = 0; j < n + ord->nhidden && col < 0; j++)
                if (sql__expr_equal(x, proj[j]))
                    col = j;
            if (col < 0) {
                if (distinct)
                    return perr(p, SL_ESEMANTIC, e->line, e->col,
                                "for SELECT DISTINCT, ORDER BY expressions must appear in the "
                                "select list");
                if (x->t.kind == TK_NULL)
                    x = sql__cast_to(p, x, type_make(TK_INT, true));
                col = n + ord->nhidden++;
                proj[col] = x;
            }
        }
        ord->col[i] = col;
    }
    return 0;
}

/* ---- DISTINCT ON ----
   SELECT DISTINCT ON (d, ...) items ... ORDER BY o, ... keeps, of the rows
   equal on the d's, the first in ORDER BY order (PostgreSQL): the query is
   planned with one more item, ROW_NUMBER() OVER (PARTITION BY d, ... ORDER
   BY o, ...) (plan_window.c; rows equal on every o are ordered by the rest
   of the row, so the choice is deterministic, also without ORDER BY), then
   a MAP keeps the rows numbered 1 and drops that column. A d or o that is
   a select-list position or an output name stands for that item's
   expression, as in PostgreSQL. */

static Ast *don_expr(P *p, Select *q, Ast *e, const char *clause)
{
    if (e->k == A_INT) {
        long k = strtol(e->str, NULL, 10);
        if (k < 1 || k > q->nitems || q->items[k - 1].e->k == A_STAR) {
            perr(p, SL_ESEMANTIC, e->line, e->col, "%s position %ld is not in the select list",
                 clause, k);
            return NULL;
        }
        return q->items[k - 1].e;
    }
    if (e->k == A_COL && !e->qual && !e->subcol)
        for (int i = 0; i < q->nitems; i++)
            if (q->items[i].alias && !strcasecmp(q->items[i].alias, e->name))
                return q->items[i].e;
    return e;
}

static int plan_distinct_on(P *p, Select *q, PRel *out, Select *oq, OrderOut *ord)
{
    WinDef *w = arena_zalloc(p->a, sizeof(WinDef));
    w->line = q->line;
    w->col = q->col;
    w->part.n = w->part.cap = q->don.n;
    w->part.v = arena_alloc(p->a, sizeof(Ast *) * (size_t)q->don.n);
    for (int i = 0; i < q->don.n; i++)
        if (!(w->part.v[i] = don_expr(p, q, q->don.v[i], "DISTINCT ON")))
            return p->err->code;
    if (!q->next && q->norder) { /* the ORDER BY of a set operation is not this block's */
        w->norder = q->norder;
        w->order = arena_alloc(p->a, sizeof(OrderItem) * (size_t)q->norder);
        for (int i = 0; i < q->norder; i++) {
            w->order[i] = q->order[i];
            if (!(w->order[i].e = don_expr(p, q, q->order[i].e, "ORDER BY")))
                return p->err->code;
        }
    }
    Ast *rn = arena_zalloc(p->a, sizeof(Ast));
    rn->k = A_FUNC;
    rn->name = (char *)"row_number";
    rn->over = w;
    rn->line = q->line;
    rn->col = q->col;
    rn->height = 1;
    Select q2 = *q;
    memset(&q2.don, 0, sizeof(q2.don));
    q2.items = arena_alloc(p->a, sizeof(SelectItem) * (size_t)(q->nitems + 1));
    memcpy(q2.items, q->items, sizeof(SelectItem) * (size_t)q->nitems);
    q2.items[q->nitems] = (SelectItem){rn, (char *)"$rn", q->line, q->col};
    q2.nitems = q->nitems + 1;
    if (sql__plan_core(p, &q2, out, oq, ord))
        return p->err->code;
    CNode *cn = p->c->nodes[out->node];
    int rnc = out->s.n - 1, nh = ord ? ord->nhidden : 0;
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(rnc + nh + 1));
    for (int i = 0; i < rnc; i++)
        proj[i] = expr_col(p->a, i, cn->types[i]);
    for (int j = 0; j < nh; j++)
        proj[rnc + j] = expr_col(p->a, rnc + 1 + j, cn->types[rnc + 1 + j]);
    Expr *first = sql__mk(p, E_EQ, type_make(TK_BOOL, false), 2);
    first->a[0] = expr_col(p->a, rnc, cn->types[rnc]);
    first->a[1] = expr_const_i64(p->a, cn->types[rnc], 1);
    out->node = sql__add_map(p, out->node, first, proj, rnc + nh);
    out->s.n = rnc;
    for (int i = 0; ord && i < ord->n; i++)
        if (ord->col[i] > rnc)
            ord->col[i]--;
    return 0;
}

int sql__plan_core(P *p, Select *q, PRel *out, Select *oq, OrderOut *ord)
{
    if (q->don.n)
        return plan_distinct_on(p, q, out, oq, ord);
    if (q->nvalues) { /* VALUES (plan_set.c); ORDER BY by name or position */
        if (sql__plan_values(p, q, out))
            return p->err->code;
        if (!ord)
            return 0;
        const char **vn = arena_alloc(p->a, sizeof(char *) * (size_t)(out->s.n + 1));
        for (int i = 0; i < out->s.n; i++)
            vn[i] = out->s.c[i].name;
        return resolve_order(p, oq, NULL, NULL, out->s.n, vn, false, ord);
    }
    PRel from;
    Expr *resid = NULL;
    Ast **subq = NULL;
    int nsubq = 0;
    if (plan_from(p, q, &from, &resid, &subq, &nsubq, NULL))
        return p->err->code;

    /* expand the select list */
    if (expand_struct_stars(p, q, &from.s))
        return p->err->code;
    int n = 0;
    for (int i = 0; i < q->nitems; i++) {
        Ast *e = q->items[i].e;
        if (e->k == A_STAR) {
            int m = 0;
            for (int j = 0; j < from.s.n; j++)
                if (sql__star_includes(&from.s.c[j], e->qual))
                    m++;
            if (e->qual && m == 0)
                return perr(p, SL_ESEMANTIC, e->line, e->col, "unknown table or alias \"%s\"",
                            e->qual);
            n += m;
        } else
            n++;
    }
    Ast **exprs = arena_alloc(p->a, sizeof(Ast *) * (size_t)n);
    const char **names = arena_alloc(p->a, sizeof(char *) * (size_t)n);
    int *starcol = arena_alloc(p->a, sizeof(int) * (size_t)n);
    n = 0;
    for (int i = 0; i < q->nitems; i++) {
        Ast *e = q->items[i].e;
        if (e->k == A_STAR) {
            for (int j = 0; j < from.s.n; j++)
                if (sql__star_includes(&from.s.c[j], e->qual)) {
                    exprs[n] = NULL;
                    starcol[n] = j;
                    names[n++] = from.s.c[j].name;
                }
        } else {
            exprs[n] = e;
            starcol[n] = -1;
            names[n] = item_name(p, &q->items[i], n);
            n++;
        }
    }

    Ast *having_ast = q->having;
    if (having_ast && !(having_ast = alias_subst(p, q, &from.s, having_ast, "HAVING")))
        return p->err->code;
    Ast *qual_ast = q->qualify; /* QUALIFY: bound as a select item, a filter after the windows */
    if (qual_ast && !(qual_ast = alias_subst(p, q, &from.s, qual_ast, "QUALIFY")))
        return p->err->code;
    bool agg = q->group.n > 0 || q->ngsets > 0 || sql__has_agg(having_ast) ||
               sql__has_agg(qual_ast);
    for (int i = 0; i < n && !agg; i++)
        agg = sql__has_agg(exprs[i]);

    /* subqueries in WHERE and (without aggregation) in the select list:
       their values become hidden columns of the FROM relation */
    {
        Ast **sx = arena_alloc(p->a, sizeof(Ast *) * (size_t)(nsubq + n + 1));
        int nsx = 0;
        for (int i = 0; i < nsubq; i++)
            if (!sql__has_now(subq[i]))
                sx[nsx++] = subq[i];
        for (int i = 0; i < n && !agg; i++)
            if (exprs[i] && sql__has_subquery(exprs[i]))
                sx[nsx++] = exprs[i];
        if (nsx && sql__plan_subqueries(p, &from, sx, nsx))
            return p->err->code;
        for (int i = 0; i < nsubq; i++) {
            if (sql__has_now(subq[i])) {
                if (sql__plan_temporal(p, &from, subq[i]))
                    return p->err->code;
                continue;
            }
            AggCtx none = {0};
            BindCtx bc = {&from.s, &none, "WHERE"};
            Expr *w = sql__bind(p, &bc, subq[i]);
            if (!w || !(w = sql__bool_operand(p, w, subq[i], "WHERE")))
                return p->err->code;
            resid = resid ? sql__nary_bool(p, E_AND, resid, w) : w;
        }
    }

    int node = from.node;
    WinCtx *win = sql__win_new(p); /* window functions of the select list */
    int nord = oq ? oq->norder : 0;
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + nord + 2));
    Expr *filter = resid, *qual = NULL;
    if (!agg) {
        for (int i = 0; i < n; i++) {
            if (!exprs[i]) {
                proj[i] = expr_col(p->a, starcol[i], from.s.c[starcol[i]].t);
                continue;
            }
            AggCtx none = {0};
            none.win = win;
            BindCtx bc = {&from.s, &none, "the select list"};
            if (!(proj[i] = sql__bind(p, &bc, exprs[i])))
                return p->err->code;
            if (proj[i]->t.kind == TK_NULL)
                proj[i] = sql__cast_to(p, proj[i], type_make(TK_INT, true));
        }
        if (qual_ast) {
            AggCtx none = {0};
            none.win = win;
            BindCtx bc = {&from.s, &none, "QUALIFY"};
            if (!(qual = sql__bind(p, &bc, qual_ast)) ||
                !(qual = sql__bool_operand(p, qual, q->qualify, "QUALIFY")))
                return p->err->code;
        }
        if (ord) {
            AggCtx none = {0};
            none.win = win;
            BindCtx bc = {&from.s, &none, "ORDER BY"};
            if (resolve_order(p, oq, &bc, proj, n, names, q->distinct, ord))
                return p->err->code;
        }
        if (having_ast)
            return perr(p, SL_ESEMANTIC, q->having->line, q->having->col,
                        "HAVING needs GROUP BY or an aggregate");
    } else {
        /* group keys */
        AggCtx ag = {0};
        ag.ngroup = q->group.n;
        ag.group = arena_alloc(p->a, sizeof(Expr *) * (size_t)(ag.ngroup + 1));
        for (int i = 0; i < ag.ngroup; i++) {
            AggCtx none = {0};
            BindCtx bc = {&from.s, &none, "GROUP BY"};
            Ast *g = q->group.v[i];
            /* GROUP BY 1: ordinal of a select item */
            if (g->k == A_INT) {
                long k = strtol(g->str, NULL, 10);
                if (k < 1 || k > n || !exprs[k - 1])
                    return perr(p, SL_ESEMANTIC, g->line, g->col,
                                "GROUP BY position %ld is not in the select list", k);
                g = exprs[k - 1];
            } else if (g->k == A_COL && !(g = alias_subst(p, q, &from.s, g, "GROUP BY")))
                return p->err->code;
            if (!(ag.group[i] = sql__bind(p, &bc, g)))
                return p->err->code;
            if (ag.group[i]->t.kind == TK_NULL)
                ag.group[i] = sql__cast_to(p, ag.group[i], type_make(TK_INT, true));
        }
        int *keyof = q->ngsets ? sql__gsets_keys(p, &ag) : NULL; /* plan_gsets.c */
        ag.allowed = true;
        ag.win = win;
        /* the post-aggregation scope: group columns, then aggregates */
        for (int i = 0; i < n; i++) {
            BindCtx bc = {&from.s, &ag, "the select list"};
            ag.top = true;
            if (!exprs[i]) {
                Ast fake = {0};
                fake.k = A_COL;
                fake.name = (char *)from.s.c[starcol[i]].name;
                fake.qual = (char *)from.s.c[starcol[i]].qual;
                fake.line = q->line;
                fake.col = q->col;
                if (!(proj[i] = sql__bind(p, &bc, &fake)))
                    return p->err->code;
            } else if (!(proj[i] = sql__bind(p, &bc, exprs[i])))
                return p->err->code;
            if (proj[i]->t.kind == TK_NULL)
                proj[i] = sql__cast_to(p, proj[i], type_make(TK_INT, true));
        }
        if (qual_ast) {
            BindCtx bc = {&from.s, &ag, "QUALIFY"};
            if (!(qual = sql__bind(p, &bc, qual_ast)) ||
                !(qual = sql__bool_operand(p, qual, q->qualify, "QUALIFY")))
                return p->err->code;
        }
        ag.top = false;
        if (ord) {
            BindCtx bc = {&from.s, &ag, "ORDER BY"};
            if (resolve_order(p, oq, &bc, proj, n, names, q->distinct, ord))
                return p->err->code;
        }
        Expr *having = NULL;
        ag.win = NULL; /* no window functions in HAVING */
        if (having_ast) {
            BindCtx bc = {&from.s, &ag, "HAVING"};
            if (!(having = sql__bind(p, &bc, having_ast)) ||
                !(having = sql__bool_operand(p, having, q->having, "HAVING")))
                return p->err->code;
        }
        /* MAP: [group keys..., aggregate arguments...] */
        int nargs = 0;
        for (int i = 0; i < ag.ncalls; i++)
            nargs += (ag.calls[i].arg ? 1 : 0) + (ag.calls[i].ord ? ag.calls[i].spec.nord : 0);
        Expr **pre = arena_alloc(p->a, sizeof(Expr *) * (size_t)(ag.ngroup + nargs + 1));
        for (int i = 0; i < ag.ngroup; i++)
            pre[i] = ag.group[i];
        int np = ag.ngroup;
        CNode *an;
        AggSpec *specs = arena_alloc(p->a, sizeof(AggSpec) * (size_t)(ag.ncalls + 1));
        bool linear = true, gsets = q->ngsets > 0;
        for (int i = 0; i < ag.ncalls; i++) {
            specs[i] = ag.calls[i].spec;
            if (ag.calls[i].arg) {
                specs[i].col = np;
                pre[np++] = ag.calls[i].arg;
            }
            if (ag.calls[i].ord) { /* STRING_AGG(... ORDER BY ...) and the like */
                specs[i].ord = arena_alloc(p->a, sizeof(int) * (size_t)specs[i].nord);
                for (int k = 0; k < specs[i].nord; k++) {
                    specs[i].ord[k] = np;
                    pre[np++] = ag.calls[i].ord[k];
                }
            }
            if (specs[i].kind >= AGG_MIN || specs[i].distinct) /* MIN, MAX, agg_state.c */
                linear = false;
            gsets = gsets || ag.calls[i].grouping;
        }
        node = sql__add_map(p, node, filter, pre, np);
        filter = NULL;
        if (gsets) { /* GROUPING SETS, ROLLUP, CUBE, GROUPING() */
            if ((node = sql__plan_gsets(p, q, &ag, keyof, specs, node)) < 0)
                return p->err->code;
            filter = having;
        } else {
            an = sql__add_node(p, OPK_AGG, 1, ag.ngroup + ag.ncalls);
            an->in[0] = node;
            an->ngroup = ag.ngroup;
            an->aggs = specs;
            an->naggs = ag.ncalls;
            an->linear = linear;
            an->global = ag.ngroup == 0;
            for (int i = 0; i < ag.ngroup; i++)
                an->types[i] = ag.group[i]->t;
            for (int i = 0; i < ag.ncalls; i++)
                an->types[ag.ngroup + i] = specs[i].out_t;
            node = an->id;
            filter = having;
        }
    }
    /* window functions, after WHERE/GROUP BY/HAVING (plan_window.c) */
    int nh0 = ord ? ord->nhidden : 0;
    if (qual)
        proj[n + nh0] = qual; /* remapped with the select list, then taken back */
    if ((node = sql__plan_windows(p, win, node, &filter, proj, n + nh0 + (qual != NULL))) < 0)
        return p->err->code;
    if (qual) /* QUALIFY filters the rows the windows computed */
        filter = filter ? sql__nary_bool(p, E_AND, filter, qual) : qual;
    /* identity projection with no filter needs no node */
    int nh = ord ? ord->nhidden : 0;
    bool ident = !filter && n + nh == p->c->nodes[node]->ncol;
    for (int i = 0; i < n + nh && ident; i++)
        ident = proj[i]->k == E_COL && proj[i]->col == i &&
                sql__same_repr(proj[i]->t, p->c->nodes[node]->types[i]);
    if (!ident)
        node = sql__add_map(p, node, filter, proj, n + nh);
    if (q->distinct) {
        CNode *d = sql__add_node(p, OPK_DISTINCT, 1, n);
        d->in[0] = node;
        memcpy(d->types, p->c->nodes[node]->types, sizeof(SqlType) * (size_t)n);
        node = d->id;
    }
    out->node = node;
    out->s = scope_new(p, n);
    for (int i = 0; i < n; i++) {
        out->s.c[i].name = names[i];
        out->s.c[i].t = p->c->nodes[node]->types[i];
    }
    return 0;
}

/* ---- queries ---- */

/* Plan a query. ord (may be NULL) receives its ORDER BY resolved to output
   columns; hidden ORDER BY columns then trail the output (ord->nhidden). */
static int plan_query_body(P *p, Select *q, PRel *out, OrderOut *ord)
{
    if (q->nctes && !sql__ctes_active(p, q))
        return sql__plan_with(p, q, out, ord);
    if (ord)
        memset(ord, 0, sizeof(*ord));
    bool want = ord && q->norder > 0;
    /* ORDER BY without LIMIT does not change a view's contents (a view is a
       set); unless a reader presents the rows in order it is ignored, as
       Feldera does. */
    if (sql__plan_core(p, q, out, want && !q->next ? q : NULL, want && !q->next ? ord : NULL))
        return p->err->code;
    if (q->next && sql__plan_setops(p, q, out)) /* plan_set.c */
        return p->err->code;
    if (want && q->next) {
        const char **names = arena_alloc(p->a, sizeof(char *) * (size_t)(out->s.n + 1));
        for (int i = 0; i < out->s.n; i++)
            names[i] = out->s.c[i].name;
        if (resolve_order(p, q, NULL, NULL, out->s.n, names, false, ord))
            return p->err->code;
    }
    return 0;
}

/* Every query, subquery and common table expression is planned through
   here: their nesting (which WITH lists make without any parentheses,
   c1 AS (... c0 ...), c2 AS (... c1 ...)) is bounded by
   SQL_MAX_QUERY_NESTING, the planner's recursion by it. */
int sql__plan_query_ord(P *p, Select *q, PRel *out, OrderOut *ord)
{
    if (budget_stop()) /* a /query past its bounds (base/budget.h) */
        return budget_error(p->err);
    if (p->depth >= SQL_MAX_QUERY_NESTING)
        return perr(p, SL_ESEMANTIC, q->line, q->col,
                    "queries nested too deeply (limit %d subqueries or common table "
                    "expressions within one another)",
                    SQL_MAX_QUERY_NESTING);
    p->depth++;
    int rc = plan_query_body(p, q, out, ord);
    p->depth--;
    return rc;
}

int sql__plan_from_item(P *p, FromItem *f, PRel *out, PushDown *cand)
{
    Select q = {0};
    FromItem *one[1] = {f};
    Expr *resid = NULL;
    Ast **subq = NULL;
    int nsubq = 0;
    q.line = f->line;
    q.col = f->col;
    q.from = one;
    q.nfrom = 1;
    if (plan_from(p, &q, out, &resid, &subq, &nsubq, cand))
        return p->err->code;
    if (nsubq)
        return perr(p, SL_EUNSUPPORTED, subq[0]->line, subq[0]->col,
                    "subqueries in the ON clause of a join inside an outer join are not "
                    "supported yet");
    if (resid) {
        CNode *src = p->c->nodes[out->node];
        out->node = sql__add_map(p, out->node, resid, sql__identity_proj(p, src, 0), src->ncol);
    }
    return 0;
}

int sql__plan_query(P *p, Select *q, PRel *out)
{
    if (q->limit || q->offset) /* top-k (plan_window.c) */
        return sql__plan_limited(p, q, out);
    return sql__plan_query_ord(p, q, out, NULL);
}
