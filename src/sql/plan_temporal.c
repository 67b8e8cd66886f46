/*
 * sql/plan_temporal.c - NOW() in a view: temporal filters.
 *
 * A conjunct of WHERE that compares an expression x of the FROM rows
 * (TIMESTAMP or TIMESTAMPTZ) with NOW() [+/- a constant day-to-second
 * interval] by <, <=, >, >= (or x BETWEEN two such bounds) becomes an
 * OPK_TEMPORAL node (circuit/op_temporal.c) over the FROM relation: rows
 * enter and leave the view as the clock passes their bounds, and only the
 * rows whose status can still change are kept. Any other use of NOW() is
 * an error (bind_fn.c).
 *
 * The clock is the watermark of the table `now` (one TIMESTAMP column,
 * LATENESS 0), added to the program by the first temporal filter unless
 * the program declares one itself (then its LATENESS decides how far
 * behind the largest pushed time the clock runs). The controller pushes
 * the wall-clock time into it (pipeline/clock.c) unless the clock is
 * driven by hand (SLUICE_CLOCK=manual: tests push rows to it).
 */
#include <string.h>
#include <strings.h>

#include "sql_int.h"

static bool is_now(const Ast *x) { return x->k == A_FUNC && !strcmp(x->name, "now") && !x->args.n; }

bool sql__has_now(const Ast *x) { return sql__ast_any(x, is_now); }

/* A bound NOW() [+/- interval]: *off the interval in microseconds. */
static bool now_bound(P *p, Ast *x, int64_t *off)
{
    if (is_now(x)) {
        *off = 0;
        return true;
    }
    if (x->k != A_BIN || (x->op != OP_ADD && x->op != OP_SUB))
        return false;
    Ast *iv = NULL;
    if (is_now(x->a))
        iv = x->b;
    else if (x->op == OP_ADD && is_now(x->b))
        iv = x->a;
    if (!iv || sql__has_now(iv))
        return false;
    Scope none = {NULL, 0};
    BindCtx bc = {&none, NULL, "a temporal filter"};
    Err tmp = {0}, *orig = p->err;
    p->err = &tmp;
    Expr *e = sql__bind(p, &bc, iv);
    p->err = orig;
    if (!e || e->k != E_CONST || e->cnull || e->t.kind != TK_INTERVAL_DT)
        return false;
    if (x->op == OP_SUB && e->ci == INT64_MIN)
        return false;
    *off = x->op == OP_SUB ? -e->ci : e->ci;
    return true;
}

static int bad_form(P *p, const Ast *x)
{
    return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                "NOW() / CURRENT_TIMESTAMP is supported only in a view's temporal filter: a "
                "conjunct of WHERE comparing a TIMESTAMP or TIMESTAMPTZ expression of the FROM "
                "rows with NOW() [+ or - a constant day-to-second interval] by <, <=, > or >= "
                "(or BETWEEN)");
}

/* from := the rows of from where `x op (NOW() + off)`. */
static int add_filter(P *p, PRel *from, Ast *x, AstOp op, int64_t off, const Ast *where)
{
    if (sql__has_now(x))
        return bad_form(p, where);
    AggCtx none = {0};
    BindCtx bc = {&from->s, &none, "WHERE"};
    Expr *e = sql__bind(p, &bc, x);
    if (!e)
        return p->err->code;
    if (!type_is_ts(e->t.kind))
        return perr(p, SL_ESEMANTIC, x->line, x->col,
                    "a temporal filter compares NOW() with a TIMESTAMP or TIMESTAMPTZ, not %s",
                    tname(e->t));
    int clock = sql__clock_node(p, where);
    if (clock < 0)
        return p->err->code;
    int node = from->node, col;
    const CNode *src = p->c->nodes[node];
    int ncol = src->ncol;
    if (e->k == E_COL) {
        col = e->col;
    } else { /* the expression as an extra column, dropped after */
        Expr **proj = sql__identity_proj(p, src, 1);
        proj[ncol] = e;
        node = sql__add_map(p, node, NULL, proj, ncol + 1);
        col = ncol;
    }
    const CNode *in = p->c->nodes[node];
    CNode *t = sql__add_node(p, OPK_TEMPORAL, 1, in->ncol);
    t->in[0] = node;
    memcpy(t->types, in->types, sizeof(SqlType) * (size_t)in->ncol);
    t->tcol = col;
    t->tclock = clock;
    t->tupper = op == OP_LT || op == OP_LE;
    int64_t adj = op == OP_GT ? 1 : op == OP_LT ? -1 : 0;
    if (__builtin_add_overflow(off, adj, &t->toff))
        return perr(p, SL_ESEMANTIC, where->line, where->col, "temporal filter bound overflows");
    node = t->id;
    if (col == ncol)
        node = sql__cols(p, node, NULL, 0, ncol, NULL);
    from->node = node;
    return 0;
}

static AstOp flip(AstOp op)
{
    return op == OP_LT ? OP_GT : op == OP_LE ? OP_GE : op == OP_GT ? OP_LT : OP_LE;
}

int sql__plan_temporal(P *p, PRel *from, Ast *c)
{
    if (p->flags & CC_PRESENT)
        return perr(p, SL_EUNSUPPORTED, c->line, c->col,
                    "NOW() / CURRENT_TIMESTAMP is not supported in a one-shot query (only in a "
                    "view's temporal filter)");
    int64_t lo, hi;
    if (c->k == A_BETWEEN && !c->negated && !sql__has_now(c->a) && now_bound(p, c->b, &lo) &&
        now_bound(p, c->c, &hi))
        return add_filter(p, from, c->a, OP_GE, lo, c) ||
               add_filter(p, from, c->a, OP_LE, hi, c);
    if (c->k == A_BIN && (c->op == OP_LT || c->op == OP_LE || c->op == OP_GT || c->op == OP_GE)) {
        if (now_bound(p, c->b, &lo))
            return add_filter(p, from, c->a, (AstOp)c->op, lo, c);
        if (now_bound(p, c->a, &lo))
            return add_filter(p, from, c->b, flip((AstOp)c->op), lo, c);
    }
    return bad_form(p, c);
}
