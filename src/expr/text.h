/*
 * expr/text.h - values to and from text: CSV/JSON fields, SQL literals,
 * CAST between strings and other types, and the canonical output format.
 *
 * Canonical text (used by --dump, CSV and JSON output, CAST to VARCHAR):
 *   BOOLEAN   true / false
 *   integers  decimal digits, '-' for negatives
 *   DECIMAL   digits with exactly `scale` fractional digits ("12.50", "-0.07")
 *   REAL/DOUBLE  shortest text that reads back to the same value ("0.1",
 *             "1e+20" style from %.17g trimmed), "NaN", "Infinity", "-Infinity"
 *   DATE      YYYY-MM-DD
 *   TIME      HH:MM:SS[.ffffff] (fraction only when non-zero, trailing zeros cut)
 *   TIMESTAMP YYYY-MM-DD HH:MM:SS[.ffffff] (same rule)
 *   TIMESTAMPTZ the local time in the type's session zone, then its offset
 *             as PostgreSQL shows it: "2024-03-10 03:00:00-04", "+05:30"
 *   INTERVAL DAY TO SECOND  [-]D HH:MM:SS[.ffffff] (days, then the time of
 *             the absolute value: "1 02:00:00", "-0 00:00:10")
 *   INTERVAL YEAR TO MONTH  [-]Y-M ("1-2" is 14 months)
 *   strings   as they are
 *   VARIANT   compact JSON, object keys sorted (expr/variant.h)
 */
#ifndef SL_EXPR_TEXT_H
#define SL_EXPR_TEXT_H

#include "../base/arena.h"
#include "../base/buf.h"
#include "../base/err.h"
#include "chunk.h"

/*
 * Parse text s[0..n) as a value of type t (not NULL: callers decide what
 * text means NULL). Integers must fit t's range; DECIMAL is rounded half
 * away from zero to t.scale and must fit t.prec; strings are copied into a
 * (CHAR(n) padded with spaces to n; a VARCHAR(n)/CHAR(n) value longer than n
 * is an error; a NUL byte is an error). Leading/trailing spaces are ignored
 * for non-string types. DATE accepts YYYY-MM-DD; TIME HH:MM[:SS[.f]];
 * TIMESTAMP 'YYYY-MM-DD[ T]HH:MM[:SS[.f]]' or a bare date (midnight);
 * TIMESTAMPTZ the same, then optionally Z, an offset [+-]HH[[:]MM[[:]SS]] or
 * a zone name ('2024-03-10 10:00 Europe/Paris'); without one, local time
 * in the session zone (t.len).
 * On success stores into *i, *f or *s (per type_phys) and returns 0; else
 * returns SL_EDATA with a message like `invalid INT value "12x"`.
 */
int text_parse(SqlType t, const char *s, size_t n, Arena *a, int64_t *i, double *f, Str *str,
               Err *err);
/* DECIMAL text as in text_parse into 128 bits, for any precision (the
   wide DECIMALs, p > 18, go through here: text_parse refuses them). */
int text_parse_dec(SqlType t, const char *s, size_t n, i128 *out, Err *err);
/* The same into row r of v (of type v->t; its NULL flag is left alone). */
int text_parse_vec(Vec *v, int64_t r, const char *s, size_t n, Arena *a, Err *err);

/* Append value (i, f or s per type_phys(t)) in canonical text to out. */
void text_format(SqlType t, int64_t i, double f, Str s, Buf *out);
/* A DECIMAL of any precision: v scaled by 10^scale, canonical text. */
void text_format_dec(i128 v, int scale, Buf *out);
/* Same for row r of v; a NULL appends nothing and returns false. */
bool text_format_vec(const Vec *v, int64_t r, Buf *out);

/* Units of interval literals and DATE_TRUNC / TIMESTAMPDIFF, coarsest first. */
typedef enum TimeUnit {
    TU_YEAR, TU_QUARTER, TU_MONTH, TU_WEEK, TU_DAY, TU_HOUR, TU_MINUTE, TU_SECOND,
    TU_MILLISECOND, TU_MICROSECOND, TU__COUNT
} TimeUnit;
/* Unit named s (case-insensitive, singular or plural), or -1. */
int time_unit_parse(const char *s);
const char *time_unit_name(int u);

/*
 * The value of INTERVAL 's' from [TO to] (to = -1 for a single unit):
 * months for YEAR/MONTH units (*ym = true), else microseconds. Forms:
 * '[-]N' for one unit (SECOND may have a fraction), 'Y-M' YEAR TO MONTH,
 * 'D H[:M[:S[.f]]]' DAY TO HOUR/MINUTE/SECOND, 'H:M[:S]', 'M:S'. Returns 0
 * or SL_EDATA with a message naming the literal.
 */
int interval_parse(const char *s, size_t n, int from, int to, int64_t *out, bool *ym, Err *err);

/* Calendar helpers: days since 1970-01-01 <-> y/m/d (proleptic Gregorian). */
int64_t date_from_ymd(int y, int m, int d);
void date_to_ymd(int64_t days, int *y, int *m, int *d);
/* days (since 1970-01-01) shifted by `months` calendar months, the day
   clamped to the month's end (2024-01-31 + 1 month = 2024-02-29); false
   when out of range (fn_time.c). */
bool date_shift_months(int64_t days, int64_t months, int64_t *out);

#endif
