/*
 * fuzz/fuzz_regex.c - the regular-expression functions (expr/fn_regex.c):
 * patterns, flags, subjects and replacements from the input through every
 * kernel (REGEXP_EXTRACT, REGEXP_LIKE, REGEXP_REPLACE, REGEXP_COUNT,
 * REGEXP_SUBSTR, REGEXP_INSTR, SPLIT_PART), the binder's constant check
 * (expr_regex_check) and SIMILAR TO's translation (expr_similar_to_regex)
 * followed by a match. A bad pattern, flag or argument must be an error,
 * never a crash, a hang or a read outside the subject; a match past
 * PCRE2's limits is an error too.
 *
 * Input: framed records (fuzz.h): pattern, flags, replacement, then
 * subjects (each evaluated as one row of a chunk, so the per-thread cache
 * sees the same pattern many times); byte 0 of the flags record, when
 * present, also picks start/N/group arguments. Seeds: fuzz/corpus/regex/.
 */
#include "fuzz.h"

#include "base/arena.h"
#include "expr/expr.h"

#define MAX_ROWS 16

static Expr *cs(Arena *a, const uint8_t *p, size_t n)
{
    return expr_const_str(a, type_make(TK_VARCHAR, false), (const char *)p, n);
}

static Expr *ci(Arena *a, int64_t v) { return expr_const_i64(a, type_make(TK_BIGINT, false), v); }

static Expr *fn(Arena *a, int f, TypeKind t, int na, Expr **args)
{
    Expr *e = expr_new(a, E_FUNC, type_make(t, true), na);
    e->fn = f;
    for (int j = 0; j < na; j++)
        e->a[j] = args[j];
    return e;
}

static void eval(const Expr *e, const Chunk *c, EvalCtx *cx)
{
    Vec v;
    if (expr_eval(e, c, NULL, c->n, cx, &v) == 0) {
        for (int64_t k = 0; k < c->n; k++) /* touch every result byte */
            if (v.s && !v.nul[k] && v.s[k].n)
                (void)((volatile const char *)v.s[k].p)[v.s[k].n - 1];
    }
    err_clear(cx->err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size, *pat, *flags, *repl, *rec;
    size_t npat, nflags, nrepl, n;
    if (!fz_next(&p, end, &pat, &npat))
        return 0;
    if (!fz_next(&p, end, &flags, &nflags))
        flags = pat, nflags = 0;
    if (!fz_next(&p, end, &repl, &nrepl))
        repl = pat, nrepl = 0;
    Arena *a = arena_new(1 << 16);
    Err err;
    err_init(&err);
    EvalCtx cx = {.arena = a, .err = &err};
    SqlType vc = type_make(TK_VARCHAR, true);
    Chunk *c = chunk_new(a, 1, &vc, MAX_ROWS);
    c->n = 0;
    while (c->n < MAX_ROWS && fz_next(&p, end, &rec, &n)) {
        c->w[c->n] = 1;
        c->col[0].s[c->n] = (Str){(const char *)rec, (uint32_t)n};
        c->col[0].nul[c->n] = 0;
        c->n++;
    }
    if (c->n == 0) {
        c->w[0] = 1;
        c->col[0].s[0] = (Str){"", 0};
        c->col[0].nul[0] = 0;
        c->n = 1;
    }
    uint8_t knob = nflags ? flags[0] : 0;
    int64_t start = 1 + (knob & 3), nth = (knob >> 2) & 3, grp = (knob >> 4) & 3;
    Expr *s = expr_col(a, 0, vc), *P = cs(a, pat, npat), *F = cs(a, flags, nflags);
    Expr *R = cs(a, repl, nrepl);

    int off;
    expr_regex_check((const char *)pat, npat, (const char *)flags, nflags, FN_REGEXP_REPLACE, &err,
                     &off);
    err_clear(&err);
    eval(fn(a, FN_REGEXP_EXTRACT, TK_VARCHAR, 3, (Expr *[]){s, P, ci(a, grp)}), c, &cx);
    eval(fn(a, FN_REGEXP_LIKE, TK_BOOL, 3, (Expr *[]){s, P, F}), c, &cx);
    eval(fn(a, FN_REGEXP_REPLACE, TK_VARCHAR, 6, (Expr *[]){s, P, R, ci(a, start),
                                                            ci(a, nth - 1), F}),
         c, &cx);
    eval(fn(a, FN_REGEXP_COUNT, TK_INT, 4, (Expr *[]){s, P, ci(a, start), F}), c, &cx);
    eval(fn(a, FN_REGEXP_SUBSTR, TK_VARCHAR, 6, (Expr *[]){s, P, ci(a, start), ci(a, nth),
                                                           F, ci(a, grp)}),
         c, &cx);
    eval(fn(a, FN_REGEXP_INSTR, TK_INT, 7, (Expr *[]){s, P, ci(a, start), ci(a, nth),
                                                       ci(a, knob >> 7), F, ci(a, grp)}),
         c, &cx);
    eval(fn(a, FN_SPLIT_PART, TK_VARCHAR, 3, (Expr *[]){s, P, ci(a, (int64_t)nth - 2)}), c, &cx);
    /* the subjects as patterns (a pattern column) over the pattern as subject */
    eval(fn(a, FN_REGEXP_LIKE, TK_BOOL, 3, (Expr *[]){P, s, cs(a, (const uint8_t *)"", 0)}), c, &cx);
    /* SIMILAR TO: the translation must compile or fail cleanly */
    Buf b = BUF_INIT;
    expr_similar_to_regex((const char *)pat, npat, nflags > 1 ? flags[1] : '\\', &b);
    Expr *SP = expr_const_str(a, type_make(TK_VARCHAR, false), (const char *)b.p, b.n);
    eval(fn(a, FN_REGEXP_LIKE, TK_BOOL, 3, (Expr *[]){s, SP, cs(a, (const uint8_t *)"", 0)}), c, &cx);
    buf_free(&b);
    arena_free(a);
    return 0;
}
