/*
 * pgwire/catalog.c - the queries clients send about the server rather than
 * the data: SELECT version(), current_setting('x'), current_database(),
 * ... (one row of known functions), and the pg_catalog queries of psql's
 * \dt, \dv and \d NAME, recognised by their shape and answered from the
 * circuit's relations (tables are relkind 'r', views 'v', OIDs 16384 +
 * the relation's index). Other pg_catalog / information_schema queries
 * get an empty answer with the columns they asked for unknown: a client
 * that only probes goes on.
 */
#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/mem.h"
#include "pg_int.h"

#define OID_BASE 16384

/* ---------------------------------------------------------------- functions */

/* The value of a call of a known function at *p (advanced past it), or
   NULL when it is not one. */
static const char *call(PgConn *c, const char **p, char *buf, size_t bn, char *label, size_t ln)
{
    const char *q = *p;
    while (isspace((unsigned char)*q))
        q++;
    if (!strncasecmp(q, "pg_catalog.", 11))
        q += 11;
    size_t n = 0;
    while (isalnum((unsigned char)q[n]) || q[n] == '_')
        n++;
    if (!n || n >= ln)
        return NULL;
    snprintf(label, ln, "%.*s", (int)n, q);
    for (char *l = label; *l; l++)
        *l = (char)tolower((unsigned char)*l);
    const char *a = q + n;
    while (isspace((unsigned char)*a))
        a++;
    char arg[128] = "";
    bool paren = *a == '(';
    if (paren) {
        a++;
        while (isspace((unsigned char)*a))
            a++;
        if (*a == '\'') {
            size_t k = 0;
            for (a++; *a && *a != '\''; a++)
                if (k + 1 < sizeof(arg))
                    arg[k++] = *a;
            arg[k] = 0;
            if (*a)
                a++;
        }
        while (*a && *a != ')')
            a++;
        if (*a != ')')
            return NULL;
        a++;
    }
    const char *v = NULL;
    if (!strcmp(label, "version") && paren)
        v = "PostgreSQL " PG_SERVER_VERSION " (Sluice, an incremental SQL pipeline engine)";
    else if (!strcmp(label, "current_setting") && paren && arg[0])
        v = pg_setting(c, arg);
    else if ((!strcmp(label, "current_database") && paren) || !strcmp(label, "current_catalog"))
        v = c->db;
    else if (!strcmp(label, "current_schema"))
        v = "public";
    else if (!strcmp(label, "current_user") || !strcmp(label, "session_user") ||
             !strcmp(label, "user"))
        v = c->user;
    else if (!strcmp(label, "pg_backend_pid") && paren) {
        snprintf(buf, bn, "%lld", (long long)c->pid);
        v = buf;
    } else if (!strcmp(label, "pg_is_in_recovery") && paren)
        v = "f";
    if (!v)
        return NULL;
    *p = a;
    return v;
}

/* SELECT f(...) [AS x], ... of known functions only: one row. */
static int functions(PgConn *c, const char *sql, PgRes *res)
{
    const char *p = sql + 6;
    enum { MAXF = 8 };
    char bufs[MAXF][32], labels[MAXF][64];
    const char *vals[MAXF];
    int n = 0;
    for (;;) {
        if (n == MAXF)
            return 0;
        vals[n] = call(c, &p, bufs[n], sizeof(bufs[n]), labels[n], sizeof(labels[n]));
        if (!vals[n])
            return 0;
        while (isspace((unsigned char)*p))
            p++;
        if (!strncasecmp(p, "AS", 2) && isspace((unsigned char)p[2])) {
            p += 2;
            while (isspace((unsigned char)*p))
                p++;
            size_t k = 0;
            bool q = *p == '"';
            p += q;
            while (*p && (q ? *p != '"' : (isalnum((unsigned char)*p) || *p == '_'))) {
                if (k + 1 < sizeof(labels[n]))
                    labels[n][k++] = *p;
                p++;
            }
            labels[n][k] = 0;
            p += q && *p == '"';
            while (isspace((unsigned char)*p))
                p++;
        }
        n++;
        if (*p == ',') {
            p++;
            continue;
        }
        break;
    }
    while (isspace((unsigned char)*p) || *p == ';')
        p++;
    if (*p)
        return 0;
    pgres_cols(res, n);
    for (int i = 0; i < n; i++)
        pgres_col(res, i, labels[i], 25);
    pgres_row(res, vals);
    snprintf(res->tag, sizeof(res->tag), "SELECT 1");
    return 1;
}

/* ---------------------------------------------------------------- psql */

/* sql with every run of white space made one space. */
static char *squeeze(const char *sql)
{
    char *o = sl_malloc(strlen(sql) + 1), *w = o;
    for (const char *p = sql; *p; p++) {
        if (isspace((unsigned char)*p)) {
            if (w > o && w[-1] != ' ')
                *w++ = ' ';
            continue;
        }
        *w++ = *p;
    }
    *w = 0;
    return o;
}

/* The regular expression psql gives for a name pattern ("c.relname
   OPERATOR(pg_catalog.~) '^(t.*)$'"), compiled; false when none. */
static bool name_regex(const char *q, regex_t *re)
{
    const char *p = strstr(q, "relname OPERATOR(pg_catalog.~) '");
    size_t skip = 32;
    if (!p) {
        p = strstr(q, "relname ~ '");
        skip = 11;
    }
    if (!p)
        return false;
    p += skip;
    const char *e = strchr(p, '\'');
    if (!e)
        return false;
    char *pat = sl_strndup(p, (size_t)(e - p));
    bool ok = regcomp(re, pat, REG_EXTENDED | REG_NOSUB | REG_ICASE) == 0;
    sl_free(pat);
    return ok;
}

/* Relations that pass the query's name pattern and relkind list. */
static bool wanted(const Relation *r, const char *q, bool has_re, const regex_t *re)
{
    if (has_re && regexec(re, r->name, 0, NULL, 0))
        return false;
    const char *in = strstr(q, "relkind IN (");
    if (in) {
        const char *end = strchr(in, ')');
        char kind[4] = {'\'', r->is_table ? 'r' : 'v', '\'', 0};
        const char *k = strstr(in, kind);
        if (!k || (end && k > end))
            return false;
    }
    return true;
}

static void oid_str(char *b, size_t n, int rel) { snprintf(b, n, "%d", OID_BASE + rel); }

/* The relation a "... = '16390'" in q names (after key), or -1. */
static int oid_after(const PgConn *c, const char *q, const char *key)
{
    const char *p = strstr(q, key);
    if (!p)
        return -1;
    p += strlen(key);
    while (*p == ' ' || *p == '=' || *p == '\'')
        p++;
    long oid = strtol(p, NULL, 10) - OID_BASE;
    return oid >= 0 && oid < c->s->c->nrels ? (int)oid : -1;
}

/* \dt, \dv, \d: the list of relations with the columns psql names. */
static void list_rels(PgConn *c, const char *q, PgRes *res)
{
    /* the labels: as "Schema", as "Name", ... between SELECT and FROM */
    const char *from = strstr(q, " FROM pg_catalog.pg_class");
    char labels[12][64];
    int n = 0;
    for (const char *p = q; (p = strstr(p, " as \"")) && p < from && n < 12; p += 5) {
        const char *e = strchr(p + 5, '"');
        if (!e)
            break;
        snprintf(labels[n++], sizeof(labels[0]), "%.*s", (int)(e - p - 5), p + 5);
    }
    pgres_cols(res, n);
    for (int j = 0; j < n; j++)
        pgres_col(res, j, labels[j], 25);
    regex_t re;
    bool has_re = name_regex(q, &re);
    const Circuit *ci = c->s->c;
    for (int i = 0; i < ci->nrels; i++) {
        const Relation *r = &ci->rels[i];
        if (!wanted(r, q, has_re, &re))
            continue;
        const char *vals[12];
        for (int j = 0; j < n; j++) {
            const char *l = labels[j];
            vals[j] = !strcmp(l, "Schema")  ? "public"
                      : !strcmp(l, "Name")  ? r->name
                      : !strcmp(l, "Type")  ? (r->is_table ? "table" : "view")
                      : !strcmp(l, "Owner") ? "sluice"
                      : !strcmp(l, "Persistence") ? "permanent"
                                                  : "";
        }
        pgres_row(res, vals);
    }
    if (has_re)
        regfree(&re);
}

/* \d NAME, first query: oid, schema, name of the relations matching. */
static void find_rels(PgConn *c, const char *q, PgRes *res)
{
    pgres_cols(res, 3);
    pgres_col(res, 0, "oid", 26);
    pgres_col(res, 1, "nspname", 19);
    pgres_col(res, 2, "relname", 19);
    regex_t re;
    bool has_re = name_regex(q, &re);
    const Circuit *ci = c->s->c;
    for (int i = 0; i < ci->nrels; i++) {
        if (has_re && regexec(&re, ci->rels[i].name, 0, NULL, 0))
            continue;
        char oid[16];
        oid_str(oid, sizeof(oid), i);
        const char *vals[3] = {oid, "public", ci->rels[i].name};
        pgres_row(res, vals);
    }
    if (has_re)
        regfree(&re);
}

/* \d NAME, second query: the relation's properties (psql 15's columns). */
static void rel_props(PgConn *c, int rel, PgRes *res)
{
    static const char *const cols[] = {
        "relchecks", "relkind", "relhasindex", "relhasrules", "relhastriggers",
        "relrowsecurity", "relforcerowsecurity", "relhasoids", "relispartition", "?column?",
        "reltablespace", "reloftype", "relpersistence", "relreplident", "amname"};
    int n = (int)(sizeof(cols) / sizeof(cols[0]));
    pgres_cols(res, n);
    for (int j = 0; j < n; j++)
        pgres_col(res, j, cols[j], 25);
    if (rel < 0)
        return;
    const Relation *r = &c->s->c->rels[rel];
    const char *vals[] = {"0", r->is_table ? "r" : "v", "f", "f", "f", "f", "f", "f", "f", "",
                          "0", "", "p", "d", ""};
    pgres_row(res, vals);
}

/* The items of q's top-level select list. */
static int select_items(const char *q)
{
    int n = 1, depth = 0;
    for (const char *p = q + 6; *p; p++) {
        if (*p == '\'' || *p == '"') {
            char c = *p;
            for (p++; *p && *p != c; p++)
                ;
            if (!*p)
                break;
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            depth--;
        } else if (depth == 0 && *p == ',') {
            n++;
        } else if (depth == 0 && !strncmp(p, " FROM ", 6)) {
            break;
        }
    }
    return n;
}

/* \d NAME, the columns: name, type, default, not null, collation,
   identity, generated. */
static void rel_columns(PgConn *c, int rel, const char *q, PgRes *res)
{
    /* psql 15 asks for 7 columns, more with \d+ (storage 'p', the rest NULL) */
    int n = select_items(q);
    if (n < 7)
        n = 7;
    if (n > 16)
        n = 16;
    static const char *const names[] = {"attname", "format_type", "?column?", "attnotnull",
                                        "attcollation", "attidentity", "attgenerated",
                                        "attstorage", "?column?"};
    pgres_cols(res, n);
    for (int j = 0; j < n; j++)
        pgres_col(res, j, names[j < 8 ? j : 8], 25);
    if (rel < 0)
        return;
    const Relation *r = &c->s->c->rels[rel];
    for (int k = 0; k < r->ncol - (r->is_table ? 0 : r->nhidden); k++) {
        char tn[64];
        SqlType t = r->types[k];
        const char *pgt;
        switch ((TypeKind)t.kind) {
        case TK_BOOL: pgt = "boolean"; break;
        case TK_TINYINT:
        case TK_SMALLINT: pgt = "smallint"; break;
        case TK_INT: pgt = "integer"; break;
        case TK_BIGINT: pgt = "bigint"; break;
        case TK_REAL: pgt = "real"; break;
        case TK_DOUBLE: pgt = "double precision"; break;
        case TK_DATE: pgt = "date"; break;
        case TK_TIME: pgt = "time without time zone"; break;
        case TK_TIMESTAMP: pgt = "timestamp without time zone"; break;
        case TK_TIMESTAMPTZ: pgt = "timestamp with time zone"; break;
        case TK_DECIMAL:
            snprintf(tn, sizeof(tn), "numeric(%d,%d)", t.prec, t.scale);
            pgt = tn;
            break;
        case TK_CHAR:
            snprintf(tn, sizeof(tn), "character(%d)", t.len);
            pgt = tn;
            break;
        case TK_VARCHAR:
            if (t.len == VARCHAR_UNBOUNDED)
                pgt = "text";
            else {
                snprintf(tn, sizeof(tn), "character varying(%d)", t.len);
                pgt = tn;
            }
            break;
        default: pgt = type_name(t, tn, sizeof(tn)); break;
        }
        const char *vals[16] = {r->colnames[k], pgt, NULL, t.nullable ? "f" : "t", NULL, "",
                                "", "p"};
        pgres_row(res, vals);
    }
}

int pg_catalog_query(PgConn *c, const char *sql, PgRes *res, PgErr *e)
{
    (void)e;
    if (!strncasecmp(sql, "SELECT", 6) && functions(c, sql, res))
        return 1;
    if (!strcasestr(sql, "pg_catalog") && !strcasestr(sql, "information_schema") &&
        !strcasestr(sql, "FROM pg_"))
        return 0;
    char *q = squeeze(sql);
    int rel;
    if (strstr(q, "FROM pg_catalog.pg_class c") && strstr(q, "as \"Name\""))
        list_rels(c, q, res);
    else if (!strncmp(q, "SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c", 61))
        find_rels(c, q, res);
    else if (!strncmp(q, "SELECT c.relchecks, c.relkind", 29))
        rel_props(c, oid_after(c, q, "WHERE c.oid ="), res);
    else if (!strncmp(q, "SELECT a.attname", 16) && (rel = oid_after(c, q, "a.attrelid =")) >= -1)
        rel_columns(c, rel, q, res);
    else
        pgres_cols(res, 0); /* an empty answer: nothing of ours to report */
    sl_free(q);
    snprintf(res->tag, sizeof(res->tag), "SELECT %lld", (long long)res->nrows);
    return 1;
}
