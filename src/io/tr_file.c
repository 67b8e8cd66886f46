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
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../zset/key.h"
#include "io_int.h"

#define READ_BLOCK (1 << 20)
#define MAX_REPORTED 20
#define RANGE_BYTES (1 << 20)  /* records per parse task: about this many bytes */
#define RANGES_PER_THREAD 4    /* tasks per round and parse thread (balance) */

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

/* ---------------------------------------------------------------- parsing
   A round: the caller cuts the buffered bytes into records (cheap: memchr
   for line ends, the full CSV scanner only where quotes are) and groups
   them into ranges of about RANGE_BYTES; the ranges are parsed at once,
   by the caller and up to ic->par - 1 helper threads, each into its own
   chunk (allocated here, from the caller's arena) with strings in an arena
   borrowed from it. Then, in range order: the rows become pieces, bad
   records are reported with their line numbers, and the position moves
   past the round. A round is always consumed whole, so positions stay
   exact. */

typedef struct Bad {
    int64_t line;     /* relative to the range's first line */
    const char *text; /* in the read buffer */
    size_t n;
    const char *msg;  /* in the range's arena */
} Bad;

typedef struct Range {
    size_t off, len; /* bytes, from the round's start */
    int64_t nrec;    /* records, blank ones included */
    const char *p;
    Chunk *c;
    Arena *a;
    int64_t lines;   /* line ends in the range */
    int64_t nbad;
    int nkept;
    Bad bad[MAX_REPORTED];
} Range;

typedef struct Round {
    const InputConn *ic;
    Range *r;
    int n;
    bool header; /* the record on the first line of range 0 is the header */
    atomic_int next;
} Round;

static void parse_range(const Round *rd, Range *g)
{
    const InputConn *ic = rd->ic;
    const char *p = g->p;
    size_t left = g->len;
    int64_t line = 0;
    bool csv = ic->fmt == FMT_CSV;
    /* without quotes a CSV record is a line, as a JSON one */
    bool quotes = csv && memchr(p, '"', left);
    while (left) {
        size_t len;
        int64_t rl = line;
        if (quotes) {
            len = fmt_csv_record_len(p, left, true);
            for (const char *q = p, *e = p + len; (q = memchr(q, '\n', (size_t)(e - q))); q++)
                line++;
        } else {
            const char *nl = memchr(p, '\n', left);
            len = nl ? (size_t)(nl - p) + 1 : left;
            line += nl != NULL;
        }
        const char *rec = p;
        p += len;
        left -= len;
        size_t n = len;
        while (n && (rec[n - 1] == '\n' || rec[n - 1] == '\r'))
            n--;
        size_t blank = 0;
        while (blank < n && (rec[blank] == ' ' || rec[blank] == '\t'))
            blank++;
        if (blank == n)
            continue; /* empty line */
        if (rd->header && g == rd->r && rl == 0)
            continue;
        Err e;
        err_init(&e);
        int rc = csv ? fmt_csv_parse(&ic->schema, rec, n, g->c, g->a, &e)
                     : fmt_json_parse(&ic->schema, rec, n, g->c, g->a, &e);
        if (rc) {
            if (g->nkept < MAX_REPORTED)
                g->bad[g->nkept++] = (Bad){rl, rec, n, arena_strndup(g->a, e.msg, strlen(e.msg))};
            g->nbad++;
        }
    }
    g->lines = line;
}

static void *parse_thread(void *arg)
{
    Round *rd = arg;
    for (int i; (i = atomic_fetch_add(&rd->next, 1)) < rd->n;)
        parse_range(rd, &rd->r[i]);
    return NULL;
}

/* Length of the next complete record at p (off bytes into the round),
   0 when the buffer holds none yet. *qnext caches where the next '"' is
   (-1 unknown, INT64_MAX none in the buffer): records before it end at
   their line end. */
static size_t cut(const InputConn *ic, const char *p, size_t avail, size_t off, int64_t *qnext)
{
    if (!avail)
        return 0;
    const char *nl = memchr(p, '\n', avail);
    if (ic->fmt == FMT_CSV) {
        if (*qnext < 0 || *qnext < (int64_t)off) {
            const char *q = memchr(p, '"', avail);
            *qnext = q ? (int64_t)(off + (size_t)(q - p)) : INT64_MAX;
        }
        if (!nl || (int64_t)(off + (size_t)(nl - p)) > *qnext)
            return fmt_csv_record_len(p, avail, ic->eof);
    }
    return nl ? (size_t)(nl - p) + 1 : (ic->eof ? avail : 0);
}

/* Line ends in p[0..n): eight bytes at a time (a zero byte of w ^ '\n'
   has its high bit clear in t). */
static int64_t count_nl(const char *p, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, nl = ones * '\n';
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7full, high = 0x8080808080808080ull;
    int64_t k = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        uint64_t x = w ^ nl;
        uint64_t t = ((x & low7) + low7) | x;
        k += (int64_t)((((~t & high) >> 7) * ones) >> 56); /* sum of the 0/1 bytes */
    }
    for (; i < n; i++)
        k += p[i] == '\n';
    return k;
}

/* Bytes of whole lines at p (at most lim, ending at a line end) that are
   whole records too: JSON lines, or CSV without quotes there (*qnext as
   for cut). 0 when there are none. */
static size_t bulk(const InputConn *ic, const char *p, size_t lim, size_t off, int64_t *qnext)
{
    if (ic->fmt == FMT_CSV) {
        if (*qnext < 0 || *qnext < (int64_t)off) {
            const char *qq = memchr(p, '"', ic->rlen - ic->rpos - off);
            *qnext = qq ? (int64_t)(off + (size_t)(qq - p)) : INT64_MAX;
        }
        if (*qnext - (int64_t)off < (int64_t)lim) /* up to the quote's line */
            lim = (size_t)(*qnext - (int64_t)off);
    }
    const char *q = lim ? memrchr(p, '\n', lim) : NULL;
    return q ? (size_t)(q - p) + 1 : 0;
}

/* Rows [0, c->n) of c for the workers' lists. */
static void deal(Arena *a, Chunk *c, int nworkers, Piece **lists)
{
    int64_t total = c->n, per = (total + nworkers - 1) / nworkers;
    for (int w = 0; w < nworkers && total; w++) {
        int64_t s = (int64_t)w * per, e = s + per < total ? s + per : total;
        if (s >= e)
            break;
        Piece *pc = arena_zalloc(a, sizeof(*pc));
        pc->chunk = nworkers == 1 ? c : chunk_slice(a, c, s, e - s);
        piece_append(&lists[w], pc);
    }
}

int64_t tr_file_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists, Err *err)
{
    int par = ic->par > 1 ? ic->par : 1;
    int maxr = par * RANGES_PER_THREAD;
    Range *rg = sl_calloc((size_t)maxr, sizeof(*rg));
    int64_t total = 0;
    while (total < max && !ic->done) {
        /* cut up to max - total records into ranges (rpos stays put, so
           offsets survive fill) */
        int64_t want = max - total, qnext = -1;
        size_t off = 0;
        int nr = 0;
        bool stalled = false, exact = false;
        for (;;) {
            char *p = ic->rbuf + ic->rpos + off;
            size_t avail = ic->rlen - ic->rpos - off;
            if (avail && !exact && (nr < maxr || rg[nr - 1].len < RANGE_BYTES)) {
                /* whole lines at once, where records are lines */
                size_t lim = nr && rg[nr - 1].len < RANGE_BYTES ? RANGE_BYTES - rg[nr - 1].len
                                                                 : RANGE_BYTES;
                size_t blen = bulk(ic, p, avail < lim ? avail : lim, off, &qnext);
                int64_t k = blen ? count_nl(p, blen) : 0;
                exact = k > want; /* the last records one by one */
                if (blen && !exact) {
                    if (!nr || rg[nr - 1].len >= RANGE_BYTES)
                        rg[nr++] = (Range){.off = off};
                    rg[nr - 1].len += blen;
                    rg[nr - 1].nrec += k;
                    off += blen;
                    if ((want -= k) == 0)
                        break;
                    continue;
                }
            }
            size_t len = cut(ic, p, avail, off, &qnext);
            if (len == 0) {
                if (ic->eof)
                    break;
                int rc = ic->s3 ? tr_s3_fill(ic, err) : fill(ic, err);
                if (rc < 0) {
                    sl_free(rg);
                    return -1;
                }
                if (rc > 0) { /* nothing yet (s3_input): come back later */
                    stalled = true;
                    break;
                }
                qnext = -1;
                continue;
            }
            if (!nr || rg[nr - 1].len >= RANGE_BYTES) {
                if (nr == maxr)
                    break;
                rg[nr++] = (Range){.off = off};
            }
            rg[nr - 1].len += len;
            rg[nr - 1].nrec++;
            off += len;
            if (--want == 0)
                break;
        }
        if (nr == 0) {
            if (stalled)
                break;
            if (ic->s3 && tr_s3_next_object(ic))
                continue;
            ic->done = true; /* nothing left */
            break;
        }
        Round rd = {.ic = ic, .r = rg, .n = nr, .header = ic->csv_header && ic->line == 1};
        for (int i = 0; i < nr; i++) {
            Range *g = &rg[i];
            g->p = ic->rbuf + ic->rpos + g->off;
            g->c = chunk_new(a, ic->schema.ncol, ic->schema.types, g->nrec);
            g->a = arena_borrow(a, g->len + 4096);
        }
        atomic_init(&rd.next, 0);
        int nt = par < nr ? par : nr, started = 0;
        pthread_t th[nt > 1 ? nt - 1 : 1];
        for (int t = 0; t + 1 < nt; t++)
            if (pthread_create(&th[t], NULL, parse_thread, &rd) == 0)
                started++;
        parse_thread(&rd);
        for (int t = 0; t < started; t++)
            pthread_join(th[t], NULL);
        int64_t line = ic->line;
        for (int i = 0; i < nr; i++) {
            Range *g = &rg[i];
            arena_adopt(a, g->a);
            for (int k = 0; k < g->nkept; k++)
                report(ic, line + g->bad[k].line, g->bad[k].text, g->bad[k].n, g->bad[k].msg);
            for (int64_t k = g->nkept; k < g->nbad; k++)
                report(ic, 0, "", 0, "");
            ic->rows += g->c->n;
            total += g->c->n;
            deal(a, g->c, nworkers, lists);
            line += g->lines;
        }
        ic->line = line;
        ic->rpos += off;
        ic->bytes += (int64_t)off;
        memset(rg, 0, (size_t)nr * sizeof(*rg));
        if (stalled)
            break;
    }
    sl_free(rg);
    return total;
}

void connectors_set_parse_threads(Connectors *cs, int n)
{
    for (int i = 0; i < cs->nin; i++)
        cs->in[i]->par = n;
}

/* Tuple row (weight w) as file_output's lines into out: CSV, the fields
   and the weight; JSON, one insert or delete object per unit of weight. */
static void file_line(OutputConn *oc, const Chunk *row, int64_t w, Buf *out)
{
    buf_reset(out);
    if (oc->fmt == FMT_CSV) {
        fmt_csv_row(row, 0, out);
        buf_printf(out, ",%lld\n", (long long)w);
        return;
    }
    Buf obj = BUF_INIT;
    fmt_json_row(&oc->schema, row, 0, &obj);
    int64_t k = w < 0 ? -w : w;
    for (int64_t j = 0; j < k; j++) {
        buf_puts(out, w > 0 ? "{\"insert\":" : "{\"delete\":");
        buf_append(out, obj.p, obj.n);
        buf_puts(out, "}\n");
    }
    buf_free(&obj);
}

static int file_write(OutputConn *oc, int64_t step, const Batch *b, Err *err)
{
    (void)step;
    arena_reset(oc->scratch);
    Chunk *row = chunk_new(oc->scratch, oc->schema.ncol, oc->schema.types, 1);
    row->n = 1;
    for (int64_t i = 0; i < b->n; i++) {
        key_decode(batch_key(b, i), oc->schema.types, oc->schema.ncol, row, 0, 0);
        int64_t w = b->w[i];
        file_line(oc, row, w, &oc->line);
        if (fwrite(oc->line.p, 1, oc->line.n, oc->f) != oc->line.n)
            return err_set(err, SL_EIO, "%s: cannot write \"%s\": %s", oc->name, oc->path,
                           strerror(errno));
        oc->records += w < 0 ? -w : w;
        oc->bytes += (int64_t)oc->line.n;
    }
    return 0;
}

/* A replayed step already in the file: the records and bytes file_write
   would have added (output_account). */
static void file_account(OutputConn *oc, int64_t step, const Batch *b)
{
    (void)step;
    Arena *a = arena_new(16 * 1024);
    Chunk *row = chunk_new(a, oc->schema.ncol, oc->schema.types, 1);
    row->n = 1;
    Buf line = BUF_INIT;
    int64_t recs = 0, bytes = 0;
    for (int64_t i = 0; i < b->n; i++) {
        key_decode(batch_key(b, i), oc->schema.types, oc->schema.ncol, row, 0, 0);
        int64_t w = b->w[i];
        file_line(oc, row, w, &line);
        recs += w < 0 ? -w : w;
        bytes += (int64_t)line.n;
    }
    buf_free(&line);
    arena_free(a);
    oc->records += recs;
    oc->bytes += bytes;
}

static int file_flush(OutputConn *oc, Err *err)
{
    if (oc->f && fflush(oc->f))
        return err_set(err, SL_EIO, "%s: cannot write \"%s\": %s", oc->name, oc->path,
                       strerror(errno));
    return 0;
}

/* ---------------------------------------------------------------- tables */

static void file_in_pos(const InputConn *ic, InPos *out)
{
    if (!ic->f)
        return;
    out->v[0] = (int64_t)ftello(ic->f) - (int64_t)(ic->rlen - ic->rpos);
    out->v[1] = ic->line;
}

static int file_in_seek(InputConn *ic, const InPos *pos, Err *err)
{
    if (fseeko(ic->f, (off_t)pos->v[0], SEEK_SET))
        return err_set(err, SL_EIO, "%s: cannot seek \"%s\" to byte %lld: %s", ic->name,
                       ic->path, (long long)pos->v[0], strerror(errno));
    ic->rlen = ic->rpos = 0;
    ic->eof = false;
    ic->line = pos->v[1];
    return 0;
}

static void file_in_close(InputConn *ic)
{
    if (ic->f)
        fclose(ic->f);
    ic->f = NULL;
}

/* Position: the offset of the next record; high watermark: the file's
   size now. */
static void file_in_progress(InputConn *ic, InProgress *out)
{
    if (!ic->f)
        return;
    InPos p = {0};
    file_in_pos(ic, &p);
    out->unit = "bytes";
    out->pos = p.v[0];
    snprintf(out->pos_text, sizeof(out->pos_text), "%lld", (long long)p.v[0]);
    struct stat st;
    if (fstat(fileno(ic->f), &st) == 0) {
        out->high = (int64_t)st.st_size;
        out->lag = out->high > out->pos ? out->high - out->pos : 0;
        snprintf(out->high_text, sizeof(out->high_text), "%lld", (long long)out->high);
    }
}

const InOps tr_file_in_ops = {
    .next = tr_file_next,
    .progress = file_in_progress,
    .pos = file_in_pos,
    .seek = file_in_seek,
    .close = file_in_close,
};

static int file_sync(OutputConn *oc, Err *err)
{
    if (oc->f && (fflush(oc->f) || fdatasync(fileno(oc->f))))
        return err_set(err, SL_EIO, "%s: cannot sync \"%s\": %s", oc->name, oc->path,
                       strerror(errno));
    return 0;
}

static int file_truncate(OutputConn *oc, int64_t offset, Err *err)
{
    if (!oc->f)
        return 0;
    if (fflush(oc->f) || ftruncate(fileno(oc->f), (off_t)offset) ||
        fseeko(oc->f, (off_t)offset, SEEK_SET))
        return err_set(err, SL_EIO, "%s: cannot truncate \"%s\" to %lld bytes: %s", oc->name,
                       oc->path, (long long)offset, strerror(errno));
    return 0;
}

static int64_t file_offset(const OutputConn *oc)
{
    if (!oc->f)
        return -1;
    fflush(oc->f);
    return (int64_t)ftello(oc->f);
}

static void file_out_close(OutputConn *oc)
{
    if (oc->f)
        fclose(oc->f);
    oc->f = NULL;
}

const OutOps tr_file_out_ops = {
    .write = file_write,
    .flush = file_flush,
    .sync = file_sync,
    .truncate = file_truncate,
    .offset = file_offset,
    .close = file_out_close,
    .account = file_account,
};
