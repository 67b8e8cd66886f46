/*
 * sql/plan_tvf.c - the windowing table functions of FROM, as Feldera (and
 * Calcite) spell them:
 *
 *   TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size [, offset]))
 *   TABLE(HOP(TABLE t, DESCRIPTOR(ts), slide, size [, offset]))
 *
 * Both give t's columns followed by window_start and window_end
 * (TIMESTAMP): TUMBLE one row per input row (the window of length size
 * containing ts, windows aligned on offset, default 0 = 1970-01-01), HOP one
 * row per window of length size, starting every slide, that contains ts.
 * A row whose ts is NULL is in no window and is dropped.
 *
 * Planning is purely linear, so the result is maintained incrementally
 * like any projection: TUMBLE is one MAP; HOP with size = n * slide is a
 * UNION of n MAPs, the k-th computing the window that starts k slides
 * before the TUMBLE(slide) window of the row (each of those n windows
 * contains ts, and no other does). size must be a multiple of slide, and
 * all of size, slide and offset constant day-to-second intervals.
 *
 * Over a TIMESTAMPTZ column, windows whose size and slide are whole days
 * are computed on the wall-clock time in the session zone (CAST to
 * TIMESTAMP, then the bounds CAST back): a 1-day window runs from local
 * midnight to local midnight, as PostgreSQL's date_bin over
 * `x::timestamp` read back AT TIME ZONE; other sizes bin the instant.
 */
#include "../expr/text.h"
#include "sql_int.h"

#define HOP_MAX_WINDOWS 1024 /* size / slide: rows made per input row */

/* A constant INTERVAL DAY TO SECOND argument; -1 (error set) otherwise. */
static int64_t interval_arg(P *p, Ast *x, const char *what, bool positive)
{
    Scope none = {NULL, 0};
    BindCtx bc = {&none, NULL, "a window table function argument"};
    Expr *e = x->k == A_COL ? NULL : sql__bind(p, &bc, x);
    if (!e && x->k != A_COL)
        return -1;
    if (!e || e->k != E_CONST || e->t.kind != TK_INTERVAL_DT || e->cnull) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "the %s must be a constant INTERVAL (e.g. INTERVAL '1' HOUR), not %s", what,
             e && e->k == E_CONST ? tname(e->t) : "an expression");
        return -1;
    }
    if (positive ? e->ci <= 0 : e->ci < 0) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "the %s must be %s", what,
             positive ? "positive" : "zero or positive");
        return -1;
    }
    return e->ci;
}

int sql__plan_tvf(P *p, FromItem *f, PRel *out)
{
    bool hop = !strcmp(f->name, "hop");
    const char *fname = hop ? "HOP" : "TUMBLE";
    int na = f->tvf_args.n, want = hop ? 2 : 1;
    if (na < want || na > want + 1)
        return perr(p, SL_ESEMANTIC, f->line, f->col,
                    "%s takes %s, then an optional offset: %d given after DESCRIPTOR", fname,
                    hop ? "TABLE t, DESCRIPTOR(col), slide, size" : "TABLE t, DESCRIPTOR(col), size",
                    na);
    PRel in;
    if (sql__plan_from_item(p, f->tvf_input, &in, NULL))
        return p->err->code;
    int tc = -1;
    for (int i = 0; i < in.s.n; i++)
        if (!in.s.c[i].hidden && !strcasecmp(in.s.c[i].name, f->tvf_col))
            tc = i;
    if (tc < 0)
        return perr(p, SL_ESEMANTIC, f->tvf_col_line, f->tvf_col_col,
                    "column \"%s\" not found in \"%s\"", f->tvf_col, f->tvf_input->name);
    SqlType tt = in.s.c[tc].t;
    if (!type_is_ts(tt.kind)) /* TIMESTAMPTZ: windows of the instant (UTC-aligned) */
        return perr(p, SL_ESEMANTIC, f->tvf_col_line, f->tvf_col_col,
                    "the DESCRIPTOR column of %s must be a TIMESTAMP, not %s", fname, tname(tt));
    int64_t slide = interval_arg(p, f->tvf_args.v[0], hop ? "slide" : "size", true);
    if (slide < 0)
        return p->err->code;
    int64_t size = slide, offset = 0;
    if (hop && (size = interval_arg(p, f->tvf_args.v[1], "size", true)) < 0)
        return p->err->code;
    if (na > want && (offset = interval_arg(p, f->tvf_args.v[want], "offset", false)) < 0)
        return p->err->code;
    if (size % slide) {
        Buf a = {0}, b = {0};
        text_format(type_make(TK_INTERVAL_DT, false), size, 0, (Str){"", 0}, &a);
        text_format(type_make(TK_INTERVAL_DT, false), slide, 0, (Str){"", 0}, &b);
        perr(p, SL_EUNSUPPORTED, f->tvf_args.v[1]->line, f->tvf_args.v[1]->col,
             "HOP size must be a multiple of its slide (size '%.*s', slide '%.*s'): each row "
             "must fall in a whole number of windows", (int)a.n, (char *)a.p, (int)b.n,
             (char *)b.p);
        buf_free(&a);
        buf_free(&b);
        return p->err->code;
    }
    int64_t nwin = size / slide;
    if (nwin > HOP_MAX_WINDOWS)
        return perr(p, SL_EUNSUPPORTED, f->tvf_args.v[1]->line, f->tvf_args.v[1]->col,
                    "HOP with more than %d windows per row (size / slide = %lld) is not supported",
                    HOP_MAX_WINDOWS, (long long)nwin);

    int nc = in.s.n;
    SqlType it = type_make(TK_INTERVAL_DT, false), ts = tt;
    Expr *tcol = expr_col(p->a, tc, tt);
    Expr *keep = NULL;
    if (tt.nullable) {
        keep = sql__mk(p, E_ISNOTNULL, type_make(TK_BOOL, false), 1);
        keep->a[0] = tcol;
    }
    /* TIMESTAMPTZ windows of whole days are windows of the wall-clock
       time in the session zone (they start at its midnight; 23 or 25 hours
       across a DST change), read back as instants; others are windows of
       the instant */
    const int64_t day = INT64_C(86400000000);
    bool local = tt.kind == TK_TIMESTAMPTZ && slide % day == 0 && size % day == 0;
    SqlType wt = local ? type_make(TK_TIMESTAMP, tt.nullable) : ts;
    Expr *base = sql__mk(p, E_FUNC, wt, 3);
    base->fn = FN_TUMBLE_START;
    base->a[0] = local ? sql__cast_to(p, tcol, wt) : tcol;
    base->a[1] = expr_const_i64(p->a, it, slide);
    base->a[2] = expr_const_i64(p->a, it, offset);
    int *maps = arena_alloc(p->a, sizeof(int) * (size_t)nwin);
    for (int64_t k = 0; k < nwin; k++) {
        Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nc + 2));
        for (int i = 0; i < nc; i++)
            proj[i] = expr_col(p->a, i, in.s.c[i].t);
        Expr *start = base;
        if (k > 0) {
            start = sql__mk(p, E_SUB, wt, 2);
            start->a[0] = base;
            start->a[1] = expr_const_i64(p->a, it, k * slide);
        }
        Expr *end = sql__mk(p, E_ADD, wt, 2);
        end->a[0] = start;
        end->a[1] = expr_const_i64(p->a, it, size);
        proj[nc] = local ? sql__cast_to(p, start, ts) : start;
        proj[nc + 1] = local ? sql__cast_to(p, end, ts) : end;
        maps[k] = sql__add_map(p, in.node, keep, proj, nc + 2);
    }
    out->node = sql__sum(p, maps, (int)nwin); /* a HOP row is in every window it overlaps */
    out->s.n = nc + 2;
    out->s.c = arena_zalloc(p->a, sizeof(SCol) * (size_t)(nc + 2));
    for (int i = 0; i < nc; i++) {
        out->s.c[i] = in.s.c[i];
        if (f->alias)
            out->s.c[i].qual = f->alias;
    }
    static const char *const names[2] = {"window_start", "window_end"};
    for (int j = 0; j < 2; j++) {
        out->s.c[nc + j].qual = f->alias ? f->alias : in.s.c[0].qual;
        out->s.c[nc + j].name = names[j];
        out->s.c[nc + j].t = ts;
    }
    return sql__apply_col_aliases(p, f, out);
}
