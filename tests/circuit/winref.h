/*
 * tests/circuit/winref.h - a plain, quadratic reference for window
 * functions and top-k, for test_window.c and test_topk.c.
 *
 * Rows are sorted by partition, then by the window's ORDER BY (per-column
 * DESC and NULLS FIRST/LAST), then by the whole window-input row (NULL
 * first, SQL order per column: how the engine breaks ties). Each function
 * is then computed for each row from its definition: a frame is the set of
 * rows passing a membership test (positions for ROWS, values for RANGE),
 * with no sliding and no incremental state.
 */
#ifndef SL_TESTS_CIRCUIT_WINREF_H
#define SL_TESTS_CIRCUIT_WINREF_H

#include "harness.h"

typedef struct WSpec {
    int npart, part[4];
    int nord, ord[4];
    bool desc[4], nf[4]; /* nf: NULLs first (SQL default: !desc) */
    int ncmp;            /* columns of the window input row (ties) */
    const Phys *ph;      /* phys of each of those columns */
} WSpec;

typedef struct WFn {
    WinKind kind;
    int col;             /* argument column, -1 none */
    int64_t off;         /* LAG/LEAD offset */
    int def_col;         /* LAG/LEAD default column, -1: def (NULL unless has_def) */
    bool has_def;
    HVal def;
    bool rows;           /* frame: ROWS, else RANGE */
    FrameBound start, end;
    int64_t sn, en;      /* offsets (ROWS, RANGE over integers) */
    double sf, ef;       /* RANGE offsets over DOUBLE keys */
} WFn;

/* The standard default frame (RANGE UNBOUNDED PRECEDING .. CURRENT ROW with
   ORDER BY, the whole partition without). */
static inline WFn wf(WinKind k, int col, bool has_order)
{
    WFn f = {.kind = k, .col = col, .off = 1, .def_col = -1, .rows = false,
             .start = FB_UNBOUNDED_PRECEDING,
             .end = has_order ? FB_CURRENT_ROW : FB_UNBOUNDED_FOLLOWING};
    return f;
}
static inline WFn wf_rows(WinKind k, int col, FrameBound s, int64_t sn, FrameBound e, int64_t en)
{
    WFn f = wf(k, col, true);
    f.rows = true;
    f.start = s;
    f.end = e;
    f.sn = sn;
    f.en = en;
    return f;
}
static inline WFn wf_range(WinKind k, int col, FrameBound s, int64_t sn, FrameBound e, int64_t en)
{
    WFn f = wf_rows(k, col, s, sn, e, en);
    f.rows = false;
    return f;
}

static inline int wr_cmp1(const HVal *a, const HVal *b, Phys ph, bool desc, bool nf)
{
    if (a->null || b->null) {
        if (a->null && b->null)
            return 0;
        return a->null ? (nf ? -1 : 1) : (nf ? 1 : -1);
    }
    int c = h_val_cmp(a, b, ph);
    return desc ? -c : c;
}

static inline int wr_cmp_order(const HRow *a, const HRow *b, const WSpec *w)
{
    for (int j = 0; j < w->nord; j++) {
        int c = wr_cmp1(&a->v[w->ord[j]], &b->v[w->ord[j]], w->ph[w->ord[j]], w->desc[j], w->nf[j]);
        if (c)
            return c;
    }
    return 0;
}

static inline int wr_cmp_part(const HRow *a, const HRow *b, const WSpec *w)
{
    for (int j = 0; j < w->npart; j++) {
        int c = h_val_cmp(&a->v[w->part[j]], &b->v[w->part[j]], w->ph[w->part[j]]);
        if (c)
            return c;
    }
    return 0;
}

typedef struct WrCtx {
    const HRows *rows;
    const WSpec *w;
} WrCtx;

static inline int wr_idx_cmp(const void *x, const void *y, void *ctx)
{
    const WrCtx *k = ctx;
    const HRow *a = &k->rows->r[*(const int64_t *)x], *b = &k->rows->r[*(const int64_t *)y];
    int c = wr_cmp_part(a, b, k->w);
    if (!c)
        c = wr_cmp_order(a, b, k->w);
    for (int j = 0; j < k->w->ncmp && !c; j++)
        c = h_val_cmp(&a->v[j], &b->v[j], k->w->ph[j]);
    return c;
}

/* Row order: idx[0..n) sorted (caller frees). */
static inline int64_t *wr_sorted(const HRows *rows, const WSpec *w)
{
    int64_t *idx = sl_malloc(sizeof(int64_t) * (size_t)(rows->n + 1));
    for (int64_t i = 0; i < rows->n; i++)
        idx[i] = i;
    WrCtx ctx = {rows, w};
    qsort_r(idx, (size_t)rows->n, sizeof(int64_t), wr_idx_cmp, &ctx);
    return idx;
}

/* The key value `v` moved by n (nf for doubles) earlier (sign -1) or later
   (+1) in the order of key column 0. */
static inline HVal wr_move(const HVal *v, const WSpec *w, int64_t n, double nf, int sign)
{
    HVal r = *v;
    if (w->desc[0])
        sign = -sign;
    if (w->ph[w->ord[0]] == PHYS_F64)
        r.f += sign * nf;
    else
        r.i += sign * n;
    return r;
}

/* Is row j (of partition rows p[0..n)) in the frame of row i? */
static inline bool wr_in_frame(const HRows *rows, const int64_t *p, int64_t i, int64_t j,
                               const WSpec *w, const WFn *f)
{
    if (f->rows) {
        int64_t lo = f->start == FB_UNBOUNDED_PRECEDING ? INT64_MIN
                     : f->start == FB_PRECEDING        ? i - f->sn
                     : f->start == FB_FOLLOWING        ? i + f->sn
                                                       : i;
        int64_t hi = f->end == FB_UNBOUNDED_FOLLOWING ? INT64_MAX
                     : f->end == FB_PRECEDING         ? i - f->en
                     : f->end == FB_FOLLOWING         ? i + f->en
                                                      : i;
        return j >= lo && j <= hi;
    }
    const HRow *ri = &rows->r[p[i]], *rj = &rows->r[p[j]];
    bool lo_ok, hi_ok;
    const HVal *vi = w->nord ? &ri->v[w->ord[0]] : NULL;
    Phys kph = w->nord ? w->ph[w->ord[0]] : PHYS_I64;
    if (f->start == FB_UNBOUNDED_PRECEDING) {
        lo_ok = true;
    } else if (f->start == FB_CURRENT_ROW || vi->null) {
        lo_ok = wr_cmp_order(rj, ri, w) >= 0;
    } else {
        HVal b = wr_move(vi, w, f->sn, f->sf, f->start == FB_PRECEDING ? -1 : 1);
        lo_ok = wr_cmp1(&rj->v[w->ord[0]], &b, kph, w->desc[0], w->nf[0]) >= 0;
    }
    if (f->end == FB_UNBOUNDED_FOLLOWING) {
        hi_ok = true;
    } else if (f->end == FB_CURRENT_ROW || vi->null) {
        hi_ok = wr_cmp_order(rj, ri, w) <= 0;
    } else {
        HVal b = wr_move(vi, w, f->en, f->ef, f->end == FB_PRECEDING ? -1 : 1);
        hi_ok = wr_cmp1(&rj->v[w->ord[0]], &b, kph, w->desc[0], w->nf[0]) <= 0;
    }
    return lo_ok && hi_ok;
}

/* out[r] = f's value for row r of rows (every row once, m = 1). */
static inline void wref_eval(const HRows *rows, const WSpec *w, const WFn *f, HVal *out)
{
    int64_t *idx = wr_sorted(rows, w);
    for (int64_t s = 0; s < rows->n;) {
        int64_t e = s;
        while (e < rows->n && !wr_cmp_part(&rows->r[idx[s]], &rows->r[idx[e]], w))
            e++;
        const int64_t *p = idx + s;
        int64_t n = e - s;
        for (int64_t i = 0; i < n; i++) {
            const HRow *ri = &rows->r[p[i]];
            HVal v = h_null();
            switch (f->kind) {
            case WIN_ROW_NUMBER:
                v = h_int(i + 1);
                break;
            case WIN_RANK: {
                int64_t k = i;
                while (k > 0 && !wr_cmp_order(&rows->r[p[k - 1]], ri, w))
                    k--;
                v = h_int(k + 1);
                break;
            }
            case WIN_DENSE_RANK: {
                int64_t d = 1;
                for (int64_t k = 1; k <= i; k++)
                    d += wr_cmp_order(&rows->r[p[k - 1]], &rows->r[p[k]], w) != 0;
                v = h_int(d);
                break;
            }
            case WIN_LAG:
            case WIN_LEAD: {
                int64_t t = f->kind == WIN_LAG ? i - f->off : i + f->off;
                if (t >= 0 && t < n)
                    v = rows->r[p[t]].v[f->col];
                else if (f->def_col >= 0)
                    v = ri->v[f->def_col];
                else if (f->has_def)
                    v = f->def;
                break;
            }
            default: {
                int64_t cnt = 0, nn = 0, isum = 0;
                double fsum = 0;
                HVal mn = h_null(), mx = h_null();
                Phys ph = f->col >= 0 ? w->ph[f->col] : PHYS_I64;
                for (int64_t j = 0; j < n; j++) {
                    if (!wr_in_frame(rows, p, i, j, w, f))
                        continue;
                    cnt++;
                    if (f->col < 0)
                        continue;
                    const HVal *x = &rows->r[p[j]].v[f->col];
                    if (x->null)
                        continue;
                    nn++;
                    isum += x->i;
                    fsum += x->f;
                    if (mn.null || h_val_cmp(x, &mn, ph) < 0)
                        mn = *x;
                    if (mx.null || h_val_cmp(x, &mx, ph) > 0)
                        mx = *x;
                }
                bool fl = ph == PHYS_F64;
                switch (f->kind) {
                case WIN_COUNT_STAR: v = h_int(cnt); break;
                case WIN_COUNT: v = h_int(nn); break;
                case WIN_SUM: v = !nn ? h_null() : fl ? h_dbl(fsum) : h_int(isum); break;
                case WIN_AVG:
                    v = !nn ? h_null() : h_dbl((fl ? fsum : (double)isum) / (double)nn);
                    break;
                case WIN_MIN: v = mn; break;
                case WIN_MAX: v = mx; break;
                default: break;
                }
                break;
            }
            }
            out[p[i]] = v;
        }
        s = e;
    }
    sl_free(idx);
}

/* Every row of t once (the window input). */
static inline void wr_copy(const HRows *t, HRows *out)
{
    for (int64_t i = 0; i < t->n; i++)
        h_rows_add(out, &t->r[i], 1);
}

#endif
