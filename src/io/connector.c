/*
 * io/connector.c - the connector registry: reads each relation's connectors
 * JSON, validates every key (unknown keys are errors that name the key, the
 * relation and the connector), and builds input/output connector objects.
 *
 * A transport is a row of transports[] below: its name, its open function
 * (which direction it has) and its ops table (io_int.h), which the
 * transport's file ends with. The input_* and output_* functions of
 * connector.h do what every connector shares here (max_batch_size, the
 * counters that ride in a position, scale-out proxies, whose ops are never
 * called) and call the ops for the rest. The open functions of the first
 * transports live here (they are glue over their files' config calls); a
 * new transport keeps its open function in its own file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "deliver.h"
#include "io_int.h"

double io_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void piece_append(Piece **l, Piece *p)
{
    p->next = NULL;
    while (*l)
        l = &(*l)->next;
    *l = p;
}

static int cerr(Err *err, const Relation *r, const char *fmt, const char *name, const char *detail)
{
    return err_setpos(err, SL_ECONFIG, r->conn_line, r->conn_col, fmt, name, detail);
}

int io_conf_err(const ConnCtx *cx, Err *err, const char *msg)
{
    return cerr(err, cx->r, "%s: %s", cx->where, msg);
}

static bool key_in(const char *k, const char *const *allowed)
{
    for (; *allowed; allowed++)
        if (!strcmp(k, *allowed))
            return true;
    return false;
}

static int check_keys(const cJSON *obj, const char *const *allowed, const Relation *r,
                      const char *where, const char *what, Err *err)
{
    for (const cJSON *it = obj->child; it; it = it->next)
        if (!key_in(it->string, allowed)) {
            char d[256];
            snprintf(d, sizeof(d), "unknown key \"%s\" in %s", it->string, what);
            return cerr(err, r, "%s: %s", where, d);
        }
    return 0;
}

int io_parse_format(const ConnCtx *cx, FmtKind *out, bool *csv_header, JsonUpd *upd, Err *err)
{
    static const char *const fkeys[] = {"name", "config", NULL};
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(cx->cj, "format");
    const Relation *r = cx->r;
    const char *where = cx->where;
    if (!fmt) {
        *out = FMT_CSV;
        return 0;
    }
    if (!cJSON_IsObject(fmt))
        return cerr(err, r, "%s: %s", where, "\"format\" must be an object");
    if (check_keys(fmt, fkeys, r, where, "format", err))
        return err->code;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(fmt, "name");
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(fmt, "config");
    if (!cJSON_IsString(name))
        return cerr(err, r, "%s: %s", where, "format needs a \"name\" (\"csv\" or \"json\")");
    if (cfg && !cJSON_IsObject(cfg))
        return cerr(err, r, "%s: %s", where, "format \"config\" must be an object");
    if (!strcmp(name->valuestring, "csv")) {
        static const char *const ckeys[] = {"headers", "delimiter", NULL};
        *out = FMT_CSV;
        if (cfg) {
            if (check_keys(cfg, ckeys, r, where, "csv format config", err))
                return err->code;
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(cfg, "headers");
            if (h && !cJSON_IsBool(h))
                return cerr(err, r, "%s: %s", where, "csv \"headers\" must be true or false");
            if (csv_header)
                *csv_header = h && cJSON_IsTrue(h);
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(cfg, "delimiter");
            if (d && (!cJSON_IsString(d) || strcmp(d->valuestring, ",")))
                return cerr(err, r, "%s: %s", where,
                            "csv \"delimiter\" other than \",\" is not supported yet");
        }
        return 0;
    }
    if (!strcmp(name->valuestring, "json")) {
        static const char *const jkeys[] = {"update_format", "array", "lines", NULL};
        *out = FMT_JSON;
        if (cfg) {
            if (check_keys(cfg, jkeys, r, where, "json format config", err))
                return err->code;
            const cJSON *u = cJSON_GetObjectItemCaseSensitive(cfg, "update_format");
            bool dbz = u && cJSON_IsString(u) && !strcmp(u->valuestring, "debezium") && upd;
            if (u && !dbz && (!cJSON_IsString(u) || (strcmp(u->valuestring, "insert_delete") &&
                                                     strcmp(u->valuestring, "raw"))))
                return cerr(err, r, "%s: %s", where,
                            "json \"update_format\" must be \"insert_delete\" or \"raw\" "
                            "(\"debezium\" with kafka_input; others are not supported yet)");
            if (upd && u)
                *upd = dbz ? JU_DEBEZIUM : !strcmp(u->valuestring, "raw") ? JU_RAW
                                                                          : JU_INSERT_DELETE;
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(cfg, "array");
            if (a && cJSON_IsTrue(a))
                return cerr(err, r, "%s: %s", where,
                            "json \"array\": true is not supported yet (use one JSON object per line)");
        }
        return 0;
    }
    char d[128];
    snprintf(d, sizeof(d), "unknown format \"%s\" (known: csv, json)", name->valuestring);
    return cerr(err, r, "%s: %s", where, d);
}

static void schema_of(const Relation *r, RowSchema *s)
{
    s->ncol = r->ncol;
    s->names = (const char *const *)r->colnames;
    s->types = r->types;
}

/* "<where> part h+1/H" in name[n] (where shortened if need be). */
static void part_name(char *name, size_t n, const char *where, int h, int H)
{
    char tag[32];
    snprintf(tag, sizeof(tag), " part %d/%d", h + 1, H);
    size_t wl = strlen(where), tl = strlen(tag);
    if (wl + tl >= n)
        wl = n - tl - 1;
    memcpy(name, where, wl);
    memcpy(name + wl, tag, tl + 1);
}

/* ---------------------------------------------------------------- opening
   One function per transport: check its config and format, open it when
   cx->open, and say where it runs (scale-out: file-like and Kafka inputs
   go round-robin to the hosts, the k-th to host k % hosts, and so do
   PostgreSQL change streams and outputs). The input's or output's shared fields are set
   before; errors name the connector (cx->where). */

static void place_round_robin(InputConn *ic, const ConnCtx *cx)
{
    ic->owner = (*cx->nfile)++ % cx->hosts;
    ic->remote = ic->owner != cx->host;
}

/* http_input declares the table's HTTP ingress endpoint (its name and
   event-time column); it reads nothing itself. */
static int open_http(InputConn *ic, const ConnCtx *cx, Err *err)
{
    ic->done = true;
    if (cx->cfg && cx->cfg->child)
        return io_conf_err(cx, err, "http_input takes no config");
    if (cJSON_GetObjectItemCaseSensitive(cx->cj, "format"))
        return io_conf_err(cx, err,
                           "http_input takes no \"format\" (each request names its format)");
    if (cx->txn)
        return io_conf_err(cx, err,
                           "\"transaction\": \"backfill\" needs an input that ends; HTTP input "
                           "uses /start_transaction and /commit_transaction");
    return 0;
}

static int open_datagen(InputConn *ic, const ConnCtx *cx, Err *err)
{
    const Relation *r = cx->r;
    if (cJSON_GetObjectItemCaseSensitive(cx->cj, "format"))
        return io_conf_err(cx, err, "datagen takes no \"format\"");
    Err e = {0};
    ic->gen = datagen_new(cx->cfg, r->ncol, (const char *const *)r->colnames, r->types,
                          cx->where, &e);
    if (!ic->gen)
        return err_setpos(err, SL_ECONFIG, r->conn_line, r->conn_col, "%s", e.msg);
    if (ic->backfill)
        for (int pl = 0; pl < datagen_nplans(ic->gen); pl++)
            if (datagen_plan_limit(ic->gen, pl) < 0)
                return io_conf_err(cx, err,
                                   "\"transaction\": \"backfill\" needs an input that ends, "
                                   "but a datagen plan has no \"limit\"");
    return 0;
}

/* Mark in read[] the columns expression e reads. */
static void mark_cols(const Expr *e, bool *read, int ncol)
{
    if (!e)
        return;
    if (e->k == E_COL && e->col >= 0 && e->col < ncol)
        read[e->col] = true;
    for (int i = 0; i < e->na; i++)
        mark_cols(e->a[i], read, ncol);
}

/* The output columns of node `id` that the program may read, into
   read[0..ncol): a consumer that is a map reads what its filter names and
   what its projections name for the columns its own consumers read (maps
   followed down to depth 8); any other consumer, or a relation whose
   stream the node is (a view over the table as it is, its sink), reads
   every column. */
static void node_reads(const Circuit *c, int id, bool *read, int depth)
{
    const CNode *n = c->nodes[id];
    bool all = depth > 8;
    for (int r = 0; r < c->nrels && !all; r++)
        all = c->rels[r].node == id && (c->rels[r].sink >= 0 || rel_keeps(&c->rels[r]) ||
                                         !c->rels[r].is_table);
    for (int i = id + 1; i < c->nnodes && !all; i++) {
        const CNode *m = c->nodes[i];
        for (int j = 0; j < m->nin && !all; j++) {
            if (m->in[j] != id)
                continue;
            if (m->k != OPK_MAP) {
                all = true;
                break;
            }
            bool *mr = sl_calloc((size_t)m->ncol + 1, sizeof(bool));
            node_reads(c, m->id, mr, depth + 1);
            mark_cols(m->filter, read, n->ncol);
            for (int k = 0; k < m->ncol; k++)
                if (mr[k])
                    mark_cols(m->proj[k], read, n->ncol);
            sl_free(mr);
        }
    }
    if (all)
        for (int k = 0; k < n->ncol; k++)
            read[k] = true;
}

/* nexmark: a datagen generator of Nexmark events (nexmark.c). The columns
   the program never reads are not generated (nexmark_skip_unread): the
   table's own stream is read only by the circuit's nodes, except for its
   LATENESS column (watermarks), its primary key and the connector's
   event_time_column, kept whatever reads them. */
static int open_nexmark(InputConn *ic, const ConnCtx *cx, Err *err)
{
    const Relation *r = cx->r;
    if (cJSON_GetObjectItemCaseSensitive(cx->cj, "format"))
        return io_conf_err(cx, err, "nexmark takes no \"format\"");
    Err e = {0};
    ic->gen = nexmark_new(cx->cfg, r->name, r->ncol, (const char *const *)r->colnames, r->types,
                          cx->where, &e);
    if (!ic->gen)
        return err_setpos(err, SL_ECONFIG, r->conn_line, r->conn_col, "%s", e.msg);
    if (cx->c && r->node >= 0 && r->node < cx->c->nnodes &&
        cx->c->nodes[r->node]->ncol == r->ncol) {
        bool *read = sl_calloc((size_t)r->ncol + 1, sizeof(bool));
        node_reads(cx->c, r->node, read, 0);
        if (r->wm_col >= 0)
            read[r->wm_col] = true;
        if (r->time_col >= 0)
            read[r->time_col] = true;
        for (int k = 0; k < r->npk; k++)
            read[r->pk[k]] = true;
        if (ic->event_col >= 0)
            read[ic->event_col] = true;
        nexmark_skip_unread(ic->gen, read);
        sl_free(read);
    }
    if (ic->backfill && datagen_plan_limit(ic->gen, 0) < 0)
        return io_conf_err(cx, err, "\"transaction\": \"backfill\" needs an input that ends, "
                                    "but nexmark \"events\" is 0 (unbounded)");
    return 0;
}

static int open_s3(InputConn *ic, const ConnCtx *cx, Err *err)
{
    char why[512];
    if (tr_s3_config(ic, cx->cfg, cx->open, why, sizeof(why)))
        return io_conf_err(cx, err, why);
    if (io_parse_format(cx, &ic->fmt, &ic->csv_header, NULL, err))
        return err->code;
    place_round_robin(ic, cx);
    /* scale-out: one part per host, each reading every H-th object */
    int H = cx->hosts;
    for (int h = 1; h < H; h++) {
        InputConn *pc = sl_calloc(1, sizeof(*pc));
        *pc = (InputConn){.ops = ic->ops, .transport = ic->transport, .rel = ic->rel,
                          .schema = ic->schema, .max_batch = ic->max_batch, .plan_start = -1,
                          .backfill = ic->backfill, .event_col = ic->event_col,
                          .fmt = ic->fmt, .csv_header = ic->csv_header};
        part_name(pc->name, sizeof(pc->name), cx->where, h, H);
        *VEC_PUSH(cx->cs->in, cx->cs->nin, cx->cs->capin) = pc;
        if (tr_s3_config(pc, cx->cfg, cx->open, why, sizeof(why)))
            return io_conf_err(cx, err, why);
        tr_s3_set_part(pc, h, H);
        place_round_robin(pc, cx);
    }
    if (H > 1) {
        part_name(ic->name, sizeof(ic->name), cx->where, 0, H);
        tr_s3_set_part(ic, 0, H);
    }
    return 0;
}

static int open_pg_cdc(InputConn *ic, const ConnCtx *cx, Err *err)
{
    const Relation *r = cx->r;
    if (cJSON_GetObjectItemCaseSensitive(cx->cj, "format"))
        return io_conf_err(cx, err,
                           "postgres_cdc_input takes no \"format\" (values come as text)");
    if (cx->txn)
        return io_conf_err(cx, err,
                           "\"transaction\": \"backfill\" needs an input that ends; a change "
                           "stream does not");
    Err e = {0};
    if (tr_pg_cdc_config(ic, cx->cfg, cx->where, &e))
        return err_setpos(err, SL_ECONFIG, r->conn_line, r->conn_col, "%s", e.msg);
    place_round_robin(ic, cx); /* read on one host (a proxy elsewhere), as Kafka */
    if (cx->open && !ic->remote && tr_pg_cdc_open(ic, err))
        return err->code;
    return 0;
}

static int open_kafka_in(InputConn *ic, const ConnCtx *cx, Err *err)
{
    const Relation *r = cx->r;
    place_round_robin(ic, cx); /* read on one host (a proxy elsewhere), as file inputs */
    if (cx->txn)
        return io_conf_err(cx, err,
                           "\"transaction\": \"backfill\" needs an input that ends; a Kafka "
                           "topic does not");
    if (io_parse_format(cx, &ic->fmt, &ic->csv_header, &ic->json_upd, err))
        return err->code;
    Err e = {0};
    if (tr_kafka_open(ic, cx->cfg, cx->open && !ic->remote, &e))
        return err_setpos(err, e.code, r->conn_line, r->conn_col, "%s", e.msg);
    return 0;
}

static int open_file_in(InputConn *ic, const ConnCtx *cx, Err *err)
{
    static const char *const fkeys[] = {"path", "buffer_size_bytes", "follow", NULL};
    const cJSON *cfg = cx->cfg;
    if (!cfg)
        return io_conf_err(cx, err, "file_input needs a config with \"path\"");
    if (check_keys(cfg, fkeys, cx->r, cx->where, "file_input config", err))
        return err->code;
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(cfg, "path");
    if (!cJSON_IsString(path) || !*path->valuestring)
        return io_conf_err(cx, err, "file_input needs a \"path\" string");
    const cJSON *fol = cJSON_GetObjectItemCaseSensitive(cfg, "follow");
    if (fol && cJSON_IsTrue(fol))
        return io_conf_err(cx, err, "\"follow\": true is not supported yet");
    ic->path = sl_strdup(path->valuestring);
    if (io_parse_format(cx, &ic->fmt, &ic->csv_header, NULL, err))
        return err->code;
    place_round_robin(ic, cx);
    if (cx->open && !ic->remote) {
        ic->f = fopen(ic->path, "rb");
        if (!ic->f)
            return err_set(err, SL_EIO, "%s: cannot open \"%s\": %s", cx->where, ic->path,
                           strerror(errno));
    }
    ic->line = 1;
    return 0;
}

static int open_pg_out(OutputConn *oc, const ConnCtx *cx, Err *err)
{
    const Relation *r = cx->r;
    if (cJSON_GetObjectItemCaseSensitive(cx->cj, "format"))
        return io_conf_err(cx, err, "postgres_output takes no \"format\" (rows go to the "
                                    "table's columns)");
    Err e = {0};
    if (tr_pg_out_config(oc, cx->cfg, cx->where, &e))
        return err_setpos(err, SL_ECONFIG, r->conn_line, r->conn_col, "%s", e.msg);
    if (cx->open && !oc->remote && tr_pg_out_open(oc, err))
        return err->code;
    return 0;
}

static int open_file_out(OutputConn *oc, const ConnCtx *cx, Err *err)
{
    static const char *const okeys[] = {"path", NULL};
    const cJSON *cfg = cx->cfg;
    if (!cfg)
        return io_conf_err(cx, err, "file_output needs a config with \"path\"");
    if (check_keys(cfg, okeys, cx->r, cx->where, "file_output config", err))
        return err->code;
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(cfg, "path");
    if (!cJSON_IsString(path) || !*path->valuestring)
        return io_conf_err(cx, err, "file_output needs a \"path\" string");
    oc->path = sl_strdup(path->valuestring);
    if (io_parse_format(cx, &oc->fmt, NULL, NULL, err))
        return err->code;
    if (cx->open && !oc->remote) {
        /* not truncated here: see output_truncate */
        int fd = openat(AT_FDCWD, oc->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        oc->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (fd >= 0 && !oc->f)
            close(fd);
        if (!oc->f)
            return err_set(err, SL_EIO, "%s: cannot create \"%s\": %s", cx->where, oc->path,
                           strerror(errno));
    }
    return 0;
}

static int open_kafka_out(OutputConn *oc, const ConnCtx *cx, Err *err)
{
    const Relation *r = cx->r;
    if (io_parse_format(cx, &oc->fmt, NULL, NULL, err))
        return err->code;
    Err e = {0};
    if (tr_kafka_out_open(oc, cx->cfg, cx->open && !oc->remote, &e))
        return err_setpos(err, e.code, r->conn_line, r->conn_col, "%s", e.msg);
    return 0;
}

static const InOps http_in_ops = {0}; /* reads nothing: the controller's HTTP queue does */

/* ---------------------------------------------------------------- the transports
   Adding one: a tr_<name>.c with its open function and its ops table
   (declared in io_int.h), and its line here. Exactly one of open_in and
   open_out is set: the direction. */
typedef struct Transport {
    const char *name;
    int (*open_in)(InputConn *ic, const ConnCtx *cx, Err *err);
    const InOps *in;
    int (*open_out)(OutputConn *oc, const ConnCtx *cx, Err *err);
    const OutOps *out;
} Transport;

static const Transport transports[] = {
    {"datagen", open_datagen, &tr_datagen_in_ops, NULL, NULL},
    {"nexmark", open_nexmark, &tr_datagen_in_ops, NULL, NULL},
    {"file_input", open_file_in, &tr_file_in_ops, NULL, NULL},
    {"s3_input", open_s3, &tr_s3_in_ops, NULL, NULL},
    {"http_input", open_http, &http_in_ops, NULL, NULL},
    {"postgres_cdc_input", open_pg_cdc, &tr_pg_cdc_in_ops, NULL, NULL},
    {"kafka_input", open_kafka_in, &tr_kafka_in_ops, NULL, NULL},
    {"file_output", NULL, NULL, open_file_out, &tr_file_out_ops},
    {"postgres_output", NULL, NULL, open_pg_out, &tr_pg_out_ops},
    {"kafka_output", NULL, NULL, open_kafka_out, &tr_kafka_out_ops},
};

static const Transport *transport_of(const char *name)
{
    for (size_t i = 0; i < ARRAY_LEN(transports); i++)
        if (!strcmp(transports[i].name, name))
            return &transports[i];
    return NULL;
}

static int open_one(const Circuit *c, int rel, int idx, const cJSON *cj, ConnCtx *cx, Err *err)
{
    static const char *const keys[] = {"name", "transport", "format", "max_batch_size",
                                       "max_queued_records", "max_worker_batch_size",
                                       "transaction", "event_time_column", "delivery", NULL};
    const Relation *r = &c->rels[rel];
    char where[192];
    snprintf(where, sizeof(where), "%s %s, connector %d", r->is_table ? "table" : "view",
             r->name, idx);
    if (!cJSON_IsObject(cj))
        return cerr(err, r, "%s: %s", where, "each connector must be a JSON object");
    if (check_keys(cj, keys, r, where, "connector", err))
        return err->code;
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(cj, "transport");
    if (!cJSON_IsObject(tr))
        return cerr(err, r, "%s: %s", where, "missing \"transport\" object");
    static const char *const tkeys[] = {"name", "config", NULL};
    if (check_keys(tr, tkeys, r, where, "transport", err))
        return err->code;
    const cJSON *tn = cJSON_GetObjectItemCaseSensitive(tr, "name");
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(tr, "config");
    if (!cJSON_IsString(tn))
        return cerr(err, r, "%s: %s", where, "transport needs a \"name\"");
    if (cfg && !cJSON_IsObject(cfg))
        return cerr(err, r, "%s: %s", where, "transport \"config\" must be an object");
    const char *t = tn->valuestring;
    size_t wl = strlen(where);
    snprintf(where + wl, sizeof(where) - wl, " (%s)", t);
    const cJSON *mb = cJSON_GetObjectItemCaseSensitive(cj, "max_batch_size");
    if (mb && (!cJSON_IsNumber(mb) || mb->valuedouble < 1))
        return cerr(err, r, "%s: %s", where, "\"max_batch_size\" must be a positive number");

    const Transport *tp = transport_of(t);
    const cJSON *txn = cJSON_GetObjectItemCaseSensitive(cj, "transaction");
    const cJSON *etc = cJSON_GetObjectItemCaseSensitive(cj, "event_time_column");
    bool is_input = tp && tp->open_in;
    if ((txn || etc) && !is_input)
        return cerr(err, r, "%s: %s", where,
                    "\"transaction\" and \"event_time_column\" belong to input connectors");
    if (is_input && cJSON_GetObjectItemCaseSensitive(cj, "delivery"))
        return cerr(err, r, "%s: %s", where, "\"delivery\" belongs to output connectors");
    if (txn && (!cJSON_IsString(txn) || strcmp(txn->valuestring, "backfill")))
        return cerr(err, r, "%s: %s", where,
                    "\"transaction\" must be \"backfill\" (the connector's whole input runs as "
                    "one transaction)");
    int event_col = -1;
    if (etc) {
        if (!cJSON_IsString(etc))
            return cerr(err, r, "%s: %s", where, "\"event_time_column\" must be a column name");
        for (int j = 0; j < r->ncol; j++)
            if (!strcasecmp(r->colnames[j], etc->valuestring))
                event_col = j;
        char d[256];
        if (event_col < 0) {
            snprintf(d, sizeof(d), "\"event_time_column\": table %s has no column \"%s\"",
                     r->name, etc->valuestring);
            return cerr(err, r, "%s: %s", where, d);
        }
        if (!type_is_ts(r->types[event_col].kind)) {
            snprintf(d, sizeof(d), "\"event_time_column\": column \"%s\" must be a TIMESTAMP",
                     r->colnames[event_col]);
            return cerr(err, r, "%s: %s", where, d);
        }
    }
    if (!tp) {
        Buf known = BUF_INIT;
        for (size_t i = 0; i < ARRAY_LEN(transports); i++)
            buf_printf(&known, "%s%s", i ? ", " : "", transports[i].name);
        char d[512];
        snprintf(d, sizeof(d), "unknown transport \"%s\" (supported: %s)", t, buf_cstr(&known));
        buf_free(&known);
        return cerr(err, r, "%s: %s", where, d);
    }
    cx->c = c;
    cx->rel = rel;
    cx->r = r;
    cx->cj = cj;
    cx->cfg = cfg;
    cx->where = where;
    cx->txn = txn != NULL;

    if (is_input) {
        if (!r->is_table)
            return cerr(err, r, "%s: %s", where,
                        "input transports belong to tables; a view's connectors are outputs");
        InputConn *ic = sl_calloc(1, sizeof(*ic));
        ic->ops = tp->in;
        ic->transport = tp->name;
        ic->rel = rel;
        snprintf(ic->name, sizeof(ic->name), "%s", where);
        schema_of(r, &ic->schema);
        ic->max_batch = mb ? (int64_t)mb->valuedouble : 0;
        ic->plan_start = -1;
        ic->backfill = txn != NULL;
        ic->event_col = event_col;
        /* add first so that connectors_close frees it on any error */
        int first = cx->cs->nin;
        *VEC_PUSH(cx->cs->in, cx->cs->nin, cx->cs->capin) = ic;
        int rc = tp->open_in(ic, cx, err);
        for (int k = first; !rc && k < cx->cs->nin; k++) /* (s3_input: its parts too) */
            if (!cx->cs->in[k]->remote)
                input_pos(cx->cs->in[k], &cx->cs->in[k]->start); /* input_rewind goes back here */
        return rc;
    }
    if (r->is_table)
        return cerr(err, r, "%s: %s", where,
                    "output transports belong to views; declare a view over the table "
                    "(CREATE VIEW v WITH ('connectors' = ...) AS SELECT * FROM t)");
    OutputConn *oc = sl_calloc(1, sizeof(*oc));
    oc->ops = tp->out;
    oc->transport = tp->name;
    oc->rel = rel;
    snprintf(oc->name, sizeof(oc->name), "%s", where);
    schema_of(r, &oc->schema);
    oc->scratch = arena_new(16 * 1024);
    oc->owner = (*cx->nout)++ % cx->hosts; /* scale-out: the k-th output on host k % hosts */
    oc->remote = oc->owner != cx->host;
    *VEC_PUSH(cx->cs->out, cx->cs->nout, cx->cs->capout) = oc;
    if (deliver_config(oc, cJSON_GetObjectItemCaseSensitive(cx->cj, "delivery"), where, err))
        return err->code;
    return tp->open_out(oc, cx, err);
}

const void *input_gen(const InputConn *ic) { return ic->gen; }

void input_gen_piece(const InputConn *ic, Piece *pc)
{
    pc->fill = datagen_piece_fill;
    pc->src = ic->gen;
}

int connectors_open(const Circuit *c, bool open, Connectors *cs, Err *err)
{
    return connectors_open_part(c, open, 0, 1, cs, err);
}

int connectors_open_part(const Circuit *c, bool open, int host, int hosts, Connectors *cs,
                         Err *err)
{
    int nfile = 0, nout = 0;
    ConnCtx cx = {.open = open, .host = host, .hosts = hosts > 0 ? hosts : 1, .nfile = &nfile,
                  .nout = &nout, .cs = cs};
    memset(cs, 0, sizeof(*cs));
    for (int i = 0; i < c->nrels; i++) {
        const Relation *r = &c->rels[i];
        if (!r->connectors)
            continue;
        int k = 0;
        for (const cJSON *cj = r->connectors->child; cj; cj = cj->next, k++)
            if (open_one(c, i, k, cj, &cx, err)) {
                connectors_close(cs);
                return err->code;
            }
    }
    return 0;
}

void connectors_close(Connectors *cs)
{
    for (int i = 0; i < cs->nin; i++) {
        InputConn *ic = cs->in[i];
        if (ic->ops->close)
            ic->ops->close(ic);
        sl_free(ic->path);
        sl_free(ic->rbuf);
        sl_free(ic);
    }
    for (int i = 0; i < cs->nout; i++) {
        OutputConn *oc = cs->out[i];
        if (oc->ops->close)
            oc->ops->close(oc);
        sl_free(oc->path);
        buf_free(&oc->line);
        if (oc->scratch)
            arena_free(oc->scratch);
        sl_free(oc);
    }
    sl_free(cs->in);
    sl_free(cs->out);
    memset(cs, 0, sizeof(*cs));
}

int64_t input_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists, Err *err)
{
    if (ic->done || ic->remote || !ic->ops->next)
        return 0;
    if (ic->max_batch && max > ic->max_batch)
        max = ic->max_batch;
    return ic->ops->next(ic, max, a, nworkers, lists, err);
}

bool input_done(const InputConn *ic) { return ic->done; }
int input_rel(const InputConn *ic) { return ic->rel; }
const char *input_name(const InputConn *ic) { return ic->name; }
int64_t input_rows(const InputConn *ic) { return ic->rows; }
int64_t input_errors(const InputConn *ic) { return ic->errors; }
int64_t input_bytes(const InputConn *ic) { return ic->bytes; }
bool input_backfill(const InputConn *ic) { return ic->backfill; }
int input_event_col(const InputConn *ic) { return ic->event_col; }
bool input_has_source_times(const InputConn *ic) { return ic->ops->source_times != NULL; }
int input_source_times(const InputConn *ic, int64_t *out, int max)
{
    if (ic->remote) {
        int n = ic->remote_nts < max ? ic->remote_nts : max;
        memcpy(out, ic->remote_ts, sizeof(int64_t) * (size_t)n);
        return n;
    }
    return ic->ops->source_times ? ic->ops->source_times(ic, out, max) : 0;
}
bool input_is_http(const InputConn *ic) { return ic->ops == &http_in_ops; }
const char *input_transport(const InputConn *ic) { return ic->transport; }
int output_rel(const OutputConn *oc) { return oc->rel; }
const char *output_name(const OutputConn *oc) { return oc->name; }
const char *output_transport(const OutputConn *oc) { return oc->transport; }
/* (atomic: a delivery drain thread may be writing, io/deliver.c) */
int64_t output_records(const OutputConn *oc)
{
    return __atomic_load_n(&oc->records, __ATOMIC_RELAXED);
}
int64_t output_bytes(const OutputConn *oc)
{
    return __atomic_load_n(&oc->bytes, __ATOMIC_RELAXED);
}

double input_wait(const InputConn *ic)
{
    if (ic->remote) /* as its host said at the last read */
        return ic->done ? 0 : ic->remote_wait;
    return !ic->ops->wait ? 0 : ic->ops->wait(ic);
}

void input_progress(InputConn *ic, InProgress *out)
{
    memset(out, 0, sizeof(*out));
    out->pos = out->high = out->lag = out->object_offset = out->total_bytes = -1;
    if (!ic->remote && ic->ops->progress)
        ic->ops->progress(ic, out);
}

/* ---------------------------------------------------------------- positions */

void input_pos_canon(const InputConn *ic, InPos *pos)
{
    if (ic->ops->canon)
        ic->ops->canon(ic, pos);
}

void input_pos(const InputConn *ic, InPos *out)
{
    memset(out, 0, sizeof(*out));
    if (ic->remote) {
        *out = ic->remote_pos;
        return;
    }
    if (ic->ops->pos)
        ic->ops->pos(ic, out);
    out->rows = ic->rows;
    out->errors = ic->errors;
    out->bytes = ic->bytes;
}

int input_seek(InputConn *ic, const InPos *pos, Err *err)
{
    if (ic->remote) { /* its host seeks before it reads again */
        ic->remote_pos = *pos;
        ic->seek_pending = true;
    } else if (ic->ops->seek && ic->ops->seek(ic, pos, err)) {
        return err->code;
    }
    ic->done = false;
    ic->rows = pos->rows;
    ic->errors = pos->errors;
    ic->bytes = pos->bytes;
    return 0;
}

void input_set_replay(InputConn *ic, bool on)
{
    ic->replay = on;
    if (!on)
        ic->replay_target = false;
    if (!on && ic->ops->replay_end)
        ic->ops->replay_end(ic);
}

void input_replay_to(InputConn *ic, const InPos *to)
{
    if (ic->remote) { /* its host reads up to it (input_replay_target) */
        ic->replay_pos = *to;
        ic->replay_target = true;
    } else if (ic->ops->replay_to)
        ic->ops->replay_to(ic, to);
}

bool input_boot_at(InputConn *ic, const InPos *pos)
{
    return !ic->remote && ic->ops->boot_at && ic->ops->boot_at(ic, pos);
}

void input_release(InputConn *ic, const InPos *pos)
{
    if (!ic->remote && ic->ops->release)
        ic->ops->release(ic, pos);
}

int input_owner(const InputConn *ic) { return ic->owner; }
bool input_remote(const InputConn *ic) { return ic->remote; }

bool input_replay_target(const InputConn *ic, InPos *to)
{
    if (!ic->replay || !ic->replay_target)
        return false;
    *to = ic->replay_pos;
    return true;
}

void input_remote_update(InputConn *ic, const InPos *pos, bool done, double wait,
                         const int64_t *times, int ntimes)
{
    ic->remote_wait = wait;
    ic->remote_nts = ntimes < INPUT_TIMES_MAX ? ntimes : INPUT_TIMES_MAX;
    if (ic->remote_nts > 0)
        memcpy(ic->remote_ts, times, sizeof(int64_t) * (size_t)ic->remote_nts);
    ic->remote_pos = *pos;
    ic->rows = pos->rows;
    ic->errors = pos->errors;
    ic->bytes = pos->bytes;
    ic->done = done;
}

int input_rewind(InputConn *ic, Err *err)
{
    if (!ic->remote)
        return input_seek(ic, &ic->start, err);
    ic->rewind_pending = true; /* its owner goes back to its own start */
    ic->seek_pending = false;
    memset(&ic->remote_pos, 0, sizeof(ic->remote_pos));
    ic->done = false;
    ic->rows = ic->errors = ic->bytes = 0;
    return 0;
}

bool input_take_rewind(InputConn *ic)
{
    bool r = ic->rewind_pending;
    ic->rewind_pending = false;
    return r;
}

bool input_take_seek(InputConn *ic, InPos *pos)
{
    if (!ic->seek_pending)
        return false;
    ic->seek_pending = false;
    *pos = ic->remote_pos;
    return true;
}

int output_owner(const OutputConn *oc) { return oc->owner; }
bool output_remote(const OutputConn *oc) { return oc->remote; }

void output_remote_update(OutputConn *oc, int64_t offset, int64_t records, int64_t bytes)
{
    oc->remote_off = offset;
    oc->records = records;
    oc->bytes = bytes;
}

/* ---------------------------------------------------------------- outputs */

int output_write(OutputConn *oc, int64_t step, const Batch *changes, Err *err)
{
    if (oc->remote) /* scale-out: its host writes it */
        return 0;
    return oc->ops->write(oc, step, changes, err);
}

void output_account(OutputConn *oc, int64_t step, const Batch *changes)
{
    if (oc->remote || !oc->ops->account || !changes || changes->n == 0)
        return;
    if (oc->ops->committed && step > oc->resumed)
        return;
    oc->ops->account(oc, step, changes);
}

int output_flush(OutputConn *oc, Err *err)
{
    if (oc->remote)
        return 0;
    return oc->ops->flush ? oc->ops->flush(oc, err) : 0;
}

int output_truncate(OutputConn *oc, int64_t offset, Err *err)
{
    if (oc->remote)
        return 0;
    int rc = oc->ops->truncate ? oc->ops->truncate(oc, offset, err) : 0;
    oc->resumed = oc->ops->committed ? oc->ops->committed(oc) : -1;
    return rc;
}

int64_t output_offset(OutputConn *oc)
{
    if (oc->remote)
        return oc->remote_off;
    return oc->ops->offset ? oc->ops->offset(oc) : -1;
}

void output_set_stop(OutputConn *oc, bool (*stop)(void *arg), void *arg)
{
    oc->stop = stop;
    oc->stop_arg = arg;
}

void output_set_counts(OutputConn *oc, int64_t records, int64_t bytes)
{
    oc->records = records;
    oc->bytes = bytes;
}

int output_sync(OutputConn *oc, Err *err)
{
    if (oc->remote)
        return 0;
    return oc->ops->sync ? oc->ops->sync(oc, err) : 0;
}
