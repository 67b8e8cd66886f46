/*
 * sql/plan.c - the planner: lowers each statement of the AST (parser.c)
 * into circuit nodes (circuit.h), using the binder (bind.c) for names and
 * types of expressions.
 *
 * Tables become OPK_SOURCE nodes (plus OPK_UPSERT with a PRIMARY KEY). A
 * view's query becomes, block by block:
 *   FROM items joined left-deep in the order written (single-item WHERE/ON
 *   conjuncts pushed below the joins as filters, equality conjuncts between
 *   the joined prefix and the next item used as join keys, the rest
 *   filtered after the last join; OUTER, NATURAL and USING joins are
 *   items planned as a unit by plan_join.c) -> GROUP BY/aggregates (a MAP
 *   computing group keys and aggregate arguments, then OPK_AGG) -> HAVING
 *   and the select list (one MAP) -> DISTINCT -> set operations
 *   (plan_join.c). WITH queries and VALUES are planned by plan_join.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/budget.h"
#include "../base/mem.h"
#include "../circuit/circuit.h"
#include "ast.h"
#include "sql_int.h"

/* ---- nodes ---- */

static CNode *add_node(P *p, OpKind k, int nin, int ncol)
{
    Circuit *c = p->c;
    if (c->nnodes == p->cap_nodes) {
        p->cap_nodes = p->cap_nodes ? p->cap_nodes * 2 : 32;
        CNode **v = arena_alloc(p->a, sizeof(CNode *) * (size_t)p->cap_nodes);
        if (c->nnodes)
            memcpy(v, c->nodes, sizeof(CNode *) * (size_t)c->nnodes);
        c->nodes = v;
    }
    CNode *n = arena_zalloc(p->a, sizeof(*n));
    n->id = c->nnodes;
    n->k = k;
    n->nin = nin;
    n->in = arena_zalloc(p->a, sizeof(int) * (size_t)(nin ? nin : 1));
    n->ncol = ncol;
    n->types = arena_zalloc(p->a, sizeof(SqlType) * (size_t)(ncol ? ncol : 1));
    n->rel = -1;
    n->owner = p->owner;
    c->nodes[c->nnodes++] = n;
    return n;
}

static Scope scope_new(P *p, int n)
{
    Scope s = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(n ? n : 1)), n};
    return s;
}

/* ---- relations ---- */

static int find_rel(P *p, const char *name)
{
    return circuit_find_rel(p->c, name);
}

static int plan_query(P *p, Select *q, PRel *out);

static Expr *shift_cols(P *p, Expr *e, int delta)
{
    Expr *c = arena_alloc(p->a, sizeof(*c));
    *c = *e;
    if (e->k == E_COL)
        c->col += delta;
    if (e->na) {
        c->a = arena_alloc(p->a, sizeof(Expr *) * (size_t)e->na);
        for (int i = 0; i < e->na; i++)
            c->a[i] = shift_cols(p, e->a[i], delta);
    }
    return c;
}

/* Bitmask-free column range check: does e only reference [lo, hi)? */
static bool refs_within(const Expr *e, int lo, int hi)
{
    if (e->k == E_COL && (e->col < lo || e->col >= hi))
        return false;
    for (int i = 0; i < e->na; i++)
        if (!refs_within(e->a[i], lo, hi))
            return false;
    return true;
}

static bool refs_any(const Expr *e)
{
    if (e->k == E_COL)
        return true;
    for (int i = 0; i < e->na; i++)
        if (refs_any(e->a[i]))
            return true;
    return false;
}

static int map_node(P *p, int in, Expr *filter, Expr **proj, int nproj)
{
    CNode *n = add_node(p, OPK_MAP, 1, nproj);
    n->in[0] = in;
    n->filter = filter;
    n->proj = proj;
    for (int i = 0; i < nproj; i++)
        n->types[i] = proj[i]->t;
    return n->id;
}

static Expr **identity_proj(P *p, const CNode *src, int extra)
{
    Expr **v = arena_alloc(p->a, sizeof(Expr *) * (size_t)(src->ncol + extra + 1));
    for (int i = 0; i < src->ncol; i++)
        v[i] = expr_col(p->a, i, src->types[i]);
    return v;
}

static Expr *and_all(P *p, Expr **v, int n)
{
    return sql__and_all(p, v, n);
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
    if (f->k == F_NODE) { /* planned already (plan_subq.c) */
        out->node = f->node;
        out->s = *(Scope *)f->scope;
        return 0;
    }
    if (f->k == F_SUBQUERY) {
        if (plan_query(p, f->sub, out))
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
    int r = find_rel(p, f->name);
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

/* Flatten the FROM clause into leaves; ON conditions go to *conds. */
static int collect_from(P *p, FromItem *f, FromItem ***leaves, int *nleaves, Ast ***conds,
                        int *nconds)
{
    /* outer, NATURAL, USING and aliased joins are units (plan_join.c) */
    if (f->k != F_JOIN || f->jk == J_LEFT || f->jk == J_RIGHT || f->jk == J_FULL ||
        f->natural || f->nusing || f->alias) {
        FromItem **v = arena_alloc(p->a, sizeof(FromItem *) * (size_t)(*nleaves + 1));
        if (*nleaves)
            memcpy(v, *leaves, sizeof(FromItem *) * (size_t)*nleaves);
        v[(*nleaves)++] = f;
        *leaves = v;
        return 0;
    }
    if (collect_from(p, f->l, leaves, nleaves, conds, nconds) ||
        collect_from(p, f->r, leaves, nleaves, conds, nconds))
        return p->err->code;
    if (f->on) {
        Ast **v = arena_alloc(p->a, sizeof(Ast *) * (size_t)(*nconds + 1));
        if (*nconds)
            memcpy(v, *conds, sizeof(Ast *) * (size_t)*nconds);
        v[(*nconds)++] = f->on;
        *conds = v;
    }
    return 0;
}

static int count_and(const Ast *x)
{
    return x->k == A_BIN && x->op == OP_AND ? count_and(x->a) + count_and(x->b) : 1;
}

static void fill_and(Ast *x, Ast **v, int *n)
{
    if (x->k == A_BIN && x->op == OP_AND) {
        fill_and(x->a, v, n);
        fill_and(x->b, v, n);
        return;
    }
    v[(*n)++] = x;
}

/* Append x's conjuncts to (*v)[0..*n) (one copy, not one per conjunct). */
static void split_and(P *p, Ast *x, Ast ***v, int *n)
{
    Ast **nv = arena_alloc(p->a, sizeof(Ast *) * (size_t)(*n + count_and(x)));
    if (*n && *v)
        memcpy(nv, *v, sizeof(Ast *) * (size_t)*n);
    fill_and(x, nv, n);
    *v = nv;
}

/* Make key expressions into plain NOT NULL columns of type kt: appends
   computed columns (and filters NULL keys) with a MAP when needed. */
static int join_side(P *p, int node, Expr **keys, int nkeys, const SqlType *kt, int **cols_out)
{
    CNode *src = p->c->nodes[node];
    int *cols = arena_alloc(p->a, sizeof(int) * (size_t)nkeys);
    bool need = false;
    for (int i = 0; i < nkeys; i++) {
        if (keys[i]->k == E_COL && !keys[i]->t.nullable && sql__same_repr(keys[i]->t, kt[i]))
            cols[i] = keys[i]->col;
        else
            need = true;
    }
    if (need) {
        Expr **proj = identity_proj(p, src, nkeys);
        Expr **nn = arena_alloc(p->a, sizeof(Expr *) * (size_t)nkeys);
        int nnn = 0, np = src->ncol;
        for (int i = 0; i < nkeys; i++) {
            if (keys[i]->t.nullable) {
                Expr *t = sql__mk(p, E_ISNOTNULL, type_make(TK_BOOL, false), 1);
                t->a[0] = keys[i];
                nn[nnn++] = t;
            }
            SqlType t = kt[i];
            t.nullable = 0;
            Expr *k = sql__cast_to(p, keys[i], t);
            if (k == keys[i]) { /* same repr, only nullability differs */
                k = arena_alloc(p->a, sizeof(*k));
                *k = *keys[i];
            }
            k->t.nullable = 0;
            proj[np] = k;
            cols[i] = np++;
        }
        node = map_node(p, node, and_all(p, nn, nnn), proj, np);
    }
    *cols_out = cols;
    return node;
}

/* No FROM: one constant row without columns; WHERE filters it. */
static int plan_no_from(P *p, Select *q, PRel *out, Expr **residual, Ast ***subq, int *nsubq)
{
    CNode *k = add_node(p, OPK_CONST, 0, 0);
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

/* Plan the FROM clause and WHERE; *residual is the conjunction of the
   conditions left to filter after the joins (NULL when none); WHERE/ON
   conjuncts containing subqueries are returned unbound in subq[0..nsubq). */
/* Bind WHERE conjunct x over s, or NULL (no error set) when it does not. */
static Expr *try_bind(P *p, Scope *s, Ast *x)
{
    Err tmp = {0}, *orig = p->err;
    AggCtx none = {0};
    BindCtx bc = {s, &none, "WHERE"};
    p->err = &tmp;
    Expr *e = sql__bind(p, &bc, x);
    if (e)
        e = sql__bool_operand(p, e, x, "WHERE");
    p->err = orig;
    return e;
}

static int plan_from(P *p, Select *q, PRel *out, Expr **residual, Ast ***subq, int *nsubq,
                     PushDown *opt)
{
    if (q->nfrom == 0)
        return plan_no_from(p, q, out, residual, subq, nsubq);
    FromItem **leaves = NULL;
    Ast **conds = NULL, **conj = NULL;
    int nleaves = 0, nconds = 0, nconj = 0;
    for (int i = 0; i < q->nfrom; i++)
        if (collect_from(p, q->from[i], &leaves, &nleaves, &conds, &nconds))
            return p->err->code;
    if (q->where)
        split_and(p, q->where, &conj, &nconj);
    for (int i = 0; i < nconds; i++)
        split_and(p, conds[i], &conj, &nconj);
    /* conjuncts with subqueries are left to plan_core (plan_subq.c) */
    int nkeep = 0, nsq = 0;
    for (int i = 0; i < nconj; i++)
        nsq += sql__has_subquery(conj[i]);
    if (nsq) {
        Ast **v = arena_alloc(p->a, sizeof(Ast *) * (size_t)(*nsubq + nsq));
        if (*nsubq)
            memcpy(v, *subq, sizeof(Ast *) * (size_t)*nsubq);
        *subq = v;
    }
    for (int i = 0; i < nconj; i++) {
        if (sql__has_subquery(conj[i]))
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
            if (!used[i] && refs_any(ce[i]) && refs_within(ce[i], lo, hi)) {
                f[nf++] = shift_cols(p, ce[i], -lo);
                used[i] = true;
            }
        if (nf) {
            CNode *src = p->c->nodes[it->r.node];
            it->r.node = map_node(p, it->r.node, and_all(p, f, nf),
                                  identity_proj(p, src, 0), src->ncol);
        }
    }
    /* left-deep joins in FROM order */
    int cur = items[0].r.node;
    int curcols = items[0].r.s.n;
    for (int k = 1; k < nleaves; k++) {
        Item *it = &items[k];
        int lo = it->off, hi = it->off + it->r.s.n;
        Expr **lk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
        Expr **rk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
        SqlType *kt = arena_alloc(p->a, sizeof(SqlType) * (size_t)(nconj + 1));
        int nk = 0;
        for (int i = 0; i < nconj; i++) {
            Expr *e = ce[i];
            if (used[i] || e->k != E_EQ)
                continue;
            Expr *a = e->a[0], *b = e->a[1];
            if (!refs_any(a) || !refs_any(b))
                continue;
            if (refs_within(a, 0, lo) && refs_within(b, lo, hi)) {
                /* a is left, b is right */
            } else if (refs_within(b, 0, lo) && refs_within(a, lo, hi)) {
                Expr *t = a;
                a = b;
                b = t;
            } else
                continue;
            lk[nk] = a;
            rk[nk] = shift_cols(p, b, -lo);
            kt[nk] = a->t; /* sql__compare() already cast both to one type */
            nk++;
            used[i] = true;
        }
        int *lcols, *rcols;
        int lnode = join_side(p, cur, lk, nk, kt, &lcols);
        int rnode = join_side(p, it->r.node, rk, nk, kt, &rcols);
        CNode *ln = p->c->nodes[lnode], *rn = p->c->nodes[rnode];
        CNode *j = add_node(p, OPK_JOIN, 2, ln->ncol + rn->ncol);
        j->in[0] = lnode;
        j->in[1] = rnode;
        j->nkeys = nk;
        j->lkeys = lcols;
        j->rkeys = rcols;
        memcpy(j->types, ln->types, sizeof(SqlType) * (size_t)ln->ncol);
        memcpy(j->types + ln->ncol, rn->types, sizeof(SqlType) * (size_t)rn->ncol);
        cur = j->id;
        if (ln->ncol != curcols || rn->ncol != it->r.s.n) {
            /* drop computed key columns */
            Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(curcols + it->r.s.n));
            for (int i = 0; i < curcols; i++)
                proj[i] = expr_col(p->a, i, ln->types[i]);
            for (int i = 0; i < it->r.s.n; i++)
                proj[curcols + i] = expr_col(p->a, ln->ncol + i, rn->types[i]);
            cur = map_node(p, cur, NULL, proj, curcols + it->r.s.n);
        }
        curcols += it->r.s.n;
    }
    int nres = 0;
    Expr **rese = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
    for (int i = 0; i < nconj; i++)
        if (!used[i])
            rese[nres++] = ce[i];
    out->node = cur;
    out->s = all;
    *residual = and_all(p, rese, nres);
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

static bool has_agg(Ast *x)
{
    if (!x)
        return false;
    if (x->k == A_FUNC && x->over) /* a window function, maybe over aggregates */
        return sql__window_has_agg(x);
    if (x->k == A_FUNC && sql__is_agg_name(x->name))
        return true;
    if (has_agg(x->a) || has_agg(x->b) || has_agg(x->c))
        return true;
    for (int i = 0; i < x->args.n; i++)
        if (has_agg(x->args.v[i]))
            return true;
    return false;
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

static int plan_core(P *p, Select *q, PRel *out, Select *oq, OrderOut *ord)
{
    if (q->nvalues) { /* VALUES (plan_join.c); ORDER BY by name or position */
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

    bool agg = q->group.n > 0 || has_agg(q->having);
    for (int i = 0; i < n && !agg; i++)
        agg = has_agg(exprs[i]);

    /* subqueries in WHERE and (without aggregation) in the select list:
       their values become hidden columns of the FROM relation */
    {
        Ast **sx = arena_alloc(p->a, sizeof(Ast *) * (size_t)(nsubq + n + 1));
        int nsx = 0;
        for (int i = 0; i < nsubq; i++)
            sx[nsx++] = subq[i];
        for (int i = 0; i < n && !agg; i++)
            if (exprs[i] && sql__has_subquery(exprs[i]))
                sx[nsx++] = exprs[i];
        if (nsx && sql__plan_subqueries(p, &from, sx, nsx))
            return p->err->code;
        for (int i = 0; i < nsubq; i++) {
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
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + nord + 1));
    Expr *filter = resid;
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
        if (ord) {
            AggCtx none = {0};
            none.win = win;
            BindCtx bc = {&from.s, &none, "ORDER BY"};
            if (resolve_order(p, oq, &bc, proj, n, names, q->distinct, ord))
                return p->err->code;
        }
        if (q->having)
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
            }
            if (!(ag.group[i] = sql__bind(p, &bc, g)))
                return p->err->code;
            if (ag.group[i]->t.kind == TK_NULL)
                ag.group[i] = sql__cast_to(p, ag.group[i], type_make(TK_INT, true));
        }
        ag.allowed = true;
        ag.win = win;
        /* the post-aggregation scope: group columns, then aggregates */
        for (int i = 0; i < n; i++) {
            BindCtx bc = {&from.s, &ag, "the select list"};
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
        if (ord) {
            BindCtx bc = {&from.s, &ag, "ORDER BY"};
            if (resolve_order(p, oq, &bc, proj, n, names, q->distinct, ord))
                return p->err->code;
        }
        Expr *having = NULL;
        ag.win = NULL; /* no window functions in HAVING */
        if (q->having) {
            BindCtx bc = {&from.s, &ag, "HAVING"};
            if (!(having = sql__bind(p, &bc, q->having)) ||
                !(having = sql__bool_operand(p, having, q->having, "HAVING")))
                return p->err->code;
        }
        /* MAP: [group keys..., aggregate arguments...] */
        int nargs = 0;
        for (int i = 0; i < ag.ncalls; i++)
            nargs += ag.calls[i].arg ? 1 : 0;
        Expr **pre = arena_alloc(p->a, sizeof(Expr *) * (size_t)(ag.ngroup + nargs + 1));
        for (int i = 0; i < ag.ngroup; i++)
            pre[i] = ag.group[i];
        int np = ag.ngroup;
        CNode *an;
        AggSpec *specs = arena_alloc(p->a, sizeof(AggSpec) * (size_t)(ag.ncalls + 1));
        bool linear = true;
        for (int i = 0; i < ag.ncalls; i++) {
            specs[i] = ag.calls[i].spec;
            if (ag.calls[i].arg) {
                specs[i].col = np;
                pre[np++] = ag.calls[i].arg;
            }
            if (specs[i].kind == AGG_MIN || specs[i].kind == AGG_MAX || specs[i].distinct)
                linear = false;
        }
        node = map_node(p, node, filter, pre, np);
        filter = NULL;
        an = add_node(p, OPK_AGG, 1, ag.ngroup + ag.ncalls);
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
    /* window functions, after WHERE/GROUP BY/HAVING (plan_window.c) */
    int nh0 = ord ? ord->nhidden : 0;
    if ((node = sql__plan_windows(p, win, node, &filter, proj, n + nh0)) < 0)
        return p->err->code;
    /* identity projection with no filter needs no node */
    int nh = ord ? ord->nhidden : 0;
    bool ident = !filter && n + nh == p->c->nodes[node]->ncol;
    for (int i = 0; i < n + nh && ident; i++)
        ident = proj[i]->k == E_COL && proj[i]->col == i &&
                sql__same_repr(proj[i]->t, p->c->nodes[node]->types[i]);
    if (!ident)
        node = map_node(p, node, filter, proj, n + nh);
    if (q->distinct) {
        CNode *d = add_node(p, OPK_DISTINCT, 1, n);
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

/* Cast the columns of r to types t (when they differ). */
static int conform(P *p, PRel *r, const SqlType *t)
{
    CNode *src = p->c->nodes[r->node];
    bool need = false;
    for (int i = 0; i < src->ncol; i++)
        if (!sql__same_repr(src->types[i], t[i]) || src->types[i].nullable != t[i].nullable)
            need = true;
    if (!need)
        return r->node;
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)src->ncol);
    for (int i = 0; i < src->ncol; i++) {
        proj[i] = sql__cast_to(p, expr_col(p->a, i, src->types[i]), t[i]);
        if (proj[i]->k == E_COL) {
            Expr *c = expr_col(p->a, i, t[i]);
            proj[i] = c;
        }
        proj[i]->t.nullable = t[i].nullable;
    }
    return map_node(p, r->node, NULL, proj, src->ncol);
}

/* A LIMIT/OFFSET operand: a non-negative integer literal. */
static int limit_value(P *p, Ast *e, const char *what, int64_t *out)
{
    if (!e) {
        *out = -1;
        return 0;
    }
    if (e->k != A_INT)
        return perr(p, SL_EUNSUPPORTED, e->line, e->col,
                    "%s must be an integer literal (expressions are not supported yet)", what);
    *out = strtoll(e->str, NULL, 10);
    return 0;
}

/* Plan a query. ord (may be NULL) receives its ORDER BY resolved to output
   columns; hidden ORDER BY columns then trail the output (ord->nhidden). */
static int plan_query_body(P *p, Select *q, PRel *out, OrderOut *ord);

/* Every query, subquery and common table expression is planned through
   here: their nesting (which WITH lists make without any parentheses,
   c1 AS (... c0 ...), c2 AS (... c1 ...)) is bounded by
   SQL_MAX_QUERY_NESTING, the planner's recursion by it. */
static int plan_query_ord(P *p, Select *q, PRel *out, OrderOut *ord)
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
    if (plan_core(p, q, out, want && !q->next ? q : NULL, want && !q->next ? ord : NULL))
        return p->err->code;
    for (Select *s = q; s->next; s = s->next) {
        PRel r;
        SetOp op = s->setop;
        if (plan_core(p, s->next, &r, NULL, NULL))
            return p->err->code;
        if (r.s.n != out->s.n)
            return perr(p, SL_ESEMANTIC, s->next->line, s->next->col,
                        "each %s query must have the same number of columns (%d vs %d)",
                        sql__setop_name(op), out->s.n, r.s.n);
        SqlType *t = arena_alloc(p->a, sizeof(SqlType) * (size_t)r.s.n);
        for (int i = 0; i < r.s.n; i++) {
            if (!sql__common_type(out->s.c[i].t, r.s.c[i].t, &t[i]))
                return perr(p, SL_ESEMANTIC, s->next->line, s->next->col,
                            "%s column %d has incompatible types %s and %s",
                            sql__setop_name(op), i + 1, tname(out->s.c[i].t),
                            tname(r.s.c[i].t));
            if (t[i].kind == TK_NULL)
                t[i] = type_make(TK_INT, true);
        }
        int a = conform(p, out, t), b = conform(p, &r, t), node;
        if (sql__plan_setop(p, op, a, b, r.s.n, t, &node)) /* plan_join.c */
            return p->err->code;
        out->node = node;
        for (int i = 0; i < r.s.n; i++)
            out->s.c[i].t = t[i];
    }
    if (want && q->next) {
        const char **names = arena_alloc(p->a, sizeof(char *) * (size_t)(out->s.n + 1));
        for (int i = 0; i < out->s.n; i++)
            names[i] = out->s.c[i].name;
        if (resolve_order(p, q, NULL, NULL, out->s.n, names, false, ord))
            return p->err->code;
    }
    return 0;
}

int sql__plan_query(P *p, Select *q, PRel *out) { return plan_query(p, q, out); }
int sql__plan_query_ord(P *p, Select *q, PRel *out, OrderOut *ord)
{
    return plan_query_ord(p, q, out, ord);
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
        out->node = map_node(p, out->node, resid, identity_proj(p, src, 0), src->ncol);
    }
    return 0;
}
int sql__add_map(P *p, int in, Expr *filter, Expr **proj, int nproj)
{
    return map_node(p, in, filter, proj, nproj);
}
CNode *sql__add_node(P *p, OpKind k, int nin, int ncol) { return add_node(p, k, nin, ncol); }
Expr **sql__identity_proj(P *p, const CNode *src, int extra) { return identity_proj(p, src, extra); }
int sql__join_side(P *p, int node, Expr **keys, int nkeys, const SqlType *kt, int **cols_out)
{
    return join_side(p, node, keys, nkeys, kt, cols_out);
}

static int plan_query(P *p, Select *q, PRel *out)
{
    if (q->limit || q->offset) /* top-k (plan_window.c) */
        return sql__plan_limited(p, q, out);
    return plan_query_ord(p, q, out, NULL);
}

/* ---- statements ---- */

static int cmp_name_index(const void *a, const void *b, void *arg)
{
    char *const *names = arg;
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcasecmp(names[x], names[y]);
    return c ? c : (x > y) - (x < y);
}

/* The first i (in order) such that names[i] equals an earlier name (case
   folded), or -1: sorted, in O(n log n) (a select list may be long). */
static int first_repeated_name(P *p, char *const *names, int n)
{
    int *ix = arena_alloc(p->a, sizeof(int) * (size_t)(n + 1)), first = -1;
    for (int i = 0; i < n; i++)
        ix[i] = i;
    qsort_r(ix, (size_t)n, sizeof(int), cmp_name_index, (void *)names);
    for (int k = 1; k < n; k++) /* ix[k] repeats ix[k-1]'s name at a later index */
        if (!strcasecmp(names[ix[k]], names[ix[k - 1]]) && (first < 0 || ix[k] < first))
            first = ix[k];
    return first;
}

static Relation *add_rel(P *p, const char *name, int line, int col)
{
    Circuit *c = p->c;
    if (circuit_find_rel(c, name) >= 0) {
        perr(p, SL_ESEMANTIC, line, col, "a table or view named \"%s\" already exists", name);
        return NULL;
    }
    if (c->nrels == p->cap_rels) {
        p->cap_rels = p->cap_rels ? p->cap_rels * 2 : 16;
        Relation *v = arena_alloc(p->a, sizeof(Relation) * (size_t)p->cap_rels);
        if (c->nrels)
            memcpy(v, c->rels, sizeof(Relation) * (size_t)c->nrels);
        c->rels = v;
    }
    Relation *r = &c->rels[c->nrels++];
    memset(r, 0, sizeof(*r));
    r->name = (char *)name;
    r->limit = r->offset = -1;
    r->line = line;
    r->col = col;
    r->sink = -1;
    return r;
}

/* Position in the SQL text of byte `off` inside a property value. */
static void value_pos(const Property *pr, size_t off, int *line, int *col)
{
    *line = pr->vline;
    *col = pr->vcol;
    for (size_t i = 0; i < off && pr->value[i]; i++) {
        if (pr->value[i] == '\n') {
            (*line)++;
            *col = 1;
        } else
            (*col)++;
    }
}

static int apply_props(P *p, Stmt *s, Relation *r)
{
    for (int i = 0; i < s->nprops; i++) {
        Property *pr = &s->props[i];
        if (!strcasecmp(pr->key, "connectors")) {
            cJSON *j = cJSON_ParseWithOpts(pr->value, NULL, 1);
            if (!j) {
                const char *e = cJSON_GetErrorPtr();
                size_t off = e && e >= pr->value ? (size_t)(e - pr->value) : 0;
                int line, col;
                value_pos(pr, off, &line, &col);
                return perr(p, SL_ECONFIG, line, col,
                            "invalid JSON in 'connectors' of %s near \"%.20s\"", r->name,
                            pr->value + off);
            }
            if (!cJSON_IsArray(j)) {
                cJSON_Delete(j);
                return perr(p, SL_ECONFIG, pr->vline, pr->vcol,
                            "'connectors' of %s must be a JSON array", r->name);
            }
            if (r->connectors)
                cJSON_Delete(r->connectors);
            r->connectors = j;
            r->conn_line = pr->vline;
            r->conn_col = pr->vcol;
        } else if (!strcasecmp(pr->key, "materialized")) {
            if (strcasecmp(pr->value, "true") && strcasecmp(pr->value, "false"))
                return perr(p, SL_ECONFIG, pr->vline, pr->vcol,
                            "'materialized' must be 'true' or 'false', not '%s'", pr->value);
            r->materialized = r->materialized || !strcasecmp(pr->value, "true");
        } else if (!strcasecmp(pr->key, "append_only")) {
            /* a promise about the input; accepted, no optimisation uses it yet */
        } else {
            return perr(p, SL_ECONFIG, pr->line, pr->col,
                        "unknown property '%s' on %s (known: connectors, materialized, "
                        "append_only)", pr->key, r->name);
        }
    }
    return 0;
}

static void add_sink(P *p, Relation *r, int rel_index)
{
    CNode *src = p->c->nodes[r->node];
    CNode *s = add_node(p, OPK_SINK, 1, src->ncol);
    s->in[0] = r->node;
    s->rel = rel_index;
    s->label = r->name;
    memcpy(s->types, src->types, sizeof(SqlType) * (size_t)src->ncol);
    r->sink = s->id;
}

static int plan_table(P *p, Stmt *s)
{
    Relation *r = add_rel(p, s->name, s->name_line, s->name_col);
    if (!r)
        return p->err->code;
    r->is_table = true;
    r->ncol = s->ncols;
    r->colnames = arena_alloc(p->a, sizeof(char *) * (size_t)s->ncols);
    r->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)s->ncols);
    for (int i = 0; i < s->ncols; i++) {
        for (int j = 0; j < i; j++)
            if (!strcasecmp(s->cols[i].name, s->cols[j].name))
                return perr(p, SL_ESEMANTIC, s->cols[i].line, s->cols[i].col,
                            "column \"%s\" specified more than once", s->cols[i].name);
        r->colnames[i] = s->cols[i].name;
        r->types[i] = s->cols[i].type;
    }
    if (s->npk) {
        r->pk = arena_alloc(p->a, sizeof(int) * (size_t)s->npk);
        r->npk = s->npk;
        for (int k = 0; k < s->npk; k++) {
            int found = -1;
            for (int i = 0; i < s->ncols; i++)
                if (!strcasecmp(s->cols[i].name, s->pk[k]))
                    found = i;
            if (found < 0)
                return perr(p, SL_ESEMANTIC, s->line, s->col,
                            "PRIMARY KEY column \"%s\" is not a column of %s", s->pk[k], s->name);
            r->pk[k] = found;
            r->types[found].nullable = 0; /* key columns are NOT NULL */
        }
    }
    if (apply_props(p, s, r))
        return p->err->code;
    CNode *n = add_node(p, OPK_SOURCE, 0, r->ncol);
    n->rel = (int)(r - p->c->rels);
    n->label = r->name;
    memcpy(n->types, r->types, sizeof(SqlType) * (size_t)r->ncol);
    r->node = n->id;
    if (r->npk) {
        CNode *u = add_node(p, OPK_UPSERT, 1, r->ncol);
        u->in[0] = n->id;
        u->rel = n->rel;
        u->pk = r->pk;
        u->npk = r->npk;
        u->label = r->name;
        memcpy(u->types, r->types, sizeof(SqlType) * (size_t)r->ncol);
        r->node = u->id;
    }
    if (r->materialized)
        add_sink(p, r, n->rel);
    return 0;
}

static int plan_view(P *p, Stmt *s)
{
    PRel q;
    OrderOut ord;
    int64_t limit = -1, offset = -1;
    Select *sq = s->query;
    bool present = p->flags & CC_PRESENT;
    if (limit_value(p, sq->limit, "LIMIT", &limit) || limit_value(p, sq->offset, "OFFSET", &offset))
        return p->err->code;
    bool lim = sq->limit || sq->offset;
    int first_node = p->c->nnodes;
    if (plan_query_ord(p, sq, &q, present || lim ? &ord : NULL))
        return p->err->code;
    /* ORDER BY ... LIMIT: a top-k node (plan_window.c) */
    if (lim && sql__plan_topk(p, &q, &ord, limit, offset, present))
        return p->err->code;
    if (!present)
        limit = offset = -1;
    Relation *r = add_rel(p, s->name, s->name_line, s->name_col);
    if (!r)
        return p->err->code;
    int idx = (int)(r - p->c->rels);
    r->materialized = s->materialized;
    r->ncol = q.s.n;
    r->node = q.node;
    if (s->ncol_aliases && s->ncol_aliases != q.s.n)
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "view %s names %d columns but its query has %d", s->name, s->ncol_aliases,
                    q.s.n);
    r->limit = limit;
    r->offset = offset;
    if (present) {
        r->norder = ord.n;
        r->order_col = ord.col;
        r->order_desc = ord.desc;
        r->order_nulls_first = ord.nulls_first;
        r->nhidden = ord.nhidden;
        r->ncol += ord.nhidden;
    }
    r->colnames = arena_alloc(p->a, sizeof(char *) * (size_t)(r->ncol + 1));
    r->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)(r->ncol + 1));
    for (int i = q.s.n; i < r->ncol; i++) {
        char *b = arena_alloc(p->a, 32);
        snprintf(b, 32, "$order%d", i - q.s.n + 1);
        r->colnames[i] = b;
        r->types[i] = p->c->nodes[q.node]->types[i];
    }
    for (int i = 0; i < q.s.n; i++) {
        r->colnames[i] = s->ncol_aliases ? s->col_aliases[i] : (char *)q.s.c[i].name;
        r->types[i] = q.s.c[i].t;
    }
    int dup = present ? -1 : first_repeated_name(p, r->colnames, q.s.n); /* a query's
                                                          result may repeat names */
    if (dup >= 0)
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "view %s has two columns named \"%s\"; give one an alias", s->name,
                    r->colnames[dup]);
    if (apply_props(p, s, r))
        return p->err->code;
    /* every view gets a sink: it counts the view's changes (stats), feeds
       its output connectors and, when materialized, keeps its contents */
    add_sink(p, r, idx);
    sql__topk_rewrite(p, first_node); /* rank <= k over a window: top-k */
    return 0;
}

int circuit_find_rel(const Circuit *c, const char *name)
{
    for (int i = 0; i < c->nrels; i++)
        if (!strcasecmp(c->rels[i].name, name))
            return i;
    return -1;
}

static int declare_table(P *p, const TableDecl *d)
{
    Relation *r = add_rel(p, arena_strndup(p->a, d->name, strlen(d->name)), 1, 1);
    if (!r)
        return p->err->code;
    r->is_table = true;
    r->ncol = d->ncol;
    r->limit = r->offset = -1;
    r->colnames = arena_alloc(p->a, sizeof(char *) * (size_t)(d->ncol + 1));
    r->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)(d->ncol + 1));
    for (int i = 0; i < d->ncol; i++) {
        r->colnames[i] = arena_strndup(p->a, d->colnames[i], strlen(d->colnames[i]));
        r->types[i] = d->types[i];
    }
    CNode *n = add_node(p, OPK_SOURCE, 0, r->ncol);
    n->rel = (int)(r - p->c->rels);
    n->label = r->name;
    memcpy(n->types, r->types, sizeof(SqlType) * (size_t)r->ncol);
    r->node = n->id;
    return 0;
}

int circuit_compile(const char *sql, Circuit **out, Err *err)
{
    return circuit_compile_with(sql, NULL, 0, 0, out, err);
}

int circuit_compile_with(const char *sql, const TableDecl *decl, int ndecl, int flags,
                         Circuit **out, Err *err)
{
    Err local = {0};
    Program *prog;
    Circuit *c = sl_calloc(1, sizeof(*c));
    c->arena = arena_new(64 * 1024);
    P p = {c->arena, c, err ? err : &local, 0, 0, 0, flags, NULL, 0, 0};
    for (int i = 0; i < ndecl; i++) {
        p.owner = c->nrels;
        if (declare_table(&p, &decl[i]))
            goto out_fail;
    }
    if (sql_parse(sql, c->arena, &prog, p.err))
        goto out_fail;
    if (prog->n == 0) {
        err_setpos(p.err, SL_ESEMANTIC, 1, 1, "the program is empty: no CREATE TABLE or VIEW");
        goto out_fail;
    }
    for (int i = 0; i < prog->n; i++) {
        Stmt *s = prog->stmts[i];
        p.owner = c->nrels; /* the relation this statement adds */
        if ((s->k == S_CREATE_TABLE ? plan_table(&p, s) : plan_view(&p, s)))
            goto out_fail;
    }
    *out = c;
    return 0;
out_fail:
    circuit_free(c);
    return p.err->code;
}

void circuit_free(Circuit *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nrels; i++)
        if (c->rels[i].connectors)
            cJSON_Delete(c->rels[i].connectors);
    arena_free(c->arena);
    sl_free(c);
}
