/*
 * expr/text.c - values to and from text (see text.h for the canonical format).
 * In: bytes of one field from a CSV/JSON parser, a SQL literal, or a string
 * being CAST (expr/eval_cast.c). Out: the value in its physical class
 * (int64 / double / Str copied into the caller's arena), or canonical text
 * appended to a Buf for --dump, CSV/JSON output and CAST to VARCHAR.
 *
 * Parsing is strict: the whole field (spaces around it aside, for non-string
 * types) must be one value of the type, in range; anything else is SL_EDATA
 * with a message that quotes the text and names the type. Formatting never
 * fails and is the inverse of parsing (format, then parse, gives the value).
 */
#include "text.h"
#include "array.h"
#include "nested.h"
#include "variant.h"

#include "expr_int.h"
#include "tz.h"

#include "../base/mem.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define US_PER_SEC 1000000LL
#define US_PER_DAY 86400000000LL
#define QUOTE_MAX 64 /* bytes of the offending text quoted in a message */

/* ---------------------------------------------------------------- helpers */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static char lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c; }

static bool eq_nocase(const char *s, size_t n, const char *word)
{
    size_t k = strlen(word);
    if (k != n)
        return false;
    for (size_t j = 0; j < n; j++)
        if (lower_ascii(s[j]) != word[j])
            return false;
    return true;
}

/* Characters (UTF-8 lead bytes) in s[0..n). */
static size_t utf8_len(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t j = 0; j < n; j++)
        c += ((uint8_t)s[j] & 0xC0) != 0x80;
    return c;
}


static int bad_value(Err *err, SqlType t, const char *s, size_t n)
{
    char tn[48];
    type_name(t, tn, sizeof(tn));
    if (n > QUOTE_MAX)
        return err_set(err, SL_EDATA, "invalid %s value \"%.*s...\"", tn, QUOTE_MAX, s);
    return err_set(err, SL_EDATA, "invalid %s value \"%.*s\"", tn, (int)n, s);
}

static int out_of_range(Err *err, SqlType t, const char *s, size_t n)
{
    char tn[48];
    type_name(t, tn, sizeof(tn));
    if (n > QUOTE_MAX)
        return err_set(err, SL_EDATA, "value %.*s... out of range for %s", QUOTE_MAX, s, tn);
    return err_set(err, SL_EDATA, "value %.*s out of range for %s", (int)n, s, tn);
}

/* ------------------------------------------------------------- calendar */

/* Howard Hinnant's days_from_civil / civil_from_days. */
int64_t date_from_ymd(int y, int m, int d)
{
    int64_t yy = (int64_t)y - (m <= 2);
    int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
    int64_t yoe = yy - era * 400;
    int64_t mp = (m + 9) % 12;
    int64_t doy = (153 * mp + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void date_to_ymd(int64_t days, int *y, int *m, int *d)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t dd = doy - (153 * mp + 2) / 5 + 1;
    int64_t mm = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)(yoe + era * 400 + (mm <= 2));
    *m = (int)mm;
    *d = (int)dd;
}

static int days_in_month(int y, int m)
{
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return (m == 2 && leap) ? 29 : dm[m - 1];
}

/* ---------------------------------------------------------------- parsing */

/* Reads 1..maxd digits at s[*p]; returns false when there is none. */
static bool read_uint(const char *s, size_t n, size_t *p, int maxd, int64_t *v)
{
    size_t j = *p;
    int64_t x = 0;
    int k = 0;
    while (j < n && is_digit(s[j]) && k < maxd) {
        x = x * 10 + (s[j] - '0');
        j++, k++;
    }
    if (k == 0)
        return false;
    *p = j;
    *v = x;
    return true;
}

/* YYYY-MM-DD at s[*p]; advances *p. */
static bool scan_date(const char *s, size_t n, size_t *p, int64_t *days)
{
    int64_t y, m, d;
    size_t j = *p;
    if (!read_uint(s, n, &j, 4, &y) || j >= n || s[j] != '-')
        return false;
    j++;
    if (!read_uint(s, n, &j, 2, &m) || j >= n || s[j] != '-')
        return false;
    j++;
    if (!read_uint(s, n, &j, 2, &d))
        return false;
    if (j < n && is_digit(s[j]))
        return false;
    if (y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > days_in_month((int)y, (int)m))
        return false;
    *days = date_from_ymd((int)y, (int)m, (int)d);
    *p = j;
    return true;
}

/* HH:MM[:SS[.f]] at s[*p]; microseconds since midnight (may reach 24:00
 * only through rounding of the fraction). */
static bool scan_time(const char *s, size_t n, size_t *p, int64_t *us)
{
    int64_t h, mi, sec = 0, frac = 0;
    size_t j = *p;
    if (!read_uint(s, n, &j, 2, &h) || j >= n || s[j] != ':')
        return false;
    j++;
    if (!read_uint(s, n, &j, 2, &mi))
        return false;
    if (j < n && s[j] == ':') {
        j++;
        if (!read_uint(s, n, &j, 2, &sec))
            return false;
        if (j < n && s[j] == '.') {
            j++;
            int k = 0;
            bool round_up = false;
            while (j < n && is_digit(s[j])) {
                if (k < 6)
                    frac = frac * 10 + (s[j] - '0');
                else if (k == 6)
                    round_up = s[j] >= '5';
                j++, k++;
            }
            if (k == 0)
                return false;
            for (int z = k; z < 6; z++)
                frac *= 10;
            frac += round_up;
        }
    }
    if (j < n && is_digit(s[j]))
        return false;
    if (h > 23 || mi > 59 || sec > 59)
        return false;
    *us = ((h * 60 + mi) * 60 + sec) * US_PER_SEC + frac;
    *p = j;
    return true;
}

/* A zone after a timestamp: Z, [+-]HH[[:]MM[[:]SS]] (east of UTC, as ISO
 * 8601 and PostgreSQL's output), or a tz database name. Sets *fixed and
 * *off (seconds) for the first two, *zone for a name; false when malformed. */
static bool scan_zone(const char *s, size_t n, size_t p, bool *fixed, int64_t *off, int *zone,
                      Err *err)
{
    if (p + 1 == n && (s[p] == 'Z' || s[p] == 'z')) {
        *fixed = true;
        *off = 0;
        return true;
    }
    if (s[p] == '+' || s[p] == '-') {
        int sign = s[p] == '-' ? -1 : 1;
        int64_t v[3] = {0, 0, 0};
        size_t j = p + 1;
        for (int k = 0; k < 3 && (k == 0 || j < n); k++) { /* hours required */
            if (k && s[j] == ':')
                j++;
            size_t j0 = j;
            if (!read_uint(s, n, &j, 2, &v[k]) || j - j0 != 2)
                return false;
        }
        if (j != n || v[0] > 15 || v[1] > 59 || v[2] > 59)
            return false;
        *fixed = true;
        *off = sign * (v[0] * 3600 + v[1] * 60 + v[2]);
        return true;
    }
    *fixed = false;
    return (*zone = tz_find(s + p, n - p, err)) >= 0;
}

/* TIMESTAMP WITH TIME ZONE: a TIMESTAMP's text, then optionally a zone
 * (scan_zone) after the time or a space; without one the time is local
 * time of t's session zone. */
static int parse_tstz(SqlType t, const char *s, size_t n, int64_t *i, Err *err)
{
    size_t p = 0;
    int64_t days, us = 0;
    if (!scan_date(s, n, &p, &days))
        return bad_value(err, t, s, n);
    if (p < n && (s[p] == ' ' || s[p] == 'T')) {
        size_t q = p + 1;
        while (q < n && s[q] == ' ')
            q++;
        if (q < n && is_digit(s[q])) {
            if (!scan_time(s, n, &q, &us))
                return bad_value(err, t, s, n);
            p = q;
        }
    }
    while (p < n && s[p] == ' ')
        p++;
    int64_t local = days * US_PER_DAY + us;
    if (p == n) {
        *i = tz_local_to_utc_us(t.len, local);
        return 0;
    }
    bool fixed;
    int64_t off = 0;
    int zone = 0;
    Err ze;
    err_init(&ze);
    if (!scan_zone(s, n, p, &fixed, &off, &zone, &ze)) {
        if (ze.code)
            return err_set(err, SL_EDATA, "invalid TIMESTAMP WITH TIME ZONE value \"%.*s\": %s",
                           (int)(n > 64 ? 64 : n), s, ze.msg);
        return bad_value(err, t, s, n);
    }
    *i = fixed ? local - off * US_PER_SEC : tz_local_to_utc_us(zone, local);
    return 0;
}

static int parse_int(SqlType t, const char *s, size_t n, int64_t *out, Err *err)
{
    size_t j = 0;
    bool neg = false;
    if (j < n && (s[j] == '+' || s[j] == '-'))
        neg = s[j++] == '-';
    if (j == n)
        return bad_value(err, t, s, n);
    uint64_t v = 0;
    bool big = false;
    for (; j < n; j++) {
        if (!is_digit(s[j]))
            return bad_value(err, t, s, n);
        unsigned dg = (unsigned)(s[j] - '0');
        if (v > (UINT64_MAX - dg) / 10)
            big = true;
        else
            v = v * 10 + dg;
    }
    int64_t lo, hi; /* lo == -hi - 1 */
    type_int_range((TypeKind)t.kind, &lo, &hi);
    if (big || (!neg && v > (uint64_t)hi) || (neg && v > (uint64_t)hi + 1))
        return out_of_range(err, t, s, n);
    *out = neg ? -(int64_t)(v - 1) - 1 : (int64_t)v;
    return 0;
}

static int parse_bool(SqlType t, const char *s, size_t n, int64_t *out, Err *err)
{
    static const char *yes[] = {"true", "t", "yes", "y", "on", "1"};
    static const char *no[] = {"false", "f", "no", "n", "off", "0"};
    for (size_t k = 0; k < ARRAY_LEN(yes); k++) {
        if (eq_nocase(s, n, yes[k])) {
            *out = 1;
            return 0;
        }
        if (eq_nocase(s, n, no[k])) {
            *out = 0;
            return 0;
        }
    }
    return bad_value(err, t, s, n);
}

/*
 * DECIMAL: [sign] digits [. digits] [e [sign] digits], rounded half away from
 * zero to t.scale (as PostgreSQL rounds numeric input); at most prec - scale
 * integer digits after rounding, else out of range. Any precision up to 38
 * (the value is built in 128 bits).
 */
static int parse_decimal(SqlType t, const char *s, size_t n, i128 *out, Err *err)
{
    int prec = t.prec ? t.prec : DECIMAL_MAX_PREC;
    int scale = t.scale;
    size_t j = 0;
    bool neg = false;
    if (j < n && (s[j] == '+' || s[j] == '-'))
        neg = s[j++] == '-';
    /* significant digits (leading zeros dropped): first is at position
     * 10^(point-1) of the value */
    char dg[48];
    int nd = 0, point = 0, ndig = 0;
    bool seen_point = false;
    for (; j < n; j++) {
        char c = s[j];
        if (c == '.') {
            if (seen_point)
                return bad_value(err, t, s, n);
            seen_point = true;
            continue;
        }
        if (!is_digit(c))
            break;
        ndig++;
        if (nd == 0 && c == '0') {
            if (seen_point)
                point--;
            continue;
        }
        if (nd < (int)sizeof(dg)) /* more never matter: at most 38 digits are kept */
            dg[nd++] = c;
        if (!seen_point)
            point++;
    }
    if (ndig == 0)
        return bad_value(err, t, s, n);
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        j++;
        bool eneg = false;
        if (j < n && (s[j] == '+' || s[j] == '-'))
            eneg = s[j++] == '-';
        if (j == n || !is_digit(s[j]))
            return bad_value(err, t, s, n);
        int64_t ex = 0;
        for (; j < n && is_digit(s[j]); j++)
            if (ex < 100000)
                ex = ex * 10 + (s[j] - '0');
        point += (int)(eneg ? -ex : ex);
    }
    if (j != n)
        return bad_value(err, t, s, n);
    if (nd == 0) {
        *out = 0;
        return 0;
    }
    /* the value scaled by 10^scale has point + scale integer digits */
    int want = point + scale;
    if (want > prec)
        return out_of_range(err, t, s, n);
    i128 v = 0;
    for (int k = 0; k < want; k++)
        v = v * 10 + (k < nd ? dg[k] - '0' : 0);
    if (want >= 0 && want < nd && dg[want] >= '5')
        v++;
    if (v >= pow10_i128(prec))
        return out_of_range(err, t, s, n);
    *out = neg ? -v : v;
    return 0;
}

int text_parse_dec(SqlType t, const char *s, size_t n, i128 *out, Err *err)
{
    while (n > 0 && is_space(*s))
        s++, n--;
    while (n > 0 && is_space(s[n - 1]))
        n--;
    return parse_decimal(t, s, n, out, err);
}

static int parse_float(SqlType t, const char *s, size_t n, double *out, Err *err)
{
    char stack[64];
    char *buf = n < sizeof(stack) ? stack : sl_malloc(n + 1);
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    int rc = 0;
    errno = 0;
    double v;
    if (t.kind == TK_REAL)
        v = strtof(buf, &end);
    else
        v = strtod(buf, &end);
    if (n == 0 || end != buf + n || memchr(buf, 'x', n) || memchr(buf, 'X', n))
        rc = bad_value(err, t, s, n);
    else if (errno == ERANGE && isinf(v))
        rc = out_of_range(err, t, s, n);
    else
        *out = v;
    if (buf != stack)
        sl_free(buf);
    return rc;
}

static int parse_string(SqlType t, const char *s, size_t n, Arena *a, Str *out, Err *err)
{
    char tn[48];
    if (n > UINT32_MAX - 1)
        return err_set(err, SL_EDATA, "value too long for %s", type_name(t, tn, sizeof(tn)));
    if (memchr(s, 0, n))
        return err_set(err, SL_EDATA, "invalid NUL byte in %s value",
                       type_name(t, tn, sizeof(tn)));
    size_t chars = 0;
    if (t.len >= 0) {
        chars = utf8_len(s, n);
        if (chars > (size_t)t.len) {
            /* excess trailing spaces are cut, as the standard says */
            size_t keep = expr__utf8_offset(s, n, (size_t)t.len);
            for (size_t j = keep; j < n; j++)
                if (s[j] != ' ')
                    return err_set(err, SL_EDATA, "value too long for %s",
                                   type_name(t, tn, sizeof(tn)));
            n = keep;
            chars = (size_t)t.len;
        }
    }
    size_t pad = (t.kind == TK_CHAR && t.len >= 0) ? (size_t)t.len - chars : 0;
    if (n + pad == 0) {
        out->p = "";
        out->n = 0;
        return 0;
    }
    char *p = arena_alloc(a, n + pad);
    memcpy(p, s, n);
    memset(p + n, ' ', pad);
    out->p = p;
    out->n = (uint32_t)(n + pad);
    return 0;
}

/* An ISO 8601 duration [-]P[nY][nM][nW][nD][T[nH][nM][n[.f]S]] as an
   interval: months (dt false: only Y and M) or microseconds (dt true:
   W, D, H, M, S; a day is 24 hours). false when malformed or too large. */
static bool parse_iso_duration(const char *s, size_t n, bool dt, int64_t *out)
{
    size_t p = 0;
    bool neg = s[0] == '-';
    p += neg;
    p++; /* P */
    bool time = false, any = false;
    __int128 total = 0;
    while (p < n) {
        if (s[p] == 'T' || s[p] == 't') {
            if (time)
                return false;
            time = true;
            p++;
            continue;
        }
        size_t d0 = p;
        __int128 whole = 0;
        while (p < n && s[p] >= '0' && s[p] <= '9' && p - d0 < 15)
            whole = whole * 10 + (s[p++] - '0');
        if (p == d0 || p >= n)
            return false;
        int64_t frac = 0; /* microseconds of a fractional second */
        if (s[p] == '.' || s[p] == ',') {
            p++;
            int64_t scale = 100000;
            size_t f0 = p;
            while (p < n && s[p] >= '0' && s[p] <= '9') {
                frac += (s[p++] - '0') * scale;
                scale /= 10;
            }
            if (p == f0 || p >= n || (s[p] != 'S' && s[p] != 's'))
                return false;
        }
        char u = (char)(s[p++] | 0x20);
        int64_t mul;
        if (!dt) {
            if (time || (u != 'y' && u != 'm'))
                return false;
            mul = u == 'y' ? 12 : 1;
        } else if (!time) {
            if (u != 'w' && u != 'd')
                return false;
            mul = (u == 'w' ? 7 : 1) * US_PER_DAY;
        } else {
            if (u != 'h' && u != 'm' && u != 's')
                return false;
            mul = u == 'h' ? 3600000000LL : u == 'm' ? 60000000LL : 1000000LL;
        }
        total += whole * mul + frac;
        if (total > INT64_MAX)
            return false;
        any = true;
    }
    if (!any)
        return false;
    *out = neg ? -(int64_t)total : (int64_t)total;
    return true;
}

int text_parse(SqlType t, const char *s, size_t n, Arena *a, int64_t *i, double *f, Str *str,
               Err *err)
{
    /* callers pass NULL for the outputs their type does not use */
    int64_t i_unused;
    double f_unused;
    Str s_unused;
    i = i ? i : &i_unused;
    f = f ? f : &f_unused;
    str = str ? str : &s_unused;
    if (type_is_string((TypeKind)t.kind))
        return parse_string(t, s, n, a, str, err);
    if (t.kind == TK_ARRAY)
        return arr_parse_text(t, s, n, a, str, err);
    if (t.kind == TK_ROW || t.kind == TK_MAP)
        return nest_parse_text(t, s, n, a, str, err);
    if (t.kind == TK_VARIANT) /* JSON text */
        return var_parse_text(s, n, a, str, err);
    const char *s0 = s;
    size_t n0 = n;
    while (n > 0 && is_space(*s))
        s++, n--;
    while (n > 0 && is_space(s[n - 1]))
        n--;
    switch ((TypeKind)t.kind) {
    case TK_BOOL: return parse_bool(t, s, n, i, err);
    case TK_TINYINT:
    case TK_SMALLINT:
    case TK_INT:
    case TK_BIGINT: return parse_int(t, s, n, i, err);
    case TK_DECIMAL: {
        i128 v;
        int rc;
        if (NEVER(type_is_wide(t))) /* callers use text_parse_dec */
            return err_set(err, SL_EDATA, "a wide DECIMAL parsed through text_parse");
        if ((rc = parse_decimal(t, s, n, &v, err)))
            return rc;
        *i = (int64_t)v;
        return 0;
    }
    case TK_REAL:
    case TK_DOUBLE: return parse_float(t, s, n, f, err);
    case TK_DATE: {
        size_t p = 0;
        if (!scan_date(s, n, &p, i) || p != n)
            return bad_value(err, t, s, n);
        return 0;
    }
    case TK_TIME: {
        size_t p = 0;
        if (!scan_time(s, n, &p, i) || p != n || *i >= US_PER_DAY)
            return bad_value(err, t, s, n);
        return 0;
    }
    case TK_TIMESTAMP: {
        size_t p = 0;
        int64_t days, us = 0;
        if (!scan_date(s, n, &p, &days))
            return bad_value(err, t, s, n);
        if (p < n && (s[p] == ' ' || s[p] == 'T')) {
            p++;
            while (p < n && s[p] == ' ')
                p++;
            if (!scan_time(s, n, &p, &us))
                return bad_value(err, t, s, n);
            if (p + 1 == n && s[p] == 'Z') /* ISO 8601 UTC marker: no zone to apply */
                p++;
        }
        if (p != n)
            return bad_value(err, t, s, n);
        *i = days * US_PER_DAY + us;
        return 0;
    }
    case TK_TIMESTAMPTZ: return parse_tstz(t, s, n, i, err);
    case TK_INTERVAL_DT:
    case TK_INTERVAL_YM: {
        /* canonical text: [-]D HH:MM:SS[.f] / [-]Y-M; a bare [-]D is days;
           or an ISO 8601 duration */
        bool ym, dt = t.kind == TK_INTERVAL_DT;
        if (n && (s[0] == 'P' || s[0] == 'p' || (n > 1 && s[0] == '-' && (s[1] == 'P' || s[1] == 'p')))) {
            if (!parse_iso_duration(s, n, dt, i))
                return bad_value(err, t, s, n);
            return 0;
        }
        size_t sp = 0;
        while (sp < n && s[sp] != ' ')
            sp++;
        int to = dt ? (sp < n ? TU_SECOND : -1) : (memchr(s, '-', n) &&
                 memchr(s + 1, '-', n > 1 ? n - 1 : 0) ? TU_MONTH : -1);
        if (interval_parse(s, n, dt ? TU_DAY : TU_YEAR, to, i, &ym, err))
            return bad_value(err, t, s, n);
        return 0;
    }
    case TK_NULL:
    case TK_CHAR:
    case TK_VARCHAR:
    case TK_ARRAY:
    case TK_ROW:
    case TK_MAP:
    case TK_VARIANT: break;
    }
    char tn[48];
    return err_set(err, SL_EDATA, "cannot read a %s value from text \"%.*s\"",
                   type_name(t, tn, sizeof(tn)), (int)SL_MIN(n0, QUOTE_MAX), s0);
}

/* ------------------------------------------------------------- formatting */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void format_double(double f, bool real, Buf *out)
{
    if (isnan(f)) {
        buf_puts(out, "NaN");
        return;
    }
    if (isinf(f)) {
        buf_puts(out, f < 0 ? "-Infinity" : "Infinity");
        return;
    }
    char tmp[40];
    if (real) {
        float x = (float)f;
        for (int p = 6; p <= 9; p++) {
            snprintf(tmp, sizeof(tmp), "%.*g", p, (double)x);
            if (p == 9 || strtof(tmp, NULL) == x)
                break;
        }
    } else {
        for (int p = 15; p <= 17; p++) {
            snprintf(tmp, sizeof(tmp), "%.*g", p, f);
            if (p == 17 || strtod(tmp, NULL) == f)
                break;
        }
    }
    buf_puts(out, tmp);
}

void text_format_dec(i128 v, int scale, Buf *out)
{
    unsigned __int128 a = v < 0 ? (unsigned __int128)0 - (unsigned __int128)v
                                : (unsigned __int128)v;
    if (scale > DECIMAL_MAX_PREC) /* outside the type's contract; print something */
        scale = DECIMAL_MAX_PREC;
    if (scale < 0)
        scale = 0;
    char d[48];
    int nd = 0;
    do { /* digits, least significant first; at least scale + 1 of them */
        d[nd++] = (char)('0' + (int)(a % 10));
        a /= 10;
    } while (a || nd <= scale);
    char txt[52];
    int k = 0;
    if (v < 0)
        txt[k++] = '-';
    for (int j = nd - 1; j >= 0; j--) {
        txt[k++] = d[j];
        if (j == scale && scale > 0)
            txt[k++] = '.';
    }
    buf_append(out, txt, (size_t)k);
}

static void format_decimal(int64_t v, int scale, Buf *out)
{
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (scale > DECIMAL64_MAX_PREC) /* outside the type's contract; print something */
        scale = DECIMAL64_MAX_PREC;
    if (scale <= 0) {
        buf_printf(out, "%s%llu", v < 0 ? "-" : "", (unsigned long long)a);
        return;
    }
    uint64_t p = (uint64_t)pow10_i64(scale);
    buf_printf(out, "%s%llu.%0*llu", v < 0 ? "-" : "", (unsigned long long)(a / p), scale,
               (unsigned long long)(a % p));
}

static void format_date(int64_t days, Buf *out)
{
    int y, m, d;
    date_to_ymd(days, &y, &m, &d);
    buf_printf(out, "%04d-%02d-%02d", y, m, d);
}

static void format_time(int64_t us, Buf *out)
{
    int64_t sec = us / US_PER_SEC, frac = us % US_PER_SEC;
    buf_printf(out, "%02d:%02d:%02d", (int)(sec / 3600), (int)(sec / 60 % 60), (int)(sec % 60));
    if (frac) {
        int w = 6;
        while (frac % 10 == 0)
            frac /= 10, w--;
        buf_printf(out, ".%0*lld", w, (long long)frac);
    }
}

static void format_interval(TypeKind k, int64_t i, Buf *out);

void text_format(SqlType t, int64_t i, double f, Str s, Buf *out)
{
    switch ((TypeKind)t.kind) {
    case TK_NULL: buf_puts(out, "NULL"); break;
    case TK_BOOL: buf_puts(out, i ? "true" : "false"); break;
    case TK_TINYINT:
    case TK_SMALLINT:
    case TK_INT:
    case TK_BIGINT: buf_printf(out, "%lld", (long long)i); break;
    case TK_DECIMAL: format_decimal(i, t.scale, out); break;
    case TK_REAL: format_double(f, true, out); break;
    case TK_DOUBLE: format_double(f, false, out); break;
    case TK_CHAR:
    case TK_VARCHAR: buf_append(out, s.p, s.n); break;
    case TK_ARRAY: arr_format_text(t, s, out); break;
    case TK_ROW:
    case TK_MAP: nest_format_text(t, s, out); break;
    case TK_VARIANT: var_to_json(s, out); break;
    case TK_DATE: format_date(i, out); break;
    case TK_TIME: {
        int64_t us = i - floor_div(i, US_PER_DAY) * US_PER_DAY;
        format_time(us, out);
        break;
    }
    case TK_TIMESTAMP: {
        int64_t days = floor_div(i, US_PER_DAY);
        format_date(days, out);
        buf_putc(out, ' ');
        format_time(i - days * US_PER_DAY, out);
        break;
    }
    case TK_TIMESTAMPTZ: {
        int64_t sec = floor_div(i, US_PER_SEC);
        int64_t off = i > TZ_US_LIMIT || i < -TZ_US_LIMIT ? 0 : tz_offset(t.len, sec);
        int64_t local = i + off * US_PER_SEC;
        int64_t days = floor_div(local, US_PER_DAY);
        format_date(days, out);
        buf_putc(out, ' ');
        format_time(local - days * US_PER_DAY, out);
        int64_t a = off < 0 ? -off : off;
        buf_printf(out, "%c%02d", off < 0 ? '-' : '+', (int)(a / 3600));
        if (a % 3600)
            buf_printf(out, ":%02d", (int)(a / 60 % 60));
        if (a % 60)
            buf_printf(out, ":%02d", (int)(a % 60));
        break;
    }
    case TK_INTERVAL_DT:
    case TK_INTERVAL_YM: format_interval((TypeKind)t.kind, i, out); break;
    }
}

static const char *const unit_names[TU__COUNT] = {
    "YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND",
    "MICROSECOND",
};

const char *time_unit_name(int u) { return u >= 0 && u < TU__COUNT ? unit_names[u] : "?"; }

int time_unit_parse(const char *s)
{
    size_t n = strlen(s);
    for (int u = 0; u < TU__COUNT; u++) {
        size_t l = strlen(unit_names[u]);
        if ((n == l || (n == l + 1 && (s[l] == 's' || s[l] == 'S'))) && !strncasecmp(s, unit_names[u], l))
            return u;
    }
    return -1;
}

int interval_parse(const char *s, size_t n, int from, int to, int64_t *out, bool *ym, Err *err)
{
    static const int64_t us_of[TU__COUNT] = {0, 0, 0, 7 * US_PER_DAY, US_PER_DAY,
                                             3600 * US_PER_SEC, 60 * US_PER_SEC, US_PER_SEC,
                                             1000, 1};
    static const int64_t limit[TU__COUNT] = {0, 0, 12, 0, 0, 24, 60, 60, 1000, 1000000};
    size_t s_n = n;
    const char *s0 = s;
    while (n > 0 && is_space(*s))
        s++, n--;
    while (n > 0 && is_space(s[n - 1]))
        n--;
    if (to < 0)
        to = from;
    *ym = from <= TU_MONTH;
    bool bad = from < 0 || to < from || from >= TU__COUNT || to >= TU__COUNT ||
               from == TU_QUARTER || (*ym && to > TU_MONTH) || (from == TU_WEEK && to != from);
    size_t p = 0;
    bool neg = false;
    if (p < n && (s[p] == '-' || s[p] == '+'))
        neg = s[p++] == '-';
    __int128 total = 0;
    for (int u = from; !bad && u <= to; u++) {
        if (u == TU_QUARTER || u == TU_WEEK)
            continue;
        if (u > from) {
            char sep = u == TU_MONTH ? '-' : u == TU_HOUR ? ' ' : u == TU_MILLISECOND ? '.' : ':';
            if (u >= TU_MILLISECOND) { /* fraction of SECOND: handled below */
                bad = true;
                break;
            }
            if (p >= n || s[p] != sep) {
                bad = true;
                break;
            }
            p++;
        }
        size_t q = p;
        int64_t v = 0;
        while (p < n && is_digit(s[p]) && p - q < 15)
            v = v * 10 + (s[p++] - '0');
        if (p == q || (p < n && is_digit(s[p]))) {
            bad = true;
            break;
        }
        if (u > from && limit[u] && v >= limit[u])
            bad = true;
        int64_t scale = u == TU_YEAR ? 12 : u == TU_MONTH ? 1 : us_of[u];
        total += (__int128)v * scale;
        if (u == TU_SECOND && u == to && p < n && s[p] == '.') { /* fraction */
            p++;
            int64_t f = 0, w = 0;
            while (p < n && is_digit(s[p])) {
                if (w < 6)
                    f = f * 10 + (s[p] - '0'), w++;
                p++;
            }
            if (w == 0)
                bad = true;
            while (w++ < 6)
                f *= 10;
            total += f;
        }
    }
    if (bad || p != n || total > INT64_MAX)
        return err_set(err, SL_EDATA, "invalid INTERVAL '%.*s' %s%s%s", (int)SL_MIN(s_n, QUOTE_MAX),
                       s0, time_unit_name(from), to != from ? " TO " : "",
                       to != from ? time_unit_name(to) : "");
    *out = neg ? -(int64_t)total : (int64_t)total;
    return 0;
}

static void format_interval(TypeKind k, int64_t i, Buf *out)
{
    uint64_t a = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
    if (k == TK_INTERVAL_YM) {
        buf_printf(out, "%s%llu-%llu", i < 0 ? "-" : "", (unsigned long long)(a / 12),
                   (unsigned long long)(a % 12));
        return;
    }
    buf_printf(out, "%s%llu ", i < 0 ? "-" : "", (unsigned long long)(a / US_PER_DAY));
    format_time((int64_t)(a % US_PER_DAY), out);
}

int text_parse_vec(Vec *v, int64_t r, const char *s, size_t n, Arena *a, Err *err)
{
    int64_t iv = 0;
    double fv = 0;
    Str sv = {"", 0};
    if (v->x)
        return text_parse_dec(v->t, s, n, &v->x[r], err);
    int rc = text_parse(v->t, s, n, a, &iv, &fv, &sv, err);
    if (rc)
        return rc;
    if (v->i)
        v->i[r] = iv;
    else if (v->f)
        v->f[r] = fv;
    else
        v->s[r] = sv;
    return 0;
}

bool text_format_vec(const Vec *v, int64_t r, Buf *out)
{
    if (vec_is_null(v, r))
        return false;
    static const Str empty = {"", 0};
    if (v->x) {
        text_format_dec(v->x[r], v->t.scale, out);
        return true;
    }
    text_format(v->t, v->i ? v->i[r] : 0, v->f ? v->f[r] : 0.0, v->s ? v->s[r] : empty, out);
    return true;
}
