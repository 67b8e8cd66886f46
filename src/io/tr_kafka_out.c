/*
 * io/tr_kafka_out.c - kafka_output: a view's changes as Kafka messages,
 * exactly once across crashes, with a transactional producer.
 *
 * In: each step's consolidated changes (output_write), then the end of the
 * step (output_flush). Out: one message per unit of weight, {"insert":
 * row} or {"delete": row} in JSON (CSV: the row's fields and the weight),
 * with headers sluice_step (the step number), sluice_seq (its index in
 * the step) and sluice_count (the step's messages), no key. A step's messages form one Kafka transaction,
 * committed before the step ends; a step without changes sends nothing.
 *
 * Exactly once. With --storage the step journal records, before every
 * step, this connector's offset: 1 + the last step committed to the topic.
 * After a crash the journal's steps are replayed with the same numbers and
 * the same changes; the last one is delivered again (output_truncate
 * learns where). A fresh producer with the same transactional.id fences
 * the crashed one and aborts its open transaction (init_transactions), and
 * the connector reads the committed tail of every partition of the topic
 * (read_committed) for the highest sluice_step there whose messages are
 * all present (sluice_count distinct seqs: a broker that shows aborted
 * transactions shows a cut-off step in part): replayed steps up to it are
 * already in the topic and are not sent again. So a read_committed
 * consumer sees every step's changes once, in step order per partition;
 * a read_uncommitted one may also see an aborted step's messages.
 *
 * Brokers away: a commit that fails with a retriable error is tried
 * again, each try waiting up to the connector's "delivery" max_backoff_ms
 * (at least 1 s), "attempts" times; then the failure is transient
 * (deliver.c queues the step and the pipeline goes on) and the
 * transaction stays open with the step's messages: the queued step's
 * next write adds nothing and its flush commits it. A commit that needs
 * an abort is aborted and the step's messages, kept until the commit, are
 * sent again in a new transaction.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../zset/key.h"
#include "io_int.h"

#define TXN_TIMEOUT_MS 60000

struct KafkaOut {
    rd_kafka_t *rk;
    char *topic, *bootstrap;
    int64_t skip_through; /* steps already in the topic (after a restart) */
    int64_t committed;    /* last step committed */
    int64_t step;         /* the step being written (-1: none) */
    int64_t seq;
    int64_t count;        /* the step's messages (header sluice_count) */
    Buf msgs;             /* the step's message values, each after its length */
    bool in_txn;
    int64_t said;         /* the step whose failing commit stderr reported */
};

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk, (void)level, (void)fac, (void)buf;
}

static bool pass_through(const char *key)
{
    return strchr(key, '.') != NULL && strcmp(key, "enable.idempotence") != 0;
}

int tr_kafka_out_open(OutputConn *oc, const cJSON *cfg, bool open, Err *err)
{
    const char *where = oc->name;
    if (!cfg)
        return err_set(err, SL_ECONFIG, "%s: kafka_output needs a config with "
                       "\"bootstrap.servers\" and \"topic\"", where);
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(cfg, "bootstrap.servers");
    const cJSON *topic = cJSON_GetObjectItemCaseSensitive(cfg, "topic");
    for (const cJSON *it = cfg->child; it; it = it->next) {
        if (!strcmp(it->string, "bootstrap.servers") || !strcmp(it->string, "topic"))
            continue;
        if (!pass_through(it->string))
            return err_set(err, SL_ECONFIG, "%s: unknown or unsupported key \"%s\" in "
                           "kafka_output config", where, it->string);
        if (!cJSON_IsString(it))
            return err_set(err, SL_ECONFIG, "%s: librdkafka property \"%s\" must be a string",
                           where, it->string);
    }
    if (!cJSON_IsString(bs) || !*bs->valuestring)
        return err_set(err, SL_ECONFIG, "%s: kafka_output needs \"bootstrap.servers\" (a "
                       "string)", where);
    if (!cJSON_IsString(topic) || !*topic->valuestring)
        return err_set(err, SL_ECONFIG, "%s: kafka_output needs \"topic\" (a string)", where);
    KafkaOut *k = sl_calloc(1, sizeof(*k));
    oc->kout = k;
    k->topic = sl_strdup(topic->valuestring);
    k->bootstrap = sl_strdup(bs->valuestring);
    k->step = -1;
    char es[512], tid[300];
    snprintf(tid, sizeof(tid), "sluice:%s:%s", oc->name, k->topic);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *fixed[][2] = {{"bootstrap.servers", bs->valuestring},
                              {"transactional.id", tid},
                              {"transaction.timeout.ms", "60000"}};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (rd_kafka_conf_set(conf, fixed[i][0], fixed[i][1], es, sizeof(es))) {
            rd_kafka_conf_destroy(conf);
            return err_set(err, SL_ECONFIG, "%s: %s", where, es);
        }
    for (const cJSON *it = cfg->child; it; it = it->next)
        if (pass_through(it->string) &&
            rd_kafka_conf_set(conf, it->string, it->valuestring, es, sizeof(es))) {
            rd_kafka_conf_destroy(conf);
            return err_set(err, SL_ECONFIG, "%s: librdkafka property \"%s\": %s", where,
                           it->string, es);
        }
    if (!open) {
        rd_kafka_conf_destroy(conf);
        return 0;
    }
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, es, sizeof(es));
    if (!k->rk) {
        rd_kafka_conf_destroy(conf);
        return err_set(err, SL_ECONFIG, "%s: cannot create the Kafka producer: %s", where, es);
    }
    /* fences a crashed predecessor and aborts its open transaction */
    rd_kafka_error_t *e = rd_kafka_init_transactions(k->rk, TXN_TIMEOUT_MS);
    if (e) {
        err_set(err, SL_EIO, "%s: cannot start the transactional producer: %s", where,
                rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return err->code;
    }
    return 0;
}

static void kafka_out_close(OutputConn *oc)
{
    KafkaOut *k = oc->kout;
    if (!k)
        return;
    if (k->rk) {
        if (k->in_txn) {
            rd_kafka_error_t *e = rd_kafka_abort_transaction(k->rk, 5000);
            if (e)
                rd_kafka_error_destroy(e);
        }
        rd_kafka_destroy(k->rk);
    }
    buf_free(&k->msgs);
    sl_free(k->topic);
    sl_free(k->bootstrap);
    sl_free(k);
    oc->kout = NULL;
}

/* A header of m as a number (-1 when absent). */
static int64_t header_num(rd_kafka_message_t *m, const char *name)
{
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t vn;
    if (rd_kafka_message_headers(m, &h) || rd_kafka_header_get_last(h, name, &v, &vn) ||
        vn >= 24)
        return -1;
    char num[24];
    memcpy(num, v, vn);
    num[vn] = 0;
    return strtoll(num, NULL, 10);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* What the end of a topic holds: its highest step and, of that step, the
   distinct sluice_seq values seen and the sluice_count the messages carry
   (-1: written before the count header existed). */
typedef struct {
    int64_t step;
    int64_t count;
    int64_t *seqs;
    size_t nseq, capseq;
} Tail;

/* Read partition p backwards from its end, in windows growing by 8x, until
   a window starts before the partition's highest step (or at the start of
   the partition): every message of that step in p is then seen. Its
   seqs go into t when the step is the highest so far. */
static int scan_partition(OutputConn *oc, rd_kafka_t *rc, int32_t p, Tail *t, Err *err)
{
    KafkaOut *k = oc->kout;
    int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t re = rd_kafka_query_watermark_offsets(rc, k->topic, p, &lo, &hi, 10000);
    if (re)
        return err_set(err, SL_EIO, "%s: cannot read the end of topic \"%s\" partition %d: %s",
                       oc->name, k->topic, (int)p, rd_kafka_err2str(re));
    for (int64_t w = 16; hi > lo; w *= 8) {
        int64_t start = hi - w > lo ? hi - w : lo;
        int64_t top = -1, low = INT64_MAX, count = -1;
        size_t mark = t->nseq; /* this window's seqs of top go after mark */
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, k->topic, p)->offset = start;
        rd_kafka_assign(rc, l);
        rd_kafka_topic_partition_list_destroy(l);
        double t0 = io_now();
        for (;;) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rc, 200);
            if (!m) {
                if (io_now() - t0 > 30)
                    return err_set(err, SL_EIO, "%s: reading the end of topic \"%s\" partition "
                                   "%d gave nothing for 30 s", oc->name, k->topic, (int)p);
                continue;
            }
            bool eof = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF;
            int64_t s = m->err ? -1 : header_num(m, "sluice_step");
            if (s >= 0) { /* commit markers and foreign messages hold none */
                if (s < low)
                    low = s;
                if (s > top) { /* a higher step: what was collected is of a lower one */
                    top = s;
                    t->nseq = mark;
                    count = -1;
                }
                if (s == top) {
                    if (t->nseq == t->capseq) {
                        t->capseq = t->capseq ? 2 * t->capseq : 256;
                        t->seqs = sl_realloc(t->seqs, t->capseq * sizeof(*t->seqs));
                    }
                    t->seqs[t->nseq++] = header_num(m, "sluice_seq");
                    count = header_num(m, "sluice_count");
                }
            }
            int64_t off = m->offset;
            rd_kafka_message_destroy(m);
            if (eof || off >= hi - 1)
                break;
        }
        bool whole = top >= 0 && (low < top || start == lo);
        if (top >= 0 && top < t->step)
            whole = true; /* not the highest step: nothing more to learn here */
        if (whole || start == lo) {
            if (top < 0 || top < t->step) {
                t->nseq = mark;
            } else if (top > t->step) { /* drop the seqs of the lower step */
                memmove(t->seqs, t->seqs + mark, (t->nseq - mark) * sizeof(*t->seqs));
                t->nseq -= mark;
                t->step = top;
                t->count = count;
            } else if (count >= 0) {
                t->count = count;
            }
            return 0;
        }
        t->nseq = mark; /* read a larger window */
    }
    return 0;
}

/* The last step whose messages the topic holds in full (0 when none).
   The highest sluice_step at the end of the partitions, read as
   read_committed, is that step on a broker that hides aborted
   transactions; on one that shows them (librdkafka's mock cluster, a
   read_uncommitted proxy) the highest step may be a transaction the crash
   cut off, holding only some of its messages: every message carries the
   step's message count (sluice_count), and a step with fewer distinct
   seqs in the topic is not complete, so the one before it is the last. */
static int64_t last_step_in_topic(OutputConn *oc, Err *err)
{
    KafkaOut *k = oc->kout;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(k->rk, k->topic, NULL);
    rd_kafka_resp_err_t re = rd_kafka_metadata(k->rk, 0, rkt, &md, 10000);
    rd_kafka_topic_destroy(rkt);
    if (re || md->topic_cnt != 1 || md->topics[0].err) {
        if (md && md->topic_cnt == 1 &&
            md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
            rd_kafka_metadata_destroy(md);
            return 0; /* nothing written yet */
        }
        err_set(err, SL_EIO, "%s: cannot read the partitions of topic \"%s\": %s", oc->name,
                k->topic, rd_kafka_err2str(re ? re : md->topics[0].err));
        if (md)
            rd_kafka_metadata_destroy(md);
        return -1;
    }
    int nparts = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    char es[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", k->bootstrap, es, sizeof(es)) ||
        rd_kafka_conf_set(conf, "group.id", "sluice-scan", es, sizeof(es)) ||
        rd_kafka_conf_set(conf, "isolation.level", "read_committed", es, sizeof(es)) ||
        rd_kafka_conf_set(conf, "enable.partition.eof", "true", es, sizeof(es)) ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", es, sizeof(es))) {
        rd_kafka_conf_destroy(conf);
        err_set(err, SL_EIO, "%s: cannot configure the reader of the topic's tail", oc->name);
        return -1;
    }
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    rd_kafka_t *rc = rd_kafka_new(RD_KAFKA_CONSUMER, conf, es, sizeof(es));
    if (!rc) {
        rd_kafka_conf_destroy(conf);
        err_set(err, SL_EIO, "%s: %s", oc->name, es);
        return -1;
    }
    rd_kafka_poll_set_consumer(rc);
    Tail t = {.step = 0, .count = -1};
    for (int32_t p = 0; p < nparts && !err->code; p++)
        scan_partition(oc, rc, p, &t, err);
    rd_kafka_assign(rc, NULL);
    rd_kafka_consumer_close(rc);
    rd_kafka_destroy(rc);
    int64_t last = t.step;
    if (!err->code && t.step > 0 && t.count >= 0) {
        qsort(t.seqs, t.nseq, sizeof(*t.seqs), cmp_i64);
        int64_t distinct = 0;
        for (size_t i = 0; i < t.nseq; i++)
            distinct += t.seqs[i] >= 0 && t.seqs[i] < t.count &&
                        (i == 0 || t.seqs[i] != t.seqs[i - 1]);
        if (distinct < t.count) {
            fprintf(stderr, "sluice: %s: topic \"%s\" holds %lld of the %lld messages of step "
                            "%lld (a transaction the crash cut off, shown by the broker); the "
                            "step is sent again\n",
                    oc->name, k->topic, (long long)distinct, (long long)t.count,
                    (long long)t.step);
            last = t.step - 1;
        }
    }
    sl_free(t.seqs);
    return err->code ? -1 : last;
}

static int kafka_out_truncate(OutputConn *oc, int64_t offset, Err *err)
{
    KafkaOut *k = oc->kout;
    if (!k || !k->rk)
        return 0;
    k->skip_through = k->committed = 0;
    if (offset <= 0)
        return 0; /* a fresh run */
    int64_t last = last_step_in_topic(oc, err);
    if (last < 0)
        return err->code;
    k->skip_through = last > offset - 1 ? last : offset - 1;
    k->committed = k->skip_through;
    if (last >= offset)
        fprintf(stderr, "sluice: %s: topic \"%s\" already holds step %lld; replayed steps up to "
                        "it are not sent again\n",
                oc->name, k->topic, (long long)last);
    return 0;
}

/* (both read by the journal while a drain thread commits: deliver.c) */
static int64_t kafka_out_committed(const OutputConn *oc)
{
    return __atomic_load_n(&oc->kout->committed, __ATOMIC_RELAXED);
}

static int64_t kafka_out_offset(const OutputConn *oc) { return kafka_out_committed(oc) + 1; }

static int txn_error(OutputConn *oc, const char *what, rd_kafka_error_t *e, Err *err)
{
    err_set(err, SL_EIO, "%s: %s: %s", oc->name, what, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return err->code;
}

/* Produce one message value (copied) with the step's headers. */
static int send_one(OutputConn *oc, const char *v, size_t n, int64_t seq, Err *err)
{
    KafkaOut *k = oc->kout;
    char step[24], sq[24], cnt[24];
    snprintf(step, sizeof(step), "%lld", (long long)k->step);
    snprintf(sq, sizeof(sq), "%lld", (long long)seq);
    snprintf(cnt, sizeof(cnt), "%lld", (long long)k->count);
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            k->rk, RD_KAFKA_V_TOPIC(k->topic), RD_KAFKA_V_VALUE((void *)v, n),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_HEADER("sluice_step", step, (ssize_t)strlen(step)),
            RD_KAFKA_V_HEADER("sluice_seq", sq, (ssize_t)strlen(sq)),
            RD_KAFKA_V_HEADER("sluice_count", cnt, (ssize_t)strlen(cnt)), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(k->rk, 10);
            continue;
        }
        if (e)
            return err_set(err, SL_EIO, "%s: cannot send to topic \"%s\": %s", oc->name,
                           k->topic, rd_kafka_err2str(e));
        return 0;
    }
}

/* Tuple row (weight w) as one message value into out: JSON {"insert":
   row} or {"delete": row}, CSV the fields and the sign. */
static void kafka_value(OutputConn *oc, const Chunk *row, int64_t w, Buf *out)
{
    buf_reset(out);
    if (oc->fmt == FMT_CSV) {
        fmt_csv_row(row, 0, out);
        buf_printf(out, ",%lld", (long long)(w < 0 ? -1 : 1));
    } else {
        buf_puts(out, w > 0 ? "{\"insert\":" : "{\"delete\":");
        fmt_json_row(&oc->schema, row, 0, out);
        buf_puts(out, "}");
    }
}

/* A step the topic already holds (replayed): the messages and bytes
   kafka_out_write would have counted, in buffers of its own
   (output_account; a drain thread may be writing). */
static void kafka_out_account(OutputConn *oc, int64_t step, const Batch *b)
{
    (void)step;
    Arena *a = arena_new(16 * 1024);
    Chunk *row = chunk_new(a, oc->schema.ncol, oc->schema.types, 1);
    row->n = 1;
    Buf v = BUF_INIT;
    int64_t recs = 0, bytes = 0;
    for (int64_t i = 0; i < b->n; i++) {
        key_decode(batch_key(b, i), oc->schema.types, oc->schema.ncol, row, 0, 0);
        int64_t w = b->w[i], units = w < 0 ? -w : w;
        kafka_value(oc, row, w, &v);
        recs += units;
        bytes += units * (int64_t)v.n;
    }
    buf_free(&v);
    arena_free(a);
    __atomic_add_fetch(&oc->records, recs, __ATOMIC_RELAXED);
    __atomic_add_fetch(&oc->bytes, bytes, __ATOMIC_RELAXED);
}

static int kafka_out_write(OutputConn *oc, int64_t step, const Batch *b, Err *err)
{
    KafkaOut *k = oc->kout;
    if (!k->rk || b->n == 0)
        return 0;
    if (step <= k->skip_through) { /* replayed, already in the topic */
        kafka_out_account(oc, step, b);
        return 0;
    }
    if (k->in_txn && k->step == step) /* a queued step tried again: its messages are */
        return 0;                     /* in the open transaction; the flush commits it */
    arena_reset(oc->scratch);
    Chunk *row = chunk_new(oc->scratch, oc->schema.ncol, oc->schema.types, 1);
    row->n = 1;
    for (int64_t i = 0; i < b->n; i++) {
        key_decode(batch_key(b, i), oc->schema.types, oc->schema.ncol, row, 0, 0);
        int64_t w = b->w[i], units = w < 0 ? -w : w;
        kafka_value(oc, row, w, &oc->line);
        if (!k->in_txn) {
            rd_kafka_error_t *e = rd_kafka_begin_transaction(k->rk);
            if (e)
                return txn_error(oc, "cannot begin a transaction", e, err);
            k->in_txn = true;
            k->step = step;
            k->seq = 0;
            k->count = 0;
            for (int64_t r = 0; r < b->n; r++)
                k->count += b->w[r] < 0 ? -b->w[r] : b->w[r];
            buf_reset(&k->msgs);
        }
        for (int64_t j = 0; j < units; j++) {
            uint32_t n = (uint32_t)oc->line.n;
            buf_append(&k->msgs, &n, sizeof(n));
            buf_append(&k->msgs, oc->line.p, oc->line.n);
            if (send_one(oc, (const char *)oc->line.p, oc->line.n, k->seq++, err))
                return err->code;
            /* tests: a crash with half a step's messages at the brokers (base.h) */
            if (k->seq == (k->count + 1) / 2 && sl_crash_count_due("kafka-mid-step", step, true)) {
                rd_kafka_flush(k->rk, 30000);
                _exit(137);
            }
            __atomic_add_fetch(&oc->records, 1, __ATOMIC_RELAXED); /* a drain thread */
            __atomic_add_fetch(&oc->bytes, (int64_t)oc->line.n, __ATOMIC_RELAXED);
        }
        rd_kafka_poll(k->rk, 0);
    }
    return 0;
}

/* Abort the open transaction and send the step's messages again in a new
   one. */
static int resend(OutputConn *oc, Err *err)
{
    KafkaOut *k = oc->kout;
    rd_kafka_error_t *e = rd_kafka_abort_transaction(k->rk, TXN_TIMEOUT_MS);
    if (e)
        return txn_error(oc, "cannot abort the transaction", e, err);
    if ((e = rd_kafka_begin_transaction(k->rk)))
        return txn_error(oc, "cannot begin a transaction", e, err);
    int64_t seq = 0;
    for (size_t at = 0; at < k->msgs.n;) {
        uint32_t n;
        memcpy(&n, k->msgs.p + at, sizeof(n));
        at += sizeof(n);
        if (send_one(oc, (const char *)k->msgs.p + at, n, seq++, err))
            return err->code;
        at += n;
    }
    return 0;
}

static int kafka_out_flush(OutputConn *oc, Err *err)
{
    KafkaOut *k = oc->kout;
    if (!k->in_txn)
        return 0;
    bool waited = false;
    int tries = 0;
    /* each commit waits up to max_backoff_ms (at least 1 s) for the brokers */
    int wait_ms = oc->dcfg.max_backoff_ms > 1000 ? oc->dcfg.max_backoff_ms : 1000;
    for (;;) {
        rd_kafka_error_t *e = rd_kafka_commit_transaction(k->rk, wait_ms);
        if (!e)
            break;
        if (e && rd_kafka_error_is_fatal(e))
            return txn_error(oc, "the transactional producer failed", e, err);
        if (!waited && k->said != k->step)
            fprintf(stderr, "sluice: %s: committing step %lld to topic \"%s\" failed (%s); "
                            "trying again\n",
                    oc->name, (long long)k->step, k->topic,
                    rd_kafka_error_string(e));
        waited = true;
        k->said = k->step;
        bool abort = rd_kafka_error_txn_requires_abort(e);
        if (!abort && ++tries >= (oc->draining ? 1 : oc->dcfg.attempts)) {
            /* transient (deliver.c queues the step): the transaction stays
               open with the step's messages; the next try commits it */
            oc->fail = OUT_FAIL_TRANSIENT;
            err_set(err, SL_EIO, "%s: committing step %lld to topic \"%s\" failed: %s",
                    oc->name, (long long)k->step, k->topic, rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
            return err->code;
        }
        rd_kafka_error_destroy(e);
        if (abort && resend(oc, err))
            return err->code;
        if (!abort) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (waited || k->said == k->step)
        fprintf(stderr, "sluice: %s: step %lld committed\n", oc->name, (long long)k->step);
    k->in_txn = false;
    __atomic_store_n(&k->committed, k->step, __ATOMIC_RELAXED);
    buf_reset(&k->msgs);
    return 0;
}

const OutOps tr_kafka_out_ops = {
    .write = kafka_out_write,
    .flush = kafka_out_flush,
    .truncate = kafka_out_truncate,
    .offset = kafka_out_offset,
    .close = kafka_out_close,
    .committed = kafka_out_committed,
    .account = kafka_out_account,
};
