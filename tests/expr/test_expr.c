/*
 * tests/expr/test_expr.c - vectorized evaluation of bound expressions
 * (expr/expr.h). Each test builds a small chunk by hand, builds an Expr tree
 * the way the binder would (operands already coerced), evaluates it with
 * expr_eval or expr_filter, and checks values, NULLs, division-by-zero
 * counts and error messages.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "expr_test.h"

#define TV 1 /* TRUE */
#define FV 0 /* FALSE */

/* ---------------------------------------------------------------- types */

static SqlType TN(TypeKind k) { return type_make(k, false); }

static SqlType DEC(int p, int s)
{
    SqlType t = type_make(TK_DECIMAL, true);
    t.prec = (uint8_t)p;
    t.scale = (uint8_t)s;
    return t;
}

static SqlType STR(TypeKind k, int len)
{
    SqlType t = type_make(k, true);
    t.len = len;
    return t;
}

#define VC STR(TK_VARCHAR, VARCHAR_UNBOUNDED)
#define BOOL T(TK_BOOL)

/* ---------------------------------------------------------- expressions */

static Expr *ci(SqlType t, int64_t v) { t.nullable = 0; return expr_const_i64(A, t, v); }
static Expr *cf(SqlType t, double v) { t.nullable = 0; return expr_const_f64(A, t, v); }
static Expr *cnull(SqlType t) { return expr_const_null(A, t); }

static Expr *cs(const char *s)
{
    return expr_const_str(A, STR(TK_VARCHAR, VARCHAR_UNBOUNDED), s, strlen(s));
}

static Expr *op1(ExprKind k, SqlType t, Expr *a)
{
    Expr *e = expr_new(A, k, t, 1);
    e->a[0] = a;
    return e;
}

static Expr *op2(ExprKind k, SqlType t, Expr *a, Expr *b)
{
    Expr *e = expr_new(A, k, t, 2);
    e->a[0] = a;
    e->a[1] = b;
    return e;
}

#define opn(k, t, ...) mk(k, 0, t, __VA_ARGS__)
#define fn(f, t, ...) mk(E_FUNC, f, t, __VA_ARGS__)

static Expr *cast(SqlType t, Expr *a) { return op1(E_CAST, t, a); }

/* --------------------------------------------------------------- chunks */

/* A chunk of n rows, weights 1; columns filled by the set* helpers. */
static Chunk *chunk(int ncol, const SqlType *types, int64_t n)
{
    Chunk *c = chunk_new(A, ncol, types, n);
    c->n = n;
    for (int64_t r = 0; r < n; r++)
        c->w[r] = 1;
    for (int j = 0; j < ncol; j++) {
        Vec *v = &c->col[j];
        for (int64_t r = 0; r < n; r++) {
            if (v->i) v->i[r] = 0;
            if (v->f) v->f[r] = 0;
            if (v->s) v->s[r] = (Str){"", 0};
        }
    }
    return c;
}

/* Column j of c from v[0..n) (NV = NULL, with a junk value left behind). */
static void seti(Chunk *c, int j, int64_t n, const int64_t *v)
{
    Vec *x = &c->col[j];
    for (int64_t r = 0; r < n; r++) {
        bool null = v[r] == NV;
        x->i[r] = null ? INT64_MAX : v[r]; /* junk under NULL must not matter */
        if (null) {
            assert_non_null(x->nul);
            x->nul[r] = 1;
        }
    }
}

static void setf(Chunk *c, int j, int64_t n, const double *v, const bool *null)
{
    Vec *x = &c->col[j];
    for (int64_t r = 0; r < n; r++) {
        x->f[r] = v[r];
        if (null && null[r])
            x->nul[r] = 1;
    }
}

/* Strings; NULL pointer = SQL NULL (slot left pointing at junk). */
static void sets(Chunk *c, int j, int64_t n, const char *const *v)
{
    Vec *x = &c->col[j];
    for (int64_t r = 0; r < n; r++) {
        if (!v[r]) {
            x->s[r] = (Str){"junk", 4};
            x->nul[r] = 1;
        } else {
            x->s[r] = (Str){v[r], (uint32_t)strlen(v[r])};
        }
    }
}

/* One column of ints. */
static Chunk *ints1(SqlType t, int64_t n, const int64_t *v)
{
    Chunk *c = chunk(1, &t, n);
    seti(c, 0, n, v);
    return c;
}

/* Two columns of ints of the same type. */
static Chunk *ints2(SqlType t, int64_t n, const int64_t *a, const int64_t *b)
{
    SqlType ts[2] = {t, t};
    Chunk *c = chunk(2, ts, n);
    seti(c, 0, n, a);
    seti(c, 1, n, b);
    return c;
}

static Chunk *strs1(SqlType t, int64_t n, const char *const *v)
{
    Chunk *c = chunk(1, &t, n);
    sets(c, 0, n, v);
    return c;
}

/* A one-row chunk with no columns, for constant expressions. */
static Chunk *one_row(void) { return chunk(0, NULL, 1); }

/* ------------------------------------------------------------ evaluation */

/* Evaluation must fail with SL_ERUNTIME and exactly this message. */
static void ev_fails(const Expr *e, const Chunk *c, const char *msg)
{
    Vec v;
    err_clear(&err);
    int rc = expr_eval(e, c, NULL, c->n, &cx, &v);
    if (rc != SL_ERUNTIME)
        fail_msg("expected SL_ERUNTIME \"%s\", got rc %d", msg, rc);
    if (msg && strcmp(err.msg, msg) != 0)
        fail_msg("message \"%s\", want \"%s\"", err.msg, msg);
    err_clear(&err);
}

/* Expected doubles; NAN in want means NULL unless nan_ok. */
static void want_f64(const Vec *v, int64_t n, const double *want)
{
    for (int64_t k = 0; k < n; k++) {
        bool null = vec_is_null(v, k);
        if (isnan(want[k]) != null)
            fail_msg("row %lld: NULL is %d", (long long)k, null);
        if (!null && v->f[k] != want[k])
            fail_msg("row %lld: got %.17g, want %.17g", (long long)k, v->f[k], want[k]);
    }
}

#define CHECK_F64(e, c, ...) CHECK_VALUES(double, want_f64, e, c, __VA_ARGS__)

/* ================================================================= logic */

static void test_and_or_not_follow_three_valued_truth_tables(void **state)
{
    const int64_t a[] = {TV, TV, TV, FV, FV, FV, NV, NV, NV};
    const int64_t b[] = {TV, FV, NV, TV, FV, NV, TV, FV, NV};
    Chunk *c = ints2(BOOL, 9, a, b);
    CHECK_INTS(opn(E_AND, BOOL, 2, col(0, BOOL), col(1, BOOL)), c,
               TV, FV, NV, FV, FV, FV, NV, FV, NV);
    CHECK_INTS(opn(E_OR, BOOL, 2, col(0, BOOL), col(1, BOOL)), c,
               TV, TV, TV, TV, FV, NV, TV, NV, NV);
    CHECK_INTS(op1(E_NOT, BOOL, col(0, BOOL)), c, FV, FV, FV, TV, TV, TV, NV, NV, NV);
    /* n-ary: a AND b AND TRUE, a OR b OR FALSE */
    CHECK_INTS(opn(E_AND, BOOL, 3, col(0, BOOL), col(1, BOOL), ci(BOOL, 1)), c,
               TV, FV, NV, FV, FV, FV, NV, FV, NV);
    CHECK_INTS(opn(E_OR, BOOL, 3, col(0, BOOL), col(1, BOOL), ci(BOOL, 0)), c,
               TV, TV, TV, TV, FV, NV, TV, NV, NV);
    /* a AND NULL AND FALSE is FALSE; a OR NULL OR TRUE is TRUE */
    CHECK_INTS(opn(E_AND, BOOL, 3, col(0, BOOL), cnull(BOOL), ci(BOOL, 0)), c,
               FV, FV, FV, FV, FV, FV, FV, FV, FV);
    CHECK_INTS(opn(E_OR, BOOL, 3, col(0, BOOL), cnull(BOOL), ci(BOOL, 1)), c,
               TV, TV, TV, TV, TV, TV, TV, TV, TV);
}

static void test_is_null_is_true_and_is_false_are_never_null(void **state)
{
    const int64_t a[] = {TV, FV, NV};
    Chunk *c = ints1(BOOL, 3, a);
    SqlType b = TN(TK_BOOL);
    CHECK_INTS(op1(E_ISNULL, b, col(0, BOOL)), c, FV, FV, TV);
    CHECK_INTS(op1(E_ISNOTNULL, b, col(0, BOOL)), c, TV, TV, FV);
    CHECK_INTS(op1(E_ISTRUE, b, col(0, BOOL)), c, TV, FV, FV);
    CHECK_INTS(op1(E_ISFALSE, b, col(0, BOOL)), c, FV, TV, FV);
    /* over a NOT NULL column */
    const int64_t x[] = {5, 6};
    Chunk *d = ints1(TN(TK_INT), 2, x);
    CHECK_INTS(op1(E_ISNULL, b, col(0, TN(TK_INT))), d, FV, FV);
}

/* For each op, expected result from sign s[k] (-1, 0, 1; 2 = NULL). */
static void check_compare(const Chunk *c, SqlType t, int64_t n, const int *s)
{
    static const ExprKind ops[] = {E_EQ, E_NE, E_LT, E_LE, E_GT, E_GE};
    for (size_t o = 0; o < ARRAY_LEN(ops); o++) {
        Vec v = ev(op2(ops[o], BOOL, col(0, t), col(1, t)), c);
        for (int64_t k = 0; k < n; k++) {
            int64_t want;
            if (s[k] == 2)
                want = NV;
            else
                switch (ops[o]) {
                case E_EQ: want = s[k] == 0; break;
                case E_NE: want = s[k] != 0; break;
                case E_LT: want = s[k] < 0; break;
                case E_LE: want = s[k] <= 0; break;
                case E_GT: want = s[k] > 0; break;
                default: want = s[k] >= 0; break;
                }
            if (want == NV ? !vec_is_null(&v, k) : (vec_is_null(&v, k) || v.i[k] != want))
                fail_msg("op %d row %lld: got %lld (null %d), want %lld", (int)ops[o],
                         (long long)k, (long long)v.i[k], vec_is_null(&v, k), (long long)want);
        }
    }
}

static void test_comparisons_of_every_type_are_three_valued(void **state)
{
    const int s5[] = {-1, 0, 1, 2, 2};
    {
        const int64_t a[] = {1, 2, 3, NV, 1}, b[] = {2, 2, -5, 1, NV};
        check_compare(ints2(T(TK_INT), 5, a, b), T(TK_INT), 5, s5);
        check_compare(ints2(DEC(10, 2), 5, a, b), DEC(10, 2), 5, s5);
        check_compare(ints2(T(TK_DATE), 5, a, b), T(TK_DATE), 5, s5);
        check_compare(ints2(T(TK_TIMESTAMP), 5, a, b), T(TK_TIMESTAMP), 5, s5);
        check_compare(ints2(T(TK_TIME), 5, a, b), T(TK_TIME), 5, s5);
    }
    {
        const int64_t a[] = {INT64_MIN, INT64_MAX, 0}, b[] = {INT64_MAX, INT64_MAX, -1};
        const int s[] = {-1, 0, 1};
        check_compare(ints2(T(TK_BIGINT), 3, a, b), T(TK_BIGINT), 3, s);
    }
    {
        const int64_t a[] = {0, 1, 1, NV}, b[] = {1, 1, 0, 0};
        const int s[] = {-1, 0, 1, 2};
        check_compare(ints2(BOOL, 4, a, b), BOOL, 4, s);
    }
    {
        SqlType ts[2] = {T(TK_DOUBLE), T(TK_DOUBLE)};
        Chunk *c = chunk(2, ts, 5);
        const double a[] = {0.1, -0.0, INFINITY, 1, 0.3};
        const double b[] = {0.2, 0.0, 1e308, 1, 0.1 + 0.2};
        const bool an[] = {0, 0, 0, 1, 0};
        setf(c, 0, 5, a, an);
        setf(c, 1, 5, b, NULL);
        const int s[] = {-1, 0, 1, 2, -1};
        check_compare(c, T(TK_DOUBLE), 5, s);
    }
    {
        SqlType ts[2] = {VC, VC};
        Chunk *c = chunk(2, ts, 7);
        const char *a[] = {"ab", "abc", "b", "\xC3\xA9", "", NULL, "x"};
        const char *b[] = {"abc", "abc", "abc", "z", "a", "a", NULL};
        sets(c, 0, 7, a);
        sets(c, 1, 7, b);
        const int s[] = {-1, 0, 1, 1, -1, 2, 2};
        check_compare(c, VC, 7, s);
    }
}

/* ============================================================ arithmetic */

static void test_integer_overflow_is_an_error_naming_operator_and_type(void **state)
{
    {
        const int64_t a[] = {2147483647}, b[] = {1};
        Chunk *c = ints2(T(TK_INT), 1, a, b);
        ev_fails(op2(E_ADD, T(TK_INT), col(0, T(TK_INT)), col(1, T(TK_INT))), c,
                 "integer overflow in + for INT");
        ev_fails(op2(E_MUL, T(TK_INT), col(0, T(TK_INT)), ci(T(TK_INT), 2)), c,
                 "integer overflow in * for INT");
        ev_fails(op2(E_SUB, T(TK_INT), op1(E_NEG, T(TK_INT), col(0, T(TK_INT))),
                     ci(T(TK_INT), 2)),
                 c, "integer overflow in - for INT");
        /* the same values in BIGINT are fine */
        SqlType bt = T(TK_BIGINT);
        CHECK_INTS(op2(E_ADD, bt, cast(bt, col(0, T(TK_INT))), cast(bt, col(1, T(TK_INT)))), c,
                   2147483648LL);
    }
    {
        const int64_t a[] = {INT64_MAX, INT64_MIN}, b[] = {1, 1};
        Chunk *c = ints2(T(TK_BIGINT), 2, a, b);
        SqlType bt = T(TK_BIGINT);
        ev_fails(op2(E_ADD, bt, col(0, bt), col(1, bt)), c, "integer overflow in + for BIGINT");
        ev_fails(op2(E_SUB, bt, col(1, bt), col(0, bt)), c, NULL); /* 1 - MIN */
        ev_fails(op2(E_MUL, bt, col(0, bt), ci(bt, 2)), c, "integer overflow in * for BIGINT");
        ev_fails(op1(E_NEG, bt, col(0, bt)), c, NULL);
        const int64_t m[] = {INT64_MIN};
        ev_fails(op1(E_NEG, bt, col(0, bt)), ints1(bt, 1, m),
                 "integer overflow in unary - for BIGINT");
    }
    {
        const int64_t a[] = {100}, b[] = {100};
        SqlType tt = T(TK_TINYINT);
        ev_fails(op2(E_ADD, tt, col(0, tt), col(1, tt)), ints2(tt, 1, a, b),
                 "integer overflow in + for TINYINT");
    }
}

static void test_overflow_checks_hold_when_operands_are_wider_than_the_result(void **state)
{
    /* not what the binder builds, but the checks must not rely on it */
    SqlType bt = T(TK_BIGINT), it = T(TK_INT);
    const int64_t a[] = {INT64_MAX, 3}, b[] = {1, 4};
    Chunk *c = ints2(bt, 2, a, b);
    ev_fails(op2(E_ADD, it, col(0, bt), col(1, bt)), c, "integer overflow in + for INT");
    ev_fails(op2(E_SUB, it, col(1, bt), col(0, bt)), c, "integer overflow in - for INT");
    const int64_t x[] = {5}, y[] = {-3};
    CHECK_INTS(op2(E_SUB, it, col(0, bt), col(1, bt)), ints2(bt, 1, x, y), 8);
}

static void test_overflow_in_a_null_row_is_not_an_error(void **state)
{
    /* seti leaves INT64_MAX under NULLs */
    const int64_t a[] = {NV, 5}, b[] = {1, 1};
    SqlType bt = T(TK_BIGINT);
    Chunk *c = ints2(bt, 2, a, b);
    CHECK_INTS(op2(E_ADD, bt, col(0, bt), col(1, bt)), c, NV, 6);
    CHECK_INTS(op2(E_MUL, bt, col(0, bt), ci(bt, 3)), c, NV, 15);
}

static void test_integer_division_and_modulo_truncate_toward_zero(void **state)
{
    const int64_t a[] = {-7, 7, -7, 7, 0, INT64_MIN}, b[] = {2, -2, -2, 2, 3, -1};
    SqlType bt = T(TK_BIGINT);
    Chunk *c = ints2(bt, 5, a, b);
    CHECK_INTS(op2(E_DIV, bt, col(0, bt), col(1, bt)), c, -3, -3, 3, 3, 0);
    CHECK_INTS(op2(E_MOD, bt, col(0, bt), col(1, bt)), c, -1, 1, -1, 1, 0);
    CHECK_INTS(fn(FN_MOD, bt, 2, col(0, bt), col(1, bt)), c, -1, 1, -1, 1, 0);
    Chunk *d = ints2(bt, 6, a, b);
    ev_fails(op2(E_DIV, bt, col(0, bt), col(1, bt)), d, "integer overflow in / for BIGINT");
    /* MIN % -1 is 0, not a trap */
    Vec v = ev(op2(E_MOD, bt, col(0, bt), col(1, bt)), d);
    assert_int_equal(v.i[5], 0);
    /* INT: -2147483648 / -1 does not fit */
    const int64_t x[] = {INT32_MIN}, y[] = {-1};
    ev_fails(op2(E_DIV, T(TK_INT), col(0, T(TK_INT)), col(1, T(TK_INT))),
             ints2(T(TK_INT), 1, x, y), "integer overflow in / for INT");
}

static void test_integer_division_by_zero_gives_null_and_counts(void **state)
{
    const int64_t a[] = {5, NV, 6, 7}, b[] = {0, 0, 0, NV};
    SqlType it = T(TK_INT);
    Chunk *c = ints2(it, 4, a, b);
    CHECK_INTS(op2(E_DIV, it, col(0, it), col(1, it)), c, NV, NV, NV, NV);
    assert_int_equal(cx.ndivzero, 2); /* rows 0 and 2: NULL operands divide nothing */
    CHECK_INTS(op2(E_MOD, it, col(0, it), col(1, it)), c, NV, NV, NV, NV);
    assert_int_equal(cx.ndivzero, 4);
}

static void test_decimal_addition_keeps_scale_and_checks_precision(void **state)
{
    SqlType d = DEC(10, 2);
    const int64_t a[] = {125, -7, NV}, b[] = {250, 7, 1};
    Chunk *c = ints2(d, 3, a, b);
    CHECK_INTS(op2(E_ADD, d, col(0, d), col(1, d)), c, 375, 0, NV);
    CHECK_INTS(op2(E_SUB, d, col(0, d), col(1, d)), c, -125, -14, NV);
    CHECK_INTS(op1(E_NEG, d, col(0, d)), c, -125, 7, NV);
    SqlType s = DEC(5, 2);
    const int64_t x[] = {99999}, y[] = {1};
    ev_fails(op2(E_ADD, s, col(0, s), col(1, s)), ints2(s, 1, x, y),
             "decimal overflow in + for DECIMAL(5,2)");
}

static void test_decimal_multiplication_rounds_to_the_result_scale(void **state)
{
    SqlType d = DEC(10, 2);
    const int64_t a[] = {125, -125, 124, 125}, b[] = {250, 10, 10, 10};
    Chunk *c = ints2(d, 4, a, b);
    /* exact: scale 2 + 2 */
    CHECK_INTS(op2(E_MUL, DEC(18, 4), col(0, d), col(1, d)), c, 31250, -1250, 1240, 1250);
    /* reduced to scale 2: 0.125 -> 0.13, -0.125 -> -0.13, 0.124 -> 0.12 */
    CHECK_INTS(op2(E_MUL, DEC(18, 2), col(0, d), col(1, d)), c, 313, -13, 12, 13);
    /* DECIMAL(10,2) * DECIMAL(10,0) */
    SqlType ts[2] = {d, DEC(10, 0)};
    Chunk *e = chunk(2, ts, 1);
    const int64_t x[] = {125}, y[] = {3};
    seti(e, 0, 1, x);
    seti(e, 1, 1, y);
    CHECK_INTS(op2(E_MUL, DEC(18, 2), col(0, d), col(1, DEC(10, 0))), e, 375);
    /* beyond 18 digits */
    SqlType z = DEC(18, 0);
    const int64_t big[] = {100000000000000000LL}, hundred[] = {100};
    ev_fails(op2(E_MUL, z, col(0, z), col(1, z)), ints2(z, 1, big, hundred),
             "decimal overflow in * for DECIMAL(18,0)");
    /* beyond the result precision */
    SqlType p6 = DEC(6, 4);
    const int64_t u[] = {500}, w[] = {500}; /* 5.00 * 5.00 = 25.0000 needs 6 digits: ok */
    CHECK_INTS(op2(E_MUL, p6, col(0, d), col(1, d)), ints2(d, 1, u, w), 250000);
    const int64_t u2[] = {1000}; /* 10.00 * 10.00 = 100.0000 needs 7 */
    ev_fails(op2(E_MUL, p6, col(0, d), col(1, d)), ints2(d, 1, u2, u2),
             "decimal overflow in * for DECIMAL(6,4)");
}

static void test_decimal_division_truncates_at_the_result_scale(void **state)
{
    SqlType d = DEC(10, 2);
    const int64_t a[] = {100, 200, -200, 100, 750, -750}, b[] = {300, 300, 300, 0, 200, 200};
    Chunk *c = ints2(d, 6, a, b);
    CHECK_INTS(op2(E_DIV, DEC(18, 4), col(0, d), col(1, d)), c, 3333, 6666, -6666, NV, 37500,
               -37500);
    assert_int_equal(cx.ndivzero, 1);
    CHECK_INTS(op2(E_MOD, d, col(0, d), col(1, d)), c, 100, 200, -200, NV, 150, -150);
    /* DECIMAL(10,2) / DECIMAL(10,0) at scale 6 */
    SqlType ts[2] = {d, DEC(10, 0)};
    Chunk *e = chunk(2, ts, 1);
    const int64_t x[] = {100}, y[] = {3};
    seti(e, 0, 1, x);
    seti(e, 1, 1, y);
    CHECK_INTS(op2(E_DIV, DEC(18, 6), col(0, d), col(1, DEC(10, 0))), e, 333333);
    /* decimals of different scales compare by value */
    CHECK_INTS(op2(E_EQ, BOOL, col(0, d), col(1, DEC(10, 0))), e, FV);
    const int64_t y1[] = {1};
    seti(e, 1, 1, y1);
    CHECK_INTS(op2(E_EQ, BOOL, col(0, d), col(1, DEC(10, 0))), e, TV);
}

static void test_float_arithmetic_is_ieee_and_real_rounds_to_float(void **state)
{
    SqlType ts[2] = {T(TK_DOUBLE), T(TK_DOUBLE)};
    Chunk *c = chunk(2, ts, 4);
    const double a[] = {1e308, 0.1, 7.5, 1}, b[] = {10, 0.2, 2, 0};
    setf(c, 0, 4, a, NULL);
    setf(c, 1, 4, b, NULL);
    SqlType dt = T(TK_DOUBLE);
    CHECK_F64(op2(E_MUL, dt, col(0, dt), col(1, dt)), c, INFINITY, 0.1 * 0.2, 15, 0);
    CHECK_F64(op2(E_ADD, dt, col(0, dt), col(1, dt)), c, 1e308, 0.1 + 0.2, 9.5, 1);
    CHECK_F64(op2(E_MOD, dt, col(0, dt), col(1, dt)), c, fmod(1e308, 10), fmod(0.1, 0.2), 1.5,
              NAN);
    CHECK_F64(op2(E_DIV, dt, col(0, dt), col(1, dt)), c, 1e307, 0.5, 3.75, NAN);
    assert_int_equal(cx.ndivzero, 2);
    SqlType rt = T(TK_REAL);
    SqlType rs[2] = {rt, rt};
    Chunk *r = chunk(2, rs, 1);
    const double x[] = {(double)0.1f}, y[] = {(double)0.2f};
    setf(r, 0, 1, x, NULL);
    setf(r, 1, 1, y, NULL);
    CHECK_F64(op2(E_ADD, rt, col(0, rt), col(1, rt)), r, (double)(0.1f + 0.2f));
}

/* ================================================================= casts */

static void test_casts_between_integer_types_check_range(void **state)
{
    const int64_t a[] = {1, -128, NV, 300};
    Chunk *ok = ints1(T(TK_INT), 3, a), *bad = ints1(T(TK_INT), 4, a);
    SqlType tt = T(TK_TINYINT);
    CHECK_INTS(cast(tt, col(0, T(TK_INT))), ok, 1, -128, NV);
    ev_fails(cast(tt, col(0, T(TK_INT))), bad,
             "integer overflow in CAST to TINYINT: value 300 out of range");
    const int64_t b[] = {2147483648LL};
    ev_fails(cast(T(TK_INT), col(0, T(TK_BIGINT))), ints1(T(TK_BIGINT), 1, b), NULL);
    /* widening, and NOT NULL to nullable */
    const int64_t c[] = {7, -7};
    CHECK_INTS(cast(T(TK_BIGINT), col(0, TN(TK_SMALLINT))), ints1(TN(TK_SMALLINT), 2, c), 7, -7);
    /* BOOLEAN <-> integers */
    const int64_t d[] = {5, 0, -1, NV};
    CHECK_INTS(cast(BOOL, col(0, T(TK_INT))), ints1(T(TK_INT), 4, d), TV, FV, TV, NV);
    const int64_t e[] = {TV, FV};
    CHECK_INTS(cast(T(TK_INT), col(0, BOOL)), ints1(BOOL, 2, e), 1, 0);
}

static void test_casts_between_decimals_and_integers_rescale_exactly(void **state)
{
    const int64_t a[] = {123, -5, NV};
    CHECK_INTS(cast(DEC(5, 2), col(0, T(TK_INT))), ints1(T(TK_INT), 3, a), 12300, -500, NV);
    const int64_t big[] = {1000};
    ev_fails(cast(DEC(5, 2), col(0, T(TK_INT))), ints1(T(TK_INT), 1, big),
             "decimal overflow in CAST to DECIMAL(5,2): value 1000 out of range");
    /* DECIMAL -> integer truncates toward zero */
    const int64_t d[] = {299, -299, 50};
    CHECK_INTS(cast(T(TK_INT), col(0, DEC(10, 2))), ints1(DEC(10, 2), 3, d), 2, -2, 0);
    /* scale down rounds half away from zero; scale up multiplies */
    const int64_t e[] = {1005, -1005, 1004, 99995};
    CHECK_INTS(cast(DEC(10, 2), col(0, DEC(10, 3))), ints1(DEC(10, 3), 4, e), 101, -101, 100,
               10000);
    ev_fails(cast(DEC(4, 2), col(0, DEC(10, 3))), ints1(DEC(10, 3), 4, e),
             "decimal overflow in CAST to DECIMAL(4,2): value 99.995 out of range");
    const int64_t f[] = {125};
    CHECK_INTS(cast(DEC(12, 4), col(0, DEC(10, 2))), ints1(DEC(10, 2), 1, f), 12500);
}

static void test_casts_from_floats_truncate_or_round(void **state)
{
    SqlType dt = T(TK_DOUBLE);
    Chunk *c = chunk(1, &dt, 5);
    const double v[] = {2.7, -2.7, 0.285, 1.005, -2.5};
    setf(c, 0, 5, v, NULL);
    CHECK_INTS(cast(T(TK_INT), col(0, dt)), c, 2, -2, 0, 1, -2);
    CHECK_INTS(cast(DEC(10, 2), col(0, dt)), c, 270, -270, 29, 101, -250);
    CHECK_INTS(cast(BOOL, col(0, dt)), c, TV, TV, TV, TV, TV);
    CHECK_F64(cast(T(TK_REAL), col(0, dt)), c, (double)2.7f, (double)-2.7f, (double)0.285f,
              (double)1.005f, -2.5);
    Chunk *b = chunk(1, &dt, 1);
    const double big[] = {1e10};
    setf(b, 0, 1, big, NULL);
    ev_fails(cast(T(TK_INT), col(0, dt)), b,
             "integer overflow in CAST to INT: value 10000000000 out of range");
    ev_fails(cast(DEC(10, 2), col(0, dt)), b, NULL);
    CHECK_INTS(cast(T(TK_BIGINT), col(0, dt)), b, 10000000000LL);
    const double edge[] = {-9223372036854775808.0};
    setf(b, 0, 1, edge, NULL);
    CHECK_INTS(cast(T(TK_BIGINT), col(0, dt)), b, INT64_MIN);
    const double over[] = {9223372036854775808.0};
    setf(b, 0, 1, over, NULL);
    ev_fails(cast(T(TK_BIGINT), col(0, dt)), b, NULL);
    const double nan[] = {NAN};
    setf(b, 0, 1, nan, NULL);
    ev_fails(cast(T(TK_INT), col(0, dt)), b,
             "integer overflow in CAST to INT: value NaN out of range");
    /* numbers to floats */
    const int64_t d[] = {125, -1};
    CHECK_F64(cast(dt, col(0, DEC(10, 2))), ints1(DEC(10, 2), 2, d), 1.25, -0.01);
    CHECK_F64(cast(dt, col(0, T(TK_BIGINT))), ints1(T(TK_BIGINT), 2, d), 125, -1);
}

static void test_casts_to_strings_use_canonical_text_and_length_rules(void **state)
{
    const int64_t a[] = {-42, 12345, NV};
    Chunk *c = ints1(T(TK_INT), 3, a);
    CHECK_STRS(cast(VC, col(0, T(TK_INT))), c, "-42", "12345", NULL);
    CHECK_STRS(cast(STR(TK_CHAR, 5), col(0, T(TK_INT))), c, "-42  ", "12345", NULL);
    CHECK_STRS(cast(STR(TK_VARCHAR, 2), col(0, T(TK_INT))), c, "-4", "12", NULL);
    const int64_t d[] = {1250, -7};
    CHECK_STRS(cast(VC, col(0, DEC(10, 2))), ints1(DEC(10, 2), 2, d), "12.50", "-0.07");
    const int64_t b[] = {TV, FV};
    CHECK_STRS(cast(VC, col(0, BOOL)), ints1(BOOL, 2, b), "true", "false");
    int64_t day = date_from_ymd(2024, 1, 2);
    const int64_t dates[] = {day};
    CHECK_STRS(cast(VC, col(0, T(TK_DATE))), ints1(T(TK_DATE), 1, dates), "2024-01-02");
    const int64_t ts[] = {day * 86400000000LL + 11045500000LL};
    CHECK_STRS(cast(VC, col(0, T(TK_TIMESTAMP))), ints1(T(TK_TIMESTAMP), 1, ts),
               "2024-01-02 03:04:05.5");
    SqlType dt = T(TK_DOUBLE);
    Chunk *f = chunk(1, &dt, 3);
    const double fv[] = {0.1, 1e20, -INFINITY};
    setf(f, 0, 3, fv, NULL);
    CHECK_STRS(cast(VC, col(0, dt)), f, "0.1", "1e+20", "-Infinity");
}

static void test_casts_from_strings_parse_or_fail_with_the_text(void **state)
{
    const char *v[] = {" 42 ", "-7", NULL};
    Chunk *c = strs1(VC, 3, v);
    CHECK_INTS(cast(T(TK_INT), col(0, VC)), c, 42, -7, NV);
    const char *bad[] = {"1", "12x"};
    ev_fails(cast(T(TK_INT), col(0, VC)), strs1(VC, 2, bad), "invalid INT value \"12x\"");
    const char *big[] = {"300"};
    ev_fails(cast(T(TK_TINYINT), col(0, VC)), strs1(VC, 1, big),
             "value 300 out of range for TINYINT");
    const char *dec[] = {"1.005", "-0.5"};
    CHECK_INTS(cast(DEC(10, 2), col(0, VC)), strs1(VC, 2, dec), 101, -50);
    const char *dates[] = {"2024-02-29", "1970-01-01"};
    CHECK_INTS(cast(T(TK_DATE), col(0, VC)), strs1(VC, 2, dates), date_from_ymd(2024, 2, 29), 0);
    const char *bools[] = {"yes", "F"};
    CHECK_INTS(cast(BOOL, col(0, VC)), strs1(VC, 2, bools), TV, FV);
    const char *dbl[] = {"2.5", "NaN"};
    Vec dv = ev(cast(T(TK_DOUBLE), col(0, VC)), strs1(VC, 2, dbl));
    assert_true(dv.f[0] == 2.5 && isnan(dv.f[1]));
    const char *nodate[] = {"2023-02-29"};
    ev_fails(cast(T(TK_DATE), col(0, VC)), strs1(VC, 1, nodate),
             "invalid DATE value \"2023-02-29\"");
}

static void test_casts_between_string_types_pad_truncate_and_unpad(void **state)
{
    const char *v[] = {"ab   ", "abcde", NULL};
    SqlType c5 = STR(TK_CHAR, 5);
    Chunk *c = strs1(c5, 3, v);
    CHECK_STRS(cast(VC, col(0, c5)), c, "ab", "abcde", NULL);
    CHECK_STRS(cast(STR(TK_VARCHAR, 3), col(0, c5)), c, "ab", "abc", NULL);
    CHECK_STRS(cast(STR(TK_CHAR, 3), col(0, c5)), c, "ab ", "abc", NULL);
    const char *w[] = {"ab", "h\xC3\xA9llo"};
    Chunk *d = strs1(VC, 2, w);
    CHECK_STRS(cast(STR(TK_CHAR, 4), col(0, VC)), d, "ab  ", "h\xC3\xA9ll");
    CHECK_STRS(cast(STR(TK_VARCHAR, 2), col(0, VC)), d, "ab", "h\xC3\xA9");
}

static void test_casts_between_dates_timestamps_and_times(void **state)
{
    int64_t day = date_from_ymd(2024, 1, 2);
    const int64_t d[] = {day, -1, NV};
    CHECK_INTS(cast(T(TK_TIMESTAMP), col(0, T(TK_DATE))), ints1(T(TK_DATE), 3, d),
               day * 86400000000LL, -86400000000LL, NV);
    const int64_t ts[] = {day * 86400000000LL + 5, -1};
    Chunk *t = ints1(T(TK_TIMESTAMP), 2, ts);
    CHECK_INTS(cast(T(TK_DATE), col(0, T(TK_TIMESTAMP))), t, day, -1);
    CHECK_INTS(cast(T(TK_TIME), col(0, T(TK_TIMESTAMP))), t, 5, 86399999999LL);
    ev_fails(cast(T(TK_INT), col(0, T(TK_DATE))), ints1(T(TK_DATE), 3, d),
             "cannot cast DATE to INT");
    ev_fails(cast(T(TK_DATE), col(0, T(TK_TIME))), ints1(T(TK_TIME), 1, d),
             "cannot cast TIME to DATE");
    /* a NULL literal casts to a NULL of any type */
    Expr *n = expr_const_null(A, type_make(TK_NULL, true));
    CHECK_INTS(cast(T(TK_INT), n), one_row(), NV);
    CHECK_STRS(cast(VC, n), one_row(), NULL);
}

/* A type of kind k with the parameters its kind needs. */
static SqlType any_of(TypeKind k)
{
    SqlType t = T(k);
    if (k == TK_DECIMAL)
        t = DEC(10, 2);
    else if (type_is_string(k))
        t = STR(k, k == TK_CHAR ? 4 : VARCHAR_UNBOUNDED);
    return t;
}

/* expr_cast_exists (what the binder refuses at compile time) is exactly
   the set of pairs E_CAST converts: over every pair of distinct type
   kinds, the runtime says "cannot cast" iff the predicate says no. (Equal
   kinds are never an E_CAST: the binder drops casts to the same type.) */
static void test_cast_exists_matches_what_eval_cast_converts(void **state)
{
    int refused = 0;
    for (int f = TK_BOOL; f <= TK_TIMESTAMPTZ; f++) {
        for (int to = TK_BOOL; to <= TK_TIMESTAMPTZ; to++) {
            if (f == to)
                continue;
            SqlType ft = any_of((TypeKind)f), tt = any_of((TypeKind)to);
            Chunk *c = chunk(1, &ft, 1);
            if (c->col[0].x)
                c->col[0].x[0] = 0;
            Vec v;
            err_clear(&err);
            int rc = expr_eval(cast(tt, col(0, ft)), c, NULL, 1, &cx, &v);
            bool cannot = rc == SL_ERUNTIME && !strncmp(err.msg, "cannot cast", 11);
            if (cannot == expr_cast_exists((TypeKind)f, (TypeKind)to))
                fail_msg("cast %d -> %d: runtime %s, expr_cast_exists %d (rc %d: %s)", f, to,
                         cannot ? "cannot" : "converts", !cannot, rc, err.msg);
            refused += cannot;
            err_clear(&err);
        }
    }
    /* BOOLEAN and numbers <-> date/time (2 x 8 x 4), an interval and a
       kind other than a string (2 x 13 + 12 x 2), TIME -> DATE/TIMESTAMP/
       TIMESTAMPTZ, DATE -> TIME */
    assert_int_equal(refused, 64 + 50 + 3 + 1);
    assert_false(expr_cast_exists(TK_TIME, TK_TIMESTAMP));
    assert_true(expr_cast_exists(TK_DATE, TK_TIMESTAMP));
    assert_true(expr_cast_exists(TK_BOOL, TK_INT) && expr_cast_exists(TK_INT, TK_BOOL));
    assert_true(expr_cast_exists(TK_VARCHAR, TK_INT));
}

/* ========================================================= conditionals */

static void test_case_evaluates_a_branch_only_for_rows_that_take_it(void **state)
{
    SqlType it = T(TK_INT);
    const int64_t a[] = {0, 2, 5, NV}, b[] = {10, 10, 10, 10};
    Chunk *c = ints2(it, 4, a, b);
    /* CASE WHEN a <> 0 THEN b / a ELSE -1 END: no division by zero */
    Expr *e = opn(E_CASE, it, 3, op2(E_NE, BOOL, col(0, it), ci(it, 0)),
                  op2(E_DIV, it, col(1, it), col(0, it)), ci(it, -1));
    CHECK_INTS(e, c, -1, 5, 2, -1);
    assert_int_equal(cx.ndivzero, 0);
    /* CASE WHEN a < 3 THEN a * 1000000000 ELSE 7 END: 5 * 10^9 overflows INT
     * but is never computed */
    e = opn(E_CASE, it, 3, op2(E_LT, BOOL, col(0, it), ci(it, 3)),
            op2(E_MUL, it, col(0, it), ci(it, 1000000000)), ci(it, 7));
    CHECK_INTS(e, c, 0, 2000000000, 7, 7);
    /* without ELSE: NULL; the first WHEN that holds wins */
    e = opn(E_CASE, it, 4, op2(E_GE, BOOL, col(0, it), ci(it, 2)), ci(it, 1),
            op2(E_GE, BOOL, col(0, it), ci(it, 0)), ci(it, 2));
    CHECK_INTS(e, c, 2, 1, 1, NV);
    /* string branches */
    e = opn(E_CASE, VC, 3, op2(E_EQ, BOOL, col(0, it), ci(it, 2)), cs("two"), cs("other"));
    CHECK_STRS(e, c, "other", "two", "other", "other");
    /* an error in a branch that some row takes is reported */
    e = opn(E_CASE, it, 3, op2(E_GT, BOOL, col(0, it), ci(it, 3)),
            op2(E_MUL, it, col(0, it), ci(it, 1000000000)), ci(it, 7));
    ev_fails(e, c, "integer overflow in * for INT");
}

static void test_nested_case_inside_a_selection_sees_the_right_rows(void **state)
{
    SqlType it = T(TK_INT);
    const int64_t a[] = {0, 1, 2, 3, 4, 5, 6, 7}, b[] = {1, 0, 2, 0, 3, 0, 4, NV};
    Chunk *c = ints2(it, 8, a, b);
    /* CASE WHEN a % 2 = 0 THEN CASE WHEN b <> 0 THEN a / b ELSE -1 END
     *      ELSE COALESCE(b, 99) END, over rows 7, 6, 3, 2, 0 */
    Expr *inner = opn(E_CASE, it, 3, op2(E_NE, BOOL, col(1, it), ci(it, 0)),
                      op2(E_DIV, it, col(0, it), col(1, it)), ci(it, -1));
    Expr *e = opn(E_CASE, it, 3,
                  op2(E_EQ, BOOL, op2(E_MOD, it, col(0, it), ci(it, 2)), ci(it, 0)), inner,
                  opn(E_COALESCE, it, 2, col(1, it), ci(it, 99)));
    const int32_t sel[] = {7, 6, 3, 2, 0};
    Vec v = ev_sel(e, c, sel, 5);
    const int64_t want[] = {99, 1, 0, 1, 0};
    want_ints(&v, 5, want);
    assert_int_equal(cx.ndivzero, 0);
    v = ev(e, c);
    const int64_t all[] = {0, 0, 1, 0, 1, 0, 1, 99};
    want_ints(&v, 8, all);
}

static void test_and_or_skip_later_operands_for_decided_rows(void **state)
{
    SqlType it = T(TK_INT);
    const int64_t a[] = {0, 2, 5, NV};
    Chunk *c = ints1(it, 4, a);
    /* a <> 0 AND 10 / a > 1 */
    Expr *e = opn(E_AND, BOOL, 2, op2(E_NE, BOOL, col(0, it), ci(it, 0)),
                  op2(E_GT, BOOL, op2(E_DIV, it, ci(it, 10), col(0, it)), ci(it, 1)));
    CHECK_INTS(e, c, FV, TV, TV, NV);
    assert_int_equal(cx.ndivzero, 0);
    /* a = 0 OR 10 / a > 1 */
    e = opn(E_OR, BOOL, 2, op2(E_EQ, BOOL, col(0, it), ci(it, 0)),
            op2(E_GT, BOOL, op2(E_DIV, it, ci(it, 10), col(0, it)), ci(it, 1)));
    CHECK_INTS(e, c, TV, TV, TV, NV);
    assert_int_equal(cx.ndivzero, 0);
}

static void test_coalesce_and_nullif(void **state)
{
    SqlType it = T(TK_INT);
    const int64_t a[] = {NV, 2, NV, 1}, b[] = {5, 6, NV, 1};
    Chunk *c = ints2(it, 4, a, b);
    CHECK_INTS(opn(E_COALESCE, it, 3, col(0, it), col(1, it), ci(it, 9)), c, 5, 2, 9, 1);
    CHECK_INTS(opn(E_COALESCE, it, 2, col(0, it), col(1, it)), c, 5, 2, NV, 1);
    CHECK_INTS(op2(E_NULLIF, it, col(0, it), col(1, it)), c, NV, 2, NV, NV);
    CHECK_INTS(op2(E_NULLIF, it, col(1, it), ci(it, 6)), c, 5, NV, NV, 1);
    /* a later operand is only evaluated where still needed: 10 / 0 never runs */
    CHECK_INTS(opn(E_COALESCE, it, 2, col(1, it), op2(E_DIV, it, ci(it, 10), ci(it, 0))),
               ints2(it, 2, b, b), 5, 6);
    assert_int_equal(cx.ndivzero, 0);
    const char *s[] = {NULL, "x"};
    CHECK_STRS(opn(E_COALESCE, VC, 2, col(0, VC), cs("none")), strs1(VC, 2, s), "none", "x");
}

static void test_in_list_is_three_valued(void **state)
{
    SqlType it = T(TK_INT);
    const int64_t x[] = {1, 2, NV, 4}, y[] = {9, 2, 9, 9};
    Chunk *c = ints2(it, 4, x, y);
    CHECK_INTS(opn(E_IN, BOOL, 3, col(0, it), ci(it, 1), cnull(it)), c, TV, NV, NV, NV);
    CHECK_INTS(opn(E_IN, BOOL, 3, col(0, it), ci(it, 1), ci(it, 3)), c, TV, FV, NV, FV);
    CHECK_INTS(opn(E_IN, BOOL, 3, col(0, it), col(1, it), ci(it, 7)), c, FV, TV, NV, FV);
    CHECK_INTS(opn(E_IN, BOOL, 2, ci(it, 9), col(0, it)), c, FV, FV, NV, FV);
    const char *s[] = {"b", "z", NULL};
    Chunk *d = strs1(VC, 3, s);
    CHECK_INTS(opn(E_IN, BOOL, 3, col(0, VC), cs("a"), cs("b")), d, TV, FV, NV);
    CHECK_INTS(op1(E_NOT, BOOL, opn(E_IN, BOOL, 3, col(0, VC), cs("a"), cnull(VC))), d, NV, NV,
               NV);
}

/* =============================================================== strings */

static void test_like_matches_percent_underscore_and_escapes(void **state)
{
    const char *s[] = {"hello", "help", "hi", "", NULL, "a%b", "h\xC3\xA9llo"};
    Chunk *c = strs1(VC, 7, s);
#define LIKE(p) op2(E_LIKE, BOOL, col(0, VC), cs(p))
    CHECK_INTS(LIKE("he%"), c, TV, TV, FV, FV, NV, FV, FV);
    CHECK_INTS(LIKE("%lo"), c, TV, FV, FV, FV, NV, FV, TV);
    CHECK_INTS(LIKE("h_llo"), c, TV, FV, FV, FV, NV, FV, TV);
    CHECK_INTS(LIKE("%"), c, TV, TV, TV, TV, NV, TV, TV);
    CHECK_INTS(LIKE(""), c, FV, FV, FV, TV, NV, FV, FV);
    CHECK_INTS(LIKE("hel%o"), c, TV, FV, FV, FV, NV, FV, FV);
    CHECK_INTS(LIKE("%e%"), c, TV, TV, FV, FV, NV, FV, FV);
    CHECK_INTS(LIKE("hello"), c, TV, FV, FV, FV, NV, FV, FV);
    CHECK_INTS(LIKE("%l%l%"), c, TV, FV, FV, FV, NV, FV, TV);
    CHECK_INTS(LIKE("_%_"), c, TV, TV, TV, FV, NV, TV, TV);
    CHECK_INTS(LIKE("H%"), c, FV, FV, FV, FV, NV, FV, FV); /* case-sensitive */
#undef LIKE
    Expr *e = opn(E_LIKE, BOOL, 3, col(0, VC), cs("a!%b"), cs("!"));
    CHECK_INTS(e, c, FV, FV, FV, FV, NV, TV, FV);
    e = opn(E_LIKE, BOOL, 3, col(0, VC), cs("%!%%"), cs("!"));
    CHECK_INTS(e, c, FV, FV, FV, FV, NV, TV, FV);
    e = opn(E_LIKE, BOOL, 3, col(0, VC), cs("%!"), cs("!"));
    ev_fails(e, c, "LIKE pattern must not end with escape character");
    e = opn(E_LIKE, BOOL, 3, col(0, VC), cs("%"), cs("ab"));
    ev_fails(e, c, NULL);
    /* patterns that vary per row */
    SqlType ts[2] = {VC, VC};
    Chunk *d = chunk(2, ts, 3);
    const char *x[] = {"abc", "abc", "abc"}, *p[] = {"a%", "%b", NULL};
    sets(d, 0, 3, x);
    sets(d, 1, 3, p);
    CHECK_INTS(op2(E_LIKE, BOOL, col(0, VC), col(1, VC)), d, TV, FV, NV);
}

static void test_string_functions_count_characters(void **state)
{
    const char *s[] = {"Hello", "h\xC3\xA9llo", "", NULL};
    Chunk *c = strs1(VC, 4, s);
    SqlType it = T(TK_INT);
    CHECK_STRS(fn(FN_UPPER, VC, 1, col(0, VC)), c, "HELLO", "H\xC3\xA9LLO", "", NULL);
    CHECK_STRS(fn(FN_LOWER, VC, 1, col(0, VC)), c, "hello", "h\xC3\xA9llo", "", NULL);
    CHECK_INTS(fn(FN_CHAR_LENGTH, it, 1, col(0, VC)), c, 5, 5, 0, NV);
    CHECK_STRS(fn(FN_SUBSTRING, VC, 3, col(0, VC), ci(it, 2), ci(it, 3)), c, "ell",
               "\xC3\xA9ll", "", NULL);
    CHECK_STRS(fn(FN_SUBSTRING, VC, 3, col(0, VC), ci(it, 0), ci(it, 3)), c, "He", "h\xC3\xA9",
               "", NULL);
    CHECK_STRS(fn(FN_SUBSTRING, VC, 3, col(0, VC), ci(it, -1), ci(it, 5)), c, "Hel",
               "h\xC3\xA9l", "", NULL);
    CHECK_STRS(fn(FN_SUBSTRING, VC, 2, col(0, VC), ci(it, 3)), c, "llo", "llo", "", NULL);
    CHECK_STRS(fn(FN_SUBSTRING, VC, 3, col(0, VC), ci(it, 4), ci(it, 100)), c, "lo", "lo", "",
               NULL);
    CHECK_STRS(fn(FN_SUBSTRING, VC, 3, col(0, VC), ci(it, 10), ci(it, 2)), c, "", "", "", NULL);
    CHECK_STRS(fn(FN_SUBSTRING, VC, 3, col(0, VC), ci(it, 1), cnull(it)), c, NULL, NULL, NULL,
               NULL);
    ev_fails(fn(FN_SUBSTRING, VC, 3, col(0, VC), ci(it, 2), ci(it, -1)), c,
             "negative substring length not allowed: -1");
    CHECK_INTS(fn(FN_POSITION, it, 2, cs("l"), col(0, VC)), c, 3, 3, 0, NV);
    CHECK_INTS(fn(FN_POSITION, it, 2, cs(""), col(0, VC)), c, 1, 1, 1, NV);
    CHECK_INTS(fn(FN_POSITION, it, 2, cs("lo"), col(0, VC)), c, 4, 4, 0, NV);
}

static void test_trim_replace_and_concat(void **state)
{
    const char *s[] = {"  a b  ", "banana", "", NULL};
    Chunk *c = strs1(VC, 4, s);
    CHECK_STRS(fn(FN_TRIM, VC, 1, col(0, VC)), c, "a b", "banana", "", NULL);
    CHECK_STRS(fn(FN_LTRIM, VC, 1, col(0, VC)), c, "a b  ", "banana", "", NULL);
    CHECK_STRS(fn(FN_RTRIM, VC, 1, col(0, VC)), c, "  a b", "banana", "", NULL);
    CHECK_STRS(fn(FN_REPLACE, VC, 3, col(0, VC), cs("an"), cs("AN")), c, "  a b  ", "bANANa",
               "", NULL);
    CHECK_STRS(fn(FN_REPLACE, VC, 3, col(0, VC), cs("a"), cs("")), c, "   b  ", "bnn", "", NULL);
    CHECK_STRS(fn(FN_REPLACE, VC, 3, col(0, VC), cs(""), cs("x")), c, "  a b  ", "banana", "",
               NULL);
    CHECK_STRS(op2(E_CONCAT, VC, col(0, VC), cs("!")), c, "  a b  !", "banana!", "!", NULL);
    CHECK_STRS(op2(E_CONCAT, VC, cs("<"), op2(E_CONCAT, VC, col(0, VC), cs(">"))), c,
               "<  a b  >", "<banana>", "<>", NULL);
}

/* ============================================================= functions */

static void test_numeric_functions_keep_their_domain(void **state)
{
    SqlType it = T(TK_INT), dt = T(TK_DOUBLE), d2 = DEC(10, 2);
    const int64_t i[] = {-5, 5, NV, 0};
    Chunk *ic = ints1(it, 4, i);
    CHECK_INTS(fn(FN_ABS, it, 1, col(0, it)), ic, 5, 5, NV, 0);
    CHECK_INTS(fn(FN_SIGN, it, 1, col(0, it)), ic, -1, 1, NV, 0);
    const int64_t m[] = {INT32_MIN};
    ev_fails(fn(FN_ABS, it, 1, col(0, it)), ints1(it, 1, m), "integer overflow in ABS for INT");
    const int64_t d[] = {-125, 125, 200, 124};
    Chunk *dc = ints1(d2, 4, d);
    CHECK_INTS(fn(FN_ABS, d2, 1, col(0, d2)), dc, 125, 125, 200, 124);
    CHECK_INTS(fn(FN_FLOOR, DEC(10, 0), 1, col(0, d2)), dc, -2, 1, 2, 1);
    CHECK_INTS(fn(FN_CEIL, DEC(10, 0), 1, col(0, d2)), dc, -1, 2, 2, 2);
    CHECK_INTS(fn(FN_FLOOR, d2, 1, col(0, d2)), dc, -200, 100, 200, 100);
    CHECK_INTS(fn(FN_ROUND, d2, 1, col(0, d2)), dc, -100, 100, 200, 100);
    CHECK_INTS(fn(FN_ROUND, d2, 2, col(0, d2), ci(it, 1)), dc, -130, 130, 200, 120);
    CHECK_INTS(fn(FN_ROUND, d2, 2, col(0, d2), ci(it, 5)), dc, -125, 125, 200, 124);
    CHECK_INTS(fn(FN_SIGN, d2, 1, col(0, d2)), dc, -100, 100, 100, 100);
    const int64_t n999[] = {999};
    ev_fails(fn(FN_ROUND, DEC(3, 2), 2, col(0, DEC(3, 2)), ci(it, 1)), ints1(DEC(3, 2), 1, n999),
             "decimal overflow in ROUND for DECIMAL(3,2)");
    const int64_t r[] = {1234, 1250, -1250, 1249};
    CHECK_INTS(fn(FN_ROUND, it, 2, col(0, it), ci(it, -2)), ints1(it, 4, r), 1200, 1300, -1300,
               1200);
    Chunk *fc = chunk(1, &dt, 4);
    const double f[] = {2.5, -2.5, 1234.5678, -0.4};
    setf(fc, 0, 4, f, NULL);
    CHECK_F64(fn(FN_ROUND, dt, 1, col(0, dt)), fc, 3, -3, 1235, -0.0);
    CHECK_F64(fn(FN_ROUND, dt, 2, col(0, dt), ci(it, 2)), fc, 2.5, -2.5, 1234.57, -0.4);
    CHECK_F64(fn(FN_ROUND, dt, 2, col(0, dt), ci(it, -2)), fc, 0, -0.0, 1200, -0.0);
    CHECK_F64(fn(FN_FLOOR, dt, 1, col(0, dt)), fc, 2, -3, 1234, -1);
    CHECK_F64(fn(FN_CEIL, dt, 1, col(0, dt)), fc, 3, -2, 1235, -0.0);
    CHECK_F64(fn(FN_ABS, dt, 1, col(0, dt)), fc, 2.5, 2.5, 1234.5678, 0.4);
    CHECK_F64(fn(FN_SIGN, dt, 1, col(0, dt)), fc, 1, -1, 1, -1);
    CHECK_F64(fn(FN_POWER, dt, 2, cf(dt, 2), cf(dt, 10)), one_row(), 1024);
    CHECK_F64(fn(FN_SQRT, dt, 1, cf(dt, 16)), one_row(), 4);
    CHECK_F64(fn(FN_LN, dt, 1, cf(dt, 1)), one_row(), 0);
    CHECK_F64(fn(FN_EXP, dt, 1, cf(dt, 0)), one_row(), 1);
    Vec v = ev(fn(FN_SQRT, dt, 1, cf(dt, -1)), one_row());
    assert_true(isnan(v.f[0]) && !vec_is_null(&v, 0));
}

static void test_extract_fields_of_dates_times_and_timestamps(void **state)
{
    SqlType bt = T(TK_BIGINT), dt = T(TK_DATE), tt = T(TK_TIMESTAMP);
    /* 2024-01-07 was a Sunday; 2024-12-31 a Tuesday, day 366 */
    const int64_t d[] = {date_from_ymd(2024, 1, 7), date_from_ymd(2024, 12, 31),
                         date_from_ymd(1969, 12, 31), NV};
    Chunk *c = ints1(dt, 4, d);
    CHECK_INTS(fn(FN_EXTRACT_YEAR, bt, 1, col(0, dt)), c, 2024, 2024, 1969, NV);
    CHECK_INTS(fn(FN_EXTRACT_MONTH, bt, 1, col(0, dt)), c, 1, 12, 12, NV);
    CHECK_INTS(fn(FN_EXTRACT_DAY, bt, 1, col(0, dt)), c, 7, 31, 31, NV);
    CHECK_INTS(fn(FN_EXTRACT_DOW, bt, 1, col(0, dt)), c, 0, 2, 3, NV);
    CHECK_INTS(fn(FN_EXTRACT_DOY, bt, 1, col(0, dt)), c, 7, 366, 365, NV);
    CHECK_INTS(fn(FN_EXTRACT_EPOCH, bt, 1, col(0, dt)), c, d[0] * 86400, d[1] * 86400, -86400,
               NV);
    CHECK_INTS(fn(FN_EXTRACT_HOUR, bt, 1, col(0, dt)), c, 0, 0, 0, NV);
    int64_t day = date_from_ymd(2024, 1, 2);
    const int64_t ts[] = {day * 86400000000LL + 11045500000LL, -1};
    Chunk *t = ints1(tt, 2, ts);
    CHECK_INTS(fn(FN_EXTRACT_YEAR, bt, 1, col(0, tt)), t, 2024, 1969);
    CHECK_INTS(fn(FN_EXTRACT_HOUR, bt, 1, col(0, tt)), t, 3, 23);
    CHECK_INTS(fn(FN_EXTRACT_MINUTE, bt, 1, col(0, tt)), t, 4, 59);
    CHECK_INTS(fn(FN_EXTRACT_SECOND, bt, 1, col(0, tt)), t, 5, 59);
    CHECK_INTS(fn(FN_EXTRACT_EPOCH, bt, 1, col(0, tt)), t, day * 86400 + 11045, 0);
    CHECK_F64(fn(FN_EXTRACT_SECOND, T(TK_DOUBLE), 1, col(0, tt)), t, 5.5, 59.999999);
    CHECK_INTS(fn(FN_EXTRACT_SECOND, DEC(8, 6), 1, col(0, tt)), t, 5500000, 59999999);
    SqlType tm = T(TK_TIME);
    const int64_t tod[] = {11045500000LL};
    Chunk *m = ints1(tm, 1, tod);
    CHECK_INTS(fn(FN_EXTRACT_HOUR, bt, 1, col(0, tm)), m, 3);
    CHECK_INTS(fn(FN_EXTRACT_EPOCH, bt, 1, col(0, tm)), m, 11045);
    ev_fails(fn(FN_EXTRACT_YEAR, bt, 1, col(0, tm)), m, NULL);
}

/* ===================================================== selection, filter */

static void test_eval_with_a_selection_gives_dense_rows(void **state)
{
    SqlType it = T(TK_INT);
    const int64_t a[] = {10, 20, 30, 40, NV}, b[] = {1, 2, 3, 4, 5};
    Chunk *c = ints2(it, 5, a, b);
    const int32_t sel[] = {4, 1, 3};
    Vec v = ev_sel(op2(E_ADD, it, col(0, it), col(1, it)), c, sel, 3);
    const int64_t w1[] = {NV, 22, 44};
    want_ints(&v, 3, w1);
    v = ev_sel(col(1, it), c, sel, 3);
    const int64_t w2[] = {5, 2, 4};
    want_ints(&v, 3, w2);
    Expr *e = opn(E_CASE, it, 3, op2(E_GT, BOOL, col(1, it), ci(it, 2)), col(0, it), ci(it, 0));
    v = ev_sel(e, c, sel, 3);
    const int64_t w3[] = {NV, 0, 40};
    want_ints(&v, 3, w3);
    const char *s[] = {"a", "b", "c", "d", "e"};
    Chunk *d = strs1(VC, 5, s);
    v = ev_sel(fn(FN_UPPER, VC, 1, col(0, VC)), d, sel, 3);
    const char *w4[] = {"E", "B", "D"};
    want_strs(&v, 3, w4);
    /* a NOT NULL column read as nullable gets an all-zero nul */
    Chunk *nn = ints1(TN(TK_INT), 5, b);
    v = ev(col(0, it), nn);
    assert_non_null(v.nul);
    assert_int_equal(v.nul[4], 0);
}

static void test_filter_keeps_rows_where_the_predicate_is_true(void **state)
{
    SqlType it = T(TK_INT);
    const int64_t a[] = {10, 20, 30, 40, NV, 60}, b[] = {1, 2, 3, 9, 1, NV};
    Chunk *c = ints2(it, 6, a, b);
    int32_t out[6];
    int64_t n = -1;
    Expr *p = op2(E_GT, BOOL, col(0, it), ci(it, 15));
    assert_int_equal(expr_filter(p, c, NULL, 6, &cx, out, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[3], 5);
    /* a > 15 AND b < 5: NULL rows drop out */
    p = opn(E_AND, BOOL, 2, op2(E_GT, BOOL, col(0, it), ci(it, 15)),
            op2(E_LT, BOOL, col(1, it), ci(it, 5)));
    assert_int_equal(expr_filter(p, c, NULL, 6, &cx, out, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    /* within a selection, writing over it */
    int32_t sel[] = {0, 2, 3, 5};
    assert_int_equal(expr_filter(p, c, sel, 4, &cx, sel, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(sel[0], 2);
    /* OR with NULLs; errors in the predicate are reported */
    p = opn(E_OR, BOOL, 2, op2(E_GT, BOOL, col(0, it), ci(it, 35)),
            op2(E_EQ, BOOL, col(1, it), ci(it, 1)));
    assert_int_equal(expr_filter(p, c, NULL, 6, &cx, out, &n), 0);
    assert_int_equal(n, 4);
    const int32_t want[] = {0, 3, 4, 5};
    assert_memory_equal(out, want, sizeof(want));
    p = op2(E_GT, BOOL, op2(E_MUL, it, col(0, it), ci(it, 1000000000)), ci(it, 0));
    assert_int_equal(expr_filter(p, c, NULL, 6, &cx, out, &n), SL_ERUNTIME);
    assert_string_equal(err.msg, "integer overflow in * for INT");
}

static void test_print_shows_an_infix_form(void **state)
{
    Buf b = BUF_INIT;
    SqlType it = T(TK_INT), bt = T(TK_BIGINT);
    expr_print(op2(E_ADD, bt, col(0, bt), cast(bt, col(1, it))), &b);
    assert_string_equal(buf_cstr(&b), "(#0 + CAST(#1 AS BIGINT))");
    buf_reset(&b);
    Expr *e = opn(E_CASE, VC, 3, opn(E_IN, BOOL, 3, col(0, it), ci(it, 1), cnull(it)),
                  cs("it's"), fn(FN_UPPER, VC, 1, col(2, VC)));
    expr_print(e, &b);
    assert_string_equal(buf_cstr(&b),
                        "CASE WHEN (#0 IN (1, NULL)) THEN 'it''s' ELSE UPPER(#2) END");
    buf_reset(&b);
    expr_print(opn(E_AND, BOOL, 3, op1(E_NOT, BOOL, col(0, BOOL)),
                   op2(E_LIKE, BOOL, col(1, VC), cs("a%")), op1(E_ISNULL, BOOL, col(2, it))),
               &b);
    assert_string_equal(buf_cstr(&b), "((NOT #0) AND (#1 LIKE 'a%') AND (#2 IS NULL))");
    buf_reset(&b);
    expr_print(fn(FN_EXTRACT_YEAR, bt, 1, ci(T(TK_DATE), 0)), &b);
    assert_string_equal(buf_cstr(&b), "EXTRACT(YEAR FROM DATE '1970-01-01')");
    buf_reset(&b);
    expr_print(cast(DEC(10, 2), ci(DEC(10, 2), -7)), &b);
    assert_string_equal(buf_cstr(&b), "CAST(-0.07 AS DECIMAL(10,2))");
    buf_free(&b);
}

#define T_(f) cmocka_unit_test_setup(f, reset)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T_(test_and_or_not_follow_three_valued_truth_tables),
        T_(test_cast_exists_matches_what_eval_cast_converts),
        T_(test_is_null_is_true_and_is_false_are_never_null),
        T_(test_comparisons_of_every_type_are_three_valued),
        T_(test_integer_overflow_is_an_error_naming_operator_and_type),
        T_(test_overflow_checks_hold_when_operands_are_wider_than_the_result),
        T_(test_overflow_in_a_null_row_is_not_an_error),
        T_(test_integer_division_and_modulo_truncate_toward_zero),
        T_(test_integer_division_by_zero_gives_null_and_counts),
        T_(test_decimal_addition_keeps_scale_and_checks_precision),
        T_(test_decimal_multiplication_rounds_to_the_result_scale),
        T_(test_decimal_division_truncates_at_the_result_scale),
        T_(test_float_arithmetic_is_ieee_and_real_rounds_to_float),
        T_(test_casts_between_integer_types_check_range),
        T_(test_casts_between_decimals_and_integers_rescale_exactly),
        T_(test_casts_from_floats_truncate_or_round),
        T_(test_casts_to_strings_use_canonical_text_and_length_rules),
        T_(test_casts_from_strings_parse_or_fail_with_the_text),
        T_(test_casts_between_string_types_pad_truncate_and_unpad),
        T_(test_casts_between_dates_timestamps_and_times),
        T_(test_case_evaluates_a_branch_only_for_rows_that_take_it),
        T_(test_nested_case_inside_a_selection_sees_the_right_rows),
        T_(test_and_or_skip_later_operands_for_decided_rows),
        T_(test_coalesce_and_nullif),
        T_(test_in_list_is_three_valued),
        T_(test_like_matches_percent_underscore_and_escapes),
        T_(test_string_functions_count_characters),
        T_(test_trim_replace_and_concat),
        T_(test_numeric_functions_keep_their_domain),
        T_(test_extract_fields_of_dates_times_and_timestamps),
        T_(test_eval_with_a_selection_gives_dense_rows),
        T_(test_filter_keeps_rows_where_the_predicate_is_true),
        T_(test_print_shows_an_infix_form),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
