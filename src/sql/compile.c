/*
 * sql/compile.c - the compiler's entry (sql.h): parses a program
 * (parse*.c) and plans it statement by statement into a Circuit.
 *
 * CREATE TABLE declares a relation fed by an OPK_SOURCE node (plus
 * OPK_UPSERT with a PRIMARY KEY); CREATE VIEW plans its query (plan.c),
 * adds a top-k node for ORDER BY ... LIMIT (plan_window.c) and a sink.
 * Both take their WITH properties ('connectors', 'materialized',
 * 'append_only') here. CREATE FUNCTION defines a SQL function that later
 * statements call (bind_udf.c inlines each call). One-shot queries declare their input tables ahead
 * of the text (TableDecl) and keep each view's presentation order
 * (CC_PRESENT). Everything lives in the circuit's arena; circuit_free
 * releases it and the parsed connector JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "sql_int.h"
#include "../circuit/watermark.h"
#include "../expr/tz.h"

/* A LIMIT/OFFSET operand: a non-negative integer literal. */
static int limit_value(P *p, Ast *e, const char *what, int64_t *out)
{
    if (!e) {
        *out = -1;
        return 0;
    }
    if (e->k != A_INT)
        return perr(p, SL_EUNSUPPORTED, e->line, e->col,
                    "%s must be an integer literal (expressions are not supported yet)", what);
    *out = strtoll(e->str, NULL, 10);
    return 0;
}

static int cmp_name_index(const void *a, const void *b, void *arg)
{
    char *const *names = arg;
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcasecmp(names[x], names[y]);
    return c ? c : (x > y) - (x < y);
}

/* The first i (in order) such that names[i] equals an earlier name (case
   folded), or -1: sorted, in O(n log n) (a select list may be long). */
static int first_repeated_name(P *p, char *const *names, int n)
{
    int *ix = arena_alloc(p->a, sizeof(int) * (size_t)(n + 1)), first = -1;
    for (int i = 0; i < n; i++)
        ix[i] = i;
    qsort_r(ix, (size_t)n, sizeof(int), cmp_name_index, (void *)names);
    for (int k = 1; k < n; k++) /* ix[k] repeats ix[k-1]'s name at a later index */
        if (!strcasecmp(names[ix[k]], names[ix[k - 1]]) && (first < 0 || ix[k] < first))
            first = ix[k];
    return first;
}

static Relation *add_rel(P *p, const char *name, int line, int col)
{
    Circuit *c = p->c;
    if (circuit_find_rel(c, name) >= 0) {
        perr(p, SL_ESEMANTIC, line, col, "a table or view named \"%s\" already exists", name);
        return NULL;
    }
    Relation *r = VEC_PUSH_ARENA(p->a, c->rels, c->nrels, p->cap_rels);
    memset(r, 0, sizeof(*r));
    r->name = (char *)name;
    r->limit = r->offset = -1;
    r->line = line;
    r->col = col;
    r->sink = -1;
    r->wm_col = r->time_col = -1;
    r->emit_final = -1;
    return r;
}

/* Position in the SQL text of byte `off` inside a property value. */
static void value_pos(const Property *pr, size_t off, int *line, int *col)
{
    *line = pr->vline;
    *col = pr->vcol;
    for (size_t i = 0; i < off && pr->value[i]; i++) {
        if (pr->value[i] == '\n') {
            (*line)++;
            *col = 1;
        } else
            (*col)++;
    }
}

static int apply_props(P *p, Stmt *s, Relation *r)
{
    for (int i = 0; i < s->nprops; i++) {
        Property *pr = &s->props[i];
        if (!strcasecmp(pr->key, "connectors")) {
            cJSON *j = cJSON_ParseWithOpts(pr->value, NULL, 1);
            if (!j) {
                const char *e = cJSON_GetErrorPtr();
                size_t off = e && e >= pr->value ? (size_t)(e - pr->value) : 0;
                int line, col;
                value_pos(pr, off, &line, &col);
                return perr(p, SL_ECONFIG, line, col,
                            "invalid JSON in 'connectors' of %s near \"%.20s\"", r->name,
                            pr->value + off);
            }
            if (!cJSON_IsArray(j)) {
                cJSON_Delete(j);
                return perr(p, SL_ECONFIG, pr->vline, pr->vcol,
                            "'connectors' of %s must be a JSON array", r->name);
            }
            if (r->connectors)
                cJSON_Delete(r->connectors);
            r->connectors = j;
            r->conn_line = pr->vline;
            r->conn_col = pr->vcol;
        } else if (!strcasecmp(pr->key, "materialized")) {
            if (strcasecmp(pr->value, "true") && strcasecmp(pr->value, "false"))
                return perr(p, SL_ECONFIG, pr->vline, pr->vcol,
                            "'materialized' must be 'true' or 'false', not '%s'", pr->value);
            r->materialized = r->materialized || !strcasecmp(pr->value, "true");
        } else if (!strcasecmp(pr->key, "retain_input")) {
            if (!r->is_table)
                return perr(p, SL_ECONFIG, pr->line, pr->col,
                            "'retain_input' applies to tables, not to view %s", r->name);
            if (strcasecmp(pr->value, "true") && strcasecmp(pr->value, "false"))
                return perr(p, SL_ECONFIG, pr->vline, pr->vcol,
                            "'retain_input' must be 'true' or 'false', not '%s'", pr->value);
            r->retain = r->retain || !strcasecmp(pr->value, "true");
        } else if (!strcasecmp(pr->key, "append_only")) {
            /* a promise about the input: a temporal join may read the table as
               a history (plan_asof.c) */
            if (!r->is_table)
                return perr(p, SL_ECONFIG, pr->line, pr->col,
                            "'append_only' applies to tables, not to view %s", r->name);
            if (strcasecmp(pr->value, "true") && strcasecmp(pr->value, "false"))
                return perr(p, SL_ECONFIG, pr->vline, pr->vcol,
                            "'append_only' must be 'true' or 'false', not '%s'", pr->value);
            r->append_only = r->append_only || !strcasecmp(pr->value, "true");
        } else if (!strcasecmp(pr->key, "emit_final")) {
            /* a column name (Feldera's spelling), or 'true': the first
               column with a watermark (checked in check_emit_final) */
            if (r->is_table)
                return perr(p, SL_ECONFIG, pr->line, pr->col,
                            "'emit_final' applies to views, not to table %s", r->name);
            r->emit_final = -2; /* 'true' */
            if (strcasecmp(pr->value, "true")) {
                r->emit_final = -1;
                for (int j = 0; j < r->ncol - r->nhidden; j++)
                    if (!strcasecmp(r->colnames[j], pr->value))
                        r->emit_final = j;
                if (r->emit_final < 0)
                    return perr(p, SL_ECONFIG, pr->vline, pr->vcol,
                                "'emit_final' of %s names \"%s\", not one of its columns",
                                r->name, pr->value);
            }
        } else {
            return perr(p, SL_ECONFIG, pr->line, pr->col,
                        "unknown property '%s' on %s (known: connectors, materialized, "
                        "retain_input, append_only, emit_final)", pr->key, r->name);
        }
    }
    return 0;
}

static void add_sink(P *p, Relation *r, int rel_index)
{
    CNode *src = p->c->nodes[r->node];
    CNode *s = sql__add_node(p, OPK_SINK, 1, src->ncol);
    s->in[0] = r->node;
    s->rel = rel_index;
    s->label = r->name;
    memcpy(s->types, src->types, sizeof(SqlType) * (size_t)src->ncol);
    r->sink = s->id;
}

/* Column col of table r gets LATENESS x: a constant INTERVAL DAY TO
   SECOND over a TIMESTAMP (microseconds) or DATE (whole days) column, an
   integer over an integer column. */
static int set_lateness(P *p, Relation *r, int col, Ast *x, int line, int pos)
{
    if (r->wm_col >= 0 && r->wm_col != col)
        return perr(p, SL_EUNSUPPORTED, line, pos,
                    "table %s already has LATENESS on column %s: one watermark column per "
                    "table is supported", r->name, r->colnames[r->wm_col]);
    Scope none = {NULL, 0};
    BindCtx bc = {&none, NULL, "LATENESS"};
    Expr *e = sql__bind(p, &bc, x);
    if (!e)
        return p->err->code;
    SqlType t = r->types[col];
    bool interval = e->k == E_CONST && !e->cnull && e->t.kind == TK_INTERVAL_DT;
    bool integer = e->k == E_CONST && !e->cnull && type_is_integer(e->t.kind);
    int64_t v;
    if ((type_is_ts(t.kind) || t.kind == TK_DATE) && interval) {
        v = t.kind == TK_DATE ? (e->ci + 86400000000LL - 1) / 86400000000LL /* whole days */ : e->ci;
    } else if (type_is_integer(t.kind) && integer) {
        v = e->ci;
    } else if (type_is_integer(t.kind) || type_is_ts(t.kind) || t.kind == TK_DATE) {
        return perr(p, SL_ESEMANTIC, x->line, x->col,
                    "LATENESS of column %s (%s) must be a constant %s", r->colnames[col],
                    tname(t), type_is_integer(t.kind) ? "integer" : "INTERVAL (e.g. INTERVAL '1' HOUR)");
    } else {
        return perr(p, SL_EUNSUPPORTED, line, pos,
                    "LATENESS on column %s of type %s is not supported (TIMESTAMP, "
                    "TIMESTAMPTZ, DATE and integer columns are)", r->colnames[col], tname(t));
    }
    if (v < 0)
        return perr(p, SL_ESEMANTIC, x->line, x->col, "LATENESS must not be negative");
    r->wm_col = col;
    r->lateness = v;
    return 0;
}

/* LATENESS t.col expr; (the statement form), for a table declared before. */
static int plan_lateness(P *p, Stmt *s)
{
    int rel = circuit_find_rel(p->c, s->name);
    if (rel < 0)
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "LATENESS names \"%s\", which is not a table declared before it", s->name);
    Relation *r = &p->c->rels[rel];
    if (!r->is_table)
        return perr(p, SL_EUNSUPPORTED, s->line, s->col,
                    "LATENESS on a view (%s) is not supported yet: declare it on the column of "
                    "the table the view reads", s->name);
    for (int i = 0; i < r->ncol; i++)
        if (!strcasecmp(r->colnames[i], s->lat_colname))
            return set_lateness(p, r, i, s->lateness, s->line, s->col);
    return perr(p, SL_ESEMANTIC, s->name_line, s->name_col, "column \"%s\" not found in %s",
                s->lat_colname, s->name);
}

/* Views with 'emit_final' (an OPK_FINAL node before the sink, plan_view):
   the column must have a watermark (known once every LATENESS statement is
   read); 'true' takes the first column that has one. */
static int check_emit_final(P *p)
{
    Circuit *c = p->c;
    int64_t *relwm = arena_alloc(p->a, sizeof(int64_t) * (size_t)(c->nrels + 1));
    for (int r = 0; r < c->nrels; r++)
        relwm[r] = c->rels[r].is_table && c->rels[r].wm_col >= 0 ? 0 : WM_NONE;
    int64_t **cols = wm_cols_new(c);
    wm_propagate(c, relwm, cols);
    int rc = 0;
    for (int i = 0; i < c->nrels && !rc; i++) {
        Relation *r = &c->rels[i];
        if (r->emit_final == -1 || r->is_table)
            continue;
        int node = c->nodes[r->node]->in[0]; /* r->node is the OPK_FINAL node */
        if (r->emit_final == -2)
            for (int j = 0; j < r->ncol - r->nhidden && r->emit_final == -2; j++)
                if (cols[node][j] != WM_NONE)
                    r->emit_final = j;
        if (r->emit_final < 0 || cols[node][r->emit_final] == WM_NONE) {
            char what[160];
            if (r->emit_final >= 0)
                snprintf(what, sizeof(what), "its column %s has none", r->colnames[r->emit_final]);
            else
                snprintf(what, sizeof(what), "none of its columns has one");
            rc = perr(p, SL_ESEMANTIC, r->line, r->col,
                      "'emit_final' on view %s needs a column with a watermark, and %s (a "
                      "watermark comes from a table's LATENESS column through projections "
                      "(column + constant), TUMBLE/HOP window bounds, GROUP BY keys, joins on "
                      "it and DISTINCT)", r->name, what);
            break;
        }
        c->nodes[r->node]->final_col = r->emit_final;
    }
    wm_cols_free(c, cols);
    return rc;
}

static int plan_table(P *p, Stmt *s)
{
    Relation *r = add_rel(p, s->name, s->name_line, s->name_col);
    if (!r)
        return p->err->code;
    r->is_table = true;
    r->ncol = s->ncols;
    r->colnames = arena_alloc(p->a, sizeof(char *) * (size_t)s->ncols);
    r->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)s->ncols);
    for (int i = 0; i < s->ncols; i++) {
        for (int j = 0; j < i; j++)
            if (!strcasecmp(s->cols[i].name, s->cols[j].name))
                return perr(p, SL_ESEMANTIC, s->cols[i].line, s->cols[i].col,
                            "column \"%s\" specified more than once", s->cols[i].name);
        r->colnames[i] = s->cols[i].name;
        r->types[i] = s->cols[i].type;
    }
    if (s->npk) {
        r->pk = arena_alloc(p->a, sizeof(int) * (size_t)s->npk);
        r->npk = s->npk;
        for (int k = 0; k < s->npk; k++) {
            int found = -1;
            for (int i = 0; i < s->ncols; i++)
                if (!strcasecmp(s->cols[i].name, s->pk[k]))
                    found = i;
            if (found < 0)
                return perr(p, SL_ESEMANTIC, s->line, s->col,
                            "PRIMARY KEY column \"%s\" is not a column of %s", s->pk[k], s->name);
            r->pk[k] = found;
            r->types[found].nullable = 0; /* key columns are NOT NULL */
        }
    }
    if (apply_props(p, s, r))
        return p->err->code;
    for (int i = 0; i < s->ncols; i++)
        if (s->cols[i].lateness &&
            set_lateness(p, r, i, s->cols[i].lateness, s->cols[i].lat_line, s->cols[i].lat_col))
            return p->err->code;
    CNode *n = sql__add_node(p, OPK_SOURCE, 0, r->ncol);
    n->rel = (int)(r - p->c->rels);
    n->label = r->name;
    memcpy(n->types, r->types, sizeof(SqlType) * (size_t)r->ncol);
    r->node = n->id;
    if (r->npk) {
        CNode *u = sql__add_node(p, OPK_UPSERT, 1, r->ncol);
        u->in[0] = n->id;
        u->rel = n->rel;
        u->pk = r->pk;
        u->npk = r->npk;
        u->label = r->name;
        memcpy(u->types, r->types, sizeof(SqlType) * (size_t)r->ncol);
        r->node = u->id;
    }
    if (r->materialized)
        add_sink(p, r, n->rel);
    else if (r->retain) { /* the same sink, but not the table's change stream */
        add_sink(p, r, n->rel);
        r->sink = -1;
    }
    return 0;
}

/* The source node of the program's clock table `now` (plan_temporal.c),
   added on first use: one TIMESTAMP NOT NULL column with LATENESS 0, so
   its watermark is the largest time pushed. A table `now` the program
   declares is used when it has that shape (LATENESS of any size). */
int sql__clock_node(P *p, const Ast *at)
{
    int i = circuit_find_rel(p->c, "now");
    if (i >= 0) {
        const Relation *r = &p->c->rels[i];
        if (!r->is_table || r->ncol != 1 || !type_is_ts(r->types[0].kind) || r->wm_col != 0 ||
            r->npk)
            return perr(p, SL_ESEMANTIC, at->line, at->col,
                        "NOW() reads the clock table \"now\", but the program's %s \"%s\" is not "
                        "one: a clock table has one TIMESTAMP column with LATENESS",
                        r->is_table ? "table" : "view", r->name),
                   -1;
        return r->node;
    }
    Relation *r = add_rel(p, "now", at->line, at->col);
    if (!r)
        return -1;
    r->is_table = true;
    r->ncol = 1;
    r->colnames = arena_alloc(p->a, sizeof(char *));
    r->colnames[0] = "ts";
    r->types = arena_alloc(p->a, sizeof(SqlType));
    r->types[0] = type_make(TK_TIMESTAMP, false);
    r->wm_col = 0;
    r->lateness = 0;
    r->clock = true;
    CNode *n = sql__add_node(p, OPK_SOURCE, 0, 1);
    n->rel = (int)(r - p->c->rels);
    n->label = r->name;
    n->types[0] = r->types[0];
    r->node = n->id;
    return n->id;
}

static int view_rel(P *p, Stmt *s, PRel q, int first_node, OrderOut ord, int64_t limit,
                    int64_t offset);
static int plan_recursive(P *p, Stmt *s);

static int plan_view(P *p, Stmt *s)
{
    PRel q;
    OrderOut ord = {0};
    int64_t limit = -1, offset = -1;
    Select *sq = s->query;
    bool present = p->flags & CC_PRESENT;
    if (sql__rec_declared(p, s->name)) /* DECLARE RECURSIVE VIEW: a fixed point */
        return plan_recursive(p, s);
    if (limit_value(p, sq->limit, "LIMIT", &limit) || limit_value(p, sq->offset, "OFFSET", &offset))
        return p->err->code;
    bool lim = sq->limit || sq->offset;
    int first_node = p->c->nnodes;
    if (sql__plan_query_ord(p, sq, &q, present || lim ? &ord : NULL))
        return p->err->code;
    return view_rel(p, s, q, first_node, ord, limit, offset);
}

/* The relation of view s, whose query is planned (q; ORDER BY, LIMIT and
   OFFSET as given): top-k, properties, 'emit_final', sink. */
static int view_rel(P *p, Stmt *s, PRel q, int first_node, OrderOut ord, int64_t limit,
                    int64_t offset)
{
    Select *sq = s->query;
    bool present = p->flags & CC_PRESENT;
    bool lim = sq->limit || sq->offset;
    /* ORDER BY ... LIMIT: a top-k node (plan_window.c) */
    if (sq->with_ties && !sq->norder)
        return perr(p, SL_ESEMANTIC, sq->limit_line, sq->limit_col,
                    "FETCH ... WITH TIES needs ORDER BY (the ties are rows equal on its keys)");
    if (lim && sql__plan_topk(p, &q, &ord, limit, offset, sq->with_ties, present))
        return p->err->code;
    if (!present)
        limit = offset = -1;
    Relation *r = add_rel(p, s->name, s->name_line, s->name_col);
    if (!r)
        return p->err->code;
    int idx = (int)(r - p->c->rels);
    r->materialized = s->materialized;
    r->ncol = q.s.n;
    r->node = q.node;
    if (s->ncol_aliases && s->ncol_aliases != q.s.n)
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "view %s names %d columns but its query has %d", s->name, s->ncol_aliases,
                    q.s.n);
    r->limit = limit;
    r->offset = offset;
    r->with_ties = present && sq->with_ties;
    if (present) {
        r->norder = ord.n;
        r->order_col = ord.col;
        r->order_desc = ord.desc;
        r->order_nulls_first = ord.nulls_first;
        r->nhidden = ord.nhidden;
        r->ncol += ord.nhidden;
    }
    r->colnames = arena_alloc(p->a, sizeof(char *) * (size_t)(r->ncol + 1));
    r->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)(r->ncol + 1));
    for (int i = q.s.n; i < r->ncol; i++) {
        char *b = arena_alloc(p->a, 32);
        snprintf(b, 32, "$order%d", i - q.s.n + 1);
        r->colnames[i] = b;
        r->types[i] = p->c->nodes[q.node]->types[i];
    }
    for (int i = 0; i < q.s.n; i++) {
        r->colnames[i] = s->ncol_aliases ? s->col_aliases[i] : (char *)q.s.c[i].name;
        r->types[i] = q.s.c[i].t;
    }
    int dup = present ? -1 : first_repeated_name(p, r->colnames, q.s.n); /* a query's
                                                          result may repeat names */
    if (dup >= 0)
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "view %s has two columns named \"%s\"; give one an alias", s->name,
                    r->colnames[dup]);
    if (apply_props(p, s, r))
        return p->err->code;
    if (r->emit_final != -1) {
        if (lim || r->nhidden)
            return perr(p, SL_EUNSUPPORTED, s->name_line, s->name_col,
                        "'emit_final' on view %s with ORDER BY ... LIMIT is not supported",
                        s->name);
        CNode *src = p->c->nodes[r->node];
        CNode *f = sql__add_node(p, OPK_FINAL, 1, src->ncol);
        f->in[0] = r->node;
        f->final_col = r->emit_final; /* -2 ('true') resolved by check_emit_final */
        f->label = r->name;
        memcpy(f->types, src->types, sizeof(SqlType) * (size_t)src->ncol);
        r->node = f->id;
    }
    /* every view gets a sink: it counts the view's changes (stats), feeds
       its output connectors and, when materialized, keeps its contents */
    add_sink(p, r, idx);
    sql__topk_rewrite(p, first_node); /* rank <= k over a window: top-k */
    return 0;
}

/* Is recursive view i of p->recdecl ready: its CREATE VIEW seen, and so
   that of every declared view it reaches (reach: the transitive closure
   of "reads" among the declared views, n x n)? */
static bool rec_ready(const P *p, const bool *reach, int i)
{
    int n = p->nrecdecl;
    if (!p->recview[i])
        return false;
    for (int j = 0; j < n; j++)
        if (reach[i * n + j] && !p->recview[j])
            return false;
    return true;
}

/* CREATE VIEW s of a declared recursive view: planned, with the declared
   views it recurses with (a strongly connected component of "reads"), as
   one fixed point once all their CREATE VIEWs are seen and the declared
   views they read are planned (plan_rec.c). Each view is then added as a
   relation in the order of their statements. */
static int plan_recursive(P *p, Stmt *s)
{
    for (int i = 0; i < p->nrecdecl; i++)
        if (!strcasecmp(p->recdecl[i]->name, s->name))
            p->recview[i] = s;
    for (;;) {
        int n = p->nrecdecl;
        bool *reach = arena_zalloc(p->a, (size_t)(n * n) + 1);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                reach[i * n + j] = p->recview[i] && sql__rec_reads(p->recview[i], p->recdecl[j]->name);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n && reach[i * n + k]; j++)
                    reach[i * n + j] = reach[i * n + j] || reach[k * n + j];
        /* a ready view whose every reached view reaches it back: its
           component reads no unplanned declared view outside it */
        int pick = -1;
        for (int i = 0; i < n && pick < 0; i++) {
            if (!rec_ready(p, reach, i))
                continue;
            bool sink = true;
            for (int j = 0; j < n && sink; j++)
                sink = !reach[i * n + j] || j == i || reach[j * n + i];
            if (sink)
                pick = i;
        }
        if (pick < 0)
            return 0;
        /* the component, in the order of the CREATE VIEW statements */
        Stmt **decls = arena_alloc(p->a, sizeof(Stmt *) * (size_t)n);
        Stmt **views = arena_alloc(p->a, sizeof(Stmt *) * (size_t)n);
        int K = 0;
        for (int st = 0; st < p->prog->n; st++)
            for (int j = 0; j < n; j++)
                if (p->recview[j] == p->prog->stmts[st] &&
                    (j == pick || (reach[pick * n + j] && reach[j * n + pick]))) {
                    decls[K] = p->recdecl[j];
                    views[K++] = p->recview[j];
                }
        PRel *q = arena_zalloc(p->a, sizeof(PRel) * (size_t)K);
        for (int k = 0; k < K; k++)
            q[k].s.c = arena_zalloc(p->a, sizeof(SCol) * (size_t)(decls[k]->ncols + 1));
        int first_node = p->c->nnodes;
        if (sql__plan_rec_views(p, decls, views, K, q))
            return p->err->code;
        for (int k = 0; k < K; k++) {
            for (int j = 0; j < p->nrecdecl; j++)
                if (p->recdecl[j] == decls[k]) {
                    p->recdecl[j] = p->recdecl[--p->nrecdecl];
                    p->recview[j] = p->recview[--p->nrecview];
                }
            p->owner = p->c->nrels;
            if (view_rel(p, views[k], q[k], first_node, (OrderOut){0}, -1, -1))
                return p->err->code;
        }
    }
}

/* DECLARE RECURSIVE VIEW s: its CREATE VIEW plans it as a fixed point. */
static int declare_recursive(P *p, Stmt *s)
{
    if (circuit_find_rel(p->c, s->name) >= 0 || sql__rec_declared(p, s->name))
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "relation %s already exists (DECLARE RECURSIVE VIEW comes before its "
                    "CREATE VIEW, once)",
                    s->name);
    for (int i = 0; i < s->ncols; i++)
        for (int j = 0; j < i; j++)
            if (!strcasecmp(s->cols[i].name, s->cols[j].name))
                return perr(p, SL_ESEMANTIC, s->cols[i].line, s->cols[i].col,
                            "recursive view %s declares column %s twice", s->name,
                            s->cols[i].name);
    *VEC_PUSH_ARENA(p->a, p->recdecl, p->nrecdecl, p->cap_recdecl) = s;
    *VEC_PUSH_ARENA(p->a, p->recview, p->nrecview, p->cap_recview) = NULL;
    return 0;
}

int circuit_find_rel(const Circuit *c, const char *name)
{
    for (int i = 0; i < c->nrels; i++)
        if (!strcasecmp(c->rels[i].name, name))
            return i;
    return -1;
}

static int declare_table(P *p, const TableDecl *d)
{
    Relation *r = add_rel(p, arena_strndup(p->a, d->name, strlen(d->name)), 1, 1);
    if (!r)
        return p->err->code;
    r->is_table = true;
    r->append_only = d->append_only;
    r->time_col = d->has_time && d->time_col < d->ncol ? d->time_col : -1;
    r->ncol = d->ncol;
    r->limit = r->offset = -1;
    r->colnames = arena_alloc(p->a, sizeof(char *) * (size_t)(d->ncol + 1));
    r->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)(d->ncol + 1));
    for (int i = 0; i < d->ncol; i++) {
        r->colnames[i] = arena_strndup(p->a, d->colnames[i], strlen(d->colnames[i]));
        r->types[i] = d->types[i];
    }
    CNode *n = sql__add_node(p, OPK_SOURCE, 0, r->ncol);
    n->rel = (int)(r - p->c->rels);
    n->label = r->name;
    memcpy(n->types, r->types, sizeof(SqlType) * (size_t)r->ncol);
    r->node = n->id;
    return 0;
}

int circuit_compile(const char *sql, Circuit **out, Err *err)
{
    return circuit_compile_with(sql, NULL, 0, 0, out, err);
}

int circuit_compile_with(const char *sql, const TableDecl *decl, int ndecl, int flags,
                         Circuit **out, Err *err)
{
    Err local = {0};
    Program *prog;
    Circuit *c = sl_calloc(1, sizeof(*c));
    c->arena = arena_new(64 * 1024);
    P p = {.a = c->arena, .c = c, .err = err ? err : &local, .flags = flags, .tz = TZ_UTC};
    for (int i = 0; i < ndecl; i++) {
        p.owner = c->nrels;
        if (declare_table(&p, &decl[i]))
            goto out_fail;
    }
    if (sql_parse(sql, c->arena, &prog, p.err))
        goto out_fail;
    p.tz = c->tz = prog->tz;
    c->types = prog->types;
    c->ntypes = prog->ntypes;
    if (prog->n == 0) {
        err_setpos(p.err, SL_ESEMANTIC, 1, 1, "the program is empty: no CREATE TABLE or VIEW");
        goto out_fail;
    }
    p.prog = prog;
    p.text = sql;
    for (int i = 0; i < prog->n; i++) {
        Stmt *s = prog->stmts[i];
        p.owner = c->nrels; /* the relation this statement adds */
        p.stmt = i;
        p.ncalls = 0;
        if (s->k == S_DECLARE_VIEW) {
            if (declare_recursive(&p, s))
                goto out_fail;
            continue;
        }
        if ((s->k == S_CREATE_TABLE      ? plan_table(&p, s)
             : s->k == S_LATENESS        ? plan_lateness(&p, s)
             : s->k == S_CREATE_FUNCTION ? sql__define_function(&p, s)
                                         : plan_view(&p, s)))
            goto out_fail;
        if (s->k == S_CREATE_VIEW && p.ncalls && c->nrels &&
            !strcasecmp(c->rels[c->nrels - 1].name, s->name)) { /* the functions it calls
                                                                   (bind_udf.c) */
            Relation *r = &c->rels[c->nrels - 1];
            r->funcs = arena_alloc(p.a, sizeof(int) * (size_t)p.ncalls);
            memcpy(r->funcs, p.calls, sizeof(int) * (size_t)p.ncalls);
            r->nfuncs = p.ncalls;
        }
    }
    for (int i = 0; i < p.nrecdecl; i++) {
        if (p.recview[i])
            continue;
        Stmt *d = p.recdecl[i];
        err_setpos(p.err, SL_ESEMANTIC, d->name_line, d->name_col,
                   "recursive view %s is declared but no CREATE VIEW %s follows", d->name,
                   d->name);
        goto out_fail;
    }
    sql__prune_joins(&p);
    if (check_emit_final(&p))
        goto out_fail;
    *out = c;
    return 0;
out_fail:
    circuit_free(c);
    return p.err->code;
}

void circuit_free(Circuit *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nrels; i++)
        if (c->rels[i].connectors)
            cJSON_Delete(c->rels[i].connectors);
    arena_free(c->arena);
    sl_free(c);
}
