/*
 * pipeline/journal.c - what a restart needs beyond the checkpoint.
 *
 * The step journal (exactly_once): before a step runs, one record says
 * what it consumed — per input connector the rows taken, the position
 * after them and a hash of the rows; the newest HTTP ingress record taken;
 * and every output file's offset before the step's output — and is made
 * durable (with the outputs written so far) before the step's outputs can
 * leave. A record of kind SKIP says input was read and thrown away (an
 * aborted transaction). Replay (ft_replay, replay.c) re-reads exactly those rows,
 * checks count, position and hash, and runs the same steps; outputs of
 * all but the last replayed step are already in the files, which were
 * truncated to the last record's offsets, so the files come out
 * byte-identical to an uninterrupted run's.
 *
 * The ingress log (exactly_once, at_least_once): HTTP input is appended,
 * with a sequence number, under the queue lock (so log order is queue
 * order) and synced before the request is acknowledged (group commit).
 * At restart, records after the checkpoint's watermark feed the journaled
 * steps that consumed them, and the rest go back into the queue.
 *
 * Faults. A failed append is cut back by the log (storage/log.c) and is
 * not acknowledged: the push gets PIPE_IOERR (503) and /status shows why
 * (ft_storage_note) until an append works again. A journal write that
 * fails makes the step wait and retry, so a full disk pauses the pipeline
 * instead of ending it. At restart every field of every record is checked
 * before use (counts against the program and the record's length, row
 * encodings against their lengths); only the last record of the last
 * segment may fail to verify (a torn tail, cut off), anything else is
 * corruption and the start is refused, naming file and offset.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../base/wire.h"
#include "../zset/key.h"
#include "ft_int.h"

/* J_STEPX/J_SKIPX: the same records with each input's extra position
   words (InPos.x, a count then the words) after its fixed fields; written
   only when an input has such words, so storage of programs without
   kafka_input stays as it was. */
enum { J_STEP = 1, J_SKIP = 2, J_STEPX = 3, J_SKIPX = 4 };

/* ---------------------------------------------------------------- row hashes */

/* Split-independent: a sum over rows, so the same rows cut into other
   pieces hash the same. Generated rows stand for themselves by index. */
uint64_t ft_hash_pieces(const Piece *list, uint64_t h)
{
    for (const Piece *pc = list; pc; pc = pc->next) {
        if (!pc->chunk) {
            uint64_t n = (uint64_t)pc->count, s = (uint64_t)pc->start;
            uint64_t idx_sum = n * s + (n * (n - 1)) / 2;
            h += 0x9e3779b97f4a7c15ull * (uint64_t)(pc->plan + 1) * n +
                 0xc2b2ae3d27d4eb4full * idx_sum + (pc->negate ? 0x165667b19e3779f9ull * n : 0);
            continue;
        }
        const Chunk *c = pc->chunk;
        for (int64_t r = 0; r < c->n; r++) {
            uint64_t rh = XXH64(&c->w[r], 8, 0);
            for (int j = 0; j < c->ncol; j++) {
                const Vec *v = &c->col[j];
                if (v->nul && v->nul[r]) {
                    rh = XXH64("N", 1, rh);
                    continue;
                }
                if (v->i)
                    rh = XXH64(&v->i[r], 8, rh);
                else if (v->f)
                    rh = XXH64(&v->f[r], 8, rh);
                else if (v->x)
                    rh = XXH64(&v->x[r], 16, rh);
                else if (v->s)
                    rh = XXH64(v->s[r].p, v->s[r].n, rh);
            }
            h += rh;
        }
    }
    return h;
}

/* ---------------------------------------------------------------- segments */

static uint64_t uniq(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ft_rotate(Ft *ft, int64_t step, Err *err)
{
    char name[96];
    if (ft->mode == FT_EXACTLY_ONCE) {
        /* a segment whose end could not be cut back after a failed write is
           never let go: a later segment must not follow a torn record */
        if (ft->journal && log_sync(ft->journal, UINT64_MAX, err))
            return err->code;
        snprintf(name, sizeof(name), "journal-%020lld-%016" PRIx64 ".log", (long long)step,
                 uniq());
        Log *l;
        if (log_create(ft->st, name, &l, err))
            return err->code;
        log_close(ft->journal);
        ft->journal = l;
    }
    if (ft->mode != FT_NONE) {
        pthread_mutex_lock(ft->qmu);
        snprintf(name, sizeof(name), "ingress-%020lld-%016" PRIx64 ".log",
                 (long long)ft->ing_seq + 1, uniq());
        Log *l;
        int rc = log_create(ft->st, name, &l, err);
        /* everything in the old segment is durable before it is let go; a
           pusher still syncing it finds nothing left to do */
        if (!rc && ft->ingress && (rc = log_sync(ft->ingress, UINT64_MAX, err)) != 0)
            log_release(l); /* keep appending to the old one */
        if (!rc) {
            log_release(ft->ingress);
            ft->ingress = l;
        }
        pthread_mutex_unlock(ft->qmu);
        if (rc)
            return rc;
    }
    return 0;
}

static bool seg_start(const char *name, const char *prefix, int64_t *start)
{
    size_t pn = strlen(prefix);
    if (strncmp(name, prefix, pn))
        return false;
    char *end;
    long long v = strtoll(name + pn, &end, 10);
    if (end == name + pn || *end != '-')
        return false;
    *start = v;
    return true;
}

void ft_prune_logs(Ft *ft, int64_t oldest_step, int64_t oldest_seq)
{
    if (oldest_step < 0)
        return;
    char **names;
    int n;
    Err err = {0};
    if (store_list(ft->st, "journal-", &names, &n, &err) == 0) {
        for (int i = 0; i < n; i++) {
            int64_t s;
            if (seg_start(names[i], "journal-", &s) && s < oldest_step &&
                (!ft->journal || strcmp(names[i], log_name(ft->journal))))
                store_remove(ft->st, names[i], &err);
        }
        store_list_free(names, n);
    }
    if (store_list(ft->st, "ingress-", &names, &n, &err) == 0) {
        pthread_mutex_lock(ft->qmu);
        const char *cur = ft->ingress ? log_name(ft->ingress) : "";
        for (int i = 0; i + 1 < n; i++) {
            int64_t next;
            if (seg_start(names[i + 1], "ingress-", &next) && next - 1 <= oldest_seq &&
                strcmp(names[i], cur))
                store_remove(ft->st, names[i], &err);
        }
        pthread_mutex_unlock(ft->qmu);
        store_list_free(names, n);
    }
}

/* ---------------------------------------------------------------- the journal */

static void put_record(Ft *ft, Pending *pd, int kind, Buf *b)
{
    InPos *pos = sl_calloc((size_t)ft->cs->nin + 1, sizeof(InPos));
    bool ext = false;
    for (int j = 0; j < ft->cs->nin; j++) {
        input_pos(ft->cs->in[j], &pos[j]);
        ext = ext || pos[j].nx > 0;
    }
    put32(b, ext ? kind + 2 : kind);
    put64(b, rt_steps(ft->be->rt) + (kind == J_STEP));
    put64(b, pd->max_seq > ft->ing_consumed ? pd->max_seq : ft->ing_consumed);
    put32(b, ft->cs->nin);
    for (int j = 0; j < ft->cs->nin; j++) {
        put64(b, pd->conn_rows[j]);
        put64(b, pos[j].v[0]);
        put64(b, pos[j].v[1]);
        put64(b, pos[j].rows);
        put64(b, pos[j].errors);
        put64(b, pos[j].bytes);
        put64(b, (int64_t)pd->conn_hash[j]);
        if (ext) {
            put32(b, pos[j].nx);
            for (int i = 0; i < pos[j].nx; i++)
                put64(b, pos[j].x[i]);
        }
    }
    sl_free(pos);
    put32(b, ft->cs->nout);
    for (int j = 0; j < ft->cs->nout; j++)
        put64(b, output_offset(ft->cs->out[j]));
}

static int journal_write(Ft *ft, Pending *pd, int kind, bool (*stop)(void *arg), void *arg,
                         Err *err)
{
    if (!ft || ft->mode != FT_EXACTLY_ONCE || ft->replaying)
        return 0;
    Buf b = BUF_INIT;
    put_record(ft, pd, kind, &b);
    /* a full or failing disk makes the step wait, not the pipeline exit: a
       failed append cut the log back to its last whole record, so trying
       again is safe (a record appended whole is not appended again, only
       synced); a stop gives up (the step has not run) */
    int rc;
    bool appended = false, failed = false;
    for (double wait = 0.01;; wait = wait < 1 ? wait * 2 : 1) {
        rc = 0;
        /* the HTTP input this step takes, and the outputs before it, are
           durable before the journal says the step happened */
        if (pd->max_seq > 0) {
            pthread_mutex_lock(ft->qmu);
            Log *ing = ft->ingress;
            log_ref(ing);
            pthread_mutex_unlock(ft->qmu);
            rc = log_sync(ing, UINT64_MAX, err);
            log_release(ing);
        }
        for (int j = 0; j < ft->cs->nout && !rc; j++)
            rc = output_sync(ft->cs->out[j], err);
        if (!rc && !appended)
            appended = (rc = log_append(ft->journal, b.p, b.n, "journal", NULL, err)) == 0;
        if (!rc)
            rc = log_sync(ft->journal, UINT64_MAX, err);
        if (!rc || (stop && stop(arg)))
            break;
        char why[512];
        snprintf(why, sizeof(why), "%.440s; steps wait until it works", err->msg);
        if (!failed)
            fprintf(stderr, "sluice: storage failing: %s\n", why);
        failed = true;
        ft_storage_note(ft, why);
        *err = (Err){0};
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
    if (!rc && failed) {
        fprintf(stderr, "sluice: storage works again; steps continue\n");
        ft_storage_note(ft, NULL);
    }
    buf_free(&b);
    return rc;
}

void ft_storage_note(Ft *ft, const char *why)
{
    pthread_mutex_lock(&ft->mu);
    snprintf(ft->storage_error, sizeof(ft->storage_error), "%s", why ? why : "");
    atomic_store(&ft->storage_bad, why != NULL);
    pthread_mutex_unlock(&ft->mu);
}

int ft_journal_step(Ft *ft, Pending *pd, bool (*stop)(void *arg), void *arg, Err *err)
{
    return journal_write(ft, pd, J_STEP, stop, arg, err);
}

int ft_journal_discard(Ft *ft, Pending *pd, Err *err)
{
    if (ft && pd->max_seq > ft->ing_consumed)
        ft->ing_consumed = pd->max_seq;
    return journal_write(ft, pd, J_SKIP, NULL, NULL, err);
}

void ft_step_done(Ft *ft, Pending *pd)
{
    if (!ft)
        return;
    if (pd->max_seq > ft->ing_consumed)
        ft->ing_consumed = pd->max_seq;
    ft->dirty = true;
}

/* ---------------------------------------------------------------- the ingress log */

/* Payload: seq, rel, rows; per row: weight, update flag (+ the present
   columns), length and row encoding. */
static void ingress_encode(InBatch *b, Buf *out)
{
    put64(out, b->seq);
    put32(out, b->rel);
    put64(out, inbatch_count(b));
    UpdMark *m = b->upd;
    Buf row = BUF_INIT;
    for (Piece *pc = b->head; pc; pc = pc->next) {
        Chunk *c = pc->chunk;
        for (int64_t r = 0; r < c->n; r++) {
            put64(out, c->w[r]);
            bool upd = m && m->c == c && m->row == r;
            buf_append(out, &(uint8_t){upd}, 1);
            if (upd) {
                buf_append(out, m->present, (size_t)b->ncol);
                m = m->next;
            }
            buf_reset(&row);
            key_encode_row(c, r, &row);
            put32(out, (int32_t)row.n);
            buf_append(out, row.p, row.n);
        }
    }
    buf_free(&row);
}

/* Decode one ingress log record, validating every field: the table, the
   row count against the bytes, each flag, and each row's encoding against
   its length (decoded from a copy padded with zeros, so that a damaged
   row cannot make key_skip or key_decode read past the record). On error
   NULL with err naming where (what names the file, may be NULL). */
InBatch *ft_ingress_decode(const Circuit *cir, const uint8_t *data, size_t n, const char *what,
                               Err *err)
{
    Rd r = {data, data + n, false};
    int64_t seq = rd64(&r);
    int rel = rd32(&r);
    int64_t rows = rd64(&r);
    const char *bad = NULL;
    if (r.bad)
        bad = "shorter than its header";
    else if (seq <= 0)
        bad = "sequence number is not positive";
    else if (rel < 0 || rel >= cir->nrels || !cir->rels[rel].is_table)
        bad = "names no table of this program";
    else if (rows < 0 || (uint64_t)rows > (n - 20) / 13) /* a row takes at least 13 bytes */
        bad = "row count does not fit the record's length";
    if (bad) {
        err_set(err, SL_EIO, "ingress log%s%s: record %lld: %s", what ? " " : "", what ? what : "",
                (long long)seq, bad);
        return NULL;
    }
    InBatch *b = inbatch_new(cir, rel);
    b->seq = seq;
    /* the row encodings stay in the batch's arena: decoded strings point there */
    size_t pad = 9 * (size_t)b->ncol + 1;
    uint8_t *copy = arena_alloc(b->a, n + pad);
    memcpy(copy, data, n);
    memset(copy + n, 0, pad);
    r = (Rd){copy + (r.p - data), copy + n, false};
    for (int64_t i = 0; i < rows && !bad; i++) {
        int64_t w = rd64(&r);
        const uint8_t *flag = rd_bytes(&r, 1);
        if (r.bad || *flag > 1) {
            bad = r.bad ? "a row is cut short" : "a row's update flag is not 0 or 1";
            break;
        }
        const uint8_t *present = NULL;
        if (*flag) {
            present = rd_bytes(&r, (size_t)b->ncol);
            for (int c = 0; present && c < b->ncol; c++)
                if (present[c] > 1)
                    present = NULL;
            if (!present) {
                bad = "a row's update columns are malformed";
                break;
            }
        }
        int32_t len = rd32(&r);
        if (r.bad || len < 0 || r.end - r.p < len) {
            bad = "a row's length runs past the record";
            break;
        }
        if (key_skip(r.p, b->types, b->ncol) != r.p + len) {
            bad = "a row's encoding does not fit the table's columns";
            break;
        }
        Chunk *c = inbatch_room(b);
        key_decode(r.p, b->types, b->ncol, c, 0, c->n);
        c->w[c->n] = w;
        c->n++;
        r.p += len;
        if (present)
            inbatch_mark_update(b, present);
    }
    if (!bad && r.p != r.end)
        bad = "bytes left over after the last row";
    if (bad) {
        inbatch_free(b);
        err_set(err, SL_EIO, "ingress log%s%s: record %lld (table %s) is malformed: %s",
                what ? " " : "", what ? what : "", (long long)seq, cir->rels[rel].name, bad);
        return NULL;
    }
    return b;
}

void ft_encode_ingress(Ft *ft, InBatch *b, Buf *enc)
{
    if (ft && ft->mode != FT_NONE)
        ingress_encode(b, enc); /* the sequence number is filled in when logged */
}

int ft_log_ingress(Ft *ft, InBatch *b, Buf *enc, Log **log, uint64_t *end, Err *err)
{
    *log = NULL;
    if (!ft || ft->mode == FT_NONE)
        return 0;
    b->seq = ++ft->ing_seq;
    memcpy(enc->p, &b->seq, 8);
    int rc = log_append(ft->ingress, enc->p, enc->n, "ingress", end, err);
    if (rc) {
        ft->ing_seq--;
        b->seq = 0;
        char why[512];
        snprintf(why, sizeof(why), "%.440s; HTTP input is refused until it works", err->msg);
        ft_storage_note(ft, why);
        return rc;
    }
    if (atomic_load(&ft->storage_bad))
        ft_storage_note(ft, NULL);
    log_ref(ft->ingress);
    *log = ft->ingress;
    return 0;
}

int ft_sync_ingress(Log *log, uint64_t end, Err *err)
{
    if (!log)
        return 0;
    int rc = log_sync(log, end, err);
    log_release(log);
    return rc;
}

/* ---------------------------------------------------------------- restart */

typedef struct ReadCtx {
    Ft *ft;
    int64_t after;            /* journal: steps after this; ingress: seqs after */
    int64_t next;             /* journal: the step expected next */
    Err *err;
    const char *file;         /* the segment being read (for messages) */
} ReadCtx;

static void jrec_free(JRec *j)
{
    sl_free(j->rows);
    sl_free(j->pos);
    sl_free(j->hash);
    sl_free(j->out_off);
}

/* One journal record, every field checked (kind, step, sequence number,
   counts against the program and the record's length, no bytes left). */
static int on_journal(void *arg, const uint8_t *data, size_t n)
{
    ReadCtx *x = arg;
    Ft *ft = x->ft;
    Rd r = {data, data + n, false};
    int kind = rd32(&r);
    int64_t step = rd64(&r), seq_hi = rd64(&r);
    int nin = rd32(&r);
    const char *bad = NULL;
    if (!r.bad && ft->booting) { /* the old program's records (boot.h) */
        int k0 = kind > J_SKIP ? kind - 2 : kind;
        if (k0 == J_STEP ? step > x->after : step >= x->after)
            ft->boot_unsettled = true; /* it must settle them first */
        return 0;
    }
    if (r.bad)
        bad = "shorter than its header";
    else if (kind < J_STEP || kind > J_SKIPX)
        bad = "unknown record kind";
    else if (step < 0 || seq_hi < 0)
        bad = "negative step or ingress sequence number";
    else if (nin != ft->cs->nin)
        bad = "input count differs from the program's";
    else if (kind <= J_SKIP &&
             (size_t)(r.end - r.p) != (size_t)nin * 56 + 4 + (size_t)ft->cs->nout * 8)
        bad = "length does not fit the program's inputs and outputs";
    else if (kind > J_SKIP &&
             (size_t)(r.end - r.p) < (size_t)nin * 60 + 4 + (size_t)ft->cs->nout * 8)
        bad = "shorter than the program's inputs and outputs need";
    bool ext = kind > J_SKIP;
    if (ext)
        kind -= 2;
    if (bad)
        return err_set(x->err, SL_EIO,
                       "storage file %s/%s: journal record (step %lld) is malformed: %s (%d "
                       "inputs and %d outputs expected)",
                       store_where(ft->st), x->file, (long long)step, bad, ft->cs->nin,
                       ft->cs->nout);
    JRec j = {.step = step, .seq_hi = seq_hi, .nin = nin};
    j.rows = sl_calloc((size_t)nin + 1, sizeof(int64_t));
    j.pos = sl_calloc((size_t)nin + 1, sizeof(InPos));
    j.hash = sl_calloc((size_t)nin + 1, sizeof(uint64_t));
    for (int i = 0; i < nin; i++) {
        j.rows[i] = rd64(&r);
        j.pos[i].v[0] = rd64(&r);
        j.pos[i].v[1] = rd64(&r);
        j.pos[i].rows = rd64(&r);
        j.pos[i].errors = rd64(&r);
        j.pos[i].bytes = rd64(&r);
        j.hash[i] = (uint64_t)rd64(&r);
        if (ext) {
            int nx = rd32(&r);
            if (nx < 0 || nx > INPOS_MAX || (size_t)(r.end - r.p) < (size_t)nx * 8) {
                bad = "an input position of more words than fit";
                break;
            }
            j.pos[i].nx = nx;
            for (int k = 0; k < nx; k++)
                j.pos[i].x[k] = rd64(&r);
        }
        if (j.rows[i] < 0 || j.pos[i].rows < 0 || j.pos[i].errors < 0 || j.pos[i].bytes < 0)
            bad = "a negative row, error or byte count";
    }
    j.nout = rd32(&r);
    j.out_off = sl_calloc((size_t)ft->cs->nout + 1, sizeof(int64_t));
    for (int i = 0; i < ft->cs->nout; i++)
        if ((j.out_off[i] = rd64(&r)) < 0)
            bad = "a negative output offset";
    if (!bad && (r.bad || j.nout != ft->cs->nout))
        bad = "output count differs from the program's";
    if (!bad && r.p != r.end)
        bad = "bytes left after the last output";
    if (bad) {
        jrec_free(&j);
        return err_set(x->err, SL_EIO, "storage file %s/%s: journal record of step %lld is "
                       "malformed: %s",
                       store_where(ft->st), x->file, (long long)step, bad);
    }
    if (kind == J_SKIP)
        j.step = -j.step - 1; /* marks a skip; never a real step */
    bool keep = kind == J_STEP ? step > x->after : step >= x->after;
    if (kind == J_STEP && keep && step != x->next) {
        jrec_free(&j);
        if (step < x->next)
            return 0; /* already have it (cannot happen; be lenient) */
        return err_set(x->err, SL_EIO, "the journal is missing step %lld (next found: %lld)",
                       (long long)x->next, (long long)step);
    }
    if (!keep) {
        jrec_free(&j);
        return 0;
    }
    if (kind == J_STEP)
        x->next++;
    *VEC_PUSH(ft->recs, ft->nrecs, ft->caprecs) = j;
    return 0;
}

/* One ingress record: decoded once to check every field (the batch itself
   is built again when it is queued or replayed), sequence numbers rising. */
static int on_ingress(void *arg, const uint8_t *data, size_t n)
{
    ReadCtx *x = arg;
    Ft *ft = x->ft;
    char what[300];
    snprintf(what, sizeof(what), "%s/%s", store_where(ft->st), x->file);
    if (ft->booting) { /* the old program's records (boot.h): only their numbers count */
        Rd h = {data, data + n, false};
        int64_t hs = rd64(&h);
        if (!h.bad && hs > x->next) {
            x->next = hs;
            if (hs > ft->ing_seq)
                ft->ing_seq = hs;
            if (hs > x->after)
                ft->boot_unsettled = true; /* it must settle them first */
            return 0;
        }
    }
    InBatch *b = ft_ingress_decode(ft->c, data, n, what, x->err);
    if (!b)
        return x->err->code;
    int64_t seq = b->seq;
    inbatch_free(b);
    if (seq <= x->next)
        return err_set(x->err, SL_EIO, "ingress log %s: record %lld follows record %lld "
                       "(sequence numbers must rise)", what, (long long)seq, (long long)x->next);
    x->next = seq;
    if (seq > ft->ing_seq)
        ft->ing_seq = seq;
    if (seq <= x->after)
        return 0;
    IRec *r = VEC_PUSH(ft->irecs, ft->nirecs, ft->capirecs);
    r->seq = seq;
    r->n = n;
    r->p = sl_malloc(n);
    memcpy(r->p, data, n);
    return 0;
}

/* Read every segment of one log in order. Only the last segment may end
   in a torn record (the process died writing it); it is cut off, so that
   the segment started next does not follow a torn record. A torn record
   in an earlier segment, or a damaged one with valid records after it, is
   corruption: the start is refused rather than records skipped. */
static int scan_all(Ft *ft, const char *prefix, LogFn cb, ReadCtx *x, Err *err)
{
    char **names;
    int n;
    Store *st = ft->st;
    if (store_list(st, prefix, &names, &n, err))
        return err->code;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        uint64_t torn_at;
        x->file = names[i];
        rc = log_scan(st, names[i], cb, x, &torn_at, err);
        if (rc || torn_at == UINT64_MAX)
            continue;
        if (i + 1 < n) {
            rc = err_set(err, SL_EIO,
                         "storage file %s/%s is corrupt: the record at offset %llu does not "
                         "verify, and the later segment %s follows it; refusing to skip what "
                         "follows (see docs/fault-tolerance.md, \"Corruption\")",
                         store_where(st), names[i], (unsigned long long)torn_at, names[i + 1]);
            continue;
        }
        fprintf(stderr, "sluice: storage: %s ends in a torn record at offset %llu (the process "
                        "died while writing it; it was never acknowledged); cutting it off\n",
                names[i], (unsigned long long)torn_at);
        rc = log_cut_tail(st, names[i], torn_at, err);
    }
    x->file = NULL;
    store_list_free(names, n);
    return rc;
}

int ft_read_logs(Ft *ft, int64_t ckpt_step, int64_t ckpt_seq, Err *err)
{
    ft->ing_seq = ckpt_seq;
    ReadCtx x = {ft, ckpt_step, ckpt_step + 1, err, NULL};
    if (scan_all(ft, "journal-", on_journal, &x, err))
        return err->code;
    /* trailing skip records after the last step stay (they advance inputs) */
    ReadCtx y = {ft, ckpt_seq, 0, err, NULL};
    if (scan_all(ft, "ingress-", on_ingress, &y, err))
        return err->code;
    return 0;
}

void ft_records_free(Ft *ft)
{
    for (int i = 0; i < ft->nrecs; i++)
        jrec_free(&ft->recs[i]);
    sl_free(ft->recs);
    ft->recs = NULL;
    ft->nrecs = ft->caprecs = 0;
    for (int i = 0; i < ft->nirecs; i++)
        sl_free(ft->irecs[i].p);
    sl_free(ft->irecs);
    ft->irecs = NULL;
    ft->nirecs = ft->capirecs = 0;
}

void ft_logs_free(Ft *ft)
{
    ft_records_free(ft);
    log_close(ft->journal);
    ft->journal = NULL;
    if (ft->ingress)
        log_release(ft->ingress);
    ft->ingress = NULL;
}




