/*
 * sql/bind_variant.c - binding the VARIANT (JSON) constructs: PARSE_JSON,
 * TO_JSON, VARIANTNULL, TYPEOF (and PostgreSQL's JSON_TYPEOF /
 * JSONB_TYPEOF), IS_ARRAY, IS_OBJECT, IS_VARIANT_NULL, subscripts v[k] on a
 * VARIANT (from bind_array.c's "[]"), the operators -> and ->> (the
 * parser's calls "->" and "->>") and JSON[B]_EXTRACT_PATH[_TEXT]; the
 * builders JSON[B]_BUILD_ARRAY / _OBJECT, JSONB_SET, JSON[B]_ARRAY_LENGTH,
 * and the operators || (from bind.c), @>, <@, ?, #>, #>> (the parser's
 * calls by those names) and their function forms JSONB_CONTAINS,
 * JSONB_EXISTS.
 * Out: E_FUNC nodes of the FN_PARSE_JSON .. FN_JSON_SET family (expr.h).
 */
#include <string.h>

#include "../expr/variant.h"
#include "sql_int.h"

static const char *const variant_fns[] = {
    "parse_json", "to_json", "variantnull", "typeof", "json_typeof", "jsonb_typeof",
    "is_array", "is_object", "is_variant_null", "->", "->>", "json_extract_path",
    "jsonb_extract_path", "json_extract_path_text", "jsonb_extract_path_text",
    "json_build_array", "jsonb_build_array", "json_build_object", "jsonb_build_object",
    "jsonb_set", "json_array_length", "jsonb_array_length", "@>", "<@", "?", "#>", "#>>",
    "jsonb_contains", "jsonb_exists",
};

bool sql__is_variant_fn(const char *name)
{
    for (size_t i = 0; i < ARRAY_LEN(variant_fns); i++)
        if (!strcmp(variant_fns[i], name))
            return true;
    return false;
}

/* e as a VARIANT (a NULL literal becomes a NULL VARIANT), or an error
   "<what> needs a VARIANT, not <type>" at x. */
static Expr *need_variant(P *p, Ast *x, Expr *e, const char *what)
{
    if (e->t.kind == TK_VARIANT)
        return e;
    if (e->t.kind == TK_NULL)
        return sql__cast_to(p, e, type_make(TK_VARIANT, true));
    perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs a VARIANT, not %s", what, tname(e->t));
    return NULL;
}

Expr *sql__bind_variant_get(P *p, Ast *x, Expr *v, Expr *k, int mode)
{
    if (!(v = need_variant(p, x, v, mode == 1 ? "a subscript" : x->name)))
        return NULL;
    if (type_is_integer(k->t.kind)) {
        k = sql__cast_to(p, k, type_make(TK_BIGINT, true));
    } else if (type_is_string(k->t.kind) || k->t.kind == TK_NULL) {
        k = sql__cast_to(p, k, type_make(TK_VARCHAR, true));
    } else {
        Ast *ka = x->args.n > 1 ? x->args.v[1] : x;
        perr(p, SL_ESEMANTIC, ka->line, ka->col,
             "a VARIANT subscript must be a string or an integer, not %s", tname(k->t));
        return NULL;
    }
    Expr *args[3] = {v, k, expr_const_i64(p->a, type_make(TK_BIGINT, false), mode)};
    return sql__mk_fn(p, FN_VARIANT_GET, type_make(TK_VARIANT, true), 3, args);
}

/* e as a VARIANT, SQL NULL as JSON null (the builders' arguments). */
static Expr *json_value(P *p, Expr *e)
{
    e = sql__cast_to(p, e, type_make(TK_VARIANT, true));
    if (!e->t.nullable)
        return e;
    Expr *c = sql__mk(p, E_COALESCE, type_make(TK_VARIANT, false), 2);
    c->a[0] = e;
    c->a[1] = sql__mk_fn(p, FN_VARIANT_NULL, type_make(TK_VARIANT, false), 0, NULL);
    return c;
}

/* e as text: a string (a NULL literal) as VARCHAR, another value CAST. */
static Expr *as_text(P *p, Expr *e)
{
    return sql__cast_to(p, e, type_make(TK_VARCHAR, e->t.nullable || e->t.kind == TK_NULL));
}

/* e as a path (VARCHAR ARRAY): a string is read as an array literal
   ('{a,0}'), an ARRAY cast; else an error at x. */
static Expr *as_path(P *p, Ast *x, Expr *e, const char *what)
{
    SqlType pt = type_array(type_make(TK_VARCHAR, true), true);
    if (type_is_string(e->t.kind) || e->t.kind == TK_ARRAY || e->t.kind == TK_NULL)
        return sql__cast_to(p, e, pt);
    perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs a path (a text array), not %s", what,
         tname(e->t));
    return NULL;
}

int sql__json_agg_name(const char *n)
{
    return !strcmp(n, "json_agg") || !strcmp(n, "jsonb_agg")                ? 1
           : !strcmp(n, "json_object_agg") || !strcmp(n, "jsonb_object_agg") ? 2
                                                                             : 0;
}

Expr *sql__json_member(P *p, Expr *k, Expr *v)
{
    Expr **args = arena_alloc(p->a, sizeof(Expr *) * 2);
    args[0] = as_text(p, k);
    args[1] = json_value(p, v);
    return sql__mk_fn(p, FN_JSON_OBJECT, type_make(TK_VARIANT, args[0]->t.nullable), 2, args);
}

Expr *sql__bind_variant_concat(P *p, Ast *x, Expr *l, Expr *r)
{
    (void)x;
    Expr *args[2] = {sql__cast_to(p, l, type_make(TK_VARIANT, true)),
                     sql__cast_to(p, r, type_make(TK_VARIANT, true))};
    bool nul = args[0]->t.nullable || args[1]->t.nullable;
    return sql__mk_fn(p, FN_JSON_CONCAT, type_make(TK_VARIANT, nul), 2, args);
}

/* The builders (JSON[B]_BUILD_ARRAY / _OBJECT) over bound args[0..n). */
static Expr *bind_builder(P *p, Ast *x, Expr **args, int n)
{
    if (strstr(x->name, "array")) {
        for (int j = 0; j < n; j++)
            args[j] = json_value(p, args[j]);
        return sql__mk_fn(p, FN_JSON_ARRAY, type_make(TK_VARIANT, false), n, args);
    }
    if (n % 2) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "%s needs an even number of arguments (keys and values)", x->name);
        return NULL;
    }
    bool nul = false;
    for (int j = 0; j < n; j += 2) {
        args[j] = as_text(p, args[j]); /* a NULL key makes the result NULL */
        nul |= args[j]->t.nullable;
        args[j + 1] = json_value(p, args[j + 1]);
    }
    return sql__mk_fn(p, FN_JSON_OBJECT, type_make(TK_VARIANT, nul), n, args);
}

Expr *sql__bind_variant_fn(P *p, BindCtx *bc, Ast *x)
{
    const char *name = x->name;
    int n = x->args.n;
    Expr **args = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 3));
    for (int j = 0; j < n; j++)
        if (!(args[j] = sql__bind(p, bc, x->args.v[j])))
            return NULL;
    bool path = strstr(name, "extract_path") != NULL;
    int min = 1, max = 1;
    if (!strcmp(name, "variantnull"))
        min = max = 0;
    else if (!strcmp(name, "->") || !strcmp(name, "->>"))
        min = max = 2;
    else if (path)
        min = 1, max = 64;
    else if (strstr(name, "build_"))
        min = 0, max = 100;
    else if (!strcmp(name, "jsonb_set"))
        min = 3, max = 4;
    else if (strchr("@<?#", name[0]) || !strcmp(name, "jsonb_contains") ||
             !strcmp(name, "jsonb_exists"))
        min = max = 2;
    if (n < min || n > max) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to %s", name);
        return NULL;
    }
    if (!strcmp(name, "variantnull"))
        return sql__mk_fn(p, FN_VARIANT_NULL, type_make(TK_VARIANT, false), 0, args);
    if (!strcmp(name, "parse_json")) {
        if (!type_is_string(args[0]->t.kind) && args[0]->t.kind != TK_NULL) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "PARSE_JSON needs a string, not %s",
                 tname(args[0]->t));
            return NULL;
        }
        args[0] = sql__cast_to(p, args[0], type_make(TK_VARCHAR, true));
        return sql__mk_fn(p, FN_PARSE_JSON, type_make(TK_VARIANT, true), 1, args);
    }
    if (!strcmp(name, "to_json")) {
        /* TO_JSON of another type: of its VARIANT */
        if (args[0]->t.kind != TK_VARIANT)
            args[0] = sql__cast_to(p, args[0], type_make(TK_VARIANT, true));
        return sql__mk_fn(p, FN_TO_JSON, type_make(TK_VARCHAR, args[0]->t.nullable), 1, args);
    }
    if (strstr(name, "build_"))
        return bind_builder(p, x, args, n);
    if (!strcmp(name, "<@")) { /* a <@ b is b @> a */
        Expr *t = args[0];
        args[0] = args[1];
        args[1] = t;
    }
    if (!(args[0] = need_variant(p, x, args[0], name)))
        return NULL;
    bool nul = args[0]->t.nullable;
    if (!strcmp(name, "@>") || !strcmp(name, "<@") || !strcmp(name, "jsonb_contains")) {
        args[1] = sql__cast_to(p, args[1], type_make(TK_VARIANT, true));
        nul |= args[1]->t.nullable;
        return sql__mk_fn(p, FN_JSON_CONTAINS, type_make(TK_BOOL, nul), 2, args);
    }
    if (!strcmp(name, "?") || !strcmp(name, "jsonb_exists")) {
        args[1] = as_text(p, args[1]);
        nul |= args[1]->t.nullable;
        return sql__mk_fn(p, FN_JSON_EXISTS, type_make(TK_BOOL, nul), 2, args);
    }
    if (strstr(name, "array_length"))
        return sql__mk_fn(p, FN_JSON_ARRAY_LENGTH, type_make(TK_INT, true), 1, args);
    if (!strcmp(name, "#>") || !strcmp(name, "#>>")) {
        if (!(args[1] = as_path(p, x, args[1], name)))
            return NULL;
        Expr *v = sql__mk_fn(p, FN_JSON_PATH, type_make(TK_VARIANT, true), 2, args);
        if (name[2] != '>')
            return v;
        return sql__mk_fn(p, FN_VARIANT_TEXT, type_make(TK_VARCHAR, true), 1, &v);
    }
    if (!strcmp(name, "jsonb_set")) {
        if (!(args[1] = as_path(p, x, args[1], name)))
            return NULL;
        args[2] = sql__cast_to(p, args[2], type_make(TK_VARIANT, true));
        if (n < 4) {
            args[3] = expr_const_i64(p->a, type_make(TK_BOOL, false), 1);
        } else if (args[3]->t.kind != TK_BOOL && args[3]->t.kind != TK_NULL) {
            perr(p, SL_ESEMANTIC, x->args.v[3]->line, x->args.v[3]->col,
                 "jsonb_set's create_if_missing must be a BOOLEAN, not %s", tname(args[3]->t));
            return NULL;
        } else {
            args[3] = sql__cast_to(p, args[3], type_make(TK_BOOL, true));
        }
        return sql__mk_fn(p, FN_JSON_SET, type_make(TK_VARIANT, true), 4, args);
    }
    if (!strcmp(name, "typeof") || !strcmp(name, "json_typeof") ||
        !strcmp(name, "jsonb_typeof"))
        return sql__mk_fn(p, FN_VARIANT_TYPEOF, type_make(TK_VARCHAR, nul), 1, args);
    if (!strncmp(name, "is_", 3)) {
        VarKind k = !strcmp(name, "is_array") ? VK_ARRAY
                    : !strcmp(name, "is_object") ? VK_OBJECT : VK_NULL;
        args[1] = expr_const_i64(p->a, type_make(TK_BIGINT, false), k);
        return sql__mk_fn(p, FN_VARIANT_IS, type_make(TK_BOOL, nul), 2, args);
    }
    bool text = !strcmp(name, "->>") || strstr(name, "_text") != NULL;
    Expr *v = args[0];
    if (path) { /* each step a string: an object's key or an array's index */
        for (int j = 1; j < n && v; j++) {
            Expr *k = args[j];
            if (!type_is_string(k->t.kind) && k->t.kind != TK_NULL)
                k = sql__cast_to(p, k, type_make(TK_VARCHAR, true));
            v = sql__bind_variant_get(p, x, v, k, 2);
        }
    } else {
        v = sql__bind_variant_get(p, x, v, args[1], 0);
    }
    if (!v || !text)
        return v;
    Expr *one[1] = {v};
    return sql__mk_fn(p, FN_VARIANT_TEXT, type_make(TK_VARCHAR, true), 1, one);
}
