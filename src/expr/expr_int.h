/*
 * expr/expr_int.h - declarations shared by the files of the expression
 * evaluator (expr.c: dispatch, arithmetic, logic; eval_cast.c: CAST;
 * fn_str.c, fn_num.c, fn_time.c, fn_regex.c: built-in functions, LIKE, ||) and of
 * expr_tree.c (constructors, EXPLAIN text, operator and function names).
 *
 * Kernel convention: the caller has evaluated the operands into dense
 * vectors of n entries, allocated `out` with the node's type (expr__vec) and
 * built the row mask m (expr__mask): m[k] != 0 marks row k NULL. m is out->nul
 * when the result is nullable, else zeroed scratch. A kernel computes every
 * slot of out (initialised even for NULL rows), may add NULLs to m (division
 * by zero), and reports errors only for rows that are not NULL.
 */
#ifndef SL_EXPR_EXPR_INT_H
#define SL_EXPR_EXPR_INT_H

#include "../base/buf.h"
#include "expr.h"
#include "text.h"

#define US_PER_SEC 1000000LL
#define US_PER_DAY 86400000000LL

/* A vector of n entries of type t from cx->arena (nul zeroed iff t.nullable). */
void expr__vec(EvalCtx *cx, SqlType t, int64_t n, Vec *out);
/* Row mask of out: out->nul, or zeroed scratch when out is NOT NULL. */
uint8_t *expr__mask(EvalCtx *cx, Vec *out, int64_t n);
/* m[k] |= v's NULL flag of row k (nothing when v has no nul). */
void expr__merge_nulls(uint8_t *m, const Vec *v, int64_t n);
/* After a kernel added NULLs to m: fails when out cannot hold them. */
int expr__check_nulls(EvalCtx *cx, const Vec *out, const char *what, int64_t added);
/* Inclusive int64 range of values of t: integer ranges, DECIMAL(p,s) as
 * +-(10^p - 1), BOOLEAN 0..1, the full range for the rest. */
void expr__range(SqlType t, int64_t *lo, int64_t *hi);
/* Sets "integer overflow in <op> for <type>" (or decimal); returns SL_ERUNTIME. */
int expr__overflow(EvalCtx *cx, const char *op, SqlType t);
int64_t expr__floor_div(int64_t a, int64_t b);
/* Values of numeric v as doubles (DECIMAL scaled down), from cx->arena. */
double *expr__as_f64(EvalCtx *cx, const Vec *v, int64_t n);

static inline int expr__strcmp(Str a, Str b)
{
    uint32_t n = a.n < b.n ? a.n : b.n;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    return c ? c : (a.n > b.n) - (a.n < b.n);
}

/* Characters (UTF-8 lead bytes) in s[0..n). */
static inline size_t expr__utf8_len(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t j = 0; j < n; j++)
        c += ((uint8_t)s[j] & 0xC0) != 0x80;
    return c;
}

/* Byte offset just past the first `chars` characters of s[0..n). */
static inline size_t expr__utf8_offset(const char *s, size_t n, size_t chars)
{
    size_t j = 0;
    while (j < n && chars > 0) {
        j++;
        while (j < n && ((uint8_t)s[j] & 0xC0) == 0x80)
            j++;
        chars--;
    }
    return j;
}

/* a op b for op in E_ADD..E_MOD (expr.c). */
/* expr_tree.c: the operator text of k ("+", "<=", "AND"; "?" for others),
   and the SQL name of function fn (NULL when fn is not an FN_* value). */
const char *expr__op_text(ExprKind k);
const char *expr__fn_name(int fn);

int expr__arith(int op, const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, Vec *out,
                uint8_t *m);
/* The wide DECIMAL path (eval_dec.c), used when an operand or the result
   is a DECIMAL of precision > 18: a op b, -a, three-way comparisons of a
   and b into c (0 for rows masked by m), and CAST of a to out->t (a or out
   wide; numbers and BOOLEAN only). */
int expr__dec_arith(int op, const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, Vec *out,
                    uint8_t *m);
int expr__dec_neg(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m);
void expr__dec_compare(const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, int *c,
                       const uint8_t *m);
int expr__dec_cast(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m);
/* Integer/DECIMAL values of v (unscaled) as 128 bits (v->x itself when wide). */
i128 *expr__as_i128(EvalCtx *cx, const Vec *v, int64_t n);
/* a converted to out->t (eval_cast.c); m holds a's NULLs. */
int expr__cast(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m);
/* Built-in functions (fn_str.c, fn_num.c, fn_time.c); args[0..e->na). */
int expr__fn_str(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m);
int expr__fn_num(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m);
int expr__fn_time(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out,
                  uint8_t *m);
/* REGEXP_*, SIMILAR TO's translation and SPLIT_PART (fn_regex.c). */
int expr__fn_regex(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out,
                   uint8_t *m);
/* The ARRAY functions (fn_array.c): operands with their NULLs, m zeroed. */
int expr__fn_array(const Expr *e, const Vec *a, int na, int64_t n, EvalCtx *cx, Vec *out,
                   uint8_t *m);
/* The ROW and MAP functions (fn_nested.c): as expr__fn_array. */
int expr__fn_nested(const Expr *e, const Vec *a, int na, int64_t n, EvalCtx *cx, Vec *out,
                    uint8_t *m);
/* The VARIANT functions (fn_variant.c), operand NULLs merged into m, and
   CASTs to and from VARIANT. */
int expr__fn_variant(const Expr *e, const Vec *a, int na, int64_t n, EvalCtx *cx, Vec *out,
                     uint8_t *m);
int expr__variant_cast(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m);
/* a || b and a LIKE b [ESCAPE c] (fn_str.c). */
int expr__concat(const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m);
int expr__like(const Vec *args, int na, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m);

#endif
