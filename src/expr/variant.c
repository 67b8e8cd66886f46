/*
 * expr/variant.c - VARIANT values (the encoding is described in variant.h):
 * a JSON parser that writes the canonical encoding directly (objects sorted
 * as they close), the JSON printer, member and element access, and the
 * conversions between VARIANT and the other SQL types.
 */
#include "variant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "array.h"
#include "nested.h"
#include "text.h"

#define EXP_BIAS (1 << 20)
#define EXP_MAX  (1 << 19)

/* ---- strings ---- */

void var_put_string(Buf *out, const char *s, size_t n)
{
    buf_reserve(out, n + 2);
    out->p[out->n++] = VAR_STR;
    size_t run = 0; /* bytes not yet copied: none of them 0x01 or 0x02 */
    for (size_t k = 0; k < n; k++) {
        uint8_t c = (uint8_t)s[k];
        if (c == 0x01 || c == 0x02) {
            buf_append(out, s + run, k - run);
            buf_putc(out, 0x02);
            buf_putc(out, (char)(c + 1));
            run = k + 1;
        }
    }
    if (n > run) /* s may be NULL when n is 0 (an empty key) */
        buf_append(out, s + run, n - run);
    buf_putc(out, VAR_END);
}

/* Past the escaped bytes and the 0x01 at p (a string's body or a key). */
static const uint8_t *skip_str(const uint8_t *p, const uint8_t *end)
{
    while (p < end && *p != VAR_END)
        p += *p == 0x02 ? 2 : 1;
    return p < end ? p + 1 : end;
}

/* Unescape the body at p into out; returns the position past it. */
static const uint8_t *get_str(const uint8_t *p, const uint8_t *end, Buf *out)
{
    while (p < end && *p != VAR_END) {
        if (*p == 0x02 && p + 1 < end) {
            buf_putc(out, (char)(p[1] - 1));
            p += 2;
        } else {
            buf_putc(out, (char)*p++);
        }
    }
    return p < end ? p + 1 : end;
}

/* ---- numbers ---- */

static void put_e3(Buf *out, uint32_t x)
{
    buf_putc(out, (char)(0x80 | ((x >> 14) & 0x7f)));
    buf_putc(out, (char)(0x80 | ((x >> 7) & 0x7f)));
    buf_putc(out, (char)(0x80 | (x & 0x7f)));
}

static uint32_t get_e3(const uint8_t *p)
{
    return ((uint32_t)(p[0] & 0x7f) << 14) | ((uint32_t)(p[1] & 0x7f) << 7) | (p[2] & 0x7f);
}

bool var_put_number(Buf *out, const char *s, size_t n)
{
    size_t k = 0;
    bool neg = false;
    if (k < n && (s[k] == '-' || s[k] == '+'))
        neg = s[k++] == '-';
    /* significant digits: D, with the decimal point P digits after its
       start (before leading zeros are cut) */
    char dig[64];
    size_t nd = 0;
    int64_t point = 0;
    bool any = false, seen_point = false, nonzero = false;
    char *big = NULL;
    size_t bigcap = 0;
    char *d = dig;
    size_t cap = sizeof(dig);
    for (; k < n; k++) {
        char c = s[k];
        if (c == '.' && !seen_point) {
            seen_point = true;
            continue;
        }
        if (c < '0' || c > '9')
            break;
        any = true;
        if (!nonzero && c == '0') { /* a leading zero: not a digit of D */
            if (seen_point)
                point--;
            continue;
        }
        if (!seen_point)
            point++;
        nonzero = true;
        if (nd == cap) {
            bigcap = cap * 2;
            char *nb = realloc(big, bigcap);
            if (!nb)
                abort();
            if (!big)
                memcpy(nb, dig, nd);
            big = d = nb;
            cap = bigcap;
        }
        d[nd++] = c;
    }
    if (!any) {
        free(big);
        return false;
    }
    int64_t ex = 0;
    if (k < n && (s[k] == 'e' || s[k] == 'E')) {
        k++;
        bool eneg = false;
        if (k < n && (s[k] == '-' || s[k] == '+'))
            eneg = s[k++] == '-';
        if (k == n || s[k] < '0' || s[k] > '9') {
            free(big);
            return false;
        }
        for (; k < n && s[k] >= '0' && s[k] <= '9'; k++)
            if (ex < 100000000)
                ex = ex * 10 + (s[k] - '0');
        ex = eneg ? -ex : ex;
    }
    if (k != n) {
        free(big);
        return false;
    }
    while (nd > 0 && d[nd - 1] == '0')
        nd--;
    if (nd == 0) {
        buf_putc(out, VAR_ZERO);
        free(big);
        return true;
    }
    int64_t e = point + ex;
    if (e >= EXP_MAX || e <= -EXP_MAX) {
        free(big);
        return false;
    }
    uint32_t be = (uint32_t)(e + EXP_BIAS);
    buf_putc(out, neg ? VAR_NEG : VAR_POS);
    put_e3(out, neg ? (uint32_t)(2 * EXP_BIAS - 1) - be : be);
    for (size_t j = 0; j < nd; j++)
        buf_putc(out, (char)(neg ? 0x19 - (d[j] - '0') : 0x10 + (d[j] - '0')));
    buf_putc(out, neg ? 0x20 : VAR_END);
    free(big);
    return true;
}

/* The number at p (its tag there): sign, exponent E and digits ('0'..'9')
   into dg; returns the position past it. */
static const uint8_t *get_number(const uint8_t *p, const uint8_t *end, bool *neg, int64_t *e,
                                 Buf *dg)
{
    uint8_t tag = *p++;
    *neg = tag == VAR_NEG;
    *e = 0;
    if (tag == VAR_ZERO)
        return p;
    if (end - p < 3)
        return end;
    uint32_t be = get_e3(p);
    p += 3;
    if (*neg)
        be = (uint32_t)(2 * EXP_BIAS - 1) - be;
    *e = (int64_t)be - EXP_BIAS;
    uint8_t stop = *neg ? 0x20 : VAR_END;
    while (p < end && *p != stop) {
        buf_putc(dg, (char)('0' + (*neg ? 0x19 - *p : *p - 0x10)));
        p++;
    }
    return p < end ? p + 1 : end;
}

/* Decimal text of 0.D * 10^e (sign neg): plain digits for moderate
   exponents, else d.ddde[+-]x. */
static void number_text(bool neg, int64_t e, const char *d, size_t nd, bool plain, Buf *out)
{
    if (nd == 0) {
        buf_putc(out, '0');
        return;
    }
    if (neg)
        buf_putc(out, '-');
    if (e > 0 && (e <= 21 || plain)) {
        for (int64_t j = 0; j < e; j++)
            buf_putc(out, j < (int64_t)nd ? d[j] : '0');
        if ((int64_t)nd > e) {
            buf_putc(out, '.');
            buf_append(out, d + e, nd - (size_t)e);
        }
    } else if (e <= 0 && (e > -6 || plain)) {
        buf_puts(out, "0.");
        for (int64_t j = 0; j < -e; j++)
            buf_putc(out, '0');
        buf_append(out, d, nd);
    } else {
        buf_putc(out, d[0]);
        if (nd > 1) {
            buf_putc(out, '.');
            buf_append(out, d + 1, nd - 1);
        }
        buf_printf(out, "e%s%lld", e - 1 < 0 ? "-" : "+", (long long)llabs(e - 1));
    }
}

/* ---- the JSON parser ---- */

typedef struct JP {
    const char *p, *end;
    int depth;
} JP;

static void ws(JP *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p[k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static void put_utf8(Buf *b, uint32_t cp)
{
    if (cp < 0x80) {
        buf_putc(b, (char)cp);
    } else if (cp < 0x800) {
        buf_putc(b, (char)(0xc0 | (cp >> 6)));
        buf_putc(b, (char)(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        buf_putc(b, (char)(0xe0 | (cp >> 12)));
        buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
        buf_putc(b, (char)(0x80 | (cp & 0x3f)));
    } else {
        buf_putc(b, (char)(0xf0 | (cp >> 18)));
        buf_putc(b, (char)(0x80 | ((cp >> 12) & 0x3f)));
        buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
        buf_putc(b, (char)(0x80 | (cp & 0x3f)));
    }
}

/* Length of the valid UTF-8 sequence at p (0 when invalid). */
static size_t utf8_len(const uint8_t *p, const uint8_t *end)
{
    uint8_t c = p[0];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0)
        n = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        n = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        n = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* The JSON string at j->p (at its '"'), unescaped into raw. */
static const char *parse_string(JP *j, Buf *raw)
{
    j->p++;
    for (;;) {
        if (j->p >= j->end)
            return "unterminated string";
        uint8_t c = (uint8_t)*j->p;
        if (c == '"') {
            j->p++;
            return NULL;
        }
        if (c < 0x20)
            return "control character in a string";
        if (c >= 0x20 && c < 0x80 && c != '\\') { /* a run of plain ASCII */
            const char *q = j->p + 1;
            while (q < j->end && (uint8_t)*q >= 0x20 && (uint8_t)*q < 0x80 && *q != '"' &&
                   *q != '\\')
                q++;
            buf_append(raw, j->p, (size_t)(q - j->p));
            j->p = q;
            continue;
        }
        if (c != '\\') {
            size_t l = utf8_len((const uint8_t *)j->p, (const uint8_t *)j->end);
            if (!l)
                return "invalid UTF-8 in a string";
            buf_append(raw, j->p, l);
            j->p += l;
            continue;
        }
        if (j->end - j->p < 2)
            return "unterminated string";
        char e = j->p[1];
        j->p += 2;
        switch (e) {
        case '"': buf_putc(raw, '"'); break;
        case '\\': buf_putc(raw, '\\'); break;
        case '/': buf_putc(raw, '/'); break;
        case 'b': buf_putc(raw, '\b'); break;
        case 'f': buf_putc(raw, '\f'); break;
        case 'n': buf_putc(raw, '\n'); break;
        case 'r': buf_putc(raw, '\r'); break;
        case 't': buf_putc(raw, '\t'); break;
        case 'u': {
            int h = j->end - j->p >= 4 ? hex4(j->p) : -1;
            if (h < 0)
                return "invalid \\u escape";
            j->p += 4;
            uint32_t cp = (uint32_t)h;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                int lo = j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u' ? hex4(j->p + 2)
                                                                                 : -1;
                if (lo < 0xdc00 || lo > 0xdfff)
                    return "unpaired surrogate in a \\u escape";
                j->p += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                return "unpaired surrogate in a \\u escape";
            }
            if (cp == 0)
                return "\\u0000 is not allowed in a string";
            put_utf8(raw, cp);
            break;
        }
        default: return "invalid escape in a string";
        }
    }
}

static const char *parse_value(JP *j, Buf *out);

typedef struct Member {
    size_t off, n; /* in the object's buffer: 0x03, key body, value */
    size_t idx;
} Member;

/* The buffer cmp_member reads (qsort passes no context): one per thread,
   as workers and input threads parse at once. */
static _Thread_local const uint8_t *mem_base;

static int cmp_member(const void *a, const void *b)
{
    const Member *x = a, *y = b;
    const uint8_t *p = mem_base + x->off + 1, *q = mem_base + y->off + 1;
    for (;; p++, q++) { /* escaped keys, each ended by 0x01: compare as bytes */
        if (*p != *q)
            return *p < *q ? -1 : 1;
        if (*p == VAR_END)
            break;
    }
    return x->idx < y->idx ? -1 : x->idx > y->idx; /* duplicates: in order */
}

static const char *parse_object(JP *j, Buf *out)
{
    Buf body = BUF_INIT, key = BUF_INIT;
    Member *m = NULL;
    size_t nm = 0, cap = 0;
    const char *why = NULL;
    j->p++;
    ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        goto out_done;
    }
    for (;;) {
        ws(j);
        if (j->p >= j->end || *j->p != '"') {
            why = "expected a string key in an object";
            goto out_free;
        }
        buf_reset(&key);
        if ((why = parse_string(j, &key)))
            goto out_free;
        ws(j);
        if (j->p >= j->end || *j->p != ':') {
            why = "expected ':' in an object";
            goto out_free;
        }
        j->p++;
        if (nm == cap) {
            cap = cap ? cap * 2 : 8;
            Member *nmv = realloc(m, cap * sizeof(*m));
            if (!nmv)
                abort();
            m = nmv;
        }
        size_t off = body.n;
        buf_putc(&body, VAR_PAIR);
        size_t ks = body.n;
        var_put_string(&body, (const char *)key.p, key.n);
        /* drop the string tag: a key is the escaped body alone */
        memmove(body.p + ks, body.p + ks + 1, body.n - ks - 1);
        body.n--;
        if ((why = parse_value(j, &body)))
            goto out_free;
        m[nm] = (Member){off, body.n - off, nm};
        nm++;
        ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == '}') {
            j->p++;
            break;
        }
        why = "expected ',' or '}' in an object";
        goto out_free;
    }
out_done:
    mem_base = body.p;
    if (nm > 1)
        qsort(m, nm, sizeof(*m), cmp_member);
    buf_putc(out, VAR_OBJ);
    for (size_t k = 0; k < nm; k++) {
        /* of equal keys (adjacent, in input order) keep the last */
        if (k + 1 < nm) {
            Member tmp = m[k + 1];
            tmp.idx = m[k].idx;
            if (cmp_member(&m[k], &tmp) == 0)
                continue;
        }
        buf_append(out, body.p + m[k].off, m[k].n);
    }
    buf_putc(out, VAR_END);
out_free:
    free(m);
    buf_free(&body);
    buf_free(&key);
    return why;
}

static bool word(JP *j, const char *w, size_t n)
{
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
        return false;
    j->p += n;
    return true;
}

static const char *parse_value(JP *j, Buf *out)
{
    ws(j);
    if (j->p >= j->end)
        return "expected a value";
    char c = *j->p;
    switch (c) {
    case 'n':
        if (!word(j, "null", 4))
            break;
        buf_putc(out, VAR_NULL);
        return NULL;
    case 't':
        if (!word(j, "true", 4))
            break;
        buf_putc(out, VAR_TRUE);
        return NULL;
    case 'f':
        if (!word(j, "false", 5))
            break;
        buf_putc(out, VAR_FALSE);
        return NULL;
    case '"': {
        Buf raw = BUF_INIT;
        const char *why = parse_string(j, &raw);
        if (!why)
            var_put_string(out, (const char *)raw.p, raw.n);
        buf_free(&raw);
        return why;
    }
    case '[': {
        if (++j->depth > VAR_MAX_DEPTH)
            return "nested too deeply";
        j->p++;
        buf_putc(out, VAR_ARR);
        ws(j);
        if (j->p < j->end && *j->p == ']') {
            j->p++;
        } else {
            for (;;) {
                const char *why = parse_value(j, out);
                if (why)
                    return why;
                ws(j);
                if (j->p < j->end && *j->p == ',') {
                    j->p++;
                    continue;
                }
                if (j->p < j->end && *j->p == ']') {
                    j->p++;
                    break;
                }
                return "expected ',' or ']' in an array";
            }
        }
        buf_putc(out, VAR_END);
        j->depth--;
        return NULL;
    }
    case '{': {
        if (++j->depth > VAR_MAX_DEPTH)
            return "nested too deeply";
        const char *why = parse_object(j, out);
        j->depth--;
        return why;
    }
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            /* JSON's number syntax: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)? */
            const char *s = j->p, *q = s;
            if (q < j->end && *q == '-')
                q++;
            if (q >= j->end || *q < '0' || *q > '9')
                return "invalid number";
            if (*q == '0')
                q++;
            else
                while (q < j->end && *q >= '0' && *q <= '9')
                    q++;
            if (q < j->end && *q == '.') {
                q++;
                if (q >= j->end || *q < '0' || *q > '9')
                    return "invalid number";
                while (q < j->end && *q >= '0' && *q <= '9')
                    q++;
            }
            if (q < j->end && (*q == 'e' || *q == 'E')) {
                q++;
                if (q < j->end && (*q == '+' || *q == '-'))
                    q++;
                if (q >= j->end || *q < '0' || *q > '9')
                    return "invalid number";
                while (q < j->end && *q >= '0' && *q <= '9')
                    q++;
            }
            if (!var_put_number(out, s, (size_t)(q - s)))
                return "number out of range";
            j->p = q;
            return NULL;
        }
        break;
    }
    return "invalid value";
}

const char *var_parse_json_prefix(const char *s, size_t n, size_t *used, Buf *out)
{
    JP j = {s, s + n, 0};
    const char *why = parse_value(&j, out);
    *used = (size_t)(j.p - s);
    return why;
}

const char *var_parse_json(const char *s, size_t n, Buf *out)
{
    JP j = {s, s + n, 0};
    const char *why = parse_value(&j, out);
    if (why)
        return why;
    ws(&j);
    return j.p == j.end ? NULL : "text after the value";
}

int var_parse_text(const char *s, size_t n, Arena *a, Str *out, Err *err)
{
    Buf b = BUF_INIT;
    const char *why = var_parse_json(s, n, &b);
    if (why) {
        buf_free(&b);
        return err_set(err, SL_EDATA, "invalid JSON (%s): \"%.*s\"", why, n > 60 ? 60 : (int)n,
                       s);
    }
    char *d = arena_alloc(a, b.n);
    memcpy(d, b.p, b.n);
    *out = (Str){d, (uint32_t)b.n};
    buf_free(&b);
    return 0;
}

/* ---- reading encodings ---- */

/* Position past the value at p. */
static const uint8_t *skip(const uint8_t *p, const uint8_t *end)
{
    if (p >= end)
        return end;
    switch (*p) {
    case VAR_NULL:
    case VAR_FALSE:
    case VAR_TRUE:
    case VAR_ZERO: return p + 1;
    case VAR_POS:
        p += 4;
        while (p < end && *p != VAR_END)
            p++;
        return p < end ? p + 1 : end;
    case VAR_NEG:
        p += 4;
        while (p < end && *p != 0x20)
            p++;
        return p < end ? p + 1 : end;
    case VAR_STR: return skip_str(p + 1, end);
    case VAR_ARR:
        p++;
        while (p < end && *p != VAR_END)
            p = skip(p, end);
        return p < end ? p + 1 : end;
    case VAR_OBJ:
        p++;
        while (p < end && *p == VAR_PAIR)
            p = skip(skip_str(p + 1, end), end);
        return p < end ? p + 1 : end;
    default: return end;
    }
}

VarKind var_kind(Str v)
{
    if (v.n == 0)
        return VK_BAD;
    switch ((uint8_t)v.p[0]) {
    case VAR_NULL: return VK_NULL;
    case VAR_FALSE:
    case VAR_TRUE: return VK_BOOL;
    case VAR_NEG:
    case VAR_ZERO:
    case VAR_POS: return VK_NUMBER;
    case VAR_STR: return VK_STRING;
    case VAR_ARR: return VK_ARRAY;
    case VAR_OBJ: return VK_OBJECT;
    default: return VK_BAD;
    }
}

const char *var_kind_name(VarKind k)
{
    static const char *const names[] = {"null", "boolean", "number", "string", "array", "object"};
    return k < VK_BAD ? names[k] : "null";
}

bool var_get_key(Str v, const char *key, size_t kn, Str *out)
{
    if (var_kind(v) != VK_OBJECT)
        return false;
    const uint8_t *p = (const uint8_t *)v.p + 1, *end = (const uint8_t *)v.p + v.n;
    while (p < end && *p == VAR_PAIR) {
        const uint8_t *k = p + 1;
        /* compare the escaped key with key[0..kn) */
        size_t i = 0;
        bool same = true;
        const uint8_t *q = k;
        while (q < end && *q != VAR_END) {
            uint8_t c = *q == 0x02 && q + 1 < end ? (uint8_t)(q[1] - 1) : *q;
            q += *q == 0x02 ? 2 : 1;
            if (i >= kn || (uint8_t)key[i] != c)
                same = false;
            i++;
        }
        const uint8_t *val = q < end ? q + 1 : end;
        const uint8_t *next = skip(val, end);
        if (same && i == kn) {
            *out = (Str){(const char *)val, (uint32_t)(next - val)};
            return true;
        }
        p = next;
    }
    return false;
}

bool var_get_index(Str v, int64_t i, Str *out)
{
    if (var_kind(v) != VK_ARRAY)
        return false;
    const uint8_t *p = (const uint8_t *)v.p + 1, *end = (const uint8_t *)v.p + v.n;
    if (i < 0) {
        int64_t len = 0;
        for (const uint8_t *q = p; q < end && *q != VAR_END; q = skip(q, end))
            len++;
        i += len;
        if (i < 0)
            return false;
    }
    for (int64_t k = 0; p < end && *p != VAR_END; k++) {
        const uint8_t *next = skip(p, end);
        if (k == i) {
            *out = (Str){(const char *)p, (uint32_t)(next - p)};
            return true;
        }
        p = next;
    }
    return false;
}

bool var_get_string(Str v, Arena *a, Str *out)
{
    if (var_kind(v) != VK_STRING)
        return false;
    Buf b = BUF_INIT;
    get_str((const uint8_t *)v.p + 1, (const uint8_t *)v.p + v.n, &b);
    char *d = arena_alloc(a, b.n ? b.n : 1);
    if (b.n)
        memcpy(d, b.p, b.n);
    *out = (Str){d, (uint32_t)b.n};
    buf_free(&b);
    return true;
}

/* ---- JSON text out ---- */

static void json_str(Buf *out, const uint8_t *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    buf_putc(out, '"');
    for (size_t k = 0; k < n; k++) {
        uint8_t c = s[k];
        switch (c) {
        case '"': buf_puts(out, "\\\""); break;
        case '\\': buf_puts(out, "\\\\"); break;
        case '\n': buf_puts(out, "\\n"); break;
        case '\r': buf_puts(out, "\\r"); break;
        case '\t': buf_puts(out, "\\t"); break;
        case '\b': buf_puts(out, "\\b"); break;
        case '\f': buf_puts(out, "\\f"); break;
        default:
            if (c < 0x20) {
                buf_puts(out, "\\u00");
                buf_putc(out, hex[c >> 4]);
                buf_putc(out, hex[c & 15]);
            } else {
                buf_putc(out, (char)c);
            }
        }
    }
    buf_putc(out, '"');
}

static const uint8_t *to_json(const uint8_t *p, const uint8_t *end, Buf *out, Buf *tmp)
{
    if (p >= end)
        return end;
    switch (*p) {
    case VAR_NULL: buf_puts(out, "null"); return p + 1;
    case VAR_FALSE: buf_puts(out, "false"); return p + 1;
    case VAR_TRUE: buf_puts(out, "true"); return p + 1;
    case VAR_NEG:
    case VAR_ZERO:
    case VAR_POS: {
        bool neg;
        int64_t e;
        buf_reset(tmp);
        const uint8_t *q = get_number(p, end, &neg, &e, tmp);
        number_text(neg, e, (const char *)tmp->p, tmp->n, false, out);
        return q;
    }
    case VAR_STR: {
        buf_reset(tmp);
        const uint8_t *q = get_str(p + 1, end, tmp);
        json_str(out, tmp->p, tmp->n);
        return q;
    }
    case VAR_ARR: {
        p++;
        buf_putc(out, '[');
        for (bool first = true; p < end && *p != VAR_END; first = false) {
            if (!first)
                buf_putc(out, ',');
            p = to_json(p, end, out, tmp);
        }
        buf_putc(out, ']');
        return p < end ? p + 1 : end;
    }
    case VAR_OBJ: {
        p++;
        buf_putc(out, '{');
        for (bool first = true; p < end && *p == VAR_PAIR; first = false) {
            if (!first)
                buf_putc(out, ',');
            buf_reset(tmp);
            p = get_str(p + 1, end, tmp);
            json_str(out, tmp->p, tmp->n);
            buf_putc(out, ':');
            p = to_json(p, end, out, tmp);
        }
        buf_putc(out, '}');
        return p < end ? p + 1 : end;
    }
    default: return end;
    }
}

void var_to_json(Str v, Buf *out)
{
    Buf tmp = BUF_INIT;
    to_json((const uint8_t *)v.p, (const uint8_t *)v.p + v.n, out, &tmp);
    buf_free(&tmp);
}

/* ---- conversions ---- */

/* A scalar of type t (i, f, x or s per its physical class) as a VARIANT. */
static void from_scalar(SqlType t, int64_t i, double f, i128 x, Str s, Buf *out)
{
    Buf txt = BUF_INIT;
    TypeKind k = (TypeKind)t.kind;
    if (k == TK_VARIANT) {
        buf_append(out, s.p, s.n);
    } else if (k == TK_BOOL) {
        buf_putc(out, i ? VAR_TRUE : VAR_FALSE);
    } else if (type_is_numeric(k)) {
        if (type_is_wide(t))
            text_format_dec(x, t.scale, &txt);
        else
            text_format(t, i, f, s, &txt);
        if (!var_put_number(out, (const char *)txt.p, txt.n)) /* NaN, Infinity */
            var_put_string(out, (const char *)txt.p, txt.n);
    } else if (type_is_string(k)) {
        var_put_string(out, s.p, s.n);
    } else {
        text_format(t, i, f, s, &txt);
        var_put_string(out, (const char *)txt.p, txt.n);
    }
    buf_free(&txt);
}

/* The element of class ph at [p, q) into *e (e->s in it's scratch). */
static void elem_at(ArrIt *it, const uint8_t *p, const uint8_t *q, Phys ph, ArrElem *e)
{
    it->p = p;
    it->end = q;
    it->ph = ph;
    if (!arr_next(it, e))
        e->null = true;
}

/* Value e of type t (not NULL) as a VARIANT: ARRAYs as arrays, ROWs as
   objects of their fields, MAPs as objects of their entries (a key as its
   text), scalars by from_scalar. */
static void from_elem(SqlType t, const ArrElem *e, Buf *out)
{
    if (e->null) {
        buf_putc(out, VAR_NULL);
        return;
    }
    ArrIt it;
    ArrElem el;
    if (t.kind == TK_ARRAY) {
        SqlType et = type_elem(t);
        arr_it(&it, t, e->s);
        buf_putc(out, VAR_ARR);
        while (arr_next(&it, &el))
            from_elem(et, &el, out);
        buf_putc(out, VAR_END);
        arr_it_done(&it);
        return;
    }
    const NestType *nt = t.kind == TK_ROW || t.kind == TK_MAP ? nest_get(t) : NULL;
    if (!nt) {
        from_scalar(t, e->i, e->f, e->x, e->s, out);
        return;
    }
    Buf body = BUF_INIT, kv = BUF_INIT, kt = BUF_INIT;
    const uint8_t *p = (const uint8_t *)e->s.p, *end = p + e->s.n;
    it.tmp = (Buf)BUF_INIT;
    for (int j = 0; p < end && (t.kind == TK_MAP || j < nt->n); j++) {
        SqlType ft = t.kind == TK_MAP ? nt->t[1] : nt->t[j];
        Str key;
        if (t.kind == TK_MAP) { /* the key's text */
            const uint8_t *q = nest_elem_end(p, end, type_phys(nt->t[0]));
            elem_at(&it, p, q, type_phys(nt->t[0]), &el);
            p = q;
            buf_reset(&kv);
            buf_reset(&kt);
            from_elem(nt->t[0], &el, &kv);
            if (var_kind((Str){(const char *)kv.p, (uint32_t)kv.n}) == VK_STRING)
                get_str(kv.p + 1, kv.p + kv.n, &kt);
            else
                var_to_json((Str){(const char *)kv.p, (uint32_t)kv.n}, &kt);
            key = (Str){(const char *)kt.p, (uint32_t)kt.n};
        } else {
            key = (Str){nt->names[j], (uint32_t)strlen(nt->names[j])};
        }
        const uint8_t *q = nest_elem_end(p, end, type_phys(ft));
        elem_at(&it, p, q, type_phys(ft), &el);
        p = q;
        size_t ks = body.n;
        buf_putc(&body, VAR_PAIR);
        var_put_string(&body, key.p, key.n);
        memmove(body.p + ks + 1, body.p + ks + 2, body.n - ks - 2);
        body.n--;
        from_elem(ft, &el, &body);
    }
    arr_it_done(&it);
    var_put_object(out, body.p, body.n);
    buf_free(&body);
    buf_free(&kv);
    buf_free(&kt);
}

void var_from_vec(const Vec *v, int64_t r, Buf *out)
{
    ArrElem e = {0};
    e.i = v->i ? v->i[r] : 0;
    e.f = v->f ? v->f[r] : 0;
    e.x = v->x ? v->x[r] : 0;
    e.s = v->s ? v->s[r] : (Str){"", 0};
    from_elem(v->t, &e, out);
}

/* v converted to scalar type t into *i / *f / *x / *s; false when it does
   not convert. */
static bool to_scalar(Str v, SqlType t, Arena *a, int64_t *i, double *f, i128 *x, Str *s)
{
    TypeKind k = (TypeKind)t.kind;
    VarKind vk = var_kind(v);
    Err e;
    err_init(&e);
    if (k == TK_BOOL) {
        if (vk != VK_BOOL)
            return false;
        *i = (uint8_t)v.p[0] == VAR_TRUE;
        return true;
    }
    if (type_is_numeric(k)) {
        if (vk != VK_NUMBER)
            return false;
        bool neg;
        int64_t ex;
        Buf dg = BUF_INIT, txt = BUF_INIT;
        get_number((const uint8_t *)v.p, (const uint8_t *)v.p + v.n, &neg, &ex, &dg);
        bool ok = true;
        if (type_is_integer(k)) { /* truncated toward zero */
            int64_t lo, hi;
            type_int_range(k, &lo, &hi);
            if (ex > 19) {
                ok = false;
            } else {
                i128 m = 0;
                for (int64_t j = 0; j < ex; j++)
                    m = m * 10 + (j < (int64_t)dg.n ? dg.p[j] - '0' : 0);
                if (neg)
                    m = -m;
                ok = m >= lo && m <= hi;
                *i = (int64_t)m;
            }
        } else {
            if (dg.n == 0)
                buf_putc(&txt, '0');
            else
                buf_printf(&txt, "%s0.%.*se%lld", neg ? "-" : "", (int)dg.n, (const char *)dg.p,
                           (long long)ex);
            if (k == TK_DECIMAL) {
                /* plain digits: text_parse reads no exponent for DECIMAL */
                buf_reset(&txt);
                if (ex > 40)
                    ok = false;
                else if (ex < -40)
                    buf_putc(&txt, '0');
                else
                    number_text(neg, ex, (const char *)dg.p, dg.n, true, &txt);
                if (ok)
                    ok = (type_is_wide(t)
                              ? text_parse_dec(t, (const char *)txt.p, txt.n, x, &e)
                              : text_parse(t, (const char *)txt.p, txt.n, a, i, f, s, &e)) == 0;
            } else {
                ok = text_parse(t, (const char *)txt.p, txt.n, a, i, f, s, &e) == 0;
            }
        }
        buf_free(&dg);
        buf_free(&txt);
        return ok;
    }
    if (vk != VK_STRING)
        return false;
    Str str;
    var_get_string(v, a, &str);
    if (type_is_wide(t))
        return text_parse_dec(t, str.p, str.n, x, &e) == 0;
    return text_parse(t, str.p, str.n, a, i, f, s, &e) == 0;
}

/* v converted to type t (any type) into *e; false when it does not
   convert. An ARRAY's element, a ROW's field or a MAP's value that does
   not convert is NULL; a ROW's field is the member of its name (else one
   whose name matches it ignoring case), NULL when missing; a MAP's key
   is read from the member's name as text_parse reads it (a key that does
   not convert makes the whole value NULL). */
static bool to_elem(Str v, SqlType t, Arena *a, ArrElem *e)
{
    memset(e, 0, sizeof(*e));
    e->s = (Str){"", 0};
    if (t.kind == TK_VARIANT) {
        e->s = v;
        return true;
    }
    const NestType *nt = t.kind == TK_ROW || t.kind == TK_MAP ? nest_get(t) : NULL;
    if (t.kind != TK_ARRAY && !nt)
        return to_scalar(v, t, a, &e->i, &e->f, &e->x, &e->s);
    VarKind vk = var_kind(v);
    if (vk != (t.kind == TK_ARRAY ? VK_ARRAY : VK_OBJECT))
        return false;
    Buf b = BUF_INIT;
    bool ok = true;
    const uint8_t *p = (const uint8_t *)v.p + 1, *end = (const uint8_t *)v.p + v.n;
    ArrElem el;
    if (t.kind == TK_ARRAY) {
        SqlType et = type_elem(t);
        while (p < end && *p != VAR_END) {
            const uint8_t *next = skip(p, end);
            el.null = !to_elem((Str){(const char *)p, (uint32_t)(next - p)}, et, a, &el);
            arr_put(&b, type_phys(et), &el);
            p = next;
        }
    } else if (t.kind == TK_ROW) {
        for (int j = 0; j < nt->n; j++) {
            Str fv;
            size_t fn = strlen(nt->names[j]);
            bool have = var_get_key(v, nt->names[j], fn, &fv);
            if (!have) { /* a member whose name matches ignoring case */
                Buf kb = BUF_INIT;
                for (const uint8_t *q = p; !have && q < end && *q == VAR_PAIR;) {
                    buf_reset(&kb);
                    const uint8_t *val = get_str(q + 1, end, &kb), *next = skip(val, end);
                    if (kb.n == fn && !strncasecmp((const char *)kb.p, nt->names[j], fn)) {
                        fv = (Str){(const char *)val, (uint32_t)(next - val)};
                        have = true;
                    }
                    q = next;
                }
                buf_free(&kb);
            }
            if (have)
                el.null = !to_elem(fv, nt->t[j], a, &el);
            else
                memset(&el, 0, sizeof(el)), el.null = true;
            arr_put(&b, type_phys(nt->t[j]), &el);
        }
    } else { /* MAP */
        Buf kb = BUF_INIT;
        Str *ents = NULL;
        size_t ne = 0, cap = 0;
        size_t *offs = NULL;
        Err err;
        err_init(&err);
        while (ok && p < end && *p == VAR_PAIR) {
            buf_reset(&kb);
            const uint8_t *val = get_str(p + 1, end, &kb), *next = skip(val, end);
            ArrElem ke;
            if (type_is_string(nt->t[0].kind)) {
                memset(&ke, 0, sizeof(ke));
                char *d = arena_alloc(a, kb.n ? kb.n : 1);
                if (kb.n)
                    memcpy(d, kb.p, kb.n);
                ke.s = (Str){d, (uint32_t)kb.n};
            } else if (nest_elem_parse(nt->t[0], kb.n ? (const char *)kb.p : "", kb.n, a, &ke,
                                       &err)) {
                ok = false;
                break;
            }
            ke.null = false;
            el.null = !to_elem((Str){(const char *)val, (uint32_t)(next - val)}, nt->t[1], a, &el);
            if (ne + 2 > cap) {
                cap = cap ? cap * 2 : 16;
                offs = realloc(offs, sizeof(size_t) * (cap + 1));
                if (!offs)
                    abort();
            }
            offs[ne++] = b.n;
            arr_put(&b, type_phys(nt->t[0]), &ke);
            offs[ne++] = b.n;
            arr_put(&b, type_phys(nt->t[1]), &el);
            p = next;
        }
        if (ok && ne) {
            offs[ne] = b.n;
            ents = malloc(sizeof(Str) * ne);
            if (!ents)
                abort();
            for (size_t j = 0; j < ne; j++)
                ents[j] = (Str){(const char *)b.p + offs[j], (uint32_t)(offs[j + 1] - offs[j])};
            Buf mb = BUF_INIT;
            nest_map_build(ents, (int)(ne / 2), &mb);
            buf_free(&b);
            b = mb;
        }
        free(ents);
        free(offs);
        buf_free(&kb);
    }
    if (ok) {
        char *d = arena_alloc(a, b.n ? b.n : 1);
        if (b.n)
            memcpy(d, b.p, b.n);
        e->s = (Str){d, (uint32_t)b.n};
    }
    buf_free(&b);
    return ok;
}

bool var_to_vec(Str v, Vec *out, int64_t r, Arena *a)
{
    ArrElem e;
    if (!to_elem(v, out->t, a, &e))
        return false;
    if (out->i)
        out->i[r] = e.i;
    else if (out->f)
        out->f[r] = e.f;
    else if (out->x)
        out->x[r] = e.x;
    else
        out->s[r] = e.s;
    return true;
}

/* ---- building and changing documents ---- */

void var_put_member(Buf *body, const char *key, size_t kn, Str val)
{
    size_t ks = body->n;
    buf_putc(body, VAR_PAIR);
    var_put_string(body, key, kn);
    /* a key is a string's escaped body alone: drop the string tag */
    memmove(body->p + ks + 1, body->p + ks + 2, body->n - ks - 2);
    body->n--;
    buf_append(body, val.p, val.n);
}

void var_put_object(Buf *out, const uint8_t *body, size_t n)
{
    Member *m = NULL;
    size_t nm = 0, cap = 0;
    static const uint8_t none[1];
    if (!body) /* (an empty Buf's bytes) */
        body = none, n = 0;
    const uint8_t *p = body, *end = body + n;
    while (p < end && *p == VAR_PAIR) {
        /* the key must end (0x01) inside body: cmp_member reads up to it */
        const uint8_t *q = p + 1;
        while (q < end && *q != VAR_END)
            q += *q == 0x02 ? 2 : 1;
        if (q >= end)
            break;
        const uint8_t *next = skip(q + 1, end);
        if (nm == cap) {
            cap = cap ? cap * 2 : 8;
            Member *nmv = realloc(m, cap * sizeof(*m));
            if (!nmv)
                abort();
            m = nmv;
        }
        m[nm] = (Member){(size_t)(p - body), (size_t)(next - p), nm};
        nm++;
        p = next;
    }
    const uint8_t *saved = mem_base;
    mem_base = body;
    if (nm > 1)
        qsort(m, nm, sizeof(*m), cmp_member);
    buf_putc(out, VAR_OBJ);
    for (size_t k = 0; k < nm; k++) {
        if (k + 1 < nm) { /* of equal keys (adjacent, in order) keep the last */
            Member tmp = m[k + 1];
            tmp.idx = m[k].idx;
            if (cmp_member(&m[k], &tmp) == 0)
                continue;
        }
        buf_append(out, body + m[k].off, m[k].n);
    }
    buf_putc(out, VAR_END);
    mem_base = saved;
    free(m);
}

/* The bytes between a container's tag and its 0x01 (its elements or
   members). */
static Str body_of(Str v)
{
    return (Str){v.p + 1, v.n >= 2 ? v.n - 2 : 0};
}

void var_concat(Str a, Str b, Buf *out)
{
    VarKind ka = var_kind(a), kb = var_kind(b);
    if (ka == VK_OBJECT && kb == VK_OBJECT) {
        Buf body = BUF_INIT;
        Str x = body_of(a), y = body_of(b);
        buf_append(&body, x.p, x.n);
        buf_append(&body, y.p, y.n);
        var_put_object(out, body.p, body.n);
        buf_free(&body);
        return;
    }
    buf_putc(out, VAR_ARR);
    if (ka == VK_ARRAY) {
        Str x = body_of(a);
        buf_append(out, x.p, x.n);
    } else {
        buf_append(out, a.p, a.n);
    }
    if (kb == VK_ARRAY) {
        Str y = body_of(b);
        buf_append(out, y.p, y.n);
    } else {
        buf_append(out, b.p, b.n);
    }
    buf_putc(out, VAR_END);
}

int64_t var_array_length(Str v)
{
    if (var_kind(v) != VK_ARRAY)
        return -1;
    const uint8_t *p = (const uint8_t *)v.p + 1, *end = (const uint8_t *)v.p + v.n;
    int64_t n = 0;
    for (; p < end && *p != VAR_END; p = skip(p, end))
        n++;
    return n;
}

static bool is_container(VarKind k) { return k == VK_ARRAY || k == VK_OBJECT; }

static bool same(Str a, Str b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

/* jsonb's containment below the top level: a and b of one container kind. */
static bool contains(Str a, Str b)
{
    const uint8_t *p = (const uint8_t *)b.p + 1, *end = (const uint8_t *)b.p + b.n;
    if (var_kind(a) == VK_OBJECT) {
        Buf key = BUF_INIT;
        bool ok = true;
        while (ok && p < end && *p == VAR_PAIR) {
            buf_reset(&key);
            const uint8_t *val = get_str(p + 1, end, &key);
            const uint8_t *next = skip(val, end);
            Str bv = {(const char *)val, (uint32_t)(next - val)}, av;
            if (!var_get_key(a, key.n ? (const char *)key.p : "", key.n, &av))
                ok = false;
            else if (is_container(var_kind(bv)))
                ok = var_kind(av) == var_kind(bv) && contains(av, bv);
            else
                ok = same(av, bv);
            p = next;
        }
        buf_free(&key);
        return ok;
    }
    /* arrays: each element of b in some element of a */
    const uint8_t *aend = (const uint8_t *)a.p + a.n;
    while (p < end && *p != VAR_END) {
        const uint8_t *next = skip(p, end);
        Str be = {(const char *)p, (uint32_t)(next - p)};
        VarKind bk = var_kind(be);
        bool found = false;
        for (const uint8_t *q = (const uint8_t *)a.p + 1; !found && q < aend && *q != VAR_END;) {
            const uint8_t *qn = skip(q, aend);
            Str ae = {(const char *)q, (uint32_t)(qn - q)};
            if (is_container(bk))
                found = var_kind(ae) == bk && contains(ae, be);
            else
                found = same(ae, be);
            q = qn;
        }
        if (!found)
            return false;
        p = next;
    }
    return true;
}

bool var_contains(Str a, Str b)
{
    VarKind ka = var_kind(a), kb = var_kind(b);
    if (ka == VK_BAD || kb == VK_BAD)
        return false;
    if (ka == VK_ARRAY && !is_container(kb)) { /* [1, 2] @> 1, as jsonb */
        Buf one = BUF_INIT;
        buf_putc(&one, VAR_ARR);
        buf_append(&one, b.p, b.n);
        buf_putc(&one, VAR_END);
        bool r = contains(a, (Str){(const char *)one.p, (uint32_t)one.n});
        buf_free(&one);
        return r;
    }
    if (!is_container(ka) || !is_container(kb))
        return !is_container(ka) && !is_container(kb) && same(a, b);
    return ka == kb && contains(a, b);
}

bool var_exists(Str v, const char *key, size_t kn)
{
    Str x;
    Buf enc = BUF_INIT;
    bool r = false;
    switch (var_kind(v)) {
    case VK_OBJECT: return var_get_key(v, key, kn, &x);
    case VK_STRING:
        var_put_string(&enc, key, kn);
        r = same(v, (Str){(const char *)enc.p, (uint32_t)enc.n});
        break;
    case VK_ARRAY: {
        var_put_string(&enc, key, kn);
        const uint8_t *p = (const uint8_t *)v.p + 1, *end = (const uint8_t *)v.p + v.n;
        while (!r && p < end && *p != VAR_END) {
            const uint8_t *next = skip(p, end);
            r = same((Str){(const char *)p, (uint32_t)(next - p)},
                     (Str){(const char *)enc.p, (uint32_t)enc.n});
            p = next;
        }
        break;
    }
    default: break;
    }
    buf_free(&enc);
    return r;
}

bool var_step_index(Str step, int64_t *i)
{
    size_t j = step.n > 0 && step.p[0] == '-';
    bool neg = j == 1;
    int64_t x = 0;
    if (j == step.n || step.n - j > 18)
        return false;
    for (; j < step.n; j++) {
        if (step.p[j] < '0' || step.p[j] > '9')
            return false;
        x = x * 10 + (step.p[j] - '0');
    }
    *i = neg ? -x : x;
    return true;
}

/* jsonb_set below: v with the value at path[0..n) (n >= 1) replaced by nv
   (or added when missing there and create) into out. */
static bool set_path(Str v, const Str *path, int n, Str nv, bool create, Buf *out)
{
    VarKind k = var_kind(v);
    if (k == VK_OBJECT) {
        Buf body = BUF_INIT, sub = BUF_INIT;
        Str cur;
        bool have = var_get_key(v, path[0].p, path[0].n, &cur);
        Str b = body_of(v);
        buf_append(&body, b.p, b.n);
        if (have && n == 1) {
            var_put_member(&body, path[0].p, path[0].n, nv);
        } else if (have) {
            set_path(cur, path + 1, n - 1, nv, create, &sub);
            var_put_member(&body, path[0].p, path[0].n,
                           (Str){(const char *)sub.p, (uint32_t)sub.n});
        } else if (n == 1 && create) {
            var_put_member(&body, path[0].p, path[0].n, nv);
        }
        var_put_object(out, body.p, body.n); /* the later member wins */
        buf_free(&body);
        buf_free(&sub);
        return true;
    }
    if (k == VK_ARRAY) {
        int64_t i, len = var_array_length(v);
        if (!var_step_index(path[0], &i))
            return false;
        if (i < 0)
            i += len;
        bool in = i >= 0 && i < len;
        const uint8_t *p = (const uint8_t *)v.p + 1, *end = (const uint8_t *)v.p + v.n;
        buf_putc(out, VAR_ARR);
        if (!in && n == 1 && create && i < 0)
            buf_append(out, nv.p, nv.n); /* before the first */
        for (int64_t j = 0; p < end && *p != VAR_END; j++) {
            const uint8_t *next = skip(p, end);
            Str e = {(const char *)p, (uint32_t)(next - p)};
            if (j != i)
                buf_append(out, e.p, e.n);
            else if (n == 1)
                buf_append(out, nv.p, nv.n);
            else if (!set_path(e, path + 1, n - 1, nv, create, out))
                return false;
            p = next;
        }
        if (!in && n == 1 && create && i >= len)
            buf_append(out, nv.p, nv.n); /* after the last */
        buf_putc(out, VAR_END);
        return true;
    }
    buf_append(out, v.p, v.n); /* a scalar inside: left as it is */
    return true;
}

bool var_set_path(Str v, const Str *path, int n, Str nv, bool create, Buf *out)
{
    if (!is_container(var_kind(v)))
        return false;
    if (n == 0) {
        buf_append(out, v.p, v.n);
        return true;
    }
    return set_path(v, path, n, nv, create, out);
}
