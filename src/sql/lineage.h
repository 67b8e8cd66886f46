/*
 * sql/lineage.h - field-level lineage of a compiled program (issue 22;
 * docs/lineage.md): for every column of every view, the source table
 * columns its values come from, each with a kind (identity, transformation,
 * aggregation); and per view the source columns that decide which rows
 * exist (filter, join key, group key, order).
 *
 * Derived from the compiled circuit (circuit/circuit.h) alone: one pass
 * over the nodes in id order (a topological order) through the expression
 * trees of every operator, so subqueries, set operations, outer joins,
 * windows, top-k, table functions and views over views are all whatever
 * nodes the planner made of them. Used by `sluice lineage` (cli/) and
 * GET /lineage (server/), which print the same JSON.
 */
#ifndef SL_SQL_LINEAGE_H
#define SL_SQL_LINEAGE_H

#include "../base/buf.h"
#include "../base/err.h"
#include "../circuit/circuit.h"

/* How a source column reaches a view column's values (ordered: a column
   reached along several paths takes the largest). */
typedef enum LinKind {
    LK_NONE,
    LK_IDENTITY,       /* copied unchanged */
    LK_TRANSFORMATION, /* computed from, row by row */
    LK_AGGREGATION,    /* aggregated (or computed from an aggregate) */
} LinKind;

/* How a source column decides which rows a view has (bits). */
enum {
    LR_FILTER = 1,    /* a WHERE/HAVING/ON condition that is not a join key */
    LR_JOIN_KEY = 2,  /* an equi-join key (inner, outer, semi/anti joins) */
    LR_GROUP_KEY = 4, /* GROUP BY, DISTINCT, set operations, PARTITION BY */
    LR_ORDER = 8,     /* ORDER BY of top-k and windows (with the columns that
                         break ties between rows of equal order keys) */
};

typedef struct Lineage Lineage;

/* The lineage of every node of c (c must outlive it); never fails. */
Lineage *lineage_new(const Circuit *c);
void lineage_free(Lineage *l);

/* The kind by which column col of relation rel (a view or a table) depends
   on source column scol of table srel. */
LinKind lineage_col(const Lineage *l, int rel, int col, int srel, int scol);
/* The LR_* bits by which source column scol of table srel decides the rows
   of relation rel. */
int lineage_rows(const Lineage *l, int rel, int srel, int scol);

const char *lineage_kind_name(LinKind k);
/* The name of one LR_* bit. */
const char *lineage_row_name(int bit);

/* {"views": {"V": {"columns": {"C": [{"table", "column", "kind"}, ...]},
   "rows": [{"table", "column", "kind"}, ...]}, ...}} in program order;
   entries in source order (cJSON_Delete it). */
cJSON *lineage_json(const Lineage *l);
/* lineage_json plus what a drawing of the program needs (the JSON that
   `sluice lineage` and GET /lineage print): per view "reads", the tables
   and views it reads directly, in program order (a view that is another
   relation's stream, SELECT * FROM x, reads the relation that made it);
   and "tables": {"T": {"columns": ["X", ...]}, ...}, every table in
   program order but the one named hide (may be NULL), which is left out
   unless a view reads it. */
cJSON *lineage_json_graph(const Lineage *l, const char *hide);
/* A Graphviz digraph: tables and views as records of their columns, an
   edge per (source column, view column) styled by kind, a dotted edge per
   row-deciding source column, grey edges for the relations a view reads.
   The table named hide (may be NULL) is left out unless a view reads it. */
void lineage_dot(const Lineage *l, const char *hide, Buf *out);
/* An OpenLineage JobEvent (job namespace ns, name job) whose outputs are
   the views, each with the columnLineage dataset facet (DIRECT
   IDENTITY/TRANSFORMATION/AGGREGATION per field, INDIRECT
   FILTER/JOIN/GROUP_BY/SORT for the rows); event_time as ISO 8601. */
cJSON *lineage_openlineage(const Lineage *l, const char *ns, const char *job,
                           const char *event_time, const char *hide);
/* What a change of source column "TABLE.COLUMN" can change: {"source",
   "columns": [{"view", "column", "kind"}], "rows": [{"view", "kinds"}]}.
   NULL with err set (SL_ESEMANTIC) when spec names no table column. */
cJSON *lineage_impact(const Lineage *l, const char *spec, Err *err);

#endif
