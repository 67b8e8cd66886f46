/*
 * fuzz/fuzz_ingress_log.c - HTTP ingress log records (pipeline/journal.c
 * on_ingress and ingress_decode: the logged rows queued again) and the
 * record log framing under them (storage/log.c log_scan: magic, length,
 * checksum, torn tails), read back the way a
 * restart reads them: pipeline_new with --storage over a directory that
 * holds one ingress log segment (fuzz_ft.h).
 *
 * Input: byte 0 bit 0 clear: the rest is records framed as in fuzz.h,
 * each appended with log_append (so they pass the checksum and reach the
 * decoder); set: the rest is the segment file's bytes as they are. Seeds:
 * fuzz/corpus/ingress_log/, cut from a real run's ingress log.
 */
#include "fuzz_ft.h"

static const char *dir;

static void write_log(const char *name, const uint8_t *data, size_t size)
{
    if (data[0] & 1) {
        fz_write(dir, name, data + 1, size - 1);
        return;
    }
    Store *st;
    Log *l;
    Err e;
    err_init(&e);
    if (store_open(dir, &st, &e) || log_create(st, name, &l, &e))
        abort();
    const uint8_t *p = data + 1, *rec;
    size_t n;
    while (fz_next(&p, data + size, &rec, &n))
        if (log_append(l, rec, n, NULL, NULL, &e))
            abort();
    log_close(l);
    store_close(st);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fz_ft_init();
    if (fz_seed_dir()) {
        fz_ft_log_seeds("ingress-");
        fz_remove_dirs();
        _exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir)
        dir = fz_dir("ingress-log");
    if (size < 1)
        return 0;
    fz_clear(dir);
    write_log("ingress-0-1.log", data, size);
    fz_ft_open(dir);
    return 0;
}
