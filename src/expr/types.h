/*
 * expr/types.h - SQL scalar types and their physical representation.
 *
 * Every value lives in one of three physical classes:
 *   PHYS_I64: BOOLEAN (0/1), TINYINT..BIGINT, DECIMAL(p,s) as an integer
 *             scaled by 10^s when p <= 18 (the fast path), DATE (days since 1970-01-01),
 *             TIME (microseconds since midnight), TIMESTAMP (microseconds
 *             since 1970-01-01 00:00:00, no time zone), TIMESTAMPTZ
 *             (microseconds since 1970-01-01 00:00:00 UTC), INTERVAL DAY TO
 *             SECOND (microseconds, signed), INTERVAL YEAR TO MONTH (months,
 *             signed);
 *   PHYS_I128: DECIMAL(p,s) with 18 < p <= 38 as an __int128 scaled by
 *             10^s (|value| < 10^p, so the range is symmetric);
 *   PHYS_F64: REAL (rounded to float precision), DOUBLE;
 *   PHYS_STR: CHAR(n), VARCHAR(n), TEXT as (pointer, length); never contain
 *             a NUL byte (input rejects it, as PostgreSQL does); ARRAYs as
 *             the NUL-free, memcmp-ordered encoding of expr/array.h; ROWs
 *             and MAPs in the same encoding (expr/nested.h); VARIANTs as
 *             the canonical encoding of expr/variant.h.
 */
#ifndef SL_EXPR_TYPES_H
#define SL_EXPR_TYPES_H

#include <math.h>

#include "../base/base.h"

typedef enum TypeKind {
    TK_NULL = 0, /* type of a bare NULL literal before coercion */
    TK_BOOL,
    TK_TINYINT,
    TK_SMALLINT,
    TK_INT,
    TK_BIGINT,
    TK_DECIMAL,
    TK_REAL,
    TK_DOUBLE,
    TK_CHAR,
    TK_VARCHAR,
    TK_DATE,
    TK_TIME,
    TK_TIMESTAMP,
    TK_INTERVAL_DT, /* INTERVAL DAY TO SECOND: microseconds */
    TK_INTERVAL_YM, /* INTERVAL YEAR TO MONTH: months */
    TK_TIMESTAMPTZ, /* TIMESTAMP WITH TIME ZONE: an instant, microseconds
                       since 1970-01-01 00:00:00 UTC; len is the session
                       zone (expr/tz.h id) it is read and shown in */
    TK_ARRAY,       /* ARRAY of elements of kind `elem` (prec, scale and len
                       are the element's); PHYS_STR bytes, expr/array.h */
    TK_ROW,         /* ROW / user struct type: len is its expr/nested.h id
                       (field names and types); PHYS_STR bytes, nested.h */
    TK_MAP,         /* MAP<K, V>: len is its expr/nested.h id (key and value
                       types); PHYS_STR bytes, nested.h */
    TK_VARIANT,     /* VARIANT (JSON, JSONB): one JSON value; PHYS_STR bytes
                       in the canonical encoding of expr/variant.h */
} TypeKind;

typedef enum Phys { PHYS_I64, PHYS_F64, PHYS_STR, PHYS_I128 } Phys;

typedef __int128 i128;

#define DECIMAL_MAX_PREC   38 /* DECIMAL(p,s): 1 <= p <= 38 */
#define DECIMAL64_MAX_PREC 18 /* up to here a DECIMAL is a 64-bit integer */
/* NUMERIC / DECIMAL written without a precision (docs/sql.md, types). */
#define DECIMAL_DEFAULT_PREC  38
#define DECIMAL_DEFAULT_SCALE 18
#define VARCHAR_UNBOUNDED (-1)

typedef struct SqlType {
    uint8_t kind;     /* TypeKind */
    uint8_t nullable; /* 1 when the value may be NULL */
    uint8_t prec;     /* DECIMAL precision */
    uint8_t scale;    /* DECIMAL scale */
    int32_t len;      /* CHAR/VARCHAR length, VARCHAR_UNBOUNDED for none;
                         TIMESTAMPTZ: the session time zone (tz.h id, 0 = UTC) */
    uint8_t elem;     /* ARRAY: the element's TypeKind (its prec, scale and
                         len are the fields above); else 0 */
    uint8_t spare[3]; /* zero: no padding, the struct is compared by memcmp */
} SqlType;

static inline SqlType type_make(TypeKind k, bool nullable)
{
    SqlType t = {(uint8_t)k, (uint8_t)nullable, 0, 0,
                 k == TK_TIMESTAMPTZ ? 0 : VARCHAR_UNBOUNDED, 0, {0, 0, 0}};
    return t;
}

/* TIMESTAMP WITH TIME ZONE shown and read in zone tz (a tz.h id). */
static inline SqlType type_tstz(int tz, bool nullable)
{
    SqlType t = {TK_TIMESTAMPTZ, (uint8_t)nullable, 0, 0, tz, 0, {0, 0, 0}};
    return t;
}

/* TIMESTAMP or TIMESTAMPTZ: microseconds since 1970 (local or UTC). */
static inline bool type_is_ts(TypeKind k) { return k == TK_TIMESTAMP || k == TK_TIMESTAMPTZ; }

static inline Phys type_phys(SqlType t)
{
    switch ((TypeKind)t.kind) {
    case TK_DECIMAL:
        return t.prec > DECIMAL64_MAX_PREC ? PHYS_I128 : PHYS_I64;
    case TK_REAL:
    case TK_DOUBLE:
        return PHYS_F64;
    case TK_CHAR:
    case TK_VARCHAR:
    case TK_ARRAY:
    case TK_ROW:
    case TK_MAP:
    case TK_VARIANT:
        return PHYS_STR;
    default:
        return PHYS_I64;
    }
}

static inline bool type_is_integer(TypeKind k)
{
    return k == TK_TINYINT || k == TK_SMALLINT || k == TK_INT || k == TK_BIGINT;
}
static inline bool type_is_numeric(TypeKind k)
{
    return type_is_integer(k) || k == TK_DECIMAL || k == TK_REAL || k == TK_DOUBLE;
}
static inline bool type_is_string(TypeKind k) { return k == TK_CHAR || k == TK_VARCHAR; }
static inline bool type_is_temporal(TypeKind k)
{
    return k == TK_DATE || k == TK_TIME || k == TK_TIMESTAMP || k == TK_TIMESTAMPTZ;
}

static inline bool type_is_interval(TypeKind k)
{
    return k == TK_INTERVAL_DT || k == TK_INTERVAL_YM;
}

/* An ARRAY of ARRAYs (elem TK_ARRAY) keeps the inner ARRAY type's
   expr/nested.h id in len: these two build and read it (nested.c). */
SqlType nest_array_of_arrays(SqlType inner, bool nullable);
SqlType nest_inner_array(SqlType t);

/* ARRAY of elements of type e (its nullability is ignored: an element may
   always be NULL, as in PostgreSQL). */
static inline SqlType type_array(SqlType e, bool nullable)
{
    if (e.kind == TK_ARRAY)
        return nest_array_of_arrays(e, nullable);
    SqlType t = e;
    t.kind = TK_ARRAY;
    t.elem = e.kind;
    t.nullable = (uint8_t)nullable;
    return t;
}
/* The element type of ARRAY t (nullable). */
static inline SqlType type_elem(SqlType t)
{
    if (t.kind == TK_ARRAY && t.elem == TK_ARRAY)
        return nest_inner_array(t);
    SqlType e = t;
    e.kind = t.elem;
    e.elem = 0;
    e.nullable = 1;
    return e;
}

/* Inclusive range of an integer kind (TINYINT: -128..127, ...). */
void type_int_range(TypeKind k, int64_t *lo, int64_t *hi);
/* "INT", "DECIMAL(10,2)", "VARCHAR(20)", ... into buf; returns buf. */
const char *type_name(SqlType t, char *buf, size_t size);
/* 10^n for 0 <= n <= 18. */
int64_t pow10_i64(int n);
/* 10^n for 0 <= n <= 38. */
i128 pow10_i128(int n);
/* A DECIMAL wider than the 64-bit path. */
/* The order-preserving encoding of a double (keys, zset/key.c; array
   elements, expr/array.c): unsigned comparison of the codes orders the
   values as SQL does, -0 equal to 0, every NaN equal and above +Infinity.
   f64_unorder inverts it (a NaN comes back as the one canonical NaN). */
static inline uint64_t f64_order(double d)
{
    uint64_t bits;
    if (isnan(d))
        bits = 0x7ff8000000000000ull;
    else {
        if (d == 0)
            d = 0.0;
        memcpy(&bits, &d, 8);
    }
    return (bits >> 63) ? ~bits : (bits | (1ull << 63));
}

static inline double f64_unorder(uint64_t u)
{
    uint64_t bits = (u >> 63) ? (u ^ (1ull << 63)) : ~u;
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

static inline bool type_is_wide(SqlType t)
{
    return t.kind == TK_DECIMAL && t.prec > DECIMAL64_MAX_PREC;
}

#endif
