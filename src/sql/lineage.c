/*
 * sql/lineage.c - field-level lineage (lineage.h): which source table
 * columns reach each view column, and which decide a view's rows. In: a
 * compiled Circuit (read only). Out: per node two tables over the source
 * columns (every column of every table, numbered table by table), and the
 * JSON, dot, OpenLineage and impact renderings of the views' part.
 *
 * The analysis is one pass over the nodes in id order (inputs first).
 * col[n][i][s] is the LinKind by which source column s reaches output
 * column i of node n; rows[n][s] the LR_* bits by which s decides which
 * rows node n emits (or which rows reach it: a filter under an aggregate
 * decides which rows are summed). Every node inherits its inputs' rows.
 *
 *   SOURCE     column i is source column (rel, i): identity.
 *   MAP        a projection that is a bare column keeps that column's
 *              kinds; any other expression raises identity to
 *              transformation (aggregation stays). The filter's columns
 *              decide rows (LR_FILTER).
 *   UNION      column i merges the inputs' column i (largest kind),
 *              except a negated input's: a view's rows have positive
 *              weights, so its values come from the positive inputs and a
 *              negated one only cancels rows (EXCEPT, INTERSECT, the
 *              unmatched rows of an outer join): the sources its columns
 *              bring that the positive inputs lack decide rows (group key).
 *   NEGATE, SINK, UPSERT  pass through.
 *   AGG        group columns pass through (and decide rows: group key);
 *              an aggregate's argument column is raised to aggregation;
 *              COUNT(*) has no source.
 *   JOIN       left columns then right columns, passed through; the key
 *              columns of both sides decide rows (join key). Outer, semi
 *              and anti joins are joins, maps padding NULLs, distincts
 *              and negations, each handled by its own rule.
 *   DISTINCT   all columns pass through and decide rows (group key).
 *   TOPK       columns pass through; partition columns decide rows
 *              (group key), order columns (order); when positions rather
 *              than ranks bound the rows (RANK_NONE, ROW_NUMBER, WITH TIES
 *              after an OFFSET), ties are broken by the whole row, so
 *              every column decides (order).
 *              The rank column aggregates the partition and order columns.
 *   WINDOW     input columns pass through; a function's column aggregates
 *              its argument (and LAG/LEAD's default), ranking functions
 *              their order columns; partition columns decide rows (group
 *              key: a row's partition decides its values), order columns
 *              (order), and for functions that see row positions
 *              (ROW_NUMBER, LAG, LEAD, ROWS frames) every column breaks
 *              ties (order).
 *   ASOF       left then right columns pass through; the keys decide
 *              rows (join key), the timestamps (order), and so do the
 *              right columns, which break ties between right rows.
 *   CONST      no columns.
 *
 * Constants prune what can never count: a node that emits no row for any
 * input (a filter with a conjunct that is a constant FALSE or NULL,
 * always NULL like x < NULLIF(y, y), or never TRUE like x <> x; LIMIT 0;
 * what only reads such nodes) has no lineage, and neither have the CASE
 * branches a constant condition never takes, the conditions of a CASE
 * whose branches all give the same value, the other operands of FALSE AND
 * ... and TRUE OR ..., nor the COALESCE arguments after a non-NULL
 * constant.
 *
 * The result over-approximates what can change (tests/e2e/test_lineage.py
 * measures by how much): a column listed may not change for any input,
 * e.g. `a - a`; one not listed never changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../base/mem.h"
#include "lineage.h"
#include "sql.h"
#include "sql_int.h"

struct Lineage {
    const Circuit *c;
    int nsrc;      /* source columns: every column of every table */
    int *src_rel;  /* per source column: its table and column */
    int *src_col;
    int *base;     /* per relation: its first source column, or -1 (views) */
    uint8_t **col; /* per node: ncol * nsrc LinKind */
    uint8_t **rows; /* per node: nsrc LR_* bits */
    bool *dead;     /* per node: emits no row for any input */
};

static const int row_bits[] = {LR_FILTER, LR_JOIN_KEY, LR_GROUP_KEY, LR_ORDER};

const char *lineage_kind_name(LinKind k)
{
    switch (k) {
    case LK_IDENTITY: return "identity";
    case LK_TRANSFORMATION: return "transformation";
    case LK_AGGREGATION: return "aggregation";
    default: return "none";
    }
}

const char *lineage_row_name(int bit)
{
    switch (bit) {
    case LR_FILTER: return "filter";
    case LR_JOIN_KEY: return "join_key";
    case LR_GROUP_KEY: return "group_key";
    case LR_ORDER: return "order";
    default: return "none";
    }
}

/* ---------------------------------------------------------------- analysis */

static uint8_t *colv(const Lineage *l, int node, int col)
{
    return l->col[node] + (size_t)col * (size_t)l->nsrc;
}

static uint8_t kmax(uint8_t a, uint8_t b) { return a > b ? a : b; }

/* acc[s] = max(acc[s], kind of s in column c of node in, raised to at least
   `floor`) for every source s. */
static void merge_col(const Lineage *l, uint8_t *acc, int in, int c, uint8_t floor)
{
    const uint8_t *v = colv(l, in, c);
    for (int s = 0; s < l->nsrc; s++)
        if (v[s])
            acc[s] = kmax(acc[s], kmax(v[s], floor));
}

/* rows[s] |= bits for every source s that reaches column c of node in. */
static void rows_from_col(const Lineage *l, uint8_t *rows, int in, int c, int bits)
{
    const uint8_t *v = colv(l, in, c);
    for (int s = 0; s < l->nsrc; s++)
        if (v[s])
            rows[s] |= (uint8_t)bits;
}

static bool reads_columns(const Expr *e)
{
    if (e->k == E_COL)
        return true;
    for (int i = 0; i < e->na; i++)
        if (reads_columns(e->a[i]))
            return true;
    return false;
}

/* The value of a constant BOOLEAN expression (no column): 0 FALSE, 1 TRUE,
   2 NULL, -1 not constant or not evaluable. */
static int const_bool(const Expr *e)
{
    if (!e || e->t.kind != TK_BOOL || reads_columns(e))
        return -1;
    Arena *a = arena_new(4096);
    Chunk *in = chunk_new(a, 0, NULL, 1);
    in->n = 1;
    Err err = {0};
    EvalCtx cx = {a, 0, &err};
    Vec out;
    int r = -1;
    if (!expr_eval(e, in, NULL, 1, &cx, &out))
        r = out.nul && out.nul[0] ? 2 : out.i[0] != 0;
    arena_free(a);
    return r;
}

/* 1 when constant e is TRUE, 0 when FALSE or NULL, -1 not constant. */
static int const_truth(const Expr *e)
{
    int b = const_bool(e);
    return b < 0 ? -1 : b == 1;
}

/* Is e NULL for every row? NULL constants, NULLIF(x, x), and operators
   that give NULL for a NULL operand over such an operand. */
static bool always_null(const Expr *e)
{
    switch (e->k) {
    case E_CONST:
        return e->cnull;
    case E_COL:
    case E_AND:
    case E_OR:
    case E_ISNULL:
    case E_ISNOTNULL:
    case E_ISTRUE:
    case E_ISFALSE:
    case E_CASE:
    case E_COALESCE:
    case E_IN:
        return false;
    case E_NULLIF:
        return sql__expr_equal(e->a[0], e->a[1]) || always_null(e->a[0]);
    case E_FUNC:
        if (e->fn == FN_CONCAT)
            break;
        return false; /* some functions map NULL to a value */
    default:
        break;
    }
    for (int i = 0; i < e->na; i++)
        if (always_null(e->a[i]))
            return true;
    return false;
}

/* Every column that expression e of node in's rows reads, merged into acc
   (raised to floor) or, when acc is NULL, into rows with bits. The
   branches a constant condition never takes are left out: CASE WHEN
   FALSE THEN x, the branches after WHEN TRUE, the COALESCE arguments after
   a non-NULL constant. */
static void expr_walk(const Lineage *l, const Expr *e, int in, uint8_t *acc, uint8_t floor,
                      uint8_t *rows, int bits)
{
    if (!e)
        return;
    if (e->k == E_COL) {
        if (acc)
            merge_col(l, acc, in, e->col, floor);
        else
            rows_from_col(l, rows, in, e->col, bits);
        return;
    }
    if (e->k == E_CASE) {
        /* every branch the same value (and an ELSE): the conditions do not count */
        bool same = e->na % 2 == 1;
        for (int i = 1; same && i < e->na; i += 2)
            same = sql__expr_equal(e->a[i], e->a[e->na - 1]);
        if (same) {
            expr_walk(l, e->a[e->na - 1], in, acc, floor, rows, bits);
            return;
        }
        int i = 0;
        for (; i + 1 < e->na; i += 2) {
            int t = const_truth(e->a[i]);
            if (t == 0)
                continue;
            expr_walk(l, e->a[i], in, acc, floor, rows, bits);
            expr_walk(l, e->a[i + 1], in, acc, floor, rows, bits);
            if (t == 1)
                return;
        }
        if (i < e->na)
            expr_walk(l, e->a[i], in, acc, floor, rows, bits);
        return;
    }
    if (e->k == E_AND || e->k == E_OR) {
        /* FALSE AND x is FALSE, TRUE OR x is TRUE, whatever x */
        for (int i = 0; i < e->na; i++)
            if (const_bool(e->a[i]) == (e->k == E_OR))
                return;
    }
    if (e->k == E_COALESCE) {
        for (int i = 0; i < e->na; i++) {
            expr_walk(l, e->a[i], in, acc, floor, rows, bits);
            if (e->a[i]->k == E_CONST && !e->a[i]->cnull)
                return;
        }
        return;
    }
    for (int i = 0; i < e->na; i++)
        expr_walk(l, e->a[i], in, acc, floor, rows, bits);
}

static void node_map(Lineage *l, const CNode *n)
{
    int in = n->in[0];
    for (int i = 0; i < n->ncol; i++) {
        const Expr *e = n->proj[i];
        if (e->k == E_COL)
            merge_col(l, colv(l, n->id, i), in, e->col, LK_NONE);
        else
            expr_walk(l, e, in, colv(l, n->id, i), LK_TRANSFORMATION, NULL, 0);
    }
    expr_walk(l, n->filter, in, NULL, 0, l->rows[n->id], LR_FILTER);
}

static void node_agg(Lineage *l, const CNode *n)
{
    int in = n->in[0];
    for (int i = 0; i < n->ngroup; i++) {
        merge_col(l, colv(l, n->id, i), in, i, LK_NONE);
        rows_from_col(l, l->rows[n->id], in, i, LR_GROUP_KEY);
    }
    for (int j = 0; j < n->naggs; j++)
        if (n->aggs[j].kind != AGG_COUNT_STAR) {
            merge_col(l, colv(l, n->id, n->ngroup + j), in, n->aggs[j].col, LK_AGGREGATION);
            for (int k = 0; k < n->aggs[j].nord; k++) /* STRING_AGG(... ORDER BY o) */
                merge_col(l, colv(l, n->id, n->ngroup + j), in, n->aggs[j].ord[k],
                          LK_AGGREGATION);
        }
}

static void node_join(Lineage *l, const CNode *n)
{
    int a = n->in[0], b = n->in[1];
    int na = l->c->nodes[a]->ncol;
    for (int i = 0; i < n->ncol; i++)
        merge_col(l, colv(l, n->id, i), i < na ? a : b, i < na ? i : i - na, LK_NONE);
    for (int k = 0; k < n->nkeys; k++) {
        rows_from_col(l, l->rows[n->id], a, n->lkeys[k], LR_JOIN_KEY);
        rows_from_col(l, l->rows[n->id], b, n->rkeys[k], LR_JOIN_KEY);
    }
}

/* Partition and order columns of a TOPK or WINDOW node decide rows; with
   ties broken by the row, every input column does (order). */
static void partition_rows(Lineage *l, const CNode *n, bool ties)
{
    int in = n->in[0];
    uint8_t *r = l->rows[n->id];
    for (int i = 0; i < n->npart; i++)
        rows_from_col(l, r, in, n->part[i], LR_GROUP_KEY);
    for (int i = 0; i < n->nord; i++)
        rows_from_col(l, r, in, n->ord[i], LR_ORDER);
    if (ties)
        for (int i = 0; i < l->c->nodes[in]->ncol; i++)
            rows_from_col(l, r, in, i, LR_ORDER);
}

static void node_topk(Lineage *l, const CNode *n)
{
    int in = n->in[0];
    int nin = l->c->nodes[in]->ncol;
    for (int i = 0; i < nin; i++)
        merge_col(l, colv(l, n->id, i), in, i, LK_NONE);
    if (n->rank != RANK_NONE && n->ncol > nin) {
        uint8_t *rk = colv(l, n->id, nin);
        for (int i = 0; i < n->npart; i++)
            merge_col(l, rk, in, n->part[i], LK_AGGREGATION);
        for (int i = 0; i < n->nord; i++)
            merge_col(l, rk, in, n->ord[i], LK_AGGREGATION);
    }
    /* WITH TIES (RANK_TIES) is bounded by ranks, but an OFFSET skips
       positions: which of tying rows it skips depends on the whole row */
    partition_rows(l, n, n->rank == RANK_NONE || n->rank == RANK_ROW_NUMBER ||
                             (n->rank == RANK_TIES && n->offset > 0));
}

/* ASOF: left then right columns pass through (input columns npart + 2
   on); the keys decide rows (join key), the timestamps (order), and the
   right row's columns break ties between right rows (order). */
static void node_asof(Lineage *l, const CNode *n)
{
    int in = n->in[0];
    int nin = l->c->nodes[in]->ncol;
    for (int i = 0; i < n->ncol && n->npart + 2 + i < nin; i++)
        merge_col(l, colv(l, n->id, i), in, n->npart + 2 + i, LK_NONE);
    uint8_t *r = l->rows[n->id];
    for (int i = 0; i < n->npart; i++)
        rows_from_col(l, r, in, n->part[i], LR_JOIN_KEY);
    for (int i = 0; i < n->nord; i++)
        rows_from_col(l, r, in, n->ord[i], LR_ORDER);
    for (int i = n->npart + 2 + n->asof_nl; i < nin; i++)
        rows_from_col(l, r, in, i, LR_ORDER);
}

static void node_window(Lineage *l, const CNode *n)
{
    int in = n->in[0];
    int nin = l->c->nodes[in]->ncol;
    bool ties = false;
    for (int i = 0; i < nin; i++)
        merge_col(l, colv(l, n->id, i), in, i, LK_NONE);
    for (int j = 0; j < n->nwfn && nin + j < n->ncol; j++) {
        const WinFunc *f = &n->wfn[j];
        uint8_t *v = colv(l, n->id, nin + j);
        if (f->col >= 0)
            merge_col(l, v, in, f->col, LK_AGGREGATION);
        if ((f->kind == WIN_LAG || f->kind == WIN_LEAD) && f->def_col >= 0)
            merge_col(l, v, in, f->def_col, LK_AGGREGATION);
        if (f->kind == WIN_ROW_NUMBER || f->kind == WIN_RANK || f->kind == WIN_DENSE_RANK ||
            f->kind == WIN_NTILE || f->kind == WIN_FIRST_VALUE || f->kind == WIN_LAST_VALUE ||
            f->kind == WIN_NTH_VALUE || f->kind == WIN_PERCENT_RANK || f->kind == WIN_CUME_DIST)
            for (int i = 0; i < n->nord; i++)
                merge_col(l, v, in, n->ord[i], LK_AGGREGATION);
        if (f->kind == WIN_ROW_NUMBER || f->kind == WIN_LAG || f->kind == WIN_LEAD ||
            f->kind == WIN_NTILE || f->kind == WIN_FIRST_VALUE || f->kind == WIN_LAST_VALUE ||
            f->kind == WIN_NTH_VALUE ||
            (f->rows && !(f->start == FB_UNBOUNDED_PRECEDING && f->end == FB_UNBOUNDED_FOLLOWING)))
            ties = true;
    }
    partition_rows(l, n, ties);
}

/* A negated input only cancels rows of the others (a view's rows have
   positive weights, so their values come from the positive inputs): its
   columns decide rows (set operations, anti joins) where they bring
   sources the positive inputs do not have at the same column. */
static void node_union(Lineage *l, const CNode *n)
{
    const Circuit *c = l->c;
    for (int k = 0; k < n->nin; k++)
        if (c->nodes[n->in[k]]->k != OPK_NEGATE)
            for (int i = 0; i < n->ncol && i < c->nodes[n->in[k]]->ncol; i++)
                merge_col(l, colv(l, n->id, i), n->in[k], i, LK_NONE);
    for (int k = 0; k < n->nin; k++) {
        if (c->nodes[n->in[k]]->k != OPK_NEGATE)
            continue;
        for (int i = 0; i < n->ncol && i < c->nodes[n->in[k]]->ncol; i++) {
            const uint8_t *neg = colv(l, n->in[k], i), *pos = colv(l, n->id, i);
            for (int s = 0; s < l->nsrc; s++)
                if (neg[s] && !pos[s])
                    l->rows[n->id][s] |= LR_GROUP_KEY;
        }
    }
}

/* Is e a comparison of a value with itself (of kind k, on a type without
   NaN, which is not equal to itself)? */
static bool self_compare(const Expr *e, ExprKind k)
{
    return e->k == k && e->na == 2 && e->a[0]->t.kind != TK_REAL &&
           e->a[0]->t.kind != TK_DOUBLE && sql__expr_equal(e->a[0], e->a[1]);
}

/* Is filter e never TRUE: a constant FALSE or NULL, always NULL, x <> x,
   x < x, x > x, NOT (x = x) (FALSE or NULL), a conjunction with such a
   conjunct, a disjunction of such terms? */
static bool never_true(const Expr *e)
{
    if (!e)
        return false;
    if (always_null(e))
        return true;
    switch (e->k) {
    case E_AND:
        for (int i = 0; i < e->na; i++)
            if (never_true(e->a[i]))
                return true;
        break;
    case E_OR: {
        bool all = e->na > 0;
        for (int i = 0; i < e->na && all; i++)
            all = never_true(e->a[i]);
        if (all)
            return true;
        break;
    }
    case E_NE:
    case E_LT:
    case E_GT:
        if (self_compare(e, e->k))
            return true;
        break;
    case E_NOT:
        if (self_compare(e->a[0], E_EQ) || self_compare(e->a[0], E_LE) ||
            self_compare(e->a[0], E_GE))
            return true;
        break;
    default:
        break;
    }
    return const_truth(e) == 0;
}

/* Does node n emit no row whatever its inputs hold? A map whose filter
   is a constant FALSE or NULL, a top-k keeping 0 rows, a union of dead
   inputs, any other node over a dead input (but a global aggregate, whose
   one row then holds constants). */
static bool node_dead(const Lineage *l, const CNode *n)
{
    bool any = false, all = n->nin > 0;
    for (int k = 0; k < n->nin; k++) {
        any |= l->dead[n->in[k]];
        all &= l->dead[n->in[k]];
    }
    switch (n->k) {
    case OPK_UNION:
        return all;
    case OPK_AGG:
        return any && !n->global;
    case OPK_MAP:
        return any || never_true(n->filter);
    case OPK_TOPK:
        return any || n->limit == 0;
    case OPK_FIXPOINT: /* its definition may hold constant rows */
        return false;
    default:
        return any;
    }
}

static void analyse(Lineage *l)
{
    const Circuit *c = l->c;
    for (int id = 0; id < c->nnodes; id++) {
        const CNode *n = c->nodes[id];
        l->dead[id] = node_dead(l, n);
        if (l->dead[id])
            continue; /* no column, no row: nothing to change */
        for (int k = 0; k < n->nin; k++)
            for (int s = 0; s < l->nsrc; s++)
                l->rows[id][s] |= l->rows[n->in[k]][s];
        switch (n->k) {
        case OPK_SOURCE:
            if (n->rel >= 0 && l->base[n->rel] >= 0)
                for (int i = 0; i < n->ncol; i++)
                    colv(l, id, i)[l->base[n->rel] + i] = LK_IDENTITY;
            break;
        case OPK_MAP:
            node_map(l, n);
            break;
        case OPK_AGG:
            node_agg(l, n);
            break;
        case OPK_JOIN:
            node_join(l, n);
            break;
        case OPK_DISTINCT:
            for (int i = 0; i < n->ncol; i++) {
                merge_col(l, colv(l, id, i), n->in[0], i, LK_NONE);
                rows_from_col(l, l->rows[id], n->in[0], i, LR_GROUP_KEY);
            }
            break;
        case OPK_TOPK:
            node_topk(l, n);
            break;
        case OPK_WINDOW:
            node_window(l, n);
            break;
        case OPK_ASOF:
            node_asof(l, n);
            break;
        case OPK_UNION:
            node_union(l, n);
            break;
        case OPK_NEGATE:
        case OPK_SINK:
        case OPK_UPSERT:
        case OPK_FINAL: /* emit_final: the same rows, later */
        case OPK_TEMPORAL: /* a filter */
            for (int k = 0; k < n->nin; k++)
                for (int i = 0; i < n->ncol && i < c->nodes[n->in[k]]->ncol; i++)
                    merge_col(l, colv(l, id, i), n->in[k], i, LK_NONE);
            break;
        case OPK_UNNEST: /* the input columns, then values computed from the array */
            for (int i = 0; i < c->nodes[n->in[0]]->ncol; i++)
                merge_col(l, colv(l, id, i), n->in[0], i, LK_NONE);
            for (int i = c->nodes[n->in[0]]->ncol; i < n->ncol; i++)
                merge_col(l, colv(l, id, i), n->in[0], n->unnest_col, LK_TRANSFORMATION);
            break;
        case OPK_CONST:
            break;
        case OPK_FIXPOINT: /* recursive: any input column may reach any column */
            for (int i = 0; i < n->ncol; i++)
                for (int k = 0; k < n->nin; k++)
                    for (int j = 0; j < c->nodes[n->in[k]]->ncol; j++)
                        merge_col(l, colv(l, id, i), n->in[k], j, LK_TRANSFORMATION);
            break;
        }
    }
}

Lineage *lineage_new(const Circuit *c)
{
    Lineage *l = sl_calloc(1, sizeof(*l));
    l->c = c;
    l->base = sl_malloc(sizeof(int) * (size_t)(c->nrels > 0 ? c->nrels : 1));
    for (int r = 0; r < c->nrels; r++) {
        l->base[r] = c->rels[r].is_table ? l->nsrc : -1;
        if (c->rels[r].is_table)
            l->nsrc += c->rels[r].ncol;
    }
    l->src_rel = sl_malloc(sizeof(int) * (size_t)(l->nsrc + 1));
    l->src_col = sl_malloc(sizeof(int) * (size_t)(l->nsrc + 1));
    for (int r = 0; r < c->nrels; r++)
        for (int i = 0; l->base[r] >= 0 && i < c->rels[r].ncol; i++) {
            l->src_rel[l->base[r] + i] = r;
            l->src_col[l->base[r] + i] = i;
        }
    l->col = sl_calloc((size_t)(c->nnodes + 1), sizeof(uint8_t *));
    l->rows = sl_calloc((size_t)(c->nnodes + 1), sizeof(uint8_t *));
    l->dead = sl_calloc((size_t)(c->nnodes + 1), sizeof(bool));
    for (int id = 0; id < c->nnodes; id++) {
        l->col[id] = sl_calloc((size_t)c->nodes[id]->ncol * (size_t)l->nsrc + 1, 1);
        l->rows[id] = sl_calloc((size_t)l->nsrc + 1, 1);
    }
    analyse(l);
    return l;
}

void lineage_free(Lineage *l)
{
    if (!l)
        return;
    for (int id = 0; id < l->c->nnodes; id++) {
        sl_free(l->col[id]);
        sl_free(l->rows[id]);
    }
    sl_free(l->col);
    sl_free(l->rows);
    sl_free(l->dead);
    sl_free(l->src_rel);
    sl_free(l->src_col);
    sl_free(l->base);
    sl_free(l);
}

static int src_index(const Lineage *l, int srel, int scol)
{
    if (srel < 0 || srel >= l->c->nrels || l->base[srel] < 0 || scol < 0 ||
        scol >= l->c->rels[srel].ncol)
        return -1;
    return l->base[srel] + scol;
}

LinKind lineage_col(const Lineage *l, int rel, int col, int srel, int scol)
{
    int s = src_index(l, srel, scol);
    if (s < 0 || rel < 0 || rel >= l->c->nrels || col < 0 || col >= l->c->rels[rel].ncol)
        return LK_NONE;
    int node = l->c->rels[rel].node;
    if (node < 0 || col >= l->c->nodes[node]->ncol)
        return LK_NONE;
    return (LinKind)colv(l, node, col)[s];
}

int lineage_rows(const Lineage *l, int rel, int srel, int scol)
{
    int s = src_index(l, srel, scol);
    if (s < 0 || rel < 0 || rel >= l->c->nrels || l->c->rels[rel].node < 0)
        return 0;
    return l->rows[l->c->rels[rel].node][s];
}

/* ---------------------------------------------------------------- relations */

/* A view's node, or -1. */
static int view_node(const Lineage *l, int r)
{
    const Relation *v = &l->c->rels[r];
    return v->is_table || v->node < 0 ? -1 : v->node;
}

/* Does any view depend on (or read) table t? */
static bool table_used(const Lineage *l, int t)
{
    const Circuit *c = l->c;
    for (int r = 0; r < c->nrels; r++) {
        int node = view_node(l, r);
        for (int i = 0; node >= 0 && i < c->rels[t].ncol; i++) {
            int s = l->base[t] + i;
            if (l->rows[node][s])
                return true;
            for (int k = 0; k < c->nodes[node]->ncol; k++)
                if (colv(l, node, k)[s])
                    return true;
        }
    }
    return false;
}

/* The relations that relation r reads directly: reads[q] set for each.
   A node belongs to the relation whose definition created it (its owner),
   so r reads the owners of the inputs of its own nodes, and, when r's
   stream is another relation's node (a view that is SELECT * FROM x), that
   node's owner. Relations sharing one stream (t, and a view SELECT * FROM
   t) count as the one that made it. */
static void rel_reads(const Circuit *c, int r, bool *reads)
{
    for (int id = 0; id < c->nnodes; id++) {
        const CNode *n = c->nodes[id];
        if (n->owner != r)
            continue;
        for (int k = 0; k < n->nin; k++) {
            int o = c->nodes[n->in[k]]->owner;
            if (o != r && o >= 0 && o < c->nrels)
                reads[o] = true;
        }
    }
    int top = c->rels[r].node;
    if (top >= 0) {
        int o = c->nodes[top]->owner;
        if (o != r && o >= 0 && o < c->nrels)
            reads[o] = true;
    }
}

/* Is table t part of the graph? Every table but the one named hide (the
   pipeline's own errors table), which is only when a view reads it or
   depends on it. */
static bool table_shown(const Lineage *l, int t, const char *hide)
{
    const Circuit *c = l->c;
    if (!hide || strcmp(c->rels[t].name, hide) || table_used(l, t))
        return true;
    bool *reads = sl_calloc((size_t)c->nrels + 1, sizeof(bool));
    bool read = false;
    for (int r = 0; r < c->nrels && !read; r++) {
        if (view_node(l, r) < 0)
            continue;
        memset(reads, 0, sizeof(bool) * (size_t)c->nrels);
        rel_reads(c, r, reads);
        read = reads[t];
    }
    sl_free(reads);
    return read;
}

/* ---------------------------------------------------------------- JSON */

static cJSON *src_item(const Lineage *l, int s, const char *kind)
{
    const Relation *t = &l->c->rels[l->src_rel[s]];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "table", t->name);
    cJSON_AddStringToObject(o, "column", t->colnames[l->src_col[s]]);
    cJSON_AddStringToObject(o, "kind", kind);
    return o;
}

cJSON *lineage_json(const Lineage *l)
{
    const Circuit *c = l->c;
    cJSON *j = cJSON_CreateObject();
    cJSON *views = cJSON_AddObjectToObject(j, "views");
    for (int r = 0; r < c->nrels; r++) {
        int node = view_node(l, r);
        if (node < 0)
            continue;
        const Relation *v = &c->rels[r];
        cJSON *vo = cJSON_AddObjectToObject(views, v->name);
        cJSON *cols = cJSON_AddObjectToObject(vo, "columns");
        for (int i = 0; i < v->ncol - v->nhidden; i++) {
            cJSON *a = cJSON_AddArrayToObject(cols, v->colnames[i]);
            const uint8_t *k = i < c->nodes[node]->ncol ? colv(l, node, i) : NULL;
            for (int s = 0; k && s < l->nsrc; s++)
                if (k[s])
                    cJSON_AddItemToArray(a, src_item(l, s, lineage_kind_name((LinKind)k[s])));
        }
        cJSON *rows = cJSON_AddArrayToObject(vo, "rows");
        for (int s = 0; s < l->nsrc; s++)
            for (size_t b = 0; b < ARRAY_LEN(row_bits); b++)
                if (l->rows[node][s] & row_bits[b])
                    cJSON_AddItemToArray(rows, src_item(l, s, lineage_row_name(row_bits[b])));
    }
    return j;
}

cJSON *lineage_json_graph(const Lineage *l, const char *hide)
{
    const Circuit *c = l->c;
    cJSON *j = lineage_json(l);
    cJSON *views = cJSON_GetObjectItemCaseSensitive(j, "views");
    bool *reads = sl_calloc((size_t)c->nrels + 1, sizeof(bool));
    for (int r = 0; r < c->nrels; r++) {
        if (view_node(l, r) < 0)
            continue;
        cJSON *vo = cJSON_GetObjectItemCaseSensitive(views, c->rels[r].name);
        cJSON *a = cJSON_AddArrayToObject(vo, "reads");
        memset(reads, 0, sizeof(bool) * (size_t)c->nrels);
        rel_reads(c, r, reads);
        for (int q = 0; q < c->nrels; q++)
            if (reads[q])
                cJSON_AddItemToArray(a, cJSON_CreateString(c->rels[q].name));
    }
    sl_free(reads);
    cJSON *tables = cJSON_AddObjectToObject(j, "tables");
    for (int t = 0; t < c->nrels; t++) {
        const Relation *v = &c->rels[t];
        if (!v->is_table || !table_shown(l, t, hide))
            continue;
        cJSON *to = cJSON_AddObjectToObject(tables, v->name);
        cJSON *cols = cJSON_AddArrayToObject(to, "columns");
        for (int i = 0; i < v->ncol - v->nhidden; i++)
            cJSON_AddItemToArray(cols, cJSON_CreateString(v->colnames[i]));
    }
    return j;
}

/* ---------------------------------------------------------------- impact */

cJSON *lineage_impact(const Lineage *l, const char *spec, Err *err)
{
    const Circuit *c = l->c;
    const char *dot = strrchr(spec, '.');
    if (!dot || dot == spec || !dot[1]) {
        err_set(err, SL_ESEMANTIC, "--impact takes TABLE.COLUMN, not \"%s\"", spec);
        return NULL;
    }
    char *tname = sl_strndup(spec, (size_t)(dot - spec));
    int t = circuit_find_rel(c, tname);
    if (t < 0 || !c->rels[t].is_table) {
        err_set(err, SL_ESEMANTIC, "the program has no table named \"%s\"", tname);
        sl_free(tname);
        return NULL;
    }
    sl_free(tname);
    int col = -1;
    for (int i = 0; i < c->rels[t].ncol; i++)
        if (!strcasecmp(c->rels[t].colnames[i], dot + 1))
            col = i;
    if (col < 0) {
        err_set(err, SL_ESEMANTIC, "table \"%s\" has no column named \"%s\"", c->rels[t].name,
                dot + 1);
        return NULL;
    }
    int s = l->base[t] + col;
    cJSON *j = cJSON_CreateObject();
    char name[512];
    snprintf(name, sizeof(name), "%s.%s", c->rels[t].name, c->rels[t].colnames[col]);
    cJSON_AddStringToObject(j, "source", name);
    cJSON *cols = cJSON_AddArrayToObject(j, "columns");
    cJSON *rows = cJSON_AddArrayToObject(j, "rows");
    for (int r = 0; r < c->nrels; r++) {
        int node = view_node(l, r);
        if (node < 0)
            continue;
        const Relation *v = &c->rels[r];
        for (int i = 0; i < v->ncol - v->nhidden && i < c->nodes[node]->ncol; i++) {
            uint8_t k = colv(l, node, i)[s];
            if (!k)
                continue;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "view", v->name);
            cJSON_AddStringToObject(o, "column", v->colnames[i]);
            cJSON_AddStringToObject(o, "kind", lineage_kind_name((LinKind)k));
            cJSON_AddItemToArray(cols, o);
        }
        if (l->rows[node][s]) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "view", v->name);
            cJSON *kinds = cJSON_AddArrayToObject(o, "kinds");
            for (size_t b = 0; b < ARRAY_LEN(row_bits); b++)
                if (l->rows[node][s] & row_bits[b])
                    cJSON_AddItemToArray(kinds,
                                         cJSON_CreateString(lineage_row_name(row_bits[b])));
            cJSON_AddItemToArray(rows, o);
        }
    }
    return j;
}

/* ---------------------------------------------------------------- dot */

/* s as the text of a record field or an edge label: the characters that
   structure a record label and quotes escaped. */
static void dot_text(Buf *out, const char *s)
{
    for (; *s; s++) {
        if (strchr("{}|<>\"\\ ", *s))
            buf_putc(out, '\\');
        if (*s == '\n')
            buf_puts(out, "\\n");
        else
            buf_putc(out, *s);
    }
}

void lineage_dot(const Lineage *l, const char *hide, Buf *out)
{
    const Circuit *c = l->c;
    static const char *const style[] = {"", "solid", "dashed", "bold"};
    buf_puts(out, "digraph lineage {\n  rankdir=LR;\n  node [shape=record, fontsize=10];\n"
                  "  edge [fontsize=8];\n");
    bool *shown = sl_calloc((size_t)c->nrels + 1, sizeof(bool));
    for (int r = 0; r < c->nrels; r++) {
        const Relation *v = &c->rels[r];
        if (v->is_table && !table_shown(l, r, hide))
            continue;
        if (!v->is_table && view_node(l, r) < 0)
            continue;
        shown[r] = true;
        buf_printf(out, "  r%d [label=\"{%s ", r, v->is_table ? "table" : "view");
        dot_text(out, v->name);
        for (int i = 0; i < v->ncol - v->nhidden; i++) {
            buf_printf(out, "|<c%d> ", i);
            dot_text(out, v->colnames[i]);
        }
        buf_printf(out, "}\"%s];\n", v->is_table ? ", style=filled, fillcolor=\"#eeeeee\"" : "");
    }
    bool *reads = sl_calloc((size_t)c->nrels + 1, sizeof(bool));
    for (int r = 0; r < c->nrels; r++) {
        int node = view_node(l, r);
        if (node < 0)
            continue;
        const Relation *v = &c->rels[r];
        memset(reads, 0, sizeof(bool) * (size_t)c->nrels);
        rel_reads(c, r, reads);
        for (int q = 0; q < c->nrels; q++)
            if (reads[q] && shown[q])
                buf_printf(out, "  r%d -> r%d [color=gray, arrowhead=empty, label=\"reads\"];\n",
                           q, r);
        for (int i = 0; i < v->ncol - v->nhidden && i < c->nodes[node]->ncol; i++)
            for (int s = 0; s < l->nsrc; s++) {
                uint8_t k = colv(l, node, i)[s];
                if (k)
                    buf_printf(out, "  r%d:c%d -> r%d:c%d [style=%s, label=\"%s\"];\n",
                               l->src_rel[s], l->src_col[s], r, i, style[k],
                               lineage_kind_name((LinKind)k));
            }
        for (int s = 0; s < l->nsrc; s++) {
            if (!l->rows[node][s])
                continue;
            buf_printf(out, "  r%d:c%d -> r%d [style=dotted, color=blue, label=\"", l->src_rel[s],
                       l->src_col[s], r);
            const char *sep = "";
            for (size_t b = 0; b < ARRAY_LEN(row_bits); b++)
                if (l->rows[node][s] & row_bits[b]) {
                    buf_printf(out, "%s%s", sep, lineage_row_name(row_bits[b]));
                    sep = ",";
                }
            buf_puts(out, "\"];\n");
        }
    }
    buf_puts(out, "}\n");
    sl_free(reads);
    sl_free(shown);
}

/* ---------------------------------------------------------------- OpenLineage */

#define OL_PRODUCER "urn:sluice:lineage" /* no public home: a URN is a URI */
#define OL_EVENT_SCHEMA "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"
#define OL_FACET_SCHEMA                                                                        \
    "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json"                 \
    "#/$defs/ColumnLineageDatasetFacet"
#define OL_SCHEMA_SCHEMA                                                                       \
    "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"

static cJSON *ol_field(const Lineage *l, const char *ns, int s, const char *type,
                       const char *subtype)
{
    const Relation *t = &l->c->rels[l->src_rel[s]];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "namespace", ns);
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "field", t->colnames[l->src_col[s]]);
    cJSON *tr = cJSON_AddArrayToObject(o, "transformations");
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "type", type);
    cJSON_AddStringToObject(x, "subtype", subtype);
    cJSON_AddBoolToObject(x, "masking", false);
    cJSON_AddItemToArray(tr, x);
    return o;
}

static cJSON *ol_schema(const Relation *v)
{
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "_producer", OL_PRODUCER);
    cJSON_AddStringToObject(f, "_schemaURL", OL_SCHEMA_SCHEMA);
    cJSON *fields = cJSON_AddArrayToObject(f, "fields");
    for (int i = 0; i < v->ncol - v->nhidden; i++) {
        char tb[64];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", v->colnames[i]);
        cJSON_AddStringToObject(o, "type", type_name(v->types[i], tb, sizeof(tb)));
        cJSON_AddItemToArray(fields, o);
    }
    return f;
}

static cJSON *ol_dataset(const char *ns, const Relation *v, cJSON **facets)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "namespace", ns);
    cJSON_AddStringToObject(d, "name", v->name);
    *facets = cJSON_AddObjectToObject(d, "facets");
    cJSON_AddItemToObject(*facets, "schema", ol_schema(v));
    return d;
}

cJSON *lineage_openlineage(const Lineage *l, const char *ns, const char *job,
                           const char *event_time, const char *hide)
{
    static const char *const direct[] = {"", "IDENTITY", "TRANSFORMATION", "AGGREGATION"};
    static const char *const indirect[] = {"FILTER", "JOIN", "GROUP_BY", "SORT"};
    const Circuit *c = l->c;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "eventTime", event_time);
    cJSON_AddStringToObject(j, "producer", OL_PRODUCER);
    cJSON_AddStringToObject(j, "schemaURL", OL_EVENT_SCHEMA);
    cJSON *jo = cJSON_AddObjectToObject(j, "job");
    cJSON_AddStringToObject(jo, "namespace", ns);
    cJSON_AddStringToObject(jo, "name", job);
    cJSON *inputs = cJSON_AddArrayToObject(j, "inputs");
    cJSON *outputs = cJSON_AddArrayToObject(j, "outputs");
    cJSON *facets;
    for (int r = 0; r < c->nrels; r++) {
        const Relation *v = &c->rels[r];
        if (v->is_table) {
            if (table_shown(l, r, hide))
                cJSON_AddItemToArray(inputs, ol_dataset(ns, v, &facets));
            continue;
        }
        int node = view_node(l, r);
        if (node < 0)
            continue;
        cJSON_AddItemToArray(outputs, ol_dataset(ns, v, &facets));
        cJSON *cl = cJSON_AddObjectToObject(facets, "columnLineage");
        cJSON_AddStringToObject(cl, "_producer", OL_PRODUCER);
        cJSON_AddStringToObject(cl, "_schemaURL", OL_FACET_SCHEMA);
        cJSON *fields = cJSON_AddObjectToObject(cl, "fields");
        for (int i = 0; i < v->ncol - v->nhidden && i < c->nodes[node]->ncol; i++) {
            cJSON *f = cJSON_AddObjectToObject(fields, v->colnames[i]);
            cJSON *in = cJSON_AddArrayToObject(f, "inputFields");
            for (int s = 0; s < l->nsrc; s++) {
                uint8_t k = colv(l, node, i)[s];
                if (k)
                    cJSON_AddItemToArray(in, ol_field(l, ns, s, "DIRECT", direct[k]));
            }
        }
        cJSON *ds = cJSON_AddArrayToObject(cl, "dataset");
        for (int s = 0; s < l->nsrc; s++)
            for (size_t b = 0; b < ARRAY_LEN(row_bits); b++)
                if (l->rows[node][s] & row_bits[b])
                    cJSON_AddItemToArray(ds, ol_field(l, ns, s, "INDIRECT", indirect[b]));
    }
    return j;
}
