/*
 * sql/progdiff.c - the program diff (progdiff.h): fingerprints of the
 * compiled circuits' nodes, then relation by relation what changed and
 * what that means on restart. docs/bootstrapping.md states the rules for
 * users; this header states them for the code.
 *
 * Fingerprints. Node ids are a topological order (circuit.h), so one pass
 * in id order hashes each node's canonical bytes: its kind, output types
 * and kind-specific fields (expressions serialized in prefix order, with
 * their types and constants), followed by its inputs' fingerprints. A
 * source is its table's identity instead: name, column names and types,
 * and the 'connectors' JSON with object keys sorted (a different source
 * is a different history). A sink adds whether its relation is
 * materialized. Labels and owners are left out, so text layout, comments,
 * keyword case and node numbering never count.
 *
 * SQL functions are inlined where they are called, so a view that calls a
 * changed function computes something else and its fingerprints change;
 * adding or removing a function alone changes no node. The functions a
 * view calls (Relation.funcs) whose definition differs (or that the old
 * program lacks) label its change PD_FUNCTIONS.
 *
 * A view's own definition is compared with a local fingerprint: its nodes
 * hashed the same way, but a node of another relation counts as that
 * relation's name. Equal local and different full fingerprints mean a
 * relation it reads changed (PD_INPUTS, naming them). A local fingerprint
 * also changes when an input's columns change (the view compiles to other
 * node widths): when the texts are given, a view whose statement has the
 * same tokens (identifiers case-folded; layout and comments gone) is then
 * not counted as edited. Tokens only label the change: what is kept or
 * recomputed follows the fingerprints alone.
 *
 * Stored history. The old checkpoint holds the integral of a stream when a
 * stateful old node keeps it: a join (both inputs), distinct, top-k and
 * window (their input), a materialized sink (its input); and a stateful
 * node's own output can be derived from its state (aggregate, upsert,
 * distinct, top-k, window, join). A new node is `stored` (its contents
 * can be rebuilt without reading a source) when it is a constant, when an
 * old node with its fingerprint keeps it as above, or when it is not a
 * source and all its inputs are stored (it is then computed from their
 * contents). A new or changed view whose node is stored is recomputed;
 * otherwise the tables reached backwards through nodes that are not
 * stored are read again, for the new part of the circuit only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../base/hash.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "../expr/tz.h"
#include "lexer.h"
#include "../expr/nested.h"
#include "progdiff.h"
#include "sql.h"

/* ---------------------------------------------------------------- canonical bytes */

static void put_i64(Buf *b, int64_t v) { buf_append(b, &v, sizeof(v)); }

static void put_type(Buf *b, SqlType t)
{
    put_i64(b, t.kind);
    put_i64(b, t.nullable);
    put_i64(b, t.prec);
    put_i64(b, t.scale);
    if (t.kind == TK_ARRAY) /* only then, so that other fingerprints stay as they were */
        put_i64(b, t.elem);
    if (type_has_nested(t)) { /* the shape: ids are per process */
        Buf d = BUF_INIT;
        nest_describe(t, &d);
        put_i64(b, (int64_t)d.n);
        buf_append(b, d.p, d.n);
        buf_free(&d);
        return;
    }
    if (t.kind == TK_TIMESTAMPTZ || (t.kind == TK_ARRAY && t.elem == TK_TIMESTAMPTZ)) { /* its session zone by name: ids are per process */
        const char *z = tz_name(t.len);
        put_i64(b, (int64_t)strlen(z));
        buf_append(b, z, strlen(z));
    } else {
        put_i64(b, t.len);
    }
}

static void put_str(Buf *b, const char *s, size_t n)
{
    put_i64(b, (int64_t)n);
    buf_append(b, s, n);
}

/* Identifiers compare case-insensitively, as the compiler looks them up. */
static void put_name(Buf *b, const char *s)
{
    size_t n = strlen(s);
    put_i64(b, (int64_t)n);
    for (size_t i = 0; i < n; i++)
        buf_putc(b, (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] + 32 : s[i]));
}

static void put_ints(Buf *b, const int *v, int n)
{
    put_i64(b, n);
    for (int i = 0; i < n; i++)
        put_i64(b, v ? v[i] : 0);
}

static void put_bools(Buf *b, const bool *v, int n)
{
    for (int i = 0; i < n; i++)
        put_i64(b, v ? v[i] : 0);
}

static void put_expr(Buf *b, const Expr *e)
{
    if (!e) {
        put_i64(b, -1);
        return;
    }
    put_i64(b, e->k);
    put_type(b, e->t);
    put_i64(b, e->na);
    switch (e->k) {
    case E_COL:
        put_i64(b, e->col);
        break;
    case E_FUNC:
        put_i64(b, e->fn);
        break;
    case E_CONST:
        put_i64(b, e->cnull);
        if (!e->cnull) {
            put_i64(b, e->ci);
            if (type_is_wide(e->t)) /* a DECIMAL(p > 18) constant */
                buf_append(b, &e->cx, sizeof(e->cx));
            buf_append(b, &e->cf, sizeof(e->cf));
            put_str(b, e->cs.p ? e->cs.p : "", e->cs.p ? e->cs.n : 0);
        }
        break;
    default:
        break;
    }
    for (int i = 0; i < e->na; i++)
        put_expr(b, e->a[i]);
}

static int cmp_item_key(const void *x, const void *y)
{
    const cJSON *a = *(const cJSON *const *)x, *b = *(const cJSON *const *)y;
    return strcmp(a->string ? a->string : "", b->string ? b->string : "");
}

/* JSON with object members in key order: the same connectors however
   their keys were written. */
static void put_json(Buf *b, const cJSON *j)
{
    if (!j) {
        buf_puts(b, "null");
        return;
    }
    if (cJSON_IsObject(j) || cJSON_IsArray(j)) {
        bool obj = cJSON_IsObject(j);
        int n = cJSON_GetArraySize(j), k = 0;
        const cJSON **v = sl_calloc((size_t)n + 1, sizeof(*v));
        const cJSON *it;
        cJSON_ArrayForEach(it, j) v[k++] = it;
        if (obj)
            qsort(v, (size_t)k, sizeof(*v), cmp_item_key);
        buf_putc(b, obj ? '{' : '[');
        for (int i = 0; i < k; i++) {
            if (obj) {
                const char *key = v[i]->string ? v[i]->string : "";
                put_str(b, key, strlen(key));
                buf_putc(b, ':');
            }
            put_json(b, v[i]);
            buf_putc(b, ',');
        }
        buf_putc(b, obj ? '}' : ']');
        sl_free(v);
        return;
    }
    char *s = cJSON_PrintUnformatted(j);
    if (s) {
        put_str(b, s, strlen(s));
        cJSON_free(s);
    }
}

bool progdiff_same_json(const cJSON *a, const cJSON *b)
{
    Buf x = BUF_INIT, y = BUF_INIT;
    put_json(&x, a);
    put_json(&y, b);
    bool same = x.n == y.n && !memcmp(x.p, y.p, x.n);
    buf_free(&x);
    buf_free(&y);
    return same;
}

static uint64_t *fingerprints(const Circuit *c);

/* A node's own bytes (everything but its inputs). */
static void put_node(Buf *b, const Circuit *c, const CNode *n)
{
    put_i64(b, n->k);
    put_i64(b, n->ncol);
    for (int i = 0; i < n->ncol; i++)
        put_type(b, n->types[i]);
    put_i64(b, n->nin);
    switch (n->k) {
    case OPK_SOURCE: {
        const Relation *r = &c->rels[n->rel];
        put_name(b, r->name);
        put_i64(b, r->ncol);
        for (int i = 0; i < r->ncol; i++)
            put_name(b, r->colnames[i]);
        put_json(b, r->connectors);
        if (r->wm_col >= 0) { /* LATENESS: the watermark is the node's state */
            put_i64(b, r->wm_col);
            put_i64(b, r->lateness);
        }
        break;
    }
    case OPK_FINAL:
        put_i64(b, n->final_col);
        break;
    case OPK_TEMPORAL:
        put_i64(b, n->tcol);
        put_i64(b, n->tclock);
        put_i64(b, n->toff);
        put_i64(b, n->tupper);
        break;
    case OPK_UNNEST:
        put_i64(b, n->unnest_col);
        put_i64(b, n->ordinality);
        if (n->unnest_n > 1) /* (one array: the fingerprint of before) */
            put_i64(b, n->unnest_n);
        if (n->unnest_outer)
            put_i64(b, -1);
        if (n->filter) /* LEFT JOIN UNNEST ... ON cond */
            put_expr(b, n->filter);
        break;
    case OPK_SINK: /* a retained table's sink keeps what a materialized one's does */
        put_i64(b, rel_keeps(&c->rels[n->rel]));
        break;
    case OPK_MAP:
        put_expr(b, n->filter);
        for (int i = 0; i < n->ncol; i++)
            put_expr(b, n->proj ? n->proj[i] : NULL);
        break;
    case OPK_AGG:
        put_i64(b, n->ngroup);
        put_i64(b, n->naggs);
        for (int i = 0; i < n->naggs; i++) {
            const AggSpec *a = &n->aggs[i];
            put_i64(b, a->kind);
            put_i64(b, a->col);
            put_type(b, a->in_t);
            put_type(b, a->out_t);
            put_i64(b, a->distinct);
            put_ints(b, a->ord, a->nord);
            for (int k = 0; k < a->nord; k++)
                put_i64(b, a->ord_desc[k] * 2 + a->ord_nulls_first[k]);
            put_str(b, a->sep ? a->sep : "", a->seplen);
            buf_append(b, &a->frac, sizeof(a->frac));
        }
        put_i64(b, n->linear);
        put_i64(b, n->global);
        break;
    case OPK_JOIN:
        put_ints(b, n->lkeys, n->nkeys);
        put_ints(b, n->rkeys, n->nkeys);
        break;
    case OPK_UPSERT:
        put_ints(b, n->pk, n->npk);
        break;
    case OPK_ASOF:
        put_i64(b, n->asof_nl);
        put_i64(b, n->asof_back);
        put_i64(b, n->asof_outer); /* then partition and order columns */
        /* fall through */
    case OPK_TOPK:
    case OPK_WINDOW:
        put_ints(b, n->part, n->npart);
        put_ints(b, n->ord, n->nord);
        put_bools(b, n->ord_desc, n->nord);
        put_bools(b, n->ord_nulls_first, n->nord);
        if (n->k == OPK_TOPK) {
            put_i64(b, n->limit);
            put_i64(b, n->offset);
            put_i64(b, n->rank);
            break;
        }
        put_i64(b, n->nwfn);
        for (int i = 0; i < n->nwfn; i++) {
            const WinFunc *w = &n->wfn[i];
            put_i64(b, w->kind);
            put_i64(b, w->col);
            put_i64(b, w->def_col);
            put_i64(b, w->offset);
            put_type(b, w->in_t);
            put_type(b, w->out_t);
            put_i64(b, w->rows);
            put_i64(b, w->start);
            put_i64(b, w->end);
            put_i64(b, w->start_n);
            put_i64(b, w->end_n);
            if (w->ignore_nulls) /* only then: fingerprints of other windows stay */
                put_i64(b, 1);
            if (w->groups || w->exclude || w->distinct || w->start_months || w->end_months) {
                put_i64(b, 2);
                put_i64(b, w->groups | w->distinct << 1 | w->start_months << 2 |
                               w->end_months << 3);
                put_i64(b, w->exclude);
            }
            buf_append(b, &w->start_f, sizeof(w->start_f));
            buf_append(b, &w->end_f, sizeof(w->end_f));
        }
        break;
    case OPK_UNION:
    case OPK_NEGATE:
    case OPK_CONST:
    case OPK_DISTINCT:
        break;
    case OPK_FIXPOINT: { /* the inner circuit, node by node */
        uint64_t *fp = fingerprints(n->sub);
        put_i64(b, n->sub->nnodes);
        for (int i = 0; i < n->nrec; i++) /* one node for a component of views */
            put_i64(b, n->sub_outs[i]);
        for (int i = 0; i < n->sub->nnodes; i++)
            put_i64(b, (int64_t)fp[i]);
        sl_free(fp);
        break;
    }
    }
}

/* A SQL function's definition: parameter and result types, body (with
   the functions it calls inlined). */
static uint64_t func_fp(const CFunc *f)
{
    Buf b = BUF_INIT;
    put_i64(&b, f->nparam);
    for (int i = 0; i < f->nparam; i++)
        put_type(&b, f->ptypes[i]);
    put_type(&b, f->ret);
    put_expr(&b, f->body);
    uint64_t h = sl_hash(b.p, b.n);
    buf_free(&b);
    return h;
}

static int find_func(const Circuit *c, const char *name)
{
    for (int i = 0; i < c->nfuncs; i++)
        if (!strcasecmp(c->funcs[i].name, name))
            return i;
    return -1;
}

/* Full fingerprints of every node of c (sl_free). */
static uint64_t *fingerprints(const Circuit *c)
{
    uint64_t *fp = sl_calloc((size_t)c->nnodes + 1, sizeof(uint64_t));
    Buf b = BUF_INIT;
    for (int i = 0; i < c->nnodes; i++) {
        const CNode *n = c->nodes[i];
        buf_reset(&b);
        put_node(&b, c, n);
        for (int k = 0; k < n->nin; k++)
            put_i64(&b, (int64_t)fp[n->in[k]]);
        fp[i] = sl_hash(b.p, b.n);
    }
    buf_free(&b);
    return fp;
}

uint64_t progdiff_node_fp(const Circuit *c, int node)
{
    uint64_t *fp = fingerprints(c);
    uint64_t r = fp[node];
    sl_free(fp);
    return r;
}

/* The nodes of c grouped by the relation that owns them, in id order:
   ids[start[r] .. start[r + 1]) (sl_free both). */
typedef struct Owned {
    int *start, *ids;
} Owned;

static Owned owned_nodes(const Circuit *c)
{
    Owned o = {sl_calloc((size_t)c->nrels + 2, sizeof(int)),
               sl_calloc((size_t)c->nnodes + 1, sizeof(int))};
    for (int i = 0; i < c->nnodes; i++)
        o.start[c->nodes[i]->owner + 1]++;
    for (int r = 0; r < c->nrels; r++)
        o.start[r + 1] += o.start[r];
    int *fill = sl_calloc((size_t)c->nrels + 1, sizeof(int));
    for (int i = 0; i < c->nnodes; i++) {
        int r = c->nodes[i]->owner;
        o.ids[o.start[r] + fill[r]++] = i;
    }
    sl_free(fill);
    return o;
}

static void owned_free(Owned *o)
{
    sl_free(o->start);
    sl_free(o->ids);
}

/* Another relation's node, as seen from a local fingerprint: its name. */
static uint64_t ref_fp(const Circuit *c, int rel, Buf *b)
{
    buf_reset(b);
    put_i64(b, -2);
    put_name(b, c->rels[rel].name);
    return sl_hash(b->p, b->n);
}

static void add_ref(int **refs, int *nrefs, int *cap, int rel)
{
    for (int j = 0; j < *nrefs; j++)
        if ((*refs)[j] == rel)
            return;
    *VEC_PUSH(*refs, *nrefs, *cap) = rel;
}

/* The local fingerprint of relation r (its own nodes; another relation's
   node counts as that relation's name), and the relations it reads
   (*refs, sl_free; *nrefs). lfp: scratch of c->nnodes entries. Costs
   O(r's nodes). */
static uint64_t local_fp(const Circuit *c, const Owned *own, int r, uint64_t *lfp, int **refs,
                         int *nrefs)
{
    Buf b = BUF_INIT, rb = BUF_INIT;
    int cap = 0;
    *refs = NULL;
    *nrefs = 0;
    for (int k = own->start[r]; k < own->start[r + 1]; k++) {
        const CNode *n = c->nodes[own->ids[k]];
        buf_reset(&b);
        put_node(&b, c, n);
        for (int j = 0; j < n->nin; j++) {
            int o = c->nodes[n->in[j]]->owner;
            if (o == r) {
                put_i64(&b, (int64_t)lfp[n->in[j]]);
                continue;
            }
            put_i64(&b, (int64_t)ref_fp(c, o, &rb));
            add_ref(refs, nrefs, &cap, o);
        }
        lfp[n->id] = sl_hash(b.p, b.n);
    }
    int top = c->rels[r].node, o = c->nodes[top]->owner;
    uint64_t h = lfp[top];
    if (o != r) { /* the view is another relation's stream */
        h = ref_fp(c, o, &rb);
        add_ref(refs, nrefs, &cap, o);
    }
    buf_free(&b);
    buf_free(&rb);
    return h;
}

/* ---------------------------------------------------------------- fingerprint sets */

typedef struct FpEnt {
    uint64_t fp;
    int node;
} FpEnt;

static int cmp_fpent(const void *x, const void *y)
{
    const FpEnt *a = x, *b = y;
    if (a->fp != b->fp)
        return a->fp < b->fp ? -1 : 1;
    return (a->node > b->node) - (a->node < b->node);
}

/* The first entry with fp, or -1. */
static int fp_find(const FpEnt *v, int n, uint64_t fp)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (v[mid].fp < fp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].fp == fp ? v[lo].node : -1;
}

/* The fixed point of mutually recursive views that view r is one of (its
   node a map of it), or -1. Such views change as one unit. */
static int component_of(const Circuit *c, const Relation *r)
{
    if (r->is_table)
        return -1;
    const CNode *n = c->nodes[r->node];
    if (n->k == OPK_FINAL)
        n = c->nodes[n->in[0]];
    if (n->k != OPK_MAP || n->nin != 1)
        return -1;
    const CNode *f = c->nodes[n->in[0]];
    return f->k == OPK_FIXPOINT && f->nrec > 1 ? f->id : -1;
}

/* Does an operator of this kind derive its own output from its state? */
static bool state_has_output(OpKind k)
{
    return k == OPK_AGG || k == OPK_UPSERT || k == OPK_DISTINCT || k == OPK_TOPK ||
           k == OPK_WINDOW || k == OPK_JOIN || k == OPK_ASOF;
}

/* ---------------------------------------------------------------- relations */

typedef struct StmtHash {
    char *name; /* the relation it declares (sl_malloc) */
    uint64_t h;
} StmtHash;

typedef struct Ctx {
    const Circuit *oc, *nc;
    ProgDiff *d;
    uint64_t *ofp;
    bool *content_changed; /* per new relation: its stream differs or is new */
    Owned oown, nown;      /* each circuit's nodes by owner */
    uint64_t *scratch;     /* local fingerprints (room for either circuit) */
    StmtHash *otok, *ntok; /* per statement declaring a relation: its name and the
                              hash of its tokens, or NULL */
    int notok, nntok;
} Ctx;

/* Does the statement starting at token t declare no relation (LATENESS,
   CREATE [OR REPLACE] FUNCTION)? */
static bool declares_nothing(const Token *t)
{
    if (t[0].k != T_IDENT)
        return false;
    if (!strcasecmp(t[0].s, "lateness"))
        return true;
    if (strcasecmp(t[0].s, "create") || t[1].k != T_IDENT)
        return false;
    if (!strcasecmp(t[1].s, "function"))
        return true;
    return !strcasecmp(t[1].s, "or") && t[2].k == T_IDENT && !strcasecmp(t[2].s, "replace") &&
           t[3].k == T_IDENT && !strcasecmp(t[3].s, "function");
}

/* The name of the relation the CREATE statement at token t declares (the
   identifier after TABLE or VIEW [IF NOT EXISTS]), or NULL. */
static const char *declared_name(const Token *t)
{
    if (t[0].k != T_IDENT || strcasecmp(t[0].s, "create"))
        return NULL;
    for (int i = 1; t[i].k == T_IDENT; i++)
        if (!strcasecmp(t[i].s, "table") || !strcasecmp(t[i].s, "view")) {
            i++;
            while (t[i].k == T_IDENT && (!strcasecmp(t[i].s, "if") || !strcasecmp(t[i].s, "not") ||
                                         !strcasecmp(t[i].s, "exists")))
                i++;
            return t[i].k == T_IDENT || t[i].k == T_QIDENT ? t[i].s : NULL;
        }
    return NULL;
}

/* Per CREATE TABLE or VIEW statement of text, the relation's name and the
   hash of its tokens with bare identifiers case-folded (stmt_hashes_free;
   NULL when there is no text or it does not lex). A ';' inside a
   dollar-quoted function body does not end its statement. */
static StmtHash *statement_hashes(const char *text, int *n)
{
    *n = 0;
    if (!text)
        return NULL;
    Arena *a = arena_new(16 * 1024);
    Token *t;
    int nt;
    Err e = {0};
    StmtHash *h = NULL;
    int cap = 0;
    if (lex(text, a, &t, &nt, &e) == 0) {
        Buf b = BUF_INIT;
        const char *dollar = NULL; /* the open dollar quote */
        int first = 0;             /* the statement's first token */
        for (int i = 0; i < nt; i++) {
            if (t[i].k == T_OP && t[i].s[0] == '$')
                dollar = !dollar ? t[i].s : strcmp(dollar, t[i].s) ? dollar : NULL;
            bool end = t[i].k == T_EOF || (t[i].k == T_OP && !strcmp(t[i].s, ";") && !dollar);
            const char *name = end && b.n && !declares_nothing(&t[first])
                                   ? declared_name(&t[first]) : NULL;
            if (name) {
                StmtHash *x = VEC_PUSH(h, *n, cap);
                x->name = sl_malloc(strlen(name) + 1);
                strcpy(x->name, name);
                x->h = sl_hash(b.p, b.n);
            }
            if (end) {
                buf_reset(&b);
                first = i + 1;
                continue;
            }
            put_i64(&b, t[i].k);
            if (t[i].k == T_IDENT)
                put_name(&b, t[i].s);
            else
                put_str(&b, t[i].s, t[i].n);
        }
        buf_free(&b);
    }
    arena_free(a);
    return h;
}

static void stmt_hashes_free(StmtHash *h, int n)
{
    for (int i = 0; i < n; i++)
        sl_free(h[i].name);
    sl_free(h);
}

/* The token hash of the statement declaring relation name, or NULL. */
static const uint64_t *stmt_hash(const StmtHash *h, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(h[i].name, name))
            return &h[i].h;
    return NULL;
}

static const char *dup_name(ProgDiff *d, const char *s)
{
    return arena_strndup(d->arena, s, strlen(s));
}

static const char **name_list(ProgDiff *d, const Circuit *c, const int *rels, int n)
{
    const char **v = arena_alloc(d->arena, sizeof(char *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        v[i] = dup_name(d, c->rels[rels[i]].name);
    return v;
}

/* The tables whose sources must be read again to rebuild node `top` of
   the new circuit: backwards through nodes that are not stored. */
static int reread_tables(const Ctx *x, int top, int **out)
{
    const Circuit *c = x->nc;
    bool *seen = sl_calloc((size_t)c->nnodes + 1, sizeof(bool));
    int *stack = NULL, ns = 0, caps = 0, n = 0, cap = 0;
    *out = NULL;
    *VEC_PUSH(stack, ns, caps) = top;
    seen[top] = true;
    while (ns) {
        const CNode *nd = c->nodes[stack[--ns]];
        if (x->d->stored[nd->id])
            continue;
        if (nd->k == OPK_SOURCE) {
            bool dup = false;
            for (int i = 0; i < n; i++)
                dup |= (*out)[i] == nd->rel;
            if (!dup)
                *VEC_PUSH(*out, n, cap) = nd->rel;
            continue;
        }
        for (int k = 0; k < nd->nin; k++)
            if (!seen[nd->in[k]]) {
                seen[nd->in[k]] = true;
                *VEC_PUSH(stack, ns, caps) = nd->in[k];
            }
    }
    /* in program order, for a stable printout */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (*out)[j - 1] > (*out)[j]; j--) {
            int t = (*out)[j];
            (*out)[j] = (*out)[j - 1];
            (*out)[j - 1] = t;
        }
    sl_free(seen);
    sl_free(stack);
    return n;
}

static bool same_schema(const Relation *a, const Relation *b)
{
    if (a->ncol != b->ncol)
        return false;
    for (int i = 0; i < a->ncol; i++)
        if (strcasecmp(a->colnames[i], b->colnames[i]) ||
            memcmp(&a->types[i], &b->types[i], sizeof(SqlType)))
            return false;
    return true;
}

static bool same_pk(const Relation *a, const Relation *b)
{
    if (a->npk != b->npk)
        return false;
    for (int i = 0; i < a->npk; i++)
        if (a->pk[i] != b->pk[i])
            return false;
    return true;
}

/* Contents needed (new, changed or newly materialized): recompute when the
   relation's stream is stored, else read its tables again. */
static void needs_contents(Ctx *x, PdRel *pr, const Relation *r)
{
    if (x->d->stored[r->node]) {
        pr->action = PD_RECOMPUTE;
        return;
    }
    int *tabs;
    pr->action = PD_REREAD;
    pr->nreread = reread_tables(x, r->node, &tabs);
    pr->reread = name_list(x->d, x->nc, tabs, pr->nreread);
    sl_free(tabs);
}

static void classify(Ctx *x, PdRel *pr, int ni)
{
    const Circuit *oc = x->oc, *nc = x->nc;
    ProgDiff *d = x->d;
    const Relation *r = &nc->rels[ni];
    int oi = circuit_find_rel(oc, r->name);
    pr->name = dup_name(d, r->name);
    pr->is_table = r->is_table;
    pr->new_rel = ni;
    pr->old_rel = oi;
    pr->stored = d->stored[r->node];
    pr->materialized = !r->is_table && r->materialized;
    pr->no_source = r->is_table && cJSON_GetArraySize(r->connectors) == 0;
    pr->retain = r->is_table && r->retain;
    pr->unreadable = r->is_table ? progdiff_unreadable(r) : NULL;
    if (oi >= 0 && oc->rels[oi].is_table != r->is_table)
        oi = pr->old_rel = -1; /* a table became a view or back: another relation */
    if (oi < 0) {
        pr->status = PD_ADDED;
        /* a renamed view's stream is still the old one's */
        x->content_changed[ni] = d->old_node[r->node] < 0;
        needs_contents(x, pr, r);
        return;
    }
    const Relation *o = &oc->rels[oi];
    x->content_changed[ni] = d->fp[r->node] != x->ofp[o->node];
    if (!same_schema(o, r))
        pr->what |= PD_SCHEMA;
    if (!progdiff_same_json(o->connectors, r->connectors))
        pr->what |= PD_CONNECTORS;
    if (o->materialized != r->materialized)
        pr->what |= PD_MATERIALIZED;
    if (r->is_table && o->retain != r->retain)
        pr->what |= PD_RETAIN;
    if (r->is_table) {
        if (!same_pk(o, r))
            pr->what |= PD_DEFINITION;
    } else {
        int *orefs, *nrefs, norefs, nnrefs;
        uint64_t lo = local_fp(oc, &x->oown, oi, x->scratch, &orefs, &norefs);
        uint64_t ln = local_fp(nc, &x->nown, ni, x->scratch, &nrefs, &nnrefs);
        const uint64_t *ot = stmt_hash(x->otok, x->notok, o->name),
                       *nt = stmt_hash(x->ntok, x->nntok, r->name);
        bool same_tokens = ot && nt && *ot == *nt;
        int comp = component_of(nc, r);
        if (comp >= 0 ? (ot && nt ? !same_tokens : lo != ln) : lo != ln && !same_tokens)
            pr->what |= PD_DEFINITION;
        int *chg = NULL, nchg = 0, cap = 0;
        for (int i = 0; i < nnrefs; i++)
            if (x->content_changed[nrefs[i]])
                *VEC_PUSH(chg, nchg, cap) = nrefs[i];
        for (int j = 0; comp >= 0 && j < nc->nrels; j++) { /* the views it recurses with */
            int oj = circuit_find_rel(oc, nc->rels[j].name);
            if (j == ni || component_of(nc, &nc->rels[j]) != comp ||
                (oj >= 0 && d->fp[nc->rels[j].node] == x->ofp[oc->rels[oj].node]))
                continue;
            bool seen = false;
            for (int k = 0; k < nchg; k++)
                seen = seen || chg[k] == j;
            if (!seen)
                *VEC_PUSH(chg, nchg, cap) = j;
        }
        if (nchg) {
            pr->what |= PD_INPUTS;
            pr->inputs = name_list(d, nc, chg, nchg);
            pr->ninputs = nchg;
        }
        sl_free(chg);
        sl_free(orefs);
        sl_free(nrefs);
        const char **fn = arena_alloc(d->arena, sizeof(char *) * (size_t)(r->nfuncs + 1));
        int nfn = 0;
        for (int i = 0; i < r->nfuncs; i++) { /* SQL functions changed or gone */
            const CFunc *f = &nc->funcs[r->funcs[i]];
            int of = find_func(oc, f->name);
            if (of < 0 || func_fp(&oc->funcs[of]) != func_fp(f))
                fn[nfn++] = dup_name(d, f->name);
        }
        if (nfn && lo != ln) {
            pr->what |= PD_FUNCTIONS;
            pr->funcs = fn;
            pr->nfuncs = nfn;
        }
        if (x->content_changed[ni] && !(pr->what & (PD_DEFINITION | PD_INPUTS | PD_FUNCTIONS)))
            pr->what |= PD_DEFINITION; /* cannot happen short of a hash collision */
    }
    pr->status = pr->what ? PD_CHANGED : PD_UNCHANGED;
    pr->action = PD_KEEP;
    if (r->is_table && (pr->what & (PD_SCHEMA | PD_DEFINITION | PD_CONNECTORS))) {
        /* another history: the table is read again from the beginning */
        pr->action = PD_REREAD;
        pr->reread = name_list(d, nc, &ni, 1);
        pr->nreread = 1;
        x->content_changed[ni] = true;
    } else if (x->content_changed[ni] || (rel_keeps(r) && !rel_keeps(o)))
        needs_contents(x, pr, r); /* (a table that starts keeping its contents: its
                                     history, which only a re-read gives) */
}

/* ---------------------------------------------------------------- building */

ProgDiff *progdiff_new(const Circuit *oc, const char *old_text, const Circuit *nc,
                       const char *new_text)
{
    ProgDiff *d = sl_calloc(1, sizeof(*d));
    d->arena = arena_new(16 * 1024);
    d->nnew = nc->nnodes;
    d->nold = oc->nnodes;
    d->fp = arena_zalloc(d->arena, sizeof(uint64_t) * (size_t)(nc->nnodes + 1));
    d->old_node = arena_zalloc(d->arena, sizeof(int) * (size_t)(nc->nnodes + 1));
    d->stored = arena_zalloc(d->arena, sizeof(bool) * (size_t)(nc->nnodes + 1));
    d->dropped = arena_zalloc(d->arena, sizeof(bool) * (size_t)(oc->nnodes + 1));
    uint64_t *nfp = fingerprints(nc), *ofp = fingerprints(oc);
    memcpy(d->fp, nfp, sizeof(uint64_t) * (size_t)nc->nnodes);

    /* the old nodes by fingerprint; the streams whose integral they keep */
    FpEnt *olds = sl_calloc((size_t)oc->nnodes + 1, sizeof(FpEnt));
    FpEnt *kept = NULL;
    int nkept = 0, capk = 0;
    for (int i = 0; i < oc->nnodes; i++) {
        const CNode *n = oc->nodes[i];
        olds[i] = (FpEnt){ofp[i], i};
        bool keeps_inputs = n->k == OPK_JOIN || n->k == OPK_DISTINCT || n->k == OPK_TOPK ||
                            n->k == OPK_WINDOW || n->k == OPK_ASOF ||
                            (n->k == OPK_SINK && rel_keeps(&oc->rels[n->rel]));
        for (int k = 0; keeps_inputs && k < n->nin; k++)
            *VEC_PUSH(kept, nkept, capk) = (FpEnt){ofp[n->in[k]], i};
        if (state_has_output(n->k))
            *VEC_PUSH(kept, nkept, capk) = (FpEnt){ofp[i], i};
    }
    qsort(olds, (size_t)oc->nnodes, sizeof(FpEnt), cmp_fpent);
    if (nkept)
        qsort(kept, (size_t)nkept, sizeof(FpEnt), cmp_fpent);

    /* new nodes: the old node they continue, and whether they are stored */
    FpEnt *news = sl_calloc((size_t)nc->nnodes + 1, sizeof(FpEnt));
    for (int i = 0; i < nc->nnodes; i++) {
        const CNode *n = nc->nodes[i];
        news[i] = (FpEnt){nfp[i], i};
        d->old_node[i] = fp_find(olds, oc->nnodes, nfp[i]);
        bool st;
        if (n->k == OPK_CONST)
            st = true;
        else if (d->old_node[i] >= 0 && fp_find(kept, nkept, nfp[i]) >= 0)
            st = true;
        else if (n->k == OPK_SOURCE)
            st = false;
        else {
            st = true;
            for (int k = 0; k < n->nin; k++)
                st = st && d->stored[n->in[k]];
        }
        d->stored[i] = st;
    }
    qsort(news, (size_t)nc->nnodes, sizeof(FpEnt), cmp_fpent);
    for (int i = 0; i < oc->nnodes; i++)
        d->dropped[i] = fp_find(news, nc->nnodes, ofp[i]) < 0;

    /* relations: the new program's in order, then the removed ones */
    int cap = nc->nrels + oc->nrels + 1;
    d->rels = arena_zalloc(d->arena, sizeof(PdRel) * (size_t)cap);
    int most = oc->nnodes > nc->nnodes ? oc->nnodes : nc->nnodes;
    Ctx x = {oc,
             nc,
             d,
             ofp,
             sl_calloc((size_t)nc->nrels + 1, sizeof(bool)),
             owned_nodes(oc),
             owned_nodes(nc),
             sl_calloc((size_t)most + 1, sizeof(uint64_t)),
             NULL,
             NULL,
             0,
             0};
    x.otok = statement_hashes(old_text, &x.notok);
    x.ntok = statement_hashes(new_text, &x.nntok);
    for (int i = 0; i < nc->nrels; i++)
        classify(&x, &d->rels[d->nrels++], i);
    for (int i = 0; i < oc->nrels; i++) {
        int ni = circuit_find_rel(nc, oc->rels[i].name);
        if (ni >= 0 && nc->rels[ni].is_table == oc->rels[i].is_table)
            continue;
        PdRel *pr = &d->rels[d->nrels++];
        pr->name = dup_name(d, oc->rels[i].name);
        pr->is_table = oc->rels[i].is_table;
        pr->status = PD_REMOVED;
        pr->action = PD_DROP;
        pr->old_rel = i;
        pr->new_rel = -1;
    }
    /* kept tables read again for new parts of the circuit */
    for (int i = 0; i < d->nrels; i++) {
        PdRel *pr = &d->rels[i];
        d->counts[pr->status]++;
        if (pr->action != PD_REREAD || pr->is_table)
            continue;
        for (int k = 0; k < pr->nreread; k++) {
            int t = circuit_find_rel(nc, pr->reread[k]);
            PdRel *tr = &d->rels[t];
            if (tr->action != PD_KEEP)
                continue;
            const char **v = arena_alloc(d->arena, sizeof(char *) * (size_t)(tr->nreread_for + 1));
            if (tr->nreread_for)
                memcpy(v, tr->reread_for, sizeof(char *) * (size_t)tr->nreread_for);
            v[tr->nreread_for++] = pr->name;
            tr->reread_for = v;
        }
    }
    sl_free(x.content_changed);
    owned_free(&x.oown);
    owned_free(&x.nown);
    sl_free(x.scratch);
    stmt_hashes_free(x.otok, x.notok);
    stmt_hashes_free(x.ntok, x.nntok);
    sl_free(news);
    sl_free(kept);
    sl_free(olds);
    sl_free(nfp);
    sl_free(ofp);
    return d;
}

void progdiff_free(ProgDiff *d)
{
    if (!d)
        return;
    arena_free(d->arena);
    sl_free(d);
}

bool progdiff_changed(const ProgDiff *d)
{
    return d->counts[PD_ADDED] + d->counts[PD_REMOVED] + d->counts[PD_CHANGED] > 0;
}

/* ---------------------------------------------------------------- printing */

const char *progdiff_status_name(PdStatus s)
{
    static const char *n[] = {"unchanged", "added", "removed", "changed"};
    return n[s];
}

const char *progdiff_action_name(PdAction a)
{
    static const char *n[] = {"keep", "recompute", "reread", "drop"};
    return n[a];
}

static const char *what_names[] = {"definition", "inputs", "schema", "connectors",
                                   "materialized", "functions", "retain_input"};

static bool hidden(const PdRel *r, const char *hide)
{
    return hide && r->status == PD_UNCHANGED && !r->nreread_for && !strcasecmp(r->name, hide);
}

static void put_list(Buf *b, const char *const *v, int n)
{
    for (int i = 0; i < n; i++)
        buf_printf(b, "%s%s", i ? ", " : "", v[i]);
}

static void what_text(const PdRel *r, Buf *b)
{
    int k = 0;
    for (int bit = 0; bit < (int)ARRAY_LEN(what_names); bit++) {
        if (!(r->what & (1 << bit)))
            continue;
        buf_printf(b, "%s%s", k++ ? ", " : "", what_names[bit]);
        if ((1 << bit) == PD_INPUTS || (1 << bit) == PD_FUNCTIONS) {
            buf_puts(b, " (");
            if ((1 << bit) == PD_INPUTS)
                put_list(b, r->inputs, r->ninputs);
            else
                put_list(b, r->funcs, r->nfuncs);
            buf_putc(b, ')');
        }
    }
}

const char *progdiff_unreadable(const Relation *r)
{
    const cJSON *e;
    if (!cJSON_GetArraySize(r->connectors))
        return "HTTP input only: its history is not kept";
    cJSON_ArrayForEach(e, r->connectors)
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "transport");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
        const char *nm = cJSON_IsString(name) ? name->valuestring : "";
        if (!strcmp(nm, "kafka_input")) {
            const cJSON *from = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(t, "config"), "start_from");
            if (!(cJSON_IsString(from) && !strcmp(from->valuestring, "earliest")) &&
                !cJSON_IsObject(from))
                return "kafka_input from \"latest\": where its history began is not known";
        } else if (strcmp(nm, "datagen") && strcmp(nm, "file_input") && strcmp(nm, "s3_input") &&
                   strcmp(nm, "postgres_cdc_input")) {
            return "its input connector cannot be read again";
        }
    }
    return NULL;
}

/* Does table r continue its old history (its rows are not read anew as
   live input): kept, or changed only in what it keeps ('materialized',
   'retain_input')? */
static bool kept_source(const PdRel *r)
{
    return r->action == PD_KEEP ||
           (r->status == PD_CHANGED && !(r->what & (PD_SCHEMA | PD_DEFINITION | PD_CONNECTORS)));
}

/* A list of tables read again, each kept one whose history cannot be
   read again marked (bootstrapping refuses). */
static void put_tables(const ProgDiff *d, Buf *b, const char *const *v, int n)
{
    for (int i = 0; i < n; i++) {
        buf_printf(b, "%s%s", i ? ", " : "", v[i]);
        for (int k = 0; k < d->nrels; k++)
            if (d->rels[k].new_rel >= 0 && d->rels[k].is_table && d->rels[k].unreadable &&
                kept_source(&d->rels[k]) && !strcasecmp(d->rels[k].name, v[i]))
                buf_printf(b, " (%s: bootstrapping refuses)", d->rels[k].unreadable);
    }
}

static void action_text(const ProgDiff *d, const PdRel *r, Buf *b)
{
    switch (r->action) {
    case PD_KEEP:
        buf_puts(b, "kept");
        if (r->retain)
            buf_puts(b, "; input retained: re-readable");
        if (r->nreread_for) {
            buf_puts(b, "; read again for ");
            put_list(b, r->reread_for, r->nreread_for);
            if (r->unreadable)
                buf_printf(b, " (%s: bootstrapping refuses)", r->unreadable);
        }
        if (!r->is_table && (r->what & PD_CONNECTORS))
            buf_puts(b, r->materialized ? "; new or changed outputs start with a snapshot"
                                        : "; new or changed outputs start with its next "
                                          "changes (not materialized: no snapshot)");
        break;
    case PD_RECOMPUTE:
        buf_puts(b, "recomputed from stored state");
        break;
    case PD_REREAD:
        buf_puts(b, "re-read from source: ");
        put_tables(d, b, r->reread, r->nreread);
        break;
    case PD_DROP:
        buf_puts(b, "dropped");
        break;
    }
}

void progdiff_print(const ProgDiff *d, const char *hide, Buf *out)
{
    enum { NCOL = 5 };
    const char *head[NCOL] = {"relation", "kind", "status", "what changed", "consequence"};
    int nrow = 0;
    Buf *cell = sl_calloc((size_t)(d->nrels + 1) * NCOL, sizeof(Buf));
    size_t width[NCOL];
    for (int k = 0; k < NCOL; k++) {
        buf_puts(&cell[k], head[k]);
        width[k] = strlen(head[k]);
    }
    for (int i = 0; i < d->nrels; i++) {
        const PdRel *r = &d->rels[i];
        if (hidden(r, hide))
            continue;
        Buf *row = &cell[(size_t)(++nrow) * NCOL];
        buf_puts(&row[0], r->name);
        buf_puts(&row[1], r->is_table ? "table" : "view");
        buf_puts(&row[2], progdiff_status_name(r->status));
        what_text(r, &row[3]);
        action_text(d, r, &row[4]);
        for (int k = 0; k < NCOL; k++)
            if (row[k].n > width[k])
                width[k] = row[k].n;
    }
    for (int i = 0; i <= nrow; i++) {
        Buf *row = &cell[(size_t)i * NCOL];
        for (int k = 0; k < NCOL; k++) {
            const char *s = buf_cstr(&row[k]);
            if (k == NCOL - 1)
                buf_printf(out, "%s\n", s);
            else
                buf_printf(out, "%-*s  ", (int)width[k], s);
        }
    }
    for (int i = 0; i < (nrow + 1) * NCOL; i++)
        buf_free(&cell[i]);
    sl_free(cell);
    buf_printf(out, "%d unchanged, %d added, %d removed, %d changed\n",
               d->counts[PD_UNCHANGED] - (nrow < d->nrels ? d->nrels - nrow : 0),
               d->counts[PD_ADDED], d->counts[PD_REMOVED], d->counts[PD_CHANGED]);
}

static cJSON *str_array(const char *const *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

cJSON *progdiff_json(const ProgDiff *d, const char *hide)
{
    cJSON *j = cJSON_CreateObject();
    int nhidden = 0;
    for (int i = 0; i < d->nrels; i++)
        nhidden += hidden(&d->rels[i], hide);
    cJSON_AddBoolToObject(j, "changed", progdiff_changed(d));
    cJSON *cnt = cJSON_AddObjectToObject(j, "counts");
    for (int s = 0; s < 4; s++)
        cJSON_AddNumberToObject(cnt, progdiff_status_name((PdStatus)s),
                                d->counts[s] - (s == PD_UNCHANGED ? nhidden : 0));
    cJSON *rels = cJSON_AddArrayToObject(j, "relations");
    for (int i = 0; i < d->nrels; i++) {
        const PdRel *r = &d->rels[i];
        if (hidden(r, hide))
            continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", r->name);
        cJSON_AddStringToObject(e, "kind", r->is_table ? "table" : "view");
        cJSON_AddStringToObject(e, "status", progdiff_status_name(r->status));
        cJSON *w = cJSON_AddArrayToObject(e, "changes");
        for (int bit = 0; bit < (int)ARRAY_LEN(what_names); bit++)
            if (r->what & (1 << bit))
                cJSON_AddItemToArray(w, cJSON_CreateString(what_names[bit]));
        cJSON_AddItemToObject(e, "inputs", str_array(r->inputs, r->ninputs));
        cJSON_AddItemToObject(e, "functions", str_array(r->funcs, r->nfuncs));
        cJSON_AddStringToObject(e, "action", progdiff_action_name(r->action));
        cJSON_AddBoolToObject(e, "stored", r->stored);
        if (!r->is_table && r->action == PD_KEEP && (r->what & PD_CONNECTORS))
            cJSON_AddStringToObject(e, "new_outputs",
                                    r->materialized ? "snapshot" : "next_changes");
        if (r->is_table)
            cJSON_AddBoolToObject(e, "http_input_only", r->no_source);
        if (r->is_table)
            cJSON_AddBoolToObject(e, "retain_input", r->retain);
        if (r->is_table && r->unreadable &&
            ((r->action == PD_KEEP && r->nreread_for) ||
             (r->action == PD_REREAD && kept_source(r))))
            cJSON_AddStringToObject(e, "reread_refused", r->unreadable);
        cJSON_AddItemToObject(e, "reread", str_array(r->reread, r->nreread));
        cJSON_AddItemToObject(e, "reread_for", str_array(r->reread_for, r->nreread_for));
        cJSON_AddItemToArray(rels, e);
    }
    cJSON *nodes = cJSON_AddArrayToObject(j, "nodes");
    for (int i = 0; i < d->nnew; i++) {
        cJSON *e = cJSON_CreateObject();
        char fp[24];
        snprintf(fp, sizeof(fp), "%016llx", (unsigned long long)d->fp[i]);
        cJSON_AddNumberToObject(e, "node", i);
        cJSON_AddStringToObject(e, "fingerprint", fp);
        if (d->old_node[i] >= 0)
            cJSON_AddNumberToObject(e, "old", d->old_node[i]);
        else
            cJSON_AddNullToObject(e, "old");
        cJSON_AddBoolToObject(e, "stored", d->stored[i]);
        cJSON_AddItemToArray(nodes, e);
    }
    cJSON *dr = cJSON_AddArrayToObject(j, "dropped_nodes");
    for (int i = 0; i < d->nold; i++)
        if (d->dropped[i])
            cJSON_AddItemToArray(dr, cJSON_CreateNumber(i));
    return j;
}
