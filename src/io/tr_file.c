/*
 * io/tr_file.c - file transports. file_input reads a file in blocks, cuts
 * it into records (CSV records may span lines inside quotes; JSON is one
 * object per line), parses each into rows with format.h, counts and
 * reports bad records (line number, reason, text) and lets the good ones
 * through. file_output writes each step's changes: CSV rows followed by
 * their weight, or JSON lines {"insert": row} / {"delete": row}, one line
 * per unit of weight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../base/mem.h"
#include "../zset/key.h"
#include "io_int.h"

#define READ_BLOCK (1 << 20)
#define MAX_REPORTED 20

static int fill(InputConn *ic, Err *err)
{
    if (ic->rpos > 0) {
        memmove(ic->rbuf, ic->rbuf + ic->rpos, ic->rlen - ic->rpos);
        ic->rlen -= ic->rpos;
        ic->rpos = 0;
    }
    if (ic->rcap - ic->rlen < READ_BLOCK / 2) {
        ic->rcap = ic->rcap ? ic->rcap * 2 : READ_BLOCK;
        ic->rbuf = sl_realloc(ic->rbuf, ic->rcap + 1);
    }
    size_t n = fread(ic->rbuf + ic->rlen, 1, ic->rcap - ic->rlen, ic->f);
    if (n == 0) {
        if (ferror(ic->f))
            return err_set(err, SL_EIO, "%s: cannot read \"%s\": %s", ic->name, ic->path,
                           strerror(errno));
        ic->eof = true;
    }
    ic->rlen += n;
    return 0;
}

static void report(InputConn *ic, int64_t line, const char *rec, size_t n, const char *why)
{
    ic->errors++;
    if (ic->errors <= MAX_REPORTED)
        fprintf(stderr, "sluice: %s: \"%s\" line %lld: %s: %.*s\n", ic->name, ic->path,
                (long long)line, why, (int)(n > 200 ? 200 : n), rec);
    else if (ic->errors == MAX_REPORTED + 1)
        fprintf(stderr, "sluice: %s: more bad records; only counting them from now on\n",
                ic->name);
}

int64_t tr_file_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists, Err *err)
{
    Chunk *c = chunk_new(a, ic->schema.ncol, ic->schema.types, max);
    while (c->n < max) {
        char *p = ic->rbuf + ic->rpos;
        size_t avail = ic->rlen - ic->rpos, len;
        if (ic->fmt == FMT_CSV) {
            len = avail ? fmt_csv_record_len(p, avail, ic->eof) : 0;
        } else {
            char *nl = avail ? memchr(p, '\n', avail) : NULL;
            len = nl ? (size_t)(nl - p) + 1 : (ic->eof ? avail : 0);
        }
        if (len == 0) {
            if (ic->eof) {
                ic->done = true;
                break;
            }
            if (fill(ic, err))
                return -1;
            continue;
        }
        int64_t line = ic->line;
        for (size_t i = 0; i < len; i++)
            if (p[i] == '\n')
                ic->line++;
        ic->rpos += len;
        ic->bytes += (int64_t)len;
        size_t n = len;
        while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
            n--;
        size_t blank = 0;
        while (blank < n && (p[blank] == ' ' || p[blank] == '\t'))
            blank++;
        if (blank == n)
            continue; /* empty line */
        if (ic->csv_header && line == 1)
            continue;
        Err e;
        err_init(&e);
        int rc = ic->fmt == FMT_CSV ? fmt_csv_parse(&ic->schema, p, n, c, a, &e)
                                    : fmt_json_parse(&ic->schema, p, n, c, a, &e);
        if (rc)
            report(ic, line, p, n, e.msg);
        else
            ic->rows++;
    }
    int64_t total = c->n, per = (total + nworkers - 1) / nworkers;
    for (int w = 0; w < nworkers && total; w++) {
        int64_t s = (int64_t)w * per, e = s + per < total ? s + per : total;
        if (s >= e)
            break;
        Piece *pc = arena_zalloc(a, sizeof(*pc));
        pc->chunk = chunk_slice(a, c, s, e - s);
        piece_append(&lists[w], pc);
    }
    return total;
}

int output_write(OutputConn *oc, int64_t step, const Batch *b, Err *err)
{
    if (oc->kout)
        return tr_kafka_out_write(oc, step, b, err);
    arena_reset(oc->scratch);
    Chunk *row = chunk_new(oc->scratch, oc->schema.ncol, oc->schema.types, 1);
    row->n = 1;
    for (int64_t i = 0; i < b->n; i++) {
        key_decode(batch_key(b, i), oc->schema.types, oc->schema.ncol, row, 0, 0);
        int64_t w = b->w[i];
        buf_reset(&oc->line);
        if (oc->fmt == FMT_CSV) {
            fmt_csv_row(row, 0, &oc->line);
            buf_printf(&oc->line, ",%lld\n", (long long)w);
        } else {
            Buf obj = BUF_INIT;
            fmt_json_row(&oc->schema, row, 0, &obj);
            int64_t k = w < 0 ? -w : w;
            for (int64_t j = 0; j < k; j++) {
                buf_puts(&oc->line, w > 0 ? "{\"insert\":" : "{\"delete\":");
                buf_append(&oc->line, obj.p, obj.n);
                buf_puts(&oc->line, "}\n");
            }
            buf_free(&obj);
        }
        if (fwrite(oc->line.p, 1, oc->line.n, oc->f) != oc->line.n)
            return err_set(err, SL_EIO, "%s: cannot write \"%s\": %s", oc->name, oc->path,
                           strerror(errno));
        oc->records += w < 0 ? -w : w;
        oc->bytes += (int64_t)oc->line.n;
    }
    return 0;
}

int output_flush(OutputConn *oc, Err *err)
{
    if (oc->kout)
        return tr_kafka_out_flush(oc, err);
    if (oc->f && fflush(oc->f))
        return err_set(err, SL_EIO, "%s: cannot write \"%s\": %s", oc->name, oc->path,
                       strerror(errno));
    return 0;
}
