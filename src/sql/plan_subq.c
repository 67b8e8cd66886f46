/*
 * sql/plan_subq.c - subqueries in expressions: scalar `(SELECT ...)`,
 * `EXISTS (SELECT ...)` and `x [NOT] IN (SELECT ...)`.
 *
 * An incremental engine cannot run a subquery per row, so each subquery
 * expression becomes a hidden column of the relation it is evaluated over
 * (the FROM relation R of the query block), computed with joins and
 * aggregates that the circuit maintains like any other:
 *
 *   scalar:  G = global aggregate of S: COUNT(*) c, MIN(v) m (one row,
 *            always); R x G; value = m, and an error if c > 1.
 *   EXISTS:  G = COUNT(*) c of S; R x G; value = c > 0.
 *   IN:      Sd = DISTINCT of S's non-NULL values; k = x (cast to the
 *            common type); M = R |x|_{k = v} Sd (each R row matches at most
 *            once: Sd is a set); the unmatched rows are R - M; R' = M with
 *            TRUE + unmatched with FALSE; R' x G with G = COUNT(*) c,
 *            COUNT(v) cv of S; value (SQL's three-valued IN) =
 *              matched -> TRUE; c = 0 -> FALSE; k IS NULL -> NULL;
 *              c > cv (S has a NULL) -> NULL; else FALSE.
 *   (a, b) IN:  S of as many columns: see row_in (a cross join of the
 *            distinct left rows with S's distinct rows).
 *
 * The subquery is planned on its own first; if it refers to columns of the
 * outer query (a correlated subquery) planning fails on the unknown name
 * and the message says correlated subqueries are not supported yet.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sql_int.h"

static bool is_subquery(const Ast *x)
{
    return x->k == A_SUBQUERY || x->k == A_EXISTS || (x->k == A_IN && x->sub);
}

bool sql__has_subquery(const Ast *x) { return sql__ast_any(x, is_subquery); }

static Expr *mk2(P *p, ExprKind k, SqlType t, Expr *a, Expr *b)
{
    Expr *e = sql__mk(p, k, t, b ? 2 : 1);
    e->a[0] = a;
    if (b)
        e->a[1] = b;
    return e;
}

static Expr *const_i(P *p, int64_t v) { return expr_const_i64(p->a, type_make(TK_BIGINT, false), v); }
static Expr *const_b(P *p, bool v) { return expr_const_i64(p->a, type_make(TK_BOOL, false), v); }

/* R x G (a cross join with a one-row relation): R's columns, then G's. */
static int cross(P *p, int r, int g) { return sql__join(p, r, g, NULL, NULL, 0); }

/* Aggregate over node s grouped by its first ngroup columns: the listed
   aggregates (of columns cols[i]). Without groups: one row, always. */
static int agg_node(P *p, int s, int ngroup, const AggKind *kinds, const int *cols, int nk)
{
    CNode *src = p->c->nodes[s];
    AggSpec *sp = arena_zalloc(p->a, sizeof(AggSpec) * (size_t)(nk + 1));
    CNode *a = sql__add_node(p, OPK_AGG, 1, ngroup + nk);
    a->in[0] = s;
    a->ngroup = ngroup;
    a->global = ngroup == 0;
    a->linear = true;
    memcpy(a->types, src->types, sizeof(SqlType) * (size_t)ngroup);
    for (int i = 0; i < nk; i++) {
        int col = cols ? cols[i] : 0;
        sp[i].kind = kinds[i];
        sp[i].col = kinds[i] == AGG_COUNT_STAR ? 0 : col;
        sp[i].in_t = kinds[i] == AGG_COUNT_STAR ? type_make(TK_BIGINT, false) : src->types[col];
        if (kinds[i] == AGG_MIN || kinds[i] == AGG_MAX) {
            sp[i].out_t = src->types[col];
            sp[i].out_t.nullable = 1;
            a->linear = false;
        } else
            sp[i].out_t = type_make(TK_BIGINT, false);
        a->types[ngroup + i] = sp[i].out_t;
    }
    a->aggs = sp;
    a->naggs = nk;
    return a->id;
}

static int global_agg(P *p, int s, const AggKind *kinds, int nk, int col)
{
    int cols[4] = {col, col, col, col};
    return agg_node(p, s, 0, kinds, col >= 0 ? cols : NULL, nk);
}

/* The value of a scalar subquery from its row count c and value m: an
   error for more than one row (standard SQL), `empty` (may be NULL: m)
   for none. */
static Expr *scalar_value(P *p, Expr *c, Expr *m, SqlType mt, Expr *empty)
{
    Expr *bad = sql__mk(p, E_CAST, mt, 1);
    Expr *msg = sql__mk(p, E_CAST, type_make(TK_BIGINT, true), 1);
    const char *t = "scalar subquery returned more than one row";
    msg->a[0] = expr_const_str(p->a, type_make(TK_VARCHAR, false), t, strlen(t));
    bad->a[0] = msg;
    if (sql__same_repr(msg->t, mt))
        bad = msg;
    Expr *cs = sql__mk(p, E_CASE, mt, empty ? 5 : 3);
    cs->a[0] = mk2(p, E_GT, type_make(TK_BOOL, false), c, const_i(p, 1));
    cs->a[1] = bad;
    if (empty) {
        cs->a[2] = mk2(p, E_EQ, type_make(TK_BOOL, false), c, const_i(p, 0));
        cs->a[3] = empty;
    }
    cs->a[empty ? 4 : 2] = m;
    return cs;
}

/* SQL's three-valued x IN (S) from: x found among S's non-NULL values
   (matched), S's row count c and non-NULL count cv, and x (k). */
static Expr *in_value(P *p, Expr *k, Expr *matched, Expr *c, Expr *cv)
{
    Expr *isnull = sql__mk(p, E_ISNULL, type_make(TK_BOOL, false), 1);
    isnull->a[0] = k;
    SqlType bt = type_make(TK_BOOL, true);
    Expr *cs = sql__mk(p, E_CASE, bt, 9);
    cs->a[0] = matched;
    cs->a[1] = const_b(p, true);
    cs->a[2] = mk2(p, E_EQ, type_make(TK_BOOL, false), c, const_i(p, 0));
    cs->a[3] = const_b(p, false);
    cs->a[4] = isnull;
    cs->a[5] = expr_const_null(p->a, bt);
    cs->a[6] = mk2(p, E_GT, type_make(TK_BOOL, false), c, cv);
    cs->a[7] = expr_const_null(p->a, bt);
    cs->a[8] = const_b(p, false);
    return cs;
}

/* Bind IN's operand over scope sc and the common (nullable) type of it and
   the subquery's values of type vt. */
static Expr *in_operand(P *p, Ast *x, Scope *sc, SqlType vt, SqlType *ct)
{
    AggCtx none = {0};
    BindCtx bc = {sc, &none, "IN"};
    Expr *k = sql__bind(p, &bc, x->a);
    if (!k)
        return NULL;
    if (!sql__common_type(k->t, vt, ct)) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "cannot compare %s with %s in IN (subquery)",
             tname(k->t), tname(vt));
        return NULL;
    }
    if (ct->kind == TK_NULL)
        *ct = type_make(TK_INT, true);
    ct->nullable = 1;
    return k;
}

/* Plan the subquery alone: 0, or 1 when it refers to outer columns (the
   correlated path then plans it), or an error code. */
static int plan_sub(P *p, Ast *x, PRel *s, int mark)
{
    Err saved = *p->err;
    int unresolved = p->unresolved;
    if (sql__plan_query(p, x->sub, s)) {
        if (p->unresolved > unresolved) { /* a name from the outer query */
            *p->err = saved;
            p->c->nnodes = mark; /* drop what the attempt planned */
            return 1;
        }
        return -1;
    }
    return 0;
}

/* ---- correlated subqueries ---- */

static Expr *zero_of(P *p, SqlType t)
{
    t.nullable = 0;
    switch (type_phys(t)) {
    case PHYS_F64: return expr_const_f64(p->a, t, 0);
    case PHYS_STR: return expr_const_str(p->a, t, "", 0);
    case PHYS_I128: return expr_const_dec(p->a, t, 0);
    default: return expr_const_i64(p->a, t, 0);
    }
}

/* Key expressions for a null-safe equality on column col of type t: the
   column itself when NOT NULL, else (col IS NULL, COALESCE(col, zero)). */
static int nullsafe(P *p, int col, SqlType t, bool nullable, Expr **e, SqlType *kt)
{
    SqlType nn = t;
    nn.nullable = 0;
    if (!nullable) {
        e[0] = expr_col(p->a, col, t);
        kt[0] = nn;
        return 1;
    }
    t.nullable = 1;
    Expr *isn = sql__mk(p, E_ISNULL, type_make(TK_BOOL, false), 1);
    isn->a[0] = expr_col(p->a, col, t);
    Expr *co = sql__mk(p, E_COALESCE, nn, 2);
    co->a[0] = expr_col(p->a, col, t);
    co->a[1] = zero_of(p, t);
    e[0] = isn;
    kt[0] = type_make(TK_BOOL, false);
    e[1] = co;
    kt[1] = nn;
    return 2;
}

/*
 * R |x| Q where Q has at most one row per key (rk of R = qk of Q, null-safe):
 * R's columns then Q's columns qv[0..nv); rows of R without a partner get
 * defaults[]. Built as J = R |x| Q, plus (R - pi_R(J)) with the defaults.
 */
static int lookup_join(P *p, int r, const int *rk, int nk, int q, const int *qk, const int *qv,
                       int nv, Expr **defaults)
{
    CNode *rn = p->c->nodes[r], *qn = p->c->nodes[q];
    int nr = rn->ncol;
    Expr **le = arena_alloc(p->a, sizeof(Expr *) * (size_t)(2 * nk + 1));
    Expr **re = arena_alloc(p->a, sizeof(Expr *) * (size_t)(2 * nk + 1));
    SqlType *kt = arena_alloc(p->a, sizeof(SqlType) * (size_t)(2 * nk + 1));
    int m = 0;
    for (int i = 0; i < nk; i++) {
        SqlType t = rn->types[rk[i]];
        bool nul = t.nullable || qn->types[qk[i]].nullable;
        nullsafe(p, rk[i], t, nul, le + m, kt + m);
        m += nullsafe(p, qk[i], qn->types[qk[i]], nul, re + m, kt + m);
    }
    int *lcols, *rcols;
    int ln = sql__join_side(p, r, le, m, kt, &lcols);
    int qn2 = sql__join_side(p, q, re, m, kt, &rcols);
    CNode *lnn = p->c->nodes[ln];
    int j = sql__join(p, ln, qn2, lcols, rcols, m);
    /* result types: Q's value types, nullable when a default is NULL */
    SqlType *vt = arena_alloc(p->a, sizeof(SqlType) * (size_t)(nv + 1));
    for (int k = 0; k < nv; k++) {
        vt[k] = qn->types[qv[k]];
        vt[k].nullable = vt[k].nullable || defaults[k]->t.nullable;
    }
    Expr **pm = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nr + nv + 1));
    for (int i = 0; i < nr; i++)
        pm[i] = expr_col(p->a, i, rn->types[i]);
    for (int k = 0; k < nv; k++)
        pm[nr + k] = expr_col(p->a, lnn->ncol + qv[k], vt[k]);
    int matched = sql__add_map(p, j, NULL, pm, nr + nv);
    Expr **pr = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nr + 1));
    for (int i = 0; i < nr; i++)
        pr[i] = expr_col(p->a, i, rn->types[i]);
    int back = sql__add_map(p, matched, NULL, pr, nr);
    int un = sql__minus(p, r, back); /* R's rows without a match */
    Expr **pd = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nr + nv + 1));
    for (int i = 0; i < nr; i++)
        pd[i] = expr_col(p->a, i, rn->types[i]);
    for (int k = 0; k < nv; k++) {
        Expr *d = sql__cast_to(p, defaults[k], vt[k]);
        if (d == defaults[k]) {
            d = arena_alloc(p->a, sizeof(*d));
            *d = *defaults[k];
        }
        d->t.nullable = vt[k].nullable;
        pd[nr + k] = d;
    }
    int unm = sql__add_map(p, un, NULL, pd, nr + nv);
    return sql__sum2(p, matched, unm);
}

/* A call of an aggregate function (also over a window). */
static bool agg_call(const Ast *x) { return x->k == A_FUNC && sql__is_agg_name(x->name); }

/* Mark the columns of outer scope o that a name in the subquery could
   refer to (an over-approximation: a column left out could only turn a
   reference into an error, since the subquery's own columns win). */
static void refs_select(const Select *q, const Scope *o, bool *mark);

static void refs_ast(const Ast *x, const Scope *o, bool *mark)
{
    if (!x)
        return;
    if (x->k == A_COL)
        for (int i = 0; i < o->n; i++)
            if (!o->c[i].hidden && o->c[i].name && !strcasecmp(o->c[i].name, x->name) &&
                (!x->qual || (o->c[i].qual && !strcasecmp(o->c[i].qual, x->qual))))
                mark[i] = true;
    refs_ast(x->a, o, mark);
    refs_ast(x->b, o, mark);
    refs_ast(x->c, o, mark);
    for (int i = 0; i < x->args.n; i++)
        refs_ast(x->args.v[i], o, mark);
    if (x->sub)
        refs_select(x->sub, o, mark);
    if (x->over) {
        for (int i = 0; i < x->over->part.n; i++)
            refs_ast(x->over->part.v[i], o, mark);
        for (int i = 0; i < x->over->norder; i++)
            refs_ast(x->over->order[i].e, o, mark);
        refs_ast(x->over->start_n, o, mark);
        refs_ast(x->over->end_n, o, mark);
    }
}

static void refs_from(const FromItem *f, const Scope *o, bool *mark)
{
    if (!f)
        return;
    refs_from(f->l, o, mark);
    refs_from(f->r, o, mark);
    refs_ast(f->on, o, mark);
    refs_ast(f->match, o, mark);
    if (f->sub)
        refs_select(f->sub, o, mark);
    refs_from(f->tvf_input, o, mark);
    for (int i = 0; i < f->tvf_args.n; i++)
        refs_ast(f->tvf_args.v[i], o, mark);
}

static void refs_select(const Select *q, const Scope *o, bool *mark)
{
    for (; q; q = q->next) {
        for (int i = 0; i < q->nitems; i++)
            refs_ast(q->items[i].e, o, mark);
        for (int i = 0; i < q->nfrom; i++)
            refs_from(q->from[i], o, mark);
        refs_ast(q->where, o, mark);
        for (int i = 0; i < q->group.n; i++)
            refs_ast(q->group.v[i], o, mark);
        refs_ast(q->having, o, mark);
        refs_ast(q->qualify, o, mark);
        for (int i = 0; i < q->norder; i++)
            refs_ast(q->order[i].e, o, mark);
        for (int r = 0; r < q->nvalues; r++)
            for (int i = 0; i < q->values[r].n; i++)
                refs_ast(q->values[r].v[i], o, mark);
        for (int i = 0; i < q->nctes; i++)
            refs_select(q->ctes[i].q, o, mark);
    }
}

static Ast *dref(P *p, Ast *at, const SCol *c, int k)
{
    Ast *a = arena_zalloc(p->a, sizeof(Ast));
    a->k = A_COL;
    a->line = at->line;
    a->col = at->col;
    a->name = (char *)c->name;
    a->subcol = k + 1; /* the k-th column of the FROM scope: the outer rows */
    return a;
}

/*
 * A correlated subquery: D = the distinct outer rows (R's visible columns)
 * joins the subquery's FROM as its first item, so outer references resolve
 * to D's columns; the subquery then yields, per D row, what the expression
 * needs (grouped by D's columns), and a lookup join brings it back to R.
 */
static int correlated(P *p, PRel *r, Ast *x, int *node_out, Expr **value)
{
    Select *S = x->sub;
    if (S->next || S->norder || S->limit || S->offset)
        return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                    "a correlated subquery with UNION/EXCEPT/INTERSECT, ORDER BY or LIMIT is "
                    "not supported yet");
    int nr = r->s.n;
    CNode *rn = p->c->nodes[r->node];
    int *dcols = arena_alloc(p->a, sizeof(int) * (size_t)(nr + 1));
    /* D: the outer columns the subquery may refer to */
    bool *mark = arena_zalloc(p->a, (size_t)(nr + 1));
    refs_select(S, &r->s, mark);
    int nd = 0;
    for (int i = 0; i < nr; i++)
        if (mark[i] && !r->s.c[i].hidden)
            dcols[nd++] = i;
    for (int i = 0; i < nr && nd == 0; i++) /* none found: all of them */
        if (!r->s.c[i].hidden)
            dcols[nd++] = i;
    Expr **pd = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nd + 1));
    for (int k = 0; k < nd; k++)
        pd[k] = expr_col(p->a, dcols[k], rn->types[dcols[k]]);
    int dm = sql__add_map(p, r->node, NULL, pd, nd);
    int dd = sql__unary(p, OPK_DISTINCT, dm);
    Scope *ds = arena_alloc(p->a, sizeof(Scope));
    ds->n = nd;
    ds->c = arena_zalloc(p->a, sizeof(SCol) * (size_t)(nd + 1));
    for (int k = 0; k < nd; k++) {
        ds->c[k] = r->s.c[dcols[k]];
        ds->c[k].outer = true;
        ds->c[k].qual_only = false;
    }
    FromItem *fi = arena_zalloc(p->a, sizeof(FromItem));
    fi->k = F_NODE;
    fi->line = x->line;
    fi->col = x->col;
    fi->node = dd;
    fi->scope = ds;

    bool aggq = S->group.n > 0 || S->having != NULL;
    for (int i = 0; i < S->nitems; i++)
        aggq = aggq || sql__ast_any(S->items[i].e, agg_call);
    if (x->k != A_EXISTS && (S->nitems != 1 || S->items[0].e->k == A_STAR))
        return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                    "a correlated subquery used as a value must select one expression");
    if (x->k == A_EXISTS && aggq)
        return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                    "EXISTS over a correlated aggregate query is not supported yet");
    if (S->don.n)
        return perr(p, SL_EUNSUPPORTED, S->line, S->col,
                    "DISTINCT ON in a correlated subquery is not supported yet");
    Select *q = arena_alloc(p->a, sizeof(Select));
    *q = *S;
    q->from = arena_alloc(p->a, sizeof(FromItem *) * (size_t)(S->nfrom + 1));
    q->from[0] = fi;
    if (S->nfrom) /* a subquery without FROM has no array to copy */
        memcpy(q->from + 1, S->from, sizeof(FromItem *) * (size_t)S->nfrom);
    q->nfrom = S->nfrom + 1;
    int nit = nd + (x->k == A_EXISTS ? 0 : 1);
    q->items = arena_zalloc(p->a, sizeof(SelectItem) * (size_t)(nit + 1));
    for (int k = 0; k < nd; k++) {
        q->items[k].e = dref(p, x, &ds->c[k], k);
        q->items[k].line = x->line;
        q->items[k].col = x->col;
    }
    if (x->k != A_EXISTS)
        q->items[nd] = S->items[0];
    q->nitems = nit;
    q->distinct = x->k == A_EXISTS ? false : S->distinct;
    memset(&q->group, 0, sizeof(q->group));
    if (aggq) {
        q->group.cap = q->group.n = nd + S->group.n;
        q->group.v = arena_alloc(p->a, sizeof(Ast *) * (size_t)(q->group.n + 1));
        for (int k = 0; k < nd; k++)
            q->group.v[k] = dref(p, x, &ds->c[k], k);
        for (int k = 0; k < S->group.n; k++)
            q->group.v[nd + k] = S->group.v[k];
    }
    PRel sp;
    if (sql__plan_query(p, q, &sp))
        return p->err->code;
    int *qk = arena_alloc(p->a, sizeof(int) * (size_t)(nd + 2));
    for (int k = 0; k < nd; k++)
        qk[k] = k;
    SqlType bt = type_make(TK_BIGINT, false);
    if (x->k == A_EXISTS) {
        AggKind kc[1] = {AGG_COUNT_STAR};
        int g = agg_node(p, sp.node, nd, kc, NULL, 1);
        int qv[1] = {nd};
        Expr *def[1] = {const_i(p, 0)};
        *node_out = lookup_join(p, r->node, dcols, nd, g, qk, qv, 1, def);
        *value = mk2(p, E_GT, type_make(TK_BOOL, false), expr_col(p->a, nr, bt), const_i(p, 0));
        return 0;
    }
    SqlType vt = sp.s.c[nd].t;
    if (x->k == A_SUBQUERY) {
        AggKind kc[2] = {AGG_COUNT_STAR, AGG_MIN};
        int cols[2] = {0, nd};
        int g = agg_node(p, sp.node, nd, kc, cols, 2);
        SqlType mt = p->c->nodes[g]->types[nd + 1];
        int qv[2] = {nd, nd + 1};
        Expr *def[2] = {const_i(p, 0), expr_const_null(p->a, mt)};
        *node_out = lookup_join(p, r->node, dcols, nd, g, qk, qv, 2, def);
        /* no row for these outer values: an aggregate over no rows */
        Expr *empty = expr_const_null(p->a, mt);
        if (aggq && S->group.n == 0 && !S->having) {
            Ast *it = S->items[0].e;
            if (it->k == A_FUNC && sql__is_agg_name(it->name)) {
                if (!strcmp(it->name, "count") || !strcmp(it->name, "count_if"))
                    empty = sql__cast_to(p, const_i(p, 0), mt);
            } else
                return perr(p, SL_EUNSUPPORTED, it->line, it->col,
                            "a correlated scalar subquery whose value is an expression over "
                            "aggregates is not supported yet (select the aggregate alone)");
        }
        *value = scalar_value(p, expr_col(p->a, nr, bt), expr_col(p->a, nr + 1, mt), mt, empty);
        return 0;
    }
    /* x IN (correlated S) */
    SqlType ct;
    Expr *k = in_operand(p, x, &r->s, vt, &ct);
    if (!k)
        return p->err->code;
    SqlType ctn = ct;
    ctn.nullable = 0;
    CNode *spn = p->c->nodes[sp.node];
    /* sv = [D..., v as ct] */
    Expr **p1 = sql__identity_proj(p, spn, 0);
    p1[nd] = sql__cast_to(p, expr_col(p->a, nd, vt), ct);
    int sv = sql__add_map(p, sp.node, NULL, p1, nd + 1);
    CNode *svn = p->c->nodes[sv];
    /* Q1 = DISTINCT [D..., v] of the non-NULL values, + TRUE */
    Expr *nn = sql__mk(p, E_ISNOTNULL, type_make(TK_BOOL, false), 1);
    nn->a[0] = expr_col(p->a, nd, ct);
    Expr **p2 = sql__identity_proj(p, svn, 0);
    p2[nd] = expr_col(p->a, nd, ctn);
    int s2 = sql__add_map(p, sv, nn, p2, nd + 1);
    /* the node first: adding it may move p->c->nodes, which C may read
       before or after the call */
    int dn = sql__unary(p, OPK_DISTINCT, s2);
    CNode *d = p->c->nodes[dn];
    Expr **p3 = sql__identity_proj(p, d, 1);
    p3[nd + 1] = const_b(p, true);
    int q1 = sql__add_map(p, d->id, NULL, p3, nd + 2);
    /* R1 = R + k */
    Expr **pk = sql__identity_proj(p, rn, 1);
    pk[nr] = sql__cast_to(p, k, ct);
    int r1 = sql__add_map(p, r->node, NULL, pk, nr + 1);
    int *rk = arena_alloc(p->a, sizeof(int) * (size_t)(nd + 2));
    memcpy(rk, dcols, sizeof(int) * (size_t)nd);
    rk[nd] = nr;
    qk[nd] = nd;
    int qv1[1] = {nd + 1};
    Expr *def1[1] = {const_b(p, false)};
    int r2 = lookup_join(p, r1, rk, nd + 1, q1, qk, qv1, 1, def1);
    /* Q2 = per D: COUNT(*) c, COUNT(v) cv */
    AggKind kc[2] = {AGG_COUNT_STAR, AGG_COUNT};
    int cols[2] = {0, nd};
    int g = agg_node(p, sv, nd, kc, cols, 2);
    int qv2[2] = {nd, nd + 1};
    Expr *def2[2] = {const_i(p, 0), const_i(p, 0)};
    int r3 = lookup_join(p, r2, dcols, nd, g, qk, qv2, 2, def2);
    Expr *kk = expr_col(p->a, nr, ct);
    Expr *matched = expr_col(p->a, nr + 1, type_make(TK_BOOL, false));
    Expr *c = expr_col(p->a, nr + 2, bt), *cv = expr_col(p->a, nr + 3, bt);
    Expr *cs = in_value(p, kk, matched, c, cv);
    *node_out = r3;
    *value = cs;
    return 0;
}

/* Append column `value` (over r's node columns) to r as a hidden column. */
static void add_hidden(P *p, PRel *r, int node, Expr *value, Ast *x)
{
    CNode *src = p->c->nodes[node];
    int nr = r->s.n;
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nr + 2));
    for (int i = 0; i < nr; i++)
        proj[i] = expr_col(p->a, i, src->types[i]);
    proj[nr] = value;
    r->node = sql__add_map(p, node, NULL, proj, nr + 1);
    Scope ns = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(nr + 1)), nr + 1};
    memcpy(ns.c, r->s.c, sizeof(SCol) * (size_t)nr);
    char *name = arena_alloc(p->a, 24);
    snprintf(name, 24, "$subquery%d", nr + 1);
    ns.c[nr].name = name;
    ns.c[nr].t = value->t;
    ns.c[nr].hidden = true;
    r->s = ns;
    x->subcol = nr + 1;
}

static bool row_ctor(const Ast *x)
{
    return x && x->k == A_FUNC && !strcmp(x->name, "row") && !x->over && !x->star && x->args.n > 0;
}

/* The conjunction of e[0..n) (e[0] alone when n is 1). */
static Expr *and_all(P *p, Expr **e, int n)
{
    if (n == 1)
        return e[0];
    Expr *a = sql__mk(p, E_AND, type_make(TK_BOOL, true), n);
    for (int i = 0; i < n; i++)
        a->a[i] = e[i];
    return a;
}

/* K keys with a TRUE column: DISTINCT of columns [0, n) of node x, rows
   passing filter f. */
static int keys_true(P *p, int x, Expr *f, const SqlType *ct, int n)
{
    Expr **pk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        pk[i] = expr_col(p->a, i, ct[i]);
    int m = sql__add_map(p, x, f, pk, n);
    int d = sql__unary(p, OPK_DISTINCT, m);
    Expr **pt = sql__identity_proj(p, p->c->nodes[d], 1);
    pt[n] = const_b(p, true);
    return sql__add_map(p, d, NULL, pt, n + 1);
}

/*
 * (k1, ..., kn) [NOT] IN (S) with S of n columns, SQL's three-valued
 * answer: TRUE when some row of S equals the row field by field, else NULL
 * when some row of S compares NULL (no field pair unequal, one of them
 * NULL), else FALSE. K = the distinct key rows of R, Sd = the distinct rows
 * of S (both cast to the common types); X = K x Sd filtered by "no field
 * pair unequal"; T = the keys of X whose pairs are all equal, N = the keys
 * of X; R gets t and n by null-safe lookups, value = t ? TRUE : n ? NULL :
 * FALSE. The cross join keeps |K| x |Sd| pairs' worth of work.
 */
static int row_in(P *p, PRel *r, Ast *x, PRel *s)
{
    Ast *row = x->a;
    int n = row->args.n, nr = r->s.n;
    if (s->s.n != n)
        return perr(p, SL_ESEMANTIC, x->line, x->col,
                    "a subquery used as a row IN list must return %d columns, not %d", n, s->s.n);
    AggCtx none = {0};
    BindCtx bc = {&r->s, &none, "IN"};
    SqlType *ct = arena_alloc(p->a, sizeof(SqlType) * (size_t)(n + 1));
    CNode *rn = p->c->nodes[r->node];
    Expr **p1 = sql__identity_proj(p, rn, n);
    for (int i = 0; i < n; i++) {
        Ast *a = row->args.v[i];
        Expr *k = sql__bind(p, &bc, a);
        if (!k)
            return p->err->code;
        SqlType vt = s->s.c[i].t;
        if (!sql__common_type(k->t, vt, &ct[i]))
            return perr(p, SL_ESEMANTIC, a->line, a->col,
                        "cannot compare %s with %s in IN (subquery)", tname(k->t), tname(vt));
        if (ct[i].kind == TK_NULL)
            ct[i] = type_make(TK_INT, true);
        ct[i].nullable = 1;
        p1[nr + i] = sql__cast_to(p, k, ct[i]);
    }
    int r1 = sql__add_map(p, r->node, NULL, p1, nr + n); /* R + keys */
    /* K and Sd */
    Expr **pk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        pk[i] = expr_col(p->a, nr + i, ct[i]);
    int kd = sql__unary(p, OPK_DISTINCT, sql__add_map(p, r1, NULL, pk, n));
    CNode *sn = p->c->nodes[s->node];
    Expr **ps = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        ps[i] = sql__cast_to(p, expr_col(p->a, i, sn->types[i]), ct[i]);
    int sd = sql__unary(p, OPK_DISTINCT, sql__add_map(p, s->node, NULL, ps, n));
    int xj = cross(p, kd, sd);
    /* eq_i = k_i = s_i; maybe: every eq_i is not FALSE */
    Expr **eq = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    Expr **ok = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        eq[i] = mk2(p, E_EQ, type_make(TK_BOOL, true), expr_col(p->a, i, ct[i]),
                    expr_col(p->a, n + i, ct[i]));
        Expr *co = sql__mk(p, E_COALESCE, type_make(TK_BOOL, false), 2);
        co->a[0] = mk2(p, E_EQ, type_make(TK_BOOL, true), expr_col(p->a, i, ct[i]),
                       expr_col(p->a, n + i, ct[i]));
        co->a[1] = const_b(p, true);
        ok[i] = co;
    }
    int tq = keys_true(p, xj, and_all(p, eq, n), ct, n);
    int nq = keys_true(p, xj, and_all(p, ok, n), ct, n);
    int *rk = arena_alloc(p->a, sizeof(int) * (size_t)(n + 1));
    int *qk = arena_alloc(p->a, sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        rk[i] = nr + i;
        qk[i] = i;
    }
    int qv[1] = {n};
    Expr *def1[1] = {const_b(p, false)}, *def2[1] = {const_b(p, false)};
    int r2 = lookup_join(p, r1, rk, n, tq, qk, qv, 1, def1);
    int r3 = lookup_join(p, r2, rk, n, nq, qk, qv, 1, def2);
    SqlType bt = type_make(TK_BOOL, true);
    Expr *cs = sql__mk(p, E_CASE, bt, 5);
    cs->a[0] = expr_col(p->a, nr + n, type_make(TK_BOOL, false));
    cs->a[1] = const_b(p, true);
    cs->a[2] = expr_col(p->a, nr + n + 1, type_make(TK_BOOL, false));
    cs->a[3] = expr_const_null(p->a, bt);
    cs->a[4] = const_b(p, false);
    add_hidden(p, r, r3, cs, x);
    return 0;
}

static int one_subquery(P *p, PRel *r, Ast *x)
{
    PRel s;
    int rc = plan_sub(p, x, &s, p->c->nnodes);
    if (rc < 0)
        return p->err->code;
    if (rc == 1) {
        if (x->k == A_IN && row_ctor(x->a))
            return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                        "a row IN over a correlated subquery is not supported yet");
        int node = -1;
        Expr *value = NULL;
        if (correlated(p, r, x, &node, &value))
            return p->err->code;
        add_hidden(p, r, node, value, x);
        return 0;
    }
    int nr = r->s.n;
    if (x->k == A_EXISTS) {
        AggKind k[1] = {AGG_COUNT_STAR};
        int g = global_agg(p, s.node, k, 1, -1);
        int j = cross(p, r->node, g);
        add_hidden(p, r, j, mk2(p, E_GT, type_make(TK_BOOL, false),
                               expr_col(p->a, nr, type_make(TK_BIGINT, false)), const_i(p, 0)),
                   x);
        return 0;
    }
    if (x->k == A_IN && row_ctor(x->a))
        return row_in(p, r, x, &s);
    if (s.s.n != 1)
        return perr(p, SL_ESEMANTIC, x->line, x->col,
                    "a subquery used as %s must return one column, not %d",
                    x->k == A_IN ? "an IN list" : "a value", s.s.n);
    SqlType vt = s.s.c[0].t;
    if (x->k == A_SUBQUERY) {
        AggKind k[2] = {AGG_COUNT_STAR, AGG_MIN};
        int g = global_agg(p, s.node, k, 2, 0);
        int j = cross(p, r->node, g);
        SqlType mt = p->c->nodes[g]->types[1];
        Expr *c = expr_col(p->a, nr, type_make(TK_BIGINT, false));
        add_hidden(p, r, j, scalar_value(p, c, expr_col(p->a, nr + 1, mt), mt, NULL), x);
        return 0;
    }
    /* x IN (S) */
    SqlType ct;
    Expr *k = in_operand(p, x, &r->s, vt, &ct);
    if (!k)
        return p->err->code;
    /* Sd: the subquery's distinct non-NULL values */
    CNode *sn = p->c->nodes[s.node];
    Expr *sv = sql__cast_to(p, expr_col(p->a, 0, sn->types[0]), ct);
    Expr **sp = arena_alloc(p->a, sizeof(Expr *));
    sp[0] = sv;
    int svals = sql__add_map(p, s.node, NULL, sp, 1); /* values as ct */
    Expr *nn = sql__mk(p, E_ISNOTNULL, type_make(TK_BOOL, false), 1);
    nn->a[0] = expr_col(p->a, 0, ct);
    SqlType ctn = ct;
    ctn.nullable = 0;
    Expr **sp2 = arena_alloc(p->a, sizeof(Expr *));
    sp2[0] = expr_col(p->a, 0, ctn);
    int snn = sql__add_map(p, svals, nn, sp2, 1);
    int d = sql__unary(p, OPK_DISTINCT, snn); /* of type ctn */
    /* R1 = R + k */
    CNode *rn = p->c->nodes[r->node];
    Expr **p1 = sql__identity_proj(p, rn, 1);
    p1[nr] = sql__cast_to(p, k, ct);
    int r1 = sql__add_map(p, r->node, NULL, p1, nr + 1);
    CNode *r1n = p->c->nodes[r1];
    /* M = R1 |x| Sd on k = v, projected to R1's columns */
    Expr *kc = expr_col(p->a, nr, ct);
    int *lcols;
    int ln = sql__join_side(p, r1, &kc, 1, &ctn, &lcols);
    int zero = 0;
    int j = sql__join(p, ln, d, lcols, &zero, 1);
    Expr **pm = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nr + 2));
    for (int i = 0; i <= nr; i++)
        pm[i] = expr_col(p->a, i, r1n->types[i]);
    int m = sql__add_map(p, j, NULL, pm, nr + 1);
    int un = sql__minus(p, r1, m); /* unmatched = R1 - M */
    /* R2 = M + TRUE  UNION  unmatched + FALSE */
    Expr **pt = sql__identity_proj(p, r1n, 1), **pf = sql__identity_proj(p, r1n, 1);
    pt[nr + 1] = const_b(p, true);
    pf[nr + 1] = const_b(p, false);
    int mt = sql__add_map(p, m, NULL, pt, nr + 2);
    int mf = sql__add_map(p, un, NULL, pf, nr + 2);
    int r2 = sql__sum2(p, mt, mf);
    /* x G: COUNT(*) c, COUNT(v) cv */
    AggKind ks[2] = {AGG_COUNT_STAR, AGG_COUNT};
    int g = global_agg(p, svals, ks, 2, 0);
    int r3 = cross(p, r2, g);
    Expr *kk = expr_col(p->a, nr, ct);
    Expr *matched = expr_col(p->a, nr + 1, type_make(TK_BOOL, false));
    Expr *c = expr_col(p->a, nr + 2, type_make(TK_BIGINT, false));
    Expr *cv = expr_col(p->a, nr + 3, type_make(TK_BIGINT, false));
    Expr *cs = in_value(p, kk, matched, c, cv);
    add_hidden(p, r, r3, cs, x); /* R's columns + the value */
    return 0;
}

/* Subquery expressions of x, outermost first (nested ones are planned with
   their own subquery). */
static int walk(P *p, PRel *r, Ast *x)
{
    if (!x)
        return 0;
    if (x->k == A_SUBQUERY || x->k == A_EXISTS || (x->k == A_IN && x->sub)) {
        if (x->k == A_IN && walk(p, r, x->a)) /* subqueries inside the IN operand */
            return p->err->code;
        return x->subcol ? 0 : one_subquery(p, r, x);
    }
    if (walk(p, r, x->a) || walk(p, r, x->b) || walk(p, r, x->c))
        return p->err->code;
    for (int i = 0; i < x->args.n; i++)
        if (walk(p, r, x->args.v[i]))
            return p->err->code;
    return 0;
}

int sql__plan_subqueries(P *p, PRel *r, Ast **exprs, int n)
{
    for (int i = 0; i < n; i++)
        if (walk(p, r, exprs[i]))
            return p->err->code;
    return 0;
}
