/*
 * expr/expr.c - bound scalar expressions: the vectorized evaluator's
 * dispatch, arithmetic, comparison and logic (constructors and EXPLAIN text
 * are expr_tree.c).
 * In: Expr trees built by the binder (plan arena) and a Chunk of input rows
 * with an optional selection vector, from filter/project/join operators.
 * Out: one dense Vec per node (n entries, memory from EvalCtx.arena), or a
 * selection vector (expr_filter).
 *
 * Evaluation is column at a time: a node evaluates its operands over the
 * selected rows into dense vectors, then runs one loop for its kind and type
 * (the switch is outside the loop). NULLs travel as a byte mask beside the
 * values; a kernel computes every slot and ignores the value of NULL rows
 * (overflow in a NULL row is not an error). Laziness where SQL users count
 * on it: a CASE branch, a later COALESCE operand and a later AND/OR operand
 * are evaluated only over the rows still undecided, through a sub-selection
 * of the input rows; their results are scattered back into place.
 *
 * CAST lives in eval_cast.c; functions, LIKE and || in fn_str.c, fn_num.c,
 * fn_time.c and fn_regex.c (private declarations in expr_int.h).
 */
#include "expr.h"

#include <math.h>

#include "expr_int.h"

/* -------------------------------------------------------- shared helpers */

void expr__vec(EvalCtx *cx, SqlType t, int64_t n, Vec *out) { vec_init(out, cx->arena, t, n); }

uint8_t *expr__mask(EvalCtx *cx, Vec *out, int64_t n)
{
    return out->nul ? out->nul : arena_zalloc(cx->arena, (size_t)(n > 0 ? n : 1));
}

void expr__merge_nulls(uint8_t *m, const Vec *v, int64_t n)
{
    if (!v->nul || v->nul == m)
        return;
    uint8_t *restrict z = m;
    const uint8_t *restrict x = v->nul;
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) { /* 8 flags a step */
        uint64_t a, b;
        memcpy(&a, z + k, 8);
        memcpy(&b, x + k, 8);
        a |= b;
        memcpy(z + k, &a, 8);
    }
    for (; k < n; k++)
        z[k] |= x[k];
}

int expr__check_nulls(EvalCtx *cx, const Vec *out, const char *what, int64_t added)
{
    if (added > 0 && !out->nul)
        return err_set(cx->err, SL_ERUNTIME, "%s in an expression whose type is NOT NULL", what);
    return 0;
}

void expr__range(SqlType t, int64_t *lo, int64_t *hi)
{
    if (t.kind == TK_DECIMAL) {
        int p = t.prec ? t.prec : DECIMAL64_MAX_PREC;
        *hi = pow10_i64(p > DECIMAL64_MAX_PREC ? DECIMAL64_MAX_PREC : p) - 1;
        *lo = -*hi;
        return;
    }
    type_int_range((TypeKind)t.kind, lo, hi);
}

int expr__overflow(EvalCtx *cx, const char *op, SqlType t)
{
    char tn[48];
    return err_set(cx->err, SL_ERUNTIME, "%s overflow in %s for %s",
                   t.kind == TK_DECIMAL ? "decimal" : "integer", op,
                   type_name(t, tn, sizeof(tn)));
}

int64_t expr__floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

double *expr__as_f64(EvalCtx *cx, const Vec *v, int64_t n)
{
    if (v->f)
        return v->f;
    double *z = arena_alloc(cx->arena, sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!v->i) {
        for (int64_t k = 0; k < n; k++)
            z[k] = 0;
        return z;
    }
    if (v->x) { /* correctly rounded through the text, as CAST does */
        Vec d;
        SqlType dt = type_make(TK_DOUBLE, false);
        vec_init(&d, cx->arena, dt, n);
        uint8_t *m = arena_zalloc(cx->arena, (size_t)(n > 0 ? n : 1));
        Vec src = *v;
        src.nul = NULL;
        expr__dec_cast(&src, n, cx, &d, m);
        return d.f;
    }
    double d = v->t.kind == TK_DECIMAL ? (double)pow10_i64(v->t.scale) : 1.0;
    const int64_t *x = v->i;
    for (int64_t k = 0; k < n; k++)
        z[k] = (double)x[k] / d;
    return z;
}

/* ----------------------------------------------------------------- leaves */

static __attribute__((noinline)) int eval_col(const Expr *e, const Chunk *in, const int32_t *sel, int64_t n, EvalCtx *cx,
                    Vec *out)
{
    if (e->col < 0 || e->col >= in->ncol)
        sl_panic("expression reads column %d of a %d-column chunk", e->col, in->ncol);
    const Vec *src = &in->col[e->col];
    if (!sel) {
        *out = *src;
        out->t = e->t;
        if (!e->t.nullable)
            out->nul = NULL;
        else if (!src->nul)
            out->nul = arena_zalloc(cx->arena, (size_t)(n > 0 ? n : 1));
        return 0;
    }
    expr__vec(cx, e->t, n, out);
    switch (type_phys(e->t)) {
    case PHYS_I64: {
        int64_t *z = out->i;
        const int64_t *x = src->i;
        for (int64_t k = 0; k < n; k++)
            z[k] = x[sel[k]];
        break;
    }
    case PHYS_F64: {
        double *z = out->f;
        const double *x = src->f;
        for (int64_t k = 0; k < n; k++)
            z[k] = x[sel[k]];
        break;
    }
    case PHYS_STR: {
        Str *z = out->s;
        const Str *x = src->s;
        for (int64_t k = 0; k < n; k++)
            z[k] = x[sel[k]];
        break;
    }
    case PHYS_I128: {
        i128 *z = out->x;
        const i128 *x = src->x;
        for (int64_t k = 0; k < n; k++)
            z[k] = x[sel[k]];
        break;
    }
    }
    if (out->nul && src->nul) {
        uint8_t *z = out->nul;
        const uint8_t *x = src->nul;
        for (int64_t k = 0; k < n; k++)
            z[k] = x[sel[k]];
    }
    return 0;
}

static __attribute__((noinline)) int eval_const(const Expr *e, int64_t n, EvalCtx *cx, Vec *out)
{
    expr__vec(cx, e->t, n, out);
    switch (type_phys(e->t)) {
    case PHYS_I64: {
        int64_t v = e->cnull ? 0 : e->ci;
        for (int64_t k = 0; k < n; k++)
            out->i[k] = v;
        break;
    }
    case PHYS_F64: {
        double v = e->cnull ? 0 : e->cf;
        for (int64_t k = 0; k < n; k++)
            out->f[k] = v;
        break;
    }
    case PHYS_STR: {
        Str v = e->cs;
        if (e->cnull || !v.p)
            v = (Str){"", 0};
        for (int64_t k = 0; k < n; k++)
            out->s[k] = v;
        break;
    }
    case PHYS_I128: {
        i128 v = e->cnull ? 0 : e->cx;
        for (int64_t k = 0; k < n; k++)
            out->x[k] = v;
        break;
    }
    }
    if (e->cnull && out->nul)
        memset(out->nul, 1, (size_t)n);
    return 0;
}

/* ------------------------------------------------------------ arithmetic */

static __int128 pow10_128(int n)
{
    __int128 p = 1;
    while (n-- > 0)
        p *= 10;
    return p;
}

/* narrow: both operands' types lie within +-2^62, so + and - cannot wrap. */
static int arith_i64(int op, const int64_t *x, const int64_t *y, int64_t n, bool narrow,
                     EvalCtx *cx, Vec *out, uint8_t *m)
{
    int64_t lo, hi, nz = 0;
    expr__range(out->t, &lo, &hi);
    int64_t *restrict z = out->i;
    bool bad = false;
    uint64_t badw = 0;
    switch (op) {
    /* + and -: a full-range result (BIGINT) can only overflow int64, tested
     * with sign bits as __builtin_add_overflow does; narrower operands (within
     * +-2^62) cannot, so only the result's range is tested. Unsigned
     * arithmetic keeps junk under NULLs defined. Both forms vectorize. */
    case E_ADD:
        if (lo == INT64_MIN && hi == INT64_MAX) {
            for (int64_t k = 0; k < n; k++) {
                int64_t r = (int64_t)((uint64_t)x[k] + (uint64_t)y[k]);
                z[k] = r;
                badw |= ((uint64_t)((x[k] ^ r) & (y[k] ^ r)) >> 63) & (m[k] == 0);
            }
        } else if (narrow) {
            for (int64_t k = 0; k < n; k++) {
                int64_t r = (int64_t)((uint64_t)x[k] + (uint64_t)y[k]);
                z[k] = r;
                badw |= (uint64_t)((r < lo) | (r > hi)) & (m[k] == 0);
            }
        } else {
            for (int64_t k = 0; k < n; k++) {
                int64_t r;
                bool o = __builtin_add_overflow(x[k], y[k], &r);
                z[k] = r;
                bad |= (o | (r < lo) | (r > hi)) & !m[k];
            }
        }
        break;
    case E_SUB:
        if (lo == INT64_MIN && hi == INT64_MAX) {
            for (int64_t k = 0; k < n; k++) {
                int64_t r = (int64_t)((uint64_t)x[k] - (uint64_t)y[k]);
                z[k] = r;
                badw |= ((uint64_t)((x[k] ^ y[k]) & (x[k] ^ r)) >> 63) & (m[k] == 0);
            }
        } else if (narrow) {
            for (int64_t k = 0; k < n; k++) {
                int64_t r = (int64_t)((uint64_t)x[k] - (uint64_t)y[k]);
                z[k] = r;
                badw |= (uint64_t)((r < lo) | (r > hi)) & (m[k] == 0);
            }
        } else {
            for (int64_t k = 0; k < n; k++) {
                int64_t r;
                bool o = __builtin_sub_overflow(x[k], y[k], &r);
                z[k] = r;
                bad |= (o | (r < lo) | (r > hi)) & !m[k];
            }
        }
        break;
    case E_MUL:
        for (int64_t k = 0; k < n; k++) {
            int64_t r;
            bool o = __builtin_mul_overflow(x[k], y[k], &r);
            o |= (r < lo) | (r > hi);
            z[k] = r;
            bad |= o & !m[k];
        }
        break;
    case E_DIV:
        for (int64_t k = 0; k < n; k++) {
            int64_t d = y[k];
            bool zero = d == 0, mo = (x[k] == INT64_MIN) & (d == -1);
            int64_t r = x[k] / ((zero | mo) ? 1 : d);
            bool live = !m[k];
            bad |= (mo | (r < lo) | (r > hi)) & live & !zero;
            nz += zero & live;
            m[k] |= zero;
            z[k] = r;
        }
        break;
    case E_MOD:
        for (int64_t k = 0; k < n; k++) {
            int64_t d = y[k];
            bool zero = d == 0;
            z[k] = x[k] % ((zero | (d == -1)) ? 1 : d);
            nz += zero & !m[k];
            m[k] |= zero;
        }
        break;
    default: sl_panic("arith_i64: operator %d", op);
    }
    if (bad || badw)
        return expr__overflow(cx, expr__op_text((ExprKind)op), out->t);
    cx->ndivzero += nz;
    return expr__check_nulls(cx, out, "division by zero", nz);
}

/* DECIMAL * and / with their own scales (see expr.h). */
static int decimal_muldiv(int op, const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, Vec *out,
                          uint8_t *m)
{
    int s0 = a->t.scale, s1 = b->t.scale, s = out->t.scale;
    const int64_t *x = a->i, *y = b->i;
    int64_t *z = out->i, lo, hi, nz = 0;
    expr__range(out->t, &lo, &hi);
    bool bad = false;
    if (op == E_MUL) {
        int sh = s0 + s1 - s;
        if (sh == 0)
            return arith_i64(E_MUL, x, y, n, false, cx, out, m);
        __int128 d = pow10_128(sh > 0 ? sh : -sh);
        for (int64_t k = 0; k < n; k++) {
            __int128 p = (__int128)x[k] * y[k], q;
            bool o = false;
            if (sh > 0) {
                q = p / d;
                __int128 r = p % d;
                q += (r >= 0 ? r : -r) * 2 >= d ? (p < 0 ? -1 : 1) : 0;
            } else {
                o = __builtin_mul_overflow(p, d, &q);
            }
            o |= (q < lo) | (q > hi);
            z[k] = (int64_t)q;
            bad |= o & !m[k];
        }
    } else {
        int sh = s - s0 + s1;
        __int128 up = pow10_128(sh > 0 ? sh : 0), down = pow10_128(sh < 0 ? -sh : 0);
        for (int64_t k = 0; k < n; k++) {
            bool zero = y[k] == 0, live = !m[k];
            __int128 num, den = (__int128)(zero ? 1 : y[k]) * down;
            bool o = __builtin_mul_overflow((__int128)x[k], up, &num);
            __int128 q = o ? 0 : num / den;
            o |= (q < lo) | (q > hi);
            z[k] = (int64_t)q;
            bad |= o & live & !zero;
            nz += zero & live;
            m[k] |= zero;
        }
    }
    if (bad)
        return expr__overflow(cx, expr__op_text((ExprKind)op), out->t);
    cx->ndivzero += nz;
    return expr__check_nulls(cx, out, "division by zero", nz);
}

static int arith_f64(int op, const double *x, const double *y, int64_t n, EvalCtx *cx, Vec *out,
                     uint8_t *m)
{
    double *z = out->f;
    int64_t nz = 0;
    switch (op) {
    case E_ADD:
        for (int64_t k = 0; k < n; k++)
            z[k] = x[k] + y[k];
        break;
    case E_SUB:
        for (int64_t k = 0; k < n; k++)
            z[k] = x[k] - y[k];
        break;
    case E_MUL:
        for (int64_t k = 0; k < n; k++)
            z[k] = x[k] * y[k];
        break;
    case E_DIV:
        for (int64_t k = 0; k < n; k++) {
            bool zero = y[k] == 0;
            z[k] = x[k] / (zero ? 1.0 : y[k]);
            nz += zero & !m[k];
            m[k] |= zero;
        }
        break;
    case E_MOD:
        for (int64_t k = 0; k < n; k++) {
            bool zero = y[k] == 0;
            z[k] = fmod(x[k], zero ? 1.0 : y[k]);
            nz += zero & !m[k];
            m[k] |= zero;
        }
        break;
    default: sl_panic("arith_f64: operator %d", op);
    }
    if (out->t.kind == TK_REAL)
        for (int64_t k = 0; k < n; k++)
            z[k] = (double)(float)z[k];
    cx->ndivzero += nz;
    return expr__check_nulls(cx, out, "division by zero", nz);
}

int expr__arith(int op, const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, Vec *out,
                uint8_t *m)
{
    char tn[48];
    if ((out->x || a->x || b->x) && (a->i || a->x) && (b->i || b->x))
        return expr__dec_arith(op, a, b, n, cx, out, m);
    switch (type_phys(out->t)) {
    case PHYS_I128: break;
    case PHYS_F64: {
        const double *x = expr__as_f64(cx, a, n), *y = expr__as_f64(cx, b, n);
        return arith_f64(op, x, y, n, cx, out, m);
    }
    case PHYS_I64:
        if (!a->i || !b->i)
            break;
        if (out->t.kind == TK_DECIMAL && (op == E_MUL || op == E_DIV))
            return decimal_muldiv(op, a, b, n, cx, out, m);
        int64_t alo, ahi, blo, bhi;
        expr__range(a->t, &alo, &ahi);
        expr__range(b->t, &blo, &bhi);
        const int64_t lim = INT64_C(1) << 62;
        bool narrow = alo >= -lim && ahi <= lim && blo >= -lim && bhi <= lim;
        return arith_i64(op, a->i, b->i, n, narrow, cx, out, m);
    case PHYS_STR: break;
    }
    return err_set(cx->err, SL_ERUNTIME, "operator %s is not defined for %s",
                   expr__op_text((ExprKind)op), type_name(out->t, tn, sizeof(tn)));
}

static int eval_neg(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    if (out->f) {
        const double *x = expr__as_f64(cx, a, n);
        for (int64_t k = 0; k < n; k++)
            out->f[k] = -x[k];
        return 0;
    }
    if ((out->x || a->x) && (out->i || out->x) && (a->i || a->x))
        return expr__dec_neg(a, n, cx, out, m);
    if (!out->i || !a->i)
        return err_set(cx->err, SL_ERUNTIME, "unary - is not defined for strings");
    int64_t lo, hi;
    expr__range(out->t, &lo, &hi);
    const int64_t *x = a->i;
    int64_t *z = out->i;
    bool bad = false;
    for (int64_t k = 0; k < n; k++) {
        int64_t r;
        bool o = __builtin_sub_overflow((int64_t)0, x[k], &r);
        o |= (r < lo) | (r > hi);
        z[k] = r;
        bad |= o & !m[k];
    }
    return bad ? expr__overflow(cx, "unary -", out->t) : 0;
}

/* ------------------------------------------------------------ comparison */

#define CMP_LOOPS(L, R)                                                                         \
    switch (op) {                                                                               \
    case E_EQ: for (int64_t k = 0; k < n; k++) z[k] = (L) == (R); break;                        \
    case E_NE: for (int64_t k = 0; k < n; k++) z[k] = (L) != (R); break;                        \
    case E_LT: for (int64_t k = 0; k < n; k++) z[k] = (L) < (R); break;                         \
    case E_LE: for (int64_t k = 0; k < n; k++) z[k] = (L) <= (R); break;                        \
    case E_GT: for (int64_t k = 0; k < n; k++) z[k] = (L) > (R); break;                         \
    case E_GE: for (int64_t k = 0; k < n; k++) z[k] = (L) >= (R); break;                        \
    default: sl_panic("compare: operator %d", op);                                              \
    }

/* z[k] = x[k] op y[k] as 0/1 (rows masked by m compare as equal). */
static void compare(int op, const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, int64_t *z,
                    const uint8_t *m)
{
    if (a->s && b->s) {
        int *c = arena_alloc(cx->arena, sizeof(int) * (size_t)n);
        for (int64_t k = 0; k < n; k++)
            c[k] = m[k] ? 0 : expr__strcmp(a->s[k], b->s[k]);
        CMP_LOOPS(c[k], 0);
    } else if ((a->x || b->x) && (a->i || a->x) && (b->i || b->x)) {
        int *c = arena_alloc(cx->arena, sizeof(int) * (size_t)n);
        expr__dec_compare(a, b, n, cx, c, m);
        CMP_LOOPS(c[k], 0);
    } else if (a->i && b->i && a->t.scale == b->t.scale) {
        const int64_t *x = a->i, *y = b->i;
        CMP_LOOPS(x[k], y[k]);
    } else if (a->i && b->i) { /* DECIMALs of different scales: compare exactly */
        int ds = (int)a->t.scale - (int)b->t.scale;
        __int128 fx = pow10_128(ds < 0 ? -ds : 0), fy = pow10_128(ds > 0 ? ds : 0);
        const int64_t *x = a->i, *y = b->i;
        CMP_LOOPS(x[k] * fx, y[k] * fy);
    } else {
        const double *x = expr__as_f64(cx, a, n), *y = expr__as_f64(cx, b, n);
        CMP_LOOPS(x[k], y[k]);
    }
}

/* ----------------------------------------------------------------- logic */

/* Evaluate e over positions pos[0..m) of the dense result (input rows
 * rows[0..m)) and copy its values and NULLs into out at those positions. */
static void scatter(Vec *out, const int32_t *pos, const Vec *v, int64_t m)
{
    switch (type_phys(out->t)) {
    case PHYS_I64:
        for (int64_t j = 0; j < m; j++)
            out->i[pos[j]] = v->i ? v->i[j] : 0;
        break;
    case PHYS_F64:
        for (int64_t j = 0; j < m; j++)
            out->f[pos[j]] = v->f ? v->f[j] : 0;
        break;
    case PHYS_STR:
        for (int64_t j = 0; j < m; j++)
            out->s[pos[j]] = v->s ? v->s[j] : (Str){"", 0};
        break;
    case PHYS_I128:
        for (int64_t j = 0; j < m; j++)
            out->x[pos[j]] = v->x ? v->x[j] : 0;
        break;
    }
    if (out->nul)
        for (int64_t j = 0; j < m; j++)
            out->nul[pos[j]] = v->nul ? v->nul[j] : 0;
}

/* Positions 0..n) and their input rows, for building sub-selections. */
static void rows_init(EvalCtx *cx, const int32_t *sel, int64_t n, int32_t **pos, int32_t **rows)
{
    size_t sz = sizeof(int32_t) * (size_t)n;
    *pos = arena_alloc(cx->arena, sz);
    *rows = arena_alloc(cx->arena, sz);
    for (int64_t k = 0; k < n; k++) {
        (*pos)[k] = (int32_t)k;
        (*rows)[k] = sel ? sel[k] : (int32_t)k;
    }
}

/*
 * AND / OR, three-valued and lazy: operand j is evaluated only over the rows
 * not yet decided (AND: not FALSE; OR: not TRUE). Values: v = "not FALSE"
 * for AND and "TRUE" for OR; NULL rows keep their flag in nul.
 */
static __attribute__((noinline)) int eval_logic(const Expr *e, const Chunk *in, const int32_t *sel, int64_t n,
                      EvalCtx *cx, Vec *out)
{
    bool is_and = e->k == E_AND;
    Vec c;
    int rc = expr_eval(e->a[0], in, sel, n, cx, &c);
    if (rc)
        return rc;
    expr__vec(cx, e->t, n, out);
    int64_t *v = out->i;
    uint8_t *nl = expr__mask(cx, out, n);
    const uint8_t *cn = c.nul;
    for (int64_t k = 0; k < n; k++) {
        bool cnk = cn && cn[k], cv = c.i[k] != 0;
        v[k] = is_and ? (cnk | cv) : (!cnk & cv);
        nl[k] = cnk;
    }
    int32_t *pos = NULL, *rows = NULL;
    int64_t m = n;
    for (int j = 1; j < e->na; j++) {
        /* keep the undecided rows */
        if (!pos)
            rows_init(cx, sel, n, &pos, &rows);
        int64_t r = 0;
        for (int64_t q = 0; q < m; q++) {
            int32_t p = pos[q];
            pos[r] = p;
            rows[r] = rows[q];
            r += is_and ? v[p] != 0 : v[p] == 0;
        }
        m = r;
        if (m == 0)
            break;
        rc = expr_eval(e->a[j], in, rows, m, cx, &c);
        if (rc)
            return rc;
        cn = c.nul;
        for (int64_t q = 0; q < m; q++) {
            int32_t p = pos[q];
            bool cnk = cn && cn[q], cv = c.i[q] != 0;
            if (is_and) {
                bool cf = !cnk & !cv;
                v[p] = v[p] & !cf;
                nl[p] = (nl[p] | cnk) & !cf;
            } else {
                v[p] = v[p] | (!cnk & cv);
                nl[p] = (nl[p] | cnk) & !v[p];
            }
        }
    }
    return 0;
}

static __attribute__((noinline)) int eval_case(const Expr *e, const Chunk *in, const int32_t *sel, int64_t n, EvalCtx *cx,
                     Vec *out)
{
    expr__vec(cx, e->t, n, out);
    int32_t *pos, *rows;
    rows_init(cx, sel, n, &pos, &rows);
    int32_t *tpos = arena_alloc(cx->arena, sizeof(int32_t) * (size_t)n);
    int32_t *trows = arena_alloc(cx->arena, sizeof(int32_t) * (size_t)n);
    int64_t m = n;
    int rc;
    Vec w, t;
    for (int j = 0; j + 1 < e->na && m > 0; j += 2) {
        rc = expr_eval(e->a[j], in, j == 0 ? sel : rows, m, cx, &w);
        if (rc)
            return rc;
        int64_t nt = 0, nr = 0;
        for (int64_t q = 0; q < m; q++) {
            bool take = w.i[q] != 0 && !(w.nul && w.nul[q]);
            tpos[nt] = pos[q];
            trows[nt] = rows[q];
            pos[nr] = pos[q];
            rows[nr] = rows[q];
            nt += take;
            nr += !take;
        }
        m = nr;
        if (nt > 0) {
            rc = expr_eval(e->a[j + 1], in, trows, nt, cx, &t);
            if (rc)
                return rc;
            scatter(out, tpos, &t, nt);
        }
    }
    if (m == 0)
        return 0;
    if (e->na % 2) {
        rc = expr_eval(e->a[e->na - 1], in, rows, m, cx, &t);
        if (rc)
            return rc;
        scatter(out, pos, &t, m);
        return 0;
    }
    Vec none = {.t = e->t};
    uint8_t *ones = arena_alloc(cx->arena, (size_t)m);
    memset(ones, 1, (size_t)m);
    none.nul = ones;
    scatter(out, pos, &none, m);
    return expr__check_nulls(cx, out, "CASE without ELSE gives NULL", m);
}

static __attribute__((noinline)) int eval_coalesce(const Expr *e, const Chunk *in, const int32_t *sel, int64_t n,
                         EvalCtx *cx, Vec *out)
{
    expr__vec(cx, e->t, n, out);
    int32_t *pos, *rows;
    rows_init(cx, sel, n, &pos, &rows);
    int64_t m = n;
    Vec c;
    for (int j = 0; j < e->na && m > 0; j++) {
        int rc = expr_eval(e->a[j], in, j == 0 ? sel : rows, m, cx, &c);
        if (rc)
            return rc;
        scatter(out, pos, &c, m);
        if (!c.nul)
            return 0;
        int64_t r = 0;
        for (int64_t q = 0; q < m; q++) {
            pos[r] = pos[q];
            rows[r] = rows[q];
            r += c.nul[q] != 0;
        }
        m = r;
    }
    if (m > 0 && !out->nul)
        return expr__check_nulls(cx, out, "COALESCE of NULLs", m);
    return 0;
}

/* a[0] IN (a[1..]): TRUE if equal to some non-NULL item; else NULL if a[0]
 * or some item is NULL; else FALSE. */
static int eval_in(const Expr *e, const Chunk *in, const int32_t *sel, int64_t n, EvalCtx *cx,
                   const Vec *x, Vec *out, uint8_t *m)
{
    int64_t *found = out->i;
    uint8_t *hn = arena_zalloc(cx->arena, (size_t)n);
    memset(found, 0, sizeof(int64_t) * (size_t)n);
    const uint8_t *xn = x->nul ? x->nul : arena_zalloc(cx->arena, (size_t)n);
    for (int j = 1; j < e->na; j++) {
        const Expr *it = e->a[j];
        if (it->k == E_CONST && it->cnull) {
            memset(hn, 1, (size_t)n);
            continue;
        }
        Vec y;
        if (it->k == E_CONST && x->i && it->t.scale == x->t.scale &&
            type_phys(it->t) == PHYS_I64) {
            const int64_t *xi = x->i, c = it->ci;
            for (int64_t k = 0; k < n; k++)
                found[k] |= xi[k] == c;
            continue;
        }
        int rc = expr_eval(it, in, sel, n, cx, &y);
        if (rc)
            return rc;
        int64_t *eq = arena_alloc(cx->arena, sizeof(int64_t) * (size_t)n);
        uint8_t *mm = arena_alloc(cx->arena, (size_t)n);
        for (int64_t k = 0; k < n; k++)
            mm[k] = xn[k] | (y.nul ? y.nul[k] : 0);
        compare(E_EQ, x, &y, n, cx, eq, mm);
        for (int64_t k = 0; k < n; k++)
            found[k] |= eq[k] & !mm[k];
        if (y.nul)
            for (int64_t k = 0; k < n; k++)
                hn[k] |= y.nul[k];
    }
    for (int64_t k = 0; k < n; k++)
        m[k] = xn[k] | ((found[k] == 0) & hn[k]);
    int64_t nn = 0;
    if (!out->nul)
        for (int64_t k = 0; k < n; k++)
            nn += m[k];
    return expr__check_nulls(cx, out, "IN over NULLs", nn);
}

static int eval_nullif(const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, Vec *out,
                       uint8_t *m)
{
    switch (type_phys(out->t)) {
    case PHYS_I64:
        if (a->i)
            memcpy(out->i, a->i, sizeof(int64_t) * (size_t)n);
        break;
    case PHYS_F64:
        if (a->f)
            memcpy(out->f, a->f, sizeof(double) * (size_t)n);
        break;
    case PHYS_STR:
        if (a->s)
            memcpy(out->s, a->s, sizeof(Str) * (size_t)n);
        break;
    case PHYS_I128:
        if (a->x)
            memcpy(out->x, a->x, sizeof(i128) * (size_t)n);
        break;
    }
    uint8_t *both = arena_alloc(cx->arena, (size_t)n);
    for (int64_t k = 0; k < n; k++)
        both[k] = (a->nul ? a->nul[k] : 0) | (b->nul ? b->nul[k] : 0);
    int64_t *eq = arena_alloc(cx->arena, sizeof(int64_t) * (size_t)n);
    compare(E_EQ, a, b, n, cx, eq, both);
    int64_t nn = 0;
    for (int64_t k = 0; k < n; k++) {
        bool an = a->nul && a->nul[k];
        m[k] = an | (eq[k] & !both[k]);
        nn += m[k];
    }
    return out->nul ? 0 : expr__check_nulls(cx, out, "NULLIF", nn);
}

/* FN_NOT_NULL: a[0] as it is (m holds its NULLs, merged), or the error
   e->a[1] names when a row's value is NULL. */
static int eval_not_null(const Expr *e, const Vec *a, int64_t n, EvalCtx *cx, Vec *out,
                         const uint8_t *m)
{
    for (int64_t k = 0; k < n; k++)
        if (m[k]) {
            const Expr *msg = e->na > 1 ? e->a[1] : NULL;
            if (msg && msg->k == E_CONST && !msg->cnull && msg->cs.p)
                return err_set(cx->err, SL_ERUNTIME, "%.*s", (int)msg->cs.n, msg->cs.p);
            return err_set(cx->err, SL_ERUNTIME, "NULL where NOT NULL is declared");
        }
    Vec v = a[0];
    v.t = e->t;
    v.nul = NULL;
    *out = v;
    return 0;
}

/* --------------------------------------------------------------- dispatch */

/* The physical classes a kernel indexes without checking (a binder bug
 * must give an error, not a crash). */
static bool shape_ok(const Expr *e, const Vec *a, int na, const Vec *out)
{
    switch (e->k) {
    case E_NOT:
    case E_ISTRUE:
    case E_ISFALSE: return a[0].i != NULL && out->i != NULL;
    case E_EQ:
    case E_NE:
    case E_LT:
    case E_LE:
    case E_GT:
    case E_GE: return out->i != NULL && (a[0].s != NULL) == (a[1].s != NULL);
    case E_CONCAT: return out->s && a[0].s && a[1].s;
    case E_LIKE:
        return out->i && na >= 2 && a[0].s && a[1].s && (na < 3 || a[2].s);
    case E_FUNC:
        switch (e->fn) {
        case FN_LOWER:
        case FN_UPPER:
        case FN_TRIM:
        case FN_LTRIM:
        case FN_RTRIM:
        case FN_REPLACE:
        case FN_SUBSTRING: return out->s && a[0].s && (e->fn != FN_REPLACE || na == 3);
        case FN_CHAR_LENGTH: return a[0].s != NULL;
        case FN_POSITION: return na == 2 && a[0].s && a[1].s;
        case FN_LEFT:
        case FN_RIGHT: return out->s && na == 2 && a[0].s && !a[1].s;
        case FN_INITCAP: return out->s && na == 1 && a[0].s;
        case FN_SPLIT_INDEX:
        case FN_REGEXP_EXTRACT: return out->s && out->nul && na == 3 && a[0].s && a[1].s && a[2].i;
        case FN_SPLIT_PART: return out->s && na == 3 && a[0].s && a[1].s && a[2].i;
        case FN_SIMILAR_ESCAPE: return out->s && na == 2 && a[0].s && a[1].s;
        case FN_REGEXP_LIKE: return out->i && na == 3 && a[0].s && a[1].s && a[2].s;
        case FN_REGEXP_COUNT: return out->i && na == 4 && a[0].s && a[1].s && a[2].i && a[3].s;
        case FN_REGEXP_REPLACE:
            return out->s && na == 6 && a[0].s && a[1].s && a[2].s && a[3].i && a[4].i && a[5].s;
        case FN_REGEXP_SUBSTR:
            return out->s && na == 6 && a[0].s && a[1].s && a[2].i && a[3].i && a[4].s && a[5].i;
        case FN_REGEXP_INSTR:
            return out->i && na == 7 && a[0].s && a[1].s && a[2].i && a[3].i && a[4].i &&
                   a[5].s && a[6].i;
        case FN_TRIM_CHARS: return out->s && na == 3 && a[0].s && a[1].s && a[2].i;
        case FN_CONCAT:
            for (int j = 0; j < na; j++)
                if (!a[j].s)
                    return false;
            return out->s != NULL;
        case FN_PARSE_JSON:
        case FN_TO_JSON:
        case FN_VARIANT_TEXT:
        case FN_VARIANT_TYPEOF: return na == 1 && a[0].s && out->s;
        case FN_VARIANT_NULL: return na == 0 && out->s;
        case FN_VARIANT_GET: return na == 3 && a[0].s && (a[1].s || a[1].i) && a[2].i && out->s;
        case FN_VARIANT_IS: return na == 2 && a[0].s && a[1].i && out->i;
        case FN_JSON_ARRAY:
            for (int j = 0; j < na; j++)
                if (!a[j].s)
                    return false;
            return out->s != NULL;
        case FN_JSON_OBJECT:
            for (int j = 0; j < na; j++)
                if (!a[j].s)
                    return false;
            return na % 2 == 0 && out->s;
        case FN_JSON_CONCAT: return na == 2 && a[0].s && a[1].s && out->s;
        case FN_JSON_CONTAINS:
        case FN_JSON_EXISTS: return na == 2 && a[0].s && a[1].s && out->i;
        case FN_JSON_ARRAY_LENGTH: return na == 1 && a[0].s && out->i;
        case FN_JSON_PATH:
            return na == 2 && a[0].s && a[1].s && a[1].t.kind == TK_ARRAY && out->s;
        case FN_JSON_SET:
            return na == 4 && a[0].s && a[1].s && a[1].t.kind == TK_ARRAY && a[2].s && a[3].i &&
                   out->s;
        default: return na >= 1;
        }
    default: return true;
    }
}

static int eval_node(const Expr *e, const Chunk *in, const int32_t *sel, int64_t n,
                     EvalCtx *cx, Vec *a, int na, Vec *out);

/* shape_ok for the array functions (fn_array.c). */
static bool array_shape_ok(const Expr *e, const Vec *a, int na, const Vec *out)
{
    switch (e->fn) {
    case FN_ARRAY: return out->s != NULL;
    case FN_ARRAY_GET: return na == 2 && a[0].s && a[1].i && out->nul;
    case FN_CARDINALITY: return na == 1 && a[0].s && out->i;
    case FN_ARRAY_LENGTH: return na == 2 && a[0].s && a[1].i && out->i && out->nul;
    case FN_ARRAY_CAT: return na == 2 && a[0].s && a[1].s && out->s;
    case FN_ARRAY_SLICE: return na == 3 && a[0].s && a[1].i && a[2].i && out->s && out->nul;
    case FN_ARRAY_TO_STRING: return na >= 2 && a[0].s && a[1].s && (na < 3 || a[2].s) && out->s;
    case FN_ARRAY_ANY:
        return na == 3 && a[1].s && a[2].i && out->i && out->nul &&
               type_phys(a[0].t) == type_phys(type_elem(a[1].t));
    case FN_ARRAY_POSITION:
        return na == 2 && a[0].s && out->i && out->nul &&
               type_phys(a[1].t) == type_phys(type_elem(a[0].t));
    default: return false;
    }
}

/* shape_ok for the ROW and MAP functions (fn_nested.c). */
static bool nested_shape_ok(const Expr *e, const Vec *a, int na, const Vec *out)
{
    switch (e->fn) {
    case FN_ROW: return out->s != NULL && out->t.kind == TK_ROW;
    case FN_ROW_GET: return na == 2 && a[0].s && a[0].t.kind == TK_ROW && a[1].i && out->nul;
    case FN_MAP: return out->s != NULL && out->t.kind == TK_MAP && na % 2 == 0;
    case FN_MAP_GET:
    case FN_MAP_CONTAINS_KEY: return na == 2 && a[0].s && a[0].t.kind == TK_MAP && out->nul;
    case FN_MAP_CARDINALITY: return na == 1 && a[0].s && a[0].t.kind == TK_MAP && out->i;
    case FN_MAP_KEYS:
    case FN_MAP_VALUES: return na == 1 && a[0].s && a[0].t.kind == TK_MAP && out->s;
    default: return false;
    }
}

int expr_eval(const Expr *e, const Chunk *in, const int32_t *sel, int64_t n, EvalCtx *cx,
              Vec *out)
{
    if (n <= 0) {
        expr__vec(cx, e->t, 0, out);
        return 0;
    }
    switch (e->k) {
    case E_COL: return eval_col(e, in, sel, n, cx, out);
    case E_CONST: return eval_const(e, n, cx, out);
    case E_AND:
    case E_OR: return eval_logic(e, in, sel, n, cx, out);
    case E_CASE: return eval_case(e, in, sel, n, cx, out);
    case E_COALESCE: return eval_coalesce(e, in, sel, n, cx, out);
    default: break;
    }

    /* E_IN evaluates its list itself (constants are not materialised) */
    int na = e->k == E_IN ? 1 : e->na;
    Vec *a = arena_alloc(cx->arena, sizeof(Vec) * (size_t)(na > 0 ? na : 1));
    for (int j = 0; j < na; j++) {
        int rc = expr_eval(e->a[j], in, sel, n, cx, &a[j]);
        if (rc)
            return rc;
    }
    return eval_node(e, in, sel, n, cx, a, na, out);
}

/* e over its operands' values a[0..na): the kernels, kept out of
   expr_eval's frame so that its recursion (one frame per level of a chain
   such as a + b + ..., up to SQL_MAX_HEIGHT levels) stays small. */
static __attribute__((noinline)) int eval_node(const Expr *e, const Chunk *in,
                                               const int32_t *sel, int64_t n, EvalCtx *cx,
                                               Vec *a, int na, Vec *out)
{
    expr__vec(cx, e->t, n, out);
    uint8_t *m = expr__mask(cx, out, n);

    switch (e->k) {
    case E_ISNULL:
    case E_ISNOTNULL: {
        const uint8_t *x = a[0].nul;
        int64_t *z = out->i, want = e->k == E_ISNULL;
        if (!x) {
            for (int64_t k = 0; k < n; k++)
                z[k] = !want;
        } else {
            for (int64_t k = 0; k < n; k++)
                z[k] = (x[k] != 0) == want;
        }
        return 0;
    }
    case E_ISTRUE:
    case E_ISFALSE: {
        const uint8_t *x = a[0].nul;
        const int64_t *v = a[0].i;
        int64_t *z = out->i, want = e->k == E_ISTRUE;
        for (int64_t k = 0; k < n; k++)
            z[k] = !(x && x[k]) & ((v[k] != 0) == want);
        return 0;
    }
    case E_IN: return eval_in(e, in, sel, n, cx, &a[0], out, m);
    case E_NULLIF: return eval_nullif(&a[0], &a[1], n, cx, out, m);
    case E_FUNC:
        /* each family is one range of FuncId (expr.h) */
        if (e->fn >= FN_ARRAY && e->fn <= FN_ARRAY_SLICE) {
            if (!array_shape_ok(e, a, na, out))
                return err_set(cx->err, SL_ERUNTIME, "%s operands of the wrong kind",
                               expr__fn_name(e->fn));
            return expr__fn_array(e, a, na, n, cx, out, m);
        }
        if (e->fn >= FN_ROW && e->fn <= FN_MAP_VALUES) {
            if (!nested_shape_ok(e, a, na, out))
                return err_set(cx->err, SL_ERUNTIME, "%s operands of the wrong kind",
                               expr__fn_name(e->fn));
            return expr__fn_nested(e, a, na, n, cx, out, m);
        }
        break;
    default: break;
    }

    for (int j = 0; j < na; j++)
        expr__merge_nulls(m, &a[j], n);
    if (!shape_ok(e, a, na, out)) {
        char tn[48];
        return err_set(cx->err, SL_ERUNTIME, "%s operands of the wrong kind for %s",
                       e->k == E_FUNC && expr__fn_name(e->fn) ? expr__fn_name(e->fn)
                                                              : expr__op_text(e->k),
                       type_name(e->t, tn, sizeof(tn)));
    }
    switch (e->k) {
    case E_NEG: return eval_neg(&a[0], n, cx, out, m);
    case E_ADD:
    case E_SUB:
    case E_MUL:
    case E_DIV:
    case E_MOD: return expr__arith(e->k, &a[0], &a[1], n, cx, out, m);
    case E_EQ:
    case E_NE:
    case E_LT:
    case E_LE:
    case E_GT:
    case E_GE: compare(e->k, &a[0], &a[1], n, cx, out->i, m); return 0;
    case E_NOT: {
        const int64_t *x = a[0].i;
        int64_t *z = out->i;
        for (int64_t k = 0; k < n; k++)
            z[k] = x[k] == 0;
        return 0;
    }
    case E_CAST: return expr__cast(&a[0], n, cx, out, m);
    case E_CONCAT: return expr__concat(&a[0], &a[1], n, cx, out, m);
    case E_LIKE: return expr__like(a, na, n, cx, out, m);
    case E_FUNC:
        switch (e->fn) {
        case FN_LOWER:
        case FN_UPPER:
        case FN_CHAR_LENGTH:
        case FN_SUBSTRING:
        case FN_TRIM:
        case FN_LTRIM:
        case FN_RTRIM:
        case FN_POSITION:
        case FN_REPLACE:
        case FN_LEFT:
        case FN_RIGHT:
        case FN_CONCAT:
        case FN_INITCAP:
        case FN_SPLIT_INDEX:
        case FN_TRIM_CHARS: return expr__fn_str(e, a, n, cx, out, m);
        case FN_REGEXP_EXTRACT:
        case FN_REGEXP_LIKE:
        case FN_REGEXP_REPLACE:
        case FN_REGEXP_COUNT:
        case FN_REGEXP_SUBSTR:
        case FN_REGEXP_INSTR:
        case FN_SIMILAR_ESCAPE:
        case FN_SPLIT_PART: return expr__fn_regex(e, a, n, cx, out, m);
        case FN_MOD: return expr__arith(E_MOD, &a[0], &a[1], n, cx, out, m);
        case FN_PARSE_JSON:
        case FN_TO_JSON:
        case FN_VARIANT_NULL:
        case FN_VARIANT_GET:
        case FN_VARIANT_TEXT:
        case FN_VARIANT_TYPEOF:
        case FN_VARIANT_IS:
        case FN_JSON_ARRAY:
        case FN_JSON_OBJECT:
        case FN_JSON_CONCAT:
        case FN_JSON_CONTAINS:
        case FN_JSON_EXISTS:
        case FN_JSON_ARRAY_LENGTH:
        case FN_JSON_PATH:
        case FN_JSON_SET: return expr__fn_variant(e, a, na, n, cx, out, m);
        case FN_NOT_NULL: return eval_not_null(e, a, n, cx, out, m);
        case FN_EXTRACT_YEAR:
        case FN_EXTRACT_MONTH:
        case FN_EXTRACT_DAY:
        case FN_EXTRACT_HOUR:
        case FN_EXTRACT_MINUTE:
        case FN_EXTRACT_SECOND:
        case FN_EXTRACT_DOW:
        case FN_EXTRACT_DOY:
        case FN_EXTRACT_EPOCH:
        case FN_EXTRACT_WEEK:
        case FN_EXTRACT_QUARTER:
        case FN_EXTRACT_MILLISECOND:
        case FN_EXTRACT_MICROSECOND:
        case FN_ADD_MONTHS:
        case FN_DATE_TRUNC:
        case FN_TIMESTAMPDIFF:
        case FN_TUMBLE_START:
        case FN_AT_TZ_LOCAL:
        case FN_AT_TZ_INSTANT:
        case FN_TZ_OFFSET:
        case FN_TIME_ADD: return expr__fn_time(e, a, n, cx, out, m);
        default: return expr__fn_num(e, a, n, cx, out, m);
        }
    default: break;
    }
    return err_set(cx->err, SL_ERUNTIME, "cannot evaluate expression kind %d", (int)e->k);
}

int expr_filter(const Expr *pred, const Chunk *in, const int32_t *sel, int64_t n, EvalCtx *cx,
                int32_t *out_sel, int64_t *out_n)
{
    *out_n = 0;
    if (n <= 0)
        return 0;
    if (pred->k == E_AND) { /* conjuncts narrow the selection one after another */
        const int32_t *cur = sel;
        int64_t m = n;
        for (int j = 0; j < pred->na && m > 0; j++) {
            int rc = expr_filter(pred->a[j], in, cur, m, cx, out_sel, &m);
            if (rc)
                return rc;
            cur = out_sel;
        }
        *out_n = m;
        return 0;
    }
    Vec v;
    int rc = expr_eval(pred, in, sel, n, cx, &v);
    if (rc)
        return rc;
    const int64_t *x = v.i;
    int64_t c = 0;
    if (v.nul) {
        const uint8_t *nl = v.nul;
        if (sel)
            for (int64_t k = 0; k < n; k++) {
                out_sel[c] = sel[k];
                c += (x[k] != 0) & !nl[k];
            }
        else
            for (int64_t k = 0; k < n; k++) {
                out_sel[c] = (int32_t)k;
                c += (x[k] != 0) & !nl[k];
            }
    } else {
        if (sel)
            for (int64_t k = 0; k < n; k++) {
                out_sel[c] = sel[k];
                c += x[k] != 0;
            }
        else
            for (int64_t k = 0; k < n; k++) {
                out_sel[c] = (int32_t)k;
                c += x[k] != 0;
            }
    }
    *out_n = c;
    return 0;
}
