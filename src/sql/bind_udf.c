/*
 * sql/bind_udf.c - SQL functions: CREATE FUNCTION f(a INT, ...) RETURNS
 * type [NOT NULL] AS expression (parse_ddl.c reads the spellings), and
 * their calls.
 *
 * A definition is checked where it stands: its name may not be a
 * built-in function's, its body is bound over a scope that holds only its
 * parameters (so a column name in it is an error, and so is an aggregate,
 * a window function or a subquery), and the body's type must convert to
 * the result type. It may call the functions declared before it; a call
 * of itself or of a later one is refused, so no function is recursive.
 *
 * A call is inlined by the binder (bind_fn.c hands it here): its
 * arguments are bound where the call stands (so they may hold aggregates,
 * group keys, window functions, subqueries), converted to the parameters'
 * types, then the body is bound again over parameters typed like the
 * converted arguments (a NOT NULL argument keeps the result NOT NULL
 * where the body allows) and every parameter reference is replaced by a
 * copy of its argument. Calls inside that body substitute the body their
 * function's definition bound (CFunc.body, parameters as declared), so a
 * call costs its expansion once, not a binding per nested call (which
 * grows exponentially with bodies that call a function twice). The
 * result is an ordinary expression: the planner, the engine, the lineage
 * and the program diff see no function at all.
 * A result or parameter declared NOT NULL that may be NULL gets an
 * FN_NOT_NULL check: a NULL there is a run-time error for the record. A
 * STRICT function's body is CASE WHEN an argument IS NULL THEN NULL ELSE
 * body END (over the arguments that may be NULL).
 *
 * Conversions (arguments to parameters, the body to the result type)
 * stay within a family: any number to any number, any string to any
 * string, DATE to TIMESTAMP, a type to itself; NULL and a string literal
 * to anything. They are CASTs, with CAST's run-time errors (a number out
 * of range).
 */
#include <string.h>
#include <strings.h>

#include "../base/vec.h"
#include "sql_int.h"

/* A call's expansion: at most this many expression nodes (a body that
   uses a parameter many times, calling functions that do, grows
   exponentially), and function bodies within one another at most this
   deep (a definition's level: 1 + its callees' largest). */
#define UDF_MAX_NODES (1 << 16)
#define UDF_MAX_DEPTH 64
/* All calls of a program together expand to at most this many nodes
   (about 250 MB of expressions): many large calls are refused, not a
   compiler that runs out of memory. */
#define UDF_MAX_TOTAL (1 << 21)

int sql__udf_find(const P *p, const char *name)
{
    for (int i = 0; i < p->c->nfuncs; i++)
        if (!strcasecmp(p->c->funcs[i].name, name))
            return i;
    return -1;
}

/* Does e, of its type, convert implicitly to type `to`? */
static bool converts(const Expr *e, SqlType to)
{
    TypeKind a = (TypeKind)e->t.kind, b = (TypeKind)to.kind;
    if (a == TK_NULL || a == b)
        return true;
    if (type_is_numeric(a) && type_is_numeric(b))
        return true;
    if (type_is_string(a) && type_is_string(b))
        return true;
    if (a == TK_DATE && b == TK_TIMESTAMP)
        return true;
    return type_is_string(a) && e->k == E_CONST; /* a literal, parsed as `to` */
}

/* e, of a nullable type, checked at run time: a NULL is the error msg. */
static Expr *not_null(P *p, Expr *e, const char *msg)
{
    Expr *m = expr_const_str(p->a, type_make(TK_VARCHAR, false), msg, strlen(msg));
    Expr *c = sql__mk(p, E_FUNC, e->t, 2);
    c->t.nullable = 0;
    c->fn = FN_NOT_NULL;
    c->a[0] = e;
    c->a[1] = m;
    return c;
}

static bool is_null_const(const Expr *e) { return e->k == E_CONST && e->cnull; }

/* "a INT, b VARCHAR" */
static void param_list(const Stmt *s, char *b, size_t cap)
{
    size_t o = 0;
    b[0] = 0;
    for (int i = 0; i < s->nfparams && o + 1 < cap; i++)
        o += (size_t)snprintf(b + o, cap - o, "%s%s %s", i ? ", " : "", s->fparams[i].name,
                              tname(s->fparams[i].type));
    if (o >= cap && cap > 4)
        strcpy(b + cap - 4, "...");
}

/* The body of function s bound over its parameters typed pt[], converted
   to its result type (with the NOT NULL check). */
static Expr *bind_body(P *p, const Stmt *s, const SqlType *pt)
{
    int n = s->nfparams;
    SCol *cols = arena_zalloc(p->a, sizeof(SCol) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        cols[i].name = s->fparams[i].name;
        cols[i].t = pt[i];
    }
    Scope sc = {cols, n};
    BindCtx bc = {&sc, NULL, "a function body"};
    Expr *e = sql__bind(p, &bc, s->fbody);
    if (!e) {
        if (!strncmp(p->err->msg, "column \"", 8) && strstr(p->err->msg, "not found")) {
            char pl[200];
            param_list(s, pl, sizeof(pl));
            size_t m = strlen(p->err->msg);
            snprintf(p->err->msg + m, sizeof(p->err->msg) - m,
                     " (the body of %s sees its parameters only: %s)", s->name,
                     n ? pl : "none");
        }
        return NULL;
    }
    SqlType ret = s->fret;
    if (!converts(e, ret)) {
        perr(p, SL_ESEMANTIC, s->fbody->line, s->fbody->col,
             "function %s returns %s, but its body is %s", s->name, tname(ret), tname(e->t));
        return NULL;
    }
    if (!ret.nullable && is_null_const(e)) {
        perr(p, SL_ESEMANTIC, s->fbody->line, s->fbody->col,
             "function %s returns %s NOT NULL, but its body is NULL", s->name, tname(ret));
        return NULL;
    }
    e = sql__cast_to(p, e, ret);
    int nnul = 0;
    for (int i = 0; i < n && s->fstrict; i++)
        nnul += pt[i].nullable;
    if (nnul && !is_null_const(e)) { /* STRICT: NULL when an argument is NULL */
        Expr *any = NULL;
        for (int i = 0; i < n; i++) {
            if (!pt[i].nullable)
                continue;
            Expr *isn = sql__mk(p, E_ISNULL, type_make(TK_BOOL, false), 1);
            isn->a[0] = expr_col(p->a, i, pt[i]);
            any = any ? sql__nary_bool(p, E_OR, any, isn) : isn;
        }
        SqlType t = e->t;
        t.nullable = 1;
        Expr *c = sql__mk(p, E_CASE, t, 3);
        c->a[0] = any;
        c->a[1] = expr_const_null(p->a, t);
        c->a[2] = e;
        e = c;
    }
    if (!ret.nullable && e->t.nullable) {
        char msg[300];
        snprintf(msg, sizeof(msg), "function %s returned NULL, but its result is declared "
                 "%s NOT NULL", s->name, tname(ret));
        e = not_null(p, e, msg);
    }
    return e;
}

/* The body with each parameter reference (column i) replaced by a copy of
   args[i] (args NULL: a copy of e); NULL once *budget nodes are spent. *h:
   its height. */
static Expr *subst(P *p, const Expr *e, Expr *const *args, int64_t *budget, int *h)
{
    if (e->k == E_COL && args)
        return subst(p, args[e->col], NULL, budget, h);
    if (--*budget < 0)
        return NULL;
    Expr *c = arena_alloc(p->a, sizeof(*c));
    *c = *e;
    *h = 1;
    if (e->na) {
        c->a = arena_alloc(p->a, sizeof(Expr *) * (size_t)e->na);
        for (int i = 0; i < e->na; i++) {
            int hc;
            if (!(c->a[i] = subst(p, e->a[i], args, budget, &hc)))
                return NULL;
            *h = SL_MAX(*h, hc + 1);
        }
    }
    return c;
}

/* The statement calls u, and so every function u calls. */
static void note_call(P *p, int u)
{
    for (int i = 0; i < p->ncalls; i++)
        if (p->calls[i] == u)
            return;
    *VEC_PUSH_ARENA(p->a, p->calls, p->ncalls, p->cap_calls) = u;
    for (int i = 0; i < p->udfs[u].ncalls; i++)
        note_call(p, p->udfs[u].calls[i]);
}

Expr *sql__bind_udf_call(P *p, BindCtx *bc, Ast *x, int u)
{
    const Stmt *s = p->udfs[u].s;
    int n = s->nfparams;
    if (x->over || x->star || x->distinct || x->norder || x->within) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "%s is a SQL function: it takes arguments, not *, DISTINCT, ORDER BY or OVER",
             s->name);
        return NULL;
    }
    if (x->args.n != n) {
        char pl[200];
        param_list(s, pl, sizeof(pl));
        perr(p, SL_ESEMANTIC, x->line, x->col, "function %s takes %d argument%s (%s), not %d",
             s->name, n, n == 1 ? "" : "s", pl, x->args.n);
        return NULL;
    }
    if (p->udf_depth >= UDF_MAX_DEPTH) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "functions call one another more than %d deep here (at %s)", UDF_MAX_DEPTH, s->name);
        return NULL;
    }
    Expr **args = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    SqlType *pt = arena_alloc(p->a, sizeof(SqlType) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        const FuncParam *fp = &s->fparams[i];
        Ast *ax = x->args.v[i];
        Expr *a = sql__bind(p, bc, ax);
        if (!a)
            return NULL;
        if (!converts(a, fp->type)) {
            perr(p, SL_ESEMANTIC, ax->line, ax->col,
                 "argument %d of function %s is %s, which does not convert to %s (parameter %s)",
                 i + 1, s->name, tname(a->t), tname(fp->type), fp->name);
            return NULL;
        }
        if (!fp->type.nullable && is_null_const(a)) {
            perr(p, SL_ESEMANTIC, ax->line, ax->col,
                 "argument %d of function %s is NULL, but parameter %s is declared NOT NULL",
                 i + 1, s->name, fp->name);
            return NULL;
        }
        a = sql__cast_to(p, a, fp->type);
        if (!fp->type.nullable && a->t.nullable) {
            char msg[300];
            snprintf(msg, sizeof(msg), "argument %s of function %s is NULL, but the parameter "
                     "is declared NOT NULL", fp->name, s->name);
            a = not_null(p, a, msg);
        }
        args[i] = a;
        pt[i] = fp->type;
        pt[i].nullable = a->t.nullable;
    }
    note_call(p, u);
    /* the body bound again over the arguments' types where the call is
       written; inside a body, the callee's body as its definition bound
       it (so nested calls cost their expansion, not a binding each) */
    Expr *body = p->c->funcs[u].body;
    if (!p->udf_depth) {
        p->udf_depth++;
        body = bind_body(p, s, pt);
        p->udf_depth--;
        if (!body) { /* checked at its definition: a limit, at this call */
            p->err->line = x->line;
            p->err->col = x->col;
            return NULL;
        }
    }
    int64_t left = UDF_MAX_TOTAL - p->udf_nodes;
    int64_t budget = SL_MIN(UDF_MAX_NODES, left);
    int h = 0;
    Expr *e = subst(p, body, args, &budget, &h);
    p->udf_nodes += SL_MIN(UDF_MAX_NODES, left) - SL_MAX(budget, 0);
    if (!e && left < UDF_MAX_NODES) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "the calls of SQL functions in this program expand to more than %d expression "
             "nodes in all", UDF_MAX_TOTAL);
        return NULL;
    }
    if (!e) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "the call of %s expands to more than %d expression nodes (its body uses its "
             "parameters many times, or calls functions that do)", s->name, UDF_MAX_NODES);
        return NULL;
    }
    if (h > SQL_MAX_HEIGHT) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "the call of %s nests expressions too deeply (limit %d)", s->name, SQL_MAX_HEIGHT);
        return NULL;
    }
    return e;
}

/* Does x call a function named name? */
static bool calls_name(const Ast *x, const char *name)
{
    if (!x)
        return false;
    if (x->k == A_FUNC && !strcasecmp(x->name, name))
        return true;
    if (calls_name(x->a, name) || calls_name(x->b, name) || calls_name(x->c, name))
        return true;
    for (int i = 0; i < x->args.n; i++)
        if (calls_name(x->args.v[i], name))
            return true;
    return false;
}

bool sql__udf_not_yet(P *p, const Ast *x)
{
    if (!p->prog || p->stmt < 0 || p->stmt >= p->prog->n)
        return false;
    const Stmt *here = p->prog->stmts[p->stmt];
    for (int i = p->stmt; i < p->prog->n; i++) {
        const Stmt *s = p->prog->stmts[i];
        if (s->k != S_CREATE_FUNCTION || strcasecmp(s->name, x->name))
            continue;
        if (i == p->stmt)
            perr(p, SL_EUNSUPPORTED, x->line, x->col,
                 "function %s calls itself: recursive functions are not supported", s->name);
        else if (here->k == S_CREATE_FUNCTION && calls_name(s->fbody, here->name))
            perr(p, SL_EUNSUPPORTED, x->line, x->col,
                 "functions %s and %s call each other: recursive functions are not supported",
                 here->name, s->name);
        else
            perr(p, SL_ESEMANTIC, x->line, x->col,
                 "function %s is declared after this statement (at %d:%d): declare a function "
                 "before its first use", s->name, s->name_line, s->name_col);
        return true;
    }
    return false;
}

/* The deepest nesting of function bodies below x: 1 + the largest level
   of the functions x calls (0 when it calls none). */
static int call_level(const P *p, const Ast *x)
{
    if (!x)
        return 0;
    int lv = 0;
    if (x->k == A_FUNC) {
        int u = sql__udf_find(p, x->name);
        if (u >= 0)
            lv = p->udfs[u].level;
    }
    lv = SL_MAX(lv, call_level(p, x->a));
    lv = SL_MAX(lv, call_level(p, x->b));
    lv = SL_MAX(lv, call_level(p, x->c));
    for (int i = 0; i < x->args.n; i++)
        lv = SL_MAX(lv, call_level(p, x->args.v[i]));
    return lv;
}

int sql__define_function(P *p, Stmt *s)
{
    char low[128];
    size_t ln = strlen(s->name);
    for (size_t i = 0; i <= ln && i < sizeof(low); i++)
        low[i] = (char)(s->name[i] >= 'A' && s->name[i] <= 'Z' ? s->name[i] + 32 : s->name[i]);
    low[sizeof(low) - 1] = 0;
    if (sql__is_builtin_fn(low))
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "function %s would hide the built-in function of that name: choose another "
                    "name", s->name);
    int old = sql__udf_find(p, s->name);
    if (old >= 0)
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "function %s is already declared (at %d:%d)", s->name,
                    p->udfs[old].s->name_line, p->udfs[old].s->name_col);
    int level = 1 + call_level(p, s->fbody);
    if (level > UDF_MAX_DEPTH)
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "function %s nests %d function bodies within one another (at most %d)",
                    s->name, level, UDF_MAX_DEPTH);
    int n = s->nfparams;
    SqlType *pt = arena_alloc(p->a, sizeof(SqlType) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        pt[i] = s->fparams[i].type;
    Expr *body = bind_body(p, s, pt);
    if (!body)
        return p->err->code;
    Circuit *c = p->c;
    int cap = c->nfuncs; /* full: the first push grows it */
    CFunc *f = VEC_PUSH_ARENA(p->a, c->funcs, c->nfuncs, cap);
    memset(f, 0, sizeof(*f));
    f->name = s->name;
    f->text = p->text ? arena_strndup(p->a, p->text + s->text_off, s->text_len) : NULL;
    f->nparam = n;
    f->ptypes = pt;
    f->ret = s->fret;
    f->body = body;
    UdfInfo *u = arena_alloc(p->a, sizeof(UdfInfo) * (size_t)c->nfuncs);
    if (c->nfuncs > 1)
        memcpy(u, p->udfs, sizeof(UdfInfo) * (size_t)(c->nfuncs - 1));
    UdfInfo *ui = &u[c->nfuncs - 1];
    ui->s = s;
    ui->level = level;
    ui->ncalls = p->ncalls; /* what binding its body called */
    ui->calls = arena_alloc(p->a, sizeof(int) * (size_t)(p->ncalls + 1));
    if (p->ncalls)
        memcpy(ui->calls, p->calls, sizeof(int) * (size_t)p->ncalls);
    p->udfs = u;
    return 0;
}
