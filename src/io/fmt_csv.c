/*
 * io/fmt_csv.c - CSV records (RFC 4180) <-> Chunk rows.
 *
 * In: bytes from an input transport. fmt_csv_record_len finds where the
 * next record ends (a quoted field may span lines), fmt_csv_parse turns one
 * record into one row of a Chunk (weight +1), with values read by text.h.
 * Out: fmt_csv_row / fmt_csv_header write text for output connectors and
 * --dump.
 *
 * Fields are separated by ','; a field that starts with '"' is quoted and
 * runs to the next lone '"' ('""' inside is one quote); after the closing
 * quote only ',' or the end of the record may follow. An empty unquoted
 * field is NULL, "" is the empty string. A record ends at '\n' outside
 * quotes; one '\r' before it is dropped. Parsing is all-or-nothing: values
 * are written into the chunk's next free row and n is bumped only when
 * every field was good. A record that is not valid UTF-8 is refused whole
 * (io/utf8.h), so every string value is valid UTF-8.
 */
#include "../expr/text.h"
#include "format.h"
#include "utf8.h"

#include <strings.h>

size_t fmt_csv_record_len(const char *p, size_t n, bool at_eof)
{
    size_t i = 0;
    bool field_start = true;
    while (i < n) {
        char c = p[i];
        if (field_start && c == '"') {
            i++;
            for (;;) {
                const char *q = memchr(p + i, '"', n - i);
                if (!q)
                    return at_eof ? n : 0;
                i = (size_t)(q - p) + 1;
                if (i < n && p[i] == '"') {
                    i++;
                    continue;
                }
                if (i == n && !at_eof) /* the next byte may be a second quote */
                    return 0;
                break;
            }
            field_start = false;
            continue;
        }
        if (c == '\n')
            return i + 1;
        field_start = c == ',';
        i++;
    }
    return at_eof ? n : 0;
}

typedef struct CsvField {
    const char *p; /* contents (inside the quotes when quoted) */
    size_t n;
    bool quoted;
    bool esc; /* holds "" pairs to undo */
} CsvField;

/* The field at *pos of rec[0..n); *pos moves past it and its separator,
   *more says whether another field follows. NULL, or why it is malformed. */
static const char *next_field(const char *rec, size_t n, size_t *pos, CsvField *f, bool *more)
{
    size_t i = *pos;
    f->quoted = f->esc = false;
    if (i < n && rec[i] == '"') {
        size_t j = i + 1;
        f->quoted = true;
        for (;;) {
            const char *q = memchr(rec + j, '"', n - j);
            if (!q)
                return "unterminated quoted field";
            j = (size_t)(q - rec);
            if (j + 1 < n && rec[j + 1] == '"') {
                f->esc = true;
                j += 2;
                continue;
            }
            break;
        }
        f->p = rec + i + 1;
        f->n = j - i - 1;
        j++;
        if (j < n && rec[j] != ',')
            return "text after the closing quote of a quoted field";
        *more = j < n;
        *pos = j + 1;
        return NULL;
    }
    const char *q = memchr(rec + i, ',', n - i);
    size_t j = q ? (size_t)(q - rec) : n;
    f->p = rec + i;
    f->n = j - i;
    *more = q != NULL;
    *pos = j + 1;
    return NULL;
}

static bool bool_word(const char *p, size_t n, int64_t *out)
{
    while (n > 0 && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n == 1) {
        char c = (char)(p[0] | 0x20);
        if (c == 't' || c == '1') {
            *out = 1;
            return true;
        }
        if (c == 'f' || c == '0') {
            *out = 0;
            return true;
        }
    } else if ((n == 4 && strncasecmp(p, "true", 4) == 0) ||
               (n == 5 && strncasecmp(p, "false", 5) == 0)) {
        *out = n == 4;
        return true;
    }
    return false;
}

static int put_field(const RowSchema *s, int j, const CsvField *f, Chunk *out, int64_t r,
                     Arena *a, Err *err)
{
    Vec *v = &out->col[j];
    const char *p = f->p;
    size_t n = f->n;
    if (!f->quoted && n == 0) {
        if (!v->nul)
            return err_set(err, SL_EDATA, "column \"%s\" is NOT NULL", s->names[j]);
        vec_set_null(v, r);
        return 0;
    }
    if (f->esc) {
        char *d = arena_alloc(a, n);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            d[k++] = p[i];
            if (p[i] == '"')
                i++; /* skip the second quote of a pair */
        }
        p = d;
        n = k;
    }
    if (v->nul)
        v->nul[r] = 0;
    if (v->t.kind == TK_BOOL && bool_word(p, n, &v->i[r]))
        return 0;
    Err e;
    err_init(&e);
    if (text_parse_vec(v, r, p, n, a, &e))
        return err_set(err, SL_EDATA, "column \"%s\": %s", s->names[j], e.msg);
    return 0;
}

int fmt_csv_parse(const RowSchema *s, const char *p, size_t n, Chunk *out, Arena *a, Err *err)
{
    CsvField f;
    size_t pos = 0;
    bool more = true;
    int nf = 0;
    if (n > 0 && p[n - 1] == '\n')
        n--;
    if (n > 0 && p[n - 1] == '\r')
        n--;
    size_t ok = utf8_valid_prefix(p, n);
    if (ok < n)
        return err_set(err, SL_EDATA, "invalid UTF-8 at byte %zu of the record (0x%02x)", ok + 1,
                       (unsigned)(unsigned char)p[ok]);
    while (more) {
        const char *why = next_field(p, n, &pos, &f, &more);
        if (why) {
            if (nf < s->ncol)
                return err_set(err, SL_EDATA, "column \"%s\": %s", s->names[nf], why);
            return err_set(err, SL_EDATA, "field %d: %s", nf + 1, why);
        }
        nf++;
    }
    if (nf != s->ncol)
        return err_set(err, SL_EDATA, "expected %d field%s, found %d", s->ncol,
                       s->ncol == 1 ? "" : "s", nf);
    if (out->n >= out->cap)
        sl_panic("fmt_csv_parse: chunk full (%lld rows)", (long long)out->cap);
    int64_t r = out->n;
    pos = 0;
    for (int j = 0; j < s->ncol; j++) {
        next_field(p, n, &pos, &f, &more);
        int rc = put_field(s, j, &f, out, r, a, err);
        if (rc)
            return rc;
    }
    out->w[r] = 1;
    out->n++;
    return 0;
}

/* s[0..n) as a CSV field: quoted when empty or holding , " CR LF. */
static void put_csv_str(Buf *out, const char *s, size_t n)
{
    bool quote = n == 0;
    for (size_t i = 0; i < n && !quote; i++) {
        char c = s[i];
        quote = c == ',' || c == '"' || c == '\r' || c == '\n';
    }
    if (!quote) {
        buf_append(out, s, n);
        return;
    }
    buf_putc(out, '"');
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') {
            buf_append(out, s + from, i + 1 - from); /* through the quote, then double it */
            from = i;
        }
    }
    buf_append(out, s + from, n - from);
    buf_putc(out, '"');
}

void fmt_csv_row(const Chunk *c, int64_t r, Buf *out)
{
    for (int j = 0; j < c->ncol; j++) {
        const Vec *v = &c->col[j];
        if (j)
            buf_putc(out, ',');
        if (vec_is_null(v, r))
            continue;
        if (v->t.kind == TK_ARRAY || v->t.kind == TK_ROW || v->t.kind == TK_MAP ||
            v->t.kind == TK_VARIANT) {
            /* its text form, '{1,2}', '(1,x)', '{a=>1}' or JSON, quoted as needed */
            Buf t = BUF_INIT;
            text_format_vec(v, r, &t);
            put_csv_str(out, (const char *)t.p, t.n);
            buf_free(&t);
        } else if (v->s)
            put_csv_str(out, v->s[r].p, v->s[r].n);
        else
            text_format_vec(v, r, out); /* numbers, booleans, dates: no special characters */
    }
}

void fmt_csv_header(const RowSchema *s, Buf *out)
{
    for (int j = 0; j < s->ncol; j++) {
        if (j)
            buf_putc(out, ',');
        put_csv_str(out, s->names[j], strlen(s->names[j]));
    }
}
