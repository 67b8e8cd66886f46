/*
 * sql/plan_set.c - queries combined or made from rows rather than joined:
 * UNION / INTERSECT / EXCEPT (with and without ALL), WITH and VALUES.
 * Called by plan.c; everything here lowers to MAP, UNION, NEGATE, JOIN,
 * DISTINCT and CONST nodes (plan_node.c), so it is maintained
 * incrementally like any other plan.
 *
 * Set operations. The operands of a chain q1 op q2 op ... are planned
 * one by one (plan.c's plan_core), checked for the same number of columns,
 * and cast to the columns' common types before they are combined.
 * A relation is a Z-set whose integral gives each row a multiplicity
 * >= 0. With a, b the multiplicities of a row in A and B, [c] = 1 if c
 * else 0, and DISTINCT(X) = the rows of X with weight > 0:
 *
 *   UNION ALL      a + b                   A + B
 *   UNION          [a + b > 0]             DISTINCT(A + B)
 *   EXCEPT         [a > 0 and b = 0]       DISTINCT(DISTINCT(A) - B)
 *   INTERSECT      [a > 0 and b > 0]       DA - DISTINCT(DA - B), DA = DISTINCT(A)
 *   EXCEPT ALL     max(0, a - b)           D |x| DISTINCT(D), D = A - B
 *   INTERSECT ALL  min(a, b) = a - max(0, a - b)
 *
 * where X |x| Y joins on every column (weights multiply, so D |x|
 * DISTINCT(D) keeps D's weight a - b exactly where it is positive); rows
 * compare with NULL equal to NULL there (sql__semi_all, plan_join.c's
 * header says why a whole-row join is null-safe).
 *
 * WITH. A common table expression is planned the first time it is
 * referenced and its node is reused by later references; it sees the WITH
 * queries before it and the enclosing ones. VALUES rows are MAPs over one
 * CONST node, unioned; each column has the rows' common type.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sql_int.h"

/* ---- set operations ---- */

static const char *setop_name(SetOp op)
{
    switch (op) {
    case SET_UNION_ALL: return "UNION ALL";
    case SET_UNION: return "UNION";
    case SET_EXCEPT: return "EXCEPT";
    case SET_INTERSECT: return "INTERSECT";
    case SET_EXCEPT_ALL: return "EXCEPT ALL";
    case SET_INTERSECT_ALL: return "INTERSECT ALL";
    default: return "set operation";
    }
}

/* Combine a and b (with the same column types: conform()) by op into
   *node. */
static int plan_setop(P *p, SetOp op, int a, int b, int *node)
{
    switch (op) {
    case SET_UNION_ALL:
        *node = sql__sum2(p, a, b);
        break;
    case SET_UNION:
        *node = sql__unary(p, OPK_DISTINCT, sql__sum2(p, a, b));
        break;
    case SET_EXCEPT:
        *node = sql__unary(p, OPK_DISTINCT, sql__minus(p, sql__unary(p, OPK_DISTINCT, a), b));
        break;
    case SET_INTERSECT: {
        int da = sql__unary(p, OPK_DISTINCT, a);
        *node = sql__minus(p, da, sql__unary(p, OPK_DISTINCT, sql__minus(p, da, b)));
        break;
    }
    case SET_EXCEPT_ALL:
    case SET_INTERSECT_ALL: {
        int d = sql__minus(p, a, b);
        int ex = sql__semi_all(p, d, sql__unary(p, OPK_DISTINCT, d)); /* max(0, a - b) */
        *node = op == SET_EXCEPT_ALL ? ex : sql__minus(p, a, ex);
        break;
    }
    default:
        return perr(p, SL_EUNSUPPORTED, 1, 1, "set operation %d is not supported yet", (int)op);
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
    return sql__add_map(p, r->node, NULL, proj, src->ncol);
}

int sql__plan_setops(P *p, Select *q, PRel *out)
{
    for (Select *s = q; s->next; s = s->next) {
        PRel r;
        SetOp op = s->setop;
        if (sql__plan_core(p, s->next, &r, NULL, NULL))
            return p->err->code;
        if (r.s.n != out->s.n)
            return perr(p, SL_ESEMANTIC, s->next->line, s->next->col,
                        "each %s query must have the same number of columns (%d vs %d)",
                        setop_name(op), out->s.n, r.s.n);
        SqlType *t = arena_alloc(p->a, sizeof(SqlType) * (size_t)r.s.n);
        for (int i = 0; i < r.s.n; i++) {
            if (!sql__common_type(out->s.c[i].t, r.s.c[i].t, &t[i]))
                return perr(p, SL_ESEMANTIC, s->next->line, s->next->col,
                            "%s column %d has incompatible types %s and %s",
                            setop_name(op), i + 1, tname(out->s.c[i].t),
                            tname(r.s.c[i].t));
            if (t[i].kind == TK_NULL)
                t[i] = type_make(TK_INT, true);
        }
        int a = conform(p, out, t), b = conform(p, &r, t), node = -1;
        if (plan_setop(p, op, a, b, &node))
            return p->err->code;
        out->node = node;
        for (int i = 0; i < r.s.n; i++)
            out->s.c[i].t = t[i];
    }
    return 0;
}

/* ---- WITH ---- */

typedef struct CteScope {
    struct CteScope *up;
    const Select *q;   /* the query the WITH list belongs to */
    Cte *ctes;
    int n;
    int visible;       /* ctes[0..visible) can be referenced (all, except
                          while one of them is being planned) */
    PRel *rel;         /* planned ones: node >= 0 */
} CteScope;

bool sql__ctes_active(const P *p, const Select *q)
{
    for (const CteScope *s = p->ctes; s; s = s->up)
        if (s->q == q)
            return true;
    return false;
}

int sql__plan_with(P *p, Select *q, PRel *out, OrderOut *ord)
{
    CteScope *s = arena_zalloc(p->a, sizeof(*s));
    s->up = p->ctes;
    s->q = q;
    s->ctes = q->ctes;
    s->n = s->visible = q->nctes;
    s->rel = arena_zalloc(p->a, sizeof(PRel) * (size_t)(q->nctes + 1));
    for (int i = 0; i < q->nctes; i++) {
        s->rel[i].node = -1;
        for (int j = 0; j < i; j++)
            if (!strcasecmp(q->ctes[i].name, q->ctes[j].name))
                return perr(p, SL_ESEMANTIC, q->ctes[i].line, q->ctes[i].col,
                            "WITH query name \"%s\" is given more than once", q->ctes[i].name);
    }
    p->ctes = s;
    int rc = sql__plan_query_ord(p, q, out, ord);
    p->ctes = s->up;
    return rc;
}

/* WITH RECURSIVE's query c->q = base UNION [ALL] term ... (header of
   plan_rec.c): the base planned first gives the columns' types, then the
   name stands for the relation's changes (a port of the fixed point)
   while the other terms are planned. */
static int plan_cte_recursive(P *p, CteScope *s, int i, PRel *r)
{
    Cte *c = &s->ctes[i];
    Select *q = c->q;
    if (q->nctes || q->norder || q->limit || q->offset)
        return perr(p, SL_EUNSUPPORTED, q->line, q->col,
                    "WITH, ORDER BY, LIMIT and OFFSET inside the recursive query \"%s\" are not "
                    "supported yet",
                    c->name);
    for (Select *t = q; t->next; t = t->next)
        if (t->setop != SET_UNION && t->setop != SET_UNION_ALL)
            return perr(p, SL_EUNSUPPORTED, t->setop_line, t->setop_col,
                        "the terms of the recursive query \"%s\" must be combined by UNION or "
                        "UNION ALL, not %s",
                        c->name, setop_name(t->setop));
    int lo = p->c->nnodes;
    if (sql__plan_core(p, q, r, NULL, NULL))
        return p->err->code;
    if (c->ncol_aliases > r->s.n)
        return perr(p, SL_ESEMANTIC, c->line, c->col,
                    "WITH query \"%s\" has %d columns but %d column names are given", c->name,
                    r->s.n, c->ncol_aliases);
    int n = r->s.n;
    SqlType *t = arena_alloc(p->a, sizeof(SqlType) * (size_t)(n + 1));
    for (int k = 0; k < n; k++) {
        t[k] = r->s.c[k].t;
        if (t[k].kind == TK_NULL)
            t[k] = type_make(TK_INT, true);
        t[k].nullable = 1; /* the recursive terms may give NULL */
        if (k < c->ncol_aliases)
            r->s.c[k].name = c->col_aliases[k];
        r->s.c[k].qual = c->name;
        r->s.c[k].t = t[k];
    }
    r->node = conform(p, r, t);
    int port = sql__rec_port(p, c->name, n, t);
    PRel bound = {port, {arena_alloc(p->a, sizeof(SCol) * (size_t)(n + 1)), n}};
    memcpy(bound.s.c, r->s.c, sizeof(SCol) * (size_t)n);
    s->rel[i] = bound;
    s->visible = i + 1; /* the terms see the name: the port */
    int rc = sql__plan_setops(p, q, r);
    s->rel[i].node = -1;
    if (rc)
        return rc;
    int out = conform(p, r, t);
    sql__ctes_forget(p, lo);
    RecDef def = {port, out, p->c->nnodes, c->name, c->line, c->col};
    r->node = sql__rec_fixpoint(p, lo, &def, 1);
    for (int k = 0; k < n; k++)
        r->s.c[k].t = t[k];
    return r->node < 0 ? p->err->code : 0;
}

static int plan_cte(P *p, CteScope *s, int i)
{
    Cte *c = &s->ctes[i];
    struct CteScope *saved = p->ctes;
    int vis = s->visible;
    PRel r;
    p->ctes = s; /* what the definition sees: earlier WITH queries and outer ones */
    s->visible = i;
    int rc = c->recursive && c->q->next ? plan_cte_recursive(p, s, i, &r)
                                        : sql__plan_query(p, c->q, &r);
    s->visible = vis;
    p->ctes = saved;
    if (rc)
        return rc;
    if (c->ncol_aliases > r.s.n)
        return perr(p, SL_ESEMANTIC, c->line, c->col,
                    "WITH query \"%s\" has %d columns but %d column names are given", c->name,
                    r.s.n, c->ncol_aliases);
    for (int k = 0; k < c->ncol_aliases; k++)
        r.s.c[k].name = c->col_aliases[k];
    s->rel[i] = r;
    return 0;
}

void sql__ctes_forget(P *p, int lo)
{
    for (CteScope *s = p->ctes; s; s = s->up)
        for (int i = 0; i < s->n; i++)
            if (s->rel[i].node >= lo)
                s->rel[i].node = -1;
}

int sql__plan_bound_n(P *p, const char *const *names, const PRel *bound, int n, Select *q,
                      PRel *out, OrderOut *ord)
{
    CteScope *s = arena_zalloc(p->a, sizeof(*s));
    s->up = p->ctes;
    s->q = NULL;
    s->ctes = arena_zalloc(p->a, sizeof(Cte) * (size_t)n);
    s->rel = arena_zalloc(p->a, sizeof(PRel) * (size_t)n);
    for (int i = 0; i < n; i++) {
        s->ctes[i].name = (char *)names[i];
        s->rel[i] = bound[i];
    }
    s->n = s->visible = n;
    p->ctes = s;
    int rc = sql__plan_query_ord(p, q, out, ord);
    p->ctes = s->up;
    return rc;
}

bool sql__cte_visible(P *p, const char *name)
{
    for (CteScope *s = p->ctes; s; s = s->up)
        for (int i = 0; i < s->visible; i++)
            if (!strcasecmp(s->ctes[i].name, name))
                return true;
    return false;
}

int sql__plan_cte_ref(P *p, FromItem *f, PRel *out, bool *found)
{
    *found = false;
    if (f->k != F_TABLE)
        return 0;
    for (CteScope *s = p->ctes; s; s = s->up)
        for (int i = 0; i < s->visible; i++) {
            if (strcasecmp(s->ctes[i].name, f->name))
                continue;
            if (s->rel[i].node < 0 && plan_cte(p, s, i))
                return p->err->code;
            const PRel *r = &s->rel[i];
            out->node = r->node;
            out->s.n = r->s.n;
            out->s.c = arena_alloc(p->a, sizeof(SCol) * (size_t)(r->s.n + 1));
            for (int k = 0; k < r->s.n; k++) {
                out->s.c[k] = r->s.c[k];
                out->s.c[k].qual = f->alias ? f->alias : s->ctes[i].name;
            }
            *found = true;
            return 0;
        }
    return 0;
}

/* ---- VALUES ---- */

int sql__plan_values(P *p, Select *q, PRel *out)
{
    int nrow = q->nvalues, ncol = q->values[0].n;
    Expr ***v = arena_alloc(p->a, sizeof(Expr **) * (size_t)nrow);
    SqlType *t = arena_alloc(p->a, sizeof(SqlType) * (size_t)(ncol + 1));
    Scope none_s = {NULL, 0};
    for (int r = 0; r < nrow; r++) {
        AstList *row = &q->values[r];
        if (row->n != ncol)
            return perr(p, SL_ESEMANTIC, row->v[0]->line, row->v[0]->col,
                        "VALUES rows must all have the same number of columns (%d vs %d)", ncol,
                        row->n);
        v[r] = arena_alloc(p->a, sizeof(Expr *) * (size_t)(ncol + 1));
        for (int i = 0; i < ncol; i++) {
            Ast *x = row->v[i];
            if (sql__has_subquery(x))
                return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                            "subqueries in VALUES are not supported yet");
            AggCtx none = {0};
            BindCtx bc = {&none_s, &none, "VALUES"};
            if (!(v[r][i] = sql__bind(p, &bc, x)))
                return p->err->code;
            if (r == 0)
                t[i] = v[r][i]->t;
            else if (!sql__common_type(t[i], v[r][i]->t, &t[i]))
                return perr(p, SL_ESEMANTIC, x->line, x->col,
                            "VALUES column %d has incompatible types %s and %s", i + 1,
                            tname(t[i]), tname(v[r][i]->t));
        }
    }
    for (int i = 0; i < ncol; i++)
        if (t[i].kind == TK_NULL)
            t[i] = type_make(TK_INT, true);
    CNode *k = sql__add_node(p, OPK_CONST, 0, 0);
    k->label = "values";
    int konst = k->id;
    int *rows = arena_alloc(p->a, sizeof(int) * (size_t)nrow);
    for (int r = 0; r < nrow; r++) {
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(ncol + 1));
        for (int i = 0; i < ncol; i++)
            proj[i] = sql__cast_to(p, v[r][i], t[i]);
        rows[r] = sql__add_map(p, konst, NULL, proj, ncol);
        memcpy(p->c->nodes[rows[r]]->types, t, sizeof(SqlType) * (size_t)ncol);
    }
    out->node = sql__sum(p, rows, nrow);
    out->s.n = ncol;
    out->s.c = arena_zalloc(p->a, sizeof(SCol) * (size_t)(ncol + 1));
    for (int i = 0; i < ncol; i++) {
        char *b = arena_alloc(p->a, 24);
        snprintf(b, 24, "column%d", i + 1);
        out->s.c[i].name = b;
        out->s.c[i].t = t[i];
    }
    return 0;
}

