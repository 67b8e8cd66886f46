/*
 * sql/sql_int.h - what the binder (bind.c) and the planner (plan.c) share:
 * scopes of named columns, the planner context, aggregate collection, and
 * the binder's entry points. Private to src/sql/.
 */
#ifndef SL_SQL_SQL_INT_H
#define SL_SQL_SQL_INT_H

#include <stdarg.h>
#include <stdio.h>

#include "../circuit/circuit.h"
#include "ast.h"

typedef struct SCol {
    const char *qual; /* relation name or alias (may be NULL) */
    const char *name;
    SqlType t;
    bool hidden; /* planner-made (subquery values): not in *, not by name */
} SCol;

typedef struct Scope {
    SCol *c;
    int n;
} Scope;

typedef struct PRel { /* a planned relation: node + its columns' names */
    int node;
    Scope s;
} PRel;

typedef struct AggCall {
    Ast *ast;
    AggSpec spec;
    Expr *arg; /* over the FROM scope; NULL for COUNT(*) */
} AggCall;

typedef struct AggCtx {
    Expr **group; /* bound over the FROM scope */
    int ngroup;
    AggCall *calls;
    int ncalls, cap;
    bool allowed; /* aggregates may appear here */
} AggCtx;

typedef struct P {
    Arena *a;
    Circuit *c;
    Err *err;
    int cap_nodes, cap_rels;
    int owner; /* relation being planned (its index once added) */
    int flags; /* CC_* */
} P;

/* ORDER BY of a query resolved to output columns (plan.c). */
typedef struct OrderOut {
    int n;
    int *col;
    bool *desc, *nulls_first;
    int nhidden; /* columns appended after the select list for ORDER BY */
} OrderOut;

static inline __attribute__((format(printf, 5, 6))) int perr(P *p, int code, int line, int col, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_setpos(p->err, code, line, col, "%s", msg);
}

static inline const char *tname(SqlType t)
{
    static __thread char b[4][48];
    static __thread int i;
    i = (i + 1) % 4;
    return type_name(t, b[i], sizeof(b[i]));
}

typedef struct BindCtx {
    Scope *s;
    AggCtx *agg; /* non-NULL: binding above an aggregation */
    const char *clause; /* "WHERE", "GROUP BY", ... for messages */
} BindCtx;

/* Subqueries in expressions (plan_subq.c). */
bool sql__has_subquery(const Ast *x);
/* Add a column to r for every subquery expression in exprs[0..n) (not
   inside nested subqueries), setting their Ast.subcol. */
int sql__plan_subqueries(P *p, PRel *r, Ast **exprs, int n);
/* plan.c's query planner, for subqueries. */
int sql__plan_query(P *p, struct Select *q, PRel *out);
int sql__add_map(P *p, int in, Expr *filter, Expr **proj, int nproj);
CNode *sql__add_node(P *p, OpKind k, int nin, int ncol);
int sql__join_side(P *p, int node, Expr **keys, int nkeys, const SqlType *kt, int **cols_out);

/* Binder (bind.c). */
Expr *sql__bind(P *p, BindCtx *bc, Ast *x);
Expr *sql__cast_to(P *p, Expr *e, SqlType t);
bool sql__common_type(SqlType a, SqlType b, SqlType *out);
bool sql__same_repr(SqlType a, SqlType b);
Expr *sql__compare(P *p, Ast *at, ExprKind k, Expr *l, Expr *r);
Expr *sql__nary_bool(P *p, ExprKind k, Expr *l, Expr *r);
Expr *sql__bool_operand(P *p, Expr *e, Ast *at, const char *what);
Expr *sql__mk(P *p, ExprKind k, SqlType t, int na);
bool sql__is_agg_name(const char *n);
bool sql__expr_equal(const Expr *a, const Expr *b);

#endif
