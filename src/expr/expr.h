/*
 * expr/expr.h - bound scalar expressions and their vectorized evaluation.
 *
 * The binder (sql/) builds Expr trees whose operands are already coerced:
 * the two operands of an arithmetic or comparison node have the same type
 * (the binder inserts E_CAST nodes), except where noted below. Evaluation
 * runs one tight loop per node over a vector of rows (never a tree walk per
 * row): expr_eval evaluates a node's children into vectors, then the node.
 *
 * SQL semantics: NULL in gives NULL out (except AND/OR/IS/CASE/COALESCE);
 * AND/OR are three-valued; integer division truncates toward zero; x / 0
 * and x % 0 give NULL and count in EvalCtx.ndivzero (SQLite's behaviour,
 * documented); integer overflow in +, -, *, unary - and CAST is a runtime
 * error (SL_ERUNTIME, message names the operation and type), never a wrap.
 */
#ifndef SL_EXPR_EXPR_H
#define SL_EXPR_EXPR_H

#include "../base/arena.h"
#include "../base/err.h"
#include "chunk.h"

typedef enum ExprKind {
    E_COL,     /* column `col` of the input chunk */
    E_CONST,   /* constant: cnull, or ci / cf / cs per type_phys(t) */
    E_NEG,     /* -a[0] */
    E_ADD,     /* a[0] + a[1]; same types; DECIMAL: same scale (a DECIMAL
                  wider than 18 digits goes through eval_dec.c); also
                  TIMESTAMP + INTERVAL DAY TO SECOND and DATE + BIGINT days
                  (plain int64 sums of microseconds / days, sql/bind.c) */
    E_SUB,     /* a[0] - a[1]; as E_ADD, and TIMESTAMP - TIMESTAMP giving an
                  INTERVAL DAY TO SECOND */
    E_MUL,     /* a[0] * a[1]; same types, except DECIMAL: any scales,
                  result scale = t.scale = a0.scale + a1.scale (may be
                  reduced by the binder: then round half away from zero) */
    E_DIV,     /* a[0] / a[1]; same types, except DECIMAL: any scales,
                  result scale t.scale; computed exactly (128 or 256
                  bits), truncated toward zero */
               /* E_MUL, E_DIV also take INTERVAL op BIGINT (an int64 count) */
    E_MOD,     /* a[0] % a[1]; integers (sign of the dividend) and DECIMAL
                  (same scale) and floating (fmod) */
    E_EQ, E_NE, E_LT, E_LE, E_GT, E_GE, /* same types; result BOOLEAN;
                  strings compare as bytes (memcmp, then length) */
    E_AND, E_OR, /* n-ary (na >= 2) over BOOLEAN, three-valued */
    E_NOT,     /* BOOLEAN */
    E_ISNULL,  /* a[0] IS NULL, never NULL itself */
    E_ISNOTNULL,
    E_ISTRUE, E_ISFALSE, /* a[0] IS TRUE / IS FALSE (BOOLEAN; never NULL) */
    E_CASE,    /* a = [when1, then1, when2, then2, ..., (else)]: na odd means
                  an ELSE is present; whens are BOOLEAN (NULL = not taken);
                  thens and else have type t; a then branch is evaluated
                  only for the rows that take it (so its errors only count
                  there); no ELSE gives NULL */
    E_CAST,    /* a[0] converted to t: the pairs expr_cast_exists allows. String
                  <-> anything via text.h; numeric <-> numeric with range
                  checks (out of range is SL_ERUNTIME); float -> integer
                  truncates toward zero (as SQLite and Calcite do); DECIMAL
                  and float -> DECIMAL round half away from zero; DATE <->
                  TIMESTAMP (midnight / date part); BOOLEAN <-> integer 0/1;
                  CHAR(n) pads with spaces, VARCHAR(n) truncates */
    E_IN,      /* a[0] IN (a[1], ..., a[na-1]); same types; three-valued */
    E_COALESCE,/* first non-NULL of a[0..na), same types */
    E_NULLIF,  /* NULL if a[0] = a[1], else a[0] */
    E_CONCAT,  /* a[0] || a[1], strings */
    E_LIKE,    /* a[0] LIKE a[1] (pattern with % and _ ; optional a[2]
                  escape char); case-sensitive */
    E_FUNC,    /* built-in scalar function `fn` over a[0..na) */
} ExprKind;

/* The built-in functions. The functions of one file (fn_array.c,
   fn_nested.c, ...) stay one contiguous range: evaluation dispatches on
   the first and last of each (expr.c). */
typedef enum FuncId {
    FN_ABS,        /* numeric */
    FN_LOWER,      /* string */
    FN_UPPER,
    FN_CHAR_LENGTH,/* string -> INT (characters, UTF-8 aware) */
    FN_SUBSTRING,  /* (s, from INT[, len INT]) 1-based, SQL semantics */
    FN_TRIM,       /* both sides spaces */
    FN_LTRIM,
    FN_RTRIM,
    FN_POSITION,   /* (needle, haystack) -> INT, 1-based, 0 if absent */
    FN_REPLACE,    /* (s, from, to) */
    FN_FLOOR, FN_CEIL, /* numeric */
    FN_ROUND,      /* (x[, digits INT]) */
    FN_MOD,        /* same as E_MOD */
    FN_POWER, FN_SQRT, FN_LN, FN_EXP, /* DOUBLE */
    FN_SIGN,
    FN_NOT_NULL,   /* (x, message VARCHAR constant) -> x, NOT NULL: a NULL x is
                      a run-time error with that message (the NOT NULL result
                      and parameters of SQL functions, sql/bind_udf.c) */
    FN_EXTRACT_YEAR, FN_EXTRACT_MONTH, FN_EXTRACT_DAY, FN_EXTRACT_HOUR,
    FN_EXTRACT_MINUTE, FN_EXTRACT_SECOND, FN_EXTRACT_DOW, FN_EXTRACT_DOY,
    FN_EXTRACT_EPOCH, /* (DATE/TIME/TIMESTAMP) -> BIGINT */
    FN_EXTRACT_WEEK,  /* ISO 8601 week number 1..53 */
    FN_EXTRACT_QUARTER,
    FN_EXTRACT_MILLISECOND, /* seconds and fraction * 1000 (Calcite) */
    FN_EXTRACT_MICROSECOND, /* seconds and fraction * 1000000 */
    FN_LEFT, FN_RIGHT, /* (s, n INT): first / last n characters; n <= 0 gives '' */
    FN_CONCAT,     /* (s1, ..., sn) strings; NULL if any is NULL */
    FN_INITCAP,    /* first letter of each word upper, the rest lower (ASCII) */
    FN_TRIM_CHARS, /* (s, chars, side INT 0 both / 1 leading / 2 trailing):
                      removes characters of the set `chars` */
    FN_ADD_MONTHS, /* (DATE or TIMESTAMP, months BIGINT): calendar months,
                      the day clamped to the end of the month */
    FN_DATE_TRUNC, /* (DATE or TIMESTAMP, unit BIGINT constant TimeUnit, text.h) */
    FN_TIMESTAMPDIFF, /* (unit BIGINT constant, a, b TIMESTAMP) -> BIGINT:
                      whole units from a to b, truncated toward zero */
    FN_TIME_ADD,      /* (TIME, INTERVAL DAY TO SECOND) -> TIME, modulo 24 hours */
    FN_TUMBLE_START,  /* (ts TIMESTAMP, size, offset INTERVAL DAY TO SECOND,
                      size > 0) -> TIMESTAMP: the start of the window of
                      length size containing ts, windows aligned on offset */
    FN_SPLIT_INDEX,   /* (s, delimiter, i INT) -> the i-th (0-based) part of s
                      split at every delimiter, NULL when there are fewer
                      parts, i < 0 or the delimiter is '' (Flink) */
    FN_REGEXP_EXTRACT, /* (s, pattern, i INT) -> group i (0: the whole match)
                      of the first match of the regular expression pattern
                      (PCRE2, Java's defaults) in s; NULL when none */
    /* fn_regex.c: PCRE2 patterns with PostgreSQL's defaults and flags
       (VARCHAR, '' for none); start and N are 1-based INTs */
    FN_REGEXP_LIKE,    /* (s, pattern, flags) -> BOOLEAN */
    FN_REGEXP_REPLACE, /* (s, pattern, replacement, start, N, flags): N = -1
                      the first match (every one with flag 'g'), 0 every one */
    FN_REGEXP_COUNT,   /* (s, pattern, start, flags) -> INT */
    FN_REGEXP_SUBSTR,  /* (s, pattern, start, N, flags, subexpr) -> VARCHAR NULL */
    FN_REGEXP_INSTR,   /* (s, pattern, start, N, endoption, flags, subexpr) -> INT */
    FN_SIMILAR_ESCAPE, /* (pattern, escape) -> the SIMILAR TO pattern as a
                      regular expression (escape '' for none) */
    FN_SPLIT_PART,     /* (s, delimiter, n INT) -> field n (1-based, negative
                      from the end), '' when none; n = 0 is an error */
    FN_AT_TZ_LOCAL,    /* (TIMESTAMPTZ, zone) -> TIMESTAMP: wall-clock time in
                          zone; zone is a BIGINT tz.h id or a VARCHAR name */
    FN_AT_TZ_INSTANT,  /* (TIMESTAMP, zone) -> TIMESTAMPTZ: the instant the
                          wall-clock time has in zone */
    FN_TZ_OFFSET,      /* (TIMESTAMPTZ, part BIGINT constant) -> BIGINT: the
                          offset of its session zone at that instant, part
                          0: seconds east of UTC, 1: its hours, 2: its
                          minutes (both with its sign): EXTRACT(TIMEZONE...) */
    /* fn_array.c: ARRAYs (expr/array.h); NULL arguments handled by each */
    FN_ARRAY,          /* (e1, ..., en) of the element type -> ARRAY, never NULL
                          (NULL arguments are NULL elements) */
    FN_ARRAY_GET,      /* (a, i BIGINT) -> element i (1-based), NULL when out of
                          range */
    FN_CARDINALITY,    /* (a) -> INT: its elements */
    FN_ARRAY_LENGTH,   /* (a, dim INT) -> INT: its elements when dim is 1, NULL
                          for other dims and for the empty array (PostgreSQL) */
    FN_ARRAY_CAT,      /* (a, b) same ARRAY types: a's elements then b's; a NULL
                          operand is the empty array, both NULL give NULL */
    FN_ARRAY_TO_STRING,/* (a, sep[, null_text]) -> VARCHAR: the elements' text
                          joined by sep; NULL elements are null_text, or left
                          out without one */
    FN_ARRAY_ANY,      /* (x, a, q BIGINT constant): x op ANY (a) for q = 2*op,
                          x op ALL (a) for q = 2*op + 1 (op: 0 = 1 <> 2 < 3 <=
                          4 > 5 >=); three-valued, x of the element type */
    FN_ARRAY_POSITION, /* (a, x) -> INT: 1-based index of the first element
                          not distinct from x, NULL when none */
    FN_ARRAY_SLICE,    /* (a, lo BIGINT, hi BIGINT) -> ARRAY: elements lo..hi
                          (1-based, clamped to the array; empty when none),
                          NULL when an operand is (PostgreSQL's a[lo:hi]) */
    /* fn_nested.c: ROWs and MAPs (expr/nested.h); NULLs handled by each */
    FN_ROW,            /* (e1, ..., en) the fields -> ROW, never NULL */
    FN_ROW_GET,        /* (r, i BIGINT constant) -> field i (0-based), NULL
                          when r is NULL */
    FN_MAP,            /* (k1, v1, ..., kn, vn) -> MAP, never NULL; a later
                          duplicate key wins; a NULL key is an error */
    FN_MAP_GET,        /* (m, k) -> the value of key k, NULL when absent */
    FN_MAP_CONTAINS_KEY, /* (m, k) -> BOOLEAN */
    FN_MAP_CARDINALITY,/* (m) -> INT: its entries */
    FN_MAP_KEYS,       /* (m) -> ARRAY of its keys, in key order */
    FN_MAP_VALUES,     /* (m) -> ARRAY of its values, in key order */
    /* fn_variant.c: VARIANT (expr/variant.h); NULL arguments give NULL */
    FN_PARSE_JSON,     /* (VARCHAR) -> VARIANT, NULL for malformed JSON */
    FN_TO_JSON,        /* (VARIANT) -> VARCHAR: compact JSON text */
    FN_VARIANT_NULL,   /* () -> VARIANT: JSON null */
    FN_VARIANT_GET,    /* (v, k, mode BIGINT constant) -> VARIANT: member k
                          (VARCHAR) of an object or element k (BIGINT) of an
                          array; mode 0: k 0-based, negative from the end
                          (->), 1: k 1-based (v[k]), 2: a VARCHAR k on an
                          array read as a 0-based integer (json paths); NULL
                          when there is none */
    FN_VARIANT_TEXT,   /* (v) -> VARCHAR: a string's text, NULL for JSON
                          null, else the JSON text (->>) */
    FN_VARIANT_TYPEOF, /* (v) -> VARCHAR: "null", "boolean", "number",
                          "string", "array" or "object" */
    FN_VARIANT_IS,     /* (v, kind BIGINT constant) -> BOOLEAN: v holds a
                          value of that VarKind */
    FN_JSON_ARRAY,     /* (v, ...) VARIANTs -> VARIANT: the array of them */
    FN_JSON_OBJECT,    /* (k1 VARCHAR, v1 VARIANT, ...) -> VARIANT: the object
                          (of a duplicated key the last value) */
    FN_JSON_CONCAT,    /* (a, b) -> VARIANT: a || b (var_concat) */
    FN_JSON_CONTAINS,  /* (a, b) -> BOOLEAN: a @> b (var_contains) */
    FN_JSON_EXISTS,    /* (v, key VARCHAR) -> BOOLEAN: v ? key (var_exists) */
    FN_JSON_ARRAY_LENGTH, /* (v) -> INT, NULL when v is no array */
    FN_JSON_PATH,      /* (v, path VARCHAR ARRAY) -> VARIANT: v #> path, NULL
                          when a step is missing or NULL */
    FN_JSON_SET,       /* (v, path VARCHAR ARRAY, new VARIANT, create BOOLEAN)
                          -> VARIANT: jsonb_set (var_set_path) */
    FN__COUNT
} FuncId;

typedef struct Expr {
    ExprKind k;
    SqlType t;            /* result type */
    int col;              /* E_COL */
    int fn;               /* E_FUNC: FuncId */
    bool cnull;           /* E_CONST: the constant is NULL */
    int64_t ci;           /* E_CONST PHYS_I64 */
    i128 cx;              /* E_CONST PHYS_I128 (a wide DECIMAL) */
    double cf;            /* E_CONST PHYS_F64 */
    Str cs;               /* E_CONST PHYS_STR (memory owned by the plan) */
    struct Expr **a;      /* operands */
    int na;
} Expr;

typedef struct EvalCtx {
    Arena *arena;      /* output vectors and strings are allocated here */
    int64_t ndivzero;  /* incremented once per row divided by zero */
    Err *err;          /* runtime errors (first wins) */
} EvalCtx;

/*
 * Evaluate e over rows sel[0..n) of in (rows 0..n when sel is NULL) into out:
 * n dense entries (out->nul allocated iff e->t.nullable). out may alias a
 * column of in (E_COL with sel NULL): treat it as read-only.
 * Returns 0, or SL_ERUNTIME with cx->err set.
 */
int expr_eval(const Expr *e, const Chunk *in, const int32_t *sel, int64_t n, EvalCtx *cx,
              Vec *out);

/*
 * Rows among sel[0..n) (or 0..n) of in for which the BOOLEAN pred is TRUE
 * (not FALSE, not NULL): their row numbers in `in`, ascending, written to
 * out_sel (room for n); count to *out_n. Returns 0 or SL_ERUNTIME.
 */
int expr_filter(const Expr *pred, const Chunk *in, const int32_t *sel, int64_t n, EvalCtx *cx,
                int32_t *out_sel, int64_t *out_n);

/*
 * Checks a constant pattern (n bytes) with constant flags (NULL: none) of
 * regex function fn (FN_REGEXP_*): 0, or SL_ERUNTIME with PCRE2's message
 * in err and, when the pattern itself is at fault, the 0-based character
 * offset of the error in *offset (else -1).
 */
int expr_regex_check(const char *pat, size_t n, const char *flags, size_t nflags, int fn,
                     Err *err, int *offset);
/* SIMILAR TO's pattern p[0..n) as a regular expression appended to b
   (esc: the escape byte, or -1 for none). */
struct Buf;
void expr_similar_to_regex(const char *p, size_t n, int esc, struct Buf *b);

/* Constructors (memory from the plan arena a). */
/* a and b are the same expression (kind, type, operands, constants): they
   give the same values for the same rows (every function is pure). */
bool expr_same(const Expr *a, const Expr *b);

/* Whether E_CAST converts type kind `from` to `to` at all: false when it
   would refuse every non-NULL value ("cannot cast"), as for TIME to
   TIMESTAMP, numbers to and from date/time types, and intervals to
   anything but a string (eval_cast.c). A cast that exists may still fail
   on some values (VARCHAR to INT, overflow). */
bool expr_cast_exists(TypeKind from, TypeKind to);
Expr *expr_new(Arena *a, ExprKind k, SqlType t, int na);
Expr *expr_col(Arena *a, int col, SqlType t);
Expr *expr_const_null(Arena *a, SqlType t);
Expr *expr_const_i64(Arena *a, SqlType t, int64_t v);
/* A DECIMAL constant of any precision (v scaled by 10^t.scale). */
Expr *expr_const_dec(Arena *a, SqlType t, i128 v);
Expr *expr_const_f64(Arena *a, SqlType t, double v);
Expr *expr_const_str(Arena *a, SqlType t, const char *s, size_t n);
/* Debug/EXPLAIN text of e into out. */
struct Buf;
void expr_print(const Expr *e, struct Buf *out);

#endif
