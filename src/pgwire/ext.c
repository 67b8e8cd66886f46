/*
 * pgwire/ext.c - the extended query protocol: Parse (a statement with $n
 * parameters, kept by name; "" is the unnamed one), Bind (a portal: the
 * statement with its parameters substituted as literals of their types,
 * text format, or binary for the fixed-size integer, float and boolean
 * types), Describe (a statement's parameters and a row-returning
 * statement's columns, found by running it once with NULL parameters; a
 * portal's columns, found by running it), Execute (the portal's rows, at
 * most max_rows at a time with PortalSuspended), Close, Sync, Flush.
 * Statements run through exec.c exactly as in a Query message. After an
 * error every message up to Sync is skipped, as the protocol says.
 * Results are in the formats Bind asks for (text, or binary for the
 * common types: binfmt.c, applied once the portal has run).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../expr/text.h"
#include "pg_int.h"

static PgPrep *find_prep(PgConn *c, const char *name)
{
    for (int i = 0; i < c->nprep; i++)
        if (!strcmp(c->preps[i].name, name))
            return &c->preps[i];
    return NULL;
}

static PgPortal *find_portal(PgConn *c, const char *name)
{
    for (int i = 0; i < c->nportal; i++)
        if (!strcmp(c->portals[i].name, name))
            return &c->portals[i];
    return NULL;
}

static void prep_clear(PgPrep *p)
{
    sl_free(p->name);
    sl_free(p->sql);
    sl_free(p->ptypes);
    memset(p, 0, sizeof(*p));
}

static void portal_clear(PgPortal *p)
{
    sl_free(p->name);
    sl_free(p->sql);
    sl_free(p->fmts);
    pgres_free(&p->res);
    memset(p, 0, sizeof(*p));
}

static void close_prep(PgConn *c, const char *name)
{
    PgPrep *p = find_prep(c, name);
    if (p) {
        prep_clear(p);
        *p = c->preps[--c->nprep];
    }
}

static void close_portal(PgConn *c, const char *name)
{
    PgPortal *p = find_portal(c, name);
    if (p) {
        portal_clear(p);
        *p = c->portals[--c->nportal];
    }
}

void pg_ext_free(PgConn *c)
{
    for (int i = 0; i < c->nprep; i++)
        prep_clear(&c->preps[i]);
    for (int i = 0; i < c->nportal; i++)
        portal_clear(&c->portals[i]);
    sl_free(c->preps);
    sl_free(c->portals);
}

/* The number of $n parameters sql uses (outside quotes and comments). */
static int count_params(const char *sql)
{
    int n = 0;
    for (const char *p = sql; *p; p++) {
        if (*p == '\'' || *p == '"') {
            char q = *p;
            for (p++; *p && !(*p == q && p[1] != q); p++)
                if (*p == q)
                    p++;
            if (!*p)
                break;
        } else if (p[0] == '-' && p[1] == '-') {
            while (p[1] && p[1] != '\n')
                p++;
        } else if (*p == '$' && isdigit((unsigned char)p[1])) {
            int k = atoi(p + 1);
            if (k > n)
                n = k;
        }
    }
    return n;
}

/* The literal of parameter value v (text) of type oid. */
static void literal(Buf *out, uint32_t oid, const char *v, size_t n)
{
    bool num = n > 0;
    for (size_t i = 0; i < n && num; i++)
        num = isdigit((unsigned char)v[i]) || v[i] == '-' || v[i] == '.' || v[i] == 'e' ||
              v[i] == 'E' || v[i] == '+';
    switch (oid) {
    case 20: case 21: case 23: case 26: case 700: case 701: case 1700:
        if (num) {
            buf_append(out, v, n);
            return;
        }
        break;
    case 16:
        buf_puts(out, n && (v[0] == 't' || v[0] == 'T' || v[0] == '1' || v[0] == 'y' ||
                            v[0] == 'o' || v[0] == 'O')
                          ? (n > 1 && (v[1] == 'f' || v[1] == 'F') ? "FALSE" : "TRUE")
                          : "FALSE");
        return;
    case 1082:
        buf_puts(out, "DATE ");
        break;
    case 1083:
        buf_puts(out, "TIME ");
        break;
    case 1114:
        buf_puts(out, "TIMESTAMP ");
        break;
    case 1184:
        buf_puts(out, "TIMESTAMPTZ ");
        break;
    case 0:
        if (num && (isdigit((unsigned char)v[0]) || v[0] == '-')) {
            buf_append(out, v, n); /* an untyped number: as written */
            return;
        }
        break;
    default:
        break;
    }
    buf_putc(out, '\'');
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '\'')
            buf_putc(out, '\'');
        buf_putc(out, v[i]);
    }
    buf_putc(out, '\'');
}

/* A binary numeric (base-10000 digits) as text. */
static bool numeric_text(const unsigned char *v, size_t n, char *out, size_t on)
{
    if (n < 8)
        return false;
    int nd = v[0] << 8 | v[1], weight = (int16_t)(v[2] << 8 | v[3]);
    int sign = v[4] << 8 | v[5], dscale = v[6] << 8 | v[7];
    if (n != 8 + (size_t)nd * 2 || sign == 0xC000 || dscale > 1000)
        return false;
    Buf b = BUF_INIT;
    if (sign == 0x4000)
        buf_putc(&b, '-');
    /* integer part: groups weight..0, fraction: groups -1..-ceil(dscale/4) */
    if (weight < 0)
        buf_putc(&b, '0');
    for (int g = weight; g >= 0; g--) {
        int i = weight - g, d = i < nd ? (v[8 + 2 * i] << 8 | v[9 + 2 * i]) : 0;
        buf_printf(&b, g == weight ? "%d" : "%04d", d);
    }
    if (dscale > 0) {
        buf_putc(&b, '.');
        char frac[1100];
        int k = 0;
        for (int g = -1; k < dscale; g--) {
            int i = weight - g, d = i >= 0 && i < nd ? (v[8 + 2 * i] << 8 | v[9 + 2 * i]) : 0;
            k += snprintf(frac + k, sizeof(frac) - (size_t)k, "%04d", d);
        }
        buf_append(&b, frac, (size_t)dscale);
    }
    bool ok = b.n < on;
    if (ok)
        memcpy(out, b.p, b.n), out[b.n] = 0;
    buf_free(&b);
    return ok;
}

/* A binary parameter as text; false for a type whose binary form is not
   read here. */
static bool binary_text(uint32_t oid, const char *v, size_t n, char *out, size_t on)
{
    uint64_t x = 0;
    if (oid == 1700)
        return numeric_text((const unsigned char *)v, n, out, on);
    if (n > 8)
        return false;
    for (size_t i = 0; i < n; i++)
        x = x << 8 | (unsigned char)v[i];
    switch (oid) {
    case 16:
        if (n != 1)
            return false;
        snprintf(out, on, "%s", x ? "t" : "f");
        return true;
    case 21:
        if (n != 2)
            return false;
        snprintf(out, on, "%d", (int16_t)x);
        return true;
    case 23:
        if (n != 4)
            return false;
        snprintf(out, on, "%d", (int32_t)x);
        return true;
    case 20:
        if (n != 8)
            return false;
        snprintf(out, on, "%lld", (long long)(int64_t)x);
        return true;
    case 700: {
        if (n != 4)
            return false;
        uint32_t b = (uint32_t)x;
        float f;
        memcpy(&f, &b, 4);
        snprintf(out, on, "%.9g", f);
        return true;
    }
    case 701: {
        if (n != 8)
            return false;
        double d;
        memcpy(&d, &x, 8);
        snprintf(out, on, "%.17g", d);
        return true;
    }
    case 1082: /* days since 2000-01-01 */
    case 1114: /* microseconds since 2000-01-01 */
    case 1184: /* the same, UTC */
    case 1083: { /* microseconds since midnight */
        if (n != (oid == 1082 ? 4u : 8u))
            return false;
        int64_t t = oid == 1082 ? (int64_t)(int32_t)x : (int64_t)x;
        int64_t us = oid == 1082 ? 0 : t % 86400000000LL, days = oid == 1082 ? t : t / 86400000000LL;
        if (us < 0)
            us += 86400000000LL, days--;
        days += 10957; /* 1970 -> 2000 */
        int y, m, d;
        date_to_ymd(days, &y, &m, &d);
        int hh = (int)(us / 3600000000LL), mi = (int)(us / 60000000 % 60), ss = (int)(us / 1000000 % 60);
        int frac = (int)(us % 1000000);
        if (oid == 1082)
            snprintf(out, on, "%04d-%02d-%02d", y, m, d);
        else if (oid == 1083)
            snprintf(out, on, "%02d:%02d:%02d.%06d", hh, mi, ss, frac);
        else
            snprintf(out, on, "%04d-%02d-%02d %02d:%02d:%02d.%06d%s", y, m, d, hh, mi, ss, frac,
                     oid == 1184 ? "+00" : "");
        return true;
    }
    default:
        return false;
    }
}

/* sql with $1..$n replaced by vals[i] (NULL: SQL NULL) as literals. */
static char *substitute(const char *sql, int n, const uint32_t *oids, char *const *vals,
                        const size_t *lens)
{
    Buf out = BUF_INIT;
    for (const char *p = sql; *p;) {
        if (*p == '\'' || *p == '"') {
            const char *s = p;
            char q = *p;
            for (p++; *p && !(*p == q && p[1] != q); p++)
                if (*p == q)
                    p++;
            if (*p)
                p++;
            buf_append(&out, s, (size_t)(p - s));
            continue;
        }
        if (p[0] == '-' && p[1] == '-') {
            const char *s = p;
            while (*p && *p != '\n')
                p++;
            buf_append(&out, s, (size_t)(p - s));
            continue;
        }
        if (*p == '$' && isdigit((unsigned char)p[1])) {
            char *end;
            long k = strtol(p + 1, &end, 10);
            if (k >= 1 && k <= n) {
                if (!vals[k - 1])
                    buf_puts(&out, "NULL");
                else
                    literal(&out, oids[k - 1], vals[k - 1], lens[k - 1]);
                p = end;
                continue;
            }
        }
        buf_putc(&out, *p++);
    }
    buf_cstr(&out);
    return (char *)out.p;
}

/* Does sql return rows (so that Describe runs it)? */
static bool returns_rows(const char *sql)
{
    const char *p = pg_skip_ws(sql);
    char w[16];
    pg_word(p, w, sizeof(w));
    return *p == '(' || !strcmp(w, "SELECT") || !strcmp(w, "WITH") || !strcmp(w, "VALUES") ||
           !strcmp(w, "TABLE") || !strcmp(w, "SHOW");
}

/* Run sql (a portal's or a statement's) into res. */
static int run(PgConn *c, const char *sql, PgRes *res, PgErr *e)
{
    const char *p = pg_skip_ws(sql);
    char w[16];
    pg_word(p, w, sizeof(w));
    if (!strcmp(w, "COPY") || !strcmp(w, "SUBSCRIBE"))
        return pg_err(e, "0A000", "%s runs in a simple Query message only (the extended "
                                  "protocol has no COPY or streaming here)", w);
    c->query = sql;
    int rc = pg_exec(c, sql, 0, res, e);
    c->query = NULL;
    return rc < 0 ? -1 : 0;
}

static int do_parse(PgConn *c, PgRd *r, PgErr *e)
{
    const char *name = pgrd_str(r), *sql = pgrd_str(r);
    int np = pgrd_i16(r);
    if (r->bad || np < 0 || (size_t)np * 4 > r->n - r->pos)
        return pg_err(e, "08P01", "invalid Parse message");
    if (*name && find_prep(c, name))
        return pg_err(e, "42P05", "prepared statement \"%s\" already exists", name);
    close_prep(c, name);
    int n = count_params(sql);
    if (np > n)
        n = np;
    PgPrep *p = VEC_PUSH(c->preps, c->nprep, c->capprep);
    p->name = sl_strdup(name);
    p->sql = sl_strdup(sql);
    p->nparam = n;
    p->ptypes = sl_calloc((size_t)n + 1, sizeof(uint32_t));
    for (int i = 0; i < np; i++)
        p->ptypes[i] = (uint32_t)pgrd_i32(r);
    pg_begin(c, '1');
    pg_end(c);
    return 0;
}

static int do_bind(PgConn *c, PgRd *r, PgErr *e)
{
    const char *portal = pgrd_str(r), *stmt = pgrd_str(r);
    PgPrep *p = find_prep(c, stmt);
    if (!p)
        return pg_err(e, "26000", "prepared statement \"%s\" does not exist", stmt);
    int nf = pgrd_i16(r);
    if (r->bad || nf < 0 || (size_t)nf * 2 > r->n - r->pos)
        return pg_err(e, "08P01", "invalid Bind message");
    int16_t fmts[64] = {0};
    for (int i = 0; i < nf; i++) {
        int f = pgrd_i16(r);
        if (i < 64)
            fmts[i] = (int16_t)f;
    }
    int np = pgrd_i16(r);
    if (r->bad || np != p->nparam || nf > 64 || (nf > 1 && nf != np))
        return pg_err(e, "08P01", "bind message supplies %d parameters, but prepared statement "
                                  "\"%s\" requires %d", np, stmt, p->nparam);
    char **vals = sl_calloc((size_t)np + 1, sizeof(char *));
    size_t *lens = sl_calloc((size_t)np + 1, sizeof(size_t));
    int rc = 0;
    for (int i = 0; i < np && !rc; i++) {
        int32_t len = pgrd_i32(r);
        if (len == -1)
            continue;
        const char *v = len >= 0 ? pgrd_bytes(r, (size_t)len) : NULL;
        if (!v || r->bad) {
            rc = pg_err(e, "08P01", "invalid Bind message");
            break;
        }
        int fmt = nf == 0 ? 0 : nf == 1 ? fmts[0] : fmts[i];
        uint32_t oid = p->ptypes[i];
        if (oid == 25 || oid == 1043 || oid == 1042 || oid == 19 || oid == 705)
            fmt = 0; /* the binary form of text is its bytes */
        if (fmt == 1) {
            char t[1100];
            if (!binary_text(oid, v, (size_t)len, t, sizeof(t))) {
                rc = pg_err(e, "0A000", "parameter $%d: binary format is read for bool, "
                                        "int2/4/8, float4/8, numeric, date, time, timestamp "
                                        "and text types only; send it as text", i + 1);
                break;
            }
            vals[i] = sl_strdup(t);
            lens[i] = strlen(t);
        } else {
            vals[i] = sl_strndup(v, (size_t)len);
            lens[i] = (size_t)len;
        }
    }
    int nr = rc ? 0 : pgrd_i16(r);
    int16_t *rf = NULL;
    if (!rc && (nr < 0 || (size_t)nr * 2 > r->n - r->pos))
        rc = pg_err(e, "08P01", "invalid Bind message");
    else if (nr > 0)
        rf = sl_calloc((size_t)nr, sizeof(int16_t));
    for (int i = 0; i < nr && !rc; i++)
        rf[i] = (int16_t)pgrd_i16(r);
    if (!rc && r->bad)
        rc = pg_err(e, "08P01", "invalid Bind message");
    if (!rc) {
        char *sql = substitute(p->sql, np, p->ptypes, vals, lens);
        close_portal(c, portal);
        PgPortal *po = VEC_PUSH(c->portals, c->nportal, c->capportal);
        memset(po, 0, sizeof(*po));
        po->name = sl_strdup(portal);
        po->sql = sql;
        po->nfmt = nr;
        po->fmts = rf;
        rf = NULL;
        pg_begin(c, '2');
        pg_end(c);
    }
    for (int i = 0; i < np; i++)
        sl_free(vals[i]);
    sl_free(vals);
    sl_free(lens);
    sl_free(rf);
    return rc;
}

/* Run a portal once (its rows kept for Execute). */
static int portal_run(PgConn *c, PgPortal *po, PgErr *e)
{
    if (po->ran)
        return 0;
    po->ran = true;
    if (run(c, po->sql, &po->res, e))
        return -1;
    return po->res.has_rows ? pgres_set_formats(&po->res, po->nfmt, po->fmts, e) : 0;
}

static int do_describe(PgConn *c, PgRd *r, PgErr *e)
{
    const char *k = pgrd_bytes(r, 1);
    int kind = k ? (unsigned char)*k : 0;
    const char *name = pgrd_str(r);
    if (r->bad)
        return pg_err(e, "08P01", "invalid Describe message");
    if (kind == 'S') {
        PgPrep *p = find_prep(c, name);
        if (!p)
            return pg_err(e, "26000", "prepared statement \"%s\" does not exist", name);
        pg_begin(c, 't');
        pg_i16(c, p->nparam);
        for (int i = 0; i < p->nparam; i++)
            pg_i32(c, (int32_t)(p->ptypes[i] ? p->ptypes[i] : 25));
        pg_end(c);
        if (!returns_rows(p->sql)) {
            pg_begin(c, 'n');
            pg_end(c);
            return 0;
        }
        /* the columns: run it once with NULL parameters */
        char **vals = sl_calloc((size_t)p->nparam + 1, sizeof(char *));
        size_t *lens = sl_calloc((size_t)p->nparam + 1, sizeof(size_t));
        char *sql = substitute(p->sql, p->nparam, p->ptypes, vals, lens);
        PgRes res = {0};
        int rc = run(c, sql, &res, e);
        if (!rc)
            pg_send_desc(c, &res);
        pgres_free(&res);
        sl_free(sql);
        sl_free(vals);
        sl_free(lens);
        return rc;
    }
    if (kind != 'P')
        return pg_err(e, "08P01", "invalid Describe message: kind must be S or P");
    PgPortal *po = find_portal(c, name);
    if (!po)
        return pg_err(e, "34000", "portal \"%s\" does not exist", name);
    if (!returns_rows(po->sql)) {
        pg_begin(c, 'n');
        pg_end(c);
        return 0;
    }
    if (portal_run(c, po, e))
        return -1;
    pg_send_desc(c, &po->res);
    return 0;
}

static int do_execute(PgConn *c, PgRd *r, PgErr *e)
{
    const char *name = pgrd_str(r);
    int32_t max = pgrd_i32(r);
    if (r->bad)
        return pg_err(e, "08P01", "invalid Execute message");
    PgPortal *po = find_portal(c, name);
    if (!po)
        return pg_err(e, "34000", "portal \"%s\" does not exist", name);
    if (!po->sql[strspn(po->sql, " \t\r\n;")]) {
        pg_begin(c, 'I');
        pg_end(c);
        return 0;
    }
    if (portal_run(c, po, e))
        return -1;
    PgRes *res = &po->res;
    /* the rows from where the last Execute stopped */
    size_t off = po->sent, end = res->rows.n;
    int64_t k = 0;
    while (off < end && (max <= 0 || k < max)) {
        uint32_t len;
        memcpy(&len, res->rows.p + off + 1, 4);
        off += 1 + ntohl(len);
        k++;
    }
    buf_append(&c->out, res->rows.p + po->sent, off - po->sent);
    po->sent = off;
    if (off < end) {
        pg_begin(c, 's'); /* PortalSuspended */
        pg_end(c);
    } else {
        pg_send_complete(c, res->tag);
    }
    return 0;
}

bool pg_extended(PgConn *c, char type)
{
    if (type == 'S') { /* Sync */
        c->skip_to_sync = false;
        close_portal(c, "");
        pg_ready(c);
        return pg_flush(c);
    }
    if (type == 'H') /* Flush */
        return pg_flush(c);
    if (c->skip_to_sync)
        return true;
    PgRd r = {(const char *)c->msg.p, c->msg.n, 0, false};
    PgErr e;
    memset(&e, 0, sizeof(e));
    int rc;
    switch (type) {
    case 'P':
        rc = do_parse(c, &r, &e);
        break;
    case 'B':
        rc = do_bind(c, &r, &e);
        break;
    case 'D':
        rc = do_describe(c, &r, &e);
        break;
    case 'E':
        rc = do_execute(c, &r, &e);
        break;
    case 'C': {
        int kind = r.n ? (unsigned char)r.p[0] : 0;
        r.pos = 1;
        const char *name = pgrd_str(&r);
        if (kind == 'S')
            close_prep(c, name);
        else
            close_portal(c, name);
        pg_begin(c, '3');
        pg_end(c);
        rc = 0;
        break;
    }
    case 'd': case 'c': case 'f': /* copy data outside a COPY: ignored, as PostgreSQL does */
        return true;
    default: {
        char m[96];
        snprintf(m, sizeof(m), "invalid frontend message type %d", (unsigned char)type);
        pg_err(&e, "08P01", "%s", m);
        e.fatal = true;
        pg_send_error(c, &e);
        pg_flush(c);
        return false;
    }
    }
    if (rc) {
        pg_send_error(c, &e);
        if (c->in_block)
            c->failed = true;
        c->skip_to_sync = true;
    }
    if (c->out.n > (1 << 16))
        return pg_flush(c);
    return !c->broken;
}
