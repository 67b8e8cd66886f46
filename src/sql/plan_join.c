/*
 * sql/plan_join.c - the parts of a query built from several relations that
 * the operators do not offer directly: OUTER joins, NATURAL and USING
 * joins, INTERSECT / EXCEPT (with and without ALL), WITH and VALUES.
 * Called by plan.c; everything here lowers to MAP, UNION, NEGATE, JOIN,
 * DISTINCT and CONST nodes, so it is maintained incrementally like any
 * other plan.
 *
 * Weights. A relation is a Z-set whose integral gives each row a
 * multiplicity >= 0. With a, b the multiplicities of a row in A and B,
 * [c] = 1 if c else 0, and DISTINCT(X) = the rows of X with weight > 0:
 *
 *   UNION ALL      a + b                   A + B
 *   UNION          [a + b > 0]             DISTINCT(A + B)
 *   EXCEPT         [a > 0 and b = 0]       DISTINCT(DISTINCT(A) - B)
 *   INTERSECT      [a > 0 and b > 0]       DA - DISTINCT(DA - B), DA = DISTINCT(A)
 *   EXCEPT ALL     max(0, a - b)           D |x| DISTINCT(D), D = A - B
 *   INTERSECT ALL  min(a, b) = a - max(0, a - b)
 *
 * where X |x| Y joins on every column (weights multiply, so D |x|
 * DISTINCT(D) keeps D's weight a - b exactly where it is positive).
 *
 * Null-safe row equality. Set operations compare rows with NULL equal to
 * NULL; JOIN compares the memcmp-comparable key encoding (zset/key.h), in
 * which a nullable column carries a NULL marker byte, so a join whose key
 * columns are nullable (same types on both sides) matches NULL with NULL.
 * SQL equality (`ON a.x = b.y`) never matches NULL: join_side() in plan.c
 * filters NULL keys first. Only the joins made here on whole rows use
 * nullable keys.
 *
 * Outer joins. L LEFT JOIN R ON c, where c's conjuncts split into equi-keys
 * K (one side's expression = the other's), PL (only L's columns, or none),
 * PR (only R's) and X (the rest):
 *
 *   M  = sigma_X(sigma_PL(L) |x|_K sigma_PR(R))      the matched pairs
 *   ML = the rows of L with at least one match, with L's multiplicity:
 *        X empty:  sigma_PL(L) |x|_K DISTINCT(keys of sigma_PR(R))
 *        else:     L |x|_all DISTINCT(pi_L(M))         (null-safe, all columns)
 *   result = M + pad_R(L - ML)                         (R's columns NULL)
 *
 * RIGHT mirrors it, FULL adds both padded parts. The ON condition is never
 * moved to WHERE or below the preserved side (PL filters only the copy of
 * L that looks for matches); WHERE applies to the result (plan.c).
 *
 * USING / NATURAL. The pairs of equally named columns become equi-keys;
 * the output starts with one merged column per pair (left's value for
 * INNER and LEFT, right's for RIGHT, COALESCE(left, right) for FULL), then
 * every input column. The inputs' pair columns stay reachable as
 * qual.name (SCol.qual_only) but are left out of `SELECT *`.
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

/* ---- small node builders ---- */

static SqlType *types_of(P *p, int node) { return p->c->nodes[node]->types; }
static int ncol_of(P *p, int node) { return p->c->nodes[node]->ncol; }

static int unary(P *p, OpKind k, int in)
{
    int n = ncol_of(p, in);
    const SqlType *t = types_of(p, in);
    CNode *d = sql__add_node(p, k, 1, n);
    d->in[0] = in;
    memcpy(d->types, t, sizeof(SqlType) * (size_t)n);
    return d->id;
}

/* Sum of inputs in[0..n) (all with the same column types). */
static int sum(P *p, const int *in, int n)
{
    if (n == 1)
        return in[0];
    int nc = ncol_of(p, in[0]);
    const SqlType *t = types_of(p, in[0]);
    CNode *u = sql__add_node(p, OPK_UNION, n, nc);
    memcpy(u->in, in, sizeof(int) * (size_t)n);
    memcpy(u->types, t, sizeof(SqlType) * (size_t)nc);
    return u->id;
}

static int sum2(P *p, int a, int b)
{
    int in[2] = {a, b};
    return sum(p, in, 2);
}

/* a - b */
static int minus(P *p, int a, int b) { return sum2(p, a, unary(p, OPK_NEGATE, b)); }

/* Columns [first, first + n) of node `in` (typed t[] when t is non-NULL),
   rows passing filter (may be NULL). */
static int cols(P *p, int in, Expr *filter, int first, int n, const SqlType *t)
{
    const SqlType *it = types_of(p, in);
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        proj[i] = expr_col(p->a, first + i, t ? t[i] : it[first + i]);
    return sql__add_map(p, in, filter, proj, n);
}

static int join(P *p, int l, int r, const int *lk, const int *rk, int nk)
{
    int nl = ncol_of(p, l), nr = ncol_of(p, r);
    const SqlType *lt = types_of(p, l), *rt = types_of(p, r);
    CNode *j = sql__add_node(p, OPK_JOIN, 2, nl + nr);
    j->in[0] = l;
    j->in[1] = r;
    j->nkeys = nk;
    j->lkeys = arena_alloc(p->a, sizeof(int) * (size_t)(nk + 1));
    j->rkeys = arena_alloc(p->a, sizeof(int) * (size_t)(nk + 1));
    memcpy(j->lkeys, lk, sizeof(int) * (size_t)nk);
    memcpy(j->rkeys, rk, sizeof(int) * (size_t)nk);
    memcpy(j->types, lt, sizeof(SqlType) * (size_t)nl);
    memcpy(j->types + nl, rt, sizeof(SqlType) * (size_t)nr);
    return j->id;
}

static int *iota(P *p, int n, int first)
{
    int *v = arena_alloc(p->a, sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        v[i] = first + i;
    return v;
}

/* The rows of a whose value also appears in s (a set with a's column
   types), with a's weights: a joined with s on all columns, null-safe. */
static int semi_all(P *p, int a, int s)
{
    int n = ncol_of(p, a);
    int *k = iota(p, n, 0);
    return cols(p, join(p, a, s, k, k, n), NULL, 0, n, NULL);
}

/* ---- set operations ---- */

const char *sql__setop_name(SetOp op)
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

int sql__plan_setop(P *p, SetOp op, int a, int b, int ncol, const SqlType *t, int *node)
{
    (void)ncol;
    (void)t; /* a and b already have these types (plan.c conform()) */
    switch (op) {
    case SET_UNION_ALL:
        *node = sum2(p, a, b);
        break;
    case SET_UNION:
        *node = unary(p, OPK_DISTINCT, sum2(p, a, b));
        break;
    case SET_EXCEPT:
        *node = unary(p, OPK_DISTINCT, minus(p, unary(p, OPK_DISTINCT, a), b));
        break;
    case SET_INTERSECT: {
        int da = unary(p, OPK_DISTINCT, a);
        *node = minus(p, da, unary(p, OPK_DISTINCT, minus(p, da, b)));
        break;
    }
    case SET_EXCEPT_ALL:
    case SET_INTERSECT_ALL: {
        int d = minus(p, a, b);
        int ex = semi_all(p, d, unary(p, OPK_DISTINCT, d)); /* max(0, a - b) */
        *node = op == SET_EXCEPT_ALL ? ex : minus(p, a, ex);
        break;
    }
    default:
        return perr(p, SL_EUNSUPPORTED, 1, 1, "set operation %d is not supported yet", (int)op);
    }
    return 0;
}

/* ---- expressions over a combined scope ---- */

static bool refs_any(const Expr *e)
{
    if (e->k == E_COL)
        return true;
    for (int i = 0; i < e->na; i++)
        if (refs_any(e->a[i]))
            return true;
    return false;
}

static bool refs_within(const Expr *e, int lo, int hi)
{
    if (e->k == E_COL && (e->col < lo || e->col >= hi))
        return false;
    for (int i = 0; i < e->na; i++)
        if (!refs_within(e->a[i], lo, hi))
            return false;
    return true;
}

/* Copy of e with every column index >= from moved by delta. */
static Expr *remap(P *p, const Expr *e, int from, int delta)
{
    Expr *c = arena_alloc(p->a, sizeof(*c));
    *c = *e;
    if (e->k == E_COL && e->col >= from)
        c->col += delta;
    if (e->na) {
        c->a = arena_alloc(p->a, sizeof(Expr *) * (size_t)e->na);
        for (int i = 0; i < e->na; i++)
            c->a[i] = remap(p, e->a[i], from, delta);
    }
    return c;
}

static Expr *and_all(P *p, Expr **v, int n)
{
    return sql__and_all(p, v, n);
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

/* ---- USING / NATURAL ---- */

static const char *join_name(const FromItem *f)
{
    static const char *names[] = {"JOIN", "CROSS JOIN", "LEFT JOIN", "RIGHT JOIN",
                                  "FULL JOIN"};
    if (f->natural)
        return "NATURAL JOIN";
    return names[f->jk];
}

/* The one column of s reachable by the bare name `name`, -1 if none, -2
   (error set) if several. */
static int visible_col(P *p, const FromItem *f, const Scope *s, const char *name,
                       const char *side)
{
    int found = -1;
    for (int i = 0; i < s->n; i++)
        if (sql__star_includes(&s->c[i], NULL) && !strcasecmp(s->c[i].name, name)) {
            if (found >= 0) {
                perr(p, SL_ESEMANTIC, f->line, f->col,
                     "common column name \"%s\" appears more than once in the %s input of %s",
                     name, side, join_name(f));
                return -2;
            }
            found = i;
        }
    return found;
}

/* Pairs (l[i], r[i]) of columns joined by USING (...) or NATURAL. */
static int using_pairs(P *p, const FromItem *f, const Scope *ls, const Scope *rs, int **lo,
                       int **ro, const char ***names, int *n)
{
    int cap = f->natural ? ls->n : f->nusing;
    *lo = arena_alloc(p->a, sizeof(int) * (size_t)(cap + 1));
    *ro = arena_alloc(p->a, sizeof(int) * (size_t)(cap + 1));
    *names = arena_alloc(p->a, sizeof(char *) * (size_t)(cap + 1));
    *n = 0;
    if (f->natural) {
        for (int i = 0; i < ls->n; i++) {
            const SCol *c = &ls->c[i];
            if (!sql__star_includes(c, NULL))
                continue;
            int r = visible_col(p, f, rs, c->name, "right");
            if (r == -2)
                return p->err->code;
            if (r < 0)
                continue;
            if (visible_col(p, f, ls, c->name, "left") != i)
                return p->err->code;
            (*lo)[*n] = i;
            (*ro)[*n] = r;
            (*names)[(*n)++] = c->name;
        }
        return 0;
    }
    for (int k = 0; k < f->nusing; k++) {
        const char *name = f->using_cols[k];
        for (int j = 0; j < k; j++)
            if (!strcasecmp(f->using_cols[j], name))
                return perr(p, SL_ESEMANTIC, f->line, f->col,
                            "column \"%s\" appears more than once in USING", name);
        int l = visible_col(p, f, ls, name, "left"), r;
        if (l == -2)
            return p->err->code;
        if (l < 0)
            return perr(p, SL_ESEMANTIC, f->line, f->col,
                        "column \"%s\" in USING is not a column of the left input of the join",
                        name);
        if ((r = visible_col(p, f, rs, name, "right")) == -2)
            return p->err->code;
        if (r < 0)
            return perr(p, SL_ESEMANTIC, f->line, f->col,
                        "column \"%s\" in USING is not a column of the right input of the join",
                        name);
        (*lo)[*n] = l;
        (*ro)[*n] = r;
        (*names)[(*n)++] = name;
    }
    return 0;
}

/* ---- joins planned as a unit ---- */

/* (a JOIN b) AS alias: keep the columns of `SELECT *`, all named alias.x. */
static int rename_unit(P *p, const FromItem *f, PRel *r)
{
    int n = 0;
    int *keep = arena_alloc(p->a, sizeof(int) * (size_t)(r->s.n + 1));
    for (int i = 0; i < r->s.n; i++)
        if (sql__star_includes(&r->s.c[i], NULL))
            keep[n++] = i;
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    Scope s = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(n + 1)), n};
    for (int i = 0; i < n; i++) {
        s.c[i] = r->s.c[keep[i]];
        s.c[i].qual = f->alias;
        s.c[i].qual_only = false;
        proj[i] = expr_col(p->a, keep[i], r->s.c[keep[i]].t);
    }
    if (n != r->s.n)
        r->node = sql__add_map(p, r->node, NULL, proj, n);
    r->s = s;
    return sql__apply_col_aliases(p, f, r);
}

/* Match finder for one preserved side (side 0 = left): the rows of that
   side with at least one match, with their multiplicity. */
typedef struct JoinParts {
    int lnode, rnode;   /* join inputs (filtered, key columns appended) */
    int *lkeys, *rkeys;
    int nk;
    int j;              /* the join node */
    Expr *x;            /* residual over j's columns, or NULL */
    int nl, nr;         /* columns of the original sides */
    int lorig, rorig;   /* the original (unfiltered) sides */
} JoinParts;

static int matched_rows(P *p, const JoinParts *jp, int side)
{
    int lw = ncol_of(p, jp->lnode);
    if (!jp->x) {
        /* semi-join on the keys against the other side's distinct keys */
        int me = side ? jp->rnode : jp->lnode, other = side ? jp->lnode : jp->rnode;
        const int *mk = side ? jp->rkeys : jp->lkeys, *ok = side ? jp->lkeys : jp->rkeys;
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(jp->nk + 1));
        for (int k = 0; k < jp->nk; k++)
            proj[k] = expr_col(p->a, ok[k], types_of(p, other)[ok[k]]);
        int keys = unary(p, OPK_DISTINCT, sql__add_map(p, other, NULL, proj, jp->nk));
        int sj = join(p, me, keys, mk, iota(p, jp->nk, 0), jp->nk);
        return cols(p, sj, NULL, 0, side ? jp->nr : jp->nl, NULL);
    }
    /* the set of matched rows, joined back on the whole row */
    int s = unary(p, OPK_DISTINCT, side ? cols(p, jp->j, jp->x, lw, jp->nr, NULL)
                                         : cols(p, jp->j, jp->x, 0, jp->nl, NULL));
    return semi_all(p, side ? jp->rorig : jp->lorig, s);
}

int sql__plan_join_unit(P *p, FromItem *f, PRel *out, PushDown *cand)
{
    bool outer = f->jk == J_LEFT || f->jk == J_RIGHT || f->jk == J_FULL;
    if (!outer && !f->natural && !f->nusing) { /* (a JOIN b ...) AS alias */
        FromItem g = *f;
        g.alias = NULL;
        g.col_aliases = NULL;
        g.ncol_aliases = 0;
        if (sql__plan_from_item(p, &g, out, NULL))
            return p->err->code;
        return f->alias ? rename_unit(p, f, out) : 0;
    }
    /* WHERE conjuncts over a preserved side alone may filter it first (not
       through an alias: its names are not the sides') */
    PushDown *cl = NULL, *cr = NULL;
    if (!f->alias) {
        cl = f->jk == J_RIGHT || f->jk == J_FULL ? NULL : cand;
        cr = f->jk == J_LEFT || f->jk == J_FULL ? NULL : cand;
    }
    PRel L, R;
    if (sql__plan_from_item(p, f->l, &L, cl) || sql__plan_from_item(p, f->r, &R, cr))
        return p->err->code;
    int nL = L.s.n, nR = R.s.n;
    Scope all = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(nL + nR + 1)), nL + nR};
    memcpy(all.c, L.s.c, sizeof(SCol) * (size_t)nL);
    memcpy(all.c + nL, R.s.c, sizeof(SCol) * (size_t)nR);

    /* conditions: USING/NATURAL pairs, then ON's conjuncts */
    int *ul = NULL, *ur = NULL, nu = 0;
    const char **un = NULL;
    if ((f->natural || f->nusing) && using_pairs(p, f, &L.s, &R.s, &ul, &ur, &un, &nu))
        return p->err->code;
    if (!f->natural && !f->nusing)
        nu = 0;
    Ast **conj = NULL;
    int nconj = 0;
    if (f->on)
        split_and(p, f->on, &conj, &nconj);
    Expr **ce = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nu + nconj + 1));
    SqlType *ut = arena_alloc(p->a, sizeof(SqlType) * (size_t)(nu + 1));
    for (int i = 0; i < nu; i++) {
        Ast at = {0};
        at.line = f->line;
        at.col = f->col;
        SqlType lt = L.s.c[ul[i]].t, rt = R.s.c[ur[i]].t;
        if (!sql__common_type(lt, rt, &ut[i]))
            return perr(p, SL_ESEMANTIC, f->line, f->col,
                        "%s column \"%s\" has incompatible types %s and %s",
                        f->natural ? "NATURAL JOIN" : "USING", un[i], tname(lt), tname(rt));
        if (ut[i].kind == TK_NULL)
            ut[i] = type_make(TK_INT, true);
        if (!(ce[i] = sql__compare(p, &at, E_EQ, expr_col(p->a, ul[i], lt),
                                   expr_col(p->a, nL + ur[i], rt))))
            return p->err->code;
    }
    for (int i = 0; i < nconj; i++) {
        Ast *x = conj[i];
        if (sql__has_subquery(x))
            return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                        "subqueries in an outer join's ON clause are not supported yet");
        AggCtx none = {0};
        BindCtx bc = {&all, &none, "ON"};
        Expr *e = sql__bind(p, &bc, x);
        if (!e || !(e = sql__bool_operand(p, e, x, "ON")))
            return p->err->code;
        ce[nu + i] = e;
    }
    int nce = nu + nconj;

    /* classify: equi-keys, left-only (or constant), right-only, the rest */
    Expr **lk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nce + 1));
    Expr **rk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nce + 1));
    SqlType *kt = arena_alloc(p->a, sizeof(SqlType) * (size_t)(nce + 1));
    Expr **pl = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nce + 1));
    Expr **pr = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nce + 1));
    Expr **xr = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nce + 1));
    int nk = 0, npl = 0, npr = 0, nx = 0;
    for (int i = 0; i < nce; i++) {
        Expr *e = ce[i];
        if (refs_within(e, 0, nL)) {
            pl[npl++] = e;
            continue;
        }
        if (refs_within(e, nL, nL + nR)) {
            pr[npr++] = remap(p, e, 0, -nL);
            continue;
        }
        if (e->k == E_EQ && refs_any(e->a[0]) && refs_any(e->a[1])) {
            Expr *a = e->a[0], *b = e->a[1];
            if (refs_within(b, 0, nL) && refs_within(a, nL, nL + nR)) {
                Expr *t = a;
                a = b;
                b = t;
            }
            if (refs_within(a, 0, nL) && refs_within(b, nL, nL + nR)) {
                lk[nk] = a;
                rk[nk] = remap(p, b, 0, -nL);
                kt[nk++] = a->t; /* sql__compare() cast both sides to one type */
                continue;
            }
        }
        xr[nx++] = e;
    }

    /* the matched pairs M */
    JoinParts jp = {0};
    jp.nl = nL;
    jp.nr = nR;
    jp.lorig = L.node;
    jp.rorig = R.node;
    int lf = L.node, rf = R.node;
    if (npl)
        lf = cols(p, L.node, and_all(p, pl, npl), 0, nL, NULL);
    if (npr)
        rf = cols(p, R.node, and_all(p, pr, npr), 0, nR, NULL);
    jp.lnode = sql__join_side(p, lf, lk, nk, kt, &jp.lkeys);
    jp.rnode = sql__join_side(p, rf, rk, nk, kt, &jp.rkeys);
    jp.nk = nk;
    jp.j = join(p, jp.lnode, jp.rnode, jp.lkeys, jp.rkeys, nk);
    int lw = ncol_of(p, jp.lnode);
    if (nx)
        jp.x = remap(p, and_all(p, xr, nx), nL, lw - nL);

    bool keep_l = f->jk == J_LEFT || f->jk == J_FULL;
    bool keep_r = f->jk == J_RIGHT || f->jk == J_FULL;
    SqlType *ot = arena_alloc(p->a, sizeof(SqlType) * (size_t)(nL + nR + 1));
    for (int i = 0; i < nL; i++) {
        ot[i] = L.s.c[i].t;
        ot[i].nullable = ot[i].nullable || keep_r;
    }
    for (int i = 0; i < nR; i++) {
        ot[nL + i] = R.s.c[i].t;
        ot[nL + i].nullable = ot[nL + i].nullable || keep_l;
    }
    int parts[3], nparts = 0;
    {
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nL + nR + 1));
        for (int i = 0; i < nL; i++)
            proj[i] = expr_col(p->a, i, ot[i]);
        for (int i = 0; i < nR; i++)
            proj[nL + i] = expr_col(p->a, lw + i, ot[nL + i]);
        parts[nparts++] = sql__add_map(p, jp.j, jp.x, proj, nL + nR);
    }
    for (int side = 0; side < 2; side++) {
        if (!(side ? keep_r : keep_l))
            continue;
        int orig = side ? R.node : L.node;
        int um = minus(p, orig, matched_rows(p, &jp, side));
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nL + nR + 1));
        for (int i = 0; i < nL + nR; i++) {
            bool mine = side ? i >= nL : i < nL;
            proj[i] = mine ? expr_col(p->a, side ? i - nL : i, ot[i])
                           : expr_const_null(p->a, ot[i]);
        }
        parts[nparts++] = sql__add_map(p, um, NULL, proj, nL + nR);
    }
    int node = sum(p, parts, nparts);

    /* output scope; USING/NATURAL: merged columns first */
    Scope s = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(nu + nL + nR + 1)), nu + nL + nR};
    for (int i = 0; i < nL + nR; i++) {
        s.c[nu + i] = all.c[i];
        s.c[nu + i].t = ot[i];
    }
    if (nu) {
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nu + nL + nR + 1));
        for (int i = 0; i < nu; i++) {
            Expr *l = sql__cast_to(p, expr_col(p->a, ul[i], ot[ul[i]]), ut[i]);
            Expr *r = sql__cast_to(p, expr_col(p->a, nL + ur[i], ot[nL + ur[i]]), ut[i]);
            Expr *m = f->jk == J_RIGHT ? r : l;
            if (f->jk == J_FULL) {
                SqlType t = ut[i];
                t.nullable = l->t.nullable && r->t.nullable;
                m = sql__mk(p, E_COALESCE, t, 2);
                m->a[0] = l;
                m->a[1] = r;
            }
            proj[i] = m;
            s.c[i].qual = NULL;
            s.c[i].name = un[i];
            s.c[i].t = m->t;
            s.c[nu + ul[i]].qual_only = true;
            s.c[nu + nL + ur[i]].qual_only = true;
        }
        for (int i = 0; i < nL + nR; i++)
            proj[nu + i] = expr_col(p->a, i, ot[i]);
        node = sql__add_map(p, node, NULL, proj, nu + nL + nR);
    }
    out->node = node;
    out->s = s;
    return f->alias ? rename_unit(p, f, out) : 0;
}

/* ---- FROM item column aliases ---- */

int sql__apply_col_aliases(P *p, const FromItem *f, PRel *r)
{
    if (!f->ncol_aliases)
        return 0;
    int n = 0;
    for (int i = 0; i < r->s.n; i++)
        n += sql__star_includes(&r->s.c[i], NULL);
    if (f->ncol_aliases > n)
        return perr(p, SL_ESEMANTIC, f->line, f->col,
                    "%s has %d columns available but %d column names are given",
                    f->alias ? f->alias : "the FROM item", n, f->ncol_aliases);
    SCol *c = arena_alloc(p->a, sizeof(SCol) * (size_t)(r->s.n + 1));
    memcpy(c, r->s.c, sizeof(SCol) * (size_t)r->s.n);
    for (int i = 0, k = 0; i < r->s.n && k < f->ncol_aliases; i++)
        if (sql__star_includes(&c[i], NULL))
            c[i].name = f->col_aliases[k++];
    r->s.c = c;
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

static int plan_cte(P *p, CteScope *s, int i)
{
    Cte *c = &s->ctes[i];
    struct CteScope *saved = p->ctes;
    int vis = s->visible;
    PRel r;
    p->ctes = s; /* what the definition sees: earlier WITH queries and outer ones */
    s->visible = i;
    int rc = sql__plan_query(p, c->q, &r);
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
    out->node = sum(p, rows, nrow);
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
