/*
 * io/fmt_json.c - JSON-lines records <-> Chunk rows, without a DOM.
 *
 * In: one JSON text per record from an input transport (the caller splits
 * lines): {"insert": {row}} (+1), {"delete": {row}} (-1) or a plain {row}
 * (+1). fmt_json_parse scans it once, left to right, writing each member
 * straight into the chunk's next free row; n is bumped only when the whole
 * record was good, so a bad record leaves the chunk unchanged.
 * Out: fmt_json_row writes {"col":value,...} for output connectors.
 *
 * Row members map column names (matched case-insensitively; the next
 * column in order is tried first) to scalars. Strings take every JSON
 * escape (\uXXXX with surrogate pairs becomes UTF-8; \u0000 is refused since
 * values never hold NUL) and are read with text.h for any column type.
 * Numbers are read from their text: integers exactly with a range check,
 * DECIMAL through text_parse (exact, no double on the way), REAL/DOUBLE
 * with strtof/strtod. true/false fit BOOLEAN only; null and missing members
 * are NULL. Unknown or repeated members, nested values and anything after
 * the object are errors naming what was wrong. A record that is not valid
 * UTF-8 is refused whole (io/utf8.h), so every string value is valid UTF-8.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/mem.h"
#include "../expr/array.h"
#include "../expr/nested.h"
#include "../expr/variant.h"
#include "../expr/text.h"
#include "format.h"
#include "json_nested.h"
#include "utf8.h"

typedef struct JIn {
    const char *q, *end;
} JIn;

static inline void skip_ws(JIn *in)
{
    while (in->q < in->end &&
           (*in->q == ' ' || *in->q == '\t' || *in->q == '\n' || *in->q == '\r'))
        in->q++;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int read_u16(const char *p, const char *end, uint32_t *out)
{
    uint32_t v = 0;
    if (end - p < 4)
        return -1;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p[k]);
        if (h < 0)
            return -1;
        v = v << 4 | (uint32_t)h;
    }
    *out = v;
    return 0;
}

/*
 * Scan the string starting at in->q (on its opening quote). On success
 * in->q is past the closing quote, *raw and *rawn span the bytes between the
 * quotes and *esc says whether they hold escapes. NULL, or why not.
 */
static const char *scan_string(JIn *in, const char **raw, size_t *rawn, bool *esc)
{
    const char *p = in->q + 1;
    *esc = false;
    for (; p < in->end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            *raw = in->q + 1;
            *rawn = (size_t)(p - *raw);
            in->q = p + 1;
            return NULL;
        }
        if (c == '\\') {
            *esc = true;
            p++;
            if (p == in->end)
                break;
        } else if (c < 0x20) {
            return "control character in string";
        }
    }
    return "unterminated string";
}

/* Decode escapes of raw[0..n) into d (room for n bytes); *dn = length. */
static const char *unescape(const char *raw, size_t n, char *d, size_t *dn)
{
    const char *p = raw, *end = raw + n;
    size_t k = 0;
    while (p < end) {
        if (*p != '\\') {
            d[k++] = *p++;
            continue;
        }
        p++; /* scan_string guarantees a byte follows */
        char c = *p++;
        switch (c) {
        case '"': d[k++] = '"'; break;
        case '\\': d[k++] = '\\'; break;
        case '/': d[k++] = '/'; break;
        case 'b': d[k++] = '\b'; break;
        case 'f': d[k++] = '\f'; break;
        case 'n': d[k++] = '\n'; break;
        case 'r': d[k++] = '\r'; break;
        case 't': d[k++] = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (read_u16(p, end, &cp))
                return "invalid \\u escape";
            p += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return "unpaired surrogate in \\u escape";
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || read_u16(p + 2, end, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return "unpaired surrogate in \\u escape";
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0)
                return "\\u0000 is not allowed in a value";
            /* UTF-8 is never longer than the 6 or 12 escape bytes it replaces */
            if (cp < 0x80) {
                d[k++] = (char)cp;
            } else if (cp < 0x800) {
                d[k++] = (char)(0xC0 | (cp >> 6));
                d[k++] = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                d[k++] = (char)(0xE0 | (cp >> 12));
                d[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                d[k++] = (char)(0x80 | (cp & 0x3F));
            } else {
                d[k++] = (char)(0xF0 | (cp >> 18));
                d[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                d[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                d[k++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: return "invalid escape in string";
        }
    }
    *dn = k;
    return NULL;
}

/* JSON number at in->q: moves past it; *plain when it has no '.' or
   exponent. false when it is not a well-formed number. */
static bool scan_number(JIn *in, bool *plain)
{
    const char *p = in->q, *end = in->end;
#define DIGIT(x) ((x) >= '0' && (x) <= '9')
    *plain = true;
    if (p < end && *p == '-')
        p++;
    if (p == end || !DIGIT(*p))
        return false;
    if (*p == '0')
        p++;
    else
        while (p < end && DIGIT(*p))
            p++;
    if (p < end && *p == '.') {
        p++;
        if (p == end || !DIGIT(*p))
            return false;
        while (p < end && DIGIT(*p))
            p++;
        *plain = false;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !DIGIT(*p))
            return false;
        while (p < end && DIGIT(*p))
            p++;
        *plain = false;
    }
#undef DIGIT
    in->q = p;
    return true;
}

static bool match_word(JIn *in, const char *w, size_t n)
{
    if ((size_t)(in->end - in->q) < n || memcmp(in->q, w, n) != 0)
        return false;
    in->q += n;
    return true;
}

static int col_err(Err *err, const RowSchema *s, int j, const char *why)
{
    return err_set(err, SL_EDATA, "column \"%s\": %s", s->names[j], why);
}

/* Store text[0..n) into row r of v through text_parse. */
static int put_text(const RowSchema *s, int j, Vec *v, int64_t r, const char *text, size_t n,
                    Arena *a, Err *err)
{
    Err e;
    err_init(&e);
    if (text_parse_vec(v, r, text, n, a, &e))
        return col_err(err, s, j, e.msg);
    return 0;
}

/* Integer text -?[0-9]+ into *out when it fits kind k. */
static bool fast_int(const char *p, size_t n, TypeKind k, int64_t *out)
{
    bool neg = *p == '-';
    size_t i = neg;
    if (n - i > 19)
        return false;
    uint64_t v = 0;
    for (; i < n; i++)
        v = v * 10 + (uint64_t)(p[i] - '0'); /* <= 19 digits: no wrap */
    int64_t lo, hi;
    type_int_range(k, &lo, &hi);
    if (neg ? v > (uint64_t)hi + 1 : v > (uint64_t)hi)
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/*
 * Clinger's fast path: a decimal with at most 15 significant digits and a
 * power of ten up to 22 away is m / 10^k or m * 10^k with both operands
 * exact doubles, so one IEEE operation gives the correctly rounded value
 * (what strtod returns). Returns false for anything else.
 */
static bool exact_double(const char *p, size_t n, double *out)
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = 0;
    bool neg = p[0] == '-';
    int64_t m = 0;
    int digits = 0, frac = 0, exp10 = 0;
    i += neg;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
        if (m || p[i] != '0')
            digits++;
        m = m * 10 + (p[i] - '0');
        if (digits > 15)
            return false;
    }
    if (i < n && p[i] == '.') {
        for (i++; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
            if (m || p[i] != '0')
                digits++;
            m = m * 10 + (p[i] - '0');
            frac++;
            if (digits > 15)
                return false;
        }
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        bool eneg = false;
        int e = 0;
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            eneg = p[i++] == '-';
        for (; i < n && p[i] >= '0' && p[i] <= '9'; i++)
            if ((e = e * 10 + (p[i] - '0')) > 400)
                return false;
        exp10 = eneg ? -e : e;
    }
    if (i != n)
        return false;
    int k = exp10 - frac;
    if (k < -22 || k > 22)
        return false;
    double v = (double)m; /* exact: m < 10^15 < 2^53 */
    v = k < 0 ? v / p10[-k] : v * p10[k];
    *out = neg ? -v : v;
    return true;
}

static bool fast_float(const char *p, size_t n, bool real, double *out)
{
    if (!real && exact_double(p, n, out))
        return true;
    char buf[64];
    if (n >= sizeof(buf))
        return false;
    memcpy(buf, p, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    double v = real ? (double)strtof(buf, &e) : strtod(buf, &e);
    if (e != buf + n || (errno == ERANGE && isinf(v)))
        return false;
    *out = v;
    return true;
}

/* The value at in->q for column j into row r. */
/* A JSON array [v, ...] (in->q at '[') into row r of ARRAY column j:
   each element null, true/false, a number or a string, read as the
   element type reads text. */
static int parse_array(const RowSchema *s, int j, JIn *in, Vec *v, int64_t r, Arena *a,
                       Err *err)
{
    SqlType et = type_elem(v->t);
    Phys ph = type_phys(et);
    Buf enc = BUF_INIT;
    int rc = 0;
    in->q++;
    skip_ws(in);
    bool first = true;
    while (!rc) {
        if (in->q < in->end && *in->q == ']' && first) {
            in->q++;
            break;
        }
        skip_ws(in);
        if (in->q == in->end) {
            rc = col_err(err, s, j, "unterminated JSON array");
            break;
        }
        char c = *in->q;
        ArrElem e = {0};
        const char *text = NULL, *why;
        size_t n = 0;
        if (c == 'n' && match_word(in, "null", 4)) {
            e.null = true;
        } else if (c == 't' && match_word(in, "true", 4)) {
            text = "true", n = 4;
        } else if (c == 'f' && match_word(in, "false", 5)) {
            text = "false", n = 5;
        } else if (c == '"') {
            const char *raw;
            bool esc;
            if ((why = scan_string(in, &raw, &n, &esc))) {
                rc = col_err(err, s, j, why);
                break;
            }
            text = raw;
            if (esc) {
                char *d = arena_alloc(a, n ? n : 1);
                if ((why = unescape(raw, n, d, &n))) {
                    rc = col_err(err, s, j, why);
                    break;
                }
                text = d;
            }
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            bool plain;
            text = in->q;
            if (!scan_number(in, &plain)) {
                rc = col_err(err, s, j, "invalid JSON number");
                break;
            }
            n = (size_t)(in->q - text);
        } else {
            rc = col_err(err, s, j, c == '[' || c == '{'
                                        ? "nested arrays and objects in an array are not supported"
                                        : "invalid JSON value in an array");
            break;
        }
        if (text) {
            Err ee;
            err_init(&ee);
            if (ph == PHYS_I128 ? text_parse_dec(et, text, n, &e.x, &ee)
                                : text_parse(et, text, n, a, &e.i, &e.f, &e.s, &ee)) {
                rc = col_err(err, s, j, ee.msg);
                break;
            }
        }
        arr_put(&enc, ph, &e);
        first = false;
        skip_ws(in);
        if (in->q < in->end && *in->q == ',') {
            in->q++;
            continue;
        }
        if (in->q < in->end && *in->q == ']') {
            in->q++;
            break;
        }
        rc = col_err(err, s, j, "expected ',' or ']' in a JSON array");
    }
    if (!rc) {
        char *d = enc.n ? arena_alloc(a, enc.n) : NULL;
        if (d)
            memcpy(d, enc.p, enc.n);
        v->s[r] = (Str){d ? d : "", (uint32_t)enc.n};
    }
    buf_free(&enc);
    return rc;
}

/* Any JSON value (in->q at its start) into row r of VARIANT column j; a
   bare null is SQL NULL for a nullable column (parse_value), JSON null
   for a NOT NULL one. */
static int parse_variant(const RowSchema *s, int j, JIn *in, Vec *v, int64_t r, Arena *a,
                         Err *err)
{
    Buf enc = BUF_INIT;
    size_t used;
    const char *why = var_parse_json_prefix(in->q, (size_t)(in->end - in->q), &used, &enc);
    if (why) {
        buf_free(&enc);
        char m[96];
        snprintf(m, sizeof(m), "invalid JSON for a VARIANT (%s)", why);
        return col_err(err, s, j, m);
    }
    in->q += used;
    if (v->nul)
        v->nul[r] = 0;
    char *d = arena_alloc(a, enc.n);
    memcpy(d, enc.p, enc.n);
    v->s[r] = (Str){d, (uint32_t)enc.n};
    buf_free(&enc);
    return 0;
}

static int parse_value(const RowSchema *s, int j, JIn *in, Chunk *out, int64_t r, Arena *a,
                       Err *err)
{
    Vec *v = &out->col[j];
    TypeKind k = (TypeKind)v->t.kind;
    if (in->q == in->end)
        return err_set(err, SL_EDATA, "unexpected end of record");
    char c = *in->q;
    if (k == TK_VARIANT && !(c == 'n' && v->nul))
        return parse_variant(s, j, in, v, r, a, err);
    if (c == 'n') {
        if (!match_word(in, "null", 4))
            return col_err(err, s, j, "invalid JSON value");
        if (!v->nul)
            return err_set(err, SL_EDATA, "column \"%s\" is NOT NULL", s->names[j]);
        vec_set_null(v, r);
        return 0;
    }
    if (v->nul)
        v->nul[r] = 0;
    if (c == 't' || c == 'f') {
        bool t = c == 't';
        if (!(t ? match_word(in, "true", 4) : match_word(in, "false", 5)))
            return col_err(err, s, j, "invalid JSON value");
        if (k != TK_BOOL) {
            char tn[48], why[96];
            snprintf(why, sizeof(why), "invalid %s value %s", type_name(v->t, tn, sizeof(tn)),
                     t ? "true" : "false");
            return col_err(err, s, j, why);
        }
        v->i[r] = t;
        return 0;
    }
    if (c == '"') {
        const char *raw, *why;
        size_t n;
        bool esc;
        if ((why = scan_string(in, &raw, &n, &esc)))
            return col_err(err, s, j, why);
        if (!esc)
            return put_text(s, j, v, r, raw, n, a, err);
        char *d = arena_alloc(a, n);
        size_t dn;
        if ((why = unescape(raw, n, d, &dn)))
            return col_err(err, s, j, why);
        if (k == TK_VARCHAR && v->t.len == VARCHAR_UNBOUNDED) {
            v->s[r] = (Str){d, (uint32_t)dn}; /* already in the arena, nothing to check */
            return 0;
        }
        return put_text(s, j, v, r, d, dn, a, err);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        const char *num = in->q;
        bool plain;
        if (!scan_number(in, &plain))
            return col_err(err, s, j, "invalid JSON number");
        size_t n = (size_t)(in->q - num);
        if (plain && type_is_integer(k) && fast_int(num, n, k, &v->i[r]))
            return 0;
        if ((k == TK_DOUBLE || k == TK_REAL) && fast_float(num, n, k == TK_REAL, &v->f[r]))
            return 0;
        return put_text(s, j, v, r, num, n, a, err);
    }
    if ((c == '{' || c == '[') && type_has_nested(v->t)) { /* json_nested.c */
        size_t used;
        Err ee;
        err_init(&ee);
        int rc = json_nested_parse(v->t, in->q, (size_t)(in->end - in->q), &used, a, &v->s[r], &ee);
        in->q += used;
        return rc ? col_err(err, s, j, ee.msg) : 0;
    }
    if (c == '[' && k == TK_ARRAY)
        return parse_array(s, j, in, v, r, a, err);
    if (c == '{' || c == '[')
        return col_err(err, s, j, "nested objects and arrays are not supported");
    return col_err(err, s, j, "invalid JSON value");
}

/* Column named name[0..n), case-insensitively; hint is tried first. */
static int find_col(const RowSchema *s, const char *name, size_t n, int hint)
{
    if (hint < s->ncol && strncmp(s->names[hint], name, n) == 0 && s->names[hint][n] == 0)
        return hint; /* the usual case: the next column, spelled as declared */
    if (hint < s->ncol && strncasecmp(s->names[hint], name, n) == 0 && s->names[hint][n] == 0)
        return hint;
    for (int j = 0; j < s->ncol; j++)
        if (strncasecmp(s->names[j], name, n) == 0 && s->names[j][n] == 0)
            return j;
    return -1;
}

/* Members of a row object; in->q is just past its '{'. With partial,
   missing members are no error: they get NULL, or a zero value in a NOT
   NULL column (the caller knows them from seen[]). */
static int parse_row(const RowSchema *s, JIn *in, Chunk *out, int64_t r, Arena *a,
                     uint8_t *seen, bool partial, Err *err)
{
    int hint = 0;
    skip_ws(in);
    if (in->q < in->end && *in->q == '}') {
        in->q++;
    } else {
        for (;;) {
            const char *raw, *why;
            size_t n;
            bool esc;
            char kbuf[256];
            if (in->q == in->end || *in->q != '"')
                return err_set(err, SL_EDATA, "expected a member name");
            if ((why = scan_string(in, &raw, &n, &esc)))
                return err_set(err, SL_EDATA, "member name: %s", why);
            if (esc) {
                char *d = n <= sizeof(kbuf) ? kbuf : arena_alloc(a, n);
                if ((why = unescape(raw, n, d, &n)))
                    return err_set(err, SL_EDATA, "member name: %s", why);
                raw = d;
            }
            int j = find_col(s, raw, n, hint);
            if (j < 0)
                return err_set(err, SL_EDATA, "unknown member \"%.*s\"", (int)SL_MIN(n, 200),
                               raw);
            if (seen[j])
                return err_set(err, SL_EDATA, "duplicate member \"%s\"", s->names[j]);
            seen[j] = 1;
            hint = j + 1;
            skip_ws(in);
            if (in->q == in->end || *in->q != ':')
                return err_set(err, SL_EDATA, "expected ':' after member \"%s\"", s->names[j]);
            in->q++;
            skip_ws(in);
            int rc = parse_value(s, j, in, out, r, a, err);
            if (rc)
                return rc;
            skip_ws(in);
            if (in->q < in->end && *in->q == ',') {
                in->q++;
                skip_ws(in);
                continue;
            }
            if (in->q < in->end && *in->q == '}') {
                in->q++;
                break;
            }
            return err_set(err, SL_EDATA, "expected ',' or '}' after member \"%s\"",
                           s->names[j]);
        }
    }
    for (int j = 0; j < s->ncol; j++) {
        if (seen[j])
            continue;
        Vec *v = &out->col[j];
        if (v->nul) {
            vec_set_null(v, r);
        } else if (partial) {
            vec_zero(v, r);
        } else {
            return err_set(err, SL_EDATA, "column \"%s\" is NOT NULL", s->names[j]);
        }
    }
    return 0;
}

static bool wrapper_name(const char *raw, size_t n, bool update, int *kind)
{
    if (n == 6 && memcmp(raw, "insert", 6) == 0)
        *kind = JSON_REC_INSERT;
    else if (n == 6 && memcmp(raw, "delete", 6) == 0)
        *kind = JSON_REC_DELETE;
    else if (update && n == 6 && memcmp(raw, "update", 6) == 0)
        *kind = JSON_REC_UPDATE;
    else
        return false;
    return true;
}

static const char *const kind_name[] = {"insert", "delete", "update"};

static int parse_record(const RowSchema *s, JIn *in, Chunk *out, int64_t r, Arena *a,
                        uint8_t *seen, const JsonRecOpts *o, int *kind, Err *err)
{
    skip_ws(in);
    if (in->q == in->end || *in->q != '{')
        return err_set(err, SL_EDATA, "expected a JSON object");
    in->q++;
    const char *body = in->q;
    int k = JSON_REC_INSERT;
    bool wrapped = false;
    skip_ws(in);
    if (!o->raw && in->q < in->end && *in->q == '"') {
        /* {"insert": {...}} or {"delete": {...}}: a name then an object */
        const char *raw;
        size_t n;
        bool esc;
        if (!scan_string(in, &raw, &n, &esc) && !esc && wrapper_name(raw, n, o->update, &k)) {
            skip_ws(in);
            if (in->q < in->end && *in->q == ':') {
                in->q++;
                skip_ws(in);
                if (in->q < in->end && *in->q == '{')
                    wrapped = true;
            }
        }
    }
    if (!wrapped) {
        k = JSON_REC_INSERT;
        in->q = body;
        int rc = parse_row(s, in, out, r, a, seen, false, err);
        if (rc)
            return rc;
    } else {
        in->q++;
        bool partial = k == JSON_REC_UPDATE || (k == JSON_REC_DELETE && o->partial_delete);
        int rc = parse_row(s, in, out, r, a, seen, partial, err);
        if (rc)
            return rc;
        skip_ws(in);
        if (in->q < in->end && *in->q == ',')
            return err_set(err, SL_EDATA, "unexpected member after \"%s\"", kind_name[k]);
        if (in->q == in->end || *in->q != '}')
            return err_set(err, SL_EDATA, "expected '}' to close the record");
        in->q++;
    }
    skip_ws(in);
    if (in->q != in->end)
        return err_set(err, SL_EDATA, "unexpected text after the JSON object");
    out->w[r] = k == JSON_REC_DELETE ? -1 : 1;
    *kind = k;
    return 0;
}

int fmt_json_parse_rec(const RowSchema *s, const char *p, size_t n, const JsonRecOpts *o,
                       Chunk *out, Arena *a, uint8_t *present, int *kind, Err *err)
{
    uint8_t small[64];
    uint8_t *seen = present ? present
                    : s->ncol <= (int)sizeof(small) ? small
                                                    : sl_malloc((size_t)s->ncol);
    JIn in = {p, p + n};
    int k = JSON_REC_INSERT;
    if (out->n >= out->cap)
        sl_panic("fmt_json_parse: chunk full (%lld rows)", (long long)out->cap);
    size_t ok = utf8_valid_prefix(p, n);
    if (ok < n) {
        if (kind)
            *kind = k;
        return err_set(err, SL_EDATA, "invalid UTF-8 at byte %zu of the record (0x%02x)", ok + 1,
                       (unsigned)(unsigned char)p[ok]);
    }
    memset(seen, 0, (size_t)s->ncol);
    int rc = parse_record(s, &in, out, out->n, a, seen, o, &k, err);
    if (!rc)
        out->n++;
    if (kind)
        *kind = k;
    if (seen != small && seen != present)
        sl_free(seen);
    return rc;
}

int fmt_json_parse(const RowSchema *s, const char *p, size_t n, Chunk *out, Arena *a, Err *err)
{
    static const JsonRecOpts plain = {false, false, false};
    return fmt_json_parse_rec(s, p, n, &plain, out, a, NULL, NULL, err);
}

/* ---------------------------------------------------------------- debezium */

/* Skip the JSON value at in->q (objects and arrays to any depth); NULL or
   why not. Only the envelope's members we do not read go through here. */
static const char *skip_value(JIn *in)
{
    int depth = 0;
    do {
        skip_ws(in);
        if (in->q == in->end)
            return "unexpected end of the record";
        char c = *in->q;
        const char *raw, *why;
        size_t n;
        bool esc, plain;
        if (c == '{' || c == '[') {
            depth++;
            in->q++;
        } else if (c == '}' || c == ']') {
            if (--depth < 0)
                return "unbalanced brackets";
            in->q++;
        } else if (c == '"') {
            if ((why = scan_string(in, &raw, &n, &esc)))
                return why;
        } else if (c == ',' || c == ':') {
            if (!depth)
                return "unexpected ',' or ':'";
            in->q++;
        } else if (!match_word(in, "true", 4) && !match_word(in, "false", 5) &&
                   !match_word(in, "null", 4) && !scan_number(in, &plain)) {
            return "malformed value";
        }
    } while (depth > 0);
    return NULL;
}

typedef struct Envelope {
    const char *op;
    size_t opn;
    const char *before, *after; /* object spans, NULL when absent or null */
    size_t beforen, aftern;
    bool payload;
} Envelope;

/* Members of the object at in->q: op, before, after (and payload, when
   top is set: the envelope of Kafka Connect's JSON converter with schemas). */
static int scan_envelope(JIn *in, Envelope *e, bool top, Err *err)
{
    skip_ws(in);
    if (in->q == in->end || *in->q != '{')
        return err_set(err, SL_EDATA, "expected a JSON object");
    in->q++;
    skip_ws(in);
    if (in->q < in->end && *in->q == '}') {
        in->q++;
        return 0;
    }
    for (;;) {
        const char *raw, *why;
        size_t n;
        bool esc;
        skip_ws(in);
        if (in->q == in->end || *in->q != '"')
            return err_set(err, SL_EDATA, "expected a member name");
        if ((why = scan_string(in, &raw, &n, &esc)))
            return err_set(err, SL_EDATA, "member name: %s", why);
        skip_ws(in);
        if (in->q == in->end || *in->q != ':')
            return err_set(err, SL_EDATA, "expected ':' after member \"%.*s\"",
                           (int)SL_MIN(n, 64), raw);
        in->q++;
        skip_ws(in);
        const char *v = in->q;
#define IS(w) (n == sizeof(w) - 1 && !esc && memcmp(raw, w, n) == 0)
        if (top && IS("payload") && in->q < in->end && *in->q == '{') {
            e->payload = true;
            int rc = scan_envelope(in, e, false, err);
            if (rc)
                return rc;
        } else if (IS("op") && in->q < in->end && *in->q == '"') {
            if ((why = scan_string(in, &e->op, &e->opn, &esc)))
                return err_set(err, SL_EDATA, "\"op\": %s", why);
        } else if ((IS("before") || IS("after")) && match_word(in, "null", 4)) {
            /* absent row image */
        } else {
            if ((why = skip_value(in)))
                return err_set(err, SL_EDATA, "member \"%.*s\": %s", (int)SL_MIN(n, 64), raw,
                               why);
            if (IS("before")) {
                e->before = v;
                e->beforen = (size_t)(in->q - v);
            } else if (IS("after")) {
                e->after = v;
                e->aftern = (size_t)(in->q - v);
            }
        }
#undef IS
        skip_ws(in);
        if (in->q < in->end && *in->q == ',') {
            in->q++;
            continue;
        }
        if (in->q < in->end && *in->q == '}') {
            in->q++;
            return 0;
        }
        return err_set(err, SL_EDATA, "expected ',' or '}' in the change event");
    }
}

int fmt_json_parse_debezium(const RowSchema *s, const char *p, size_t n, Chunk *out, Arena *a,
                            int *rows, Err *err)
{
    static const JsonRecOpts raw = {true, false, false};
    Envelope e = {0};
    JIn in = {p, p + n};
    *rows = 0;
    int rc = scan_envelope(&in, &e, true, err);
    if (rc)
        return rc;
    skip_ws(&in);
    if (in.q != in.end)
        return err_set(err, SL_EDATA, "unexpected text after the JSON object");
    if (!e.op)
        return err_set(err, SL_EDATA, "the change event has no \"op\"");
    char op = e.opn == 1 ? e.op[0] : '?';
    bool del = op == 'u' || op == 'd', ins = op == 'c' || op == 'r' || op == 'u';
    if (!del && !ins)
        return err_set(err, SL_EDATA,
                       "\"op\": \"%.*s\" is not c, r, u or d (truncate and messages are not "
                       "supported)",
                       (int)SL_MIN(e.opn, 16), e.op);
    if (del && !e.before)
        return err_set(err, SL_EDATA,
                       "\"op\": \"%c\" needs the old row in \"before\" (REPLICA IDENTITY FULL)",
                       op);
    if (ins && !e.after)
        return err_set(err, SL_EDATA, "\"op\": \"%c\" needs the new row in \"after\"", op);
    if (out->cap - out->n < 2)
        sl_panic("fmt_json_parse_debezium: chunk full (%lld rows)", (long long)out->cap);
    if (del) {
        if ((rc = fmt_json_parse_rec(s, e.before, e.beforen, &raw, out, a, NULL, NULL, err)))
            return rc;
        out->w[out->n - 1] = -1;
        (*rows)++;
    }
    if (ins) {
        if ((rc = fmt_json_parse_rec(s, e.after, e.aftern, &raw, out, a, NULL, NULL, err))) {
            out->n -= *rows; /* the record as a whole is bad */
            *rows = 0;
            return rc;
        }
        (*rows)++;
    }
    return 0;
}

/* s[0..n) as a JSON string. */
static void put_json_str(Buf *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t from = 0;
    buf_putc(out, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        buf_append(out, s + from, i - from);
        from = i + 1;
        char e[7] = {'\\', 0};
        switch (c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        default:
            e[1] = 'u';
            e[2] = '0';
            e[3] = '0';
            e[4] = hex[c >> 4];
            e[5] = hex[c & 15];
            buf_append(out, e, 6);
            continue;
        }
        buf_append(out, e, 2);
    }
    if (from < n) /* (s may be NULL when n is 0: an empty element's text) */
        buf_append(out, s + from, n - from);
    buf_putc(out, '"');
}

/* ARRAY value v of type t as a JSON array: numbers and booleans bare, the
   other elements (dates, strings, NaN) as strings. */
static void put_json_array(SqlType t, Str v, Buf *out)
{
    SqlType et = type_elem(t);
    TypeKind k = (TypeKind)et.kind;
    ArrIt it;
    ArrElem e;
    Buf one = BUF_INIT;
    bool first = true;
    arr_it(&it, t, v);
    buf_putc(out, '[');
    while (arr_next(&it, &e)) {
        if (!first)
            buf_putc(out, ',');
        first = false;
        if (e.null) {
            buf_puts(out, "null");
            continue;
        }
        buf_reset(&one);
        if (type_is_wide(et))
            text_format_dec(e.x, et.scale, &one);
        else
            text_format(et, e.i, e.f, e.s, &one);
        bool bare = k == TK_BOOL || (type_is_numeric(k) && (type_phys(et) != PHYS_F64 || isfinite(e.f)));
        if (bare)
            buf_append(out, one.p, one.n);
        else
            put_json_str(out, (const char *)one.p, one.n);
    }
    buf_putc(out, ']');
    buf_free(&one);
    arr_it_done(&it);
}

void fmt_json_row(const RowSchema *s, const Chunk *c, int64_t r, Buf *out)
{
    buf_putc(out, '{');
    for (int j = 0; j < c->ncol; j++) {
        const Vec *v = &c->col[j];
        TypeKind k = (TypeKind)v->t.kind;
        if (j)
            buf_putc(out, ',');
        put_json_str(out, s->names[j], strlen(s->names[j]));
        buf_putc(out, ':');
        if (vec_is_null(v, r)) {
            buf_puts(out, "null");
        } else if (type_has_nested(v->t)) {
            json_nested_put(v->t, v->s[r], out);
        } else if (k == TK_ARRAY) {
            put_json_array(v->t, v->s[r], out);
        } else if (k == TK_VARIANT) { /* the JSON value itself */
            var_to_json(v->s[r], out);
        } else if (v->s) {
            put_json_str(out, v->s[r].p, v->s[r].n);
        } else if (type_is_temporal(k) || type_is_interval(k) || (v->f && !isfinite(v->f[r]))) {
            buf_putc(out, '"'); /* NaN and infinities are no JSON numbers */
            text_format_vec(v, r, out);
            buf_putc(out, '"');
        } else {
            text_format_vec(v, r, out); /* true/false, digits, decimals, doubles */
        }
    }
    buf_putc(out, '}');
}

const char *fmt_json__unescape(const char *raw, size_t n, char *d, size_t *dn)
{
    return unescape(raw, n, d, dn);
}

void fmt_json__put_str(Buf *out, const char *s, size_t n) { put_json_str(out, s, n); }
