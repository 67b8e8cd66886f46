/*
 * pgwire/binfmt.c - results in PostgreSQL's binary format (format code 1
 * of a Bind, per column or for all). A result reaches here already encoded
 * as text DataRows (proto.c, catalog.c, settings.c build it so, whatever
 * the statement); a portal that asked for binary columns has each such
 * field re-encoded from its text, which is the canonical text of
 * expr/text.h and reads back exactly (floats are written as the shortest
 * text that reads back, decimals with all their scale digits): bool one
 * byte, int2/int4/int8 big-endian, float4/float8 their IEEE bits, numeric
 * as ndigits, weight, sign, dscale and base-10000 digits, date as days and
 * time/timestamp as microseconds (since 2000-01-01 and midnight), the text
 * types and oid/name as their bytes, jsonb (VARIANT) as the byte 1 and its
 * JSON text. A column of any other type asked for
 * in binary is refused with 0A000 naming it, never sent as wrong bytes.
 * COPY ... TO STDOUT (FORMAT binary) (copy.c) uses the same encodings.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "../base/mem.h"
#include "../expr/text.h"
#include "pg_int.h"

#define PG_EPOCH_DAYS 10957 /* 1970-01-01 -> 2000-01-01 */
#define US_DAY 86400000000LL

static void be16(Buf *b, uint16_t v)
{
    v = htons(v);
    buf_append(b, &v, 2);
}

static void be32(Buf *b, uint32_t v)
{
    v = htonl(v);
    buf_append(b, &v, 4);
}

static void be64(Buf *b, uint64_t v)
{
    be32(b, (uint32_t)(v >> 32));
    be32(b, (uint32_t)v);
}

bool pg_bin_supported(uint32_t oid)
{
    switch (oid) {
    case 16: case 21: case 23: case 20: case 700: case 701: case 1700:
    case 25: case 1042: case 1043: case 19: case 26: case 1082: case 1083: case 1114:
    case 1184: case 3802:
        return true;
    default:
        return false;
    }
}

const char *pg_type_name(uint32_t oid)
{
    switch (oid) {
    case 16: return "bool";
    case 21: return "int2";
    case 23: return "int4";
    case 20: return "int8";
    case 26: return "oid";
    case 19: return "name";
    case 700: return "float4";
    case 701: return "float8";
    case 1700: return "numeric";
    case 25: return "text";
    case 1042: return "bpchar";
    case 1043: return "varchar";
    case 1082: return "date";
    case 1083: return "time";
    case 1114: return "timestamp";
    case 1184: return "timestamptz";
    case 1186: return "interval";
    case 17: return "bytea";
    case 3802: return "jsonb";
    default: return "unknown";
    }
}

/* Text digits [-]D*[.D*] as PostgreSQL's binary NUMERIC. */
static bool numeric_bin(const char *s, size_t n, Buf *out)
{
    size_t p = 0;
    bool neg = false;
    if (p < n && (s[p] == '-' || s[p] == '+'))
        neg = s[p++] == '-';
    size_t ib = p;
    while (p < n && s[p] >= '0' && s[p] <= '9')
        p++;
    size_t ie = p, fb = p, fe = p;
    if (p < n && s[p] == '.') {
        fb = ++p;
        while (p < n && s[p] >= '0' && s[p] <= '9')
            p++;
        fe = p;
    }
    if (p != n || (ie == ib && fe == fb) || fe - fb > 16383)
        return false;
    while (ib < ie && s[ib] == '0') /* leading zeros of the integer part */
        ib++;
    size_t ni = ie - ib, nf = fe - fb;
    int gi = (int)((ni + 3) / 4), gf = (int)((nf + 3) / 4);
    /* base-10000 groups: integer part right-aligned, fraction left-aligned */
    uint16_t *g = sl_calloc((size_t)(gi + gf) + 1, sizeof(uint16_t));
    for (size_t k = 0; k < ni; k++) {
        size_t pos = (size_t)gi * 4 - ni + k; /* digit position from the left of the groups */
        g[pos / 4] = (uint16_t)(g[pos / 4] * 10 + (s[ib + k] - '0'));
    }
    for (size_t k = 0; k < (size_t)gf * 4; k++) {
        int d = k < nf ? s[fb + k] - '0' : 0;
        size_t gx = (size_t)gi + k / 4;
        g[gx] = (uint16_t)(g[gx] * 10 + d);
    }
    int first = 0, last = gi + gf; /* strip zero groups at both ends */
    while (first < last && g[first] == 0)
        first++;
    while (last > first && g[last - 1] == 0)
        last--;
    int nd = last - first, weight = nd ? gi - 1 - first : 0;
    be16(out, (uint16_t)nd);
    be16(out, (uint16_t)(int16_t)weight);
    be16(out, nd && neg ? 0x4000 : 0);
    be16(out, (uint16_t)nf);
    for (int k = first; k < last; k++)
        be16(out, g[k]);
    sl_free(g);
    return true;
}

/* The binary form of text value s[0..n) of type oid into out; false when
   the text does not read as that type (a bug of ours: refused, not sent). */
static bool value_bin(uint32_t oid, const char *s, size_t n, Buf *out)
{
    Err err = {0};
    int64_t i = 0;
    double f = 0;
    Str str = {0};
    SqlType t = {0};
    switch (oid) {
    case 25: case 1042: case 1043: case 19:
        buf_append(out, s, n);
        return true;
    case 3802: /* jsonb: version 1, then the text */
        buf_putc(out, 1);
        buf_append(out, s, n);
        return true;
    case 16:
        if (n == 1 && (s[0] == 't' || s[0] == 'f')) {
            buf_putc(out, s[0] == 't');
            return true;
        }
        t.kind = TK_BOOL;
        break;
    case 21: t.kind = TK_SMALLINT; break;
    case 23: t.kind = TK_INT; break;
    case 20: case 26: t.kind = TK_BIGINT; break;
    case 700: t.kind = TK_REAL; break;
    case 701: t.kind = TK_DOUBLE; break;
    case 1082: t.kind = TK_DATE; break;
    case 1083: t.kind = TK_TIME; break;
    case 1114: t.kind = TK_TIMESTAMP; break;
    case 1184: t = type_tstz(0, false); break; /* the text's offset gives the instant */
    case 1700: return numeric_bin(s, n, out);
    default: return false;
    }
    if (text_parse(t, s, n, NULL, &i, &f, &str, &err))
        return false;
    switch (oid) {
    case 16: buf_putc(out, i != 0); break;
    case 21: be16(out, (uint16_t)(int16_t)i); break;
    case 23: be32(out, (uint32_t)(int32_t)i); break;
    case 26: be32(out, (uint32_t)i); break;
    case 20: be64(out, (uint64_t)i); break;
    case 700: {
        float x = (float)f;
        uint32_t b;
        memcpy(&b, &x, 4);
        be32(out, b);
        break;
    }
    case 701: {
        uint64_t b;
        memcpy(&b, &f, 8);
        be64(out, b);
        break;
    }
    case 1082: be32(out, (uint32_t)(int32_t)(i - PG_EPOCH_DAYS)); break;
    case 1083: be64(out, (uint64_t)i); break;
    case 1114:
    case 1184: be64(out, (uint64_t)(i - (int64_t)PG_EPOCH_DAYS * US_DAY)); break;
    default: return false;
    }
    return true;
}

static uint32_t rd32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return ntohl(v);
}

int pgres_set_formats(PgRes *r, int nf, const int16_t *fmts, PgErr *e)
{
    if (nf != 0 && nf != 1 && nf != r->ncol)
        return pg_err(e, "08P01", "bind message has %d result formats but query has %d "
                                  "columns", nf, r->ncol);
    bool any = false;
    for (int j = 0; j < r->ncol; j++) {
        int f = nf == 0 ? 0 : nf == 1 ? fmts[0] : fmts[j];
        if (f != 0 && f != 1)
            return pg_err(e, "22023", "unsupported format code: %d", f);
        if (f == 1 && !pg_bin_supported(r->oids[j]))
            return pg_err(e, "0A000", "no binary output for type %s (OID %u) of column \"%s\": "
                                      "ask for text (format 0) for it",
                          pg_type_name(r->oids[j]), r->oids[j], r->names[j]);
        any |= f == 1;
    }
    if (!any || r->ncol == 0)
        return 0;
    if (r->fmts) /* its rows are binary already */
        return pg_err(e, "XX000", "result formats set twice");
    r->fmts = sl_calloc((size_t)r->ncol, sizeof(int16_t));
    for (int j = 0; j < r->ncol; j++)
        r->fmts[j] = (int16_t)(nf == 1 ? fmts[0] : fmts[j]);
    /* re-encode the DataRows: the binary fields from their text */
    Buf nb = BUF_INIT;
    const char *p = (const char *)r->rows.p, *end = p + r->rows.n;
    int rc = 0;
    while (p < end && !rc) {
        size_t mlen = rd32(p + 1);
        const char *q = p + 7; /* type, length, field count */
        buf_putc(&nb, 'D');
        size_t start = nb.n;
        be32(&nb, 0);
        be16(&nb, (uint16_t)r->ncol);
        for (int j = 0; j < r->ncol; j++) {
            int32_t len = (int32_t)rd32(q);
            q += 4;
            if (len < 0) {
                be32(&nb, 0xFFFFFFFFu);
                continue;
            }
            if (!r->fmts[j]) {
                be32(&nb, (uint32_t)len);
                buf_append(&nb, q, (size_t)len);
            } else {
                size_t at = nb.n;
                be32(&nb, 0);
                if (!value_bin(r->oids[j], q, (size_t)len, &nb)) {
                    rc = pg_err(e, "XX000", "column \"%s\": value \"%.*s\" has no binary %s "
                                            "form", r->names[j], len > 64 ? 64 : (int)len, q,
                                pg_type_name(r->oids[j]));
                    break;
                }
                uint32_t vl = htonl((uint32_t)(nb.n - at - 4));
                memcpy(nb.p + at, &vl, 4);
            }
            q += len;
        }
        uint32_t ml = htonl((uint32_t)(nb.n - start));
        memcpy(nb.p + start, &ml, 4);
        p += 1 + mlen;
    }
    if (rc) {
        buf_free(&nb);
        return -1;
    }
    buf_free(&r->rows);
    r->rows = nb;
    return 0;
}
