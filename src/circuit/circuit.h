/*
 * circuit/circuit.h - the compiled form of a program: relations (tables and
 * views) and a DAG of operator descriptions that every worker instantiates.
 *
 * Built by sql/plan.c from the AST; read-only afterwards (PostgreSQL's
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
} OpKind;

typedef enum AggKind { AGG_COUNT_STAR, AGG_COUNT, AGG_SUM, AGG_AVG, AGG_MIN, AGG_MAX } AggKind;

typedef struct AggSpec {
    AggKind kind;
    int col;      /* input column of the argument (unused for COUNT(*)) */
    SqlType in_t; /* argument type */
    SqlType out_t;
    bool distinct; /* COUNT/SUM/AVG(DISTINCT x): over the set of values */
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
} CNode;

typedef struct Relation {
    char *name;
    bool is_table;
    bool materialized;
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
    int line, col;   /* where the relation is declared */
    int conn_line, conn_col; /* where its connectors string starts */
} Relation;

typedef struct Circuit {
    Arena *arena;
    CNode **nodes;
    int nnodes;
    Relation *rels;
    int nrels;
} Circuit;

/* Compile SQL program text. Returns 0 or an SL_E* code with err holding
   line, column and message. */
int circuit_compile(const char *sql, Circuit **out, Err *err);

/* A table declared ahead of the program text (one-shot queries). */
typedef struct TableDecl {
    const char *name;
    int ncol;
    const char *const *colnames;
    const SqlType *types;
} TableDecl;
/* Flags of circuit_compile_with. */
#define CC_PRESENT 1 /* views keep ORDER BY keys (hidden trailing columns) and
                        LIMIT/OFFSET for a reader that presents them in order */
/* Compile sql after declaring tables decl[0..ndecl) (no connectors). */
int circuit_compile_with(const char *sql, const TableDecl *decl, int ndecl, int flags,
                         Circuit **out, Err *err);
void circuit_free(Circuit *c);
/* Human-readable circuit (sluice check). */
void circuit_explain(const Circuit *c, Buf *out);
/* Index of the relation called name (case-insensitive), or -1. */
int circuit_find_rel(const Circuit *c, const char *name);

#endif
