/*
 * io/json_nested.c - JSON for ROW, MAP and the ARRAYs that hold them
 * (format in json_nested.h): a recursive reader straight into nested.h's
 * encoding, and the writer.
 */
#include "json_nested.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../expr/array.h"
#include "../expr/nested.h"
#include "../expr/text.h"

#define JN_MAX_DEPTH 64

typedef struct JN {
    const char *q, *end;
    Arena *a;
    Err *err;
    int depth;
} JN;

static bool is_nested(SqlType t) { return t.kind == TK_ROW || t.kind == TK_MAP || t.kind == TK_ARRAY; }

static void ws(JN *j)
{
    while (j->q < j->end && (*j->q == ' ' || *j->q == '\t' || *j->q == '\n' || *j->q == '\r'))
        j->q++;
}

static int fail(JN *j, const char *why) { return err_set(j->err, SL_EDATA, "%s", why); }

static bool eat(JN *j, char c)
{
    ws(j);
    if (j->q < j->end && *j->q == c) {
        j->q++;
        return true;
    }
    return false;
}

/* The JSON string at j->q, unescaped (into the arena when it had escapes). */
static int read_str(JN *j, const char **s, size_t *n)
{
    const char *p = j->q + 1, *raw = p;
    bool esc = false;
    while (p < j->end && *p != '"') {
        if ((unsigned char)*p < 0x20)
            return fail(j, "control character in a JSON string");
        if (*p == '\\') {
            esc = true;
            p++;
        }
        p++;
    }
    if (p >= j->end)
        return fail(j, "unterminated string");
    *n = (size_t)(p - raw);
    *s = raw;
    j->q = p + 1;
    if (esc) {
        char *d = arena_alloc(j->a, *n ? *n : 1);
        const char *why = fmt_json__unescape(raw, *n, d, n);
        if (why)
            return fail(j, why);
        *s = d;
    }
    return 0;
}

static int nested(JN *j, SqlType t, Str *out);

/* One value of type t at j->q into e. */
static int elem(JN *j, SqlType t, ArrElem *e)
{
    memset(e, 0, sizeof(*e));
    ws(j);
    if (j->q >= j->end)
        return fail(j, "unexpected end of a JSON value");
    char c = *j->q;
    const char *s = NULL;
    size_t n = 0;
    if ((c == '{' || c == '[') && is_nested(t))
        return nested(j, t, &e->s);
    if (c == '{' || c == '[') {
        char tn[64], why[128];
        snprintf(why, sizeof(why), "a JSON %s where %s was expected", c == '{' ? "object" : "array",
                 type_name(t, tn, sizeof(tn)));
        return fail(j, why);
    }
    if (c == '"') {
        if (read_str(j, &s, &n))
            return SL_EDATA;
    } else {
        s = j->q;
        while (j->q < j->end && strchr("+-0123456789.eEtrufalsn", *j->q))
            j->q++;
        n = (size_t)(j->q - s);
        if (n == 4 && !memcmp(s, "null", 4)) {
            e->null = true;
            return 0;
        }
        if (n == 0)
            return fail(j, "invalid JSON value");
    }
    return nest_elem_parse(t, s, n, j->a, e, j->err);
}

static Str keep(JN *j, const Buf *b)
{
    if (!b->n)
        return (Str){"", 0};
    char *d = arena_alloc(j->a, b->n);
    memcpy(d, b->p, b->n);
    return (Str){d, (uint32_t)b->n};
}

static int nested(JN *j, SqlType t, Str *out)
{
    if (++j->depth > JN_MAX_DEPTH)
        return fail(j, "JSON value nested too deeply");
    Buf enc = BUF_INIT;
    ArrElem e;
    int rc = 0;
    const NestType *s = nest_get(t);
    if (t.kind == TK_ARRAY) {
        SqlType et = type_elem(t);
        if (!eat(j, '[')) {
            rc = fail(j, "expected a JSON array");
            goto done;
        }
        if (!eat(j, ']')) {
            do {
                if ((rc = elem(j, et, &e)))
                    goto done;
                arr_put(&enc, type_phys(et), &e);
            } while (eat(j, ','));
            if (!eat(j, ']')) {
                rc = fail(j, "expected ',' or ']' in a JSON array");
                goto done;
            }
        }
        *out = keep(j, &enc);
        goto done;
    }
    if (!s || !eat(j, '{')) {
        rc = fail(j, s && s->kind == TK_MAP ? "expected a JSON object for a MAP"
                                             : "expected a JSON object for a ROW");
        goto done;
    }
    ArrElem *fields = NULL;
    Str *ents = NULL;
    int nents = 0;
    size_t *offs = NULL;
    if (s->kind == TK_ROW)
        fields = arena_zalloc(j->a, sizeof(ArrElem) * (size_t)s->n);
    for (int k = 0; s->kind == TK_ROW && k < s->n; k++)
        fields[k].null = true;
    if (!eat(j, '}')) {
        do {
            const char *name;
            size_t nn;
            ws(j);
            if (j->q >= j->end || *j->q != '"') {
                rc = fail(j, "expected a member name");
                goto done;
            }
            if ((rc = read_str(j, &name, &nn)))
                goto done;
            if (!eat(j, ':')) {
                rc = fail(j, "expected ':' after a member name");
                goto done;
            }
            if (s->kind == TK_ROW) {
                char *fname = arena_alloc(j->a, nn + 1);
                memcpy(fname, name, nn);
                fname[nn] = 0;
                int f = nest_field(s, fname);
                if (f < 0) {
                    rc = err_set(j->err, SL_EDATA, "unknown field \"%.*s\" of %s", (int)SL_MIN(nn, 100),
                                 name, s->name ? s->name : "a ROW");
                    goto done;
                }
                if ((rc = elem(j, s->t[f], &fields[f])))
                    goto done;
                continue;
            }
            ArrElem key;
            if ((rc = nest_elem_parse(s->t[0], name, nn, j->a, &key, j->err)))
                goto done;
            if (!(nents % 64)) {
                Str *ne = arena_alloc(j->a, sizeof(Str) * (size_t)(nents + 64));
                size_t *no = arena_alloc(j->a, sizeof(size_t) * (size_t)(nents + 65));
                if (nents) {
                    memcpy(ne, ents, sizeof(Str) * (size_t)nents);
                    memcpy(no, offs, sizeof(size_t) * (size_t)nents);
                }
                ents = ne;
                offs = no;
            }
            offs[nents++] = enc.n;
            arr_put(&enc, type_phys(s->t[0]), &key);
            offs[nents++] = enc.n;
            if ((rc = elem(j, s->t[1], &e)))
                goto done;
            arr_put(&enc, type_phys(s->t[1]), &e);
        } while (eat(j, ','));
        if (!eat(j, '}')) {
            rc = fail(j, "expected ',' or '}' in a JSON object");
            goto done;
        }
    }
    if (s->kind == TK_ROW) {
        for (int k = 0; k < s->n; k++)
            arr_put(&enc, type_phys(s->t[k]), &fields[k]);
        *out = keep(j, &enc);
    } else {
        Buf m = BUF_INIT;
        for (int k = 0; k < nents; k++) {
            size_t to = k + 1 < nents ? offs[k + 1] : enc.n;
            ents[k] = (Str){(const char *)enc.p + offs[k], (uint32_t)(to - offs[k])};
        }
        nest_map_build(ents, nents / 2, &m);
        *out = keep(j, &m);
        buf_free(&m);
    }
done:
    buf_free(&enc);
    j->depth--;
    return rc;
}

int json_nested_parse(SqlType t, const char *p, size_t n, size_t *used, Arena *a, Str *out,
                      Err *err)
{
    JN j = {p, p + n, a, err, 0};
    int rc = nested(&j, t, out);
    *used = (size_t)(j.q - p);
    return rc;
}

/* ------------------------------------------------------------- output */

static void put_elem(SqlType t, const ArrElem *e, Buf *out)
{
    if (e->null) {
        buf_puts(out, "null");
        return;
    }
    if (is_nested(t)) {
        json_nested_put(t, e->s, out);
        return;
    }
    if (t.kind == TK_BOOL) {
        buf_puts(out, e->i ? "true" : "false");
        return;
    }
    Buf one = BUF_INIT;
    nest_elem_text(t, e, &one);
    if (type_is_numeric(t.kind) && (type_phys(t) != PHYS_F64 || isfinite(e->f)))
        buf_append(out, one.p, one.n);
    else
        fmt_json__put_str(out, one.p ? (const char *)one.p : "", one.n);
    buf_free(&one);
}

void json_nested_put(SqlType t, Str v, Buf *out)
{
    ArrIt it;
    ArrElem e;
    const NestType *s = nest_get(t);
    arr_it(&it, t, v);
    if (t.kind == TK_ARRAY || !s) {
        SqlType et = type_elem(t);
        buf_putc(out, '[');
        for (int k = 0; arr_next(&it, &e); k++) {
            if (k)
                buf_putc(out, ',');
            put_elem(et, &e, out);
        }
        buf_putc(out, ']');
    } else if (s->kind == TK_ROW) {
        buf_putc(out, '{');
        for (int k = 0; k < s->n; k++) {
            it.ph = type_phys(s->t[k]);
            if (!arr_next(&it, &e))
                break;
            if (k)
                buf_putc(out, ',');
            fmt_json__put_str(out, s->names[k], strlen(s->names[k]));
            buf_putc(out, ':');
            put_elem(s->t[k], &e, out);
        }
        buf_putc(out, '}');
    } else {
        Buf key = BUF_INIT;
        buf_putc(out, '{');
        for (int k = 0;; k++) {
            it.ph = type_phys(s->t[k % 2]);
            if (!arr_next(&it, &e))
                break;
            if (k % 2) {
                buf_putc(out, ':');
                put_elem(s->t[1], &e, out);
                continue;
            }
            if (k)
                buf_putc(out, ',');
            buf_reset(&key);
            if (s->t[0].kind == TK_BOOL)
                buf_puts(&key, e.i ? "true" : "false");
            else
                nest_elem_text(s->t[0], &e, &key);
            fmt_json__put_str(out, key.p ? (const char *)key.p : "", key.n);
        }
        buf_putc(out, '}');
        buf_free(&key);
    }
    arr_it_done(&it);
}
