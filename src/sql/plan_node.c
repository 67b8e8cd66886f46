/*
 * sql/plan_node.c - the planner's vocabulary: adding circuit nodes (MAP,
 * JOIN, UNION, NEGATE, DISTINCT, ...) and the Z-set algebra built from
 * them (sums, differences, semi-joins on whole rows), plus the helpers
 * over bound expressions and WHERE/ON conjuncts that every planner file
 * (plan.c, plan_join.c, plan_set.c, plan_subq.c, plan_window.c,
 * plan_tvf.c, compile.c) shares. Nodes are appended to the circuit in
 * creation order, so a node's inputs always have smaller ids.
 */
#include <string.h>

#include "../base/vec.h"
#include "sql_int.h"

/* ---- nodes ---- */

CNode *sql__add_node(P *p, OpKind k, int nin, int ncol)
{
    Circuit *c = p->c;
    CNode *n = arena_zalloc(p->a, sizeof(*n));
    n->id = c->nnodes;
    n->k = k;
    n->nin = nin;
    n->in = arena_zalloc(p->a, sizeof(int) * (size_t)(nin ? nin : 1));
    n->ncol = ncol;
    n->types = arena_zalloc(p->a, sizeof(SqlType) * (size_t)(ncol ? ncol : 1));
    n->rel = -1;
    n->owner = p->owner;
    *VEC_PUSH_ARENA(p->a, c->nodes, c->nnodes, p->cap_nodes) = n;
    return n;
}

int sql__add_map(P *p, int in, Expr *filter, Expr **proj, int nproj)
{
    CNode *n = sql__add_node(p, OPK_MAP, 1, nproj);
    n->in[0] = in;
    n->filter = filter;
    n->proj = proj;
    for (int i = 0; i < nproj; i++)
        n->types[i] = proj[i]->t;
    return n->id;
}

Expr **sql__identity_proj(P *p, const CNode *src, int extra)
{
    Expr **v = arena_alloc(p->a, sizeof(Expr *) * (size_t)(src->ncol + extra + 1));
    for (int i = 0; i < src->ncol; i++)
        v[i] = expr_col(p->a, i, src->types[i]);
    return v;
}

int sql__join_eq(const Expr *e, const Expr **eq)
{
    if (e->k == E_EQ) {
        *eq = e;
        return 1;
    }
    if (e->k != E_COALESCE || e->na != 2 || e->a[0]->k != E_EQ || e->a[1]->k != E_AND ||
        e->a[1]->na != 2)
        return 0;
    const Expr *q = e->a[0], *both = e->a[1];
    for (int i = 0; i < 2; i++)
        if (both->a[i]->k != E_ISNULL || !sql__expr_equal(both->a[i]->a[0], q->a[i]))
            return 0;
    *eq = q;
    return 2;
}

int sql__join_key(const Expr *e, int nL, int nR, Expr **l, Expr **r)
{
    const Expr *q;
    int how = sql__join_eq(e, &q);
    if (!how || !sql__refs_any(q->a[0]) || !sql__refs_any(q->a[1]))
        return 0;
    Expr *a = q->a[0], *b = q->a[1];
    if (sql__refs_within(b, 0, nL) && sql__refs_within(a, nL, nL + nR)) {
        Expr *t = a;
        a = b;
        b = t;
    }
    if (!sql__refs_within(a, 0, nL) || !sql__refs_within(b, nL, nL + nR))
        return 0;
    *l = a;
    *r = b;
    return how;
}

int sql__join_side(P *p, int node, Expr **keys, int nkeys, const SqlType *kt, int **cols_out)
{
    return sql__join_side_ns(p, node, keys, nkeys, kt, NULL, cols_out);
}

int sql__join_side_ns(P *p, int node, Expr **keys, int nkeys, const SqlType *kt,
                      const bool *nullsafe, int **cols_out)
{
    CNode *src = p->c->nodes[node];
    int *cols = arena_alloc(p->a, sizeof(int) * (size_t)nkeys);
    bool need = false;
    for (int i = 0; i < nkeys; i++) {
        bool ns = nullsafe && nullsafe[i];
        /* a null-safe key is nullable on both sides: the key encodings
           must agree (a NULL marker byte in both, plan_join.c) */
        if (keys[i]->k == E_COL && keys[i]->t.nullable == ns &&
            sql__same_repr(keys[i]->t, kt[i]))
            cols[i] = keys[i]->col;
        else
            need = true;
    }
    if (need) {
        Expr **proj = sql__identity_proj(p, src, nkeys);
        Expr **nn = arena_alloc(p->a, sizeof(Expr *) * (size_t)nkeys);
        int nnn = 0, np = src->ncol;
        for (int i = 0; i < nkeys; i++) {
            bool ns = nullsafe && nullsafe[i]; /* NULL keys kept: NULL matches NULL */
            if (keys[i]->t.nullable && !ns) {
                Expr *t = sql__mk(p, E_ISNOTNULL, type_make(TK_BOOL, false), 1);
                t->a[0] = keys[i];
                nn[nnn++] = t;
            }
            SqlType t = kt[i];
            t.nullable = ns;
            Expr *k = sql__cast_to(p, keys[i], t);
            if (k == keys[i]) { /* same repr, only nullability differs */
                k = arena_alloc(p->a, sizeof(*k));
                *k = *keys[i];
            }
            k->t.nullable = t.nullable;
            proj[np] = k;
            cols[i] = np++;
        }
        node = sql__add_map(p, node, sql__and_all(p, nn, nnn), proj, np);
    }
    *cols_out = cols;
    return node;
}

/* ---- Z-set algebra ---- */

static SqlType *types_of(P *p, int node) { return p->c->nodes[node]->types; }
static int ncol_of(P *p, int node) { return p->c->nodes[node]->ncol; }

int sql__unary(P *p, OpKind k, int in)
{
    int n = ncol_of(p, in);
    const SqlType *t = types_of(p, in);
    CNode *d = sql__add_node(p, k, 1, n);
    d->in[0] = in;
    memcpy(d->types, t, sizeof(SqlType) * (size_t)n);
    return d->id;
}

int sql__sum(P *p, const int *in, int n)
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

int sql__sum2(P *p, int a, int b)
{
    int in[2] = {a, b};
    return sql__sum(p, in, 2);
}

int sql__minus(P *p, int a, int b) { return sql__sum2(p, a, sql__unary(p, OPK_NEGATE, b)); }

int sql__cols(P *p, int in, Expr *filter, int first, int n, const SqlType *t)
{
    const SqlType *it = types_of(p, in);
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        proj[i] = expr_col(p->a, first + i, t ? t[i] : it[first + i]);
    return sql__add_map(p, in, filter, proj, n);
}

int sql__join(P *p, int l, int r, const int *lk, const int *rk, int nk)
{
    int nl = ncol_of(p, l), nr = ncol_of(p, r);
    const SqlType *lt = types_of(p, l), *rt = types_of(p, r);
    CNode *j = sql__add_node(p, OPK_JOIN, 2, nl + nr);
    j->in[0] = l;
    j->in[1] = r;
    j->nkeys = nk;
    j->lkeys = arena_alloc(p->a, sizeof(int) * (size_t)(nk + 1));
    j->rkeys = arena_alloc(p->a, sizeof(int) * (size_t)(nk + 1));
    if (nk) {
        memcpy(j->lkeys, lk, sizeof(int) * (size_t)nk);
        memcpy(j->rkeys, rk, sizeof(int) * (size_t)nk);
    }
    memcpy(j->types, lt, sizeof(SqlType) * (size_t)nl);
    memcpy(j->types + nl, rt, sizeof(SqlType) * (size_t)nr);
    return j->id;
}

int *sql__iota(P *p, int n, int first)
{
    int *v = arena_alloc(p->a, sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        v[i] = first + i;
    return v;
}

int sql__semi_all(P *p, int a, int s)
{
    int n = ncol_of(p, a);
    int *k = sql__iota(p, n, 0);
    return sql__cols(p, sql__join(p, a, s, k, k, n), NULL, 0, n, NULL);
}

/* ---- expressions over a combined scope ---- */

bool sql__refs_any(const Expr *e)
{
    if (e->k == E_COL)
        return true;
    for (int i = 0; i < e->na; i++)
        if (sql__refs_any(e->a[i]))
            return true;
    return false;
}

bool sql__refs_within(const Expr *e, int lo, int hi)
{
    if (e->k == E_COL && (e->col < lo || e->col >= hi))
        return false;
    for (int i = 0; i < e->na; i++)
        if (!sql__refs_within(e->a[i], lo, hi))
            return false;
    return true;
}

Expr *sql__remap(P *p, const Expr *e, int from, int delta)
{
    Expr *c = arena_alloc(p->a, sizeof(*c));
    *c = *e;
    if (e->k == E_COL && e->col >= from)
        c->col += delta;
    if (e->na) {
        c->a = arena_alloc(p->a, sizeof(Expr *) * (size_t)e->na);
        for (int i = 0; i < e->na; i++)
            c->a[i] = sql__remap(p, e->a[i], from, delta);
    }
    return c;
}

/* ---- the AST ---- */

bool sql__ast_any(const Ast *x, bool (*hit)(const Ast *))
{
    if (!x)
        return false;
    if (hit(x))
        return true;
    if (sql__ast_any(x->a, hit) || sql__ast_any(x->b, hit) || sql__ast_any(x->c, hit))
        return true;
    for (int i = 0; i < x->args.n; i++)
        if (sql__ast_any(x->args.v[i], hit))
            return true;
    return false;
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

void sql__split_and(P *p, Ast *x, Ast ***v, int *n)
{
    Ast **nv = arena_alloc(p->a, sizeof(Ast *) * (size_t)(*n + count_and(x)));
    if (*n && *v)
        memcpy(nv, *v, sizeof(Ast *) * (size_t)*n);
    fill_and(x, nv, n);
    *v = nv;
}
