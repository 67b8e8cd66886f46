/*
 * sql/plan_join.c - joins the JOIN operator does not offer directly:
 * OUTER joins, NATURAL and USING joins, and parenthesised joins with an
 * alias, each planned as a unit (ASOF joins: plan_asof.c) (FROM items, plan.c), plus the column
 * aliases of a FROM item. Everything here lowers to MAP, UNION, NEGATE,
 * JOIN and DISTINCT nodes (plan_node.c), so it is maintained
 * incrementally like any other plan.
 *
 * Null-safe row equality. JOIN compares the memcmp-comparable key
 * encoding (zset/key.h), in which a nullable column carries a NULL marker
 * byte, so a join whose key columns are nullable (same types on both
 * sides) matches NULL with NULL. SQL equality (`ON a.x = b.y`) never
 * matches NULL: sql__join_side() filters NULL keys first; `ON a.x IS NOT
 * DISTINCT FROM b.y` keeps them, nullable on both sides. Only the joins
 * on whole rows (sql__semi_all: here and for INTERSECT/EXCEPT ALL,
 * plan_set.c) use nullable keys, so that rows compare with NULL equal to
 * NULL.
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
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sql_int.h"

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
    int lw = p->c->nodes[jp->lnode]->ncol;
    if (!jp->x) {
        /* semi-join on the keys against the other side's distinct keys */
        int me = side ? jp->rnode : jp->lnode, other = side ? jp->lnode : jp->rnode;
        const int *mk = side ? jp->rkeys : jp->lkeys, *ok = side ? jp->lkeys : jp->rkeys;
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(jp->nk + 1));
        for (int k = 0; k < jp->nk; k++)
            proj[k] = expr_col(p->a, ok[k], p->c->nodes[other]->types[ok[k]]);
        int keys = sql__unary(p, OPK_DISTINCT, sql__add_map(p, other, NULL, proj, jp->nk));
        int sj = sql__join(p, me, keys, mk, sql__iota(p, jp->nk, 0), jp->nk);
        return sql__cols(p, sj, NULL, 0, side ? jp->nr : jp->nl, NULL);
    }
    /* the set of matched rows, joined back on the whole row */
    int s = sql__unary(p, OPK_DISTINCT, side ? sql__cols(p, jp->j, jp->x, lw, jp->nr, NULL)
                                         : sql__cols(p, jp->j, jp->x, 0, jp->nl, NULL));
    return sql__semi_all(p, side ? jp->rorig : jp->lorig, s);
}

int sql__plan_join_unit(P *p, FromItem *f, PRel *out, PushDown *cand)
{
    if (f->asof) {
        if (sql__plan_asof(p, f, out))
            return p->err->code;
        return f->alias ? rename_unit(p, f, out) : 0;
    }
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
        sql__split_and(p, f->on, &conj, &nconj);
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
    bool *ns = arena_alloc(p->a, sizeof(bool) * (size_t)(nce + 1));
    int nk = 0, npl = 0, npr = 0, nx = 0;
    for (int i = 0; i < nce; i++) {
        Expr *e = ce[i];
        if (sql__refs_within(e, 0, nL)) {
            pl[npl++] = e;
            continue;
        }
        if (sql__refs_within(e, nL, nL + nR)) {
            pr[npr++] = sql__remap(p, e, 0, -nL);
            continue;
        }
        Expr *a, *b;
        int how = sql__join_key(e, nL, nR, &a, &b);
        if (how) {
            lk[nk] = a;
            rk[nk] = sql__remap(p, b, 0, -nL);
            ns[nk] = how == 2; /* IS NOT DISTINCT FROM: NULL matches NULL */
            kt[nk++] = a->t;   /* sql__compare() cast both sides to one type */
            continue;
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
        lf = sql__cols(p, L.node, sql__and_all(p, pl, npl), 0, nL, NULL);
    if (npr)
        rf = sql__cols(p, R.node, sql__and_all(p, pr, npr), 0, nR, NULL);
    jp.lnode = sql__join_side_ns(p, lf, lk, nk, kt, ns, &jp.lkeys);
    jp.rnode = sql__join_side_ns(p, rf, rk, nk, kt, ns, &jp.rkeys);
    jp.nk = nk;
    jp.j = sql__join(p, jp.lnode, jp.rnode, jp.lkeys, jp.rkeys, nk);
    int lw = p->c->nodes[jp.lnode]->ncol;
    if (nx)
        jp.x = sql__remap(p, sql__and_all(p, xr, nx), nL, lw - nL);

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
        int um = sql__minus(p, orig, matched_rows(p, &jp, side));
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nL + nR + 1));
        for (int i = 0; i < nL + nR; i++) {
            bool mine = side ? i >= nL : i < nL;
            proj[i] = mine ? expr_col(p->a, side ? i - nL : i, ot[i])
                           : expr_const_null(p->a, ot[i]);
        }
        parts[nparts++] = sql__add_map(p, um, NULL, proj, nL + nR);
    }
    int node = sql__sum(p, parts, nparts);

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
