/*
 * expr/fn_str.c - string functions (LOWER, UPPER, INITCAP, CHAR_LENGTH,
 * SUBSTRING, LEFT, RIGHT, TRIM with spaces or a character set, POSITION,
 * REPLACE, CONCAT, SPLIT_INDEX), || and LIKE over vectors (regular
 * expressions and SPLIT_PART: fn_regex.c).
 * ILIKE is LIKE over LOWER().
 * In: operands evaluated into dense Vecs by expr_eval (expr.c), the output
 * Vec allocated with the node's type and the row mask m (expr_int.h).
 * Out: strings either slices of the operands (SUBSTRING, TRIM) or new bytes
 * in cx->arena (UPPER, LOWER, REPLACE, ||), allocated once per vector where
 * the total length is known in advance.
 *
 * Positions and lengths count characters (UTF-8 lead bytes); case mapping
 * is ASCII only; LIKE compares bytes, with _ matching one character.
 * NULL rows are skipped (their Str slots may hold anything) and get "".
 */
#include <string.h>

#include "expr_int.h"

static const Str empty_str = {"", 0};

static size_t next_char(const char *s, size_t n, size_t j);

static Str arg_str(const Vec *v, int64_t k)
{
    if (!v->s)
        return empty_str;
    Str s = v->s[k];
    return s.p ? s : empty_str;
}

/* Integer operand of a string function (INT-typed, but be lenient). */
static int64_t arg_int(const Vec *v, int64_t k)
{
    if (v->i)
        return v->t.kind == TK_DECIMAL ? v->i[k] / pow10_i64(v->t.scale) : v->i[k];
    return v->f ? (int64_t)v->f[k] : 0;
}

static int case_map(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m, bool up)
{
    size_t total = 0;
    for (int64_t k = 0; k < n; k++)
        total += m[k] ? 0 : arg_str(a, k).n;
    char *p = arena_alloc(cx->arena, total ? total : 1);
    for (int64_t k = 0; k < n; k++) {
        if (m[k]) {
            out->s[k] = empty_str;
            continue;
        }
        Str s = arg_str(a, k);
        char lo = up ? 'a' : 'A';
        for (uint32_t j = 0; j < s.n; j++) {
            char c = s.p[j];
            p[j] = (c >= lo && c <= lo + 25) ? (char)(c ^ 0x20) : c;
        }
        out->s[k] = (Str){p, s.n};
        p += s.n;
    }
    return 0;
}

static void set_int(Vec *out, int64_t k, int64_t v)
{
    if (out->i)
        out->i[k] = out->t.kind == TK_DECIMAL ? v * pow10_i64(out->t.scale) : v;
    else if (out->f)
        out->f[k] = (double)v;
}

static int substring(const Vec *args, int na, int64_t n, EvalCtx *cx, Vec *out,
                     const uint8_t *m)
{
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        Str s = arg_str(&args[0], k);
        int64_t from = arg_int(&args[1], k), end = INT64_MAX;
        if (na > 2) {
            int64_t len = arg_int(&args[2], k);
            if (len < 0)
                return err_set(cx->err, SL_ERUNTIME,
                               "negative substring length not allowed: %lld", (long long)len);
            if (__builtin_add_overflow(from, len, &end))
                end = INT64_MAX;
        }
        int64_t start = from < 1 ? 1 : from;
        if (end <= start)
            continue;
        size_t b0 = expr__utf8_offset(s.p, s.n, (size_t)(start - 1));
        size_t b1 = end == INT64_MAX || end - 1 > (int64_t)s.n
                        ? s.n
                        : b0 + expr__utf8_offset(s.p + b0, s.n - b0, (size_t)(end - start));
        out->s[k] = (Str){s.p + b0, (uint32_t)(b1 - b0)};
    }
    return 0;
}

static int trim(const Vec *a, int64_t n, Vec *out, const uint8_t *m, bool left, bool right)
{
    for (int64_t k = 0; k < n; k++) {
        Str s = m[k] ? empty_str : arg_str(a, k);
        if (left)
            while (s.n > 0 && s.p[0] == ' ')
                s.p++, s.n--;
        if (right)
            while (s.n > 0 && s.p[s.n - 1] == ' ')
                s.n--;
        out->s[k] = s;
    }
    return 0;
}

static int position(const Vec *needle, const Vec *hay, int64_t n, Vec *out, const uint8_t *m)
{
    for (int64_t k = 0; k < n; k++) {
        int64_t r = 0;
        if (!m[k]) {
            Str nd = arg_str(needle, k), h = arg_str(hay, k);
            if (nd.n == 0) {
                r = 1;
            } else {
                const char *f = memmem(h.p, h.n, nd.p, nd.n);
                r = f ? 1 + (int64_t)expr__utf8_len(h.p, (size_t)(f - h.p)) : 0;
            }
        }
        set_int(out, k, r);
    }
    return 0;
}

static int replace(const Vec *args, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        Str s = arg_str(&args[0], k), from = arg_str(&args[1], k), to = arg_str(&args[2], k);
        if (from.n == 0 || from.n > s.n) {
            out->s[k] = s;
            continue;
        }
        size_t count = 0;
        for (const char *p = s.p, *e = s.p + s.n; (p = memmem(p, (size_t)(e - p), from.p, from.n));
             p += from.n)
            count++;
        if (count == 0) {
            out->s[k] = s;
            continue;
        }
        size_t len = s.n + count * to.n - count * from.n;
        if (len > UINT32_MAX)
            return err_set(cx->err, SL_ERUNTIME, "REPLACE result too long (%zu bytes)", len);
        char *d = arena_alloc(cx->arena, len ? len : 1), *w = d;
        const char *p = s.p, *e = s.p + s.n;
        for (const char *f; (f = memmem(p, (size_t)(e - p), from.p, from.n)); p = f + from.n) {
            memcpy(w, p, (size_t)(f - p));
            w += f - p;
            if (to.n)
                memcpy(w, to.p, to.n);
            w += to.n;
        }
        memcpy(w, p, (size_t)(e - p));
        out->s[k] = (Str){d, (uint32_t)len};
    }
    return 0;
}

/* SPLIT_INDEX(s, delim, i): the i-th part (0-based) of s split at every
   delim, a slice of s; NULL (m[k] set) when there is none (Flink). */
static int split_index(const Vec *args, int64_t n, Vec *out, uint8_t *m)
{
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        Str s = arg_str(&args[0], k), d = arg_str(&args[1], k);
        int64_t i = arg_int(&args[2], k);
        const char *p = s.p, *e = s.p + s.n, *f = NULL;
        if (d.n == 0 || i < 0) {
            m[k] = 1;
            continue;
        }
        for (; i > 0 && (f = memmem(p, (size_t)(e - p), d.p, d.n)); i--)
            p = f + d.n;
        if (i > 0) {
            m[k] = 1;
            continue;
        }
        f = memmem(p, (size_t)(e - p), d.p, d.n);
        out->s[k] = (Str){p, (uint32_t)((f ? f : e) - p)};
    }
    return 0;
}

/* LEFT(s, n) / RIGHT(s, n): slices; n <= 0 gives '' (Calcite, MySQL). */
static int left_right(const Vec *args, int64_t n, Vec *out, const uint8_t *m, bool left)
{
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        Str s = arg_str(&args[0], k);
        int64_t c = arg_int(&args[1], k);
        if (c <= 0)
            continue;
        size_t len = expr__utf8_len(s.p, s.n);
        if ((uint64_t)c >= len) {
            out->s[k] = s;
            continue;
        }
        size_t b = expr__utf8_offset(s.p, s.n, left ? (size_t)c : len - (size_t)c);
        out->s[k] = left ? (Str){s.p, (uint32_t)b} : (Str){s.p + b, (uint32_t)(s.n - b)};
    }
    return 0;
}

static int concat_n(const Vec *args, int na, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    size_t total = 0;
    for (int64_t k = 0; k < n; k++)
        for (int j = 0; j < na && !m[k]; j++)
            total += arg_str(&args[j], k).n;
    char *p = arena_alloc(cx->arena, total ? total : 1);
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        size_t len = 0;
        for (int j = 0; j < na; j++) {
            Str x = arg_str(&args[j], k);
            if (x.n)
                memcpy(p + len, x.p, x.n);
            len += x.n;
        }
        if (len > UINT32_MAX)
            return err_set(cx->err, SL_ERUNTIME, "CONCAT result too long (%zu bytes)", len);
        out->s[k] = (Str){p, (uint32_t)len};
        p += len;
    }
    return 0;
}

static bool is_alnum_ascii(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (uint8_t)c >= 0x80;
}

/* INITCAP: a word is a run of letters and digits (non-ASCII bytes count as
 * letters and are left alone); its first letter goes upper, the rest lower. */
static int initcap(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    size_t total = 0;
    for (int64_t k = 0; k < n; k++)
        total += m[k] ? 0 : arg_str(a, k).n;
    char *p = arena_alloc(cx->arena, total ? total : 1);
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        Str s = arg_str(a, k);
        bool in_word = false;
        for (uint32_t j = 0; j < s.n; j++) {
            char c = s.p[j];
            if (!in_word && c >= 'a' && c <= 'z')
                c = (char)(c - 32);
            else if (in_word && c >= 'A' && c <= 'Z')
                c = (char)(c + 32);
            in_word = is_alnum_ascii(s.p[j]);
            p[j] = c;
        }
        out->s[k] = (Str){p, s.n};
        p += s.n;
    }
    return 0;
}

/* Whether the character at s[j..j+len) is one of the characters of set. */
static bool in_set(Str set, const char *c, size_t len)
{
    for (size_t j = 0; j < set.n;) {
        size_t l = next_char(set.p, set.n, j) - j;
        if (l == len && memcmp(set.p + j, c, len) == 0)
            return true;
        j += l;
    }
    return false;
}

/* TRIM([BOTH|LEADING|TRAILING] chars FROM s): args s, chars, side. */
static int trim_chars(const Vec *args, int64_t n, Vec *out, const uint8_t *m)
{
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        Str s = arg_str(&args[0], k), set = arg_str(&args[1], k);
        int64_t side = arg_int(&args[2], k);
        if (side != 2)
            while (s.n > 0) {
                size_t l = next_char(s.p, s.n, 0);
                if (!in_set(set, s.p, l))
                    break;
                s.p += l, s.n -= (uint32_t)l;
            }
        if (side != 1)
            while (s.n > 0) {
                size_t j = s.n - 1;
                while (j > 0 && ((uint8_t)s.p[j] & 0xC0) == 0x80)
                    j--;
                if (!in_set(set, s.p + j, s.n - j))
                    break;
                s.n = (uint32_t)j;
            }
        out->s[k] = s;
    }
    return 0;
}

int expr__fn_str(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    bool str_out = out->s != NULL;
    switch (e->fn) {
    case FN_LOWER:
    case FN_UPPER:
        if (str_out)
            return case_map(&args[0], n, cx, out, m, e->fn == FN_UPPER);
        break;
    case FN_CHAR_LENGTH:
        for (int64_t k = 0; k < n; k++) {
            Str s = m[k] ? empty_str : arg_str(&args[0], k);
            set_int(out, k, (int64_t)expr__utf8_len(s.p, s.n));
        }
        return 0;
    case FN_SUBSTRING:
        if (str_out && e->na >= 2)
            return substring(args, e->na, n, cx, out, m);
        break;
    case FN_TRIM:
    case FN_LTRIM:
    case FN_RTRIM:
        if (str_out)
            return trim(&args[0], n, out, m, e->fn != FN_RTRIM, e->fn != FN_LTRIM);
        break;
    case FN_POSITION:
        if (e->na == 2)
            return position(&args[0], &args[1], n, out, m);
        break;
    case FN_REPLACE:
        if (str_out && e->na == 3)
            return replace(args, n, cx, out, m);
        break;
    case FN_LEFT:
    case FN_RIGHT:
        if (str_out && e->na == 2)
            return left_right(args, n, out, m, e->fn == FN_LEFT);
        break;
    case FN_CONCAT:
        if (str_out)
            return concat_n(args, e->na, n, cx, out, m);
        break;
    case FN_SPLIT_INDEX:
        if (str_out && e->na == 3)
            return split_index(args, n, out, m);
        break;
    case FN_INITCAP:
        if (str_out && e->na == 1)
            return initcap(&args[0], n, cx, out, m);
        break;
    case FN_TRIM_CHARS:
        if (str_out && e->na == 3)
            return trim_chars(args, n, out, m);
        break;
    default: break;
    }
    char tn[48];
    return err_set(cx->err, SL_ERUNTIME, "string function %d with %d operands cannot give %s",
                   e->fn, e->na, type_name(out->t, tn, sizeof(tn)));
}

int expr__concat(const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    size_t total = 0;
    for (int64_t k = 0; k < n; k++)
        total += m[k] ? 0 : (size_t)arg_str(a, k).n + arg_str(b, k).n;
    char *p = arena_alloc(cx->arena, total ? total : 1);
    for (int64_t k = 0; k < n; k++) {
        if (m[k]) {
            out->s[k] = empty_str;
            continue;
        }
        Str x = arg_str(a, k), y = arg_str(b, k);
        size_t len = (size_t)x.n + y.n;
        if (len > UINT32_MAX)
            return err_set(cx->err, SL_ERUNTIME, "|| result too long (%zu bytes)", len);
        if (x.n)
            memcpy(p, x.p, x.n);
        if (y.n)
            memcpy(p + x.n, y.p, y.n);
        out->s[k] = (Str){p, (uint32_t)len};
        p += len;
    }
    return 0;
}

/* ------------------------------------------------------------------ LIKE */

static size_t next_char(const char *s, size_t n, size_t j)
{
    j++;
    while (j < n && ((uint8_t)s[j] & 0xC0) == 0x80)
        j++;
    return j;
}

/* s LIKE p with escape byte esc (-1: none). Greedy with backtracking to the
 * last %, which is enough because % matches any run. */
static bool like_match(const char *s, size_t sn, const char *p, size_t pn, int esc)
{
    size_t si = 0, pi = 0, star_p = SIZE_MAX, star_s = 0;
    while (si < sn) {
        if (pi < pn) {
            char c = p[pi];
            if (c == '%' && (int)(uint8_t)c != esc) {
                star_p = ++pi;
                star_s = si;
                continue;
            }
            if (c == '_' && (int)(uint8_t)c != esc) {
                si = next_char(s, sn, si);
                pi++;
                continue;
            }
            size_t step = 1;
            if ((int)(uint8_t)c == esc && pi + 1 < pn) {
                c = p[pi + 1];
                step = 2;
            }
            if (s[si] == c) {
                si++;
                pi += step;
                continue;
            }
        }
        if (star_p == SIZE_MAX)
            return false;
        pi = star_p;
        star_s = next_char(s, sn, star_s);
        si = star_s;
    }
    while (pi < pn && p[pi] == '%' && (int)(uint8_t)p[pi] != esc)
        pi++;
    return pi == pn;
}

/* Whether lit occurs in s: memchr for its first byte, then memcmp (short
 * strings and needles: cheaper than memmem's setup). */
static bool contains(Str s, Str lit)
{
    if (lit.n > s.n)
        return false;
    const char *p = s.p, *last = s.p + (s.n - lit.n);
    char c = lit.p[0];
    while (p <= last) {
        p = memchr(p, c, (size_t)(last - p) + 1);
        if (!p)
            return false;
        if (memcmp(p + 1, lit.p + 1, lit.n - 1) == 0)
            return true;
        p++;
    }
    return false;
}

enum { LK_GENERIC, LK_EXACT, LK_PREFIX, LK_SUFFIX, LK_CONTAINS, LK_ANY };

/* Shape of a pattern without escape: a literal with % only at its ends. */
static int like_shape(Str p, Str *lit)
{
    size_t b = 0, e = p.n;
    while (b < e && p.p[b] == '%')
        b++;
    if (b == e)
        return p.n ? LK_ANY : LK_EXACT;
    while (e > b && p.p[e - 1] == '%')
        e--;
    for (size_t j = b; j < e; j++)
        if (p.p[j] == '%' || p.p[j] == '_')
            return LK_GENERIC;
    *lit = (Str){p.p + b, (uint32_t)(e - b)};
    bool lead = b > 0, trail = e < p.n;
    return lead ? (trail ? LK_CONTAINS : LK_SUFFIX) : (trail ? LK_PREFIX : LK_EXACT);
}

int expr__like(const Vec *args, int na, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    const Vec *sv = &args[0], *pv = &args[1];
    int64_t *z = out->i;
    /* escape per row; patterns shared by every row (constants) get a shape */
    int64_t k0 = 0;
    while (k0 < n && m[k0])
        k0++;
    bool same = na < 3 && k0 < n;
    for (int64_t k = k0 + 1; same && k < n; k++)
        same = m[k] || (pv->s[k].p == pv->s[k0].p && pv->s[k].n == pv->s[k0].n);
    Str lit = empty_str;
    int shape = same ? like_shape(arg_str(pv, k0), &lit) : LK_GENERIC;
    for (int64_t k = 0; k < n; k++) {
        z[k] = 0;
        if (m[k])
            continue;
        Str s = arg_str(sv, k), p = arg_str(pv, k);
        int esc = -1;
        if (na > 2) {
            Str e = arg_str(&args[2], k);
            if (e.n > 1)
                return err_set(cx->err, SL_ERUNTIME,
                               "invalid escape string \"%.*s\": must be empty or one character",
                               (int)SL_MIN(e.n, 64), e.p);
            esc = e.n ? (uint8_t)e.p[0] : -1;
            if (esc >= 0 && p.n > 0 && (uint8_t)p.p[p.n - 1] == esc) {
                size_t run = 0; /* an odd run of escapes at the end escapes nothing */
                while (run < p.n && (uint8_t)p.p[p.n - 1 - run] == esc)
                    run++;
                if (run % 2)
                    return err_set(cx->err, SL_ERUNTIME,
                                   "LIKE pattern must not end with escape character");
            }
        }
        switch (shape) {
        case LK_ANY: z[k] = 1; break;
        case LK_EXACT: z[k] = s.n == lit.n && memcmp(s.p, lit.p, lit.n) == 0; break;
        case LK_PREFIX: z[k] = s.n >= lit.n && memcmp(s.p, lit.p, lit.n) == 0; break;
        case LK_SUFFIX:
            z[k] = s.n >= lit.n && memcmp(s.p + s.n - lit.n, lit.p, lit.n) == 0;
            break;
        case LK_CONTAINS: z[k] = contains(s, lit); break;
        default: z[k] = like_match(s.p, s.n, p.p, p.n, esc); break;
        }
    }
    return 0;
}
