/*
 * pgwire/settings.c - a session's settings: the defaults drivers read
 * (server_version, client_encoding, DateStyle, TimeZone, ...), SET
 * (accepted for what drivers send; client_encoding, DateStyle and TimeZone
 * only with the values the server speaks), SHOW and SHOW ALL.
 */
#include <ctype.h>
#include <stdio.h>
#include <strings.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "pg_int.h"

/* ---------------------------------------------------------------- settings */

static const char *const defaults[][2] = {
    {"server_version", PG_SERVER_VERSION},
    {"server_version_num", "150000"},
    {"server_encoding", "UTF8"},
    {"client_encoding", "UTF8"},
    {"DateStyle", "ISO, MDY"},
    {"TimeZone", "UTC"},
    {"IntervalStyle", "postgres"},
    {"integer_datetimes", "on"},
    {"standard_conforming_strings", "on"},
    {"transaction_isolation", "read committed"},
    {"default_transaction_isolation", "read committed"},
    {"transaction_read_only", "off"},
    {"default_transaction_read_only", "off"},
    {"search_path", "public"},
    {"max_identifier_length", "63"},
    {"application_name", ""},
    {"extra_float_digits", "1"},
    {"statement_timeout", "0"},
    {"lc_collate", "C"},
    {"lc_ctype", "C"},
    {"lc_messages", "C"},
    {"is_superuser", "off"},
    {"bytea_output", "hex"},
    {"max_connections", "64"},
};

const char *pg_setting(PgConn *c, const char *name)
{
    for (int i = c->nset - 1; i >= 0; i--)
        if (!strcasecmp(c->set[i].name, name))
            return c->set[i].value;
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
        if (!strcasecmp(defaults[i][0], name))
            return defaults[i][1];
    return NULL;
}

static void set_value(PgConn *c, const char *name, const char *value)
{
    for (int i = 0; i < c->nset; i++)
        if (!strcasecmp(c->set[i].name, name)) {
            sl_free(c->set[i].value);
            c->set[i].value = sl_strdup(value);
            return;
        }
    PgSetting *s = VEC_PUSH(c->set, c->nset, c->capset);
    s->name = sl_strdup(name);
    s->value = sl_strdup(value);
}

/* SET [SESSION | LOCAL] name {TO | =} value [, ...] | SET TIME ZONE v. */
int pg_set_stmt(PgConn *c, const char *p, PgRes *res, PgErr *e)
{
    if (!pg_accept_kw(&p, "SESSION"))
        pg_accept_kw(&p, "LOCAL");
    const char *q = pg_skip_ws(p);
    char name[64];
    if (pg_accept_kw(&p, "TRANSACTION") || pg_accept_kw(&p, "CHARACTERISTICS")) {
        snprintf(res->tag, sizeof(res->tag), "SET");
        return 0; /* isolation levels: every read is a snapshot between steps */
    }
    if (pg_accept_kw(&p, "TIME") && pg_accept_kw(&p, "ZONE"))
        snprintf(name, sizeof(name), "TimeZone");
    else if (p = q, !pg_name_at(&p, name, sizeof(name)))
        return pg_err(e, "42601", "syntax error in SET: expected a setting name");
    else if (!pg_accept_kw(&p, "TO")) {
        p = pg_skip_ws(p);
        if (*p != '=')
            return pg_err(e, "42601", "syntax error in SET %s: expected TO or =", name);
        p++;
    }
    /* the value: words, numbers or quoted strings, as written, quotes dropped */
    Buf v = BUF_INIT;
    p = pg_skip_ws(p);
    while (*p) {
        if (*p == '\'') {
            for (p++; *p && !(*p == '\'' && p[1] != '\''); p++) {
                if (*p == '\'')
                    p++;
                buf_putc(&v, *p);
            }
            if (*p)
                p++;
        } else {
            buf_putc(&v, *p++);
        }
    }
    while (v.n && isspace((unsigned char)v.p[v.n - 1]))
        v.n--;
    const char *val = buf_cstr(&v);
    if (!strcasecmp(name, "client_encoding") && strcasecmp(val, "UTF8") &&
        strcasecmp(val, "UTF-8") && strcasecmp(val, "UNICODE")) {
        buf_free(&v);
        return pg_err(e, "22023", "client_encoding must be UTF8: the server speaks only UTF-8");
    }
    if (!strcasecmp(name, "TimeZone") && strcasecmp(val, "UTC") && strcasecmp(val, "GMT") &&
        strcasecmp(val, "Etc/UTC") && strcasecmp(val, "0") && strcasecmp(val, "+00:00") &&
        strcasecmp(val, "DEFAULT") && strcasecmp(val, "LOCAL")) {
        buf_free(&v);
        return pg_err(e, "22023",
                      "TimeZone must be UTC: TIMESTAMP values have no time zone here");
    }
    if (!strcasecmp(name, "DateStyle") && strncasecmp(val, "ISO", 3)) {
        buf_free(&v);
        return pg_err(e, "22023", "DateStyle must be ISO: dates are sent as YYYY-MM-DD");
    }
    if (!strcasecmp(val, "DEFAULT")) {
        for (int i = 0; i < c->nset; i++)
            if (!strcasecmp(c->set[i].name, name))
                c->set[i].name[0] = 0;
    } else {
        set_value(c, name, val);
        if (!strcasecmp(name, "application_name"))
            pg_param_status(c, "application_name", val);
    }
    buf_free(&v);
    snprintf(res->tag, sizeof(res->tag), "SET");
    return 0;
}

int pg_show_stmt(PgConn *c, const char *p, PgRes *res, PgErr *e)
{
    char name[64];
    if (pg_accept_kw(&p, "ALL")) {
        pgres_cols(res, 2);
        pgres_col(res, 0, "name", 25);
        pgres_col(res, 1, "setting", 25);
        for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
            const char *row[2] = {defaults[i][0], pg_setting(c, defaults[i][0])};
            pgres_row(res, row);
        }
        snprintf(res->tag, sizeof(res->tag), "SHOW");
        return 0;
    }
    if (pg_accept_kw(&p, "TRANSACTION") && pg_accept_kw(&p, "ISOLATION") && pg_accept_kw(&p, "LEVEL"))
        snprintf(name, sizeof(name), "transaction_isolation");
    else if (pg_accept_kw(&p, "TIME") && pg_accept_kw(&p, "ZONE"))
        snprintf(name, sizeof(name), "TimeZone");
    else if (!pg_name_at(&p, name, sizeof(name)))
        return pg_err(e, "42601", "syntax error in SHOW: expected a setting name");
    const char *v = pg_setting(c, name);
    if (!v)
        return pg_err(e, "42704", "unrecognized configuration parameter \"%s\"", name);
    pgres_cols(res, 1);
    pgres_col(res, 0, name, 25);
    pgres_row(res, &v);
    snprintf(res->tag, sizeof(res->tag), "SHOW");
    return 0;
}

