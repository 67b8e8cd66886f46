/*
 * pipeline/dump.c - `--dump DIR`: every materialized table and view as
 * DIR/<name>.csv: a header of column names, then every row with positive
 * weight repeated weight times, lines in byte order, NULL as an empty
 * unquoted field and the empty string as "". The contents are the sum of
 * every worker's shard, so the file is the same for any worker count.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "../base/mem.h"
#include "../io/format.h"
#include "../runtime/runtime.h"
#include "../zset/batch.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "pipeline.h"

static int cmp_line(const void *a, const void *b)
{
    const Str *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, m);
    return c ? c : (x->n < y->n ? -1 : x->n > y->n);
}

static int dump_rel(Pipeline *p, int rel, const char *dir, Err *err)
{
    const Relation *r = &pipeline_circuit(p)->rels[rel];
    BatchBuilder *bb = bb_new();
    Buf raw = BUF_INIT; /* every host's contents */
    pipeline_contents_raw(p, rel, &raw);
    size_t pos = 0;
    XRec x;
    while (xrec_next(&raw, &pos, &x))
        bb_add(bb, x.k, x.kn, NULL, 0, x.w);
    buf_free(&raw);
    Batch *b = bb_finish(bb);
    Arena *a = arena_new(1 << 16);
    Chunk *row = chunk_new(a, r->ncol, r->types, 1);
    Buf text = BUF_INIT;
    int64_t nlines = 0;
    row->n = 1;
    /* format every row once, remembering offsets into one text buffer */
    size_t *offs = sl_malloc(sizeof(size_t) * (size_t)(b->n + 1));
    for (int64_t i = 0; i < b->n; i++) {
        offs[i] = text.n;
        if (b->w[i] <= 0)
            continue;
        key_decode(batch_key(b, i), r->types, r->ncol, row, 0, 0);
        fmt_csv_row(row, 0, &text);
        nlines += b->w[i];
    }
    offs[b->n] = text.n;
    Str *lines = sl_malloc(sizeof(Str) * (size_t)(nlines ? nlines : 1));
    int64_t k = 0;
    for (int64_t i = 0; i < b->n; i++)
        for (int64_t j = 0; j < b->w[i]; j++)
            lines[k++] = (Str){(const char *)text.p + offs[i], (uint32_t)(offs[i + 1] - offs[i])};
    qsort(lines, (size_t)nlines, sizeof(Str), cmp_line);

    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.csv", dir, r->name);
    FILE *f = fopen(path, "wb");
    int rc = 0;
    if (!f) {
        rc = err_set(err, SL_EIO, "cannot create \"%s\": %s", path, strerror(errno));
    } else {
        Buf hdr = BUF_INIT;
        RowSchema s = {r->ncol, (const char *const *)r->colnames, r->types};
        fmt_csv_header(&s, &hdr);
        buf_putc(&hdr, '\n');
        fwrite(hdr.p, 1, hdr.n, f);
        buf_free(&hdr);
        for (int64_t i = 0; i < nlines; i++) {
            fwrite(lines[i].p, 1, lines[i].n, f);
            fputc('\n', f);
        }
        if (fclose(f))
            rc = err_set(err, SL_EIO, "cannot write \"%s\": %s", path, strerror(errno));
    }
    sl_free(lines);
    sl_free(offs);
    buf_free(&text);
    arena_free(a);
    batch_unref(b);
    return rc;
}

static bool has_rows(Pipeline *p, int rel)
{
    Buf b = BUF_INIT;
    bool any = pipeline_contents_raw(p, rel, &b) && b.n > 0;
    buf_free(&b);
    return any;
}

int pipeline_dump(Pipeline *p, const char *dir, Err *err)
{
    const Circuit *c = pipeline_circuit(p);
    if (mkdir(dir, 0777) && errno != EEXIST)
        return err_set(err, SL_EIO, "cannot create directory \"%s\": %s", dir, strerror(errno));
    for (int i = 0; i < c->nrels; i++) {
        const Relation *r = &c->rels[i];
        if (!strcmp(r->name, PIPELINE_ERRORS_TABLE) && !has_rows(p, i))
            continue; /* nothing was rejected: no file */
        if (r->materialized && r->sink >= 0 && dump_rel(p, i, dir, err))
            return err->code;
    }
    return 0;
}
