/*
 * sql/parse_gsets.c - the GROUP BY clause: plain expressions, ROLLUP (...),
 * CUBE (...), GROUPING SETS (...) and the empty set (), as PostgreSQL
 * writes them. parse_query.c calls sql__parse_group_by after GROUP BY.
 *
 * Every expression of the clause lands once per occurrence in Select.group
 * (as a plain GROUP BY list does); with any ROLLUP, CUBE, GROUPING SETS or
 * (), the clause is also expanded here into its grouping sets
 * (Select.gsets: each set a list of indexes into Select.group), following
 * PostgreSQL: a list of items is the cross product of the items' sets; an
 * expression e is {(e)}; () is {()}; ROLLUP (e1, ..., en) is
 * {(e1..en), (e1..en-1), ..., ()}; CUBE (e1, ..., en) every subset;
 * GROUPING SETS (i1, ...) the concatenation of its items' sets; inside
 * ROLLUP, CUBE and GROUPING SETS a parenthesized list (a, b) is one element.
 * Duplicate sets stay (each yields its groups again, as in PostgreSQL).
 * plan_gsets.c plans them.
 */
#include "parse_int.h"

#include "../base/vec.h"

/* At most this many grouping sets (PostgreSQL's limit too). */
#define MAX_GSETS 4096

typedef struct Sets {
    int **v;  /* each set: indexes into Select.group */
    int *n;
    int cnt, cap, cntn, capn;
} Sets;

static void sets_add(Parser *p, Sets *s, const int *a, int na, const int *b, int nb)
{
    int *x = arena_alloc(p->a, sizeof(int) * (size_t)(na + nb + 1));
    if (na)
        memcpy(x, a, sizeof(int) * (size_t)na);
    if (nb)
        memcpy(x + na, b, sizeof(int) * (size_t)nb);
    *VEC_PUSH_ARENA(p->a, s->v, s->cnt, s->cap) = x;
    *VEC_PUSH_ARENA(p->a, s->n, s->cntn, s->capn) = na + nb;
}

static int too_many(Parser *p, const Token *at)
{
    return err_setpos(p->err, SL_EUNSUPPORTED, at->line, at->col,
                      "more than %d grouping sets are not supported", MAX_GSETS);
}

/* The index after the parenthesis matching the "(" at i, or -1. */
static int after_paren(Parser *p, int i)
{
    int depth = 0;
    for (; i < p->n && p->t[i].k != T_EOF; i++) {
        if (is_op(&p->t[i], "("))
            depth++;
        else if (is_op(&p->t[i], ")") && --depth == 0)
            return i + 1;
    }
    return -1;
}

/* One expression of the clause, appended to s->group; its index or -1. */
static int group_expr(Parser *p, Select *s)
{
    Ast *x = sql__parse_expr(p);
    if (!x)
        return -1;
    sql__list_push(p, &s->group, x);
    return s->group.n - 1;
}

/* An element inside ROLLUP/CUBE/GROUPING SETS: an expression, or a
   parenthesized list of them ("()" the empty one) when the parenthesis
   closes the element. Indexes into *idx (arena), count returned or -1. */
static int element(Parser *p, Select *s, int **idx)
{
    int cap = 0, n = 0;
    *idx = NULL;
    int end = is_op(cur(p), "(") ? after_paren(p, p->i) : -1;
    if (end > 0 && (is_op(&p->t[end], ",") || is_op(&p->t[end], ")"))) {
        p->i++;
        if (accept_op(p, ")"))
            return 0;
        do {
            int k = group_expr(p, s);
            if (k < 0)
                return -1;
            *VEC_PUSH_ARENA(p->a, *idx, n, cap) = k;
        } while (accept_op(p, ","));
        return sql__expect_op(p, ")") ? -1 : n;
    }
    int k = group_expr(p, s);
    if (k < 0)
        return -1;
    *idx = arena_alloc(p->a, sizeof(int));
    (*idx)[0] = k;
    return 1;
}

static int parse_items(Parser *p, Select *s, Sets *out, bool nested);

/* ROLLUP (...) or CUBE (...) at the keyword: its sets into out. */
static int rollup_cube(Parser *p, Select *s, Sets *out)
{
    Token *at = cur(p);
    bool cube = is_kw(at, "cube");
    int **el = NULL, *eln = NULL, ne = 0, nn = 0, cap = 0, capn = 0;
    p->i++;
    if (sql__expect_op(p, "("))
        return -1;
    do {
        int *idx, k = element(p, s, &idx);
        if (k < 0)
            return -1;
        *VEC_PUSH_ARENA(p->a, el, ne, cap) = idx;
        *VEC_PUSH_ARENA(p->a, eln, nn, capn) = k;
    } while (accept_op(p, ","));
    if (sql__expect_op(p, ")"))
        return -1;
    if (cube && ne > 12)
        return too_many(p, at);
    int tot = 0;
    for (int i = 0; i < ne; i++)
        tot += eln[i];
    int *buf = arena_alloc(p->a, sizeof(int) * (size_t)(tot + 1));
    if (!cube) { /* (e1..en), (e1..en-1), ..., () */
        for (int len = ne; len >= 0; len--) {
            int m = 0;
            for (int i = 0; i < len; i++)
                for (int j = 0; j < eln[i]; j++)
                    buf[m++] = el[i][j];
            sets_add(p, out, buf, m, NULL, 0);
        }
        return 0;
    }
    for (int mask = (1 << ne) - 1; mask >= 0; mask--) { /* the full set first */
        int m = 0;
        for (int i = 0; i < ne; i++)
            if (mask & (1 << i))
                for (int j = 0; j < eln[i]; j++)
                    buf[m++] = el[i][j];
        sets_add(p, out, buf, m, NULL, 0);
    }
    return 0;
}

/* One item: its sets into out (nested: inside GROUPING SETS, where a
   parenthesized list is one set and items concatenate). */
static int parse_item(Parser *p, Select *s, Sets *out, bool nested)
{
    Token *t = cur(p);
    if ((is_kw(t, "rollup") || is_kw(t, "cube")) && is_op(&p->t[p->i + 1], "("))
        return rollup_cube(p, s, out);
    if (is_kw(t, "grouping") && is_kw(&p->t[p->i + 1], "sets")) {
        p->i += 2;
        if (sql__expect_op(p, "(") || parse_items(p, s, out, true) || sql__expect_op(p, ")"))
            return -1;
        return 0;
    }
    int *idx, k;
    if (nested) {
        if ((k = element(p, s, &idx)) < 0)
            return -1;
    } else if (is_op(t, "(") && is_op(&p->t[p->i + 1], ")")) {
        p->i += 2;
        k = 0;
        idx = NULL;
    } else {
        int g = group_expr(p, s);
        if (g < 0)
            return -1;
        idx = arena_alloc(p->a, sizeof(int));
        idx[0] = g;
        k = 1;
    }
    sets_add(p, out, idx, k, NULL, 0);
    return 0;
}

/* A comma list of items into out: concatenated (nested) or crossed. */
static int parse_items(Parser *p, Select *s, Sets *out, bool nested)
{
    Sets acc = {0};
    sets_add(p, &acc, NULL, 0, NULL, 0); /* {()}: the unit of the cross product */
    if (nested)
        acc.cnt = acc.cntn = 0;
    do {
        Token *at = cur(p);
        Sets one = {0};
        if (parse_item(p, s, &one, nested))
            return -1;
        if (nested) {
            for (int i = 0; i < one.cnt; i++)
                sets_add(p, &acc, one.v[i], one.n[i], NULL, 0);
        } else {
            Sets x = {0};
            if ((int64_t)acc.cnt * one.cnt > MAX_GSETS)
                return too_many(p, at);
            for (int i = 0; i < acc.cnt; i++)
                for (int j = 0; j < one.cnt; j++)
                    sets_add(p, &x, acc.v[i], acc.n[i], one.v[j], one.n[j]);
            acc = x;
        }
        if (acc.cnt > MAX_GSETS)
            return too_many(p, at);
    } while (accept_op(p, ","));
    for (int i = 0; i < acc.cnt; i++)
        sets_add(p, out, acc.v[i], acc.n[i], NULL, 0);
    return 0;
}

int sql__parse_group_by(Parser *p, Select *s)
{
    /* a plain list of expressions needs no sets */
    bool sets = false;
    int depth = 0;
    for (int i = p->i; i < p->n && p->t[i].k != T_EOF && !sets; i++) {
        const Token *t = &p->t[i];
        if (is_op(t, "("))
            depth++;
        else if (is_op(t, ")"))
            depth--;
        if (depth < 0)
            break;
        if (depth == 0 && (is_kw(t, "having") || is_kw(t, "order") || is_kw(t, "limit") ||
                           is_kw(t, "union") || is_kw(t, "except") || is_kw(t, "intersect") ||
                           is_kw(t, "window") || is_kw(t, "qualify") || is_op(t, ";")))
            break;
        bool at_item = i == p->i || (depth == 0 && is_op(&p->t[i - 1], ","));
        if (at_item && (((is_kw(t, "rollup") || is_kw(t, "cube")) && is_op(&t[1], "(")) ||
                        (is_kw(t, "grouping") && is_kw(&t[1], "sets")) ||
                        (is_op(t, "(") && is_op(&t[1], ")"))))
            sets = true;
    }
    if (!sets) { /* GROUP BY (a, b): a and b, as PostgreSQL flattens it */
        if (sql__parse_exprs(p, &s->group))
            return p->err->code;
        AstList flat = {0};
        for (int i = 0; i < s->group.n; i++) {
            Ast *x = s->group.v[i];
            bool row = x->k == A_FUNC && x->ival == 1 && !strcmp(x->name, "row");
            for (int j = 0; j < (row ? x->args.n : 1); j++)
                sql__list_push(p, &flat, row ? x->args.v[j] : x);
        }
        s->group = flat;
        return 0;
    }
    Sets out = {0};
    if (parse_items(p, s, &out, false))
        return p->err->code;
    s->gsets = out.v;
    s->gsetn = out.n;
    s->ngsets = out.cnt;
    return 0;
}
