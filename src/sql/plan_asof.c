/*
 * sql/plan_asof.c - ASOF joins:
 *
 *   L [LEFT] ASOF JOIN R MATCH_CONDITION (l.ts OP r.ts) ON l.k1 = r.k1 AND ...
 *   L [LEFT] ASOF JOIN R ON l.k1 = r.k1 AND ... AND l.ts OP r.ts
 *
 * OP is >=, >, <= or < (either side may be written first). Each left row
 * is joined with the one right row with equal keys whose ts is the
 * closest satisfying the condition; ASOF drops a left row without one,
 * LEFT ASOF pads it with NULLs. NULL keys (with =) and NULL timestamps
 * match nothing. The ON condition holds equalities between the sides (=
 * or IS NOT DISTINCT FROM), conditions on one side alone, and without
 * MATCH_CONDITION the one inequality. A condition on the right row
 * restricts the candidates (a filter of the right side); one on the left
 * row makes a left row failing it match nothing (its ts is taken as NULL).
 *
 * A temporal join L [LEFT] JOIN r FOR SYSTEM_TIME AS OF x ON ... is the
 * ASOF join with MATCH_CONDITION (x >= r.time) when r is an append-only
 * table with a time column (systime_match).
 *
 * Plan: both sides are mapped to one row type (keys, ts, side, left
 * columns, right columns; the other side's columns NULL) and summed into
 * one OPK_ASOF node partitioned by the keys and ordered by (ts, side)
 * (circuit/op_asof.c: the delta rule, its cost, ties between right rows).
 * Right rows with a NULL ts or a NULL (=) key never match and are
 * filtered first. A MAP after the node restores the columns' types.
 */
#include <string.h>

#include "sql_int.h"

/* e is `a OP b` with OP an inequality, one operand over L's columns
   [0, nL) only and the other over R's [nL, nL + nR) only: *l, *r the
   operands (r remapped to R's columns), *op the kind as `l OP r`. */
static bool asof_ineq(P *p, Expr *e, int nL, int nR, Expr **l, Expr **r, ExprKind *op)
{
    if (e->k != E_LT && e->k != E_LE && e->k != E_GT && e->k != E_GE)
        return false;
    Expr *a = e->a[0], *b = e->a[1];
    ExprKind k = e->k;
    if (!sql__refs_any(a) || !sql__refs_any(b))
        return false;
    if (sql__refs_within(a, nL, nL + nR) && sql__refs_within(b, 0, nL)) {
        Expr *t = a;
        a = b;
        b = t;
        k = k == E_LT ? E_GT : k == E_LE ? E_GE : k == E_GT ? E_LT : E_LE;
    }
    if (!sql__refs_within(a, 0, nL) || !sql__refs_within(b, nL, nL + nR))
        return false;
    *l = a;
    *r = sql__remap(p, b, 0, -nL);
    *op = k;
    return true;
}

/* One side as rows of the union type: (keys, ts, side, left cols, right
   cols). mine: the side's columns start at union column `at`. */
static int asof_side(P *p, int node, int nc, Expr **keys, Expr *ts, int nk, Expr *filter,
                     bool right, const SqlType *ut, int nL, int nR)
{
    /* computed keys and ts as columns first (then read as nullable) */
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nc + nk + 2));
    const SqlType *it = p->c->nodes[node]->types;
    for (int i = 0; i < nc; i++)
        proj[i] = expr_col(p->a, i, it[i]);
    for (int i = 0; i < nk; i++)
        proj[nc + i] = keys[i];
    proj[nc + nk] = ts;
    int x = sql__add_map(p, node, filter, proj, nc + nk + 1);
    int nu = nk + 2 + nL + nR;
    Expr **u = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nu + 1));
    for (int i = 0; i <= nk; i++) /* keys and ts */
        u[i] = expr_col(p->a, nc + i, ut[i]);
    u[nk + 1] = expr_const_i64(p->a, ut[nk + 1], right);
    for (int i = 0; i < nL + nR; i++) {
        int c = nk + 2 + i;
        bool mine = right ? i >= nL : i < nL;
        u[c] = mine ? expr_col(p->a, right ? i - nL : i, ut[c]) : expr_const_null(p->a, ut[c]);
    }
    return sql__add_map(p, x, NULL, u, nu);
}

/* A temporal join L [LEFT] JOIN r FOR SYSTEM_TIME AS OF x [AS] a ON ...:
   r must be a table declared 'append_only' = 'true' (its rows are the
   versions, never replaced) with a time column: the column with LATENESS
   (a watermark) or, without one, its only TIMESTAMP, TIMESTAMPTZ or DATE
   column. The version of a key as of x is the row with the greatest time
   <= x: f->match becomes (x >= a.time) and the join an ASOF join. */
static int systime_match(P *p, FromItem *f)
{
    FromItem *r = f->r;
    const char *need = "a temporal join (FOR SYSTEM_TIME AS OF) reads a table declared with "
                       "'append_only' = 'true' whose time column is its LATENESS (watermark) "
                       "column or its only TIMESTAMP, TIMESTAMPTZ or DATE column";
    int rel = sql__cte_visible(p, r->name) ? -1 : circuit_find_rel(p->c, r->name);
    if (rel < 0 || !p->c->rels[rel].is_table)
        return perr(p, SL_EUNSUPPORTED, r->line, r->col, "%s; \"%s\" is %s", need, r->name,
                    rel >= 0 ? "a view" : sql__cte_visible(p, r->name) ? "a WITH query"
                                                                      : "not a table");
    Relation *t = &p->c->rels[rel];
    if (!t->append_only)
        return perr(p, SL_EUNSUPPORTED, r->line, r->col,
                    "%s; table %s is not declared 'append_only' = 'true' (its rows are its "
                    "current contents, not versions)", need, t->name);
    int tc = t->wm_col >= 0 ? t->wm_col : t->time_col;
    for (int i = 0; tc < 0 && i < t->ncol; i++) {
        TypeKind k = t->types[i].kind;
        if (!type_is_ts(k) && k != TK_DATE)
            continue;
        for (int j = i + 1; j < t->ncol; j++)
            if (type_is_ts(t->types[j].kind) || t->types[j].kind == TK_DATE)
                return perr(p, SL_EUNSUPPORTED, r->line, r->col,
                            "%s; table %s has no LATENESS column and several time columns "
                            "(%s, %s): declare LATENESS on the one that dates the versions",
                            need, t->name, t->colnames[i], t->colnames[j]);
        tc = i;
    }
    if (tc < 0)
        return perr(p, SL_EUNSUPPORTED, r->line, r->col,
                    "%s; table %s has neither LATENESS nor a TIMESTAMP, TIMESTAMPTZ or DATE "
                    "column", need, t->name);
    Ast *c = arena_zalloc(p->a, sizeof(*c));
    c->k = A_COL;
    c->line = r->as_of->line;
    c->col = r->as_of->col;
    c->qual = r->alias ? r->alias : r->name;
    c->name = tc < r->ncol_aliases ? r->col_aliases[tc] : t->colnames[tc];
    Ast *m = arena_zalloc(p->a, sizeof(*m));
    m->k = A_BIN;
    m->op = OP_GE;
    m->line = r->as_of->line;
    m->col = r->as_of->col;
    m->a = r->as_of;
    m->b = c;
    f->match = m;
    return 0;
}

int sql__plan_asof(P *p, FromItem *f, PRel *out)
{
    const char *what = f->temporal ? (f->jk == J_LEFT ? "LEFT JOIN ... FOR SYSTEM_TIME AS OF"
                                                      : "JOIN ... FOR SYSTEM_TIME AS OF")
                       : f->jk == J_LEFT ? "LEFT ASOF JOIN" : "ASOF JOIN";
    if (f->temporal && !f->match && systime_match(p, f))
        return p->err->code;
    PRel L, R;
    if (sql__plan_from_item(p, f->l, &L, NULL) || sql__plan_from_item(p, f->r, &R, NULL))
        return p->err->code;
    int nL = L.s.n, nR = R.s.n;
    Scope all = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(nL + nR + 1)), nL + nR};
    memcpy(all.c, L.s.c, sizeof(SCol) * (size_t)nL);
    memcpy(all.c + nL, R.s.c, sizeof(SCol) * (size_t)nR);

    Ast **conj = NULL;
    int nconj = 0;
    sql__split_and(p, f->on, &conj, &nconj);
    Expr **lk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
    Expr **rk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
    bool *ns = arena_alloc(p->a, sizeof(bool) * (size_t)(nconj + 1));
    int nk = 0;
    Expr **lc = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
    Expr **rc = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 3));
    int nlc = 0, nrc = 0;
    Expr *lts = NULL, *rts = NULL;
    ExprKind op = E_GE;
    AggCtx none = {0};
    if (f->match) {
        if (sql__has_subquery(f->match))
            return perr(p, SL_EUNSUPPORTED, f->match->line, f->match->col,
                        "subqueries in MATCH_CONDITION are not supported");
        BindCtx bc = {&all, &none, "MATCH_CONDITION"};
        Expr *e = sql__bind(p, &bc, f->match);
        if (!e || !(e = sql__bool_operand(p, e, f->match, "MATCH_CONDITION")))
            return p->err->code;
        if (!asof_ineq(p, e, nL, nR, &lts, &rts, &op) && f->temporal)
            return perr(p, SL_ESEMANTIC, f->match->line, f->match->col,
                        "FOR SYSTEM_TIME AS OF of a temporal join must be an expression of "
                        "the rows before the JOIN (such as o.ts), comparable with %s.%s",
                        f->match->b->qual, f->match->b->name);
        if (!lts)
            return perr(p, SL_ESEMANTIC, f->match->line, f->match->col,
                        "MATCH_CONDITION of %s must compare an expression of the left input "
                        "with one of the right input by >=, >, <= or <",
                        what);
    }
    for (int i = 0; i < nconj; i++) {
        Ast *x = conj[i];
        if (sql__has_subquery(x))
            return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                        "subqueries in the ON clause of %s are not supported", what);
        BindCtx bc = {&all, &none, "ON"};
        Expr *e = sql__bind(p, &bc, x);
        if (!e || !(e = sql__bool_operand(p, e, x, "ON")))
            return p->err->code;
        if (sql__refs_within(e, 0, nL)) { /* the left row's (or a constant) */
            lc[nlc++] = e;
            continue;
        }
        if (sql__refs_within(e, nL, nL + nR)) { /* the candidates' */
            rc[nrc++] = sql__remap(p, e, 0, -nL);
            continue;
        }
        Expr *a, *b;
        int how = sql__join_key(e, nL, nR, &a, &b);
        if (how) {
            lk[nk] = a;
            rk[nk] = sql__remap(p, b, 0, -nL);
            ns[nk++] = how == 2;
            continue;
        }
        if (!lts && asof_ineq(p, e, nL, nR, &lts, &rts, &op))
            continue;
        return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                    "the ON condition of %s may only hold equalities between the left and "
                    "the right input, conditions on one of them%s",
                    what,
                    f->match ? "" : " and one inequality between them (the match condition)");
    }
    if (!lts)
        return perr(p, SL_ESEMANTIC, f->line, f->col,
                    "%s needs a match condition: MATCH_CONDITION (left.ts >= right.ts) "
                    "(or >, <=, <)",
                    what);

    /* the union row type: keys, ts, side, left columns, right columns */
    int nu = nk + 2 + nL + nR;
    SqlType *ut = arena_alloc(p->a, sizeof(SqlType) * (size_t)(nu + 1));
    for (int i = 0; i < nk; i++) {
        ut[i] = lk[i]->t; /* sql__compare() cast both sides to one type */
        ut[i].nullable = true;
    }
    ut[nk] = lts->t;
    ut[nk].nullable = true;
    ut[nk + 1] = type_make(TK_BOOL, false);
    for (int i = 0; i < nL; i++) {
        ut[nk + 2 + i] = L.s.c[i].t;
        ut[nk + 2 + i].nullable = true;
    }
    for (int i = 0; i < nR; i++) {
        ut[nk + 2 + nL + i] = R.s.c[i].t;
        ut[nk + 2 + nL + i].nullable = true;
    }
    /* right rows that can never match: NULL ts, NULL (=) key */
    Expr **nn = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nk + nrc + 2));
    int nnn = 0;
    for (int i = 0; i <= nk; i++) {
        Expr *k = i < nk ? rk[i] : rts;
        if (!k->t.nullable || (i < nk && ns[i]))
            continue;
        Expr *t = sql__mk(p, E_ISNOTNULL, type_make(TK_BOOL, false), 1);
        t->a[0] = k;
        nn[nnn++] = t;
    }
    for (int i = 0; i < nrc; i++) /* ON conditions on the right row alone */
        nn[nnn++] = rc[i];
    if (nlc) { /* a left row failing ON's conditions on it alone: no match */
        SqlType t = lts->t;
        t.nullable = true;
        Expr *c = sql__mk(p, E_CASE, t, 2);
        c->a[0] = sql__and_all(p, lc, nlc);
        c->a[1] = lts;
        lts = c;
    }
    int parts[2];
    parts[0] = asof_side(p, L.node, nL, lk, lts, nk, NULL, false, ut, nL, nR);
    parts[1] = asof_side(p, R.node, nR, rk, rts, nk, sql__and_all(p, nn, nnn), true, ut, nL, nR);
    int u = sql__sum(p, parts, 2);

    CNode *a = sql__add_node(p, OPK_ASOF, 1, nL + nR);
    a->in[0] = u;
    memcpy(a->types, ut + nk + 2, sizeof(SqlType) * (size_t)(nL + nR));
    a->npart = nk;
    a->part = sql__iota(p, nk, 0);
    a->nord = 2;
    a->ord = sql__iota(p, 2, nk);
    a->ord_desc = arena_zalloc(p->a, sizeof(bool) * 2);
    a->ord_nulls_first = arena_zalloc(p->a, sizeof(bool) * 2);
    a->ord_nulls_first[0] = true; /* op_asof.c: a left row's NULL ts */
    /* at equal ts, the side that comes first: right rows (true) when the
       search goes backward and admits equality (>=) or goes forward and
       does not (<) */
    a->ord_desc[1] = op == E_GE || op == E_LT;
    a->asof_nl = nL;
    a->asof_back = op == E_GE || op == E_GT;
    a->asof_outer = f->jk == J_LEFT;
    a->label = f->jk == J_LEFT ? "left asof join" : "asof join";

    /* the columns' own types back (right ones nullable for LEFT) */
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nL + nR + 1));
    Scope s = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(nL + nR + 1)), nL + nR};
    for (int i = 0; i < nL + nR; i++) {
        s.c[i] = all.c[i];
        if (i >= nL)
            s.c[i].t.nullable = s.c[i].t.nullable || a->asof_outer;
        proj[i] = expr_col(p->a, i, s.c[i].t);
    }
    out->node = sql__add_map(p, a->id, NULL, proj, nL + nR);
    out->s = s;
    return 0;
}
