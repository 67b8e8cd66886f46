/*
 * sql/bind_nested.c - binding the ROW and MAP constructs: ROW(e1, ...)
 * (fields f1, f2, ... as PostgreSQL names them), field access x.f (the
 * parser's call "."; also col.f and t.col.f, resolved here when the
 * qualifier is no relation), MAP[k1, v1, ...] (the parser's "map[]"),
 * m[k], CARDINALITY(m), MAP_CONTAINS_KEY, MAP_KEYS and MAP_VALUES.
 * Out: E_FUNC nodes of the FN_ROW .. FN_MAP_VALUES family (expr.h).
 */
#include <stdio.h>
#include <string.h>

#include "../expr/nested.h"
#include "sql_int.h"

static const char *const nested_fns[] = {"row", ".", "map[]", "map_contains_key", "map_keys",
                                         "map_values"};

bool sql__is_nested_fn(const char *name)
{
    for (size_t i = 0; i < ARRAY_LEN(nested_fns); i++)
        if (!strcmp(nested_fns[i], name))
            return true;
    return false;
}

/* The type a value of type t gets inside a ROW or MAP: strings VARCHAR,
   always nullable; a bare NULL stays of type NULL until a common type with
   another ROW or MAP settles it (sql__nested_common). */
static SqlType inner_of(SqlType t)
{
    if (t.kind == TK_CHAR)
        t = type_make(TK_VARCHAR, true);
    t.nullable = 1;
    return t;
}

/* Field `field` of ROW expression r, or an error at x. */
static Expr *field_of(P *p, Ast *x, Expr *r, const char *field)
{
    const NestType *s = nest_get(r->t);
    if (r->t.kind != TK_ROW || !s) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "field access .%s needs a ROW, not %s", field,
             tname(r->t));
        return NULL;
    }
    int j = nest_field(s, field);
    if (j < 0) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s has no field \"%s\"", tname(r->t), field);
        return NULL;
    }
    Expr *args[2] = {r, expr_const_i64(p->a, type_make(TK_BIGINT, false), j)};
    return sql__mk_fn(p, FN_ROW_GET, s->t[j], 2, args);
}

Expr *sql__row_null_test(P *p, Expr *r, bool negated)
{
    /* a NULL struct has NULL fields: the fields' tests decide alone */
    const NestType *s = nest_get(r->t);
    if (!s || s->n < 1) { /* (no shape: the struct itself) */
        Expr *e = sql__mk(p, negated ? E_ISNOTNULL : E_ISNULL, type_make(TK_BOOL, false), 1);
        e->a[0] = r;
        return e;
    }
    Expr *e = sql__mk(p, E_AND, type_make(TK_BOOL, false), s->n);
    for (int j = 0; j < s->n; j++) {
        Expr *args[2] = {r, expr_const_i64(p->a, type_make(TK_BIGINT, false), j)};
        e->a[j] = sql__mk(p, negated ? E_ISNOTNULL : E_ISNULL, type_make(TK_BOOL, false), 1);
        e->a[j]->a[0] = sql__mk_fn(p, FN_ROW_GET, s->t[j], 2, args);
    }
    return s->n == 1 ? e->a[0] : e;
}

bool sql__bind_col_field(P *p, BindCtx *bc, Ast *x, Expr **out)
{
    const Scope *s = bc->s;
    *out = NULL;
    for (int i = 0; i < s->n; i++)
        if (s->c[i].qual && !strcasecmp(s->c[i].qual, x->qual))
            return false; /* a relation's name: a column reference */
    Ast col = *x;
    col.qual = NULL;
    col.name = x->qual;
    int found = -1;
    for (int i = 0; i < s->n; i++)
        if (!s->c[i].hidden && !s->c[i].qual_only && !strcasecmp(s->c[i].name, col.name) &&
            s->c[i].t.kind == TK_ROW) {
            if (found >= 0 && !s->c[i].outer)
                return false; /* ambiguous: the column resolver says so */
            if (found < 0 || s->c[found].outer)
                found = i;
        }
    if (found < 0)
        return false;
    Expr *r = sql__bind(p, bc, &col);
    if (r)
        *out = field_of(p, x, r, x->name);
    return true;
}

/* MAP[args[0..n)]: keys and values of their common types. */
static Expr *make_map(P *p, Ast *x, Expr **args, int n)
{
    if (n % 2) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "MAP[...] needs an even number of arguments (key, value, ...)");
        return NULL;
    }
    SqlType kv[2] = {type_make(TK_NULL, true), type_make(TK_NULL, true)};
    for (int j = 0; j < n; j++)
        if ((kv[j % 2].kind != TK_NULL && args[j]->t.kind != TK_NULL &&
             type_is_string(kv[j % 2].kind) != type_is_string(args[j]->t.kind)) ||
            !sql__common_type(kv[j % 2], args[j]->t, &kv[j % 2])) {
            perr(p, SL_ESEMANTIC, x->args.v[j]->line, x->args.v[j]->col,
                 "MAP %s have incompatible types: %s and %s", j % 2 ? "values" : "keys",
                 tname(kv[j % 2]), tname(args[j]->t));
            return NULL;
        }
    kv[0] = inner_of(kv[0]);
    kv[1] = inner_of(kv[1]);
    if (kv[0].kind == TK_MAP || kv[0].kind == TK_ROW || kv[0].kind == TK_ARRAY) {
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "MAP keys of type %s are not supported",
             tname(kv[0]));
        return NULL;
    }
    int id = nest_intern(TK_MAP, NULL, 2, NULL, kv);
    if (id < 0) {
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "too many ROW and MAP types");
        return NULL;
    }
    for (int j = 0; j < n; j++)
        args[j] = sql__cast_to(p, args[j], kv[j % 2]);
    return sql__mk_fn(p, FN_MAP, type_nested(TK_MAP, id, false), n, args);
}

static Expr *make_row(P *p, Ast *x, Expr **args, int n)
{
    if (n < 1 || n > NEST_MAX_FIELDS) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "ROW(...) needs 1 to %d fields", NEST_MAX_FIELDS);
        return NULL;
    }
    const char *names[NEST_MAX_FIELDS];
    SqlType ts[NEST_MAX_FIELDS];
    char nb[NEST_MAX_FIELDS][16];
    for (int j = 0; j < n; j++) {
        snprintf(nb[j], sizeof(nb[j]), "f%d", j + 1);
        names[j] = nb[j];
        ts[j] = inner_of(args[j]->t);
        args[j] = sql__cast_to(p, args[j], ts[j]);
    }
    int id = nest_intern(TK_ROW, NULL, n, names, ts);
    if (id < 0) {
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "too many ROW and MAP types");
        return NULL;
    }
    return sql__mk_fn(p, FN_ROW, type_nested(TK_ROW, id, false), n, args);
}

/* Key k converted to MAP m's key type, or an error at x. */
static Expr *map_key(P *p, Ast *x, Expr *m, Expr *k)
{
    const NestType *s = nest_get(m->t);
    SqlType c;
    if (!sql__common_type(s->t[0], k->t, &c) ||
        type_is_string(s->t[0].kind) != type_is_string(k->t.kind)) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "cannot use %s as a key of %s", tname(k->t),
             tname(m->t));
        return NULL;
    }
    return sql__cast_to(p, k, s->t[0]);
}

Expr *sql__bind_map_op(P *p, Ast *x, const char *name, Expr **args, int n)
{
    const NestType *s = nest_get(args[0]->t);
    if (args[0]->t.kind != TK_MAP || !s) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs a MAP, not %s", name,
             tname(args[0]->t));
        return NULL;
    }
    int want = !strcmp(name, "[]") || !strcmp(name, "map_contains_key") ? 2 : 1;
    if (n != want) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to %s", name);
        return NULL;
    }
    if (want == 2 && !(args[1] = map_key(p, x, args[0], args[1])))
        return NULL;
    if (!strcmp(name, "[]"))
        return sql__mk_fn(p, FN_MAP_GET, s->t[1], 2, args);
    if (!strcmp(name, "map_contains_key"))
        return sql__mk_fn(p, FN_MAP_CONTAINS_KEY, type_make(TK_BOOL, true), 2, args);
    bool nul = args[0]->t.nullable;
    if (!strcmp(name, "cardinality"))
        return sql__mk_fn(p, FN_MAP_CARDINALITY, type_make(TK_INT, nul), 1, args);
    bool keys = !strcmp(name, "map_keys");
    return sql__mk_fn(p, keys ? FN_MAP_KEYS : FN_MAP_VALUES, type_array(s->t[keys ? 0 : 1], nul), 1,
                 args);
}

Expr *sql__bind_nested_fn(P *p, BindCtx *bc, Ast *x)
{
    const char *name = x->name;
    int n = x->args.n;
    Expr **args = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
    for (int j = 0; j < n; j++)
        if (!(args[j] = sql__bind(p, bc, x->args.v[j])))
            return NULL;
    if (!strcmp(name, "row"))
        return make_row(p, x, args, n);
    if (!strcmp(name, "map[]"))
        return make_map(p, x, args, n);
    if (!strcmp(name, "."))
        return field_of(p, x, args[0], x->str);
    return sql__bind_map_op(p, x, name, args, n);
}

bool sql__nested_common(SqlType a, SqlType b, SqlType *out)
{
    const NestType *sa = nest_get(a), *sb = nest_get(b);
    if (!sa || !sb || sa->n != sb->n)
        return false;
    if (a.len == b.len) {
        *out = a;
        return true;
    }
    SqlType ts[NEST_MAX_FIELDS];
    for (int j = 0; j < sa->n; j++) {
        TypeKind ka = sa->t[j].kind, kb = sb->t[j].kind;
        if ((ka != TK_NULL && kb != TK_NULL && type_is_string(ka) != type_is_string(kb)) ||
            !sql__common_type(sa->t[j], sb->t[j], &ts[j]))
            return false;
    }
    if (sa->name || sb->name) { /* a declared type wins */
        *out = sa->name ? a : b;
        return true;
    }
    int id = nest_intern((TypeKind)sa->kind, NULL, sa->n, (const char *const *)sa->names, ts);
    if (id < 0)
        return false;
    *out = type_nested((TypeKind)sa->kind, id, a.nullable || b.nullable);
    return true;
}
