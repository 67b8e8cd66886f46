/*
 * sql/sql_int.h - what the files of the compiler share (private to
 * src/sql/; callers outside use sql.h). The parser has its own internal
 * header (parse_int.h); from its AST (ast.h) on, the files are:
 *
 *   compile.c      the entry (sql.h): statements to relations, properties
 *   plan.c         a query: FROM and WHERE, GROUP BY, select list, ORDER BY
 *   plan_node.c    adding nodes, the Z-set algebra, conjunct helpers
 *   plan_join.c    OUTER, NATURAL and USING joins; FROM column aliases
 *   plan_set.c     UNION / INTERSECT / EXCEPT, WITH, VALUES
 *   plan_rec.c     recursive relations (WITH RECURSIVE, DECLARE RECURSIVE VIEW)
 *   plan_subq.c    subqueries in expressions (decorrelated)
 *   plan_window.c  window functions, LIMIT (top-k)
 *   plan_tvf.c     TUMBLE and HOP in FROM
 *   bind.c         names and types of expressions, operators, casts
 *   bind_fn.c      function calls: aggregates, scalar and date functions
 *   bind_agg.c     STRING_AGG, BIT_*, PERCENTILE_*, MODE, GROUPING
 *   bind_udf.c     SQL functions (CREATE FUNCTION): checked, then inlined
 *   plan_gsets.c   GROUPING SETS / ROLLUP / CUBE
 *
 * Below: scopes of named columns, the planner context P, aggregate
 * collection, then each file's entry points, grouped by the file that
 * defines them.
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
    Expr **ord; /* spec.nord ORDER BY expressions over the FROM scope */
    bool grouping; /* GROUPING(...): no aggregate, a constant per grouping
                      set of the keys gk[0..ngk) (plan_gsets.c) */
    int *gk;
    int ngk;
} AggCall;

typedef struct AggCtx {
    Expr **group; /* bound over the FROM scope */
    int ngroup;
    const SqlType *gtypes; /* non-NULL: the group columns' types above the
                              aggregation (grouping sets: nullable) */
    bool top; /* binding a whole select item (grouping sets: a constant
                 key is a key only there) */
    AggCall *calls;
    int ncalls, cap;
    bool allowed; /* aggregates may appear here */
    struct WinCtx *win; /* window functions may appear here (select list,
                           ORDER BY): plan_window.c */
} AggCtx;

/* A SQL function as the compiler keeps it (bind_udf.c). */
typedef struct UdfInfo {
    Stmt *s;      /* its CREATE FUNCTION */
    int level;    /* bodies within one another its calls inline (1: it calls none) */
    int *calls;   /* the functions it calls, directly or not (indexes) */
    int ncalls;
} UdfInfo;

typedef struct P {
    Arena *a;
    Circuit *c;
    Err *err;
    int cap_nodes, cap_rels; /* capacities of c->nodes, c->rels (base/vec.h) */
    int owner; /* relation being planned (its index once added) */
    int flags; /* CC_* */
    struct CteScope *ctes; /* WITH lists in scope, innermost first (plan_set.c) */
    int unresolved; /* column names resolve_col could not resolve: how
                       plan_subq.c tells a correlated subquery */
    int depth; /* queries being planned within one another (plan.c) */
    int tz; /* session time zone (expr/tz.h id): SET TIME ZONE, 0 = UTC */
    /* SQL functions (bind_udf.c): their statements and levels, parallel
       to c->funcs;
       the program and the statement being compiled (for "declared after"
       messages); the functions the statement calls (indexes, once each);
       calls being inlined within one another now */
    struct UdfInfo *udfs;
    const Program *prog;
    const char *text;
    int stmt;
    int *calls;
    int ncalls, cap_calls;
    int udf_depth;
    int64_t udf_nodes; /* expression nodes the calls have expanded to */
    /* DECLARE RECURSIVE VIEW statements whose CREATE VIEW is still to
       come (plan_rec.c) */
    Stmt **recdecl;
    int nrecdecl, cap_recdecl;
    Stmt **recview; /* recview[i]: the CREATE VIEW of recdecl[i] once seen
                       (planned with the views it recurses with), or NULL */
    int nrecview, cap_recview;
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

/* ---- plan.c ---- */

/* Plan a query (its LIMIT/OFFSET as a top-k), for subqueries and WITH. */
int sql__plan_query(P *p, struct Select *q, PRel *out);
/* Plan a query with its ORDER BY resolved into ord (may be NULL). */
int sql__plan_query_ord(P *p, struct Select *q, PRel *out, OrderOut *ord);
/* One SELECT (or VALUES) block without its set operations; oq and ord (may
   be NULL) ask for oq's ORDER BY resolved against its select list. */
int sql__plan_core(P *p, struct Select *q, PRel *out, struct Select *oq, OrderOut *ord);
/* WHERE conjuncts offered to a FROM item to apply below its joins when
   they refer to its columns only: pushed[i] is set for each one applied. */
typedef struct PushDown {
    Ast **v;
    int n;
    bool *pushed;
} PushDown;
/* One FROM item (a table, a subquery or a join tree; inner joins
   flattened as in a FROM list, their ON conditions applied); cand (may be
   NULL) offers WHERE conjuncts. */
int sql__plan_from_item(P *p, FromItem *f, PRel *out, PushDown *cand);

/* ---- plan_node.c ---- */

CNode *sql__add_node(P *p, OpKind k, int nin, int ncol);
/* A MAP over node in: rows passing filter (may be NULL), then proj. */
int sql__add_map(P *p, int in, Expr *filter, Expr **proj, int nproj);
/* Column references to every column of src, with room for `extra` more. */
Expr **sql__identity_proj(P *p, const CNode *src, int extra);
/* Make key expressions into plain NOT NULL columns of types kt: appends
   computed columns (and filters NULL keys) with a MAP when needed. Returns
   the node to join, the key columns in *cols_out. */
int sql__join_side(P *p, int node, Expr **keys, int nkeys, const SqlType *kt, int **cols_out);
/* The same with null-safe keys where nullsafe[i] (NULL: none): their NULLs
   are kept and match each other (IS NOT DISTINCT FROM). */
int sql__join_side_ns(P *p, int node, Expr **keys, int nkeys, const SqlType *kt,
                      const bool *nullsafe, int **cols_out);
/* A conjunct usable as a join key: 1 for a = b, 2 for the null-safe
   a IS NOT DISTINCT FROM b as the binder builds it (COALESCE(a = b, a IS
   NULL AND b IS NULL)), 0 otherwise; *eq the a = b inside. */
int sql__join_eq(const Expr *e, const Expr **eq);
/* A conjunct over a left row (columns [0, nL)) and a right row ([nL, nL +
   nR)) usable as a join key: sql__join_eq's answer when one side of the
   equality reads only the left row and the other only the right one, 0
   otherwise; *l the left side, *r the right side (columns not remapped). */
int sql__join_key(const Expr *e, int nL, int nR, Expr **l, Expr **r);
/* A one-input node of kind k (NEGATE, DISTINCT) with in's columns. */
int sql__unary(P *p, OpKind k, int in);
/* Sum of inputs in[0..n) (all with the same column types); a + b; a - b. */
int sql__sum(P *p, const int *in, int n);
int sql__sum2(P *p, int a, int b);
int sql__minus(P *p, int a, int b);
/* Columns [first, first + n) of node `in` (typed t[] when t is non-NULL),
   rows passing filter (may be NULL). */
int sql__cols(P *p, int in, Expr *filter, int first, int n, const SqlType *t);
/* A JOIN of l and r on key columns lk[i] = rk[i] (copied; NULL when nk
   is 0: a cross join): l's columns, then r's. */
int sql__join(P *p, int l, int r, const int *lk, const int *rk, int nk);
/* The compiler's last pass: a join's inputs narrowed to the columns read
   after it (plan_prune.c). */
void sql__prune_joins(P *p);
/* first, first + 1, ..., first + n - 1 (arena). */
int *sql__iota(P *p, int n, int first);
/* The rows of a whose value also appears in s (a set with a's column
   types), with a's weights: a joined with s on all columns, null-safe. */
int sql__semi_all(P *p, int a, int s);
/* Does e reference a column at all; only columns in [lo, hi)? */
bool sql__refs_any(const Expr *e);
bool sql__refs_within(const Expr *e, int lo, int hi);
/* Copy of e with every column index >= from moved by delta. */
Expr *sql__remap(P *p, const Expr *e, int from, int delta);
/* Does hit(y) hold for x or an expression below it? (Not looking into
   subqueries nor into a window's PARTITION BY / ORDER BY.) */
bool sql__ast_any(const Ast *x, bool (*hit)(const Ast *));
/* Append x's conjuncts to (*v)[0..*n) (one copy, not one per conjunct). */
void sql__split_and(P *p, Ast *x, Ast ***v, int *n);

/* ---- plan_temporal.c ---- */

/* Does x call NOW() (CURRENT_TIMESTAMP)? */
bool sql__has_now(const Ast *x);
/* from := its rows passing the temporal filter c (a WHERE conjunct with
   NOW()); an error when c is not one. */
int sql__plan_temporal(P *p, PRel *from, Ast *c);
/* compile.c: the source node of the clock table `now` (added on first
   use), or -1 with an error at `at`. */
int sql__clock_node(P *p, const Ast *at);

/* ---- plan_join.c ---- */

/* A join planned as a unit: OUTER, NATURAL, USING, or a parenthesised
   join with an alias. */
int sql__plan_join_unit(P *p, FromItem *f, PRel *out, PushDown *cand);
/* [LEFT] ASOF JOIN (plan_asof.c; f->alias is the caller's). */
int sql__plan_asof(P *p, FromItem *f, PRel *out);
/* Is a common table expression of that name in scope? (plan_set.c) */
bool sql__cte_visible(P *p, const char *name);
/* FROM item `AS alias (c1, ...)`: rename r's first columns. */
int sql__apply_col_aliases(P *p, const FromItem *f, PRel *r);

/* ---- plan_set.c ---- */

/* q's set operations: combine out (q planned) with q->next, ... */
int sql__plan_setops(P *p, struct Select *q, PRel *out);
/* f names a common table expression in scope: plan it (once) and set
   *out, *found = true; else *found = false. */
int sql__plan_cte_ref(P *p, FromItem *f, PRel *out, bool *found);
/* Is q's WITH list already in scope (sql__plan_with has pushed it)? */
bool sql__ctes_active(const P *p, const struct Select *q);
/* Bring q's WITH list into scope and plan q (sql__plan_query_ord). */
int sql__plan_with(P *p, struct Select *q, PRel *out, OrderOut *ord);
/* VALUES (...), ...: a constant relation. */
int sql__plan_values(P *p, struct Select *q, PRel *out);
/* Plan q (its ORDER BY into ord, may be NULL) with names[i] in FROM
   standing for the planned relation bound[i], i < n (recursive views'
   ports). */
int sql__plan_bound_n(P *p, const char *const *names, const PRel *bound, int n,
                      struct Select *q, PRel *out, OrderOut *ord);
/* Common table expressions in scope planned at nodes >= lo are planned
   again when next referenced (those nodes moved into a fixed point). */
void sql__ctes_forget(P *p, int lo);

/* ---- plan_rec.c ---- */

/* A recursive relation's port: a node without inputs (for now an empty
   relation) of types t[0..n) that stands for the relation's changes. */
int sql__rec_port(P *p, const char *name, int n, const SqlType *t);
/* One recursive relation of a fixed point: its port, its definition's
   output node, the end of the nodes planned for it (those from the
   previous one's end on, for messages) and its name and position. */
typedef struct RecDef {
    int port, out, hi;
    const char *name;
    int line, col;
} RecDef;
/* The nodes [lo, nnodes) (the definitions Q_i, reading the ports and
   earlier nodes) moved into one OPK_FIXPOINT node computing R_i =
   Q_i(R_0..R_{n-1}): its id, or -1 with p->err set (a Q_i not monotone
   in them: line, col of the relation whose nodes it is). With n 1 and no
   path from the port to out: out itself. */
int sql__rec_fixpoint(P *p, int lo, const RecDef *defs, int n);
/* Does the query of CREATE VIEW v read a relation named name (anywhere,
   subqueries and WITH queries included)? */
bool sql__rec_reads(const Stmt *v, const char *name);
/* CREATE VIEW views[i] of the views declared by decls[i], i < n, which
   read one another: planned as one fixed point, outs[i] each view's
   relation (columns named and typed as declared). The nodes after the
   fixed point (one map per view, n > 1) are owned by relations
   p->c->nrels + i: the caller adds the views in this order. */
int sql__plan_rec_views(P *p, Stmt **decls, Stmt **views, int n, PRel *outs);
/* The pending DECLARE RECURSIVE VIEW of this name, or NULL. */
Stmt *sql__rec_declared(const P *p, const char *name);

/* ---- plan_subq.c ---- */

bool sql__has_subquery(const Ast *x);
/* Add a column to r for every subquery expression in exprs[0..n) (not
   inside nested subqueries), setting their Ast.subcol. */
int sql__plan_subqueries(P *p, PRel *r, Ast **exprs, int n);

/* ---- plan_window.c ---- */

/* Window functions and top-k. A WinCtx collects the window
   functions of one select list: binding one returns a placeholder column
   that sql__plan_windows resolves once the windows are planned. */
typedef struct WinCtx WinCtx;
WinCtx *sql__win_new(P *p);
/* Window function x (x->over set): its placeholder column. */
Expr *sql__bind_window(P *p, BindCtx *bc, Ast *x);
/* Window function x (x->over set): does an aggregate call appear in its
   arguments, PARTITION BY or ORDER BY (SUM(SUM(b)) OVER ...)? */
bool sql__window_has_agg(const Ast *x);
/* Does an aggregate call appear in x (in a window function: as above)? */
bool sql__has_agg(const Ast *x);
/* Plan w's windows over `node` (rows passing filter first) and point the
   placeholders in proj[0..nproj) at their columns. Returns the new node,
   or -1 with p->err set. Without window functions: returns node. */
int sql__plan_windows(P *p, WinCtx *w, int node, Expr **filter, Expr **proj, int nproj);
/* ORDER BY ... LIMIT/OFFSET of a view's query q (ord resolved): a top-k
   node over q->node; hidden ORDER BY columns are dropped unless present
   (CC_PRESENT: the reader sorts and applies limit and offset itself).
   ties: FETCH ... WITH TIES (RANK_TIES). */
int sql__plan_topk(P *p, PRel *q, const OrderOut *ord, int64_t limit, int64_t offset,
                   bool ties, bool present);
/* A subquery with LIMIT/OFFSET: plan it, then its top-k. */
int sql__plan_limited(P *p, struct Select *q, PRel *out);
/* Top-k per group: windows of nodes [first, nnodes) whose only function is
   ROW_NUMBER/RANK/DENSE_RANK and whose rank is filtered by rank <= k
   become top-k nodes. */
void sql__topk_rewrite(P *p, int first);

/* ---- plan_tvf.c ---- */

/* TABLE(TUMBLE(...)) / TABLE(HOP(...)) in FROM. */
int sql__plan_tvf(P *p, FromItem *f, PRel *out);

/* ---- bind.c ---- */

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
/* The call fn(args[0..n)) of type t (E_FUNC). */
Expr *sql__mk_fn(P *p, int fn, SqlType t, int n, Expr **args);
bool sql__expr_equal(const Expr *a, const Expr *b);
/* l op r for an arithmetic AstOp (numbers, dates, times and intervals). */
Expr *sql__arith(P *p, Ast *x, int op, Expr *l, Expr *r);

/* ---- bind_udf.c ---- */

/* CREATE FUNCTION s: checked (name, parameters, body, result type) and
   added to p->c->funcs; 0 or the error code. */
int sql__define_function(P *p, Stmt *s);
/* The SQL function called name, or -1. */
int sql__udf_find(const P *p, const char *name);
/* A call x of SQL function u: its body inlined over the bound arguments,
   cast to the result type. */
Expr *sql__bind_udf_call(P *p, BindCtx *bc, Ast *x, int u);
/* x calls a function that is not (yet) declared but is declared later in
   the program, or is the function being declared: p->err set, true. */
bool sql__udf_not_yet(P *p, const Ast *x);

/* ---- bind_fn.c ---- */

/* Is name (lower case) a function, aggregate or window function of the
   dialect (a SQL function may not take its name)? */
bool sql__is_builtin_fn(const char *name);

/* A function call x (A_FUNC): an aggregate (collected on bc->agg), a
   window function (plan_window.c) or a scalar function. */
Expr *sql__bind_func(P *p, BindCtx *bc, Ast *x);
/* bind_regex.c: whether name is a regex function (or SPLIT_PART), and the
   call x of one over its bound arguments args[0..n). */
bool sql__is_regex_fn(const char *name);
Expr *sql__bind_regex(P *p, Ast *x, Expr **args, int n);
/* bind_array.c: whether name is an array function (also the parser's
   "array[]" constructor, "[]" subscript and "any[]" quantified
   comparison), the call x of one, and l || r with an ARRAY operand. */
bool sql__is_array_fn(const char *name);
Expr *sql__bind_array_fn(P *p, BindCtx *bc, Ast *x);
Expr *sql__bind_array_concat(P *p, Ast *x, Expr *l, Expr *r);
/* bind_nested.c: whether name is a ROW/MAP construct (the parser's "row",
   "." field access and "map[]" calls, MAP functions), the call x of one,
   m[k] / CARDINALITY(m) / ... over bound args with args[0] a MAP, and
   col.f for an A_COL x whose qualifier names no relation but a ROW column
   (true when it did: *out the field, or NULL on an error). */
bool sql__is_nested_fn(const char *name);
Expr *sql__bind_nested_fn(P *p, BindCtx *bc, Ast *x);
Expr *sql__bind_map_op(P *p, Ast *x, const char *name, Expr **args, int n);
bool sql__bind_col_field(P *p, BindCtx *bc, Ast *x, Expr **out);
/* r IS [NOT] NULL for a ROW r, as PostgreSQL: IS NULL when r is NULL or
   every field is NULL, IS NOT NULL when r is not NULL and no field is
   (a nested struct field counts only when it is NULL itself). */
Expr *sql__row_null_test(P *p, Expr *r, bool negated);
/* Two ROW (or two MAP) types a value of either converts to: the same
   number of fields, each with a common type (a named type wins over an
   anonymous one, else a's); false when none. */
bool sql__nested_common(SqlType a, SqlType b, SqlType *out);
/* bind_variant.c: whether name is a VARIANT function (also the parser's
   "->" and "->>"), the call x of one, and member or element k of VARIANT v
   (mode as FN_VARIANT_GET's: 1 for the subscript v[k]). */
bool sql__is_variant_fn(const char *name);
Expr *sql__bind_variant_fn(P *p, BindCtx *bc, Ast *x);
Expr *sql__bind_variant_get(P *p, Ast *x, Expr *v, Expr *k, int mode);
/* 1 for JSON[B]_AGG, 2 for JSON[B]_OBJECT_AGG, else 0. */
int sql__json_agg_name(const char *n);
/* The VARIANT object {k: v} (k as text, v as a VARIANT, SQL NULL as JSON
   null); NULL when k is NULL (JSON_OBJECT_AGG's entries). */
Expr *sql__json_member(P *p, Expr *k, Expr *v);
/* l || r where either is a VARIANT (the other cast to one). */
Expr *sql__bind_variant_concat(P *p, Ast *x, Expr *l, Expr *r);
/* An aggregate call x: its column in the aggregation's output. */
Expr *sql__bind_agg_call(P *p, BindCtx *bc, Ast *x);
bool sql__is_agg_name(const char *n);
/* BOOL_AND/EVERY (1: MIN over BOOLEAN), BOOL_OR (2: MAX), else 0; their
   argument checked (a BOOLEAN, or NULL cast to one). */
int sql__bool_agg(const char *n);
Expr *sql__bool_agg_arg(P *p, struct Ast *x, Expr *a);
/* STRING_AGG, BIT_*, PERCENTILE_*, MODE, GROUPING (bind_agg.c). */
bool sql__set_agg_name(const char *n);
/* The number of arguments of aggregate n when bind_agg.c binds it as a
   statistical or alias aggregate (STDDEV, CORR, ARG_MIN, MEDIAN, ...), else 0. */
int sql__stat_agg_name(const char *n);
Expr *sql__bind_set_agg(P *p, BindCtx *bc, Ast *x);
/* GROUP BY with grouping sets (q->ngsets, or GROUPING calls): in, the map
   of [group keys..., aggregate arguments...], becomes the union of one
   aggregate per set laid out as [keys..., calls...] (plan_gsets.c); the
   node, or -1 with p->err. */
/* With grouping sets: ag's group keys made distinct (identical ones are
   one key; AggCtx.gtypes set), returning each original key's index. */
int *sql__gsets_keys(P *p, AggCtx *ag);
int sql__plan_gsets(P *p, const struct Select *q, const AggCtx *ag, const int *keyof,
                    const AggSpec *specs, int in);
/* An aggregate not implemented yet (array_agg, ...): p->err set, true. */
bool sql__agg_later(P *p, struct Ast *x);

#endif
