/*
 * sql/plan_rec.c - recursive relations: WITH RECURSIVE (plan_set.c plans
 * the query's terms) and DECLARE RECURSIVE VIEW v (cols) followed by
 * CREATE VIEW v AS ... v ... (compile.c).
 *
 * The definition Q is planned like any query, with the recursive name
 * bound to a port: a node without inputs of the declared (or the base
 * term's) types. Its nodes, [lo, nnodes) of the circuit, then move into
 * a circuit of their own hung under one OPK_FIXPOINT node
 * (circuit/op_fixpoint.c), whose inputs are the earlier nodes Q reads;
 * the fixpoint iterates Q from the empty relation to its least fixed
 * point and keeps it up to date step by step. The nodes that depend on
 * the port must be monotone (MAP, UNION, JOIN, DISTINCT): an aggregate,
 * EXCEPT, NOT IN / NOT EXISTS, an outer join, a window or a LIMIT over
 * the recursive relation is refused at the relation's line:column (the
 * least fixed point would not be what PostgreSQL computes, or not exist).
 * Only the relation's own name may recur: a view that reads another
 * declared recursive view before that one's CREATE VIEW (mutual
 * recursion) is refused.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sql_int.h"

int sql__rec_port(P *p, const char *name, int n, const SqlType *t)
{
    CNode *port = sql__add_node(p, OPK_UNION, 0, n);
    memcpy(port->types, t, sizeof(SqlType) * (size_t)n);
    port->label = name;
    return port->id;
}

/* What a node kind that may not depend on the recursive relation is
   made of, for the message. */
static const char *nonmonotone(OpKind k)
{
    switch (k) {
    case OPK_AGG: return "an aggregate or GROUP BY (or a scalar subquery)";
    case OPK_NEGATE: return "EXCEPT, INTERSECT, NOT IN, NOT EXISTS or an outer join";
    case OPK_TOPK: return "ORDER BY ... LIMIT";
    case OPK_WINDOW: return "a window function";
    case OPK_FIXPOINT: return "another recursive query";
    case OPK_FINAL: return "'emit_final'";
    default: return "this operation";
    }
}

int sql__rec_fixpoint(P *p, int lo, int port, int out, const char *name, int line, int col)
{
    Circuit *c = p->c;
    int hi = c->nnodes, nn = hi - lo;
    bool *dep = arena_zalloc(p->a, (size_t)nn + 1);
    dep[port - lo] = true;
    for (int i = port + 1; i < hi; i++) {
        const CNode *n = c->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= lo && dep[n->in[j] - lo])
                dep[i - lo] = true;
        if (dep[i - lo] && n->k != OPK_MAP && n->k != OPK_UNION && n->k != OPK_JOIN &&
            n->k != OPK_DISTINCT) {
            perr(p, SL_EUNSUPPORTED, line, col,
                 "recursive query \"%s\": %s over the recursive relation itself is not "
                 "supported (only SELECT, WHERE, inner joins, DISTINCT and UNION [ALL]: the "
                 "recursion must be monotone)",
                 name, nonmonotone(n->k));
            return -1;
        }
    }
    if (!dep[out - lo])
        return out; /* it does not read itself: an ordinary query */
    /* the inputs: earlier nodes read by the definition */
    int nin = 0;
    for (int i = lo; i < hi; i++)
        nin += c->nodes[i]->nin;
    int *ext = arena_alloc(p->a, sizeof(int) * (size_t)(nin + 1));
    int next = 0;
    for (int i = lo; i < hi; i++) {
        const CNode *n = c->nodes[i];
        for (int j = 0; j < n->nin; j++) {
            if (n->in[j] >= lo)
                continue;
            bool seen = false;
            for (int k = 0; k < next && !seen; k++)
                seen = ext[k] == n->in[j];
            if (!seen)
                ext[next++] = n->in[j];
        }
    }
    Circuit *sub = arena_zalloc(p->a, sizeof(*sub));
    sub->arena = p->a;
    sub->tz = c->tz;
    int nports = next + 1;
    sub->nnodes = nports + nn - 1;
    sub->nodes = arena_zalloc(p->a, sizeof(CNode *) * (size_t)(sub->nnodes + 1));
    int *map = arena_alloc(p->a, sizeof(int) * (size_t)nn);
    sub->nodes[0] = c->nodes[port];
    map[port - lo] = 0;
    for (int k = 0; k < next; k++) {
        const CNode *x = c->nodes[ext[k]];
        CNode *pn = arena_zalloc(p->a, sizeof(*pn));
        pn->id = k + 1;
        pn->k = OPK_UNION;
        pn->in = arena_zalloc(p->a, sizeof(int));
        pn->ncol = x->ncol;
        pn->types = x->types;
        pn->rel = -1;
        pn->owner = p->owner;
        pn->label = x->label;
        sub->nodes[k + 1] = pn;
    }
    int at = nports;
    for (int i = lo; i < hi; i++)
        if (i != port)
            map[i - lo] = at++;
    for (int i = lo; i < hi; i++) {
        CNode *n = c->nodes[i];
        n->id = map[i - lo];
        for (int j = 0; j < n->nin; j++) {
            int x = n->in[j];
            if (x >= lo) {
                n->in[j] = map[x - lo];
            } else {
                int k = 0;
                while (ext[k] != x)
                    k++;
                n->in[j] = k + 1;
            }
        }
        sub->nodes[n->id] = n;
    }
    sub->nodes[0]->id = 0;
    const CNode *pn = sub->nodes[0];
    c->nnodes = lo; /* the definition's nodes now live in sub */
    CNode *f = sql__add_node(p, OPK_FIXPOINT, next, pn->ncol);
    memcpy(f->in, ext, sizeof(int) * (size_t)next);
    memcpy(f->types, pn->types, sizeof(SqlType) * (size_t)pn->ncol);
    f->sub = sub;
    f->sub_out = map[out - lo];
    f->label = name;
    /* a WITH query's runtime errors name its view too */
    const Stmt *st = p->prog && p->stmt < p->prog->n ? p->prog->stmts[p->stmt] : NULL;
    if (st && st->k == S_CREATE_VIEW && strcasecmp(st->name, name) && st->name[0] != '_') {
        size_t n = strlen(name) + strlen(st->name) + 16;
        char *b = arena_alloc(p->a, n);
        snprintf(b, n, "%s (in view %s)", name, st->name);
        f->label = b;
    }
    return f->id;
}

Stmt *sql__rec_declared(const P *p, const char *name)
{
    for (int i = 0; i < p->nrecdecl; i++)
        if (!strcasecmp(p->recdecl[i]->name, name))
            return p->recdecl[i];
    return NULL;
}

int sql__plan_rec_view(P *p, Stmt *d, Stmt *s, PRel *out)
{
    int n = d->ncols;
    SqlType *t = arena_alloc(p->a, sizeof(SqlType) * (size_t)(n + 1));
    PRel bound = {-1, {arena_zalloc(p->a, sizeof(SCol) * (size_t)(n + 1)), n}};
    for (int k = 0; k < n; k++) {
        t[k] = d->cols[k].type;
        bound.s.c[k].qual = d->name;
        bound.s.c[k].name = d->cols[k].name;
        bound.s.c[k].t = t[k];
    }
    Select *q = s->query;
    if (q->norder || q->limit || q->offset)
        return perr(p, SL_EUNSUPPORTED, q->line, q->col,
                    "ORDER BY, LIMIT and OFFSET in recursive view %s are not supported yet",
                    s->name);
    int lo = p->c->nnodes;
    bound.node = sql__rec_port(p, d->name, n, t);
    if (sql__plan_bound(p, d->name, &bound, q, out, NULL))
        return p->err->code;
    if (out->s.n != n)
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "view %s is declared with %d columns but its query has %d", s->name, n,
                    out->s.n);
    CNode *src = p->c->nodes[out->node];
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    for (int k = 0; k < n; k++) {
        if (src->types[k].nullable && !t[k].nullable)
            return perr(p, SL_ESEMANTIC, d->cols[k].line, d->cols[k].col,
                        "column %s of recursive view %s is declared NOT NULL but its query may "
                        "give NULL",
                        d->cols[k].name, s->name);
        Expr *e = expr_col(p->a, k, src->types[k]);
        if (!sql__same_repr(src->types[k], t[k]) || src->types[k].kind != t[k].kind) {
            SqlType st = src->types[k], dt = t[k];
            st.nullable = dt.nullable = 0;
            if (!sql__common_type(st, dt, &st))
                return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                            "column %s of recursive view %s is declared %s but its query gives %s",
                            d->cols[k].name, s->name, tname(t[k]), tname(src->types[k]));
            e = sql__cast_to(p, e, t[k]);
        }
        proj[k] = e;
    }
    int o = sql__add_map(p, out->node, NULL, proj, n);
    memcpy(p->c->nodes[o]->types, t, sizeof(SqlType) * (size_t)n);
    sql__ctes_forget(p, lo);
    out->node = sql__rec_fixpoint(p, lo, bound.node, o, s->name, s->name_line, s->name_col);
    for (int k = 0; k < n; k++) {
        out->s.c[k].name = d->cols[k].name;
        out->s.c[k].t = t[k];
    }
    return out->node < 0 ? p->err->code : 0;
}
