/*
 * pipeline/boot.c - the plan of bootstrapping a restart with a changed
 * program (boot.h; docs/bootstrapping.md): which old node's state each new
 * node takes over, which nodes run in the bootstrap step and what they are
 * fed, where each connector continues.
 *
 * The program diff (sql/progdiff.h) gives per new node the old node
 * computing the same stream (equal fingerprints: same operator, same
 * column types, same inputs, so the saved state has the same format).
 * Nodes with one are kept: their state is loaded, and in the bootstrap
 * step they do not run (the views that did not change never see their
 * history twice). The other nodes are new: they start empty and run in the
 * bootstrap step, over what their inputs give in it:
 *   - a kept node whose whole stream the checkpoint holds: the input of a
 *     kept materialized sink (a materialized table or view) is fed the
 *     sink's contents, as one delta; a kept filter, projection or union
 *     over such streams runs over them;
 *     a kept PRIMARY KEY table's upsert is fed its rows, a kept
 *     aggregate its groups' current output rows;
 *   - a new node: its output in the step;
 *   - a new table's source: nothing (its connectors start from the
 *     beginning, and its rows arrive as live input).
 * A new node that reads another kept stream: when that stream can be
 * computed from stored ones (a kept join of a materialized view and a
 * PRIMARY KEY table under a changed projection), the kept node is
 * recomputed instead (its old state is not loaded; it runs in the step and
 * rebuilds the same state from its inputs' contents). Otherwise it needs
 * history the checkpoint does not hold: the kept tables it reaches are
 * read again from the beginning for the new part alone (reread; through
 * their live connectors when those can go back to their start: rewind),
 * or, when their connectors cannot be read again, the plan refuses,
 * naming the relation and the tables.
 *
 * Outputs: an output connector of a kept view continues the old output
 * with the same JSON (map_outputs); any other is a new destination, given
 * the view's contents first when it is materialized.
 *
 * Scale-out: only the coordinator makes the plan; boot_plan_put and
 * boot_plan_get carry the per-node part to the other hosts, which feed
 * their own workers from their own share of the stored state.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "snapshot.h"
#include "boot.h"

static bool is_linear(const CNode *n)
{
    return n->k == OPK_MAP || n->k == OPK_UNION || n->k == OPK_NEGATE || n->k == OPK_UNNEST;
}

/* The diff's entry of the new program's relation rel, or NULL. */
static const PdRel *rel_of(const ProgDiff *d, int rel)
{
    for (int i = 0; i < d->nrels; i++)
        if (d->rels[i].new_rel == rel && rel >= 0)
            return &d->rels[i];
    return NULL;
}

/* Append to t the tables whose history node n needs (kept sources
   reached backwards through streams that cannot be computed), and to why
   each one's reason that it cannot be read again. */
static void tables_of(const BootPlan *b, const bool *comp, int n, bool *seen, Buf *t, Buf *why)
{
    const CNode *x = b->nc->nodes[n];
    if (seen[n] || comp[n])
        return;
    seen[n] = true;
    if (x->k == OPK_SOURCE) {
        const Relation *r = &b->nc->rels[x->rel];
        const char *u = progdiff_unreadable(r);
        buf_printf(t, "%s%s", t->n ? ", " : "", r->name);
        buf_printf(why, "%s%s: %s%s", why->n ? "; " : "", r->name, u ? u : "?",
                   cJSON_GetArraySize(r->connectors) ? ""
                   : ", the ingress log holding only what was pushed after the oldest "
                     "checkpoint kept");
        return;
    }
    for (int j = 0; j < x->nin; j++)
        tables_of(b, comp, x->in[j], seen, t, why);
}

/* Why new node n cannot be computed: its relation, and the tables whose
   history it needs through its input in. */
static int refuse(const BootPlan *b, const bool *comp, int n, int in, Err *err)
{
    const Circuit *c = b->nc;
    int owner = c->nodes[n]->owner;
    const Relation *r = owner >= 0 && owner < c->nrels ? &c->rels[owner] : NULL;
    const PdRel *pr = rel_of(b->d, owner);
    Buf t = BUF_INIT, why = BUF_INIT;
    bool *seen = sl_calloc((size_t)c->nnodes + 1, sizeof(bool));
    tables_of(b, comp, in, seen, &t, &why);
    sl_free(seen);
    bool tab = r && r->is_table; /* its new sink: it starts keeping its contents */
    int rc = err_set(err, SL_ECONFIG,
                     "bootstrapping: %s %s (%s)%s needs the history of %s, which the checkpoint "
                     "does not hold (stored state: the contents of materialized tables and "
                     "views and of tables WITH ('retain_input' = 'true'), the rows of PRIMARY "
                     "KEY tables, aggregates' results), and which cannot be read again from its "
                     "connectors (%s). %s",
                     tab ? "table" : r ? "view" : "?", r ? r->name : "?",
                     pr ? progdiff_status_name(pr->status) : "new",
                     tab ? ", which starts keeping its contents ('retain_input' or "
                           "'materialized' added),"
                         : "",
                     t.n ? (const char *)buf_cstr(&t) : "its tables",
                     why.n ? (const char *)buf_cstr(&why) : "?",
                     tab ? "Its rows pushed so far are gone: start with a new storage directory "
                           "to keep them from the beginning, or leave the property as it was"
                         : "Make what it reads materialized, or its tables WITH ('retain_input' "
                           "= 'true'), in the old program, or start with a new storage "
                           "directory");
    buf_free(&t);
    buf_free(&why);
    return rc;
}

/* Can table rel be read again up to a checkpoint's position, for the new
   part alone (progdiff_unreadable)? Datagen, files and S3 (rows in one
   fixed order: up to the checkpoint's row count), Kafka from a known
   start ("earliest" or explicit offsets: up to the checkpoint's offset of
   every partition) and PostgreSQL CDC (a new snapshot less the changes
   since the checkpoint's position: input_boot_at) can; a table fed over
   HTTP only or by Kafka from "latest" cannot. */
static bool rereadable(const Circuit *c, int rel)
{
    return !progdiff_unreadable(&c->rels[rel]);
}

/* The output connectors of circuit c in the order connectors_open opens
   them (relations in order, each view's connectors in order: a view's
   connectors are all outputs): per output its relation and JSON. */
static int outputs_of(const Circuit *c, int **rel, const cJSON ***json)
{
    int n = 0, cap = 0, cap2 = 0, n2 = 0;
    *rel = NULL;
    *json = NULL;
    for (int i = 0; i < c->nrels; i++) {
        const cJSON *e;
        if (c->rels[i].is_table || !c->rels[i].connectors)
            continue;
        cJSON_ArrayForEach(e, c->rels[i].connectors)
        {
            *VEC_PUSH(*rel, n, cap) = i;
            *VEC_PUSH(*json, n2, cap2) = e;
        }
    }
    return n;
}

/* Which old output each new output continues, and which new ones get a
   snapshot (BootPlan.out_from, out_snap): an output of a view whose sink
   is kept continues the old output of the view of the same name whose
   connector JSON is the same (key order and layout aside; each old
   output continued once); any other output of a kept view is a new
   destination, given the view's contents first when it is materialized
   (the sink holds them). Outputs of new and changed views start over
   (their sink is new: the bootstrap step computes their contents). */
static void map_outputs(BootPlan *b)
{
    int *orel, *nrel;
    const cJSON **ojs, **njs;
    int no = outputs_of(b->old, &orel, &ojs);
    b->nout = outputs_of(b->nc, &nrel, &njs);
    b->out_from = sl_calloc((size_t)b->nout + 1, sizeof(int));
    b->out_snap = sl_calloc((size_t)b->nout + 1, sizeof(bool));
    bool *taken = sl_calloc((size_t)no + 1, sizeof(bool));
    for (int j = 0; j < b->nout; j++) {
        const Relation *r = &b->nc->rels[nrel[j]];
        b->out_from[j] = -1;
        if (r->sink < 0 || b->is_new[r->sink])
            continue;
        for (int k = 0; k < no && b->out_from[j] < 0; k++)
            if (!taken[k] && !strcasecmp(b->old->rels[orel[k]].name, r->name) &&
                progdiff_same_json(ojs[k], njs[j]))
                taken[k] = true, b->out_from[j] = k;
        if (b->out_from[j] < 0 && r->materialized) {
            b->out_snap[j] = true;
            b->nsnap++;
        }
    }
    sl_free(taken);
    sl_free(orel);
    sl_free(nrel);
    sl_free(ojs);
    sl_free(njs);
}

/* Can table rel be read again through its live connectors, each on the
   host that reads it: all of them go back to where they started when
   opened and read the same rows (datagen, files, S3: in the same order;
   kafka_input from a known start: in replay mode, each partition up to
   the checkpoint's offset)? postgres_cdc_input is not (a second
   instance takes a new snapshot: input_boot_at). */
static bool rewindable(const Circuit *c, int rel)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, c->rels[rel].connectors)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(e, "transport"), "name");
        if (!cJSON_IsString(name) || (strcmp(name->valuestring, "datagen") &&
                                      strcmp(name->valuestring, "file_input") &&
                                      strcmp(name->valuestring, "s3_input") &&
                                      strcmp(name->valuestring, "kafka_input")))
            return false;
    }
    return true; /* (kafka_input only from a known start: rereadable) */
}

BootPlan *boot_plan_new(const Circuit *old, const char *old_text, uint64_t old_fp,
                        const Circuit *nc, const char *new_text, Err *err)
{
    BootPlan *b = sl_calloc(1, sizeof(*b));
    b->old = old;
    b->nc = nc;
    b->old_fp = old_fp;
    b->d = progdiff_new(old, old_text, nc, new_text);
    int nn = nc->nnodes;
    b->run = sl_calloc((size_t)nn + 1, sizeof(bool));
    b->is_new = sl_calloc((size_t)nn + 1, sizeof(bool));
    b->feed_sink = sl_calloc((size_t)nn + 1, sizeof(int));
    b->reread = sl_calloc((size_t)nc->nrels + 1, sizeof(bool));
    b->rewind = sl_calloc((size_t)nc->nrels + 1, sizeof(bool));
    bool *avail = sl_calloc((size_t)nn + 1, sizeof(bool));
    for (int n = 0; n < nn; n++) {
        int o = b->d->old_node[n];
        b->feed_sink[n] = -1;
        b->is_new[n] = o < 0;
        /* a sink's fingerprint does not name its relation: a view added (or
           renamed) with the body of an old one has a new sink all the same,
           so that its outputs start with its contents */
        if (o >= 0 && nc->nodes[n]->k == OPK_SINK &&
            strcasecmp(nc->rels[nc->nodes[n]->rel].name, old->rels[old->nodes[o]->rel].name))
            b->is_new[n] = true;
    }
    /* the kept streams the checkpoint holds whole: a kept materialized
       sink's input, and linear functions of such streams */
    for (int n = 0; n < nn; n++) {
        const CNode *s = nc->nodes[n];
        if (s->k != OPK_SINK || b->is_new[n] || !rel_keeps(&nc->rels[s->rel]) || s->nin != 1)
            continue;
        if (!b->is_new[s->in[0]]) {
            b->feed_sink[s->in[0]] = n;
            avail[s->in[0]] = true;
        }
    }
    for (int n = 0; n < nn; n++) /* a kept PRIMARY KEY table: its rows; an aggregate: its output */
        if ((nc->nodes[n]->k == OPK_UPSERT || nc->nodes[n]->k == OPK_AGG) && !b->is_new[n] &&
            b->feed_sink[n] < 0) {
            b->feed_sink[n] = n;
            avail[n] = true;
        }
    for (int n = 0; n < nn; n++) {
        const CNode *x = nc->nodes[n];
        if (b->is_new[n] || avail[n] || !is_linear(x))
            continue;
        bool all = x->nin > 0;
        for (int j = 0; j < x->nin; j++)
            all = all && avail[x->in[j]] && !b->is_new[x->in[j]];
        if (all)
            avail[n] = b->run[n] = true;
    }
    /* computable in the bootstrap step: a stored stream, a new table's
       (empty), or any other node over computable streams; a kept source
       is not (its history is not stored) */
    bool *comp = sl_calloc((size_t)nn + 1, sizeof(bool));
    for (int n = 0; n < nn; n++) {
        const CNode *x = nc->nodes[n];
        comp[n] = avail[n] ||
                  (x->k == OPK_SOURCE ? b->is_new[n] || rereadable(nc, x->rel) : true);
        for (int j = 0; j < x->nin && !avail[n]; j++)
            comp[n] = comp[n] && comp[x->in[j]];
    }
    for (int n = 0; n < nn; n++)
        if (b->is_new[n])
            b->run[n] = true;
    /* from the last node back: what a running node reads must be stored
       or run too; a kept node that is not stored but computable is
       recomputed (its state rebuilt from its inputs' contents: e.g. a
       kept join under a changed projection), else the plan refuses */
    int rc = 0;
    for (int n = nn - 1; n >= 0 && !rc; n--) {
        if (!b->run[n] || avail[n])
            continue;
        const CNode *x = nc->nodes[n];
        for (int j = 0; j < x->nin && !rc; j++) {
            int i = x->in[j];
            if (b->run[i] || avail[i])
                continue;
            if (!comp[i]) {
                rc = refuse(b, comp, n, i, err);
                break;
            }
            if (nc->nodes[i]->k == OPK_SOURCE) { /* a kept table read again for the new part */
                b->run[i] = b->reread[nc->nodes[i]->rel] = true;
                continue;
            }
            b->run[i] = b->is_new[i] = true; /* recomputed: its old state is not loaded */
        }
    }
    for (int n = 0; n < nn; n++)
        b->nnew += b->is_new[n];
    sl_free(comp);
    sl_free(avail);
    for (int r = 0; r < nc->nrels && !rc; r++)
        b->rewind[r] = b->reread[r] && rewindable(nc, r);
    if (!rc)
        map_outputs(b);
    if (rc) {
        boot_plan_free(b);
        return NULL;
    }
    return b;
}

void boot_plan_free(BootPlan *b)
{
    if (!b)
        return;
    progdiff_free(b->d);
    sl_free(b->run);
    sl_free(b->is_new);
    sl_free(b->feed_sink);
    sl_free(b->reread);
    sl_free(b->rewind);
    sl_free(b->out_from);
    sl_free(b->out_snap);
    for (int j = 0; b->snapb && j < b->nout; j++)
        if (b->snapb[j])
            batch_unref(b->snapb[j]);
    sl_free(b->snapb);
    sl_free(b->target);
    sl_free(b->tpos);
    if (b->bc)
        sl_free(b->bc->rels);
    sl_free(b->bc);
    sl_free(b->feed);
    batchlist_free(&b->held);
    if (b->arena)
        arena_free(b->arena);
    sl_free(b);
}

cJSON *boot_state(const BootPlan *b, const cJSON *state)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *e;
    cJSON_ArrayForEach(e, state)
    {
        int64_t node = ckpt_jint(e, "node");
        if (node < 0 || node >= b->old->nnodes)
            continue;
        /* every kept new node computing its stream takes it (two views may
           share a sub-stream); none: its state is released */
        for (int n = 0; n < b->nc->nnodes; n++) {
            if (b->is_new[n] || b->d->old_node[n] != node)
                continue;
            cJSON *c = cJSON_Duplicate(e, true);
            cJSON_ReplaceItemInObjectCaseSensitive(c, "node", cJSON_CreateNumber(n));
            cJSON_AddItemToArray(out, c);
        }
    }
    return out;
}

/* Does the new program's table rel continue its old stream: its source
   is kept (same name, columns, connectors: the same history, so its
   connectors continue)? */
static bool kept_table(const BootPlan *b, int rel)
{
    const Circuit *c = b->nc;
    if (rel < 0 || rel >= c->nrels)
        return false;
    for (int n = 0; n < c->nnodes; n++)
        if (c->nodes[n]->k == OPK_SOURCE && c->nodes[n]->rel == rel)
            return !b->is_new[n];
    return false;
}

/* The manifest entry (in "inputs" or "outputs") named name, or NULL. */
static const cJSON *named(const cJSON *m, const char *list, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(m, list))
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(v) && !strcasecmp(v->valuestring, name))
            return e;
    }
    return NULL;
}

/* The manifest entry of the old output that output j continues, or NULL
   (a new destination: map_outputs). */
static const cJSON *old_output(const BootPlan *b, const Connectors *cs, const cJSON *m, int j)
{
    if (cs->nout != b->nout || j < 0 || j >= b->nout || b->out_from[j] < 0)
        return NULL;
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "outputs"), b->out_from[j]);
}

int boot_positions(BootPlan *b, Connectors *cs, const cJSON *m, Err *err)
{
    sl_free(b->target);
    sl_free(b->tpos);
    b->target = sl_calloc((size_t)cs->nin + 1, sizeof(int64_t));
    b->tpos = sl_calloc((size_t)cs->nin + 1, sizeof(InPos));
    for (int j = 0; j < cs->nin; j++) {
        const cJSON *e = named(m, "inputs", input_name(cs->in[j]));
        b->target[j] = -1;
        if (e && b->reread[input_rel(cs->in[j])]) /* read again up to here */
            b->target[j] = ckpt_jint(e, "rows");
        if (!e && kept_table(b, input_rel(cs->in[j]))) {
            /* a kept table continues where it was, so it must have a
               position: only an input whose name depends on the host count
               (an s3_input's "part h/H") can lack one, and its positions
               fit only the host count that wrote them (from the beginning
               its kept views would see its history twice) */
            int64_t h = ckpt_jint(m, "hosts") > 0 ? ckpt_jint(m, "hosts") : 1;
            return err_set(err, SL_ECONFIG,
                           "bootstrapping: input %s of the kept table %s has no position in the "
                           "checkpoint, which was written with --hosts %lld (an s3_input's "
                           "positions are per part, \"part h/H\", and fit only that host "
                           "count, as in any restart): bootstrap with --hosts %lld",
                           input_name(cs->in[j]), b->nc->rels[input_rel(cs->in[j])].name,
                           (long long)h, (long long)h);
        }
        if (!e || !kept_table(b, input_rel(cs->in[j])))
            continue; /* starts from the beginning */
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "pos");
        InPos *pos = sl_calloc(1, sizeof(*pos));
        ckpt_jint_get(cJSON_GetArrayItem(v, 0), &pos->v[0]); /* manifest_check: all read */
        ckpt_jint_get(cJSON_GetArrayItem(v, 1), &pos->v[1]);
        pos->rows = ckpt_jint(e, "rows");
        pos->errors = ckpt_jint(e, "errors");
        pos->bytes = ckpt_jint(e, "bytes");
        pos->nx = cJSON_GetArraySize(v) - 2;
        for (int i = 0; i < pos->nx && i < INPOS_MAX; i++)
            ckpt_jint_get(cJSON_GetArrayItem(v, 2 + i), &pos->x[i]);
        b->tpos[j] = *pos;
        int rc = input_seek(cs->in[j], pos, err);
        sl_free(pos);
        if (rc)
            return rc;
    }
    for (int j = 0; j < cs->nout; j++) {
        const cJSON *e = old_output(b, cs, m, j);
        if (e)
            output_set_counts(cs->out[j], ckpt_jint(e, "records"), ckpt_jint(e, "bytes"));
    }
    return 0;
}

int boot_check_queues(const BootPlan *b, const char *dir, Err *err)
{
    if (!dir)
        return 0;
    int *orel;
    const cJSON **ojs;
    int no = outputs_of(b->old, &orel, &ojs), rc = 0;
    for (int k = 0; k < no && !rc; k++) {
        Buf pb = BUF_INIT;
        buf_printf(&pb, "%s/delivery/out%d.queue", dir, k);
        const char *path = buf_cstr(&pb);
        struct stat sb;
        bool queued = !stat(path, &sb) && sb.st_size > 0;
        int j = -1; /* the new output continuing it */
        for (int i = 0; i < b->nout && j < 0; i++)
            if (b->out_from[i] == k)
                j = i;
        if (queued && j != k) {
            Buf to = BUF_INIT;
            if (j < 0)
                buf_puts(&to, "the new program does not continue it");
            else
                buf_printf(&to, "the new program numbers it %d", j);
            rc = err_set(err, SL_ECONFIG,
                         "bootstrapping: output %d of the old program (of view %s) has steps "
                         "queued for its destination and not delivered yet (%s), and %s: "
                         "queues are named by output number, so they would reach another "
                         "output. Run the old program until its queues drain (its "
                         "destinations back), then bootstrap",
                         k, b->old->rels[orel[k]].name, path, (const char *)buf_cstr(&to));
            buf_free(&to);
        }
        buf_free(&pb);
    }
    sl_free(orel);
    sl_free(ojs);
    return rc;
}

int64_t boot_out_offset(const BootPlan *b, const Connectors *cs, const cJSON *m, int j)
{
    const cJSON *e = old_output(b, cs, m, j);
    int64_t off = e ? ckpt_jint(e, "offset") : 0;
    return off > 0 ? off : 0;
}

typedef struct SinkRows {
    Chunk *c;     /* NULL: counting */
    int64_t rows;
    Arena *a;
    const CNode *n;
} SinkRows;

static void sink_row(void *arg, const uint8_t *row, size_t n, int64_t w)
{
    SinkRows *x = arg;
    if (!x->c) {
        x->rows++;
        return;
    }
    uint8_t *copy = arena_alloc(x->a, n ? n : 1); /* (a spilled row's block goes) */
    memcpy(copy, row, n);
    key_decode(copy, x->n->types, x->n->ncol, x->c, 0, x->c->n);
    x->c->w[x->c->n++] = w;
}

/* The contents of sink s on local worker w as one chunk of node n's
   columns (strings point into copies in b's arena). */
static Chunk *sink_chunk(BootPlan *b, Runtime *rt, int w, int s, const CNode *n)
{
    SinkRows x = {NULL, 0, b->arena, n};
    op_sink_rows(rt_op(rt, w, s), sink_row, &x);
    x.c = chunk_new(b->arena, n->ncol, n->types, x.rows ? x.rows : 1);
    op_sink_rows(rt_op(rt, w, s), sink_row, &x);
    return x.c;
}

/* The rows of the PRIMARY KEY table kept by upsert node n on local worker
   w (its saved state: key, row encoding, weight 1); the batches stay
   referenced in b->held (strings point into them). */
static Chunk *upsert_chunk(BootPlan *b, Runtime *rt, int w, const CNode *n)
{
    BatchList l = {0};
    rt_save(rt, w, n->id, &l);
    int64_t rows = 0;
    for (int i = 0; i < l.n; i++)
        rows += l.b[i]->n;
    Chunk *c = chunk_new(b->arena, n->ncol, n->types, rows ? rows : 1);
    for (int i = 0; i < l.n; i++) {
        const Batch *x = l.b[i];
        for (int64_t r = 0; r < x->n; r++) {
            key_decode(batch_val(x, r), n->types, n->ncol, c, 0, c->n);
            c->w[c->n++] = x->w[r];
        }
        batch_ref(l.b[i]);
        batchlist_add(&b->held, l.b[i]);
    }
    batchlist_free(&l);
    return c;
}

typedef struct Rows {
    const CNode *n;
    Chunk *c;
    int64_t count;
} Rows;

static void count_row(void *arg, const uint8_t *row, size_t n)
{
    (void)row;
    (void)n;
    ((Rows *)arg)->count++;
}

static void add_row(void *arg, const uint8_t *row, size_t n)
{
    Rows *r = arg;
    (void)n;
    key_decode(row, r->n->types, r->n->ncol, r->c, 0, r->c->n);
    r->c->w[r->c->n++] = 1;
}

/* The current output rows of aggregate node n on local worker w (strings
   point into its groups, which the bootstrap step does not change: it is
   fed, not run). */
static Chunk *agg_chunk(BootPlan *b, Runtime *rt, int w, const CNode *n)
{
    Op *op = rt_op(rt, w, n->id);
    Rows r = {n, NULL, 0};
    op_agg_rows(op, count_row, &r);
    r.c = chunk_new(b->arena, n->ncol, n->types, r.count ? r.count : 1);
    op_agg_rows(op, add_row, &r);
    return r.c;
}

Chunk *const *boot_feed(BootPlan *b, Runtime *rt)
{
    int nn = b->nc->nnodes, nl = rt_workers(rt);
    if (!b->arena)
        b->arena = arena_new(1 << 20);
    sl_free(b->feed);
    b->feed = sl_calloc((size_t)nl * (size_t)nn + 1, sizeof(Chunk *));
    for (int w = 0; w < nl; w++)
        for (int n = 0; n < nn; n++)
            if (b->feed_sink[n] >= 0)
                b->feed[(size_t)w * (size_t)nn + (size_t)n] =
                    b->feed_sink[n] != n ? sink_chunk(b, rt, w, b->feed_sink[n], b->nc->nodes[n])
                    : b->nc->nodes[n]->k == OPK_AGG ? agg_chunk(b, rt, w, b->nc->nodes[n])
                                                    : upsert_chunk(b, rt, w, b->nc->nodes[n]);
    return b->feed;
}

int boot_backfill_open(BootPlan *b, const Connectors *cs, Connectors *out, Err *err)
{
    const Circuit *c = b->nc;
    memset(out, 0, sizeof(*out));
    b->bc = sl_calloc(1, sizeof(Circuit));
    *b->bc = *c;
    b->bc->rels = sl_calloc((size_t)c->nrels + 1, sizeof(Relation));
    memcpy(b->bc->rels, c->rels, sizeof(Relation) * (size_t)c->nrels);
    bool any = false;
    for (int r = 0; r < c->nrels; r++) {
        bool second = c->rels[r].is_table && b->reread[r] && !b->rewind[r];
        if (!second)
            b->bc->rels[r].connectors = NULL; /* only the tables read again so */
        any |= second;
    }
    if (!any)
        return 0;
    int rc = connectors_open(b->bc, true, out, err);
    for (int j = 0; rc == 0 && j < out->nin; j++) {
        input_set_replay(out->in[j], true); /* no rate limits */
        int64_t t = -1;
        int at = -1;
        for (int k = 0; k < cs->nin && t < 0; k++)
            if (!strcmp(input_name(cs->in[k]), input_name(out->in[j])))
                t = b->target ? b->target[k] : -1, at = k;
        if (t < 0) /* read for the new part only up to where the live one is */
            rc = err_set(err, SL_EIO, "bootstrapping: %s: no position in the checkpoint to read "
                         "it again up to", input_name(out->in[j]));
        else if (!strcmp(input_transport(out->in[j]), "postgres_cdc_input") &&
                 !input_boot_at(out->in[j], &b->tpos[at])) /* the table as it was there */
            rc = err_set(err, SL_EIO, "bootstrapping: %s cannot be read again",
                         input_name(out->in[j]));
    }
    return rc;
}

int64_t boot_backfill_target(const BootPlan *b, const Connectors *cs, InputConn *ic)
{
    for (int k = 0; k < cs->nin; k++) {
        if (strcmp(input_name(cs->in[k]), input_name(ic)) || !b->target)
            continue;
        if (!strcmp(input_transport(ic), "postgres_cdc_input"))
            return INT64_MAX; /* until it ends (input_boot_at) */
        return b->target[k];
    }
    return -1;
}

void boot_plan_put(const BootPlan *b, Buf *out)
{
    int nn = b->nc->nnodes;
    put32(out, nn);
    for (int n = 0; n < nn; n++) {
        put32(out, b->run[n] | (b->is_new[n] << 1));
        put32(out, b->feed_sink[n]);
    }
}

BootPlan *boot_plan_get(const Circuit *nc, Rd *r)
{
    int nn = rd32(r);
    if (r->bad || nn != nc->nnodes)
        return NULL;
    BootPlan *b = sl_calloc(1, sizeof(*b));
    b->nc = nc;
    b->run = sl_calloc((size_t)nn + 1, sizeof(bool));
    b->is_new = sl_calloc((size_t)nn + 1, sizeof(bool));
    b->feed_sink = sl_calloc((size_t)nn + 1, sizeof(int));
    for (int n = 0; n < nn; n++) {
        int32_t f = rd32(r), s = rd32(r);
        b->run[n] = f & 1;
        b->is_new[n] = (f & 2) != 0;
        b->feed_sink[n] = s;
        /* a fed node is fed its own integral or a kept materialized sink's */
        if (s >= nn || s < -1 || (s >= 0 && s != n && nc->nodes[s]->k != OPK_SINK) ||
            (s == n && nc->nodes[n]->k != OPK_UPSERT && nc->nodes[n]->k != OPK_AGG))
            r->bad = true;
        b->nnew += b->is_new[n];
    }
    if (r->bad) {
        boot_plan_free(b);
        return NULL;
    }
    return b;
}
