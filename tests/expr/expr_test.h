/*
 * tests/expr/expr_test.h - what the evaluator's unit tests share (test_expr.c,
 * test_time_str.c): the arena, error and EvalCtx every test evaluates with
 * (reset before each test), Expr trees built the way the binder builds them,
 * evaluation that fails the test on an error or on a NULL mask that does not
 * match the type, and checks of int and string results (NV / a NULL pointer
 * standing for SQL NULL). Header-only, included after cmocka.h.
 */
#ifndef SL_TESTS_EXPR_EXPR_TEST_H
#define SL_TESTS_EXPR_EXPR_TEST_H

#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "expr/expr.h"
#include "expr/text.h"

/* Marks a NULL in expected/input int64 arrays. */
#define NV INT64_C(-0x7ffffffffffffff0)

static Arena *A;
static Err err;
static EvalCtx cx;

static int setup(void **state)
{
    A = arena_new(1 << 16);
    return 0;
}

static int teardown(void **state)
{
    arena_free(A);
    return 0;
}

static int reset(void **state)
{
    arena_reset(A);
    err_clear(&err);
    cx = (EvalCtx){.arena = A, .ndivzero = 0, .err = &err};
    return 0;
}

static inline SqlType T(TypeKind k) { return type_make(k, true); }

static inline Expr *col(int j, SqlType t) { return expr_col(A, j, t); }

/* A node of kind k (function f for E_FUNC) over na operands. */
static inline Expr *mk(ExprKind k, int f, SqlType t, int na, ...)
{
    Expr *e = expr_new(A, k, t, na);
    e->fn = f;
    va_list ap;
    va_start(ap, na);
    for (int j = 0; j < na; j++)
        e->a[j] = va_arg(ap, Expr *);
    va_end(ap);
    return e;
}

static inline Vec ev_sel(const Expr *e, const Chunk *c, const int32_t *sel, int64_t n)
{
    Vec v;
    int rc = expr_eval(e, c, sel, n, &cx, &v);
    if (rc)
        fail_msg("expr_eval failed (%d): %s", rc, err.msg);
    if ((v.nul != NULL) != (e->t.nullable != 0))
        fail_msg("nul is %s but the type is %s", v.nul ? "set" : "NULL",
                 e->t.nullable ? "nullable" : "NOT NULL");
    return v;
}

static inline Vec ev(const Expr *e, const Chunk *c) { return ev_sel(e, c, NULL, c->n); }

static inline void want_ints(const Vec *v, int64_t n, const int64_t *want)
{
    for (int64_t k = 0; k < n; k++) {
        bool null = vec_is_null(v, k);
        if (want[k] == NV && !null)
            fail_msg("row %lld: got %lld, want NULL", (long long)k, (long long)v->i[k]);
        if (want[k] != NV && null)
            fail_msg("row %lld: got NULL, want %lld", (long long)k, (long long)want[k]);
        if (want[k] != NV && v->i[k] != want[k])
            fail_msg("row %lld: got %lld, want %lld", (long long)k, (long long)v->i[k],
                     (long long)want[k]);
    }
}

static inline void want_strs(const Vec *v, int64_t n, const char *const *want)
{
    for (int64_t k = 0; k < n; k++) {
        bool null = vec_is_null(v, k);
        if (!want[k] != null)
            fail_msg("row %lld: NULL is %d, want %s", (long long)k, null,
                     want[k] ? want[k] : "NULL");
        if (want[k] && (v->s[k].n != strlen(want[k]) ||
                        memcmp(v->s[k].p, want[k], v->s[k].n) != 0))
            fail_msg("row %lld: got \"%.*s\", want \"%s\"", (long long)k, (int)v->s[k].n,
                     v->s[k].p, want[k]);
    }
}

/* Evaluate e over c and check the results with want_fn against the
   values given (of type T). */
#define CHECK_VALUES(T, want_fn, e, c, ...)                                                     \
    do {                                                                                        \
        T const want_[] = {__VA_ARGS__};                                                        \
        Vec v_ = ev((e), (c));                                                                  \
        want_fn(&v_, (int64_t)ARRAY_LEN(want_), want_);                                         \
    } while (0)

#define CHECK_INTS(e, c, ...) CHECK_VALUES(int64_t, want_ints, e, c, __VA_ARGS__)
#define CHECK_STRS(e, c, ...) CHECK_VALUES(const char *, want_strs, e, c, __VA_ARGS__)

#endif
