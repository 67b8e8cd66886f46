/*
 * expr/nested.c - ROW and MAP types: the table of shapes, MAP building and
 * the text forms (format in nested.h).
 */
#include "nested.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "array.h"
#include "text.h"

#define NEST_MAX_TYPES 65536

static NestType *tab[NEST_MAX_TYPES];
static int ntab;
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_shape(const NestType *s, TypeKind kind, const char *name, int n,
                       const char *const *names, const SqlType *t)
{
    if (s->kind != kind || s->n != n || !s->name != !name || (name && strcmp(s->name, name)))
        return false;
    for (int j = 0; j < n; j++) {
        SqlType a = t[j];
        a.nullable = 1;
        if (memcmp(&a, &s->t[j], sizeof(a)))
            return false;
        if (names && strcmp(names[j], s->names[j]))
            return false;
    }
    return true;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d)
        abort();
    memcpy(d, s, n);
    return d;
}

int nest_intern(TypeKind kind, const char *name, int n, const char *const *names,
                const SqlType *t)
{
    int id = -1;
    pthread_mutex_lock(&tab_lock);
    for (int k = 0; k < ntab; k++)
        if (same_shape(tab[k], kind, name, n, names, t)) {
            id = k + 1;
            goto done;
        }
    if (ntab == NEST_MAX_TYPES)
        goto done;
    NestType *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->kind = (uint8_t)kind;
    s->n = n;
    s->name = name ? dup_str(name) : NULL;
    s->t = calloc((size_t)n + 1, sizeof(SqlType));
    s->names = calloc((size_t)n + 1, sizeof(char *));
    if (!s->t || !s->names)
        abort();
    for (int j = 0; j < n; j++) {
        s->t[j] = t[j];
        s->t[j].nullable = 1;
        s->names[j] = dup_str(names ? names[j] : j ? "value" : "key");
    }
    __atomic_store_n(&tab[ntab], s, __ATOMIC_RELEASE);
    id = ++ntab;
done:
    pthread_mutex_unlock(&tab_lock);
    return id;
}

const NestType *nest_get(SqlType t)
{
    if ((t.kind != TK_ROW && t.kind != TK_MAP) || t.len < 1 || t.len > NEST_MAX_TYPES)
        return NULL;
    return __atomic_load_n(&tab[t.len - 1], __ATOMIC_ACQUIRE);
}

SqlType nest_array_of_arrays(SqlType inner, bool nullable)
{
    int id = nest_intern(TK_ARRAY, NULL, 1, (const char *const[]){"element"}, &inner);
    if (id < 0)
        abort(); /* 65536 distinct shapes in one process */
    SqlType r = {TK_ARRAY, (uint8_t)nullable, 0, 0, id, TK_ARRAY, {0, 0, 0}};
    return r;
}

SqlType nest_inner_array(SqlType t)
{
    const NestType *s = t.len >= 1 && t.len <= NEST_MAX_TYPES
                            ? __atomic_load_n(&tab[t.len - 1], __ATOMIC_ACQUIRE) : NULL;
    if (!s || s->kind != TK_ARRAY) /* never for types built by type_array */
        return type_make(TK_NULL, true);
    return s->t[0];
}

int nest_field(const NestType *s, const char *name)
{
    for (int j = 0; s && s->kind == TK_ROW && j < s->n; j++)
        if (!strcasecmp(s->names[j], name))
            return j;
    return -1;
}

const char *nest_type_name(SqlType t, char *buf, size_t size)
{
    const NestType *s = nest_get(t);
    if (!s) {
        snprintf(buf, size, "%s", t.kind == TK_MAP ? "MAP" : "ROW");
        return buf;
    }
    if (s->name) {
        snprintf(buf, size, "%s", s->name);
        return buf;
    }
    Buf b = BUF_INIT;
    char tb[256];
    if (s->kind == TK_MAP) {
        buf_printf(&b, "MAP<%s, ", type_name(s->t[0], tb, sizeof(tb)));
        buf_printf(&b, "%s>", type_name(s->t[1], tb, sizeof(tb)));
    } else {
        buf_puts(&b, "ROW(");
        for (int j = 0; j < s->n; j++)
            buf_printf(&b, "%s%s %s", j ? ", " : "", s->names[j],
                       type_name(s->t[j], tb, sizeof(tb)));
        buf_putc(&b, ')');
    }
    snprintf(buf, size, "%s", buf_cstr(&b));
    buf_free(&b);
    return buf;
}

void nest_describe(SqlType t, Buf *out)
{
    char tb[64];
    if (t.kind == TK_ARRAY) {
        nest_describe(type_elem(t), out);
        buf_puts(out, " ARRAY");
        return;
    }
    const NestType *s = nest_get(t);
    if (!s) {
        buf_puts(out, type_name(t, tb, sizeof(tb)));
        return;
    }
    buf_puts(out, s->kind == TK_MAP ? "MAP<" : "ROW(");
    if (s->name)
        buf_printf(out, "%s: ", s->name);
    for (int j = 0; j < s->n; j++) {
        if (j)
            buf_puts(out, ", ");
        if (s->kind == TK_ROW)
            buf_printf(out, "%s ", s->names[j]);
        nest_describe(s->t[j], out);
    }
    buf_putc(out, s->kind == TK_MAP ? '>' : ')');
}

/* ------------------------------------------------------------- elements */

const uint8_t *nest_elem_end(const uint8_t *p, const uint8_t *end, Phys ph)
{
    if (p >= end)
        return end;
    uint8_t tag = *p++;
    if (tag != ARR_VAL)
        return p;
    if (ph == PHYS_STR) {
        while (p < end && *p != 0x01)
            p += *p == 0x02 ? 2 : 1;
        return p < end ? p + 1 : end;
    }
    p += ph == PHYS_I128 ? 19 : 10;
    return p < end ? p : end;
}

void nest_elem_text(SqlType et, const ArrElem *e, Buf *out)
{
    if (et.kind == TK_BOOL)
        buf_putc(out, e->i ? 't' : 'f');
    else if (type_is_wide(et))
        text_format_dec(e->x, et.scale, out);
    else
        text_format(et, e->i, e->f, e->s, out);
}

int nest_elem_parse(SqlType et, const char *s, size_t n, Arena *a, ArrElem *e, Err *err)
{
    memset(e, 0, sizeof(*e));
    if (type_phys(et) == PHYS_I128)
        return text_parse_dec(et, s, n, &e->x, err);
    return text_parse(et, s, n, a, &e->i, &e->f, &e->s, err);
}

/* ------------------------------------------------------------- maps */

typedef struct Entry {
    Str k, v;
    int at;
} Entry;

static int entry_cmp(const void *x, const void *y)
{
    const Entry *a = x, *b = y;
    uint32_t n = a->k.n < b->k.n ? a->k.n : b->k.n;
    int c = n ? memcmp(a->k.p, b->k.p, n) : 0;
    if (!c)
        c = (a->k.n > b->k.n) - (a->k.n < b->k.n);
    return c ? c : (a->at > b->at) - (a->at < b->at);
}

void nest_map_build(Str *entries, int n, Buf *out)
{
    Entry *e = malloc(sizeof(Entry) * (size_t)(n ? n : 1));
    if (!e)
        abort();
    for (int k = 0; k < n; k++)
        e[k] = (Entry){entries[2 * k], entries[2 * k + 1], k};
    qsort(e, (size_t)n, sizeof(Entry), entry_cmp);
    for (int k = 0; k < n; k++) {
        if (k + 1 < n && e[k].k.n == e[k + 1].k.n && !memcmp(e[k].k.p, e[k + 1].k.p, e[k].k.n))
            continue; /* a later entry of the same key wins */
        buf_append(out, e[k].k.p, e[k].k.n);
        buf_append(out, e[k].v.p, e[k].v.n);
    }
    free(e);
}

/* ------------------------------------------------------------- text form */

static bool is_sp(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static void put_row_field(const char *s, size_t n, Buf *out)
{
    bool q = n == 0;
    for (size_t k = 0; k < n && !q; k++)
        q = s[k] == '(' || s[k] == ')' || s[k] == ',' || s[k] == '"' || s[k] == '\\' ||
            is_sp(s[k]);
    if (!q) {
        buf_append(out, s, n);
        return;
    }
    buf_putc(out, '"');
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '"' || s[k] == '\\')
            buf_putc(out, s[k]);
        buf_putc(out, s[k]);
    }
    buf_putc(out, '"');
}

static void put_map_item(const char *s, size_t n, Buf *out)
{
    bool q = n == 0 || (n == 4 && !strncasecmp(s, "null", 4));
    for (size_t k = 0; k < n && !q; k++)
        q = strchr("{}(),\"\\=>", s[k]) != NULL || is_sp(s[k]);
    if (!q) {
        buf_append(out, s, n);
        return;
    }
    buf_putc(out, '"');
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '"' || s[k] == '\\')
            buf_putc(out, '\\');
        buf_putc(out, s[k]);
    }
    buf_putc(out, '"');
}

void nest_format_text(SqlType t, Str v, Buf *out)
{
    const NestType *s = nest_get(t);
    if (!s)
        return;
    ArrIt it;
    ArrElem e;
    Buf one = BUF_INIT;
    arr_it(&it, t, v);
    if (s->kind == TK_ROW) {
        buf_putc(out, '(');
        for (int j = 0; j < s->n; j++) {
            it.ph = type_phys(s->t[j]);
            if (j)
                buf_putc(out, ',');
            if (!arr_next(&it, &e) || e.null)
                continue;
            buf_reset(&one);
            nest_elem_text(s->t[j], &e, &one);
            put_row_field((const char *)one.p, one.n, out);
        }
        buf_putc(out, ')');
    } else {
        buf_putc(out, '{');
        for (int k = 0;; k++) {
            it.ph = type_phys(s->t[k % 2]);
            if (!arr_next(&it, &e))
                break;
            if (k)
                buf_puts(out, k % 2 ? "=>" : ",");
            if (e.null) {
                buf_puts(out, "NULL");
                continue;
            }
            buf_reset(&one);
            nest_elem_text(s->t[k % 2], &e, &one);
            put_map_item((const char *)one.p, one.n, out);
        }
        buf_putc(out, '}');
    }
    buf_free(&one);
    arr_it_done(&it);
}

static int bad(Err *err, const NestType *s, const char *txt, size_t n, const char *why)
{
    return err_set(err, SL_EDATA, "malformed %s literal: \"%.*s\" (%s)",
                   s->kind == TK_ROW ? "record" : "map", (int)SL_MIN(n, 200), txt, why);
}

/* One ROW field at s[*p..n) into one (unquoted, unescaped); *isnull when
   it is empty and unquoted. */
static void row_token(const char *s, size_t n, size_t *p, Buf *one, bool *isnull)
{
    bool quoted = false;
    size_t q = *p;
    while (q < n && s[q] != ',' && s[q] != ')') {
        if (s[q] == '"') {
            quoted = true;
            q++;
            while (q < n) {
                if (s[q] == '"' && q + 1 < n && s[q + 1] == '"') {
                    buf_putc(one, '"');
                    q += 2;
                } else if (s[q] == '"') {
                    q++;
                    break;
                } else if (s[q] == '\\' && q + 1 < n) {
                    buf_putc(one, s[q + 1]);
                    q += 2;
                } else {
                    buf_putc(one, s[q++]);
                }
            }
        } else if (s[q] == '\\' && q + 1 < n) {
            buf_putc(one, s[q + 1]);
            q += 2;
        } else {
            buf_putc(one, s[q++]);
        }
    }
    *isnull = !quoted && one->n == 0;
    *p = q;
}

/* One MAP key or value: quoted (backslash escapes) or bare up to one of
   stop (trailing spaces cut); *quoted says which. false when malformed. */
static bool map_token(const char *s, size_t n, size_t *p, const char *stop, Buf *one,
                      bool *quoted)
{
    size_t q = *p;
    while (q < n && is_sp(s[q]))
        q++;
    *quoted = q < n && s[q] == '"';
    if (*quoted) {
        q++;
        while (q < n && s[q] != '"') {
            if (s[q] == '\\' && q + 1 < n)
                q++;
            buf_putc(one, s[q++]);
        }
        if (q >= n)
            return false;
        q++;
        while (q < n && is_sp(s[q]))
            q++;
    } else {
        size_t last = 0;
        while (q < n && !strchr(stop, s[q])) {
            if (s[q] == '"' || s[q] == '{')
                return false;
            if (s[q] == '\\' && q + 1 < n)
                q++;
            buf_putc(one, s[q]);
            if (!is_sp(s[q++]))
                last = one->n;
        }
        one->n = last;
        if (!last)
            return false;
    }
    *p = q;
    return true;
}

int nest_parse_text(SqlType t, const char *s, size_t n, Arena *a, Str *out, Err *err)
{
    const NestType *nt = nest_get(t);
    if (!nt)
        return err_set(err, SL_EDATA, "unknown ROW or MAP type");
    Buf enc = BUF_INIT, one = BUF_INIT;
    Str *ents = NULL;
    int nents = 0, cap = 0, rc = 0;
    size_t p = 0;
    ArrElem e;
    while (p < n && is_sp(s[p]))
        p++;
    if (nt->kind == TK_ROW) {
        if (p >= n || s[p] != '(') {
            rc = bad(err, nt, s, n, "missing left parenthesis");
            goto done;
        }
        p++;
        for (int j = 0; j < nt->n; j++) {
            bool isnull;
            buf_reset(&one);
            row_token(s, n, &p, &one, &isnull);
            memset(&e, 0, sizeof(e));
            e.null = isnull;
            if (!isnull && nest_elem_parse(nt->t[j], one.p ? (const char *)one.p : "", one.n, a,
                                           &e, err)) {
                rc = SL_EDATA;
                goto done;
            }
            arr_put(&enc, type_phys(nt->t[j]), &e);
            char want = j + 1 < nt->n ? ',' : ')';
            if (p >= n || s[p] != want) {
                rc = bad(err, nt, s, n, want == ',' ? "too few columns" : "too many columns");
                goto done;
            }
            p++;
        }
    } else {
        if (p >= n || s[p] != '{') {
            rc = bad(err, nt, s, n, "map value must start with \"{\"");
            goto done;
        }
        p++;
        while (p < n && is_sp(s[p]))
            p++;
        if (p < n && s[p] == '}') {
            p++;
        } else {
            for (;;) {
                size_t at = enc.n;
                for (int half = 0; half < 2; half++) {
                    bool quoted;
                    buf_reset(&one);
                    if (!map_token(s, n, &p, half ? ",}" : "=", &one, &quoted)) {
                        rc = bad(err, nt, s, n, "unexpected character or end");
                        goto done;
                    }
                    memset(&e, 0, sizeof(e));
                    if (!quoted && one.n == 4 && !strncasecmp((const char *)one.p, "null", 4)) {
                        if (!half) {
                            rc = bad(err, nt, s, n, "a map key cannot be NULL");
                            goto done;
                        }
                        e.null = true;
                    } else if (nest_elem_parse(nt->t[half], one.p ? (const char *)one.p : "",
                                               one.n, a, &e, err)) {
                        rc = SL_EDATA;
                        goto done;
                    }
                    arr_put(&enc, type_phys(nt->t[half]), &e);
                    if (!half) {
                        if (p + 1 >= n || s[p] != '=' || s[p + 1] != '>') {
                            rc = bad(err, nt, s, n, "expected \"=>\"");
                            goto done;
                        }
                        p += 2;
                    }
                }
                /* entries as offsets now, pointers once enc stops moving */
                if (nents + 2 > cap) {
                    cap = cap ? cap * 2 : 16;
                    ents = realloc(ents, sizeof(Str) * (size_t)cap);
                    if (!ents)
                        abort();
                }
                const uint8_t *b0 = enc.p + at, *end = enc.p + enc.n;
                const uint8_t *k1 = nest_elem_end(b0, end, type_phys(nt->t[0]));
                ents[nents++] = (Str){(const char *)(uintptr_t)at, (uint32_t)(k1 - b0)};
                ents[nents++] = (Str){(const char *)(uintptr_t)(k1 - enc.p),
                                      (uint32_t)(end - k1)};
                if (p < n && s[p] == ',') {
                    p++;
                    continue;
                }
                if (p < n && s[p] == '}') {
                    p++;
                    break;
                }
                rc = bad(err, nt, s, n, "expected \",\" or \"}\"");
                goto done;
            }
        }
    }
    while (p < n && is_sp(s[p]))
        p++;
    if (p != n) {
        rc = bad(err, nt, s, n, "junk after the value");
        goto done;
    }
    Buf fin = BUF_INIT;
    const Buf *src = &enc;
    if (nt->kind == TK_MAP) {
        for (int k = 0; k < nents; k++)
            ents[k].p = (const char *)enc.p + (uintptr_t)ents[k].p;
        nest_map_build(ents, nents / 2, &fin);
        src = &fin;
    }
    if (src->n > UINT32_MAX - 1) {
        rc = err_set(err, SL_EDATA, "value too long");
    } else if (src->n == 0) {
        *out = (Str){"", 0};
    } else {
        char *d = arena_alloc(a, src->n);
        memcpy(d, src->p, src->n);
        *out = (Str){d, (uint32_t)src->n};
    }
    buf_free(&fin);
done:
    free(ents);
    buf_free(&enc);
    buf_free(&one);
    return rc;
}
