/*
 * tests/tools/tool_kafka_mock.c - a Kafka cluster for the end-to-end tests:
 * librdkafka's mock cluster (rdkafka_mock.h, the real Kafka wire protocol
 * on loopback) in a process of its own, so that tests reach it over TCP as
 * they would a broker, and kill -9 of Sluice leaves it running.
 *
 *   tool_kafka_mock BROKERS [TOPIC:PARTITIONS ...]
 *
 * prints "BOOTSTRAP host:port,..." once the cluster is up, then reads
 * commands, one a line, from stdin and answers each with "OK" (or "ERR
 * why"): "down" takes every broker off the network (connections are
 * closed and refused), "up" brings them back, "quit" (or end of input, or
 * SIGTERM) stops. Nothing is persisted.
 *
 *   tool_kafka_mock produce BOOTSTRAP TOPIC [PARTITION]
 *
 * sends every line of stdin (without its line end) as one message, to
 * PARTITION or, without it, to partitions chosen at random; waits until
 * every message is acknowledged, prints "PRODUCED n" and exits 0 (1 when a
 * message failed).
 *
 *   tool_kafka_mock consume BOOTSTRAP TOPIC
 *
 * reads every partition of TOPIC from the beginning to its end
 * (read_committed) and prints one line per message: partition, offset, the
 * sluice_step and sluice_seq headers ("-" when absent) and the value.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk, (void)opaque;
    if (m->err) {
        if (!failed++)
            fprintf(stderr, "kafka_mock: delivery failed: %s\n", rd_kafka_err2str(m->err));
    }
}

static int produce(const char *bs, const char *topic, int32_t part)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bs, errstr, sizeof(errstr)) ||
        rd_kafka_conf_set(conf, "partitioner", "random", errstr, sizeof(errstr)) ||
        rd_kafka_conf_set(conf, "linger.ms", "5", errstr, sizeof(errstr))) {
        fprintf(stderr, "kafka_mock: %s\n", errstr);
        return 1;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        fprintf(stderr, "kafka_mock: %s\n", errstr);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long count = 0;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
                RD_KAFKA_V_VALUE(line, (size_t)n), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(rk, 10);
                continue;
            }
            if (e) {
                fprintf(stderr, "kafka_mock: produce: %s\n", rd_kafka_err2str(e));
                return 1;
            }
            break;
        }
        count++;
        rd_kafka_poll(rk, 0);
    }
    free(line);
    rd_kafka_flush(rk, 60000);
    rd_kafka_destroy(rk);
    printf("PRODUCED %ld\n", count);
    return failed ? 1 : 0;
}

static const char *header(rd_kafka_message_t *m, const char *name, char *buf, size_t cap)
{
    rd_kafka_headers_t *h;
    const void *v;
    size_t n;
    if (rd_kafka_message_headers(m, &h) || rd_kafka_header_get_last(h, name, &v, &n) ||
        n >= cap)
        return "-";
    memcpy(buf, v, n);
    buf[n] = 0;
    return buf;
}

static int consume(const char *bs, const char *topic)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bs, errstr, sizeof(errstr)) ||
        rd_kafka_conf_set(conf, "group.id", "kafka-mock-consume", errstr, sizeof(errstr)) ||
        rd_kafka_conf_set(conf, "isolation.level", "read_committed", errstr, sizeof(errstr)) ||
        rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof(errstr))) {
        fprintf(stderr, "kafka_mock: %s\n", errstr);
        return 1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) {
        fprintf(stderr, "kafka_mock: %s\n", errstr);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) || md->topics[0].err) {
        fprintf(stderr, "kafka_mock: no topic %s\n", topic);
        return 1;
    }
    int n = md->topics[0].partition_cnt, eofs = 0;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    for (int p = 0; p < n; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    while (eofs < n) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 1000);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            eofs++;
        } else if (m->err) {
            fprintf(stderr, "kafka_mock: %s\n", rd_kafka_message_errstr(m));
        } else {
            char a[32], b[32];
            printf("%d %lld %s %s %.*s\n", (int)m->partition, (long long)m->offset,
                   header(m, "sluice_step", a, sizeof(a)), header(m, "sluice_seq", b, sizeof(b)),
                   (int)m->len, (const char *)m->payload);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(rk, NULL);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "consume"))
        return consume(argv[2], argv[3]);
    if (argc >= 4 && !strcmp(argv[1], "produce"))
        return produce(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : RD_KAFKA_PARTITION_UA);
    if (argc < 2 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: %s BROKERS [TOPIC:PARTITIONS ...]\n", argv[0]);
        return 2;
    }
    int nb = atoi(argv[1]);
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        fprintf(stderr, "kafka_mock: %s\n", errstr);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, nb);
    if (!mc) {
        fprintf(stderr, "kafka_mock: cannot create the mock cluster\n");
        rd_kafka_destroy(rk);
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        char name[256];
        int parts = 1;
        snprintf(name, sizeof(name), "%s", argv[i]);
        char *colon = strrchr(name, ':');
        if (colon) {
            *colon = 0;
            parts = atoi(colon + 1);
        }
        rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, name, parts, nb < 3 ? nb : 3);
        if (e) {
            fprintf(stderr, "kafka_mock: topic %s: %s\n", name, rd_kafka_err2str(e));
            return 1;
        }
    }
    printf("BOOTSTRAP %s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    char line[256];
    while (fgets(line, sizeof(line), stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!strcmp(line, "quit"))
            break;
        bool down = !strcmp(line, "down"), up = !strcmp(line, "up");
        if (!down && !up) {
            printf("ERR unknown command \"%s\"\n", line);
            fflush(stdout);
            continue;
        }
        for (int b = 1; b <= nb; b++)
            if (down)
                rd_kafka_mock_broker_set_down(mc, b);
            else
                rd_kafka_mock_broker_set_up(mc, b);
        printf("OK\n");
        fflush(stdout);
    }
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 0;
}
