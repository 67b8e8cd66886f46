/*
 * bench/bank_bench.c - the bank program's incremental benchmark, driven
 * through the engine's runtime API: backfill N datagen rows in steps, then
 * one step inserting N/100 new rows and one step deleting N/100 old ones,
 * timing each of those steps from its start to the views' changes being
 * ready (rt_step returns when every worker has finished the step).
 *
 * usage: bank_bench PROGRAM.sql N WORKERS [STEP_ROWS]
 * Prints one JSON object. The program's first table must have a datagen
 * connector; its plan 0 generates the rows (row i is a pure function of i,
 * so rows N.. are new rows and rows 0..N/100 are old ones).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../src/base/mem.h"
#include "../src/circuit/circuit.h"
#include "../src/io/datagen.h"
#include "../src/runtime/runtime.h"
#include "../src/sql/sql.h"
#include "../src/zset/hmap.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = sl_malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(1);
    }
    s[n] = 0;
    fclose(f);
    return s;
}

static void bench_fill(const void *src, int plan, int64_t start, int64_t count, Chunk *out,
                       Arena *a)
{
    datagen_fill(src, plan, start, count, out, a);
}

/* One step feeding rows [start, start+count) of plan 0, split over workers. */
static double step(Runtime *rt, const Relation *r, int rel, const Datagen *g, int64_t start,
                   int64_t count, bool negate)
{
    int W = rt_workers(rt);
    Piece *p = sl_calloc((size_t)W, sizeof(Piece));
    int64_t per = (count + W - 1) / W;
    for (int w = 0; w < W; w++) {
        int64_t s = (int64_t)w * per, e = s + per < count ? s + per : count;
        if (s >= e)
            continue;
        p[w] = (Piece){NULL, NULL, bench_fill, g, 0, start + s, e - s, negate};
        rt_set_input(rt, w, rel, &p[w]);
    }
    (void)r;
    Err err = {0};
    double t = now();
    if (rt_step(rt, &err)) {
        fprintf(stderr, "bank_bench: %s\n", err.msg);
        exit(1);
    }
    t = now() - t;
    sl_free(p);
    return t;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bank_bench PROGRAM.sql N WORKERS [STEP_ROWS]\n");
        return 2;
    }
    int64_t n = atoll(argv[2]);
    int workers = atoi(argv[3]);
    int64_t step_rows = argc > 4 ? atoll(argv[4]) : (int64_t)workers * 131072;
    char *sql = slurp(argv[1]);
    double t0 = now();
    Circuit *c;
    Err err = {0};
    if (circuit_compile(sql, &c, &err)) {
        fprintf(stderr, "bank_bench: %d:%d: %s\n", err.line, err.col, err.msg);
        return 1;
    }
    int rel = 0;
    const Relation *r = &c->rels[rel];
    const cJSON *conn = cJSON_GetArrayItem(r->connectors, 0);
    const cJSON *cfg = cJSON_GetObjectItem(cJSON_GetObjectItem(conn, "transport"), "config");
    Datagen *g = datagen_new(cfg, r->ncol, (const char *const *)r->colnames, r->types, "bench",
                             &err);
    if (!g) {
        fprintf(stderr, "bank_bench: %s\n", err.msg);
        return 1;
    }
    Runtime *rt = rt_new(c, workers);
    double startup = now() - t0;

    double tb = now();
    for (int64_t s = 0; s < n; s += step_rows)
        step(rt, r, rel, g, s, s + step_rows < n ? step_rows : n - s, false);
    double backfill = now() - tb;
    int64_t one = n / 100;
    double ins = step(rt, r, rel, g, n, one, false);
    double del = step(rt, r, rel, g, 0, one, true);

    /* sanity: balances sum to zero */
    int b = circuit_find_rel(c, "balance");
    int64_t net = 0;
    if (b >= 0 && c->rels[b].sink >= 0)
        for (int w = 0; w < workers; w++)
            net += op_sink_net(rt_op(rt, w, c->rels[b].sink));
    printf("{\"rows\": %lld, \"workers\": %d, \"startup_s\": %.6f, \"backfill_s\": %.4f, "
           "\"insert_1pct_step_s\": %.6f, \"delete_1pct_step_s\": %.6f, \"balance_rows\": %lld, "
           "\"peak_rss_mb\": %.1f}\n",
           (long long)n, workers, startup, backfill, ins, del, (long long)net,
           (double)mem_peak_rss_bytes() / 1048576.0);
    rt_free(rt);
    datagen_free(g);
    circuit_free(c);
    sl_free(sql);
    return 0;
}
