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
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
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
