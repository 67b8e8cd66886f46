/*
 * io/connector.c - connector registry: reads each relation's connectors
 * JSON, validates every key (unknown keys are errors that name the key, the
 * relation and the connector), and builds input/output connector objects.
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

static int parse_format(const cJSON *fmt, const Relation *r, const char *where, FmtKind *out,
                        bool *csv_header, JsonUpd *upd, Err *err)
{
    static const char *const fkeys[] = {"name", "config", NULL};
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

/* Where connectors run (scale-out): file inputs go round-robin to the
   hosts (the k-th file input to host k % hosts), outputs to host 0. */
typedef struct Place {
    bool open;
    int host, hosts;
    int nfile;
} Place;

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

static int open_one(const Circuit *c, int rel, int idx, const cJSON *cj, Place *place,
                    Connectors *cs, Err *err)
{
    bool open = place->open;
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

    const cJSON *txn = cJSON_GetObjectItemCaseSensitive(cj, "transaction");
    const cJSON *etc = cJSON_GetObjectItemCaseSensitive(cj, "event_time_column");
    bool is_input = !strcmp(t, "datagen") || !strcmp(t, "file_input") ||
                    !strcmp(t, "http_input") || !strcmp(t, "s3_input") ||
                    !strcmp(t, "postgres_cdc_input") || !strcmp(t, "kafka_input");
    if ((txn || etc) && !is_input)
        return cerr(err, r, "%s: %s", where,
                    "\"transaction\" and \"event_time_column\" belong to input connectors");
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
        if (r->types[event_col].kind != TK_TIMESTAMP) {
            snprintf(d, sizeof(d), "\"event_time_column\": column \"%s\" must be a TIMESTAMP",
                     r->colnames[event_col]);
            return cerr(err, r, "%s: %s", where, d);
        }
    }

    if (is_input) {
        if (!r->is_table)
            return cerr(err, r, "%s: %s", where,
                        "input transports belong to tables; a view's connectors are outputs");
        InputConn *ic = sl_calloc(1, sizeof(*ic));
        ic->rel = rel;
        snprintf(ic->name, sizeof(ic->name), "%s", where);
        schema_of(r, &ic->schema);
        ic->max_batch = mb ? (int64_t)mb->valuedouble : 0;
        ic->plan_start = -1;
        ic->backfill = txn != NULL;
        ic->event_col = event_col;
        /* add first so that connectors_close frees it on any error */
        *VEC_PUSH(cs->in, cs->nin, cs->capin) = ic;
        if (!strcmp(t, "http_input")) {
            /* declares the table's HTTP ingress endpoint (its name and
               event-time column); it reads nothing itself */
            ic->kind = IN_HTTP;
            ic->done = true;
            if (cfg && cfg->child)
                return cerr(err, r, "%s: %s", where, "http_input takes no config");
            if (cJSON_GetObjectItemCaseSensitive(cj, "format"))
                return cerr(err, r, "%s: %s", where,
                            "http_input takes no \"format\" (each request names its format)");
            if (txn)
                return cerr(err, r, "%s: %s", where,
                            "\"transaction\": \"backfill\" needs an input that ends; HTTP input "
                            "uses /start_transaction and /commit_transaction");
            return 0;
        }
        if (!strcmp(t, "datagen")) {
            ic->kind = IN_DATAGEN;
            if (cJSON_GetObjectItemCaseSensitive(cj, "format"))
                return cerr(err, r, "%s: %s", where, "datagen takes no \"format\"");
            Err e = {0};
            ic->gen = datagen_new(cfg, r->ncol, (const char *const *)r->colnames, r->types, where,
                                  &e);
            if (!ic->gen)
                return err_setpos(err, SL_ECONFIG, r->conn_line, r->conn_col, "%s", e.msg);
            if (ic->backfill)
                for (int pl = 0; pl < datagen_nplans(ic->gen); pl++)
                    if (datagen_plan_limit(ic->gen, pl) < 0)
                        return cerr(err, r, "%s: %s", where,
                                    "\"transaction\": \"backfill\" needs an input that ends, "
                                    "but a datagen plan has no \"limit\"");
            return 0;
        }
        if (!strcmp(t, "s3_input")) {
            ic->kind = IN_S3;
            char why[512];
            if (tr_s3_config(ic, cfg, open, why, sizeof(why)))
                return cerr(err, r, "%s: %s", where, why);
            if (parse_format(cJSON_GetObjectItemCaseSensitive(cj, "format"), r, where, &ic->fmt,
                             &ic->csv_header, NULL, err))
                return err->code;
            ic->owner = place->nfile++ % place->hosts;
            ic->remote = ic->owner != place->host;
            /* scale-out: one part per host, each reading every H-th object */
            int H = place->hosts;
            for (int h = 1; h < H; h++) {
                InputConn *pc = sl_calloc(1, sizeof(*pc));
                *pc = (InputConn){.kind = IN_S3, .rel = ic->rel, .schema = ic->schema,
                                  .max_batch = ic->max_batch, .plan_start = -1,
                                  .backfill = ic->backfill, .event_col = ic->event_col,
                                  .fmt = ic->fmt, .csv_header = ic->csv_header};
                part_name(pc->name, sizeof(pc->name), where, h, H);
                *VEC_PUSH(cs->in, cs->nin, cs->capin) = pc;
                if (tr_s3_config(pc, cfg, open, why, sizeof(why)))
                    return cerr(err, r, "%s: %s", where, why);
                tr_s3_set_part(pc, h, H);
                pc->owner = place->nfile++ % place->hosts;
                pc->remote = pc->owner != place->host;
            }
            if (H > 1) {
                part_name(ic->name, sizeof(ic->name), where, 0, H);
                tr_s3_set_part(ic, 0, H);
            }
            return 0;
        }
        if (!strcmp(t, "postgres_cdc_input")) {
            ic->kind = IN_PGCDC;
            if (cJSON_GetObjectItemCaseSensitive(cj, "format"))
                return cerr(err, r, "%s: %s", where,
                            "postgres_cdc_input takes no \"format\" (values come as text)");
            if (txn)
                return cerr(err, r, "%s: %s", where,
                            "\"transaction\": \"backfill\" needs an input that ends; a change "
                            "stream does not");
            Err e = {0};
            if (tr_pg_cdc_config(ic, cfg, where, &e))
                return err_setpos(err, SL_ECONFIG, r->conn_line, r->conn_col, "%s", e.msg);
            ic->owner = 0; /* scale-out: host 0 reads it */
            ic->remote = place->host != 0;
            if (open && !ic->remote && tr_pg_cdc_open(ic, err))
                return err->code;
            return 0;
        }
        if (!strcmp(t, "kafka_input")) {
            /* read on host 0 (a proxy elsewhere, like a file input's) */
            ic->kind = IN_KAFKA;
            ic->owner = 0;
            ic->remote = place->host != 0;
            if (txn)
                return cerr(err, r, "%s: %s", where,
                            "\"transaction\": \"backfill\" needs an input that ends; a Kafka "
                            "topic does not");
            if (parse_format(cJSON_GetObjectItemCaseSensitive(cj, "format"), r, where, &ic->fmt,
                             &ic->csv_header, &ic->json_upd, err))
                return err->code;
            Err e = {0};
            if (tr_kafka_open(ic, cfg, open && !ic->remote, &e))
                return err_setpos(err, e.code, r->conn_line, r->conn_col, "%s", e.msg);
            return 0;
        }
        ic->kind = IN_FILE;
        static const char *const fkeys[] = {"path", "buffer_size_bytes", "follow", NULL};
        if (!cfg)
            return cerr(err, r, "%s: %s", where, "file_input needs a config with \"path\"");
        if (check_keys(cfg, fkeys, r, where, "file_input config", err))
            return err->code;
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(cfg, "path");
        if (!cJSON_IsString(path) || !*path->valuestring)
            return cerr(err, r, "%s: %s", where, "file_input needs a \"path\" string");
        const cJSON *fol = cJSON_GetObjectItemCaseSensitive(cfg, "follow");
        if (fol && cJSON_IsTrue(fol))
            return cerr(err, r, "%s: %s", where, "\"follow\": true is not supported yet");
        ic->path = sl_strdup(path->valuestring);
        if (parse_format(cJSON_GetObjectItemCaseSensitive(cj, "format"), r, where, &ic->fmt,
                         &ic->csv_header, NULL, err))
            return err->code;
        ic->owner = place->nfile++ % place->hosts;
        ic->remote = ic->owner != place->host;
        if (open && !ic->remote) {
            ic->f = fopen(ic->path, "rb");
            if (!ic->f)
                return err_set(err, SL_EIO, "%s: cannot open \"%s\": %s", where, ic->path,
                               strerror(errno));
        }
        ic->line = 1;
        return 0;
    }
    OutputConn *oc = NULL;
    if (!strcmp(t, "postgres_output") || !strcmp(t, "file_output") ||
        !strcmp(t, "kafka_output")) {
        if (r->is_table)
            return cerr(err, r, "%s: %s", where,
                        "output transports belong to views; declare a view over the table "
                        "(CREATE VIEW v WITH ('connectors' = ...) AS SELECT * FROM t)");
        oc = sl_calloc(1, sizeof(*oc));
        oc->rel = rel;
        snprintf(oc->name, sizeof(oc->name), "%s", where);
        schema_of(r, &oc->schema);
        oc->scratch = arena_new(16 * 1024);
        *VEC_PUSH(cs->out, cs->nout, cs->capout) = oc;
        if (deliver_config(oc, cJSON_GetObjectItemCaseSensitive(cj, "delivery"), where, err))
            return err->code;
    } else if (cJSON_GetObjectItemCaseSensitive(cj, "delivery")) {
        return cerr(err, r, "%s: %s", where, "\"delivery\" belongs to output connectors");
    }
    if (!strcmp(t, "postgres_output")) {
        if (cJSON_GetObjectItemCaseSensitive(cj, "format"))
            return cerr(err, r, "%s: %s", where,
                        "postgres_output takes no \"format\" (rows go to the table's columns)");
        Err e = {0};
        if (tr_pg_out_config(oc, cfg, where, &e))
            return err_setpos(err, SL_ECONFIG, r->conn_line, r->conn_col, "%s", e.msg);
        if (open && place->host == 0 && tr_pg_out_open(oc, err))
            return err->code;
        return 0;
    }
    if (!strcmp(t, "file_output")) {
        static const char *const okeys[] = {"path", NULL};
        if (!cfg)
            return cerr(err, r, "%s: %s", where, "file_output needs a config with \"path\"");
        if (check_keys(cfg, okeys, r, where, "file_output config", err))
            return err->code;
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(cfg, "path");
        if (!cJSON_IsString(path) || !*path->valuestring)
            return cerr(err, r, "%s: %s", where, "file_output needs a \"path\" string");
        oc->path = sl_strdup(path->valuestring);
        if (parse_format(cJSON_GetObjectItemCaseSensitive(cj, "format"), r, where, &oc->fmt, NULL,
                         NULL, err))
            return err->code;
        if (open && place->host == 0) {
            /* not truncated here: see output_truncate */
            int fd = openat(AT_FDCWD, oc->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
            oc->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
            if (fd >= 0 && !oc->f)
                close(fd);
            if (!oc->f)
                return err_set(err, SL_EIO, "%s: cannot create \"%s\": %s", where, oc->path,
                               strerror(errno));
        }
        return 0;
    }
    if (!strcmp(t, "kafka_output")) {
        if (parse_format(cJSON_GetObjectItemCaseSensitive(cj, "format"), r, where, &oc->fmt, NULL,
                         NULL, err))
            return err->code;
        Err e = {0};
        if (tr_kafka_out_open(oc, cfg, open && place->host == 0, &e))
            return err_setpos(err, e.code, r->conn_line, r->conn_col, "%s", e.msg);
        return 0;
    }
    char d[256];
    snprintf(d, sizeof(d),
             "unknown transport \"%s\" (supported: datagen, file_input, s3_input, http_input, "
             "postgres_cdc_input, kafka_input, file_output, postgres_output, kafka_output)",
             t);
    return cerr(err, r, "%s: %s", where, d);
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
    Place pl = {open, host, hosts > 0 ? hosts : 1, 0};
    memset(cs, 0, sizeof(*cs));
    for (int i = 0; i < c->nrels; i++) {
        const Relation *r = &c->rels[i];
        if (!r->connectors)
            continue;
        int k = 0;
        for (const cJSON *cj = r->connectors->child; cj; cj = cj->next, k++)
            if (open_one(c, i, k, cj, &pl, cs, err)) {
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
        if (ic->gen)
            datagen_free(ic->gen);
        tr_s3_close(ic);
        tr_kafka_close(ic);
        if (ic->f)
            fclose(ic->f);
        tr_pg_cdc_free(ic->cdc);
        sl_free(ic->path);
        sl_free(ic->rbuf);
        sl_free(ic);
    }
    for (int i = 0; i < cs->nout; i++) {
        OutputConn *oc = cs->out[i];
        tr_kafka_out_close(oc);
        if (oc->f)
            fclose(oc->f);
        tr_pg_out_free(oc->pg);
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
    if (ic->done || ic->remote)
        return 0;
    if (ic->max_batch && max > ic->max_batch)
        max = ic->max_batch;
    if (ic->kind == IN_HTTP)
        return 0;
    if (ic->kind == IN_DATAGEN)
        return tr_datagen_next(ic, max, a, nworkers, lists);
    if (ic->kind == IN_PGCDC)
        return tr_pg_cdc_next(ic, max, a, nworkers, lists, err);
    if (ic->kind == IN_KAFKA)
        return tr_kafka_next(ic, max, a, nworkers, lists, err);
    return tr_file_next(ic, max, a, nworkers, lists, err);
}

bool input_done(const InputConn *ic) { return ic->done; }
int input_rel(const InputConn *ic) { return ic->rel; }
const char *input_name(const InputConn *ic) { return ic->name; }
int64_t input_rows(const InputConn *ic) { return ic->rows; }
int64_t input_errors(const InputConn *ic) { return ic->errors; }
int64_t input_bytes(const InputConn *ic) { return ic->bytes; }
bool input_backfill(const InputConn *ic) { return ic->backfill; }
int input_event_col(const InputConn *ic) { return ic->event_col; }
bool input_has_source_times(const InputConn *ic) { return ic->kind == IN_KAFKA; }
int input_source_times(const InputConn *ic, int64_t *out, int max)
{
    return ic->kind == IN_KAFKA ? tr_kafka_times(ic, out, max) : 0;
}
bool input_is_http(const InputConn *ic) { return ic->kind == IN_HTTP; }
const char *input_transport(const InputConn *ic)
{
    return ic->kind == IN_DATAGEN ? "datagen"
         : ic->kind == IN_FILE    ? "file_input"
         : ic->kind == IN_S3      ? "s3_input"
         : ic->kind == IN_PGCDC   ? "postgres_cdc_input"
         : ic->kind == IN_KAFKA   ? "kafka_input"
                                  : "http_input";
}
int output_rel(const OutputConn *oc) { return oc->rel; }
const char *output_name(const OutputConn *oc) { return oc->name; }
const char *output_transport(const OutputConn *oc)
{
    return oc->pg ? "postgres_output" : oc->kout ? "kafka_output" : "file_output";
}
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
    if (ic->kind == IN_KAFKA)
        return tr_kafka_wait(ic);
    if (ic->kind == IN_PGCDC && !ic->remote) /* polls the stream */
        return tr_pg_cdc_idle(ic) ? 0.005 : 0;
    if (ic->done || ic->kind != IN_DATAGEN || ic->plan_start < 0)
        return 0;
    double rate = datagen_plan_rate(ic->gen, ic->plan);
    if (rate <= 0)
        return 0;
    double due = ic->plan_start + (double)(ic->next + 1) / rate;
    double now = io_now();
    return due > now ? due - now : 0;
}

/* ---------------------------------------------------------------- positions */

void input_pos(const InputConn *ic, InPos *out)
{
    memset(out, 0, sizeof(*out));
    if (ic->remote) {
        *out = ic->remote_pos;
        return;
    }
    if (ic->kind == IN_DATAGEN) {
        out->v[0] = ic->plan;
        out->v[1] = ic->next;
    } else if (ic->kind == IN_FILE && ic->f) {
        out->v[0] = (int64_t)ftello(ic->f) - (int64_t)(ic->rlen - ic->rpos);
        out->v[1] = ic->line;
    } else if (ic->kind == IN_S3) {
        tr_s3_pos(ic, out);
    } else if (ic->kind == IN_PGCDC) {
        tr_pg_cdc_pos(ic, out);
    } else if (ic->kind == IN_KAFKA) {
        tr_kafka_pos(ic, out);
    }
    out->rows = ic->rows;
    out->errors = ic->errors;
    out->bytes = ic->bytes;
}

int input_seek(InputConn *ic, const InPos *pos, Err *err)
{
    if (ic->remote) { /* its host seeks before it reads again */
        ic->remote_pos = *pos;
        ic->seek_pending = true;
    } else if (ic->kind == IN_DATAGEN) {
        if (pos->v[0] < 0 || pos->v[0] > datagen_nplans(ic->gen) || pos->v[1] < 0)
            return err_set(err, SL_EIO, "%s: saved position (plan %lld, row %lld) does not fit "
                           "its %d plan(s)", ic->name, (long long)pos->v[0],
                           (long long)pos->v[1], datagen_nplans(ic->gen));
        ic->plan = (int)pos->v[0];
        ic->next = pos->v[1];
        ic->plan_start = -1;
    } else if (ic->kind == IN_S3) {
        if (tr_s3_seek(ic, pos, err))
            return err->code;
    } else if (ic->kind == IN_PGCDC) {
        if (tr_pg_cdc_seek(ic, pos, err))
            return err->code;
    } else if (ic->kind == IN_FILE) {
        if (fseeko(ic->f, (off_t)pos->v[0], SEEK_SET))
            return err_set(err, SL_EIO, "%s: cannot seek \"%s\" to byte %lld: %s", ic->name,
                           ic->path, (long long)pos->v[0], strerror(errno));
        ic->rlen = ic->rpos = 0;
        ic->eof = false;
        ic->line = pos->v[1];
    } else if (ic->kind == IN_KAFKA) {
        if (tr_kafka_seek(ic, pos, err))
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
    if (!on && ic->kind == IN_KAFKA)
        tr_kafka_replay_end(ic);
}

void input_replay_to(InputConn *ic, const InPos *to)
{
    if (ic->kind == IN_KAFKA)
        tr_kafka_replay_to(ic, to);
}

void input_release(InputConn *ic, const InPos *pos)
{
    if (ic->kind == IN_PGCDC && !ic->remote)
        tr_pg_cdc_release(ic, pos);
}

int input_owner(const InputConn *ic) { return ic->owner; }
bool input_remote(const InputConn *ic) { return ic->remote; }

void input_remote_update(InputConn *ic, const InPos *pos, bool done)
{
    ic->remote_pos = *pos;
    ic->rows = pos->rows;
    ic->errors = pos->errors;
    ic->bytes = pos->bytes;
    ic->done = done;
}

bool input_take_seek(InputConn *ic, InPos *pos)
{
    if (!ic->seek_pending)
        return false;
    ic->seek_pending = false;
    *pos = ic->remote_pos;
    return true;
}

int output_truncate(OutputConn *oc, int64_t offset, Err *err)
{
    if (oc->pg)
        return tr_pg_out_truncate(oc, offset, err);
    if (oc->kout)
        return tr_kafka_out_truncate(oc, offset, err);
    if (!oc->f)
        return 0;
    if (fflush(oc->f) || ftruncate(fileno(oc->f), (off_t)offset) ||
        fseeko(oc->f, (off_t)offset, SEEK_SET))
        return err_set(err, SL_EIO, "%s: cannot truncate \"%s\" to %lld bytes: %s", oc->name,
                       oc->path, (long long)offset, strerror(errno));
    return 0;
}

int64_t output_offset(OutputConn *oc)
{
    if (oc->pg)
        return tr_pg_out_offset(oc);
    if (oc->kout)
        return tr_kafka_out_offset(oc);
    if (!oc->f)
        return -1;
    fflush(oc->f);
    return (int64_t)ftello(oc->f);
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
    if (oc->f && (fflush(oc->f) || fdatasync(fileno(oc->f))))
        return err_set(err, SL_EIO, "%s: cannot sync \"%s\": %s", oc->name, oc->path,
                       strerror(errno));
    return 0;
}
