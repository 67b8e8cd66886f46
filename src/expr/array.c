/*
 * expr/array.c - ARRAY values: encoding, iteration, PostgreSQL's text form
 * (format in array.h).
 */
#include "array.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#include "text.h"

#define ARR_STR_END 0x01
#define ARR_STR_ESC 0x02

/* ------------------------------------------------------------- encoding */

static void put_bits(Buf *b, unsigned __int128 u, int nbytes)
{
    uint8_t o[19];
    for (int k = nbytes - 1; k >= 0; k--) {
        o[k] = (uint8_t)(0x80 | (uint8_t)(u & 0x7f));
        u >>= 7;
    }
    buf_append(b, o, (size_t)nbytes);
}

static unsigned __int128 get_bits(const uint8_t *p, int nbytes)
{
    unsigned __int128 u = 0;
    for (int k = 0; k < nbytes; k++)
        u = (u << 7) | (p[k] & 0x7f);
    return u;
}

void arr_put(Buf *b, Phys ph, const ArrElem *e)
{
    if (e->null) {
        buf_putc(b, (char)ARR_NULL);
        return;
    }
    buf_putc(b, (char)ARR_VAL);
    switch (ph) {
    case PHYS_I64: put_bits(b, (uint64_t)e->i ^ (1ull << 63), 10); break;
    case PHYS_I128:
        put_bits(b, (unsigned __int128)e->x ^ ((unsigned __int128)1 << 127), 19);
        break;
    case PHYS_F64: put_bits(b, f64_order(e->f), 10); break;
    case PHYS_STR: {
        const char *s = e->s.p;
        uint32_t from = 0;
        for (uint32_t k = 0; k < e->s.n; k++) {
            uint8_t c = (uint8_t)s[k];
            if (c != ARR_STR_END && c != ARR_STR_ESC)
                continue;
            buf_append(b, s + from, k - from);
            buf_putc(b, (char)ARR_STR_ESC);
            buf_putc(b, (char)(c + 1));
            from = k + 1;
        }
        buf_append(b, s + from, e->s.n - from);
        buf_putc(b, (char)ARR_STR_END);
        break;
    }
    }
}

void arr_put_vec(Buf *b, const Vec *v, int64_t r)
{
    ArrElem e = {0};
    e.null = vec_is_null(v, r);
    if (!e.null) {
        if (v->i)
            e.i = v->i[r];
        else if (v->x)
            e.x = v->x[r];
        else if (v->f)
            e.f = v->f[r];
        else
            e.s = v->s[r];
    }
    arr_put(b, type_phys(v->t), &e);
}

void arr_get_vec(Vec *v, int64_t r, const ArrElem *e, Arena *a)
{
    if (e->null) {
        if (v->nul)
            vec_set_null(v, r);
        else
            vec_zero(v, r);
        return;
    }
    if (v->nul)
        v->nul[r] = 0;
    if (v->i)
        v->i[r] = e->i;
    else if (v->x)
        v->x[r] = e->x;
    else if (v->f)
        v->f[r] = e->f;
    else if (e->s.n == 0)
        v->s[r] = (Str){"", 0};
    else {
        char *p = arena_alloc(a, e->s.n);
        memcpy(p, e->s.p, e->s.n);
        v->s[r] = (Str){p, e->s.n};
    }
}

/* ------------------------------------------------------------- iteration */

void arr_it(ArrIt *it, SqlType t, Str v)
{
    it->p = (const uint8_t *)v.p;
    it->end = it->p + v.n;
    it->ph = type_phys(type_elem(t));
    it->tmp = (Buf)BUF_INIT;
}

void arr_it_done(ArrIt *it) { buf_free(&it->tmp); }

bool arr_next(ArrIt *it, ArrElem *e)
{
    if (it->p >= it->end)
        return false;
    uint8_t tag = *it->p++;
    memset(e, 0, sizeof(*e));
    if (tag == ARR_NULL) {
        e->null = true;
        return true;
    }
    if (tag != ARR_VAL) {
        it->p = it->end;
        return false;
    }
    int w = it->ph == PHYS_I128 ? 19 : 10;
    if (it->ph != PHYS_STR && it->end - it->p < w) {
        it->p = it->end;
        return false;
    }
    switch (it->ph) {
    case PHYS_I64: e->i = (int64_t)((uint64_t)get_bits(it->p, 10) ^ (1ull << 63)); break;
    case PHYS_I128:
        e->x = (i128)(get_bits(it->p, 19) ^ ((unsigned __int128)1 << 127));
        break;
    case PHYS_F64: e->f = f64_unorder((uint64_t)get_bits(it->p, 10)); break;
    case PHYS_STR: {
        const uint8_t *q = it->p;
        bool esc = false;
        while (q < it->end && *q != ARR_STR_END) {
            if (*q == ARR_STR_ESC) {
                esc = true;
                q++;
            }
            q++;
        }
        if (q >= it->end) {
            it->p = it->end;
            return false;
        }
        if (!esc) {
            e->s = (Str){(const char *)it->p, (uint32_t)(q - it->p)};
        } else {
            buf_reset(&it->tmp);
            for (const uint8_t *c = it->p; c < q; c++) {
                if (*c == ARR_STR_ESC)
                    buf_putc(&it->tmp, (char)(*++c - 1));
                else
                    buf_putc(&it->tmp, (char)*c);
            }
            e->s = (Str){(const char *)it->tmp.p, (uint32_t)it->tmp.n};
        }
        it->p = q + 1;
        return true;
    }
    }
    it->p += w;
    return true;
}

int64_t arr_len(SqlType t, Str v)
{
    Phys ph = type_phys(type_elem(t));
    const uint8_t *p = (const uint8_t *)v.p, *end = p + v.n;
    int64_t n = 0;
    while (p < end) {
        uint8_t tag = *p++;
        n++;
        if (tag != ARR_VAL)
            continue;
        if (ph == PHYS_STR) {
            while (p < end && *p != ARR_STR_END)
                p += *p == ARR_STR_ESC ? 2 : 1;
            p++;
        } else {
            p += ph == PHYS_I128 ? 19 : 10;
        }
    }
    return n;
}

/* ------------------------------------------------------------- text form */

static bool needs_quotes(const char *s, size_t n)
{
    if (n == 0 || (n == 4 && !strncasecmp(s, "null", 4)))
        return true;
    for (size_t k = 0; k < n; k++) {
        char c = s[k];
        if (c == '{' || c == '}' || c == ',' || c == '"' || c == '\\' || c == ' ' ||
            c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
            return true;
    }
    return false;
}

void arr_format_text(SqlType t, Str v, Buf *out)
{
    SqlType et = type_elem(t);
    ArrIt it;
    ArrElem e;
    Buf one = BUF_INIT;
    bool first = true;
    arr_it(&it, t, v);
    buf_putc(out, '{');
    while (arr_next(&it, &e)) {
        if (!first)
            buf_putc(out, ',');
        first = false;
        if (e.null) {
            buf_puts(out, "NULL");
            continue;
        }
        buf_reset(&one);
        if (et.kind == TK_BOOL)
            buf_putc(&one, e.i ? 't' : 'f'); /* boolout, as PostgreSQL's arrays show it */
        else if (type_is_wide(et))
            text_format_dec(e.x, et.scale, &one);
        else
            text_format(et, e.i, e.f, e.s, &one);
        if (et.kind == TK_ARRAY || !needs_quotes((const char *)one.p, one.n)) {
            /* an inner array is its own braces: {{1,2},{}} as PostgreSQL writes */
            buf_append(out, one.p, one.n);
            continue;
        }
        buf_putc(out, '"');
        for (size_t k = 0; k < one.n; k++) {
            char c = (char)one.p[k];
            if (c == '"' || c == '\\')
                buf_putc(out, '\\');
            buf_putc(out, c);
        }
        buf_putc(out, '"');
    }
    buf_putc(out, '}');
    buf_free(&one);
    arr_it_done(&it);
}

static bool arr_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int malformed(Err *err, const char *s, size_t n, const char *why)
{
    return err_set(err, SL_EDATA, "malformed array literal: \"%.*s\" (%s)",
                   (int)SL_MIN(n, 200), s, why);
}

int arr_parse_text(SqlType t, const char *s, size_t n, Arena *a, Str *out, Err *err)
{
    SqlType et = type_elem(t);
    Phys ph = type_phys(et);
    Buf enc = BUF_INIT, one = BUF_INIT;
    size_t p = 0;
    int rc = 0;
    while (p < n && arr_space(s[p]))
        p++;
    if (p >= n || s[p] != '{') {
        rc = malformed(err, s, n, "array value must start with \"{\"");
        goto done;
    }
    p++;
    while (p < n && arr_space(s[p]))
        p++;
    if (p < n && s[p] == '}') {
        p++;
    } else {
        for (;;) {
            bool quoted = false;
            while (p < n && arr_space(s[p]))
                p++;
            buf_reset(&one);
            if (p < n && s[p] == '{' && et.kind == TK_ARRAY) { /* an inner array */
                size_t q = p;
                int depth = 0;
                bool inq = false;
                for (; q < n; q++) {
                    if (inq) {
                        if (s[q] == '\\' && q + 1 < n)
                            q++;
                        else if (s[q] == '"')
                            inq = false;
                    } else if (s[q] == '"') {
                        inq = true;
                    } else if (s[q] == '{') {
                        depth++;
                    } else if (s[q] == '}' && --depth == 0) {
                        break;
                    }
                }
                if (q >= n) {
                    rc = malformed(err, s, n, "unexpected end of input");
                    goto done;
                }
                ArrElem ie = {0};
                if ((rc = arr_parse_text(et, s + p, q + 1 - p, a, &ie.s, err)))
                    goto done;
                arr_put(&enc, ph, &ie);
                p = q + 1;
                while (p < n && arr_space(s[p]))
                    p++;
                if (p < n && s[p] == ',') {
                    p++;
                    continue;
                }
                if (p < n && s[p] == '}') {
                    p++;
                    break;
                }
                rc = malformed(err, s, n, "expected \",\" or \"}\"");
                goto done;
            }
            if (p < n && s[p] == '{') {
                rc = err_set(err, SL_EDATA, "malformed array literal: \"%.*s\" (a nested "
                             "array in an array of %s)", (int)SL_MIN(n, 200), s,
                             et.kind == TK_NULL ? "NULL" : "scalars");
                goto done;
            }
            if (p < n && s[p] == '"') {
                quoted = true;
                p++;
                while (p < n && s[p] != '"') {
                    if (s[p] == '\\' && p + 1 < n)
                        p++;
                    buf_putc(&one, s[p++]);
                }
                if (p >= n) {
                    rc = malformed(err, s, n, "unexpected end of input");
                    goto done;
                }
                p++;
                while (p < n && arr_space(s[p]))
                    p++;
            } else {
                size_t last = 0; /* length without trailing spaces */
                while (p < n && s[p] != ',' && s[p] != '}') {
                    if (s[p] == '"' || s[p] == '{') {
                        rc = malformed(err, s, n, "unexpected character");
                        goto done;
                    }
                    if (s[p] == '\\' && p + 1 < n) {
                        p++;
                        buf_putc(&one, s[p++]);
                        last = one.n;
                        continue;
                    }
                    buf_putc(&one, s[p]);
                    if (!arr_space(s[p]))
                        last = one.n;
                    p++;
                }
                one.n = last;
                if (one.n == 0) {
                    rc = malformed(err, s, n, "unexpected \",\" or \"}\"");
                    goto done;
                }
            }
            ArrElem e = {0};
            const char *txt = one.p ? (const char *)one.p : "";
            if (!quoted && one.n == 4 && !strncasecmp(txt, "null", 4)) {
                e.null = true;
            } else if (ph == PHYS_I128) {
                if ((rc = text_parse_dec(et, txt, one.n, &e.x, err)))
                    goto done;
            } else if ((rc = text_parse(et, txt, one.n, a, &e.i, &e.f, &e.s,
                                        err))) {
                goto done;
            }
            arr_put(&enc, ph, &e);
            if (p < n && s[p] == ',') {
                p++;
                continue;
            }
            if (p < n && s[p] == '}') {
                p++;
                break;
            }
            rc = malformed(err, s, n, p < n ? "expected \",\" or \"}\"" : "unexpected end of input");
            goto done;
        }
    }
    while (p < n && arr_space(s[p]))
        p++;
    if (p != n) {
        rc = malformed(err, s, n, "junk after closing right brace");
        goto done;
    }
    if (enc.n > UINT32_MAX - 1) {
        rc = err_set(err, SL_EDATA, "array value too long");
        goto done;
    }
    if (enc.n == 0) {
        *out = (Str){"", 0};
    } else {
        char *d = arena_alloc(a, enc.n);
        memcpy(d, enc.p, enc.n);
        *out = (Str){d, (uint32_t)enc.n};
    }
done:
    buf_free(&enc);
    buf_free(&one);
    return rc;
}
