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
 *
 * Mutually recursive views: compile.c plans the declared views that read
 * one another (a strongly connected component of sql__rec_reads) together
 * at the last of their CREATE VIEWs (sql__plan_rec_views): one port per
 * view, every name bound to its port while each query is planned, all
 * the nodes moved into ONE fixpoint with one output per view (CNode.nrec,
 * sub_outs); its output rows are tagged with the view they belong to and
 * each view is a map selecting its own.
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

int sql__rec_fixpoint(P *p, int lo, const RecDef *defs, int K)
{
    Circuit *c = p->c;
    int hi = c->nnodes, nn = hi - lo;
    bool *dep = arena_zalloc(p->a, (size_t)nn + 1);
    int *portof = arena_alloc(p->a, sizeof(int) * (size_t)(nn + 1)); /* -1 or i */
    for (int i = 0; i < nn; i++)
        portof[i] = -1;
    for (int k = 0; k < K; k++) {
        dep[defs[k].port - lo] = true;
        portof[defs[k].port - lo] = k;
    }
    for (int i = lo; i < hi; i++) {
        const CNode *n = c->nodes[i];
        if (portof[i - lo] >= 0)
            continue;
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= lo && dep[n->in[j] - lo])
                dep[i - lo] = true;
        if (dep[i - lo] && n->k != OPK_MAP && n->k != OPK_UNION && n->k != OPK_JOIN &&
            n->k != OPK_DISTINCT) {
            int d = 0;
            while (d < K - 1 && i >= defs[d].hi)
                d++;
            if (K == 1)
                perr(p, SL_EUNSUPPORTED, defs[d].line, defs[d].col,
                     "recursive query \"%s\": %s over the recursive relation itself is not "
                     "supported (only SELECT, WHERE, inner joins, DISTINCT and UNION [ALL]: the "
                     "recursion must be monotone)",
                     defs[d].name, nonmonotone(n->k));
            else
                perr(p, SL_EUNSUPPORTED, defs[d].line, defs[d].col,
                     "recursive view \"%s\": %s over the views it recurses with is not "
                     "supported (only SELECT, WHERE, inner joins, DISTINCT and UNION [ALL]: the "
                     "recursion must be monotone)",
                     defs[d].name, nonmonotone(n->k));
            return -1;
        }
    }
    if (K == 1 && !dep[defs[0].out - lo])
        return defs[0].out; /* it does not read itself: an ordinary query */
    /* the inputs: earlier nodes read by the definitions */
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
    int nports = K + next;
    sub->nnodes = nports + nn - K;
    sub->nodes = arena_zalloc(p->a, sizeof(CNode *) * (size_t)(sub->nnodes + 1));
    int *map = arena_alloc(p->a, sizeof(int) * (size_t)nn);
    for (int k = 0; k < next; k++) {
        const CNode *x = c->nodes[ext[k]];
        CNode *pn = arena_zalloc(p->a, sizeof(*pn));
        pn->id = K + k;
        pn->k = OPK_UNION;
        pn->in = arena_zalloc(p->a, sizeof(int));
        pn->ncol = x->ncol;
        pn->types = x->types;
        pn->rel = -1;
        pn->owner = p->owner;
        pn->label = x->label;
        sub->nodes[K + k] = pn;
    }
    int at = nports;
    for (int i = lo; i < hi; i++)
        map[i - lo] = portof[i - lo] >= 0 ? portof[i - lo] : at++;
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
                n->in[j] = K + k;
            }
        }
        sub->nodes[n->id] = n;
    }
    c->nnodes = lo; /* the definitions' nodes now live in sub */
    int ncol = K > 1;
    for (int k = 0; k < K; k++)
        ncol += sub->nodes[k]->ncol;
    CNode *f = sql__add_node(p, OPK_FIXPOINT, next, ncol);
    memcpy(f->in, ext, sizeof(int) * (size_t)next);
    if (K > 1)
        f->types[0] = type_make(TK_INT, false);
    for (int k = 0, off = K > 1; k < K; k++) {
        const CNode *pn = sub->nodes[k];
        memcpy(f->types + off, pn->types, sizeof(SqlType) * (size_t)pn->ncol);
        off += pn->ncol;
    }
    f->sub = sub;
    f->nrec = K;
    f->sub_outs = arena_alloc(p->a, sizeof(int) * (size_t)K);
    for (int k = 0; k < K; k++)
        f->sub_outs[k] = map[defs[k].out - lo];
    f->label = defs[0].name;
    if (K > 1) { /* the views' names, for EXPLAIN and runtime errors */
        Buf b = BUF_INIT;
        for (int k = 0; k < K; k++)
            buf_printf(&b, "%s%s", k ? ", " : "", defs[k].name);
        f->label = arena_strndup(p->a, (const char *)b.p, b.n);
        buf_free(&b);
        return f->id;
    }
    /* a WITH query's runtime errors name its view too */
    const char *name = defs[0].name;
    const Stmt *st = p->prog && p->stmt < p->prog->n ? p->prog->stmts[p->stmt] : NULL;
    if (st && st->k == S_CREATE_VIEW && strcasecmp(st->name, name) && st->name[0] != '_') {
        size_t n = strlen(name) + strlen(st->name) + 16;
        char *b = arena_alloc(p->a, n);
        snprintf(b, n, "%s (in view %s)", name, st->name);
        f->label = b;
    }
    return f->id;
}

/* ---- which relations a view's query reads ---- */

static bool reads_select(const Select *q, const char *name);

static bool reads_ast(const Ast *x, const char *name)
{
    if (!x)
        return false;
    if (reads_ast(x->a, name) || reads_ast(x->b, name) || reads_ast(x->c, name))
        return true;
    for (int i = 0; i < x->args.n; i++)
        if (reads_ast(x->args.v[i], name))
            return true;
    if (x->sub && reads_select(x->sub, name))
        return true;
    for (int i = 0; i < x->norder; i++)
        if (reads_ast(x->order[i].e, name))
            return true;
    return false;
}

static bool reads_from(const FromItem *f, const char *name)
{
    if (!f)
        return false;
    if (f->k == F_TABLE && f->name && !strcasecmp(f->name, name))
        return true;
    return reads_from(f->l, name) || reads_from(f->r, name) || reads_ast(f->on, name) ||
           reads_ast(f->match, name) || (f->sub && reads_select(f->sub, name)) ||
           reads_from(f->tvf_input, name) || reads_ast(f->unnest_e, name);
}

static bool reads_select(const Select *q, const char *name)
{
    for (; q; q = q->next) {
        for (int i = 0; i < q->nctes; i++)
            if (reads_select(q->ctes[i].q, name))
                return true;
        for (int i = 0; i < q->nitems; i++)
            if (reads_ast(q->items[i].e, name))
                return true;
        for (int i = 0; i < q->nfrom; i++)
            if (reads_from(q->from[i], name))
                return true;
        if (reads_ast(q->where, name) || reads_ast(q->having, name) ||
            reads_ast(q->qualify, name))
            return true;
        for (int i = 0; i < q->group.n; i++)
            if (reads_ast(q->group.v[i], name))
                return true;
        for (int i = 0; i < q->norder; i++)
            if (reads_ast(q->order[i].e, name))
                return true;
        for (int r = 0; r < q->nvalues; r++)
            for (int i = 0; i < q->values[r].n; i++)
                if (reads_ast(q->values[r].v[i], name))
                    return true;
    }
    return false;
}

bool sql__rec_reads(const Stmt *v, const char *name)
{
    return reads_select(v->query, name);
}

Stmt *sql__rec_declared(const P *p, const char *name)
{
    for (int i = 0; i < p->nrecdecl; i++)
        if (!strcasecmp(p->recdecl[i]->name, name))
            return p->recdecl[i];
    return NULL;
}

/* The port of the view declared by d, bound to its name (*bound). */
static void rec_bind(P *p, const Stmt *d, PRel *bound)
{
    int n = d->ncols;
    SqlType *t = arena_alloc(p->a, sizeof(SqlType) * (size_t)(n + 1));
    bound->s.c = arena_zalloc(p->a, sizeof(SCol) * (size_t)(n + 1));
    bound->s.n = n;
    for (int k = 0; k < n; k++) {
        t[k] = d->cols[k].type;
        bound->s.c[k].qual = d->name;
        bound->s.c[k].name = d->cols[k].name;
        bound->s.c[k].t = t[k];
    }
    bound->node = sql__rec_port(p, d->name, n, t);
}

/* CREATE VIEW s of the view declared by d, its query planned with the
   names bound to the ports bound[0..nb): *out its rows cast to the
   declared types (the definition's output node). */
static int rec_define(P *p, const Stmt *d, Stmt *s, const char *const *names, const PRel *bound,
                      int nb, PRel *out)
{
    int n = d->ncols;
    const SqlType *t = p->c->nodes[bound[0].node]->types;
    for (int i = 0; i < nb; i++)
        if (!strcasecmp(names[i], d->name))
            t = p->c->nodes[bound[i].node]->types;
    Select *q = s->query;
    if (q->norder || q->limit || q->offset)
        return perr(p, SL_EUNSUPPORTED, q->line, q->col,
                    "ORDER BY, LIMIT and OFFSET in recursive view %s are not supported yet",
                    s->name);
    if (sql__plan_bound_n(p, names, bound, nb, q, out, NULL))
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
    out->node = sql__add_map(p, out->node, NULL, proj, n);
    memcpy(p->c->nodes[out->node]->types, t, sizeof(SqlType) * (size_t)n);
    return 0;
}

int sql__plan_rec_views(P *p, Stmt **decls, Stmt **views, int K, PRel *outs)
{
    int lo = p->c->nnodes;
    const char **names = arena_alloc(p->a, sizeof(char *) * (size_t)K);
    PRel *bound = arena_zalloc(p->a, sizeof(PRel) * (size_t)K);
    RecDef *defs = arena_zalloc(p->a, sizeof(RecDef) * (size_t)K);
    for (int i = 0; i < K; i++) {
        names[i] = decls[i]->name;
        rec_bind(p, decls[i], &bound[i]);
    }
    for (int i = 0; i < K; i++) {
        if (rec_define(p, decls[i], views[i], names, bound, K, &outs[i]))
            return p->err->code;
        defs[i] = (RecDef){bound[i].node, outs[i].node,          p->c->nnodes,
                           views[i]->name, views[i]->name_line, views[i]->name_col};
    }
    sql__ctes_forget(p, lo);
    int f = sql__rec_fixpoint(p, lo, defs, K);
    if (f < 0)
        return p->err->code;
    int owner = p->owner, off = 1;
    for (int i = 0; i < K; i++) {
        const Stmt *d = decls[i];
        int n = d->ncols;
        outs[i].node = f;
        if (K > 1) { /* view i: the fixed point's rows tagged i, its columns */
            const SqlType *t = p->c->nodes[f]->types;
            Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
            for (int k = 0; k < n; k++)
                proj[k] = expr_col(p->a, off + k, t[off + k]);
            off += n;
            Expr *cond = sql__mk(p, E_EQ, type_make(TK_BOOL, false), 2);
            cond->a[0] = expr_col(p->a, 0, t[0]);
            cond->a[1] = expr_const_i64(p->a, t[0], i);
            p->owner = owner + i;
            outs[i].node = sql__add_map(p, f, cond, proj, n);
            memcpy(p->c->nodes[outs[i].node]->types, t + off - n, sizeof(SqlType) * (size_t)n);
        }
        for (int k = 0; k < n; k++) {
            outs[i].s.c[k].name = d->cols[k].name;
            outs[i].s.c[k].t = d->cols[k].type;
        }
    }
    p->owner = owner;
    return 0;
}
