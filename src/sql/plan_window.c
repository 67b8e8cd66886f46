/*
 * sql/plan_window.c - window functions and top-k in the planner.
 *
 * Window functions (`fn(...) OVER (PARTITION BY ... ORDER BY ... frame)`)
 * may appear in a select list. The binder hands each one to
 * sql__bind_window, which binds its arguments, PARTITION BY and ORDER BY
 * in the select list's context (so over the aggregation's output when the
 * query groups) and returns a placeholder column. Once WHERE, GROUP BY and
 * HAVING are planned, plan_core calls sql__plan_windows: a MAP computes the
 * window inputs that are not plain columns (after the WHERE/HAVING filter),
 * then one OPK_WINDOW node per distinct (PARTITION BY, ORDER BY) appends
 * its functions' columns, and the placeholders are pointed at them; the
 * final projection follows. A call equal to one bound before (function,
 * argument, window, frame) shares its column. The statistical aggregates
 * (STDDEV, VARIANCE, COVAR, CORR) are rewritten into window COUNTs and
 * SUMs combined per row (stat_window).
 *
 * Top-k: ORDER BY ... LIMIT n [OFFSET m] of a view or subquery becomes an
 * OPK_TOPK over the query's output (ORDER BY keys resolved to output
 * columns or hidden trailing ones, dropped after it). And a window whose
 * only function is ROW_NUMBER/RANK/DENSE_RANK, filtered above by
 * `rank <= k` (or < k, = k), becomes an OPK_TOPK keeping k ranks: the same
 * rows and values, but a change touches O(k) rows instead of every row
 * after it (sql__topk_rewrite, run over each view's nodes).
 */
#include <stdlib.h>
#include <strings.h>

#include "../base/vec.h"
#include "../expr/text.h"
#include "sql_int.h"

/* Placeholder columns: PH_BASE + index of the call in its WinCtx. */
#define PH_BASE (1 << 28)

typedef struct WinCall {
    Ast *ast;
    Expr **part;
    int npart;
    Expr **ord;
    bool *desc, *nulls_first;
    int nord;
    WinFunc f;      /* col and def_col are set by sql__plan_windows */
    Expr *arg, *def;
    int out_col;
} WinCall;

struct WinCtx {
    WinCall *calls;
    int n, cap;
};

WinCtx *sql__win_new(P *p)
{
    return arena_zalloc(p->a, sizeof(WinCtx));
}

/* An aggregate call, or a window function over one. */
static bool agg_here(const Ast *x)
{
    return x->k == A_FUNC && (x->over ? sql__window_has_agg(x) : sql__is_agg_name(x->name));
}

bool sql__has_agg(const Ast *x) { return sql__ast_any(x, agg_here); }

bool sql__window_has_agg(const Ast *x)
{
    const WinDef *w = x->over;
    for (int i = 0; i < x->args.n; i++)
        if (sql__has_agg(x->args.v[i]))
            return true;
    for (int i = 0; w && i < w->part.n; i++)
        if (sql__has_agg(w->part.v[i]))
            return true;
    for (int i = 0; w && i < w->norder; i++)
        if (sql__has_agg(w->order[i].e))
            return true;
    return false;
}

static Expr *bind_part(P *p, BindCtx *bc, Ast *x)
{
    Expr *e = sql__bind(p, bc, x);
    if (e && e->t.kind == TK_NULL)
        e = sql__cast_to(p, e, type_make(TK_INT, true));
    return e;
}

/* A non-negative integer literal (ROWS offsets, LAG/LEAD offsets). */
static int int_literal(P *p, Ast *x, const char *what, int64_t *out)
{
    if (!x || x->k != A_INT)
        return perr(p, SL_EUNSUPPORTED, x ? x->line : 0, x ? x->col : 0,
                    "%s must be a non-negative integer literal", what);
    *out = strtoll(x->str, NULL, 10);
    return 0;
}

/* Window functions take no wide type (DECIMAL of precision above
   DECIMAL64_MAX_PREC): the error for x over at, or 0. */
static int narrow_arg(P *p, Ast *x, SqlType at)
{
    if (!type_is_wide(at))
        return 0;
    return perr(p, SL_EUNSUPPORTED, x->line, x->col,
                "%s over %s is not supported yet (window functions take DECIMAL of precision "
                "at most %d)", x->name, tname(at), DECIMAL64_MAX_PREC);
}

/* The result type of aggregate f->kind over arg type at (as for GROUP BY). */
static int agg_types(P *p, Ast *x, WinFunc *f, SqlType at)
{
    f->in_t = at;
    int rc = narrow_arg(p, x, at);
    if (rc)
        return rc;
    switch (f->kind) {
    case WIN_COUNT_STAR:
    case WIN_COUNT:
        f->out_t = type_make(TK_BIGINT, false);
        return 0;
    case WIN_MIN:
    case WIN_MAX:
        f->out_t = at;
        f->out_t.nullable = 1;
        return 0;
    default:
        if (!type_is_numeric(at.kind))
            return perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs a numeric argument, not %s",
                        x->name, tname(at));
        if (type_is_integer(at.kind))
            f->out_t = type_make(f->kind == WIN_SUM ? TK_BIGINT : TK_DOUBLE, true);
        else if (at.kind == TK_DECIMAL) {
            f->out_t = at;
            f->out_t.prec = DECIMAL64_MAX_PREC;
        } else
            f->out_t = type_make(TK_DOUBLE, true);
        f->out_t.nullable = 1;
        return 0;
    }
}

/* An INTERVAL offset over a DATE, TIME or TIMESTAMP key: in the key's
   unit (days for DATE, microseconds otherwise), or calendar months
   (*months set; DATE and TIMESTAMP keys only). */
static int range_interval(P *p, Ast *n, SqlType kt, int64_t *i, bool *months)
{
    int64_t v;
    bool ym;
    Err e = {0};
    int from = (int)(n->ival & 0xff), to = (int)(n->ival >> 8) - 1;
    if (interval_parse(n->str, n->slen, from, to, &v, &ym, &e))
        return perr(p, SL_ESEMANTIC, n->line, n->col, "%s", e.msg);
    if (v < 0)
        return perr(p, SL_ESEMANTIC, n->line, n->col, "a RANGE offset must not be negative");
    if (ym) {
        if (kt.kind == TK_TIME)
            return perr(p, SL_ESEMANTIC, n->line, n->col,
                        "a RANGE offset of years or months over a TIME key has no meaning; "
                        "use an INTERVAL of hours, minutes or seconds");
        *i = v;
        *months = true;
        return 0;
    }
    if (kt.kind == TK_DATE) {
        const int64_t day = INT64_C(86400000000);
        if (v % day)
            return perr(p, SL_EUNSUPPORTED, n->line, n->col,
                        "a RANGE offset over a DATE key in hours, minutes or seconds is not "
                        "supported yet (whole days only)");
        v /= day;
    }
    *i = v;
    return 0;
}

/* n of a RANGE n PRECEDING/FOLLOWING over key type kt. */
static int range_offset(P *p, Ast *n, SqlType kt, int64_t *i, double *f, bool *months)
{
    bool dt = kt.kind == TK_DATE || kt.kind == TK_TIME || type_is_ts(kt.kind);
    if (n && dt && n->k == A_TYPED && type_is_interval((TypeKind)n->type.kind))
        return range_interval(p, n, kt, i, months);
    if (dt)
        return perr(p, SL_ESEMANTIC, n ? n->line : 0, n ? n->col : 0,
                    "a RANGE offset over a %s ORDER BY key must be an INTERVAL literal",
                    tname(kt));
    if (n && n->k == A_TYPED)
        return perr(p, SL_ESEMANTIC, n->line, n->col,
                    "a RANGE offset over a %s ORDER BY key must be a numeric literal", tname(kt));
    if (!n || (n->k != A_INT && n->k != A_NUM))
        return perr(p, SL_EUNSUPPORTED, n ? n->line : 0, n ? n->col : 0,
                    "a RANGE offset must be a non-negative numeric literal");
    if (type_phys(kt) == PHYS_F64) {
        *f = strtod(n->str, NULL);
        return 0;
    }
    if (type_is_wide(kt))
        return perr(p, SL_EUNSUPPORTED, n->line, n->col,
                    "a RANGE offset over %s is not supported yet (precision at most %d)",
                    tname(kt), DECIMAL64_MAX_PREC);
    if (kt.kind == TK_DECIMAL) {
        SqlType t = kt;
        t.prec = DECIMAL64_MAX_PREC;
        t.nullable = 0;
        Err e = {0};
        if (text_parse(t, n->str, strlen(n->str), p->a, i, NULL, NULL, &e))
            return perr(p, SL_ESEMANTIC, n->line, n->col, "bad RANGE offset: %s", e.msg);
        return 0;
    }
    if (n->k != A_INT)
        return perr(p, SL_ESEMANTIC, n->line, n->col,
                    "a RANGE offset over an integer ORDER BY key must be an integer");
    *i = strtoll(n->str, NULL, 10);
    return 0;
}

static int bind_frame(P *p, Ast *x, WinCall *c)
{
    WinDef *wd = x->over;
    WinFunc *f = &c->f;
    static const char *bn[] = {"UNBOUNDED PRECEDING", "PRECEDING", "CURRENT ROW", "FOLLOWING",
                               "UNBOUNDED FOLLOWING"};
    if (!wd->frame) { /* standard default */
        f->rows = false;
        f->start = FB_UNBOUNDED_PRECEDING;
        f->end = c->nord ? FB_CURRENT_ROW : FB_UNBOUNDED_FOLLOWING;
        return 0;
    }
    f->rows = wd->frame == 1;
    f->groups = wd->frame == 3;
    f->exclude = (FrameExclude)wd->exclude;
    f->start = (FrameBound)wd->start;
    f->end = (FrameBound)wd->end;
    if (f->start == FB_UNBOUNDED_FOLLOWING)
        return perr(p, SL_ESEMANTIC, wd->frame_line, wd->frame_col,
                    "a frame cannot start at UNBOUNDED FOLLOWING");
    if (f->end == FB_UNBOUNDED_PRECEDING)
        return perr(p, SL_ESEMANTIC, wd->frame_line, wd->frame_col,
                    "a frame cannot end at UNBOUNDED PRECEDING");
    if (f->start > f->end)
        return perr(p, SL_ESEMANTIC, wd->frame_line, wd->frame_col,
                    "a frame starting at %s cannot end at %s", bn[f->start], bn[f->end]);
    bool soff = f->start == FB_PRECEDING || f->start == FB_FOLLOWING;
    bool eoff = f->end == FB_PRECEDING || f->end == FB_FOLLOWING;
    if (f->groups && (soff || eoff) && !c->nord)
        return perr(p, SL_ESEMANTIC, wd->frame_line, wd->frame_col,
                    "GROUPS with an offset needs ORDER BY (its groups are the rows equal on "
                    "the ORDER BY keys)");
    if (f->rows || f->groups) {
        const char *what = f->rows ? "a ROWS offset" : "a GROUPS offset";
        if ((soff && int_literal(p, wd->start_n, what, &f->start_n)) ||
            (eoff && int_literal(p, wd->end_n, what, &f->end_n)))
            return p->err->code;
        return 0;
    }
    if (!soff && !eoff)
        return 0;
    SqlType kt = c->nord == 1 ? c->ord[0]->t : type_make(TK_NULL, true);
    if (c->nord != 1 || !(type_is_numeric(kt.kind) || kt.kind == TK_DATE ||
                          kt.kind == TK_TIME || type_is_ts(kt.kind)))
        return perr(p, SL_EUNSUPPORTED, wd->frame_line, wd->frame_col,
                    "RANGE with an offset needs exactly one ORDER BY key of a numeric, DATE, "
                    "TIME or TIMESTAMP type");
    if ((soff && range_offset(p, wd->start_n, kt, &f->start_n, &f->start_f,
                              &f->start_months)) ||
        (eoff && range_offset(p, wd->end_n, kt, &f->end_n, &f->end_f, &f->end_months)))
        return p->err->code;
    return 0;
}

static bool is_name(const Ast *x, const char *n) { return !strcmp(x->name, n); }

static Expr *bind_call(P *p, BindCtx *bc, Ast *x, WinCtx *w);

Expr *sql__bind_window(P *p, BindCtx *bc, Ast *x)
{
    WinCtx *w = bc->agg ? bc->agg->win : NULL;
    if (!w) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "window function %s is not allowed in %s (only in the select list)", x->name,
             bc->clause);
        return NULL;
    }
    /* no window functions inside window functions */
    bc->agg->win = NULL;
    Expr *e = bind_call(p, bc, x, w);
    bc->agg->win = w;
    return e;
}

/* ---- the statistical aggregates over a window ----
   VAR_*, STDDEV_*, COVAR_*, CORR with OVER are rewritten into window SUMs
   and COUNTs of DOUBLE values sharing the call's OVER (their sums are
   exact, xsum.h), combined per row:
     var = (S(x*x) - S(x)^2 / n) / (n or n - 1), stddev = sqrt(var),
     covar = (S(x*y) - S(x) S(y) / n) / (n or n - 1),
     corr = covar_pop(x, y) / sqrt(var_pop(x) var_pop(y)),
   over the rows where the argument (both arguments) is not NULL. */

static Ast *mk_ast(P *p, const Ast *at, AstKind k)
{
    Ast *a = arena_zalloc(p->a, sizeof(*a));
    a->k = k;
    a->line = at->line;
    a->col = at->col;
    return a;
}

static void set_args(P *p, Ast *a, Ast *const *v, int n)
{
    a->args.v = arena_alloc(p->a, sizeof(Ast *) * (size_t)n);
    memcpy(a->args.v, v, sizeof(Ast *) * (size_t)n);
    a->args.n = a->args.cap = n;
}

static Ast *bin(P *p, const Ast *at, int op, Ast *l, Ast *r)
{
    Ast *a = mk_ast(p, at, A_BIN);
    a->op = op;
    a->a = l;
    a->b = r;
    return a;
}

static Ast *num(P *p, const Ast *at, const char *text)
{
    Ast *a = mk_ast(p, at, strchr(text, 'e') ? A_NUM : A_INT);
    a->str = (char *)text;
    a->slen = strlen(text);
    return a;
}

/* name(arg) OVER the window of x */
static Ast *over(P *p, const Ast *x, const char *name, Ast *arg)
{
    Ast *a = mk_ast(p, x, A_FUNC);
    a->name = (char *)name;
    a->over = x->over;
    set_args(p, a, &arg, 1);
    return a;
}

/* CASE WHEN c THEN v [ELSE e] END */
static Ast *when(P *p, const Ast *at, Ast *c, Ast *v, Ast *e)
{
    Ast *a = mk_ast(p, at, A_CASE);
    Ast *wt[2] = {c, v};
    set_args(p, a, wt, 2);
    a->b = e;
    return a;
}

static Ast *sqrt_of(P *p, const Ast *at, Ast *v)
{
    Ast *a = mk_ast(p, at, A_FUNC);
    a->name = "sqrt";
    set_args(p, a, &v, 1);
    return a;
}

static Ast *stat_window(P *p, Ast *x)
{
    const char *n = x->name;
    bool two = !strcmp(n, "covar_pop") || !strcmp(n, "covar_samp") || !strcmp(n, "corr");
    if (x->args.n != 1 + two || x->star) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes exactly %s", n,
             two ? "two arguments" : "one argument");
        return NULL;
    }
    Ast *v[2];
    for (int i = 0; i <= two; i++) {
        v[i] = mk_ast(p, x, A_CAST);
        v[i]->a = x->args.v[i];
        v[i]->type = type_make(TK_DOUBLE, true);
    }
    if (two) { /* the rows where both are not NULL */
        for (int i = 0; i < 2; i++) {
            Ast *nn = mk_ast(p, x, A_ISNULL);
            nn->a = x->args.v[1 - i];
            nn->negated = true;
            v[i] = when(p, x, nn, v[i], NULL);
        }
    }
    Ast *a = v[0], *b = two ? v[1] : v[0];
    Ast *cnt = over(p, x, "count", a), *sa = over(p, x, "sum", a), *sb = over(p, x, "sum", b);
    /* the centred sum of products: S(a*b) - S(a) S(b) / n */
    Ast *m = bin(p, x, OP_SUB, over(p, x, "sum", bin(p, x, OP_MUL, a, b)),
                 bin(p, x, OP_DIV, bin(p, x, OP_MUL, sa, sb), cnt));
    bool samp = !strcmp(n, "stddev") || !strcmp(n, "stddev_samp") || !strcmp(n, "variance") ||
                !strcmp(n, "var_samp") || !strcmp(n, "covar_samp");
    if (!strcmp(n, "corr")) {
        Ast *ma = bin(p, x, OP_SUB, over(p, x, "sum", bin(p, x, OP_MUL, a, a)),
                      bin(p, x, OP_DIV, bin(p, x, OP_MUL, sa, sa), cnt));
        Ast *mb = bin(p, x, OP_SUB, over(p, x, "sum", bin(p, x, OP_MUL, b, b)),
                      bin(p, x, OP_DIV, bin(p, x, OP_MUL, sb, sb), cnt));
        Ast *pos = bin(p, x, OP_AND, bin(p, x, OP_GT, ma, num(p, x, "0e0")),
                       bin(p, x, OP_GT, mb, num(p, x, "0e0")));
        return when(p, x, bin(p, x, OP_AND, bin(p, x, OP_GT, cnt, num(p, x, "0")), pos),
                    bin(p, x, OP_DIV, m, sqrt_of(p, x, bin(p, x, OP_MUL, ma, mb))), NULL);
    }
    Ast *den = samp ? bin(p, x, OP_SUB, cnt, num(p, x, "1")) : cnt;
    Ast *var = bin(p, x, OP_DIV, m, den);
    if (!strncmp(n, "stddev", 6)) /* rounding may leave a tiny negative */
        var = when(p, x, bin(p, x, OP_GT, m, num(p, x, "0e0")), sqrt_of(p, x, var),
                   num(p, x, "0e0"));
    return when(p, x, bin(p, x, OP_GT, cnt, num(p, x, samp ? "1" : "0")), var, NULL);
}

static bool stat_window_name(const char *n)
{
    static const char *const names[] = {"stddev", "stddev_samp", "stddev_pop", "variance",
                                        "var_samp", "var_pop", "covar_pop", "covar_samp",
                                        "corr"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(n, names[i]))
            return true;
    return false;
}

static bool same_expr(const Expr *a, const Expr *b)
{
    return a == b || (a && b && sql__expr_equal(a, b) && a->t.nullable == b->t.nullable);
}

/* Do a and b compute the same column (function, argument, window)? */
static bool same_call(const WinCall *a, const WinCall *b)
{
    const WinFunc *f = &a->f, *g = &b->f;
    if (f->kind != g->kind || f->offset != g->offset || f->rows != g->rows ||
        f->start != g->start || f->end != g->end || f->start_n != g->start_n ||
        f->end_n != g->end_n || f->start_f != g->start_f || f->end_f != g->end_f ||
        f->ignore_nulls != g->ignore_nulls || f->groups != g->groups ||
        f->exclude != g->exclude || f->distinct != g->distinct ||
        f->start_months != g->start_months || f->end_months != g->end_months ||
        memcmp(&f->out_t, &g->out_t, sizeof(SqlType)) || a->npart != b->npart ||
        a->nord != b->nord || !same_expr(a->arg, b->arg) || !same_expr(a->def, b->def))
        return false;
    for (int i = 0; i < a->npart; i++)
        if (!same_expr(a->part[i], b->part[i]))
            return false;
    for (int i = 0; i < a->nord; i++)
        if (!same_expr(a->ord[i], b->ord[i]) || a->desc[i] != b->desc[i] ||
            a->nulls_first[i] != b->nulls_first[i])
            return false;
    return true;
}

static Expr *bind_call(P *p, BindCtx *bc, Ast *x, WinCtx *w)
{
    if (stat_window_name(x->name) && !x->distinct) {
        Ast *r = stat_window(p, x);
        if (!r)
            return NULL;
        bc->agg->win = w; /* the calls inside bind as window functions */
        Expr *e = sql__bind(p, bc, r);
        bc->agg->win = NULL;
        return e;
    }
    WinDef *wd = x->over;
    if (wd->ref) { /* a reference the parser could not resolve (no WINDOW clause here) */
        perr(p, SL_ESEMANTIC, wd->ref_line, wd->ref_col, "window \"%s\" does not exist", wd->ref);
        return NULL;
    }
    BindCtx in = *bc;
    WinCall c;
    memset(&c, 0, sizeof(c));
    c.ast = x;
    c.npart = wd->part.n;
    c.part = arena_alloc(p->a, sizeof(Expr *) * (size_t)(c.npart + 1));
    for (int i = 0; i < c.npart; i++)
        if (!(c.part[i] = bind_part(p, &in, wd->part.v[i])))
            return NULL;
    c.nord = wd->norder;
    c.ord = arena_alloc(p->a, sizeof(Expr *) * (size_t)(c.nord + 1));
    c.desc = arena_alloc(p->a, sizeof(bool) * (size_t)(c.nord + 1));
    c.nulls_first = arena_alloc(p->a, sizeof(bool) * (size_t)(c.nord + 1));
    for (int i = 0; i < c.nord; i++) {
        const OrderItem *o = &wd->order[i];
        if (!(c.ord[i] = bind_part(p, &in, o->e)))
            return NULL;
        c.desc[i] = o->desc;
        c.nulls_first[i] = o->nulls ? o->nulls == 1 : !o->desc;
    }
    WinFunc *f = &c.f;
    f->col = f->def_col = -1;
    if (x->distinct && !(sql__is_agg_name(x->name) && !x->star &&
                         (is_name(x, "count") || is_name(x, "sum") || is_name(x, "avg") ||
                          is_name(x, "min") || is_name(x, "max")))) {
        perr(p, SL_EUNSUPPORTED, x->line, x->col,
             "%s(DISTINCT ...) OVER is not supported (only COUNT, SUM, AVG, MIN and MAX)",
             x->name);
        return NULL;
    }
    if (x->ignore_nulls && !is_name(x, "first_value") && !is_name(x, "last_value") &&
        !is_name(x, "nth_value") && !is_name(x, "lag") && !is_name(x, "lead")) {
        perr(p, SL_ESEMANTIC, x->ignore_line, x->ignore_col,
             "IGNORE NULLS does not apply to %s (only to FIRST_VALUE, LAST_VALUE, NTH_VALUE, "
             "LAG and LEAD)", x->name);
        return NULL;
    }
    /* MIN/MAX(DISTINCT x) = MIN/MAX(x) */
    f->distinct = x->distinct && !is_name(x, "min") && !is_name(x, "max");
    f->ignore_nulls = x->ignore_nulls;
    int na = x->args.n;
    if (is_name(x, "row_number") || is_name(x, "rank") || is_name(x, "dense_rank")) {
        if (na || x->star) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes no arguments", x->name);
            return NULL;
        }
        f->kind = is_name(x, "row_number") ? WIN_ROW_NUMBER
                  : is_name(x, "rank")     ? WIN_RANK
                                           : WIN_DENSE_RANK;
        f->out_t = type_make(TK_BIGINT, false);
    } else if (is_name(x, "ntile") || is_name(x, "percent_rank") || is_name(x, "cume_dist")) {
        bool nt = is_name(x, "ntile");
        if (na != nt || x->star) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes %s", x->name,
                 nt ? "exactly one argument" : "no arguments");
            return NULL;
        }
        if (nt && int_literal(p, x->args.v[0], "the argument of NTILE", &f->offset))
            return NULL;
        if (nt && f->offset <= 0) {
            perr(p, SL_ESEMANTIC, x->args.v[0]->line, x->args.v[0]->col,
                 "the argument of NTILE must be greater than zero");
            return NULL;
        }
        f->kind = nt ? WIN_NTILE : is_name(x, "percent_rank") ? WIN_PERCENT_RANK : WIN_CUME_DIST;
        f->out_t = type_make(nt ? TK_BIGINT : TK_DOUBLE, false);
        if (f->kind == WIN_CUME_DIST) { /* rows up to the last peer */
            f->start = FB_UNBOUNDED_PRECEDING;
            f->end = FB_CURRENT_ROW;
        }
    } else if (is_name(x, "first_value") || is_name(x, "last_value") ||
               is_name(x, "nth_value")) {
        bool nth = is_name(x, "nth_value");
        if (na != 1 + nth || x->star) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes exactly %s", x->name,
                 nth ? "two arguments" : "one argument");
            return NULL;
        }
        f->kind = nth ? WIN_NTH_VALUE : is_name(x, "first_value") ? WIN_FIRST_VALUE
                                                                  : WIN_LAST_VALUE;
        if (!(c.arg = bind_part(p, &in, x->args.v[0])))
            return NULL;
        if (nth && int_literal(p, x->args.v[1], "the position of NTH_VALUE", &f->offset))
            return NULL;
        if (nth && f->offset <= 0) {
            perr(p, SL_ESEMANTIC, x->args.v[1]->line, x->args.v[1]->col,
                 "the position of NTH_VALUE must be greater than zero");
            return NULL;
        }
        if (narrow_arg(p, x, c.arg->t))
            return NULL;
        f->in_t = c.arg->t;
        f->out_t = c.arg->t;
        f->out_t.nullable = 1;
        if (bind_frame(p, x, &c))
            return NULL;
    } else if (is_name(x, "lag") || is_name(x, "lead")) {
        if (na < 1 || na > 3 || x->star) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes 1 to 3 arguments", x->name);
            return NULL;
        }
        f->kind = is_name(x, "lag") ? WIN_LAG : WIN_LEAD;
        f->offset = 1;
        if (!(c.arg = bind_part(p, &in, x->args.v[0])))
            return NULL;
        if (na >= 2 && int_literal(p, x->args.v[1], "the offset of LAG/LEAD", &f->offset))
            return NULL;
        SqlType t = c.arg->t;
        if (na == 3) {
            if (!(c.def = sql__bind(p, &in, x->args.v[2])))
                return NULL;
            if (!sql__common_type(t, c.def->t, &t)) {
                perr(p, SL_ESEMANTIC, x->args.v[2]->line, x->args.v[2]->col,
                     "the default of %s has type %s, incompatible with %s", x->name,
                     tname(c.def->t), tname(c.arg->t));
                return NULL;
            }
            if (t.kind == TK_NULL)
                t = type_make(TK_INT, true);
            c.def = sql__cast_to(p, c.def, t);
        }
        c.arg = sql__cast_to(p, c.arg, t);
        if (narrow_arg(p, x, c.arg->t))
            return NULL;
        f->in_t = c.arg->t;
        f->out_t = c.arg->t;
        f->out_t.nullable = 1;
    } else if (sql__is_agg_name(x->name)) {
        SqlType at = type_make(TK_NULL, true);
        if (x->star) {
            if (!is_name(x, "count")) {
                perr(p, SL_ESEMANTIC, x->line, x->col, "%s(*) is not valid; only COUNT(*)",
                     x->name);
                return NULL;
            }
            f->kind = WIN_COUNT_STAR;
        } else {
            if (na != 1) {
                perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes exactly one argument", x->name);
                return NULL;
            }
            if (!(c.arg = bind_part(p, &in, x->args.v[0])))
                return NULL;
            if (sql__bool_agg(x->name) && !(c.arg = sql__bool_agg_arg(p, x, c.arg)))
                return NULL;
            at = c.arg->t;
            f->kind = is_name(x, "count") ? WIN_COUNT
                      : is_name(x, "sum") ? WIN_SUM
                      : is_name(x, "avg") ? WIN_AVG
                      : is_name(x, "min") || sql__bool_agg(x->name) == 1 ? WIN_MIN
                                                                        : WIN_MAX;
        }
        if (agg_types(p, x, f, at) || bind_frame(p, x, &c))
            return NULL;
    } else {
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "window function %s is not supported yet",
             x->name);
        return NULL;
    }
    for (int i = 0; i < w->n; i++) /* the same call again: one column */
        if (same_call(&w->calls[i], &c))
            return expr_col(p->a, PH_BASE + i, f->out_t);
    *VEC_PUSH_ARENA(p->a, w->calls, w->n, w->cap) = c;
    return expr_col(p->a, PH_BASE + w->n - 1, f->out_t);
}

/* ---- planning ------------------------------------------------------------------ */

typedef struct Extra {
    Expr **v;
    int n, ncol; /* ncol: columns of the input before the extras */
} Extra;

/* Column computing e: an input column, or an extra expression. */
static int col_of(Extra *x, Expr *e)
{
    if (e->k == E_COL && e->col < x->ncol)
        return e->col;
    for (int i = 0; i < x->n; i++)
        if (sql__expr_equal(x->v[i], e) && x->v[i]->t.nullable == e->t.nullable)
            return x->ncol + i;
    x->v[x->n] = e;
    return x->ncol + x->n++;
}

static bool same_spec(const WinCall *a, const int *apart, const int *aord, const WinCall *b,
                      const int *bpart, const int *bord)
{
    if (a->npart != b->npart || a->nord != b->nord)
        return false;
    for (int i = 0; i < a->npart; i++)
        if (apart[i] != bpart[i])
            return false;
    for (int i = 0; i < a->nord; i++)
        if (aord[i] != bord[i] || a->desc[i] != b->desc[i] ||
            a->nulls_first[i] != b->nulls_first[i])
            return false;
    return true;
}

static void remap(Expr *e, const WinCtx *w)
{
    if (e->k == E_COL && e->col >= PH_BASE)
        e->col = w->calls[e->col - PH_BASE].out_col;
    for (int i = 0; i < e->na; i++)
        remap(e->a[i], w);
}

int sql__plan_windows(P *p, WinCtx *w, int node, Expr **filter, Expr **proj, int nproj)
{
    if (!w || !w->n)
        return node;
    int C = p->c->nodes[node]->ncol, total = 0;
    for (int i = 0; i < w->n; i++)
        total += w->calls[i].npart + w->calls[i].nord + 2;
    Extra x = {arena_alloc(p->a, sizeof(Expr *) * (size_t)(total + 1)), 0, C};
    int **pc = arena_alloc(p->a, sizeof(int *) * (size_t)w->n);
    int **oc = arena_alloc(p->a, sizeof(int *) * (size_t)w->n);
    for (int i = 0; i < w->n; i++) {
        WinCall *c = &w->calls[i];
        pc[i] = arena_alloc(p->a, sizeof(int) * (size_t)(c->npart + 1));
        oc[i] = arena_alloc(p->a, sizeof(int) * (size_t)(c->nord + 1));
        for (int j = 0; j < c->npart; j++)
            pc[i][j] = col_of(&x, c->part[j]);
        for (int j = 0; j < c->nord; j++)
            oc[i][j] = col_of(&x, c->ord[j]);
        c->f.col = c->arg ? col_of(&x, c->arg) : -1;
        c->f.def_col = c->def ? col_of(&x, c->def) : -1;
    }
    if (x.n || *filter) {
        const CNode *src = p->c->nodes[node];
        Expr **pre = arena_alloc(p->a, sizeof(Expr *) * (size_t)(C + x.n + 1));
        for (int i = 0; i < C; i++)
            pre[i] = expr_col(p->a, i, src->types[i]);
        for (int i = 0; i < x.n; i++)
            pre[C + i] = x.v[i];
        node = sql__add_map(p, node, *filter, pre, C + x.n);
        *filter = NULL;
    }
    bool *done = arena_zalloc(p->a, (size_t)w->n);
    for (int i = 0; i < w->n; i++) {
        if (done[i])
            continue;
        int m = 0;
        for (int j = i; j < w->n; j++)
            if (!done[j] && same_spec(&w->calls[i], pc[i], oc[i], &w->calls[j], pc[j], oc[j]))
                m++;
        const CNode *src = p->c->nodes[node];
        CNode *wn = sql__add_node(p, OPK_WINDOW, 1, src->ncol + m);
        wn->in[0] = node;
        memcpy(wn->types, src->types, sizeof(SqlType) * (size_t)src->ncol);
        const WinCall *c = &w->calls[i];
        wn->npart = c->npart;
        wn->part = pc[i];
        wn->nord = c->nord;
        wn->ord = oc[i];
        wn->ord_desc = c->desc;
        wn->ord_nulls_first = c->nulls_first;
        wn->wfn = arena_alloc(p->a, sizeof(WinFunc) * (size_t)m);
        wn->nwfn = 0;
        wn->limit = -1;
        for (int j = i; j < w->n; j++) {
            if (done[j] || !same_spec(c, pc[i], oc[i], &w->calls[j], pc[j], oc[j]))
                continue;
            done[j] = true;
            w->calls[j].out_col = src->ncol + wn->nwfn;
            wn->types[src->ncol + wn->nwfn] = w->calls[j].f.out_t;
            wn->wfn[wn->nwfn++] = w->calls[j].f;
        }
        node = wn->id;
    }
    for (int i = 0; i < nproj; i++)
        remap(proj[i], w);
    return node;
}

/* ---- top-k ------------------------------------------------------------------ */

static int limit_of(P *p, Ast *e, const char *what, int64_t *out)
{
    *out = -1;
    if (!e)
        return 0;
    if (e->k != A_INT)
        return perr(p, SL_EUNSUPPORTED, e->line, e->col,
                    "%s must be an integer literal (expressions are not supported yet)", what);
    *out = strtoll(e->str, NULL, 10);
    return 0;
}

int sql__plan_topk(P *p, PRel *q, const OrderOut *ord, int64_t limit, int64_t offset,
                   bool ties, bool present)
{
    const CNode *src = p->c->nodes[q->node];
    CNode *t = sql__add_node(p, OPK_TOPK, 1, src->ncol);
    t->in[0] = q->node;
    memcpy(t->types, src->types, sizeof(SqlType) * (size_t)src->ncol);
    t->nord = ord->n;
    t->ord = ord->col;
    t->ord_desc = ord->desc;
    t->ord_nulls_first = ord->nulls_first;
    t->rank = ties ? RANK_TIES : RANK_NONE;
    int64_t off = offset > 0 ? offset : 0;
    if (present) { /* the reader applies offset and limit to the first rows */
        if (limit < 0 || __builtin_add_overflow(limit, off, &t->limit))
            t->limit = -1;
        t->offset = 0;
    } else {
        t->limit = limit;
        t->offset = off;
    }
    int node = t->id;
    if (!present && ord->nhidden) {
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(q->s.n + 1));
        for (int i = 0; i < q->s.n; i++)
            proj[i] = expr_col(p->a, i, t->types[i]);
        node = sql__add_map(p, node, NULL, proj, q->s.n);
    }
    q->node = node;
    return 0;
}

int sql__plan_limited(P *p, Select *q, PRel *out)
{
    int64_t limit, offset;
    OrderOut ord;
    if (limit_of(p, q->limit, "LIMIT", &limit) || limit_of(p, q->offset, "OFFSET", &offset) ||
        sql__plan_query_ord(p, q, out, &ord))
        return p->err->code;
    if (q->with_ties && !q->norder)
        return perr(p, SL_ESEMANTIC, q->limit_line, q->limit_col,
                    "FETCH ... WITH TIES needs ORDER BY (the ties are rows equal on its keys)");
    return sql__plan_topk(p, out, &ord, limit, offset, q->with_ties, false);
}

/* Nodes reading node id (and whether a relation exposes it). */
static int consumers(const Circuit *c, int id)
{
    int k = 0;
    for (int i = id + 1; i < c->nnodes; i++)
        for (int j = 0; j < c->nodes[i]->nin; j++)
            k += c->nodes[i]->in[j] == id;
    for (int r = 0; r < c->nrels; r++)
        if (c->rels[r].node == id)
            k += 2;
    return k;
}

/* An integer constant (possibly under casts): *v. */
static bool int_const(const Expr *e, int64_t *v)
{
    while (e->k == E_CAST && e->na == 1 && type_is_integer((TypeKind)e->t.kind))
        e = e->a[0];
    if (e->k != E_CONST || e->cnull || !type_is_integer((TypeKind)e->t.kind))
        return false;
    *v = e->ci;
    return true;
}

/* rank-bound conjunct `col <= k` (<, =, or mirrored): column and limit. */
static bool rank_bound(const Expr *e, int *col, int64_t *limit)
{
    if (e->na != 2 || (e->k != E_LE && e->k != E_LT && e->k != E_EQ && e->k != E_GE &&
                       e->k != E_GT))
        return false;
    const Expr *a = e->a[0], *b = e->a[1];
    ExprKind k = e->k;
    int64_t v;
    if (a->k != E_COL) { /* k >= col */
        const Expr *t = a;
        a = b;
        b = t;
        k = k == E_GE ? E_LE : k == E_GT ? E_LT : k == E_EQ ? E_EQ : E_NOT;
    }
    if (a->k != E_COL || !int_const(b, &v) || (k != E_LE && k != E_LT && k != E_EQ))
        return false;
    *col = a->col;
    *limit = k == E_LT ? v - 1 : v;
    if (*limit < 0)
        *limit = 0;
    return true;
}

void sql__topk_rewrite(P *p, int first)
{
    Circuit *c = p->c;
    for (int i = first; i < c->nnodes; i++) {
        CNode *m = c->nodes[i];
        if (m->k != OPK_MAP || !m->filter)
            continue;
        Expr *const *conj = m->filter->k == E_AND ? m->filter->a : &m->filter;
        int nconj = m->filter->k == E_AND ? m->filter->na : 1;
        for (int k = 0; k < nconj; k++) {
            int col;
            int64_t limit;
            if (!rank_bound(conj[k], &col, &limit))
                continue;
            /* follow the column down through projections */
            CNode *x = c->nodes[m->in[0]];
            while (x->k == OPK_MAP && x->id >= first && consumers(c, x->id) == 1 &&
                   x->proj[col]->k == E_COL) {
                col = x->proj[col]->col;
                x = c->nodes[x->in[0]];
            }
            if (x->k != OPK_WINDOW || x->id < first || x->nwfn != 1 || col != x->ncol - 1 ||
                consumers(c, x->id) != 1)
                continue;
            WinKind wk = x->wfn[0].kind;
            if (wk != WIN_ROW_NUMBER && wk != WIN_RANK && wk != WIN_DENSE_RANK)
                continue;
            x->k = OPK_TOPK;
            x->rank = wk == WIN_ROW_NUMBER ? RANK_ROW_NUMBER : wk == WIN_RANK ? RANK_RANK
                                                                               : RANK_DENSE;
            x->limit = limit;
            x->offset = 0;
            x->wfn = NULL;
            x->nwfn = 0;
            break;
        }
    }
}
