/*
 * sql/sql_int.h - what the binder (bind.c) and the planner (plan.c) share:
 * scopes of named columns, the planner context, aggregate collection, and
 * the binder's entry points. Private to src/sql/.
 */
#ifndef SL_SQL_SQL_INT_H
#define SL_SQL_SQL_INT_H

#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "ast.h"
#include "sql.h"

typedef struct SCol {
    const char *qual; /* relation name or alias (may be NULL) */
    const char *name;
    SqlType t;
    bool hidden; /* planner-made (subquery values): not in *, not by name */
    bool qual_only; /* an input column of a USING/NATURAL join: only as
                       qual.name and in qual.*, not by its bare name nor in * */
    bool outer;  /* a correlated subquery's outer column: names resolve to
                    it only when no column of the subquery's own FROM matches */
} SCol;

/* Does `SELECT *` (qual NULL) or `SELECT qual.*` include column c? */
static inline bool sql__star_includes(const SCol *c, const char *qual)
{
    if (c->hidden || c->outer)
        return false;
    if (!qual)
        return !c->qual_only;
    return c->qual && strcasecmp(c->qual, qual) == 0;
}

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
    struct WinCtx *win; /* window functions may appear here (select list,
                           ORDER BY): plan_window.c */
} AggCtx;

typedef struct P {
    Arena *a;
    Circuit *c;
    Err *err;
    int cap_nodes, cap_rels;
    int owner; /* relation being planned (its index once added) */
    int flags; /* CC_* */
    struct CteScope *ctes; /* WITH lists in scope, innermost first (plan_join.c) */
    int unresolved; /* column names resolve_col could not resolve: how
                       plan_subq.c tells a correlated subquery */
    int depth; /* queries being planned within one another (plan.c) */
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

/* Window functions and top-k (plan_window.c). A WinCtx collects the window
   functions of one select list: binding one returns a placeholder column
   that sql__plan_windows resolves once the windows are planned. */
typedef struct WinCtx WinCtx;
WinCtx *sql__win_new(P *p);
/* Window function x (x->over set): its placeholder column. */
Expr *sql__bind_window(P *p, BindCtx *bc, Ast *x);
/* Window function x (x->over set): does an aggregate call appear in its
   arguments, PARTITION BY or ORDER BY (SUM(SUM(b)) OVER ...)? */
bool sql__window_has_agg(const Ast *x);
/* Plan w's windows over `node` (rows passing filter first) and point the
   placeholders in proj[0..nproj) at their columns. Returns the new node,
   or -1 with p->err set. Without window functions: returns node. */
int sql__plan_windows(P *p, WinCtx *w, int node, Expr **filter, Expr **proj, int nproj);
/* ORDER BY ... LIMIT/OFFSET of a view's query q (ord resolved): a top-k
   node over q->node; hidden ORDER BY columns are dropped unless present
   (CC_PRESENT: the reader sorts and applies limit and offset itself). */
int sql__plan_topk(P *p, PRel *q, const OrderOut *ord, int64_t limit, int64_t offset,
                   bool present);
/* A subquery with LIMIT/OFFSET: plan it, then its top-k. */
int sql__plan_limited(P *p, struct Select *q, PRel *out);
/* Top-k per group: windows of nodes [first, nnodes) whose only function is
   ROW_NUMBER/RANK/DENSE_RANK and whose rank is filtered by rank <= k
   become top-k nodes. */
void sql__topk_rewrite(P *p, int first);

/* Subqueries in expressions (plan_subq.c). */
bool sql__has_subquery(const Ast *x);
/* Add a column to r for every subquery expression in exprs[0..n) (not
   inside nested subqueries), setting their Ast.subcol. */
int sql__plan_subqueries(P *p, PRel *r, Ast **exprs, int n);
/* plan.c's query planner, for subqueries. */
int sql__plan_query(P *p, struct Select *q, PRel *out);
int sql__add_map(P *p, int in, Expr *filter, Expr **proj, int nproj);
CNode *sql__add_node(P *p, OpKind k, int nin, int ncol);
/* Column references to every column of src, with room for `extra` more. */
Expr **sql__identity_proj(P *p, const CNode *src, int extra);
int sql__join_side(P *p, int node, Expr **keys, int nkeys, const SqlType *kt, int **cols_out);
/* plan.c: plan_query with its ORDER BY resolved (ord may be NULL). */
int sql__plan_query_ord(P *p, struct Select *q, PRel *out, OrderOut *ord);
/* WHERE conjuncts offered to a FROM item to apply below its joins when
   they refer to its columns only: pushed[i] is set for each one applied. */
typedef struct PushDown {
    Ast **v;
    int n;
    bool *pushed;
} PushDown;
/* plan.c: one FROM item (a table, a subquery or a join tree; inner joins
   flattened as in a FROM list, their ON conditions applied); cand (may be
   NULL) offers WHERE conjuncts. */
int sql__plan_from_item(P *p, FromItem *f, PRel *out, PushDown *cand);

/* Joins, set operations, WITH and VALUES (plan_join.c). */
/* A join planned as a unit: OUTER, NATURAL, USING, or a parenthesised
   join with an alias. */
int sql__plan_join_unit(P *p, FromItem *f, PRel *out, PushDown *cand);
/* f names a common table expression in scope: plan it (once) and set
   *out, *found = true; else *found = false. */
int sql__plan_cte_ref(P *p, FromItem *f, PRel *out, bool *found);
/* Is q's WITH list already in scope (sql__plan_with has pushed it)? */
bool sql__ctes_active(const P *p, const struct Select *q);
/* Bring q's WITH list into scope and plan q (sql__plan_query_ord). */
int sql__plan_with(P *p, struct Select *q, PRel *out, OrderOut *ord);
/* VALUES (...), ...: a constant relation. */
int sql__plan_values(P *p, struct Select *q, PRel *out);
/* Combine a and b (both with ncol columns of types t) by op into *node. */
int sql__plan_setop(P *p, SetOp op, int a, int b, int ncol, const SqlType *t, int *node);
const char *sql__setop_name(SetOp op);
/* TABLE(TUMBLE(...)) / TABLE(HOP(...)) in FROM (plan_tvf.c). */
int sql__plan_tvf(P *p, FromItem *f, PRel *out);
/* FROM item `AS alias (c1, ...)`: rename r's first columns. */
int sql__apply_col_aliases(P *p, const FromItem *f, PRel *r);

/* Binder (bind.c). */
Expr *sql__bind(P *p, BindCtx *bc, Ast *x);
Expr *sql__cast_to(P *p, Expr *e, SqlType t);
bool sql__common_type(SqlType a, SqlType b, SqlType *out);
bool sql__same_repr(SqlType a, SqlType b);
Expr *sql__compare(P *p, Ast *at, ExprKind k, Expr *l, Expr *r);
Expr *sql__nary_bool(P *p, ExprKind k, Expr *l, Expr *r);
/* v[0] AND ... AND v[n-1] as one n-ary node (nested ANDs flattened), in
   time linear in the operands; v[0] itself when n is 1, NULL when 0. */
Expr *sql__and_all(P *p, Expr *const *v, int n);
Expr *sql__bool_operand(P *p, Expr *e, Ast *at, const char *what);
Expr *sql__mk(P *p, ExprKind k, SqlType t, int na);
bool sql__is_agg_name(const char *n);
bool sql__expr_equal(const Expr *a, const Expr *b);

#endif
