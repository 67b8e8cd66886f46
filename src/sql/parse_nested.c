/*
 * sql/parse_nested.c - the ROW and MAP types in the parser: ROW(f T, ...)
 * and MAP<K, V> type names, and CREATE TYPE name AS (f T, ...), a named
 * ROW type usable as a column type later in the same program (it makes no
 * statement: the types live in the Parser, and each shape in
 * expr/nested.h's table).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../base/vec.h"
#include "../expr/nested.h"
#include "parse_int.h"

typedef struct UserType {
    char *name;
    SqlType t;
} UserType;

/* (f1 T1, f2 T2, ...) after ROW or AS: a ROW type named name (or NULL). */
static int parse_fields(Parser *p, const char *name, SqlType *out)
{
    Token *at = cur(p);
    const char *names[NEST_MAX_FIELDS];
    SqlType ts[NEST_MAX_FIELDS];
    int n = 0;
    if (sql__expect_op(p, "("))
        return -1;
    do {
        Token *ft = cur(p);
        if (n == NEST_MAX_FIELDS) {
            err_setpos(p->err, SL_EUNSUPPORTED, ft->line, ft->col,
                       "a ROW type of more than %d fields is not supported", NEST_MAX_FIELDS);
            return -1;
        }
        char *f = sql__ident(p, "a field name");
        if (!f || sql__parse_type(p, &ts[n]))
            return -1;
        /* NOT NULL / NULL on a field: accepted, every field may be NULL */
        if (accept_kw(p, "not")) {
            if (sql__expect_kw(p, "null"))
                return -1;
        } else {
            accept_kw(p, "null");
        }
        for (int j = 0; j < n; j++)
            if (!strcmp(names[j], f)) {
                err_setpos(p->err, SL_ESEMANTIC, ft->line, ft->col,
                           "field \"%s\" appears twice in a ROW type", f);
                return -1;
            }
        names[n++] = f;
    } while (accept_op(p, ","));
    if (sql__expect_op(p, ")"))
        return -1;
    int id = nest_intern(TK_ROW, name, n, names, ts);
    if (id < 0) {
        err_setpos(p->err, SL_EUNSUPPORTED, at->line, at->col, "too many ROW and MAP types");
        return -1;
    }
    *out = type_nested(TK_ROW, id, true);
    return 0;
}

int sql__parse_nested_type(Parser *p, const char *s, SqlType *out)
{
    Token *t = &p->t[p->i - 1];
    if (!strcasecmp(s, "row") && is_op(cur(p), "("))
        return parse_fields(p, NULL, out) ? -1 : 1;
    if (!strcasecmp(s, "map") && is_op(cur(p), "<")) {
        SqlType kv[2];
        p->i++;
        if (sql__parse_type(p, &kv[0]) || sql__expect_op(p, ",") || sql__parse_type(p, &kv[1]) ||
            sql__expect_op(p, ">"))
            return -1;
        if (kv[0].kind == TK_MAP || kv[0].kind == TK_ROW || kv[0].kind == TK_ARRAY ||
            type_is_interval(kv[0].kind)) {
            char tn[64];
            err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col,
                       "MAP keys of type %s are not supported", type_name(kv[0], tn, sizeof(tn)));
            return -1;
        }
        int id = nest_intern(TK_MAP, NULL, 2, NULL, kv);
        if (id < 0) {
            err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col, "too many ROW and MAP types");
            return -1;
        }
        *out = type_nested(TK_MAP, id, true);
        return 1;
    }
    if (t->k != T_IDENT && t->k != T_QIDENT)
        return 0;
    for (int j = 0; j < p->nutypes; j++)
        if (!strcasecmp(p->utypes[j].name, s)) {
            *out = p->utypes[j].t;
            return 1;
        }
    return 0;
}

int sql__parse_create_type(Parser *p)
{
    Token *nt = cur(p);
    char *name = sql__ident(p, "a type name");
    SqlType t;
    if (!name)
        return p->err->code;
    static const char *const builtin[] = {"int", "integer", "bigint", "smallint", "tinyint",
                                          "varchar", "char", "text", "boolean", "date", "time",
                                          "timestamp", "decimal", "numeric", "real", "double",
                                          "float", "row", "map", "array", "string"};
    for (size_t i = 0; i < ARRAY_LEN(builtin); i++)
        if (!strcasecmp(builtin[i], name))
            return err_setpos(p->err, SL_ESEMANTIC, nt->line, nt->col,
                              "type \"%s\" is a built-in type name", name);
    for (int j = 0; j < p->nutypes; j++)
        if (!strcasecmp(p->utypes[j].name, name))
            return err_setpos(p->err, SL_ESEMANTIC, nt->line, nt->col,
                              "type \"%s\" already exists", name);
    if (sql__expect_kw(p, "as"))
        return p->err->code;
    if (parse_fields(p, name, &t))
        return p->err->code;
    UserType *u = VEC_PUSH_ARENA(p->a, p->utypes, p->nutypes, p->cutypes);
    u->name = name;
    u->t = t;
    return 0;
}
