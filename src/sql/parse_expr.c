/*
 * sql/parse_expr.c - the grammar of expressions (parse_int.h): operators
 * by precedence, loosest first: OR, AND, NOT, comparison / IS / BETWEEN /
 * IN / LIKE, ||, + -, * / %, unary + -, postfix :: casts, primary
 * (literals, columns, CASE, CAST, typed literals (`INT '1'` is a CAST of
 * the string) and INTERVALs, EXTRACT, EXISTS and scalar subqueries,
 * function calls with their special argument forms, FILTER (WHERE ...)
 * and an OVER (...) window). Called by parse_query.c and parse_ddl.c wherever
 * an expression may stand; builds ast.h nodes.
 *
 * Binary chains are parsed iteratively; a chain of ANDs (or ORs) becomes
 * a balanced tree, which is the same conjunction (AND and OR are
 * associative in SQL's three-valued logic, and the binder flattens them
 * to one n-ary node in the written order) at logarithmic height. Nesting
 * and height are bounded (parse.c).
 */
#include <stdio.h>
#include <string.h>

#include "../base/err.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "../expr/text.h"
#include "parse_int.h"

static Ast *parse_primary(Parser *p);

/* One frame bound of OVER (... ROWS|RANGE ...): kind and n into *kind, *n. */
static int parse_frame_bound(Parser *p, int *kind, Ast **n)
{
    if (accept_kw(p, "unbounded")) {
        if (accept_kw(p, "preceding"))
            *kind = 0;
        else if (accept_kw(p, "following"))
            *kind = 4;
        else
            return sql__fail(p, "PRECEDING or FOLLOWING");
        return 0;
    }
    if (accept_kw(p, "current")) {
        *kind = 2;
        return sql__expect_kw(p, "row");
    }
    if (!(*n = parse_primary(p)))
        return p->err->code;
    if (accept_kw(p, "preceding"))
        *kind = 1;
    else if (accept_kw(p, "following"))
        *kind = 3;
    else
        return sql__fail(p, "PRECEDING or FOLLOWING");
    return 0;
}

/* Aggregates with no window form here (STRING_AGG, BIT_*, the
   ordered-set aggregates, GROUPING): OVER after them is an error. */
/* The number of arguments of the statistical and alias aggregates
   (bind_agg.c's bind_stat_agg), else 0. */
static int stat_agg_args(const char *n)
{
    static const char *const one[] = {"stddev",  "stddev_samp", "stddev_pop", "variance",
                                      "var_samp", "var_pop",    "median",     "any_value",
                                      "count_if"};
    static const char *const two[] = {"covar_pop", "covar_samp", "corr", "arg_min", "arg_max"};
    for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++)
        if (!strcmp(n, one[i]))
            return 1;
    for (size_t i = 0; i < sizeof(two) / sizeof(two[0]); i++)
        if (!strcmp(n, two[i]))
            return 2;
    return 0;
}

static bool multiset_agg(const char *n)
{
    static const char *const names[] = {"string_agg", "listagg", "group_concat", "array_agg",
                                        "bit_and", "bit_or", "bit_xor",
                                        "percentile_cont", "percentile_disc", "mode",
                                        "grouping", "json_agg", "jsonb_agg",
                                        "json_object_agg", "jsonb_object_agg"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(n, names[i]))
            return true;
    return stat_agg_args(n) > 0;
}

/* The statistical aggregates that have a window form (plan_window.c). */
static bool stat_window_ok(const char *n)
{
    return stat_agg_args(n) && strcmp(n, "median") && strcmp(n, "any_value") &&
           strcmp(n, "count_if") && strcmp(n, "arg_min") && strcmp(n, "arg_max");
}

/* `agg(x) FILTER (WHERE c)` (below). */
static int parse_filter(Parser *p, Ast *n);

/* A named window's name where one may stand: OVER w, OVER (w ...), and
   WINDOW w2 AS (w ...). */
static bool at_window_name(Parser *p)
{
    Token *t = cur(p);
    return (t->k == T_IDENT || t->k == T_QIDENT) && !is_kw(t, "partition") &&
           !is_kw(t, "order") && !is_kw(t, "rows") && !is_kw(t, "range") &&
           !is_kw(t, "groups");
}

static void pend_ref(Parser *p, WinDef *w, const Token *t, bool paren)
{
    w->ref_paren = paren;
    w->ref_line = t->line;
    w->ref_col = t->col;
    *VEC_PUSH_ARENA(p->a, p->wpend, p->nwpend, p->capwpend) = w;
}

WinDef *sql__parse_window_spec(Parser *p, const Token *at)
{
    if (sql__expect_op(p, "("))
        return NULL;
    WinDef *w = arena_zalloc(p->a, sizeof(*w));
    w->line = at->line;
    w->col = at->col;
    w->end = 2;
    if (at_window_name(p)) {
        Token *nt = cur(p);
        if (!(w->ref = sql__ident(p, "a window name")))
            return NULL;
        pend_ref(p, w, nt, true);
    }
    if (accept_kw(p, "partition") &&
        (sql__expect_kw(p, "by") || sql__parse_exprs(p, &w->part)))
        return NULL;
    if (accept_kw(p, "order") &&
        (sql__expect_kw(p, "by") || sql__parse_order_by(p, &w->order, &w->norder)))
        return NULL;
    if (is_kw(cur(p), "rows") || is_kw(cur(p), "range") || is_kw(cur(p), "groups")) {
        w->frame = is_kw(cur(p), "rows") ? 1 : is_kw(cur(p), "range") ? 2 : 3;
        w->frame_line = cur(p)->line;
        w->frame_col = cur(p)->col;
        p->i++;
        if (accept_kw(p, "between")) {
            if (parse_frame_bound(p, &w->start, &w->start_n) || sql__expect_kw(p, "and") ||
                parse_frame_bound(p, &w->end, &w->end_n))
                return NULL;
        } else if (parse_frame_bound(p, &w->start, &w->start_n)) {
            return NULL;
        }
        if (is_kw(cur(p), "exclude")) {
            w->exclude_line = cur(p)->line;
            w->exclude_col = cur(p)->col;
            p->i++;
            if (accept_kw(p, "current")) {
                if (sql__expect_kw(p, "row"))
                    return NULL;
                w->exclude = 1;
            } else if (accept_kw(p, "group")) {
                w->exclude = 2;
            } else if (accept_kw(p, "ties")) {
                w->exclude = 3;
            } else if (accept_kw(p, "no")) {
                if (sql__expect_kw(p, "others"))
                    return NULL;
            } else {
                sql__fail(p, "CURRENT ROW, GROUP, TIES or NO OTHERS after EXCLUDE");
                return NULL;
            }
        }
    }
    if (sql__expect_op(p, ")"))
        return NULL;
    return w;
}

/* RESPECT NULLS (the default) or IGNORE NULLS of a window function f,
   inside its parentheses or after them (plan_window.c checks which
   functions take it). */
static int parse_null_treatment(Parser *p, Ast *f)
{
    if (cur(p)->k == T_EOF || !is_kw(&p->t[p->i + 1], "nulls"))
        return 0;
    if (is_kw(cur(p), "ignore")) {
        f->ignore_nulls = true;
        f->ignore_line = cur(p)->line;
        f->ignore_col = cur(p)->col;
        p->i += 2;
    } else if (is_kw(cur(p), "respect")) {
        p->i += 2;
    }
    return 0;
}

/* OVER (spec) or OVER name after function f. */
static int parse_over(Parser *p, Ast *f)
{
    Token *t = cur(p);
    p->i++; /* OVER */
    if (!is_op(cur(p), "(")) {
        WinDef *w = arena_zalloc(p->a, sizeof(*w));
        Token *nt = cur(p);
        w->line = t->line;
        w->col = t->col;
        w->end = 2;
        if (!(w->ref = sql__ident(p, "( or a window name after OVER")))
            return p->err->code;
        pend_ref(p, w, nt, false);
        f->over = w;
        return 0;
    }
    if (!(f->over = sql__parse_window_spec(p, t)))
        return p->err->code;
    return 0;
}

static Ast *parse_concat(Parser *p);

/* Special argument syntax of POSITION(a IN b) and
   TRIM([BOTH|LEADING|TRAILING] [chars] FROM s) after the "(": TRIM becomes
   trim(s, chars, side) with side 0/1/2 (an A_INT). Returns 1 when handled
   (the ")" is left to the caller), 0 for ordinary arguments, -1 on error. */
static int special_args(Parser *p, Ast *f)
{
    if (!strcmp(f->name, "position")) {
        int save = p->i;
        Ast *a = parse_concat(p), *b;
        if (!a)
            return -1;
        if (!accept_kw(p, "in")) {
            p->i = save;
            return 0;
        }
        if (!(b = parse_concat(p)))
            return -1;
        if (is_kw(cur(p), "from")) {
            sql__unsupported(p, cur(p), "POSITION(... FROM start)");
            return -1;
        }
        sql__list_push(p, &f->args, a);
        sql__list_push(p, &f->args, b);
        return 1;
    }
    if (strcmp(f->name, "trim"))
        return 0;
    Token *at = cur(p);
    int side = accept_kw(p, "both") ? 0 : accept_kw(p, "leading") ? 1
               : accept_kw(p, "trailing") ? 2 : -1;
    Ast *chars = NULL, *s;
    if (!accept_kw(p, "from")) {
        if (!(chars = parse_concat(p)))
            return -1;
        if (!accept_kw(p, "from")) {
            if (side >= 0) {
                sql__fail(p, "FROM");
                return -1;
            }
            sql__list_push(p, &f->args, chars); /* TRIM(s) or TRIM(s, chars) */
            while (accept_op(p, ",")) {
                Ast *x = sql__parse_expr(p);
                if (!x)
                    return -1;
                sql__list_push(p, &f->args, x);
            }
            return 1;
        }
    }
    if (!(s = parse_concat(p)))
        return -1;
    Ast *sd = sql__new_ast(p, A_INT, at);
    sd->str = (char *)(side == 1 ? "1" : side == 2 ? "2" : "0");
    sd->slen = 1;
    sql__list_push(p, &f->args, s);
    if (!chars) {
        chars = sql__new_ast(p, A_STR, at);
        chars->str = (char *)" ";
        chars->slen = 1;
    }
    sql__list_push(p, &f->args, chars);
    sql__list_push(p, &f->args, sd);
    f->ival = 1; /* TRIM(... FROM ...) form */
    return 1;
}

/* INTERVAL 'text' unit [TO unit] or INTERVAL n unit, after INTERVAL: an
   A_TYPED node with the text in str and ival = from | (to + 1) << 8. */
static Ast *parse_interval(Parser *p, Token *t)
{
    Ast *n = sql__new_ast(p, A_TYPED, t);
    Token *v = cur(p);
    if (v->k != T_STR && v->k != T_INT) {
        sql__fail(p, "a quoted interval value after INTERVAL");
        return NULL;
    }
    n->str = (char *)v->s;
    n->slen = v->n;
    p->i++;
    Token *u = cur(p);
    int from = u->k == T_IDENT ? time_unit_parse(u->s) : -1, to = -1;
    if (from < 0 || from == TU_QUARTER || from == TU_WEEK || from > TU_SECOND) {
        sql__fail(p, "an interval unit (YEAR, MONTH, DAY, HOUR, MINUTE or SECOND)");
        return NULL;
    }
    p->i++;
    if (accept_kw(p, "to")) {
        Token *u2 = cur(p);
        to = u2->k == T_IDENT ? time_unit_parse(u2->s) : -1;
        if (to <= from || to == TU_WEEK || to > TU_SECOND || (from <= TU_MONTH) != (to <= TU_MONTH)) {
            sql__fail(p, "a finer interval unit after TO (YEAR TO MONTH, "
                         "DAY/HOUR/MINUTE TO SECOND...)");
            return NULL;
        }
        p->i++;
    }
    n->type = type_make(from <= TU_MONTH ? TK_INTERVAL_YM : TK_INTERVAL_DT, false);
    n->ival = from | (to + 1) << 8;
    return n;
}

/* A type name before a string, `INT '1'` or `DOUBLE PRECISION '2.5'` (the
   standard's typed literal; DATE, TIME, TIMESTAMP and INTERVAL have their
   own forms above): CAST('1' AS INT). */
static bool is_typed_literal(Parser *p, const Token *t)
{
    static const char *const names[] = {"tinyint", "smallint", "int2", "int", "integer", "int4",
        "bigint", "int8", "real", "float4", "float", "float8", "double", "boolean", "bool",
        "varchar", "char", "character", "text", "string", "decimal", "numeric", "dec"};
    const Token *nx = &p->t[p->i + 1];
    bool dp = is_kw(t, "double") && is_kw(nx, "precision");
    if (dp)
        nx++;
    if (nx->k != T_STR)
        return false;
    for (size_t i = 0; i < ARRAY_LEN(names); i++)
        if (is_kw(t, names[i]))
            return true;
    return false;
}

static Ast *parse_typed_literal(Parser *p, Token *t)
{
    Ast *n = sql__new_ast(p, A_CAST, t);
    if (sql__parse_type(p, &n->type))
        return NULL;
    Token *v = cur(p);
    n->a = sql__new_ast(p, A_STR, v);
    n->a->str = (char *)v->s;
    n->a->slen = v->n;
    p->i++;
    return n;
}

/* NAME[e1, ...] at t (NAME and "[" not yet consumed): the call name(e1,
   ...), name being "array[]" or "map[]". */
static Ast *parse_bracket_call(Parser *p, Token *t, const char *name)
{
    p->i += 2;
    Ast *n = sql__new_ast(p, A_FUNC, t);
    n->name = arena_strndup(p->a, name, strlen(name));
    if (!is_op(cur(p), "]")) {
        do {
            Ast *e = sql__parse_expr(p);
            if (!e)
                return NULL;
            sql__list_push(p, &n->args, e);
        } while (accept_op(p, ","));
    }
    if (sql__expect_op(p, "]"))
        return NULL;
    return n;
}

/* x[i] (an ARRAY's element: the call "[]"(x, i)), x::type
   (PostgreSQL's cast): CAST(x AS type), and x -> k, x ->> k (a VARIANT's
   member or element: the calls "->"(x, k) and "->>"(x, k), k a primary),
   and (x).field (a ROW's field: the call "."(x) naming it), all binding tighter than any operator, repeatedly, left to right;
   (x).* ends it (an A_STAR over x: the select list expands x's fields). */
static Ast *parse_pg_casts(Parser *p, Ast *x)
{
    while (x && (is_op(cur(p), "::") || is_op(cur(p), "[") || is_op(cur(p), "->") ||
                 is_op(cur(p), "->>") ||
                 (is_op(cur(p), ".") &&
                  (p->t[p->i + 1].k == T_IDENT || p->t[p->i + 1].k == T_QIDENT ||
                   is_op(&p->t[p->i + 1], "*"))))) {
        Token *t = cur(p);
        p->i++;
        if (is_op(t, ".") && accept_op(p, "*")) { /* (x).*: x's fields (plan.c) */
            Ast *n = sql__new_ast(p, A_STAR, t);
            n->a = x;
            n->line = x->line;
            n->col = x->col;
            return n;
        }
        if (is_op(t, ".")) { /* (x).field: the call "."(x) naming the field */
            Ast *n = sql__new_ast(p, A_FUNC, t);
            n->name = arena_strndup(p->a, ".", 1);
            if (!(n->str = sql__ident(p, "a field name")))
                return NULL;
            sql__list_push(p, &n->args, x);
            n->line = x->line;
            n->col = x->col;
            x = sql__check_height(p, t, n);
            continue;
        }
        if (is_op(t, "->") || is_op(t, "->>")) {
            Ast *n = sql__new_ast(p, A_FUNC, t), *k;
            n->name = arena_strndup(p->a, t->s, t->n);
            Token *minus = is_op(cur(p), "-") && p->t[p->i + 1].k == T_INT ? cur(p) : NULL;
            p->i += minus != NULL;
            if (!(k = parse_primary(p)))
                return NULL;
            if (minus) { /* x -> -1: a negative index */
                char *s = arena_alloc(p->a, k->slen + 2);
                s[0] = '-';
                memcpy(s + 1, k->str, k->slen + 1);
                k->str = s;
                k->slen++;
            }
            sql__list_push(p, &n->args, x);
            sql__list_push(p, &n->args, k);
            n->line = x->line;
            n->col = x->col;
            x = sql__check_height(p, t, n);
            continue;
        }
        if (is_op(t, "[")) {
            Ast *n = sql__new_ast(p, A_FUNC, t), *i = NULL, *j = NULL;
            n->name = arena_strndup(p->a, "[]", 2);
            if (!is_op(cur(p), ":") && !(i = sql__parse_expr(p)))
                return NULL;
            if (accept_op(p, ":")) { /* a slice x[lo:hi], either bound omitted */
                n->name = arena_strndup(p->a, "[:]", 3);
                if (!is_op(cur(p), "]") && !(j = sql__parse_expr(p)))
                    return NULL;
                if (!i) {
                    i = sql__new_ast(p, A_INT, t);
                    i->str = (char *)"1";
                    i->slen = 1;
                }
                if (!j) {
                    j = sql__new_ast(p, A_INT, t);
                    j->str = (char *)"9223372036854775807";
                    j->slen = strlen(j->str);
                }
            } else if (!i) {
                sql__fail(p, "a subscript");
                return NULL;
            }
            if (sql__expect_op(p, "]"))
                return NULL;
            sql__list_push(p, &n->args, x);
            sql__list_push(p, &n->args, i);
            if (!strcmp(n->name, "[:]"))
                sql__list_push(p, &n->args, j);
            n->line = x->line;
            n->col = x->col;
            x = sql__check_height(p, t, n);
            continue;
        }
        Ast *n = sql__new_ast(p, A_CAST, t);
        n->a = x;
        n->line = x->line;
        n->col = x->col;
        if (sql__parse_type(p, &n->type))
            return NULL;
        x = sql__check_height(p, t, n);
    }
    return x;
}

static Ast *parse_primary(Parser *p)
{
    Token *t = cur(p);
    Ast *n;
    if (t->k == T_INT || t->k == T_NUM) {
        n = sql__new_ast(p, t->k == T_INT ? A_INT : A_NUM, t);
        n->str = (char *)t->s;
        n->slen = t->n;
        p->i++;
        return n;
    }
    if (t->k == T_STR) {
        n = sql__new_ast(p, A_STR, t);
        n->str = (char *)t->s;
        n->slen = t->n;
        p->i++;
        return n;
    }
    if (accept_op(p, "(")) {
        if (is_kw(cur(p), "select") || is_kw(cur(p), "with")) {
            n = sql__new_ast(p, A_SUBQUERY, t);
            n->sub = sql__parse_query(p);
            if (!n->sub || sql__expect_op(p, ")"))
                return NULL;
            return n;
        }
        n = sql__parse_expr(p);
        if (!n)
            return NULL;
        if (is_op(cur(p), ",")) { /* (a, b, ...): PostgreSQL's ROW(a, b, ...) */
            Ast *r = sql__new_ast(p, A_FUNC, t);
            r->name = "row";
            r->ival = 1; /* written without ROW (GROUP BY flattens it) */
            sql__list_push(p, &r->args, n);
            while (accept_op(p, ",")) {
                Ast *e = sql__parse_expr(p);
                if (!e)
                    return NULL;
                sql__list_push(p, &r->args, e);
            }
            n = r;
        }
        if (sql__expect_op(p, ")"))
            return NULL;
        return n;
    }
    if (t->k == T_OP && strcmp(t->s, "*") == 0) {
        p->i++;
        return sql__new_ast(p, A_STAR, t);
    }
    if (t->k == T_QIDENT || t->k == T_IDENT) {
        if (t->k == T_IDENT) {
            if (accept_kw(p, "null"))
                return sql__new_ast(p, A_NULL, t);
            if (is_kw(t, "true") || is_kw(t, "false")) {
                p->i++;
                n = sql__new_ast(p, A_BOOL, t);
                n->ival = is_kw(t, "true");
                return n;
            }
            if (is_kw(t, "case")) {
                p->i++;
                n = sql__new_ast(p, A_CASE, t);
                if (!is_kw(cur(p), "when") && !(n->a = sql__parse_expr(p)))
                    return NULL;
                if (!is_kw(cur(p), "when")) {
                    sql__fail(p, "WHEN");
                    return NULL;
                }
                while (accept_kw(p, "when")) {
                    Ast *w = sql__parse_expr(p), *th;
                    if (!w || sql__expect_kw(p, "then") || !(th = sql__parse_expr(p)))
                        return NULL;
                    sql__list_push(p, &n->args, w);
                    sql__list_push(p, &n->args, th);
                }
                if (accept_kw(p, "else") && !(n->b = sql__parse_expr(p)))
                    return NULL;
                if (sql__expect_kw(p, "end"))
                    return NULL;
                return n;
            }
            if (is_kw(t, "cast") && is_op(&p->t[p->i + 1], "(")) {
                p->i += 2;
                n = sql__new_ast(p, A_CAST, t);
                if (!(n->a = sql__parse_expr(p)) || sql__expect_kw(p, "as") ||
                    sql__parse_type(p, &n->type) || sql__expect_op(p, ")"))
                    return NULL;
                return n;
            }
            if ((is_kw(t, "date") || is_kw(t, "time") || is_kw(t, "timestamp")) &&
                p->t[p->i + 1].k == T_STR) {
                n = sql__new_ast(p, A_TYPED, t);
                n->type = type_make(is_kw(t, "date") ? TK_DATE
                                    : is_kw(t, "time") ? TK_TIME : TK_TIMESTAMP, false);
                p->i++;
                n->str = (char *)cur(p)->s;
                n->slen = cur(p)->n;
                p->i++;
                return n;
            }
            if (is_kw(t, "interval")) {
                p->i++;
                return parse_interval(p, t);
            }
            if ((is_kw(t, "timestamptz") && p->t[p->i + 1].k == T_STR) ||
                (is_kw(t, "timestamp") && is_kw(&p->t[p->i + 1], "with") &&
                 is_kw(&p->t[p->i + 2], "time") && is_kw(&p->t[p->i + 3], "zone") &&
                 p->t[p->i + 4].k == T_STR)) {
                n = sql__new_ast(p, A_TYPED, t);
                n->type = type_tstz(p->tz, false);
                p->i += is_kw(t, "timestamptz") ? 1 : 4;
                n->str = (char *)cur(p)->s;
                n->slen = cur(p)->n;
                p->i++;
                return n;
            }
            if (is_typed_literal(p, t))
                return parse_typed_literal(p, t);
            /* ARRAY[e1, ...]: the call "array[]"(e1, ...) */
            if (is_kw(t, "array") && is_op(&p->t[p->i + 1], "["))
                return parse_bracket_call(p, t, "array[]");
            /* MAP[k1, v1, ...]: the call "map[]"(k1, v1, ...) */
            if (is_kw(t, "map") && is_op(&p->t[p->i + 1], "["))
                return parse_bracket_call(p, t, "map[]");
            if (is_kw(t, "array") && is_op(&p->t[p->i + 1], "(")) {
                sql__unsupported(p, t, "ARRAY(subquery)");
                return NULL;
            }
            /* NOW() and CURRENT_TIMESTAMP [(p)]: the pipeline's clock,
               allowed in temporal filters only (plan_temporal.c) */
            if (is_kw(t, "current_timestamp") || is_kw(t, "localtimestamp")) {
                n = sql__new_ast(p, A_FUNC, t);
                n->name = "now";
                p->i++;
                if (is_op(cur(p), "(") && p->t[p->i + 1].k == T_INT && is_op(&p->t[p->i + 2], ")"))
                    p->i += 3; /* a precision: the clock has microseconds */
                return n;
            }
            static const char *const clock_fns[] = {"current_date", "current_time", "localtime"};
            for (size_t i = 0; i < ARRAY_LEN(clock_fns); i++)
                if (is_kw(t, clock_fns[i])) {
                    err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col,
                               "%s is not supported: only NOW() / CURRENT_TIMESTAMP, and only in "
                               "a view's temporal filter (WHERE col >= NOW() - INTERVAL ...)",
                               (const char *const[]){"CURRENT_DATE", "CURRENT_TIME",
                                   "LOCALTIME"}[i]);
                    return NULL;
                }
            if (is_kw(t, "extract") && is_op(&p->t[p->i + 1], "(")) {
                p->i += 2;
                n = sql__new_ast(p, A_EXTRACT, t);
                if (!(n->name = sql__ident(p, "a date/time field")) || sql__expect_kw(p, "from") ||
                    !(n->a = sql__parse_expr(p)) || sql__expect_op(p, ")"))
                    return NULL;
                return n;
            }
            /* date_part('field', x): PostgreSQL's spelling of EXTRACT */
            if (is_kw(t, "date_part") && is_op(&p->t[p->i + 1], "(") &&
                p->t[p->i + 2].k == T_STR && is_op(&p->t[p->i + 3], ",")) {
                n = sql__new_ast(p, A_EXTRACT, t);
                n->name = arena_strndup(p->a, p->t[p->i + 2].s, p->t[p->i + 2].n);
                p->i += 4;
                if (!(n->a = sql__parse_expr(p)) || sql__expect_op(p, ")"))
                    return NULL;
                return n;
            }
            if (is_kw(t, "exists") && is_op(&p->t[p->i + 1], "(")) {
                p->i += 2;
                n = sql__new_ast(p, A_EXISTS, t);
                if (!is_kw(cur(p), "select") && !is_kw(cur(p), "with")) {
                    sql__fail(p, "SELECT after EXISTS (");
                    return NULL;
                }
                if (!(n->sub = sql__parse_query(p)) || sql__expect_op(p, ")"))
                    return NULL;
                return n;
            }
        }
        /* function call? */
        if (t->k == T_IDENT && is_op(&p->t[p->i + 1], "(") &&
            (!sql__is_reserved(t) || is_kw(t, "left") || is_kw(t, "right"))) {
            n = sql__new_ast(p, A_FUNC, t);
            n->name = arena_strndup(p->a, t->s, t->n);
            for (char *c = n->name; *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                    *c = (char)(*c + 32);
            p->i += 2;
            int sp = special_args(p, n);
            if (sp < 0)
                return NULL;
            if (sp > 0)
                return sql__expect_op(p, ")") ? NULL : n;
            if (accept_op(p, "*")) {
                n->star = true;
            } else if (!is_op(cur(p), ")")) {
                if (accept_kw(p, "distinct"))
                    n->distinct = true;
                else
                    accept_kw(p, "all");
                do {
                    Ast *x;
                    if (!(x = sql__parse_expr(p)))
                        return NULL;
                    sql__list_push(p, &n->args, x);
                    if (is_kw(cur(p), "order")) { /* agg(x, ... ORDER BY o, ...) */
                        n->order_line = cur(p)->line;
                        n->order_col = cur(p)->col;
                        p->i++;
                        if (sql__expect_kw(p, "by") ||
                            sql__parse_order_by(p, &n->order, &n->norder))
                            return NULL;
                        break;
                    }
                    /* SUBSTRING(s FROM a FOR b), POSITION(a IN b), TRIM(...) */
                    if (!strcmp(n->name, "substring") || !strcmp(n->name, "substr")) {
                        if (accept_kw(p, "from")) {
                            if (!(x = sql__parse_expr(p)))
                                return NULL;
                            sql__list_push(p, &n->args, x);
                            if (accept_kw(p, "for")) {
                                if (!(x = sql__parse_expr(p)))
                                    return NULL;
                                sql__list_push(p, &n->args, x);
                            }
                        }
                    }
                } while (accept_op(p, ","));
                /* MySQL: GROUP_CONCAT(x [ORDER BY ...] SEPARATOR 'sep') */
                if (!strcmp(n->name, "group_concat") && n->args.n == 1 &&
                    accept_kw(p, "separator")) {
                    Ast *x;
                    if (!(x = sql__parse_expr(p)))
                        return NULL;
                    sql__list_push(p, &n->args, x);
                }
            }
            if (parse_null_treatment(p, n) || sql__expect_op(p, ")") ||
                parse_null_treatment(p, n))
                return NULL;
            if (is_kw(cur(p), "within") && is_kw(&p->t[p->i + 1], "group")) {
                /* ordered-set aggregate: f(args) WITHIN GROUP (ORDER BY x) */
                if (n->norder) {
                    sql__unsupported(p, cur(p), "WITHIN GROUP after ORDER BY in the arguments");
                    return NULL;
                }
                n->order_line = cur(p)->line;
                n->order_col = cur(p)->col;
                n->within = true;
                p->i += 2;
                if (sql__expect_op(p, "(") || sql__expect_kw(p, "order") ||
                    sql__expect_kw(p, "by") || sql__parse_order_by(p, &n->order, &n->norder) ||
                    sql__expect_op(p, ")"))
                    return NULL;
            }
            if (is_kw(cur(p), "over") && (n->norder || n->within ||
                                          (multiset_agg(n->name) && !stat_window_ok(n->name)))) {
                size_t wn = strlen(n->name) + 64;
                char *what = arena_alloc(p->a, wn);
                snprintf(what, wn, "%s%s as a window function (OVER)", n->name,
                         n->within ? " WITHIN GROUP" : n->norder ? " with ORDER BY" : "");
                sql__unsupported(p, cur(p), what);
                return NULL;
            }
            if (is_kw(cur(p), "over") && parse_over(p, n))
                return NULL;
            if (n->ignore_nulls && !n->over) {
                Token it = {0};
                it.line = n->ignore_line;
                it.col = n->ignore_col;
                sql__unsupported(p, &it, "IGNORE NULLS outside a window function (OVER)");
                return NULL;
            }
            if (is_kw(cur(p), "filter")) {
                Token *ft = cur(p);
                if (parse_filter(p, n))
                    return NULL;
                if (is_kw(cur(p), "over")) {
                    sql__unsupported(p, ft, "FILTER on a window function (OVER)");
                    return NULL;
                }
            }
            return n;
        }
        n = sql__new_ast(p, A_COL, t);
        if (!(n->name = sql__ident(p, "an expression")))
            return NULL;
        if (is_op(cur(p), ".")) {
            p->i++;
            if (accept_op(p, "*")) {
                n->k = A_STAR;
                n->qual = n->name;
                n->name = NULL;
                return n;
            }
            n->qual = n->name;
            if (!(n->name = sql__ident(p, "a column name")))
                return NULL;
            /* a.b.c: field c of ROW column a.b (the postfix loop) */
        }
        return n;
    }
    sql__fail(p, "an expression");
    return NULL;
}

/* `agg(x) FILTER (WHERE c)` after aggregate call n: rewritten in place to
   agg(CASE WHEN c THEN x END) (COUNT(*): COUNT(CASE WHEN c THEN 1 END)),
   the same rows counted since aggregates skip NULLs. 0, or -1 on an error. */
static int parse_filter(Parser *p, Ast *n)
{
    static const char *const aggs[] = {"count", "sum", "avg", "min", "max", "bool_and",
                                       "bool_or", "every", "bit_and", "bit_or", "bit_xor",
                                       "string_agg", "percentile_cont", "percentile_disc",
                                       "mode", NULL};
    Token *at = cur(p);
    const char *const *k = aggs;
    while (*k && strcmp(*k, n->name))
        k++;
    if (!*k && stat_agg_args(n->name))
        k = aggs; /* (any non-NULL entry: allowed) */
    /* two arguments: the value skips the row when NULL, the second stays */
    bool str = !strcmp(n->name, "string_agg") || stat_agg_args(n->name) == 2,
         within = n->within;
    if (!*k || n->over || (!n->star && !within && n->args.n != 1 + str) ||
        (within && n->norder != 1)) {
        sql__unsupported(p, at, "FILTER other than on COUNT, SUM, AVG, MIN, MAX, BOOL_AND, "
                                "BOOL_OR, EVERY, BIT_AND/OR/XOR of one argument, STRING_AGG, "
                                "PERCENTILE_CONT/DISC, MODE or the statistical aggregates "
                                "(without OVER)");
        return -1;
    }
    p->i++;
    Ast *c, *cs = sql__new_ast(p, A_CASE, at);
    if (sql__expect_op(p, "(") || sql__expect_kw(p, "where") || !(c = sql__parse_expr(p)) ||
        sql__expect_op(p, ")"))
        return -1;
    /* the value that skips the row when NULL: the ordered-set aggregates'
       WITHIN GROUP expression */
    Ast *x = n->star ? sql__new_ast(p, A_INT, at) : within ? n->order[0].e : n->args.v[0];
    if (n->star) {
        x->str = (char *)"1";
        x->slen = 1;
        n->star = false;
        sql__list_push(p, &n->args, x);
    }
    cs->ival = 1;
    sql__list_push(p, &cs->args, c);
    sql__list_push(p, &cs->args, x);
    if (within)
        n->order[0].e = cs;
    else
        n->args.v[0] = cs;
    return 0;
}

/* The operand of the prefix operator at the current token, parsed by
   operand one level of nesting deeper; NULL on an error. */
static Ast *prefix_operand(Parser *p, Ast *(*operand)(Parser *))
{
    if (sql__enter(p))
        return NULL;
    p->i++;
    Ast *x = operand(p);
    leave(p);
    return x;
}

static Ast *parse_unary(Parser *p)
{
    Token *t = cur(p);
    if (is_op(t, "-") || is_op(t, "+")) {
        Ast *x = prefix_operand(p, parse_unary);
        if (!x)
            return NULL;
        if (is_op(t, "+"))
            return x;
        /* fold -literal so that -9223372036854775808 is representable */
        if ((x->k == A_INT || x->k == A_NUM) && x->str[0] == '-') { /* - -5 */
            x->str++;
            x->slen--;
            x->line = t->line;
            x->col = t->col;
            return x;
        }
        if (x->k == A_INT || x->k == A_NUM) {
            char *s = arena_alloc(p->a, x->slen + 2);
            s[0] = '-';
            memcpy(s + 1, x->str, x->slen + 1);
            x->str = s;
            x->slen++;
            x->line = t->line;
            x->col = t->col;
            return x;
        }
        Ast *n = sql__new_ast(p, A_UN, t);
        n->op = OP_NEG;
        n->a = x;
        return n;
    }
    Ast *x = parse_pg_casts(p, parse_primary(p));
    /* x AT TIME ZONE z: PostgreSQL's timezone(z, x), binding tighter than
       arithmetic and looser than :: */
    while (x && is_kw(cur(p), "at") && is_kw(&p->t[p->i + 1], "time") &&
           is_kw(&p->t[p->i + 2], "zone")) {
        Token *at = cur(p);
        p->i += 3;
        Ast *z = parse_pg_casts(p, parse_primary(p));
        if (!z)
            return NULL;
        Ast *n = sql__new_ast(p, A_FUNC, at);
        n->name = arena_strndup(p->a, "timezone", 8);
        sql__list_push(p, &n->args, z);
        sql__list_push(p, &n->args, x);
        n->line = x->line;
        n->col = x->col;
        x = n;
    }
    return x;
}

static Ast *binary(Parser *p, Token *t, int op, Ast *l, Ast *r)
{
    if (!l || !r)
        return NULL;
    Ast *n = sql__new_ast(p, A_BIN, t);
    n->op = op;
    n->a = l;
    n->b = r;
    n->line = l->line;
    n->col = l->col;
    return sql__check_height(p, t, n);
}

/* A left-associative level: operand {op operand}, op_of(t) giving the
   AstOp of an operator token t of this level, or -1. */
static Ast *parse_level(Parser *p, Ast *(*operand)(Parser *), int (*op_of)(const Token *))
{
    Ast *l = operand(p);
    for (;;) {
        Token *t = cur(p);
        int op = op_of(t);
        if (!l || op < 0)
            return l;
        p->i++;
        l = binary(p, t, op, l, operand(p));
    }
}

static int mul_op(const Token *t)
{
    return is_op(t, "*") ? OP_MUL : is_op(t, "/") ? OP_DIV : is_op(t, "%") ? OP_MOD : -1;
}

static int add_op(const Token *t) { return is_op(t, "+") ? OP_ADD : is_op(t, "-") ? OP_SUB : -1; }
static int concat_op(const Token *t) { return is_op(t, "||") ? OP_CONCAT : -1; }

static Ast *parse_mul(Parser *p) { return parse_level(p, parse_unary, mul_op); }
static Ast *parse_add(Parser *p) { return parse_level(p, parse_mul, add_op); }

/* The JSON operators at ||'s level (PostgreSQL's "any other operator"),
   left to right: l @> r, l <@ r, l ? r, l #> r, l #>> r as calls of those
   names (bind_variant.c). */
static int json_op(const Token *t)
{
    return is_op(t, "@>") || is_op(t, "<@") || is_op(t, "?") || is_op(t, "#>") ||
           is_op(t, "#>>");
}

static Ast *parse_concat(Parser *p)
{
    Ast *l = parse_add(p);
    for (;;) {
        Token *t = cur(p);
        if (!l)
            return NULL;
        if (concat_op(t) >= 0) {
            p->i++;
            l = binary(p, t, OP_CONCAT, l, parse_add(p));
            continue;
        }
        if (!json_op(t))
            return l;
        p->i++;
        Ast *r = parse_add(p);
        if (!r)
            return NULL;
        Ast *n = sql__new_ast(p, A_FUNC, t);
        n->name = arena_strndup(p->a, t->s, t->n);
        sql__list_push(p, &n->args, l);
        sql__list_push(p, &n->args, r);
        n->line = l->line;
        n->col = l->col;
        l = sql__check_height(p, t, n);
    }
}

/* A call of regex function `name` over args at token t (the operator). */
static Ast *regex_call(Parser *p, const Token *t, const char *name, Ast *a, Ast *b, Ast *c)
{
    Ast *n = sql__new_ast(p, A_FUNC, t);
    n->name = arena_strndup(p->a, name, strlen(name));
    sql__list_push(p, &n->args, a);
    sql__list_push(p, &n->args, b);
    if (c)
        sql__list_push(p, &n->args, c);
    return n;
}

/* l ~ r, l ~* r, l !~ r, l !~* r (PostgreSQL), l [NOT] RLIKE / REGEXP r
   (MySQL, Spark), l [NOT] SIMILAR TO r [ESCAPE e]: calls of regexp_like
   (SIMILAR TO's pattern through similar_to_escape, as PostgreSQL does),
   NOT-wrapped when negated. NULL when the current token is none of these
   (nothing consumed), or with p->err set. RLIKE and REGEXP count as
   operators only before something that can start an operand, so a column
   alias of that name still parses. */
static Ast *parse_regex_op(Parser *p, Ast *l, bool neg)
{
    Token *t = cur(p), *nx = &p->t[p->i + 1];
    Ast *r, *n, *flags = NULL;
    if (!neg && (is_op(t, "~") || is_op(t, "~*") || is_op(t, "!~") || is_op(t, "!~*"))) {
        neg = t->s[0] == '!';
        if (t->s[t->n - 1] == '*') { /* case-insensitive: flag 'i' */
            flags = sql__new_ast(p, A_STR, t);
            flags->str = arena_strndup(p->a, "i", 1);
            flags->slen = 1;
        }
        p->i++;
        if (!(r = parse_concat(p)))
            return NULL;
        n = regex_call(p, t, "regexp_like", l, r, flags);
    } else if (is_kw(t, "similar") && is_kw(nx, "to")) {
        p->i += 2;
        Ast *e = NULL;
        if (!(r = parse_concat(p)) || (accept_kw(p, "escape") && !(e = parse_concat(p))))
            return NULL;
        Ast *pat = sql__new_ast(p, A_FUNC, t);
        pat->name = arena_strndup(p->a, "similar_to_escape", strlen("similar_to_escape"));
        sql__list_push(p, &pat->args, r);
        if (e)
            sql__list_push(p, &pat->args, e);
        n = regex_call(p, t, "regexp_like", l, pat, NULL);
    } else if ((is_kw(t, "rlike") || is_kw(t, "regexp")) &&
               (nx->k == T_STR || nx->k == T_QIDENT || nx->k == T_INT || nx->k == T_NUM ||
                is_op(nx, "(") || (nx->k == T_IDENT && !sql__is_reserved(nx)))) {
        p->i++;
        if (!(r = parse_concat(p)))
            return NULL;
        n = regex_call(p, t, "regexp_like", l, r, NULL);
    } else {
        return NULL;
    }
    if (neg) {
        Ast *x = sql__new_ast(p, A_UN, t);
        x->op = OP_NOT;
        x->a = n;
        n = x;
    }
    return n;
}

static Ast *parse_cmp(Parser *p)
{
    Ast *l = parse_concat(p);
    for (;;) {
        Token *t = cur(p);
        int op = -1;
        if (!l)
            return NULL;
        if (is_op(t, "=") || is_op(t, "=="))
            op = OP_EQ;
        else if (is_op(t, "<>") || is_op(t, "!="))
            op = OP_NE;
        else if (is_op(t, "<"))
            op = OP_LT;
        else if (is_op(t, "<="))
            op = OP_LE;
        else if (is_op(t, ">"))
            op = OP_GT;
        else if (is_op(t, ">="))
            op = OP_GE;
        if (op >= 0) {
            p->i++;
            if (is_kw(cur(p), "any") || is_kw(cur(p), "all") || is_kw(cur(p), "some")) {
                /* x op ANY|SOME|ALL (array): the call "any[]"(x, array, op,
                   all); over a subquery not yet */
                Token *q = cur(p);
                if (!is_op(&p->t[p->i + 1], "(") || is_kw(&p->t[p->i + 2], "select") ||
                    is_kw(&p->t[p->i + 2], "with") || is_kw(&p->t[p->i + 2], "values")) {
                    sql__unsupported(p, q, "quantified comparisons (ANY/ALL/SOME) over a subquery");
                    return NULL;
                }
                p->i += 2;
                Ast *arr = sql__parse_expr(p), *n;
                if (!arr || sql__expect_op(p, ")"))
                    return NULL;
                n = sql__new_ast(p, A_FUNC, t);
                n->name = arena_strndup(p->a, "any[]", 5);
                n->ival = op * 2 + is_kw(q, "all");
                sql__list_push(p, &n->args, l);
                sql__list_push(p, &n->args, arr);
                n->line = l->line;
                n->col = l->col;
                l = sql__check_height(p, t, n);
                continue;
            }
            l = binary(p, t, op, l, parse_concat(p));
            continue;
        }
        if (is_kw(t, "is")) {
            p->i++;
            bool neg = accept_kw(p, "not");
            Ast *n;
            if (accept_kw(p, "null")) {
                n = sql__new_ast(p, A_ISNULL, t);
            } else if (is_kw(cur(p), "true") || is_kw(cur(p), "false")) {
                n = sql__new_ast(p, A_ISBOOL, t);
                n->ival = is_kw(cur(p), "true");
                p->i++;
            } else if (accept_kw(p, "distinct")) {
                if (sql__expect_kw(p, "from"))
                    return NULL;
                n = sql__new_ast(p, A_DISTINCT, t);
                if (!(n->b = parse_concat(p)))
                    return NULL;
                n->line = l->line;
                n->col = l->col;
            } else {
                sql__fail(p, "NULL, TRUE or FALSE after IS");
                return NULL;
            }
            n->negated = neg;
            n->a = l;
            l = n;
            continue;
        }
        bool neg = false;
        int save = p->i;
        if (is_kw(t, "not") && (is_kw(&p->t[p->i + 1], "between") || is_kw(&p->t[p->i + 1], "in") ||
                                is_kw(&p->t[p->i + 1], "like") || is_kw(&p->t[p->i + 1], "ilike") ||
                                is_kw(&p->t[p->i + 1], "similar") ||
                                is_kw(&p->t[p->i + 1], "rlike") || is_kw(&p->t[p->i + 1], "regexp"))) {
            neg = true;
            p->i++;
        }
        Token *k = cur(p);
        if (accept_kw(p, "between")) {
            Ast *n = sql__new_ast(p, A_BETWEEN, t);
            accept_kw(p, "symmetric") ? (void)sql__unsupported(p, k, "BETWEEN SYMMETRIC") : (void)0;
            if (p->err->code)
                return NULL;
            accept_kw(p, "asymmetric");
            n->a = l;
            if (!(n->b = parse_concat(p)) || sql__expect_kw(p, "and") || !(n->c = parse_concat(p)))
                return NULL;
            n->negated = neg;
            l = n;
            continue;
        }
        if (accept_kw(p, "in")) {
            Ast *n = sql__new_ast(p, A_IN, t);
            n->a = l;
            n->negated = neg;
            if (sql__expect_op(p, "("))
                return NULL;
            if (is_kw(cur(p), "select") || is_kw(cur(p), "with")) {
                if (!(n->sub = sql__parse_query(p)) || sql__expect_op(p, ")"))
                    return NULL;
                l = n;
                continue;
            }
            if (sql__parse_exprs(p, &n->args) || sql__expect_op(p, ")"))
                return NULL;
            l = n;
            continue;
        }
        if (is_kw(k, "like") || is_kw(k, "ilike")) {
            p->i++;
            Ast *n = sql__new_ast(p, A_LIKE, t);
            n->ival = is_kw(k, "ilike"); /* case-insensitive */
            n->a = l;
            n->negated = neg;
            if (!(n->b = parse_concat(p)))
                return NULL;
            if (accept_kw(p, "escape") && !(n->c = parse_concat(p)))
                return NULL;
            l = n;
            continue;
        }
        Ast *rx = parse_regex_op(p, l, neg);
        if (p->err->code)
            return NULL;
        if (rx) {
            l = rx;
            continue;
        }
        p->i = save;
        return l;
    }
}

static Ast *parse_not(Parser *p)
{
    Token *t = cur(p);
    if (is_kw(t, "not")) {
        Ast *x = prefix_operand(p, parse_not);
        if (!x)
            return NULL;
        Ast *n = sql__new_ast(p, A_UN, t);
        n->op = OP_NOT;
        n->a = x;
        return n;
    }
    return parse_cmp(p);
}

/* Operands v[0..n) joined by op (AND or OR) as a balanced tree; ops[i] is
   the operator token before v[i]. */
static Ast *balanced(Parser *p, int op, Ast **v, Token **ops, int n)
{
    if (n == 1)
        return v[0];
    int m = n / 2;
    Ast *l = balanced(p, op, v, ops, m), *r = balanced(p, op, v + m, ops + m, n - m);
    return binary(p, ops[m], op, l, r);
}

/* operand (kw operand)*: a chain of ANDs or ORs, as a balanced tree. */
static Ast *parse_chain(Parser *p, const char *kw, int op, Ast *(*operand)(Parser *))
{
    Ast *x = operand(p);
    if (!x || !is_kw(cur(p), kw))
        return x;
    int n = 0, vcap = 0, ocap = 0;
    Ast **v = NULL;
    Token **ops = NULL;
    VEC_RESERVE(ops, ocap, 1);
    *VEC_PUSH(v, n, vcap) = x;
    ops[0] = NULL;
    while (x && is_kw(cur(p), kw)) {
        VEC_RESERVE(ops, ocap, n + 1);
        ops[n] = cur(p);
        p->i++;
        x = operand(p);
        *VEC_PUSH(v, n, vcap) = x;
    }
    Ast *out = x ? balanced(p, op, v, ops, n) : NULL;
    sl_free(v);
    sl_free(ops);
    return out;
}

static Ast *parse_and(Parser *p) { return parse_chain(p, "and", OP_AND, parse_not); }

Ast *sql__parse_expr(Parser *p)
{
    Token *t = cur(p);
    if (sql__enter(p))
        return NULL;
    Ast *x = sql__check_height(p, t, parse_chain(p, "or", OP_OR, parse_and));
    leave(p);
    return x;
}

int sql__parse_exprs(Parser *p, AstList *l)
{
    do {
        Ast *x = sql__parse_expr(p);
        if (!x)
            return p->err->code;
        sql__list_push(p, l, x);
    } while (accept_op(p, ","));
    return 0;
}

int sql__parse_order_by(Parser *p, OrderItem **out, int *n)
{
    int cap = *n; /* full: the first item grows it */
    do {
        Ast *e = sql__parse_expr(p);
        if (!e)
            return p->err->code;
        OrderItem *o = VEC_PUSH_ARENA(p->a, *out, *n, cap);
        memset(o, 0, sizeof(*o));
        o->e = e;
        if (accept_kw(p, "desc"))
            o->desc = true;
        else
            accept_kw(p, "asc");
        if (accept_kw(p, "nulls")) {
            if (accept_kw(p, "first"))
                o->nulls = 1;
            else if (accept_kw(p, "last"))
                o->nulls = 2;
            else
                return sql__fail(p, "FIRST or LAST");
        }
    } while (accept_op(p, ","));
    return 0;
}
