/*
 * sql/bind_array.c - binding the ARRAY constructs: ARRAY[...] (the parser's
 * call "array[]"), subscripts x[i] ("[]"), x op ANY|ALL (array) ("any[]",
 * the operator and ALL in the call's ival), || with an ARRAY operand and the
 * functions CARDINALITY, ARRAY_LENGTH, ARRAY_TO_STRING, ARRAY_CONTAINS,
 * ARRAY_POSITION, ARRAY_APPEND, ARRAY_PREPEND, ARRAY_CAT.
 * Out: E_FUNC nodes of the FN_ARRAY* family (expr.h) over operands coerced
 * to one element type.
 */
#include <string.h>

#include "sql_int.h"

static const char *const array_fns[] = {
    "array[]", "[]", "any[]", "cardinality", "array_length", "array_to_string",
    "array_contains", "array_position", "array_append", "array_prepend", "array_cat", "[:]",
};

bool sql__is_array_fn(const char *name)
{
    for (size_t i = 0; i < ARRAY_LEN(array_fns); i++)
        if (!strcmp(array_fns[i], name))
            return true;
    return false;
}

/* The element type an ARRAY of values of type t gets: strings become
   VARCHAR (as PostgreSQL's text[]), a bare NULL VARCHAR. */
static SqlType elem_of(SqlType t)
{
    if (t.kind == TK_NULL || t.kind == TK_CHAR)
        t = type_make(TK_VARCHAR, true);
    t.nullable = 1;
    return t;
}

/* e as an ARRAY (a NULL literal becomes a NULL array of type t), or an
   error "<what> needs an array, not <type>" at x. */
static Expr *need_array(P *p, Ast *x, Expr *e, const char *what, SqlType like)
{
    if (e->t.kind == TK_ARRAY)
        return e;
    if (e->t.kind == TK_NULL && like.kind == TK_ARRAY)
        return sql__cast_to(p, e, like);
    perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs an array, not %s", what, tname(e->t));
    return NULL;
}

/* x and array a over one element type: the common one (a cast to an ARRAY
   of it when it changes). */
static bool coerce_elem(P *p, Ast *at, Expr **x, Expr **a)
{
    SqlType et = type_elem((*a)->t), c;
    if (!sql__common_type((*x)->t, et, &c)) {
        perr(p, SL_ESEMANTIC, at->line, at->col, "cannot compare %s with the elements of %s",
             tname((*x)->t), tname((*a)->t));
        return false;
    }
    if (c.kind == TK_NULL)
        c = et;
    if ((*x)->t.kind == TK_NULL || !sql__same_repr((*x)->t, c))
        *x = sql__cast_to(p, *x, c);
    if (!sql__same_repr(et, c))
        *a = sql__cast_to(p, *a, type_array(c, (*a)->t.nullable));
    return true;
}

/* ARRAY[args[0..n)]: elements of their common type. */
static Expr *make_array(P *p, Ast *x, Expr **args, int n)
{
    SqlType et = type_make(TK_NULL, true);
    for (int j = 0; j < n; j++) {
        if (!sql__common_type(et, args[j]->t, &et)) {
            perr(p, SL_ESEMANTIC, x->args.v[j]->line, x->args.v[j]->col,
                 "ARRAY elements have incompatible types: %s and %s", tname(et),
                 tname(args[j]->t));
            return NULL;
        }
    }
    if (n == 0) { /* ARRAY[]: typed by a cast around it */
        Expr *e = sql__mk_fn(p, FN_ARRAY, type_array(type_make(TK_NULL, true), false), 0, args);
        return e;
    }
    et = elem_of(et);
    for (int j = 0; j < n; j++) {
        SqlType t = et;
        args[j] = sql__cast_to(p, args[j], t);
    }
    return sql__mk_fn(p, FN_ARRAY, type_array(et, false), n, args);
}

Expr *sql__bind_array_concat(P *p, Ast *x, Expr *l, Expr *r)
{
    bool la = l->t.kind == TK_ARRAY, ra = r->t.kind == TK_ARRAY;
    Expr *args[2];
    SqlType c0;
    if (la && ra && !sql__common_type(l->t, r->t, &c0)) {
        /* an array of arrays and one of its elements: append or prepend */
        if (type_elem(l->t).kind == TK_ARRAY && r->t.elem != TK_ARRAY)
            ra = false;
        else if (type_elem(r->t).kind == TK_ARRAY && l->t.elem != TK_ARRAY)
            la = false;
    }
    if (la && ra) {
        SqlType c;
        if (!sql__common_type(l->t, r->t, &c)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "cannot concatenate %s and %s",
                 tname(l->t), tname(r->t));
            return NULL;
        }
        args[0] = sql__cast_to(p, l, c);
        args[1] = sql__cast_to(p, r, c);
    } else {
        /* array || element, element || array; a NULL literal is an array */
        Expr **arr = la ? &l : &r, **el = la ? &r : &l;
        if ((*el)->t.kind == TK_NULL) {
            *el = sql__cast_to(p, *el, (*arr)->t);
        } else {
            if (!coerce_elem(p, x, el, arr))
                return NULL;
            Expr *one[1] = {*el};
            *el = sql__mk_fn(p, FN_ARRAY, type_array(elem_of((*el)->t), false), 1, one);
            if (!sql__same_repr((*el)->t, (*arr)->t))
                *el = sql__cast_to(p, *el, (*arr)->t);
        }
        args[0] = l;
        args[1] = r;
    }
    SqlType t = args[0]->t;
    t.nullable = args[0]->t.nullable && args[1]->t.nullable;
    return sql__mk_fn(p, FN_ARRAY_CAT, t, 2, args);
}

Expr *sql__bind_array_fn(P *p, BindCtx *bc, Ast *x)
{
    const char *name = x->name;
    int n = x->args.n;
    Expr **args = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 3));
    for (int j = 0; j < n; j++)
        if (!(args[j] = sql__bind(p, bc, x->args.v[j])))
            return NULL;
    if (!strcmp(name, "array[]"))
        return make_array(p, x, args, n);
    if (n >= 1 && args[0]->t.kind == TK_MAP && (!strcmp(name, "[]") || !strcmp(name, "cardinality")))
        return sql__bind_map_op(p, x, name, args, n);
    if (!strcmp(name, "[]") && n == 2 && args[0]->t.kind == TK_VARIANT) /* bind_variant.c */
        return sql__bind_variant_get(p, x, args[0], args[1], 1);
    static const struct { const char *name; int min, max; } arity[] = {
        {"[]", 2, 2}, {"any[]", 2, 2}, {"cardinality", 1, 1}, {"array_length", 2, 2},
        {"array_to_string", 2, 3}, {"array_contains", 2, 2}, {"array_position", 2, 2},
        {"array_append", 2, 2}, {"array_prepend", 2, 2}, {"array_cat", 2, 2},
    };
    for (size_t i = 0; i < ARRAY_LEN(arity); i++)
        if (!strcmp(arity[i].name, name) && (n < arity[i].min || n > arity[i].max)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to %s", name);
            return NULL;
        }
    SqlType any_arr = type_array(type_make(TK_VARCHAR, true), true);
    if (!strcmp(name, "array_cat"))
        return sql__bind_array_concat(p, x, args[0], args[1]);
    if (!strcmp(name, "array_append") || !strcmp(name, "array_prepend")) {
        int a = !strcmp(name, "array_append") ? 0 : 1;
        if (!need_array(p, x, args[a], name, any_arr))
            return NULL;
        if (args[1 - a]->t.kind == TK_ARRAY && args[a]->t.elem != TK_ARRAY) {
            perr(p, SL_EUNSUPPORTED, x->line, x->col,
                 "nested arrays (an ARRAY of ARRAYs) are not supported yet");
            return NULL;
        }
        if (args[1 - a]->t.kind == TK_NULL) /* a NULL element, not a NULL array */
            args[1 - a] = sql__cast_to(p, args[1 - a], type_elem(args[a]->t));
        return sql__bind_array_concat(p, x, args[0], args[1]);
    }
    if (!strcmp(name, "any[]") || !strcmp(name, "array_contains")) {
        bool contains = !strcmp(name, "array_contains");
        Expr *v = contains ? args[1] : args[0], *a = contains ? args[0] : args[1];
        if (!(a = need_array(p, x, a, contains ? name : "ANY/ALL", any_arr)) ||
            !coerce_elem(p, x, &v, &a))
            return NULL;
        /* the parser stored 2 * AstOp + all: rebased on OP_EQ */
        int64_t op = contains ? OP_EQ : x->ival / 2;
        if (op < OP_EQ || op > OP_GE) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "unknown operator for ANY/ALL");
            return NULL;
        }
        Expr *q[3] = {v, a, expr_const_i64(p->a, type_make(TK_BIGINT, false),
                                           (op - OP_EQ) * 2 + (contains ? 0 : x->ival % 2))};
        return sql__mk_fn(p, FN_ARRAY_ANY, type_make(TK_BOOL, true), 3, q);
    }
    if (!(args[0] = need_array(p, x, args[0], !strcmp(name, "[]") ? "a subscript" : name,
                               any_arr)))
        return NULL;
    if (!strcmp(name, "[:]")) { /* a[lo:hi] (the parser fills omitted bounds) */
        for (int j = 1; j < 3; j++) {
            if (!type_is_integer(args[j]->t.kind) && args[j]->t.kind != TK_NULL) {
                perr(p, SL_ESEMANTIC, x->args.v[j]->line, x->args.v[j]->col,
                     "an array slice bound must be an integer, not %s", tname(args[j]->t));
                return NULL;
            }
            args[j] = sql__cast_to(p, args[j], type_make(TK_BIGINT, true));
        }
        SqlType t = args[0]->t;
        t.nullable = true;
        return sql__mk_fn(p, FN_ARRAY_SLICE, t, 3, args);
    }
    if (!strcmp(name, "array_position")) {
        if (!coerce_elem(p, x, &args[1], &args[0]))
            return NULL;
        return sql__mk_fn(p, FN_ARRAY_POSITION, type_make(TK_INT, true), 2, args);
    }
    if (!strcmp(name, "[]") || !strcmp(name, "array_length")) {
        if (!type_is_integer(args[1]->t.kind) && args[1]->t.kind != TK_NULL) {
            perr(p, SL_ESEMANTIC, x->args.v[1]->line, x->args.v[1]->col,
                 "%s must be an integer, not %s",
                 !strcmp(name, "[]") ? "an array subscript" : "the dimension", tname(args[1]->t));
            return NULL;
        }
        args[1] = sql__cast_to(p, args[1], type_make(TK_BIGINT, true));
        if (!strcmp(name, "[]"))
            return sql__mk_fn(p, FN_ARRAY_GET, type_elem(args[0]->t), 2, args);
        return sql__mk_fn(p, FN_ARRAY_LENGTH, type_make(TK_INT, true), 2, args);
    }
    if (!strcmp(name, "cardinality"))
        return sql__mk_fn(p, FN_CARDINALITY, type_make(TK_INT, args[0]->t.nullable), 1, args);
    /* array_to_string */
    bool nul = args[0]->t.nullable;
    for (int j = 1; j < n; j++) {
        args[j] = sql__cast_to(p, args[j], type_make(TK_VARCHAR, true));
        nul = nul || (j == 1 && args[j]->t.nullable);
    }
    return sql__mk_fn(p, FN_ARRAY_TO_STRING, type_make(TK_VARCHAR, nul), n, args);
}
