/*
 * circuit/explain.c - the circuit as text, for `sluice check` and debugging:
 * one line per node with its inputs, output types and parameters.
 */
#include <stdio.h>

#include "circuit.h"

static const char *opname(OpKind k)
{
    switch (k) {
    case OPK_SOURCE: return "source";
    case OPK_MAP: return "map";
    case OPK_UNION: return "union";
    case OPK_NEGATE: return "negate";
    case OPK_AGG: return "aggregate";
    case OPK_JOIN: return "join";
    case OPK_DISTINCT: return "distinct";
    case OPK_SINK: return "sink";
    case OPK_UPSERT: return "upsert";
    case OPK_CONST: return "const";
    case OPK_TOPK: return "topk";
    case OPK_WINDOW: return "window";
    case OPK_FINAL: return "emit_final";
    case OPK_ASOF: return "asof";
    case OPK_TEMPORAL: return "temporal_filter";
    case OPK_FIXPOINT: return "fixpoint";
    case OPK_UNNEST: return "unnest";
    }
    return "?";
}

/* " partition by #a, #b order by #c desc nulls first, #d" (window nodes). */
static void explain_window_order(const CNode *n, Buf *out)
{
    if (n->npart) {
        buf_puts(out, " partition by");
        for (int j = 0; j < n->npart; j++)
            buf_printf(out, "%s #%d", j ? "," : "", n->part[j]);
    }
    if (n->nord) {
        buf_puts(out, " order by");
        for (int j = 0; j < n->nord; j++)
            buf_printf(out, "%s #%d%s%s", j ? "," : "", n->ord[j], n->ord_desc[j] ? " desc" : "",
                       n->ord_nulls_first[j] == n->ord_desc[j]
                           ? (n->ord_nulls_first[j] ? " nulls first" : " nulls last")
                           : "");
    }
}

static void explain_bound(FrameBound b, int64_t k, double f, bool use_f, bool months, Buf *out)
{
    static const char *nm[] = {"unbounded preceding", "preceding", "current row", "following",
                               "unbounded following"};
    if (b == FB_PRECEDING || b == FB_FOLLOWING) {
        if (use_f)
            buf_printf(out, "%g ", f);
        else
            buf_printf(out, "%lld%s ", (long long)k, months ? " months" : "");
    }
    buf_puts(out, nm[b]);
}

static void explain_wfn(const CNode *n, Buf *out)
{
    static const char *nm[] = {"row_number", "rank", "dense_rank", "lag", "lead", "count(*)",
                               "count", "sum", "avg", "min", "max", "first_value",
                               "last_value", "nth_value", "ntile", "percent_rank",
                               "cume_dist"};
    buf_puts(out, " [");
    for (int j = 0; j < n->nwfn; j++) {
        const WinFunc *f = &n->wfn[j];
        buf_printf(out, "%s%s", j ? ", " : "", nm[f->kind]);
        if (f->col >= 0)
            buf_printf(out, "(%s#%d", f->distinct ? "distinct " : "", f->col);
        if (f->kind == WIN_LAG || f->kind == WIN_LEAD || f->kind == WIN_NTH_VALUE) {
            buf_printf(out, ", %lld", (long long)f->offset);
            if (f->def_col >= 0)
                buf_printf(out, ", #%d", f->def_col);
        }
        if (f->col >= 0)
            buf_puts(out, ")");
        if (f->ignore_nulls)
            buf_puts(out, " ignore nulls");
        if (f->kind == WIN_NTILE)
            buf_printf(out, "(%lld)", (long long)f->offset);
        if (win_framed(f->kind)) {
            bool fl = !f->rows && n->nord == 1 && type_phys(n->types[n->ord[0]]) == PHYS_F64;
            static const char *ex[] = {"", " exclude current row", " exclude group",
                                       " exclude ties"};
            buf_printf(out, " %s between ", f->rows ? "rows" : f->groups ? "groups" : "range");
            explain_bound(f->start, f->start_n, f->start_f, fl, f->start_months, out);
            buf_puts(out, " and ");
            explain_bound(f->end, f->end_n, f->end_f, fl, f->end_months, out);
            buf_puts(out, ex[f->exclude]);
        }
    }
    buf_puts(out, "]");
}

static const char *aggname(AggKind k)
{
    static const char *n[] = {"count(*)",        "count",           "sum",     "avg",
                              "min",             "max",             "string_agg", "bit_and",
                              "bit_or",          "bit_xor",         "percentile_cont",
                              "percentile_disc", "mode",          "var_samp",
                              "var_pop",         "stddev_samp",     "stddev_pop",
                              "covar_pop",       "covar_samp",      "corr",
                              "arg_min",         "arg_max",         "array_agg",
                              "json_agg",        "json_object_agg"};
    return n[k];
}

static void explain_nodes(const Circuit *c, Buf *out, const char *ind);

void circuit_explain(const Circuit *c, Buf *out)
{
    char tb[64];
    buf_puts(out, "relations:\n");
    for (int i = 0; i < c->nrels; i++) {
        const Relation *r = &c->rels[i];
        buf_printf(out, "  %s %s%s (", r->is_table ? "table" : "view", r->name,
                   r->materialized ? " [materialized]" : r->retain ? " [retain_input]" : "");
        for (int j = 0; j < r->ncol; j++)
            buf_printf(out, "%s%s %s%s", j ? ", " : "", r->colnames[j],
                       type_name(r->types[j], tb, sizeof(tb)), r->types[j].nullable ? "" : " NOT NULL");
        buf_printf(out, ") = node %d", r->node);
        if (r->connectors)
            buf_printf(out, ", %d connector(s)", cJSON_GetArraySize(r->connectors));
        buf_puts(out, "\n");
    }
    buf_puts(out, "circuit:\n");
    explain_nodes(c, out, "  ");
}

/* The nodes of c, each line indented by ind; a fixpoint's inner circuit
   below it, further indented. */
static void explain_nodes(const Circuit *c, Buf *out, const char *ind)
{
    char tb[64];
    for (int i = 0; i < c->nnodes; i++) {
        const CNode *n = c->nodes[i];
        buf_printf(out, "%s%d: %s", ind, n->id, opname(n->k));
        if (n->nin) {
            buf_puts(out, "(");
            for (int j = 0; j < n->nin; j++)
                buf_printf(out, "%s%d", j ? ", " : "", n->in[j]);
            buf_puts(out, ")");
        }
        switch (n->k) {
        case OPK_SOURCE:
        case OPK_SINK:
            buf_printf(out, " %s", c->rels[n->rel].name);
            if (n->k == OPK_SOURCE && c->rels[n->rel].wm_col >= 0)
                buf_printf(out, " lateness #%d %lld", c->rels[n->rel].wm_col,
                           (long long)c->rels[n->rel].lateness);
            break;
        case OPK_FINAL:
            buf_printf(out, " when the watermark of #%d passes", n->final_col);
            break;
        case OPK_TEMPORAL:
            buf_printf(out, " #%d %s NOW() %+lld us (clock: node %d)", n->tcol,
                       n->tupper ? "<=" : ">=", (long long)n->toff, n->tclock);
            break;
        case OPK_UNNEST:
            buf_printf(out, " #%d", n->unnest_col);
            for (int j = 1; j < n->unnest_n; j++)
                buf_printf(out, ", #%d", n->unnest_col + j);
            buf_puts(out, n->ordinality ? " with ordinality" : "");
            buf_puts(out, n->unnest_outer ? " outer" : "");
            if (n->filter) {
                buf_puts(out, " on ");
                expr_print(n->filter, out);
            }
            break;
        case OPK_MAP:
            if (n->filter) {
                buf_puts(out, " where ");
                expr_print(n->filter, out);
            }
            buf_puts(out, " project [");
            for (int j = 0; j < n->ncol; j++) {
                if (j)
                    buf_puts(out, ", ");
                expr_print(n->proj[j], out);
            }
            buf_puts(out, "]");
            break;
        case OPK_AGG:
            buf_printf(out, " group by #0..#%d", n->ngroup - 1);
            if (n->global)
                buf_puts(out, " (global)");
            buf_puts(out, " [");
            for (int j = 0; j < n->naggs; j++) {
                const AggSpec *a = &n->aggs[j];
                buf_printf(out, "%s%s", j ? ", " : "", aggname(a->kind));
                if (a->kind != AGG_COUNT_STAR)
                    buf_printf(out, "(%s#%d", a->distinct ? "distinct " : "", a->col);
                for (int k = 0; k < a->nord; k++)
                    buf_printf(out, "%s#%d%s", k ? ", " : " order by ", a->ord[k],
                               a->ord_desc[k] ? " desc" : "");
                if (a->kind != AGG_COUNT_STAR)
                    buf_puts(out, ")");
            }
            buf_printf(out, "]%s", n->linear ? " combine-before-exchange" : "");
            break;
        case OPK_JOIN:
            buf_puts(out, " on");
            for (int j = 0; j < n->nkeys; j++)
                buf_printf(out, "%s left#%d = right#%d", j ? " and" : "", n->lkeys[j], n->rkeys[j]);
            if (!n->nkeys)
                buf_puts(out, " true (cross product)");
            break;
        case OPK_TOPK: {
            static const char *rk[] = {"", " row_number", " rank", " dense_rank", " with ties"};
            explain_window_order(n, out);
            if (n->limit >= 0)
                buf_printf(out, " limit %lld", (long long)n->limit);
            if (n->offset > 0)
                buf_printf(out, " offset %lld", (long long)n->offset);
            buf_puts(out, rk[n->rank]);
            break;
        }
        case OPK_WINDOW:
            explain_window_order(n, out);
            explain_wfn(n, out);
            break;
        case OPK_ASOF:
            explain_window_order(n, out);
            buf_printf(out, " %s%s left columns %d", n->asof_outer ? "left " : "",
                       n->asof_back ? "backward" : "forward", n->asof_nl);
            break;
        default:
            break;
        }
        buf_puts(out, " -> (");
        for (int j = 0; j < n->ncol; j++)
            buf_printf(out, "%s%s", j ? ", " : "", type_name(n->types[j], tb, sizeof(tb)));
        buf_puts(out, ")\n");
        if (n->k == OPK_FIXPOINT) {
            char deeper[64];
            snprintf(deeper, sizeof(deeper), "%s    ", ind);
            if (n->nrec == 1)
                buf_printf(out, "%s  recursive definition (0: the relation's changes, 1..%d: the "
                                "inputs', %d: its result):\n",
                           ind, n->nin, n->sub_outs[0]);
            else {
                buf_printf(out, "%s  recursive definitions (0..%d: the relations' changes, "
                                "%d..%d: the inputs', results:",
                           ind, n->nrec - 1, n->nrec, n->nrec + n->nin - 1);
                for (int k = 0; k < n->nrec; k++)
                    buf_printf(out, " %d", n->sub_outs[k]);
                buf_puts(out, "):\n");
            }
            explain_nodes(n->sub, out, deeper);
        }
    }
}
