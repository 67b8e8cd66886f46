/*
 * sql/parse_query.c - the grammar of queries (parse_int.h): WITH, then
 * SELECT blocks ([DISTINCT [ON (...)]] select list, FROM with its joins
 * and table functions, WHERE, GROUP BY, HAVING) or VALUES rows, combined
 * by UNION / EXCEPT / INTERSECT (INTERSECT binding tighter), then ORDER BY,
 * LIMIT and OFFSET (or FETCH FIRST n ROWS ONLY).
 * Called for views (parse_ddl.c) and for subqueries in expressions
 * (parse_expr.c); builds ast.h's Select and FromItem.
 *
 * A parenthesised operand keeps its own ORDER BY, LIMIT and WITH by
 * becoming `SELECT * FROM (q)` (wrap_query). The relations of each FROM
 * clause count against SQL_MAX_FROM (ast.h), which keeps planning a join
 * tree in its bounds.
 */
#include "../base/err.h"
#include "../base/vec.h"
#include "parse_int.h"

/* LIMIT n | LIMIT ALL, OFFSET m [ROW|ROWS], and the standard's FETCH
   {FIRST|NEXT} [n] {ROW|ROWS} {ONLY|WITH TIES} (LIMIT n, n 1 when absent;
   WITH TIES sets with_ties), in either order, each once, LIMIT and FETCH
   not both. 0, or -1 on an error. */
static int parse_limit(Parser *p, Select *s)
{
    bool lim = false, off = false;
    for (;;) {
        Token *t = cur(p);
        if (!lim && (is_kw(t, "limit") || is_kw(t, "fetch"))) {
            lim = true;
        } else if (!off && is_kw(t, "offset")) {
            off = true;
        } else
            return 0;
        if (!s->limit_line) {
            s->limit_line = t->line;
            s->limit_col = t->col;
        }
        p->i++;
        if (is_kw(t, "offset")) {
            if (!(s->offset = sql__parse_expr(p)))
                return -1;
            if (!accept_kw(p, "rows"))
                accept_kw(p, "row");
        } else if (is_kw(t, "limit")) {
            if (!accept_kw(p, "all") && !(s->limit = sql__parse_expr(p)))
                return -1;
        } else {
            if (!accept_kw(p, "first") && sql__expect_kw(p, "next"))
                return -1;
            if (!is_kw(cur(p), "row") && !is_kw(cur(p), "rows") && !(s->limit = sql__parse_expr(p)))
                return -1;
            if (!s->limit) {
                Ast *one = sql__new_ast(p, A_INT, t);
                one->str = (char *)"1";
                one->slen = 1;
                s->limit = one;
            }
            if (!accept_kw(p, "rows") && sql__expect_kw(p, "row"))
                return -1;
            if (accept_kw(p, "with")) {
                if (sql__expect_kw(p, "ties"))
                    return -1;
                s->with_ties = true;
            } else if (sql__expect_kw(p, "only"))
                return -1;
        }
    }
}

static char *opt_alias(Parser *p)
{
    if (accept_kw(p, "as"))
        return sql__ident(p, "an alias");
    Token *t = cur(p);
    const Token *nx = &p->t[p->i + 1];
    if ((is_kw(t, "asof") && is_kw(nx, "join")) ||
        (is_kw(t, "match_condition") && is_op(nx, "("))) /* not an alias */
        return NULL;
    if (is_kw(t, "for") && is_kw(nx, "system_time")) {
        sql__unsupported(p, t, "FOR SYSTEM_TIME AS OF other than after the table name of a "
                               "JOIN's right side (a temporal join)");
        return NULL;
    }
    if (is_kw(t, "for") && (is_kw(nx, "update") || is_kw(nx, "share") || is_kw(nx, "no") ||
                            is_kw(nx, "key"))) {
        sql__unsupported(p, t, "row locking (FOR UPDATE/SHARE)");
        return NULL;
    }
    if (is_kw(t, "tablesample")) {
        sql__unsupported(p, t, "TABLESAMPLE");
        return NULL;
    }
    if (is_kw(t, "fetch") && (is_kw(nx, "first") || is_kw(nx, "next")))
        return NULL; /* FETCH FIRST n ROWS ONLY */
    if (t->k == T_QIDENT || (t->k == T_IDENT && !sql__is_reserved(t)))
        return sql__ident(p, "an alias");
    return NULL;
}

/* After a FROM item's alias: an optional column alias list (c1, c2, ...). */
static int parse_col_aliases(Parser *p, FromItem *f)
{
    if (!accept_op(p, "("))
        return 0;
    return sql__parse_names(p, &f->col_aliases, &f->ncol_aliases);
}

static FromItem *parse_from_item(Parser *p);

/* TABLE(TUMBLE(TABLE t, DESCRIPTOR(col), size[, offset])) or
   TABLE(HOP(TABLE t, DESCRIPTOR(col), slide, size[, offset])), at TABLE. */
static int parse_tvf(Parser *p, FromItem *f)
{
    p->i += 2;
    Token *fn = cur(p);
    if (!is_kw(fn, "tumble") && !is_kw(fn, "hop")) {
        if (is_kw(fn, "session"))
            return err_setpos(p->err, SL_EUNSUPPORTED, fn->line, fn->col,
                              "table function SESSION is not supported yet (session windows; "
                              "only TUMBLE and HOP)");
        if (fn->k == T_IDENT && is_op(&p->t[p->i + 1], "(")) {
            return err_setpos(p->err, SL_EUNSUPPORTED, fn->line, fn->col,
                              "table function %.40s is not supported yet (only TUMBLE and HOP)",
                              fn->s);
        }
        return sql__fail(p, "TUMBLE or HOP after TABLE (");
    }
    f->k = F_TVF;
    f->name = (char *)(is_kw(fn, "tumble") ? "tumble" : "hop");
    p->i++;
    if (sql__expect_op(p, "("))
        return p->err->code;
    accept_kw(p, "table");
    FromItem *in = arena_zalloc(p->a, sizeof(*in));
    in->k = F_TABLE;
    in->line = cur(p)->line;
    in->col = cur(p)->col;
    if (!(in->name = sql__ident(p, "a table or view name")) || sql__expect_op(p, ","))
        return p->err->code;
    f->tvf_input = in;
    if (!accept_kw(p, "descriptor"))
        return sql__fail(p, "DESCRIPTOR(column)");
    if (sql__expect_op(p, "("))
        return p->err->code;
    f->tvf_col_line = cur(p)->line;
    f->tvf_col_col = cur(p)->col;
    if (!(f->tvf_col = sql__ident(p, "a column name")) || sql__expect_op(p, ")"))
        return p->err->code;
    while (accept_op(p, ",")) {
        Ast *x = sql__parse_expr(p);
        if (!x)
            return p->err->code;
        sql__list_push(p, &f->tvf_args, x);
    }
    if (sql__expect_op(p, ")") || sql__expect_op(p, ")"))
        return p->err->code;
    return 0;
}

static FromItem *parse_from_primary(Parser *p)
{
    Token *t = cur(p);
    const Token *u = &p->t[p->i + (t->k != T_EOF)];
    bool group = is_op(t, "(") && !is_kw(u, "select") && !is_kw(u, "with") &&
                 !is_kw(u, "values"); /* ( join ): its items count */
    if (!group && ++p->nfrom > SQL_MAX_FROM) {
        err_setpos(p->err, SL_EPARSE, t->line, t->col,
                   "too many relations in one FROM clause (limit %d)", SQL_MAX_FROM);
        return NULL;
    }
    FromItem *f = arena_zalloc(p->a, sizeof(*f));
    f->line = t->line;
    f->col = t->col;
    if (accept_op(p, "(")) {
        if (is_kw(cur(p), "select") || is_kw(cur(p), "with") || is_kw(cur(p), "values")) {
            f->k = F_SUBQUERY;
            if (!(f->sub = sql__parse_query(p)) || sql__expect_op(p, ")"))
                return NULL;
        } else {
            /* a parenthesised join (or table): the item itself */
            FromItem *in = parse_from_item(p);
            if (!in || sql__expect_op(p, ")"))
                return NULL;
            if (in->k == F_SUBQUERY || (in->k == F_TABLE && !in->alias)) {
                if (!in->alias) {
                    in->alias = opt_alias(p);
                    if (p->err->code || (in->alias && parse_col_aliases(p, in)))
                        return NULL;
                }
                return in;
            }
            if (in->k == F_JOIN && (is_kw(cur(p), "as") || cur(p)->k == T_QIDENT ||
                                    (cur(p)->k == T_IDENT && !sql__is_reserved(cur(p))))) {
                in->alias = opt_alias(p); /* (a JOIN b) AS j: a unit named j */
                if (p->err->code || parse_col_aliases(p, in))
                    return NULL;
            }
            return in;
        }
    } else if (is_kw(t, "table") && is_op(&p->t[p->i + 1], "(")) {
        if (parse_tvf(p, f))
            return NULL;
    } else {
        if (is_kw(t, "lateral") && is_kw(&p->t[p->i + 1], "unnest") &&
            is_op(&p->t[p->i + 2], "(")) { /* a function in FROM is lateral anyway */
            p->i++;
            t = cur(p);
        }
        if (is_kw(t, "unnest") && is_op(&p->t[p->i + 1], "(")) {
            p->i += 2;
            f->k = F_UNNEST;
            if (!(f->unnest_e = sql__parse_expr(p)))
                return NULL;
            while (accept_op(p, ",")) { /* several arrays, zipped */
                Ast *x = sql__parse_expr(p);
                if (!x)
                    return NULL;
                sql__list_push(p, &f->unnest_more, x);
            }
            if (sql__expect_op(p, ")"))
                return NULL;
            if (accept_kw(p, "with")) {
                if (sql__expect_kw(p, "ordinality"))
                    return NULL;
                f->ordinality = true;
            }
            f->alias = opt_alias(p);
            if (p->err->code || (f->alias && parse_col_aliases(p, f)))
                return NULL;
            return f;
        }
        if (is_kw(t, "lateral") || is_kw(t, "unnest")) {
            sql__unsupported(p, t, "LATERAL");
            return NULL;
        }
        f->k = F_TABLE;
        if (!(f->name = sql__ident(p, "a table or view name")))
            return NULL;
        if (is_op(cur(p), ".")) {
            sql__unsupported(p, cur(p), "schema-qualified names");
            return NULL;
        }
        if (is_op(cur(p), "(")) {
            sql__unsupported(p, cur(p), "table functions");
            return NULL;
        }
        if (is_kw(cur(p), "for") && is_kw(&p->t[p->i + 1], "system_time")) {
            f->as_of_line = cur(p)->line;
            f->as_of_col = cur(p)->col;
            p->i += 2; /* FOR SYSTEM_TIME AS OF expr: a temporal join's right side */
            if (sql__expect_kw(p, "as") || sql__expect_kw(p, "of") ||
                !(f->as_of = sql__parse_expr(p)))
                return NULL;
        }
    }
    f->alias = opt_alias(p);
    if (p->err->code || (f->alias && parse_col_aliases(p, f)))
        return NULL;
    return f;
}

static FromItem *parse_from_item_in(Parser *p);

static FromItem *parse_from_item(Parser *p)
{
    if (sql__enter(p))
        return NULL;
    FromItem *f = parse_from_item_in(p);
    leave(p);
    return f;
}

static FromItem *parse_from_item_in(Parser *p)
{
    FromItem *l = parse_from_primary(p);
    if (l && l->as_of) {
        err_setpos(p->err, SL_EUNSUPPORTED, l->as_of_line, l->as_of_col,
                   "FOR SYSTEM_TIME AS OF other than on the right side of a JOIN (a temporal "
                   "join) is not supported yet");
        return NULL;
    }
    for (;;) {
        if (!l)
            return NULL;
        Token *t = cur(p);
        bool natural = accept_kw(p, "natural");
        JoinKind jk;
        bool asof = false;
        if (!natural && is_kw(cur(p), "asof") && is_kw(&p->t[p->i + 1], "join")) {
            p->i += 2;
            jk = J_INNER;
            asof = true;
        } else if (accept_kw(p, "join"))
            jk = J_INNER;
        else if (accept_kw(p, "inner")) {
            if (sql__expect_kw(p, "join"))
                return NULL;
            jk = J_INNER;
        } else if (!natural && accept_kw(p, "cross")) {
            if (sql__expect_kw(p, "join"))
                return NULL;
            jk = J_CROSS;
        } else if (is_kw(cur(p), "left") || is_kw(cur(p), "right") || is_kw(cur(p), "full")) {
            jk = is_kw(cur(p), "left") ? J_LEFT : is_kw(cur(p), "right") ? J_RIGHT : J_FULL;
            p->i++;
            accept_kw(p, "outer");
            if (is_kw(cur(p), "asof")) {
                if (jk != J_LEFT || natural) {
                    sql__unsupported(p, cur(p), jk == J_LEFT ? "NATURAL ASOF JOIN"
                                                : jk == J_RIGHT ? "RIGHT ASOF JOIN (only ASOF and LEFT ASOF)"
                                                                : "FULL ASOF JOIN (only ASOF and LEFT ASOF)");
                    return NULL;
                }
                p->i++;
                asof = true;
            }
            if (sql__expect_kw(p, "join"))
                return NULL;
        } else {
            if (natural) {
                sql__fail(p, "JOIN");
                return NULL;
            }
            return l;
        }
        FromItem *j = arena_zalloc(p->a, sizeof(*j));
        j->k = F_JOIN;
        j->line = t->line;
        j->col = t->col;
        j->jk = jk;
        j->natural = natural;
        j->asof = asof;
        j->l = l;
        if (!(j->r = parse_from_primary(p)))
            return NULL;
        if (j->r->as_of) { /* a temporal join: planned as an ASOF join */
            if (asof || natural || (jk != J_INNER && jk != J_LEFT)) {
                sql__unsupported(p, t, "FOR SYSTEM_TIME AS OF in a NATURAL, CROSS, RIGHT, FULL or "
                                       "ASOF join (a temporal join is [INNER] JOIN or LEFT JOIN "
                                       "... ON)");
                return NULL;
            }
            j->temporal = asof = true;
            j->asof = true;
        }
        if (asof) { /* MATCH_CONDITION (cond) ON keys, or ON keys AND cond */
            if (!j->temporal && accept_kw(p, "match_condition")) {
                if (sql__expect_op(p, "(") || !(j->match = sql__parse_expr(p)) ||
                    sql__expect_op(p, ")"))
                    return NULL;
            }
            if (!accept_kw(p, "on")) {
                sql__fail(p, j->match || j->temporal ? "ON" : "MATCH_CONDITION or ON");
                return NULL;
            }
            if (!(j->on = sql__parse_expr(p)))
                return NULL;
        } else if (jk != J_CROSS && !natural) {
            if (accept_kw(p, "on")) {
                if (!(j->on = sql__parse_expr(p)))
                    return NULL;
            } else if (accept_kw(p, "using")) {
                if (sql__expect_op(p, "(") || sql__parse_names(p, &j->using_cols, &j->nusing))
                    return NULL;
            } else {
                sql__fail(p, "ON or USING");
                return NULL;
            }
        }
        l = j;
    }
}

/* SELECT * FROM (q): q as one operand of a set operation (so that a
   parenthesised set operation, ORDER BY, LIMIT or WITH stays its own). */
static Select *wrap_query(Parser *p, Select *q, const Token *t)
{
    Select *s = arena_zalloc(p->a, sizeof(*s));
    s->line = t->line;
    s->col = t->col;
    s->items = arena_zalloc(p->a, sizeof(SelectItem));
    s->nitems = 1;
    s->items[0].e = sql__new_ast(p, A_STAR, t);
    s->items[0].line = t->line;
    s->items[0].col = t->col;
    FromItem *f = arena_zalloc(p->a, sizeof(*f));
    f->k = F_SUBQUERY;
    f->line = t->line;
    f->col = t->col;
    f->sub = q;
    s->from = arena_alloc(p->a, sizeof(FromItem *));
    s->from[0] = f;
    s->nfrom = 1;
    return s;
}

/* Is s `SELECT * FROM (q)` as wrap_query() makes it? */
static bool is_wrapper(const Select *s)
{
    return s->nitems == 1 && s->items[0].e->k == A_STAR && !s->items[0].e->qual &&
           !s->items[0].e->a &&
           s->nfrom == 1 && s->from[0]->k == F_SUBQUERY && !s->from[0]->alias &&
           !s->from[0]->ncol_aliases && !s->where && !s->group.n && !s->having &&
           !s->qualify &&
           !s->distinct && !s->don.n && !s->nvalues && !s->nctes;
}

/* VALUES (e, ...), (e, ...): rows of expressions (after the keyword). */
static Select *parse_values(Parser *p, const Token *t)
{
    Select *s = arena_zalloc(p->a, sizeof(*s));
    s->line = t->line;
    s->col = t->col;
    int cap = 0;
    do {
        AstList row = {0};
        if (sql__expect_op(p, "(") || sql__parse_exprs(p, &row) || sql__expect_op(p, ")"))
            return NULL;
        *VEC_PUSH_ARENA(p->a, s->values, s->nvalues, cap) = row;
    } while (accept_op(p, ","));
    return s;
}

static Select *parse_select_body(Parser *p, const Token *t);

static Select *parse_select_core(Parser *p)
{
    Token *t = cur(p);
    if (accept_op(p, "(")) {
        Select *s = sql__parse_query(p);
        if (!s || sql__expect_op(p, ")"))
            return NULL;
        if (s->next || s->norder || s->limit || s->offset || s->nctes)
            return wrap_query(p, s, t);
        return s;
    }
    if (accept_kw(p, "values"))
        return parse_values(p, t);
    if (sql__expect_kw(p, "select"))
        return NULL;
    int outer_nfrom = p->nfrom; /* this FROM counts its own relations */
    p->nfrom = 0;
    Select *s = parse_select_body(p, t);
    p->nfrom = outer_nfrom;
    return s;
}

/* ---- named windows -------------------------------------------------------------
   OVER w and OVER (w ...) name a window of the SELECT's WINDOW clause, which
   comes after them: the parser keeps such windows pending (p->wpend) and
   resolves those of a SELECT once its WINDOW clause is read (those of the
   query's ORDER BY after it), by PostgreSQL's rules: OVER w copies w whole;
   OVER (w ...) and WINDOW w2 AS (w ...) take w's PARTITION BY and ORDER BY
   and add their own ORDER BY (only when w has none) and frame, and may not
   copy a w that has a frame. */

static int win_err(Parser *p, const WinDef *w, const char *fmt, const char *name)
{
    return err_setpos(p->err, SL_ESEMANTIC, w->ref_line, w->ref_col, fmt, name);
}

/* Resolve w's reference against windows v[0..n). */
static int resolve_window(Parser *p, WinDef *w, const NamedWin *v, int n)
{
    const WinDef *b = NULL;
    for (int i = 0; i < n && !b; i++)
        if (!strcmp(v[i].name, w->ref))
            b = v[i].w;
    if (!b)
        return win_err(p, w, "window \"%s\" does not exist", w->ref);
    if (!w->ref_paren) {
        w->part = b->part;
        w->order = b->order;
        w->norder = b->norder;
        w->frame = b->frame;
        w->frame_line = b->frame_line;
        w->frame_col = b->frame_col;
        w->start = b->start;
        w->end = b->end;
        w->start_n = b->start_n;
        w->end_n = b->end_n;
        w->exclude = b->exclude;
        w->exclude_line = b->exclude_line;
        w->exclude_col = b->exclude_col;
    } else {
        if (w->part.n)
            return win_err(p, w, "cannot override PARTITION BY clause of window \"%s\"", w->ref);
        if (w->norder && b->norder)
            return win_err(p, w, "cannot override ORDER BY clause of window \"%s\"", w->ref);
        if (b->frame)
            return win_err(p, w, "cannot copy window \"%s\" because it has a frame clause",
                           w->ref);
        w->part = b->part;
        if (!w->norder) {
            w->order = b->order;
            w->norder = b->norder;
        }
    }
    w->ref = NULL;
    return 0;
}

/* The pending references from mark on, against s's WINDOW clause. */
static int resolve_windows(Parser *p, Select *s, int mark)
{
    for (int i = mark; i < p->nwpend; i++)
        if (p->wpend[i]->ref && resolve_window(p, p->wpend[i], s->windows, s->nwindows))
            return p->err->code;
    p->nwpend = mark;
    return 0;
}

/* WINDOW name AS (spec), ... (after the keyword). */
static int parse_window_clause(Parser *p, Select *s)
{
    int cap = 0;
    do {
        Token *nt = cur(p);
        char *name = sql__ident(p, "a window name");
        if (!name)
            return p->err->code;
        for (int i = 0; i < s->nwindows; i++)
            if (!strcmp(s->windows[i].name, name))
                return err_setpos(p->err, SL_ESEMANTIC, nt->line, nt->col,
                                  "window \"%s\" is already defined", name);
        if (sql__expect_kw(p, "as"))
            return p->err->code;
        int mark = p->nwpend;
        WinDef *w = sql__parse_window_spec(p, nt);
        if (!w)
            return p->err->code;
        /* a definition may build on the ones before it */
        if (w->ref && resolve_window(p, w, s->windows, s->nwindows))
            return p->err->code;
        p->nwpend = mark;
        NamedWin *nw = VEC_PUSH_ARENA(p->a, s->windows, s->nwindows, cap);
        nw->name = name;
        nw->w = w;
    } while (accept_op(p, ","));
    return 0;
}

static Select *parse_select_body(Parser *p, const Token *t)
{
    Select *s = arena_zalloc(p->a, sizeof(*s));
    int mark = p->nwpend; /* the named-window references of this SELECT start here */
    s->line = t->line;
    s->col = t->col;
    if (accept_kw(p, "distinct")) {
        if (accept_kw(p, "on")) { /* planned by plan.c (plan_distinct_on) */
            if (sql__expect_op(p, "("))
                return NULL;
            do {
                Ast *e = sql__parse_expr(p);
                if (!e)
                    return NULL;
                sql__list_push(p, &s->don, e);
            } while (accept_op(p, ","));
            if (sql__expect_op(p, ")"))
                return NULL;
        } else
            s->distinct = true;
    } else
        accept_kw(p, "all");
    int cap = 0;
    do {
        Token *it = cur(p);
        Ast *e = sql__parse_expr(p);
        if (!e)
            return NULL;
        SelectItem *si = VEC_PUSH_ARENA(p->a, s->items, s->nitems, cap);
        si->e = e;
        si->line = it->line;
        si->col = it->col;
        si->alias = e->k == A_STAR ? NULL : opt_alias(p);
        if (p->err->code)
            return NULL;
    } while (accept_op(p, ","));
    if (accept_kw(p, "from")) {
        cap = 0;
        do {
            FromItem *f = parse_from_item(p);
            if (!f)
                return NULL;
            *VEC_PUSH_ARENA(p->a, s->from, s->nfrom, cap) = f;
        } while (accept_op(p, ","));
    }
    if (accept_kw(p, "where") && !(s->where = sql__parse_expr(p)))
        return NULL;
    if (is_kw(cur(p), "group")) {
        p->i++;
        if (sql__expect_kw(p, "by"))
            return NULL;
        if (sql__parse_group_by(p, s)) /* parse_gsets.c */
            return NULL;
    }
    if (accept_kw(p, "having") && !(s->having = sql__parse_expr(p)))
        return NULL;
    /* WINDOW and QUALIFY, in either order (DuckDB, Snowflake) */
    for (int k = 0; k < 2; k++) {
        if (!s->windows && accept_kw(p, "window") && parse_window_clause(p, s))
            return NULL;
        if (!s->qualify && is_kw(cur(p), "qualify")) {
            p->i++;
            if (!(s->qualify = sql__parse_expr(p)))
                return NULL;
        }
    }
    if (resolve_windows(p, s, mark))
        return NULL;
    return s;
}

/* A set operation keyword (only INTERSECT when intersect_only) with its
   optional ALL / DISTINCT; false (nothing consumed) when there is none. */
static bool accept_setop(Parser *p, bool intersect_only, SetOp *op)
{
    if (!intersect_only && accept_kw(p, "union"))
        *op = accept_kw(p, "all") ? SET_UNION_ALL : (accept_kw(p, "distinct"), SET_UNION);
    else if (!intersect_only && accept_kw(p, "except"))
        *op = accept_kw(p, "all") ? SET_EXCEPT_ALL : (accept_kw(p, "distinct"), SET_EXCEPT);
    else if (accept_kw(p, "intersect"))
        *op = accept_kw(p, "all") ? SET_INTERSECT_ALL : (accept_kw(p, "distinct"), SET_INTERSECT);
    else
        return false;
    return true;
}

/* core { INTERSECT core }: INTERSECT binds tighter than UNION and EXCEPT.
   Returns the chain (its operands never have chains of their own). */
static Select *parse_intersect_term(Parser *p)
{
    Select *first = parse_select_core(p), *last = first;
    while (last) {
        Token *t = cur(p);
        SetOp op;
        if (!accept_setop(p, true, &op))
            break;
        last->setop = op;
        last->setop_line = t->line;
        last->setop_col = t->col;
        if (!(last->next = parse_select_core(p)))
            return NULL;
        last = last->next;
    }
    return first;
}

/* WITH name [(c, ...)] AS (query), ... (after the keyword). */
static int parse_with(Parser *p, const Token *w, Cte **out, int *nout)
{
    bool rec = accept_kw(p, "recursive");
    int cap = *nout; /* full: the first one grows it */
    do {
        Token *nt = cur(p);
        Cte c = {0};
        c.recursive = rec;
        c.line = nt->line;
        c.col = nt->col;
        if (!(c.name = sql__ident(p, "a name for a WITH query")))
            return p->err->code;
        if (accept_op(p, "(") && sql__parse_names(p, &c.col_aliases, &c.ncol_aliases))
            return p->err->code;
        if (sql__expect_kw(p, "as") || sql__expect_op(p, "("))
            return p->err->code;
        if (!(c.q = sql__parse_query(p)) || sql__expect_op(p, ")"))
            return p->err->code;
        *VEC_PUSH_ARENA(p->a, *out, *nout, cap) = c;
    } while (accept_op(p, ","));
    return 0;
}

static Select *parse_query_in(Parser *p);

Select *sql__parse_query(Parser *p)
{
    if (sql__enter(p))
        return NULL;
    Select *q = parse_query_in(p);
    leave(p);
    return q;
}

static Select *parse_query_in(Parser *p)
{
    Cte *ctes = NULL;
    int nctes = 0;
    Token *w = cur(p);
    if (accept_kw(p, "with") && parse_with(p, w, &ctes, &nctes))
        return NULL;
    Select *first = parse_intersect_term(p), *last = first;
    while (last) {
        SetOp op;
        Token *t = cur(p);
        while (last->next)
            last = last->next;
        if (!accept_setop(p, false, &op))
            break;
        Token *rt = cur(p);
        Select *rhs = parse_intersect_term(p);
        if (!rhs)
            return NULL;
        if (rhs->next) /* a UNION b INTERSECT c = a UNION (b INTERSECT c) */
            rhs = wrap_query(p, rhs, rt);
        last->setop = op;
        last->setop_line = t->line;
        last->setop_col = t->col;
        last->next = rhs;
    }
    if (!first)
        return NULL;
    first->ctes = ctes;
    first->nctes = nctes;
    if (is_kw(cur(p), "order")) {
        int mark = p->nwpend;
        first->order_line = cur(p)->line;
        first->order_col = cur(p)->col;
        p->i++;
        if (sql__expect_kw(p, "by") || sql__parse_order_by(p, &first->order, &first->norder))
            return NULL;
        /* OVER w in the ORDER BY of one SELECT: its WINDOW clause */
        if (resolve_windows(p, first->next ? &(Select){0} : first, mark))
            return NULL;
    }
    if (parse_limit(p, first))
        return NULL;
    /* (q) on its own: q itself, so that its ORDER BY / LIMIT stay the query's */
    if (!first->next && !first->norder && !first->limit && !first->offset && !nctes &&
        is_wrapper(first))
        return first->from[0]->sub;
    return first;
}
