/*
 * bench/store_bench.c - storage throughput: write one batch of N tuples
 * (default 10M) as a batch file, read it back, and "checkpoint" it again
 * unchanged (content hash + existence check, no write). Also times a
 * manifest write (two fsyncs).
 *
 *   build/bench/store_bench [tuples] [dir]     (dir default /tmp/sluice-store-bench)
 *
 * MB/s are of the uncompressed payload (20 bytes a tuple + tuple bytes).
 * The read is from the page cache unless the caches were dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "base/mem.h"
#include "storage/storage.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const Err *e)
{
    fprintf(stderr, "store_bench: %s: %s\n", what, e->msg);
    exit(1);
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 10000000;
    const char *dir = argc > 2 ? argv[2] : "/tmp/sluice-store-bench";
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;

    /* A table-like batch: key = account id (8 bytes, big-endian), val = a
       name and an amount as text. */
    double t0 = now();
    BatchBuilder *bb = bb_new();
    for (int64_t i = 0; i < n; i++) {
        uint8_t k[8];
        uint64_t u = (uint64_t)i * 2654435761u % (uint64_t)(n * 4 + 1);
        for (int j = 0; j < 8; j++)
            k[j] = (uint8_t)(u >> (56 - 8 * j));
        char v[48];
        int vn = snprintf(v, sizeof(v), "customer-%lld|%lld.%02d", (long long)(u % 100000),
                          (long long)(u % 9973), (int)(u % 100));
        bb_add(bb, k, 8, (const uint8_t *)v, (size_t)vn, 1);
    }
    Batch *b = bb_finish(bb);
    double raw = (double)(b->n * 20 + (int64_t)batch_off(b, b->n)) / 1e6;
    printf("batch: %lld tuples, %.1f MB payload (built in %.2f s)\n", (long long)b->n, raw,
           now() - t0);

    Store *st;
    Err e = {0};
    if (store_open(dir, &st, &e))
        die("open", &e);
    char name[STORE_NAME_MAX];
    t0 = now();
    if (store_put_batch(st, b, name, &e))
        die("put", &e);
    double tw = now() - t0;
    struct stat sb;
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    stat(path, &sb);
    printf("write: %.3f s, %.0f MB/s (file %.1f MB, ratio %.2f, fsync'd)\n", tw, raw / tw,
           (double)sb.st_size / 1e6, raw / ((double)sb.st_size / 1e6));

    Batch *r;
    t0 = now();
    if (store_get_batch(st, name, &r, &e))
        die("get", &e);
    double tr = now() - t0;
    printf("read:  %.3f s, %.0f MB/s (verified, page cache)\n", tr, raw / tr);
    if (r->n != b->n || memcmp(r->data, b->data, batch_off(b, b->n)) != 0) {
        fprintf(stderr, "store_bench: read back differs\n");
        return 1;
    }
    batch_unref(r);

    char name2[STORE_NAME_MAX];
    t0 = now();
    if (store_put_batch(st, b, name2, &e))
        die("put again", &e);
    double tu = now() - t0;
    StoreStats ss;
    store_stats(st, &ss);
    printf("checkpoint of the unchanged batch: %.1f ms (hash + exists; reused %llu)\n",
           tu * 1e3, (unsigned long long)ss.batches_reused);

    char json[200];
    snprintf(json, sizeof(json), "{\"step\": 1, \"files\": [\"%s\"]}", name);
    t0 = now();
    if (store_write_manifest(st, 1, json, &e))
        die("manifest", &e);
    printf("manifest write: %.1f ms\n", (now() - t0) * 1e3);

    batch_unref(b);
    store_close(st);
    if (system(cmd) != 0)
        return 1;
    return 0;
}
