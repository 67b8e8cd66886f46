/*
 * sql/parse_int.h - what the files of the recursive-descent parser share
 * (private to them; the rest of the compiler sees the AST, ast.h):
 *
 *   parse.c        the token cursor, keywords, errors, nesting bounds,
 *                  AST nodes and lists
 *   parse_expr.c   expressions, function calls, OVER (...) windows
 *   parse_query.c  queries: SELECT, FROM and joins, set operations,
 *                  WITH, VALUES, ORDER BY, LIMIT
 *   parse_gsets.c  GROUP BY: ROLLUP, CUBE, GROUPING SETS
 *   parse_ddl.c    the program (sql_parse): CREATE TABLE / VIEW / FUNCTION, types,
 *                  WITH properties
 *
 * Every parse function reads tokens from p->t at p->i (lexer.c), builds
 * nodes in p->a and, on an error, sets p->err (line, column, what was
 * expected) and returns NULL or the error code.
 */
#ifndef SL_SQL_PARSE_INT_H
#define SL_SQL_PARSE_INT_H

#include <string.h>
#include <strings.h>

#include "ast.h"
#include "lexer.h"

typedef struct Parser {
    Token *t;
    int n, i;
    Arena *a;
    Err *err;
    int depth; /* nesting now (SQL_MAX_NESTING) */
    int nfrom; /* relations in the FROM clause being parsed (SQL_MAX_FROM) */
    int tz;    /* session time zone (expr/tz.h id): SET TIME ZONE */
    struct UserType *utypes; /* CREATE TYPE name AS (...): parse_nested.c */
    int nutypes, cutypes;
    struct WinDef **wpend; /* OVER w / OVER (w ...) not resolved yet (parse_query.c) */
    int nwpend, capwpend;
} Parser;

/* parse_nested.c: the ROW and MAP types (ROW(f T, ...), MAP<K, V>, a
   CREATE TYPE name) at the type name s just consumed: 1 when s is one of
   them (*out set), 0 when not, -1 on an error. */
int sql__parse_nested_type(Parser *p, const char *s, SqlType *out);
/* CREATE TYPE name AS (field type, ...), after CREATE TYPE. */
int sql__parse_create_type(Parser *p);

static inline Token *cur(Parser *p) { return &p->t[p->i]; }

static inline bool is_kw(const Token *t, const char *kw)
{
    return t->k == T_IDENT && strcasecmp(t->s, kw) == 0;
}

static inline bool is_op(const Token *t, const char *op)
{
    return t->k == T_OP && strcmp(t->s, op) == 0;
}

/* Consume the current token when it is keyword kw / operator op. */
static inline bool accept_kw(Parser *p, const char *kw)
{
    if (is_kw(cur(p), kw)) {
        p->i++;
        return true;
    }
    return false;
}

static inline bool accept_op(Parser *p, const char *op)
{
    if (is_op(cur(p), op)) {
        p->i++;
        return true;
    }
    return false;
}

/* ---- parse_gsets.c ---- */

/* The list after GROUP BY into s->group (and s->gsets when it has
   ROLLUP, CUBE, GROUPING SETS or ()); 0 or the error code. */
int sql__parse_group_by(Parser *p, struct Select *s);

/* ---- parse.c ---- */

/* A word that cannot be an implicit alias or a bare column name? */
bool sql__is_reserved(const Token *t);
/* SL_EPARSE "expected <expected>, found <the current token>". */
int sql__fail(Parser *p, const char *expected);
/* SL_EUNSUPPORTED "<what> is not supported yet" at t. */
int sql__unsupported(Parser *p, const Token *t, const char *what);
/* Consume keyword kw / operator op, or fail naming it. */
int sql__expect_kw(Parser *p, const char *kw);
int sql__expect_op(Parser *p, const char *op);
/* An identifier (bare ones fold to lower case, quoted ones keep their
   case), or NULL after failing with "expected <what>". */
char *sql__ident(Parser *p, const char *what);
/* name, name, ... ")": identifiers ("a column name") appended to
   (*out)[0..*n), then the closing parenthesis. */
int sql__parse_names(Parser *p, char ***out, int *n);
/* Enter one level of nesting at the current token: 0, or SL_EPARSE past
   SQL_MAX_NESTING. Every successful sql__enter() is paired with a
   leave(). */
int sql__enter(Parser *p);
static inline void leave(Parser *p) { p->depth--; }
/* x, or NULL with an error at token t when x is higher than
   SQL_MAX_HEIGHT. */
Ast *sql__check_height(Parser *p, const Token *t, Ast *x);
/* A zeroed node of kind k at token at's position. */
Ast *sql__new_ast(Parser *p, AstKind k, const Token *at);
void sql__list_push(Parser *p, AstList *l, Ast *x);

/* ---- parse_expr.c ---- */

Ast *sql__parse_expr(Parser *p);
/* expr, expr, ...: appended to l. */
int sql__parse_exprs(Parser *p, AstList *l);
/* expr [ASC | DESC] [NULLS FIRST | LAST], ...: ORDER BY items appended to
   (*out)[0..*n) (a query's ORDER BY and a window's). */
int sql__parse_order_by(Parser *p, OrderItem **out, int *n);
/* ( [name] [PARTITION BY ...] [ORDER BY ...] [frame] ) of a window after
   token at (OVER, or the name of WINDOW name AS); a name is left in ->ref,
   pending in p->wpend until parse_query.c resolves it. */
struct WinDef *sql__parse_window_spec(Parser *p, const Token *at);

/* ---- parse_query.c ---- */

Select *sql__parse_query(Parser *p);

/* ---- parse_ddl.c ---- */

int sql__parse_type(Parser *p, SqlType *out);

#endif
