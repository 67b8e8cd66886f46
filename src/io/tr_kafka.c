/*
 * io/tr_kafka.c - kafka_input: a table's rows from Kafka topics, read with
 * librdkafka without a consumer group. Every partition of every topic is
 * assigned to one consumer (rd_kafka_assign) at offsets that are ours:
 * the next offset of each partition is the connector's position (InPos.x,
 * in topic order then partition order), which checkpoints and the step
 * journal keep, so a restart resumes exactly where the last step ended.
 * Nothing is committed to the brokers.
 *
 * In: messages, each holding one or more records (JSON lines, or CSV
 * records) in the connector's format: json with update_format
 * insert_delete, raw or debezium (fmt_json.c), or csv. Out: rows in
 * chunks, split across the workers as Pieces. A message that does not
 * parse is counted, reported with its topic, partition, offset, reason and
 * text (the first 20), and skipped; its offset is consumed all the same.
 *
 * Replaying a journaled step (input_replay_to): messages of the
 * partitions arrive interleaved in no fixed order, so the step is read
 * again partition by partition exactly up to the offsets it ended at;
 * messages past them are held back for the steps that follow.
 *
 * Progress (/stats): the partitions' next offsets against their high
 * watermarks from librdkafka's cache (updated by its fetches; no request).
 *
 * Brokers away: librdkafka reconnects on its own; reads give nothing
 * meanwhile, a message says the connector is waiting and another that it
 * receives again. Partitions added to a topic after the start are not
 * read until a restart.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "io_int.h"

#define MAX_REPORTED 20
#define CHUNK_ROWS 4096
#define REPLAY_PATIENCE 300.0 /* seconds a replay waits for the brokers */

typedef struct KPart {
    int topic;
    int32_t part;
    int64_t next;   /* next offset to read, or RD_KAFKA_OFFSET_BEGINNING */
    int64_t target; /* replaying: the offset the step ended at (-1: none) */
} KPart;

struct KafkaIn {
    rd_kafka_t *rk;
    char **topics;
    int ntopics;
    KPart *parts;
    int nparts, capparts;
    rd_kafka_message_t **held; /* polled but not consumed yet, in order */
    int nheld, capheld;
    bool need_assign;
    bool replay_to;
    bool idle;          /* the last read found nothing */
    bool down;          /* a transport error was reported, no message since */
    double last_note;
    int64_t transport_errors;
    int64_t ts[64];     /* a sample of the last read's message timestamps (us) */
    int nts;
    int64_t nseen;      /* messages with a timestamp in the last read */
    uint64_t rng;
    char err_note[256];  /* an error on_error saw, not reported yet */
};

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk, (void)level, (void)fac, (void)buf; /* errors arrive as events */
}

/* Client-level errors (brokers unreachable), served by consumer_poll on
   the controller's thread. */
static void on_error(rd_kafka_t *rk, int code, const char *reason, void *opaque)
{
    (void)rk;
    KafkaIn *k = opaque;
    k->transport_errors++;
    if (code == RD_KAFKA_RESP_ERR__FATAL || k->err_note[0])
        return;
    snprintf(k->err_note, sizeof(k->err_note), "%s", reason);
}

static int part_of(const KafkaIn *k, const char *topic, int32_t part)
{
    for (int i = 0; i < k->nparts; i++)
        if (k->parts[i].part == part && !strcmp(k->topics[k->parts[i].topic], topic))
            return i;
    return -1;
}

static int cfg_err(Err *err, const char *where, const char *fmt, const char *a)
{
    char d[400];
    snprintf(d, sizeof(d), fmt, a);
    return err_set(err, SL_ECONFIG, "%s: %s", where, d);
}

/* Partitions of topic t (metadata), appended to k->parts at offset start
   (or RD_KAFKA_OFFSET_END for "latest", resolved right away). */
static int add_topic(KafkaIn *k, int t, const cJSON *only, const char *where, Err *err)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(k->rk, k->topics[t], NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int tries = 0; tries < 10; tries++) {
        e = rd_kafka_metadata(k->rk, 0, rkt, &md, 2000);
        if (!e && md->topic_cnt == 1 && !md->topics[0].err)
            break;
        if (!e) {
            e = md->topics[0].err;
            rd_kafka_metadata_destroy(md);
            md = NULL;
        }
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    rd_kafka_topic_destroy(rkt);
    if (!md)
        return err_set(err, SL_EIO, "%s: cannot read the partitions of topic \"%s\": %s", where,
                       k->topics[t], rd_kafka_err2str(e));
    const struct rd_kafka_metadata_topic *mt = &md->topics[0];
    int n = mt->partition_cnt;
    for (int32_t p = 0; p < n; p++) {
        if (only) {
            bool in = false;
            const cJSON *v;
            cJSON_ArrayForEach(v, only) in = in || (int32_t)v->valuedouble == p;
            if (!in)
                continue;
        }
        KPart *kp = VEC_PUSH(k->parts, k->nparts, k->capparts);
        *kp = (KPart){t, p, RD_KAFKA_OFFSET_BEGINNING, -1};
    }
    rd_kafka_metadata_destroy(md);
    if (only && k->nparts == 0)
        return err_set(err, SL_ECONFIG, "%s: topic \"%s\" has %d partitions, none of those in "
                       "\"partitions\"", where, k->topics[t], n);
    return 0;
}

static bool pass_through(const char *key)
{
    static const char *const ours[] = {"enable.auto.commit", "enable.auto.offset.store",
                                       "group.id", "enable.partition.eof", "auto.offset.reset",
                                       NULL};
    for (const char *const *o = ours; *o; o++)
        if (!strcmp(key, *o))
            return false;
    return strchr(key, '.') != NULL || !strcmp(key, "debug") || !strcmp(key, "acks");
}

int tr_kafka_open(InputConn *ic, const cJSON *cfg, bool open, Err *err)
{
    const char *where = ic->name;
    if (!cfg)
        return cfg_err(err, where, "%s", "kafka_input needs a config with \"bootstrap.servers\" "
                       "and \"topic\"");
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(cfg, "bootstrap.servers");
    const cJSON *topic = cJSON_GetObjectItemCaseSensitive(cfg, "topic");
    const cJSON *topics = cJSON_GetObjectItemCaseSensitive(cfg, "topics");
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(cfg, "start_from");
    const cJSON *only = cJSON_GetObjectItemCaseSensitive(cfg, "partitions");
    for (const cJSON *it = cfg->child; it; it = it->next) {
        const char *key = it->string;
        if (!strcmp(key, "bootstrap.servers") || !strcmp(key, "topic") ||
            !strcmp(key, "topics") || !strcmp(key, "start_from") || !strcmp(key, "partitions"))
            continue;
        if (!pass_through(key))
            return cfg_err(err, where,
                           "unknown or unsupported key \"%s\" in kafka_input config (the "
                           "connector reads without a consumer group and keeps its own offsets)",
                           key);
        if (!cJSON_IsString(it) && !cJSON_IsNumber(it) && !cJSON_IsBool(it))
            return cfg_err(err, where, "librdkafka property \"%s\" must be a string", key);
    }
    if (!cJSON_IsString(bs) || !*bs->valuestring)
        return cfg_err(err, where, "%s", "kafka_input needs \"bootstrap.servers\" (a string)");
    if (!!topic == !!topics)
        return cfg_err(err, where, "%s", "kafka_input needs one of \"topic\" (a string) and "
                       "\"topics\" (a list of strings)");
    if (topic && (!cJSON_IsString(topic) || !*topic->valuestring))
        return cfg_err(err, where, "%s", "\"topic\" must be a topic name");
    if (topics && (!cJSON_IsArray(topics) || !cJSON_GetArraySize(topics)))
        return cfg_err(err, where, "%s", "\"topics\" must be a non-empty list of topic names");
    const cJSON *v;
    cJSON_ArrayForEach(v, topics) if (!cJSON_IsString(v) || !*v->valuestring) return cfg_err(
        err, where, "%s", "\"topics\" must be a non-empty list of topic names");
    int ntop = topic ? 1 : cJSON_GetArraySize(topics);
    bool latest = true; /* the reference system's default */
    const cJSON *offs = NULL;
    if (start) {
        if (cJSON_IsString(start) && !strcmp(start->valuestring, "earliest"))
            latest = false;
        else if (cJSON_IsString(start) && !strcmp(start->valuestring, "latest"))
            latest = true;
        else if (cJSON_IsObject(start) && (offs = cJSON_GetObjectItemCaseSensitive(start, "offsets")) &&
                 cJSON_IsArray(offs) && cJSON_GetArraySize(start) == 1) {
            latest = false;
            cJSON_ArrayForEach(v, offs) if (!cJSON_IsNumber(v) || v->valuedouble < 0) return cfg_err(
                err, where, "%s", "\"start_from\": {\"offsets\": [...]} needs offsets >= 0");
            if (ntop != 1)
                return cfg_err(err, where, "%s", "\"start_from\": {\"offsets\": [...]} needs a "
                               "single \"topic\"");
        } else {
            return cfg_err(err, where, "%s", "\"start_from\" must be \"earliest\", \"latest\" or "
                           "{\"offsets\": [offset of each partition]} (\"timestamp\" is not "
                           "supported)");
        }
    }
    if (only) {
        if (!cJSON_IsArray(only) || !cJSON_GetArraySize(only))
            return cfg_err(err, where, "%s", "\"partitions\" must be a non-empty list of "
                           "partition numbers");
        cJSON_ArrayForEach(v, only) if (!cJSON_IsNumber(v) || v->valuedouble < 0) return cfg_err(
            err, where, "%s", "\"partitions\" must be a non-empty list of partition numbers");
        if (ntop != 1)
            return cfg_err(err, where, "%s", "\"partitions\" needs a single \"topic\"");
    }
    if (ic->json_upd == JU_DEBEZIUM && ic->fmt != FMT_JSON)
        return cfg_err(err, where, "%s", "debezium needs the json format");

    KafkaIn *k = sl_calloc(1, sizeof(*k));
    ic->kin = k;
    k->ntopics = ntop;
    k->topics = sl_calloc((size_t)ntop, sizeof(char *));
    for (int t = 0; t < ntop; t++)
        k->topics[t] = sl_strdup(topic ? topic->valuestring
                                       : cJSON_GetArrayItem(topics, t)->valuestring);
    char es[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char gid[256];
    snprintf(gid, sizeof(gid), "sluice-%s", ic->name);
    const char *fixed[][2] = {{"group.id", gid},
                              {"enable.auto.commit", "false"},
                              {"enable.auto.offset.store", "false"},
                              {"enable.partition.eof", "false"},
                              {"auto.offset.reset", "error"},
                              {"bootstrap.servers", bs->valuestring}};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (rd_kafka_conf_set(conf, fixed[i][0], fixed[i][1], es, sizeof(es)) != RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(conf);
            return err_set(err, SL_ECONFIG, "%s: %s", where, es);
        }
    for (const cJSON *it = cfg->child; it; it = it->next) {
        if (!pass_through(it->string))
            continue;
        char val[64];
        const char *s = val;
        if (cJSON_IsString(it))
            s = it->valuestring;
        else if (cJSON_IsBool(it))
            s = cJSON_IsTrue(it) ? "true" : "false";
        else
            snprintf(val, sizeof(val), "%.17g", it->valuedouble);
        if (rd_kafka_conf_set(conf, it->string, s, es, sizeof(es)) != RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(conf);
            return err_set(err, SL_ECONFIG, "%s: librdkafka property \"%s\": %s", where,
                           it->string, es);
        }
    }
    if (!open) {
        rd_kafka_conf_destroy(conf);
        return 0;
    }
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, k);
    k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, es, sizeof(es));
    if (!k->rk) /* conf is freed by rd_kafka_new only on success */
        return rd_kafka_conf_destroy(conf),
               err_set(err, SL_ECONFIG, "%s: cannot create the Kafka consumer: %s", where, es);
    rd_kafka_poll_set_consumer(k->rk);
    for (int t = 0; t < ntop; t++)
        if (add_topic(k, t, only, where, err))
            return err->code;
    if (offs) {
        if (cJSON_GetArraySize(offs) != k->nparts)
            return err_set(err, SL_ECONFIG, "%s: \"start_from\" gives %d offsets, but topic "
                           "\"%s\" has %d partitions to read", where, cJSON_GetArraySize(offs),
                           k->topics[0], k->nparts);
        for (int i = 0; i < k->nparts; i++)
            k->parts[i].next = (int64_t)cJSON_GetArrayItem(offs, i)->valuedouble;
    }
    if (latest) /* resolved now, so that the position is an offset from the start */
        for (int i = 0; i < k->nparts; i++) {
            int64_t lo = 0, hi = 0;
            KPart *kp = &k->parts[i];
            rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
                k->rk, k->topics[kp->topic], kp->part, &lo, &hi, 10000);
            if (e)
                return err_set(err, SL_EIO, "%s: cannot read the end of topic \"%s\" partition "
                               "%d: %s", where, k->topics[kp->topic], kp->part,
                               rd_kafka_err2str(e));
            kp->next = hi;
        }
    if (k->nparts > INPOS_MAX)
        return err_set(err, SL_ECONFIG, "%s: %d partitions to read; one connector reads at "
                       "most %d (split it with \"partitions\")", where, k->nparts, INPOS_MAX);
    k->need_assign = true;
    return 0;
}

static void kafka_close(InputConn *ic)
{
    KafkaIn *k = ic->kin;
    if (!k)
        return;
    for (int i = 0; i < k->nheld; i++)
        rd_kafka_message_destroy(k->held[i]);
    sl_free(k->held);
    if (k->rk) {
        rd_kafka_assign(k->rk, NULL);
        rd_kafka_consumer_close(k->rk);
        rd_kafka_destroy(k->rk);
    }
    for (int t = 0; t < k->ntopics; t++)
        sl_free(k->topics[t]);
    sl_free(k->topics);
    sl_free(k->parts);
    sl_free(k);
    ic->kin = NULL;
}

static int assign(InputConn *ic, Err *err)
{
    KafkaIn *k = ic->kin;
    for (int i = 0; i < k->nheld; i++)
        rd_kafka_message_destroy(k->held[i]);
    k->nheld = 0;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(k->nparts);
    for (int i = 0; i < k->nparts; i++) {
        KPart *kp = &k->parts[i];
        rd_kafka_topic_partition_list_add(l, k->topics[kp->topic], kp->part)->offset = kp->next;
    }
    rd_kafka_resp_err_t e = rd_kafka_assign(k->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e)
        return err_set(err, SL_EIO, "%s: cannot assign the partitions: %s", ic->name,
                       rd_kafka_err2str(e));
    k->need_assign = false;
    return 0;
}

static void report(InputConn *ic, const rd_kafka_message_t *m, const char *rec, size_t n,
                   const char *why)
{
    ic->errors++;
    if (ic->errors <= MAX_REPORTED)
        fprintf(stderr, "sluice: %s: topic \"%s\" partition %d offset %lld: %s: %.*s\n",
                ic->name, rd_kafka_topic_name(m->rkt), (int)m->partition, (long long)m->offset,
                why, (int)(n > 200 ? 200 : n), rec);
    else if (ic->errors == MAX_REPORTED + 1)
        fprintf(stderr, "sluice: %s: more bad records; only counting them from now on\n",
                ic->name);
}

/* The growing output of one read: chunks of CHUNK_ROWS rows. */
typedef struct Out {
    Chunk **c;
    int n, cap;
    Arena *a;
    int64_t rows;
} Out;

static Chunk *room(InputConn *ic, Out *o)
{
    Chunk *c = o->n ? o->c[o->n - 1] : NULL;
    if (!c || c->cap - c->n < 2) {
        c = chunk_new(o->a, ic->schema.ncol, ic->schema.types, CHUNK_ROWS);
        *VEC_PUSH(o->c, o->n, o->cap) = c;
    }
    return c;
}

/* Parse message m's records into o (bad ones reported). */
static void parse_message(InputConn *ic, const rd_kafka_message_t *m, Out *o)
{
    const char *p = m->payload;
    size_t left = m->payload ? m->len : 0;
    bool first = true;
    while (left) {
        size_t len;
        if (ic->fmt == FMT_CSV) {
            len = fmt_csv_record_len(p, left, true);
        } else {
            const char *nl = memchr(p, '\n', left);
            len = nl ? (size_t)(nl - p) + 1 : left;
        }
        if (!len)
            len = left;
        size_t n = len;
        while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
            n--;
        size_t blank = 0;
        while (blank < n && (p[blank] == ' ' || p[blank] == '\t'))
            blank++;
        bool skip = blank == n || (ic->csv_header && first);
        first = false;
        if (!skip) {
            Chunk *c = room(ic, o);
            Err e;
            err_init(&e);
            int rows = 1, rc;
            if (ic->fmt == FMT_CSV) {
                rc = fmt_csv_parse(&ic->schema, p, n, c, o->a, &e);
            } else if (ic->json_upd == JU_DEBEZIUM) {
                rc = fmt_json_parse_debezium(&ic->schema, p, n, c, o->a, &rows, &e);
            } else {
                static const JsonRecOpts raw = {true, false, false}, plain = {false, false, false};
                rc = fmt_json_parse_rec(&ic->schema, p, n, ic->json_upd == JU_RAW ? &raw : &plain,
                                        c, o->a, NULL, NULL, &e);
            }
            if (rc) {
                report(ic, m, p, n, e.msg);
            } else {
                ic->rows += rows;
                o->rows += rows;
            }
        }
        p += len;
        left -= len;
    }
    ic->bytes += m->payload ? (int64_t)m->len : 0;
}

/* The next message, from the held ones first; in replay mode only those
   below their partition's target (the rest are held). NULL: none now. */
static rd_kafka_message_t *next_message(KafkaIn *k, int timeout_ms)
{
    for (int i = 0; i < k->nheld; i++) {
        rd_kafka_message_t *m = k->held[i];
        int pi = part_of(k, rd_kafka_topic_name(m->rkt), m->partition);
        if (k->replay_to && pi >= 0 && m->offset >= k->parts[pi].target)
            continue;
        memmove(&k->held[i], &k->held[i + 1], (size_t)(k->nheld - i - 1) * sizeof(*k->held));
        k->nheld--;
        return m;
    }
    for (;;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(k->rk, timeout_ms);
        if (!m || m->err || !k->replay_to)
            return m;
        int pi = part_of(k, rd_kafka_topic_name(m->rkt), m->partition);
        if (pi < 0 || m->offset < k->parts[pi].target)
            return m;
        *VEC_PUSH(k->held, k->nheld, k->capheld) = m;
    }
}

/* Say (at most every 30 s) that the brokers fail and reading waits. */
static void note_error(InputConn *ic)
{
    KafkaIn *k = ic->kin;
    if (!k->err_note[0])
        return;
    double now = io_now();
    if (!k->down || now - k->last_note > 30) {
        fprintf(stderr, "sluice: %s: %s; waiting for the brokers (nothing is lost: reading "
                        "resumes at the same offsets)\n",
                ic->name, k->err_note);
        k->last_note = now;
    }
    k->down = true;
    k->err_note[0] = 0;
}

static bool replay_reached(const KafkaIn *k)
{
    for (int i = 0; i < k->nparts; i++)
        if (k->parts[i].target >= 0 && k->parts[i].next < k->parts[i].target)
            return false;
    return true;
}

static int64_t kafka_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists, Err *err)
{
    KafkaIn *k = ic->kin;
    if (k->need_assign && assign(ic, err))
        return -1;
    Out o = {.a = a};
    double waited_since = io_now();
    bool replay = ic->replay && k->replay_to;
    k->idle = false;
    k->nts = 0;
    k->nseen = 0;
    while (replay ? !replay_reached(k) : o.rows < max) {
        rd_kafka_message_t *m = next_message(k, replay ? 100 : 0);
        if (!m) {
            note_error(ic);
            if (!replay) {
                k->idle = true;
                break;
            }
            if (io_now() - waited_since > REPLAY_PATIENCE) {
                sl_free(o.c);
                return err_set(err, SL_EIO, "%s: replaying a journaled step, the brokers gave "
                               "no message for %.0f s", ic->name, REPLAY_PATIENCE), -1;
            }
            continue;
        }
        if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
            m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
            /* the messages at our offset are gone: going on would lose them */
            int pi = m->rkt ? part_of(k, rd_kafka_topic_name(m->rkt), m->partition) : -1;
            err_set(err, SL_EIO, "%s: topic \"%s\" partition %d: offset %lld is no longer on "
                    "the brokers (deleted by retention?): %s; stopping rather than skipping "
                    "messages", ic->name, pi >= 0 ? k->topics[k->parts[pi].topic] : "?",
                    (int)m->partition, pi >= 0 ? (long long)k->parts[pi].next : -1LL,
                    rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            sl_free(o.c);
            return -1;
        }
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                k->transport_errors++;
                if (!k->err_note[0])
                    snprintf(k->err_note, sizeof(k->err_note), "%s",
                             rd_kafka_message_errstr(m));
            }
            rd_kafka_message_destroy(m);
            note_error(ic);
            if (!replay) {
                k->idle = true;
                break;
            }
            continue;
        }
        int pi = part_of(k, rd_kafka_topic_name(m->rkt), m->partition);
        if (pi < 0 || (k->parts[pi].next >= 0 && m->offset < k->parts[pi].next)) {
            rd_kafka_message_destroy(m); /* not ours, or from before a seek */
            continue;
        }
        if (k->down) {
            fprintf(stderr, "sluice: %s: receiving messages again\n", ic->name);
            k->down = false;
        }
        parse_message(ic, m, &o);
        k->parts[pi].next = m->offset + 1;
        int64_t ms = rd_kafka_message_timestamp(m, NULL);
        if (ms > 0) { /* reservoir sampling */
            k->nseen++;
            k->rng = k->rng * 6364136223846793005ull + 1442695040888963407ull;
            int64_t slot = k->nts < 64 ? k->nts++ : (int64_t)((k->rng >> 33) % (uint64_t)k->nseen);
            if (slot < 64)
                k->ts[slot] = ms * 1000;
        }
        rd_kafka_message_destroy(m);
    }
    int64_t total = 0;
    for (int i = 0; i < o.n; i++) {
        Chunk *c = o.c[i];
        int64_t per = (c->n + nworkers - 1) / nworkers;
        for (int w = 0; w < nworkers && c->n; w++) {
            int64_t s = (int64_t)w * per, e = s + per < c->n ? s + per : c->n;
            if (s >= e)
                break;
            Piece *pc = arena_zalloc(a, sizeof(*pc));
            pc->chunk = chunk_slice(a, c, s, e - s);
            piece_append(&lists[w], pc);
        }
        total += c->n;
    }
    sl_free(o.c);
    return total;
}

static int kafka_times(const InputConn *ic, int64_t *out, int max)
{
    const KafkaIn *k = ic->kin;
    int n = k ? (k->nts < max ? k->nts : max) : 0;
    for (int i = 0; i < n; i++)
        out[i] = k->ts[i];
    return n;
}

static double kafka_wait(const InputConn *ic)
{
    return ic->kin && ic->kin->idle ? 0.01 : 0;
}

static void kafka_pos(const InputConn *ic, InPos *out)
{
    const KafkaIn *k = ic->kin;
    if (!k)
        return;
    out->v[0] = k->nparts;
    out->nx = k->nparts;
    for (int i = 0; i < k->nparts; i++) {
        out->x[i] = k->parts[i].next;
        out->v[1] += k->parts[i].next > 0 ? k->parts[i].next : 0;
    }
}

static int kafka_seek(InputConn *ic, const InPos *pos, Err *err)
{
    KafkaIn *k = ic->kin;
    if (!k)
        return 0;
    if (pos->nx > k->nparts)
        return err_set(err, SL_EIO, "%s: the saved position has %d partitions, the topics now "
                       "%d (partitions cannot be removed)", ic->name, pos->nx, k->nparts);
    for (int i = 0; i < k->nparts; i++) /* partitions added since start at the beginning */
        k->parts[i].next = i < pos->nx ? pos->x[i] : RD_KAFKA_OFFSET_BEGINNING;
    k->need_assign = true;
    return 0;
}

static void kafka_replay_to(InputConn *ic, const InPos *to)
{
    KafkaIn *k = ic->kin;
    if (!k)
        return;
    k->replay_to = true;
    for (int i = 0; i < k->nparts; i++)
        k->parts[i].target = i < to->nx ? to->x[i] : -1;
}

static void kafka_replay_end(InputConn *ic)
{
    KafkaIn *k = ic->kin;
    if (!k)
        return;
    k->replay_to = false;
    for (int i = 0; i < k->nparts; i++)
        k->parts[i].target = -1;
}

/* Positions from our offsets; high watermarks from librdkafka's cache (the
   brokers' answers to its fetches: no request, no wait), unknown until the
   partitions are assigned and fetched once. */
static void kafka_progress(InputConn *ic, InProgress *out)
{
    const KafkaIn *k = ic->kin;
    if (!k || !k->rk)
        return;
    out->unit = "messages";
    int64_t pos = 0, high = 0, lag = 0;
    bool known = true;
    for (int i = 0; i < k->nparts; i++) {
        const KPart *kp = &k->parts[i];
        int64_t lo = -1, hi = -1;
        if (rd_kafka_get_watermark_offsets(k->rk, k->topics[kp->topic], kp->part, &lo, &hi) ||
            hi < 0)
            hi = -1;
        int64_t at = kp->next >= 0 ? kp->next : lo >= 0 ? lo : 0; /* from the start */
        pos += at;
        if (hi >= 0) {
            high += hi;
            lag += hi > at ? hi - at : 0;
        } else {
            known = false;
        }
        if (i < PROGRESS_PARTS) {
            InPartProgress *pp = &out->parts[out->nparts++];
            snprintf(pp->topic, sizeof(pp->topic), "%s", k->topics[kp->topic]);
            pp->partition = kp->part;
            pp->offset = kp->next >= 0 ? kp->next : -1;
            pp->high = hi;
        }
    }
    out->pos = pos;
    snprintf(out->pos_text, sizeof(out->pos_text), "%lld", (long long)pos);
    if (known) {
        out->high = high;
        out->lag = lag;
        snprintf(out->high_text, sizeof(out->high_text), "%lld", (long long)high);
    }
}

const InOps tr_kafka_in_ops = {
    .next = kafka_next,
    .wait = kafka_wait,
    .pos = kafka_pos,
    .seek = kafka_seek,
    .replay_to = kafka_replay_to,
    .replay_end = kafka_replay_end,
    .source_times = kafka_times,
    .progress = kafka_progress,
    .close = kafka_close,
};
