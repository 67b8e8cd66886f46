/*
 * circuit/circuit.h - the compiled form of a program: relations (tables and
 * views) and a DAG of operator descriptions that every worker instantiates.
 *
 * Built by the SQL compiler (sql/) from the AST; read-only afterwards (PostgreSQL's
 * plan/state split): per-worker mutable state lives in runtime/ op
 * instances. Node ids are their index; a node's inputs have smaller ids,
 * so index order is a topological order.
 *
 * Every stream carries, each step, a Z-set of changes with the node's
 * column types. Delta rules per operator are in the op_*.c headers.
 */
#ifndef SL_CIRCUIT_CIRCUIT_H
#define SL_CIRCUIT_CIRCUIT_H

#include <cJSON.h>

#include "../base/arena.h"
#include "../base/buf.h"
#include "../base/err.h"
#include "../expr/expr.h"

typedef enum OpKind {
    OPK_SOURCE,   /* changes of table `rel`, fed by the controller */
    OPK_MAP,      /* filter (optional) then projection: linear */
    OPK_UNION,    /* sum of the inputs (same types): linear */
    OPK_NEGATE,   /* weights negated: linear */
    OPK_AGG,      /* GROUP BY input cols [0, ngroup), aggregates: non-linear */
    OPK_JOIN,     /* equi-join on key columns: bilinear */
    OPK_DISTINCT, /* set semantics: non-linear */
    OPK_SINK,     /* end of relation `rel`: materialization and outputs */
    OPK_UPSERT,   /* PRIMARY KEY table: an insert replaces the row with its key */
    OPK_CONST,    /* one row without columns, in the first step only (SELECT
                     without FROM, VALUES): its consumers compute the values */
    OPK_TOPK,     /* per partition, the rows ranked (offset, offset+limit] in
                     the window order (+ a rank column): non-linear */
    OPK_WINDOW,   /* window functions per partition: input columns, then one
                     column per function: non-linear */
    OPK_FINAL,    /* 'emit_final' (watermark.c): holds its input's changes
                     until the watermark of column final_col passes them,
                     then emits them once: non-linear */
    OPK_ASOF,     /* ASOF join (op_asof.c) over one input, the union of both
                     sides: per left row, its closest right row: non-linear */
    OPK_TEMPORAL, /* temporal filter (op_temporal.c): rows whose column
                     tcol is within a bound that moves with the clock
                     (NOW()): non-linear in time, linear in the input */
    OPK_FIXPOINT, /* a recursive relation: the least fixed point of the
                     inner circuit `sub` (op_fixpoint.c): non-linear */
    OPK_UNNEST,   /* per input row, one row per element of its ARRAY column
                     unnest_col (none for NULL or {}; one of NULLs with
                     unnest_outer): the input columns, the element, then
                     with ordinality its 1-based position (BIGINT), the
                     row's weight each; with unnest_outer and a filter
                     (LEFT JOIN UNNEST ... ON cond), only the rows where
                     the filter is TRUE, one of NULLs when none is: linear */
} OpKind;

/* OPK_TOPK: which rank bounds the kept rows and is appended as a column. */
typedef enum RankKind {
    RANK_NONE,       /* positions (like ROW_NUMBER), no column */
    RANK_ROW_NUMBER, /* 1, 2, 3, ... (ties broken by the row encoding) */
    RANK_RANK,       /* 1 + rows ordered strictly before */
    RANK_DENSE,      /* 1 + distinct order keys strictly before */
    RANK_TIES,       /* FETCH ... WITH TIES: positions from offset, while the
                        rank (as RANK_RANK) is at most offset + limit; no column */
} RankKind;

typedef enum WinKind {
    WIN_ROW_NUMBER, WIN_RANK, WIN_DENSE_RANK, WIN_LAG, WIN_LEAD,
    WIN_COUNT_STAR, WIN_COUNT, WIN_SUM, WIN_AVG, WIN_MIN, WIN_MAX,
    /* over the frame too: the argument of its first/last/offset-th row */
    WIN_FIRST_VALUE, WIN_LAST_VALUE, WIN_NTH_VALUE,
    /* of the position and the partition's size: NTILE(offset) buckets,
       (rank - 1) / (n - 1), (rows up to the last peer) / n */
    WIN_NTILE, WIN_PERCENT_RANK, WIN_CUME_DIST,
} WinKind;

/* Does kind k read a frame (ROWS/RANGE/GROUPS bounds)? */
static inline bool win_framed(WinKind k)
{
    return k >= WIN_COUNT_STAR && k <= WIN_NTH_VALUE;
}

typedef enum FrameBound {
    FB_UNBOUNDED_PRECEDING, FB_PRECEDING, FB_CURRENT_ROW, FB_FOLLOWING, FB_UNBOUNDED_FOLLOWING,
} FrameBound;

/* EXCLUDE of a frame: nothing, the current row, its peers (with it), its
   peers but not itself. */
typedef enum FrameExclude {
    FX_NO_OTHERS, FX_CURRENT_ROW, FX_GROUP, FX_TIES,
} FrameExclude;

/* One window function of an OPK_WINDOW node (op_window.c). */
typedef struct WinFunc {
    WinKind kind;
    int col;          /* argument column, or -1 */
    int def_col;      /* LAG/LEAD default column, or -1 (NULL) */
    int64_t offset;   /* LAG/LEAD offset, NTH_VALUE's n, NTILE's buckets */
    SqlType in_t, out_t;
    bool rows;        /* ROWS frame, else RANGE or GROUPS (aggregates only) */
    bool groups;      /* GROUPS frame (rows false): bounds count peer groups */
    FrameBound start, end;
    int64_t start_n, end_n; /* N of N PRECEDING/FOLLOWING: rows, peer groups, or
                               (RANGE) the order key's representation (scaled
                               DECIMAL), or calendar months (below) */
    double start_f, end_f;  /* RANGE over a REAL/DOUBLE key */
    bool start_months, end_months; /* RANGE over a DATE/TIMESTAMP key: N is months */
    FrameExclude exclude;   /* EXCLUDE of the frame */
    bool distinct;          /* COUNT/SUM/AVG(DISTINCT x): over the frame's
                               distinct non-NULL values */
    bool ignore_nulls;      /* FIRST_VALUE/LAST_VALUE/NTH_VALUE: of the non-NULL
                               values; LAG/LEAD: counting only non-NULL rows */
} WinFunc;

/* After AGG_MAX: the aggregates over a group's value multiset kept in
   agg_state.c (never linear). */
typedef enum AggKind {
    AGG_COUNT_STAR, AGG_COUNT, AGG_SUM, AGG_AVG, AGG_MIN, AGG_MAX,
    AGG_STRING_AGG, /* STRING_AGG(x, sep [ORDER BY ...]) */
    AGG_BIT_AND, AGG_BIT_OR, AGG_BIT_XOR,
    AGG_PCT_CONT,   /* PERCENTILE_CONT(frac) WITHIN GROUP (ORDER BY x): col = x */
    AGG_PCT_DISC,   /* PERCENTILE_DISC(frac) WITHIN GROUP (ORDER BY x) */
    AGG_MODE,       /* MODE() WITHIN GROUP (ORDER BY x) */
    AGG_VAR_SAMP, AGG_VAR_POP, AGG_STDDEV_SAMP, AGG_STDDEV_POP, /* of col */
    /* two arguments (y, x): col = y, ord[0] = x (both DOUBLE) */
    AGG_COVAR_POP, AGG_COVAR_SAMP, AGG_CORR,
    AGG_ARG_MIN,    /* ARG_MIN(x, key): col = x, ord[0] = key */
    AGG_ARG_MAX,    /* ARG_MAX(x, key): col = x, ord[0] = key DESC */
    AGG_ARRAY_AGG,  /* ARRAY_AGG(x [ORDER BY ...]): NULL values kept */
    AGG_JSON_AGG,   /* JSON_AGG(x [ORDER BY ...]): col = x as a VARIANT, NULL
                       values kept (as JSON null) */
    AGG_JSON_OBJECT_AGG, /* JSON_OBJECT_AGG(k, v [ORDER BY ...]): col = the
                       one-member object {k: v} (NULL when k is NULL) */
} AggKind;

typedef struct AggSpec {
    AggKind kind;
    int col;      /* input column of the argument (unused for COUNT(*)) */
    SqlType in_t; /* argument type */
    SqlType out_t;
    bool distinct; /* COUNT/SUM/AVG/STRING_AGG/BIT_XOR(DISTINCT x): over the
                      set of values */
    /* multiset aggregates: the values' order, by input columns ord[0..nord)
       (NULL the smallest value unless ord_nulls_first says otherwise),
       then by the value */
    int nord;
    int *ord;
    bool *ord_desc, *ord_nulls_first;
    const char *sep; /* STRING_AGG: the separator (a constant) */
    uint32_t seplen;
    double frac;     /* PERCENTILE_CONT/DISC: the fraction, 0..1 */
} AggSpec;

typedef struct CNode {
    int id;
    OpKind k;
    int *in;
    int nin;
    int ncol; /* output columns */
    SqlType *types;
    const char *label; /* for EXPLAIN: view name, etc. */
    int owner;         /* relation whose definition created the node */
    /* OPK_SOURCE and OPK_SINK */
    int rel;
    /* OPK_MAP */
    Expr *filter;
    Expr **proj;
    /* OPK_AGG */
    int ngroup;
    AggSpec *aggs;
    int naggs;
    bool linear;  /* every aggregate is linear: combine before exchange */
    bool global;  /* no GROUP BY: exactly one output row, even for no input */
    /* OPK_UPSERT: the key columns (also Relation.pk) */
    int *pk;
    int npk;
    /* OPK_JOIN: output = left columns then right columns */
    int nkeys;
    int *lkeys, *rkeys;
    /* OPK_TOPK and OPK_WINDOW: partitions by columns part[0..npart), ordered
       by columns ord[0..nord) (then by the whole row); NULL is the smallest
       value unless ord_nulls_first says otherwise */
    int npart;
    int *part;
    int nord;
    int *ord;
    bool *ord_desc, *ord_nulls_first;
    /* OPK_TOPK: keeps rows whose rank r has offset < r <= offset + limit
       (limit -1: no bound); rank != RANK_NONE, RANK_TIES appends r as a
       BIGINT column */
    int64_t limit, offset;
    RankKind rank;
    /* OPK_WINDOW */
    WinFunc *wfn;
    int nwfn;
    /* OPK_FINAL: the column whose watermark releases rows */
    int final_col;
    /* OPK_ASOF: input rows are (part cols [0, npart), timestamp, side (BOOLEAN:
       false = left row, true = right row), asof_nl left columns, the right
       columns); ord = {timestamp, side}, the side ordered so that a right
       row that may match a left row of equal timestamp comes before it in
       the direction of the search. asof_back: a left row's match is the
       closest right row before it (>=, >), else after it (<=, <);
       asof_outer: LEFT ASOF (a left row without match is kept, right
       columns NULL). Output: the left columns, then the right ones, every
       one nullable (the planner's MAP restores the types). */
    int asof_nl;
    bool asof_back, asof_outer;
    /* OPK_TEMPORAL: a row passes at clock T (the watermark of node
       tclock's column 0) when its column tcol, not NULL, is >= T + toff
       (tupper false) or <= T + toff (tupper true); no row passes before
       the clock has a value */
    int tcol, tclock;
    int64_t toff;
    bool tupper;
    /* OPK_FIXPOINT: the definitions R_i = Q_i(R_0..R_{nrec-1}, inputs),
       i < nrec (nrec > 1: mutually recursive views, planned together), as
       a circuit of its own; its nodes 0..nrec+nin-1 are ports (OPK_UNION
       without inputs): node i the changes of R_i, node nrec + j those of
       input j; node sub_outs[i] is Q_i (R_i's types). The output is R_0
       (nrec 1), or for nrec > 1 every R_i tagged: column 0 (INT) is i,
       then the columns of R_0, R_1, ... one after the other, those not of
       R_i NULL or (NOT NULL ones) zero */
    struct Circuit *sub;
    int nrec;
    int *sub_outs;
    /* OPK_UNNEST */
    int unnest_col;
    bool ordinality;
    int unnest_n;    /* arrays zipped (columns unnest_col...): 0 or 1 for one */
    bool unnest_outer; /* LEFT JOIN UNNEST(...) ON TRUE: a row whose arrays are
                          all NULL or empty gives one row, elements (and
                          position) NULL */
} CNode;

typedef struct Relation {
    char *name;
    bool is_table;
    bool materialized;
    bool retain;     /* a table WITH ('retain_input' = 'true'): a sink keeps its
                        contents (rel_keeps), as for 'materialized', but only for
                        bootstrapping (docs/bootstrapping.md): r->sink stays -1 */
    int ncol;
    char **colnames;
    SqlType *types;
    int *pk;         /* PRIMARY KEY column indexes (tables) */
    int npk;
    int node;        /* node whose output stream is this relation's changes */
    int sink;        /* OPK_SINK node, or -1 when nothing consumes the end */
    cJSON *connectors; /* parsed 'connectors' array, or NULL */
    /* presentation order (views): ORDER BY over output columns; kept for
       one-shot queries (CC_PRESENT), else only when LIMIT needs it */
    int norder;
    int *order_col;
    bool *order_desc, *order_nulls_first;
    int nhidden;     /* trailing columns that exist only for ORDER BY (CC_PRESENT) */
    int64_t limit, offset; /* -1 when absent (CC_PRESENT: applied by the reader) */
    bool with_ties;  /* CC_PRESENT: FETCH ... WITH TIES (the reader keeps the
                        rows tying with the last of the limit) */
    int line, col;   /* where the relation is declared */
    int conn_line, conn_col; /* where its connectors string starts */
    /* LATENESS (tables, watermark.h): column wm_col's watermark is the
       largest value seen minus `lateness` (in the column's representation:
       microseconds, days or the integer); a row below it is late, dropped
       and counted. wm_col -1: none */
    int wm_col;
    int64_t lateness;
    /* a table declared ahead of a one-shot query (TableDecl): its program's
       LATENESS column, which a temporal join takes as the versions' time
       (the query itself keeps no watermark); -1 none */
    int time_col;
    /* 'append_only' = 'true' (tables): the input only inserts; a temporal
       join may read the table as a history (sql/plan_asof.c) */
    bool append_only;
    /* the clock table NOW() reads, added by the compiler (sql/plan_temporal.c):
       the controller pushes the time into it (pipeline/clock.c) */
    bool clock;
    /* 'emit_final' (views): the output column whose watermark releases the
       view's rows (r->node is then an OPK_FINAL node); -1: none */
    int emit_final;
    /* the SQL functions its definition calls, directly or through other
       functions: indexes into Circuit.funcs (the program diff) */
    int *funcs;
    int nfuncs;
} Relation;

/* Does relation r keep its contents in a sink ('materialized', or a table's
   'retain_input')? */
static inline bool rel_keeps(const Relation *r) { return r->materialized || r->retain; }

/* A SQL function of the program (CREATE FUNCTION, sql/bind_udf.c). Every
   call is inlined where it is written, so no node computes a function;
   what is kept tells a changed function (the program diff) and lets
   one-shot queries over a running pipeline call it. */
typedef struct CFunc {
    char *name;
    char *text;        /* its CREATE FUNCTION statement */
    int nparam;
    SqlType *ptypes;
    SqlType ret;
    Expr *body;        /* over columns 0..nparam-1 (the parameters, nullable
                          unless declared NOT NULL), of type ret, calls of
                          other functions inlined */
} CFunc;

typedef struct Circuit {
    Arena *arena;
    CNode **nodes;
    int nnodes;
    Relation *rels;
    int nrels;
    int tz; /* session time zone (expr/tz.h id, 0 = UTC): SET TIME ZONE */
    CFunc *funcs;      /* in the order they are declared */
    int nfuncs;
    char **types;      /* the program's CREATE TYPE statements, in order: a
                          one-shot query over it declares them again (type
                          names belong to their program, not the process) */
    int ntypes;
} Circuit;

/* Human-readable circuit (sluice check). */
void circuit_explain(const Circuit *c, Buf *out);

#endif
