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
 *
 * The subquery is planned on its own first; if it refers to columns of the
 * outer query (a correlated subquery) planning fails on the unknown name
 * and the message says correlated subqueries are not supported yet.
 */
#include <stdio.h>
#include <string.h>

#include "sql_int.h"

bool sql__has_subquery(const Ast *x)
{
    if (!x)
        return false;
    if (x->k == A_SUBQUERY || x->k == A_EXISTS || (x->k == A_IN && x->sub))
        return true;
    if (sql__has_subquery(x->a) || sql__has_subquery(x->b) || sql__has_subquery(x->c))
        return true;
    for (int i = 0; i < x->args.n; i++)
        if (sql__has_subquery(x->args.v[i]))
            return true;
    return false;
}

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

/* Identity projection of node `in` plus extra expressions. */
static Expr **ident_plus(P *p, const CNode *src, int extra)
{
    Expr **v = arena_alloc(p->a, sizeof(Expr *) * (size_t)(src->ncol + extra + 1));
    for (int i = 0; i < src->ncol; i++)
        v[i] = expr_col(p->a, i, src->types[i]);
    return v;
}

/* R x G (a cross join with a one-row relation): R's columns, then G's. */
static int cross(P *p, int r, int g)
{
    CNode *ln = p->c->nodes[r], *rn = p->c->nodes[g];
    CNode *j = sql__add_node(p, OPK_JOIN, 2, ln->ncol + rn->ncol);
    j->in[0] = r;
    j->in[1] = g;
    j->nkeys = 0;
    j->lkeys = arena_alloc(p->a, sizeof(int));
    j->rkeys = arena_alloc(p->a, sizeof(int));
    memcpy(j->types, ln->types, sizeof(SqlType) * (size_t)ln->ncol);
    memcpy(j->types + ln->ncol, rn->types, sizeof(SqlType) * (size_t)rn->ncol);
    return j->id;
}

/* Global aggregate over node s: COUNT(*) and, when col >= 0, the listed
   aggregates of column col. One row always. */
static int global_agg(P *p, int s, const AggKind *kinds, int nk, int col)
{
    CNode *src = p->c->nodes[s];
    AggSpec *sp = arena_zalloc(p->a, sizeof(AggSpec) * (size_t)(nk + 1));
    CNode *a = sql__add_node(p, OPK_AGG, 1, nk);
    a->in[0] = s;
    a->ngroup = 0;
    a->global = true;
    a->linear = true;
    for (int i = 0; i < nk; i++) {
        sp[i].kind = kinds[i];
        sp[i].col = kinds[i] == AGG_COUNT_STAR ? 0 : col;
        sp[i].in_t = kinds[i] == AGG_COUNT_STAR ? type_make(TK_BIGINT, false) : src->types[col];
        if (kinds[i] == AGG_MIN || kinds[i] == AGG_MAX) {
            sp[i].out_t = src->types[col];
            sp[i].out_t.nullable = 1;
            a->linear = false;
        } else
            sp[i].out_t = type_make(TK_BIGINT, false);
        a->types[i] = sp[i].out_t;
    }
    a->aggs = sp;
    a->naggs = nk;
    return a->id;
}

static int plan_sub(P *p, Ast *x, PRel *s)
{
    Err saved = *p->err;
    if (sql__plan_query(p, x->sub, s)) {
        if (strstr(p->err->msg, "not found") || strstr(p->err->msg, "unknown table") ||
            strstr(p->err->msg, "does not exist")) {
            char msg[sizeof(p->err->msg)];
            snprintf(msg, sizeof(msg), "%s", p->err->msg);
            *p->err = saved;
            return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                        "correlated subqueries are not supported yet (%s)", msg);
        }
        return p->err->code;
    }
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

static int one_subquery(P *p, PRel *r, Ast *x)
{
    PRel s;
    if (plan_sub(p, x, &s))
        return p->err->code;
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
        Expr *m = expr_col(p->a, nr + 1, mt);
        /* more than one row: an error, as in standard SQL */
        Expr *bad = sql__mk(p, E_CAST, mt, 1);
        Expr *msg = sql__mk(p, E_CAST, type_make(TK_BIGINT, true), 1);
        const char *t = "scalar subquery returned more than one row";
        msg->a[0] = expr_const_str(p->a, type_make(TK_VARCHAR, false), t, strlen(t));
        bad->a[0] = msg;
        if (sql__same_repr(msg->t, mt))
            bad = msg;
        Expr *cs = sql__mk(p, E_CASE, mt, 3);
        cs->a[0] = mk2(p, E_GT, type_make(TK_BOOL, false), c, const_i(p, 1));
        cs->a[1] = bad;
        cs->a[2] = m;
        add_hidden(p, r, j, cs, x);
        return 0;
    }
    /* x IN (S) */
    AggCtx none = {0};
    BindCtx bc = {&r->s, &none, "IN"};
    Expr *k = sql__bind(p, &bc, x->a);
    if (!k)
        return p->err->code;
    SqlType ct;
    if (!sql__common_type(k->t, vt, &ct))
        return perr(p, SL_ESEMANTIC, x->line, x->col, "cannot compare %s with %s in IN (subquery)",
                    tname(k->t), tname(vt));
    if (ct.kind == TK_NULL)
        ct = type_make(TK_INT, true);
    ct.nullable = 1;
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
    CNode *d = sql__add_node(p, OPK_DISTINCT, 1, 1);
    d->in[0] = snn;
    d->types[0] = ctn;
    /* R1 = R + k */
    CNode *rn = p->c->nodes[r->node];
    Expr **p1 = ident_plus(p, rn, 1);
    p1[nr] = sql__cast_to(p, k, ct);
    int r1 = sql__add_map(p, r->node, NULL, p1, nr + 1);
    CNode *r1n = p->c->nodes[r1];
    /* M = R1 |x| Sd on k = v, projected to R1's columns */
    Expr *kc = expr_col(p->a, nr, ct);
    int *lcols;
    int ln = sql__join_side(p, r1, &kc, 1, &ctn, &lcols);
    CNode *lnn = p->c->nodes[ln];
    CNode *j = sql__add_node(p, OPK_JOIN, 2, lnn->ncol + 1);
    j->in[0] = ln;
    j->in[1] = d->id;
    j->nkeys = 1;
    j->lkeys = lcols;
    j->rkeys = arena_zalloc(p->a, sizeof(int));
    memcpy(j->types, lnn->types, sizeof(SqlType) * (size_t)lnn->ncol);
    j->types[lnn->ncol] = ctn;
    Expr **pm = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nr + 2));
    for (int i = 0; i <= nr; i++)
        pm[i] = expr_col(p->a, i, r1n->types[i]);
    int m = sql__add_map(p, j->id, NULL, pm, nr + 1);
    /* unmatched = R1 - M */
    CNode *neg = sql__add_node(p, OPK_NEGATE, 1, nr + 1);
    neg->in[0] = m;
    memcpy(neg->types, r1n->types, sizeof(SqlType) * (size_t)(nr + 1));
    CNode *un = sql__add_node(p, OPK_UNION, 2, nr + 1);
    un->in[0] = r1;
    un->in[1] = neg->id;
    memcpy(un->types, r1n->types, sizeof(SqlType) * (size_t)(nr + 1));
    /* R2 = M + TRUE  UNION  unmatched + FALSE */
    Expr **pt = ident_plus(p, r1n, 1), **pf = ident_plus(p, r1n, 1);
    pt[nr + 1] = const_b(p, true);
    pf[nr + 1] = const_b(p, false);
    int mt = sql__add_map(p, m, NULL, pt, nr + 2);
    int mf = sql__add_map(p, un->id, NULL, pf, nr + 2);
    CNode *r2 = sql__add_node(p, OPK_UNION, 2, nr + 2);
    r2->in[0] = mt;
    r2->in[1] = mf;
    memcpy(r2->types, p->c->nodes[mt]->types, sizeof(SqlType) * (size_t)(nr + 2));
    /* x G: COUNT(*) c, COUNT(v) cv */
    AggKind ks[2] = {AGG_COUNT_STAR, AGG_COUNT};
    int g = global_agg(p, svals, ks, 2, 0);
    int r3 = cross(p, r2->id, g);
    Expr *kk = expr_col(p->a, nr, ct);
    Expr *matched = expr_col(p->a, nr + 1, type_make(TK_BOOL, false));
    Expr *c = expr_col(p->a, nr + 2, type_make(TK_BIGINT, false));
    Expr *cv = expr_col(p->a, nr + 3, type_make(TK_BIGINT, false));
    Expr *isnull = sql__mk(p, E_ISNULL, type_make(TK_BOOL, false), 1);
    isnull->a[0] = kk;
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
    /* drop k, matched, c, cv: R's columns + the value */
    CNode *r3n = p->c->nodes[r3];
    Expr **pr = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nr + 1));
    for (int i = 0; i < nr; i++)
        pr[i] = expr_col(p->a, i, r3n->types[i]);
    pr[nr] = cs;
    int fin = sql__add_map(p, r3, NULL, pr, nr + 1);
    /* add_hidden wants the value over a node with R's columns first */
    Scope ns = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(nr + 1)), nr + 1};
    memcpy(ns.c, r->s.c, sizeof(SCol) * (size_t)nr);
    char *name = arena_alloc(p->a, 24);
    snprintf(name, 24, "$subquery%d", nr + 1);
    ns.c[nr].name = name;
    ns.c[nr].t = bt;
    ns.c[nr].hidden = true;
    r->node = fin;
    r->s = ns;
    x->subcol = nr + 1;
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
