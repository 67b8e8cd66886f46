/*
 * bench/probe/nexmark_probe.c - the physical limit of Nexmark q0: plain C
 * generating the first N events of bench/nexmark's tables (every column of
 * person, auction and bid, the same values as Sluice's nexmark transport:
 * it compiles src/io/nexmark_gen.c) on T threads, each writing its events'
 * fields into column buffers of 4096 rows as a pass-through would, and
 * folding them into a checksum so that nothing is optimised away.
 *
 *   gcc -O2 -pthread -o build/bench/nexmark_probe bench/probe/nexmark_probe.c \
 *       src/io/nexmark_gen.c -lm
 *   build/bench/nexmark_probe N THREADS [SEED]     # N may be written 1e7
 *
 * Prints one JSON line: events, threads, seconds, events_per_s,
 * events_per_s_per_thread, cpu_seconds (user + system, the URL table
 * included), events_per_cpu_s, checksum (the same for any thread count).
 */
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/io/nexmark_gen.h"

#define ROWS 4096

typedef struct Job {
    const NxGen *g;
    int64_t lo, hi;   /* event ids */
    uint64_t sum;
} Job;

static const NxField fields[3][10] = {
    {NXF_P_ID, NXF_P_NAME, NXF_P_EMAIL, NXF_P_CARD, NXF_P_CITY, NXF_P_STATE, NXF_P_TIME,
     NXF_P_EXTRA, NXF_COUNT},
    {NXF_A_ID, NXF_A_ITEM, NXF_A_DESC, NXF_A_INITIAL, NXF_A_RESERVE, NXF_A_TIME, NXF_A_EXPIRES,
     NXF_A_SELLER, NXF_A_CATEGORY, NXF_A_EXTRA},
    {NXF_B_AUCTION, NXF_B_BIDDER, NXF_B_PRICE, NXF_B_CHANNEL, NXF_B_URL, NXF_B_TIME,
     NXF_B_EXTRA, NXF_COUNT},
};
static const int nfields[3] = {8, 10, 7};

/* Rows of kind k among the first e events. */
static int64_t rows_before(const NxConfig *c, NxKind k, int64_t e)
{
    NxConfig x = *c;
    x.events = e;
    return e > 0 ? nx_rows(&x, k) : 0;
}

static void *work(void *arg)
{
    Job *j = arg;
    const NxConfig *c = nx_config(j->g);
    int64_t *ints = malloc(ROWS * sizeof(int64_t)), *ev = malloc(ROWS * sizeof(int64_t));
    char *text = malloc((size_t)ROWS * 1024);
    uint64_t sum = 0;
    /* each table's rows whose events fall in [lo, hi), a column at a time */
    for (int k = 0; k < 3; k++) {
        NxKind kind = (NxKind)k;
        int64_t r0 = rows_before(c, kind, j->lo), r1 = rows_before(c, kind, j->hi);
        for (int64_t r = r0; r < r1; r += ROWS) {
            int64_t n = r1 - r < ROWS ? r1 - r : ROWS;
            for (int64_t i = 0; i < n; i++)
                ev[i] = nx_event_of(c, kind, r + i);
            for (int f = 0; f < nfields[k]; f++) {
                NxField fd = fields[k][f];
                if (nx_field_is_text(fd)) {
                    size_t at = 0;
                    for (int64_t i = 0; i < n; i++) {
                        size_t len = nx_text(j->g, fd, ev[i], text + at);
                        sum += len + (unsigned char)text[at];
                        at += len;
                    }
                } else {
                    for (int64_t i = 0; i < n; i++)
                        ints[i] = nx_int(j->g, fd, ev[i]);
                    for (int64_t i = 0; i < n; i++)
                        sum += (uint64_t)ints[i] * 0x9E3779B97F4A7C15ULL;
                }
            }
        }
    }
    free(ints);
    free(ev);
    free(text);
    j->sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s EVENTS THREADS [SEED]\n", argv[0]);
        return 2;
    }
    int64_t n = (int64_t)strtod(argv[1], NULL);
    int th = atoi(argv[2]);
    NxConfig c;
    nx_config_default(&c);
    c.events = n;
    c.seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
    NxGen *g = nx_gen_new(&c);
    if (!g || th < 1 || n < 1)
        return 2;
    Job *jobs = calloc((size_t)th, sizeof(Job));
    pthread_t *tid = calloc((size_t)th, sizeof(pthread_t));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < th; i++) {
        jobs[i] = (Job){g, n * i / th, n * (i + 1) / th, 0};
        pthread_create(&tid[i], NULL, work, &jobs[i]);
    }
    uint64_t sum = 0;
    for (int i = 0; i < th; i++) {
        pthread_join(tid[i], NULL);
        sum += jobs[i].sum;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    printf("{\"events\": %lld, \"threads\": %d, \"seconds\": %.3f, \"events_per_s\": %.0f, "
           "\"events_per_s_per_thread\": %.0f, \"cpu_seconds\": %.3f, "
           "\"events_per_cpu_s\": %.0f, \"checksum\": %llu}\n",
           (long long)n, th, s, (double)n / s, (double)n / s / th, cpu, (double)n / cpu,
           (unsigned long long)sum);
    nx_gen_free(g);
    free(jobs);
    free(tid);
    return 0;
}
