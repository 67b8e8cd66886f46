/*
 * io/tr_s3.c - s3_input: every object under a bucket's prefix, in key
 * order, as one stream of CSV or JSON records (each object its own file:
 * a record never spans objects, a CSV header is skipped in each), gzip or
 * zstd objects decompressed on the fly.
 *
 * How data reaches it: the object list is read (ListObjectsV2, through
 * objstore/s3.h) at the first read; then up to max_concurrent_fetches
 * threads fetch consecutive byte ranges (RANGE bytes each, objects in
 * order) into a ring of slots, several requests in flight at once. The
 * controller's tr_file_next (tr_file.c) asks tr_s3_fill for more bytes of
 * the current object: it takes the next range in order (decompressing it
 * when the object is compressed) into the read buffer, and cuts and
 * parses records there exactly as file_input does (in parallel).
 *
 * Position (checkpoints, the journal): v[0] = the object's index in key
 * order, v[1] = the offset of the next record in the object's
 * (decompressed) bytes; the line number rides in v[0]'s high bits, so
 * error reports stay right after a resume. A resume fetches from that
 * offset (a compressed object is read from its start and the bytes before
 * the offset dropped).
 *
 * Scale-out (--hosts H): connector.c makes H parts of the connector, one
 * per host; part h reads the objects h, h + H, h + 2H, ... of the list.
 *
 * Failures: a transport error or a 5xx/429 answer is retried with backoff
 * (0.1 s doubling to 2 s) for as long as it takes; the input simply has
 * nothing meanwhile (a replay waits). Other answers (403, 404, ...) stop
 * the pipeline with S3's message.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>

#include <cjson/cJSON.h>

#include "../base/mem.h"
#include "../objstore/s3.h"
#include "io_int.h"

#define RANGE (8 << 20)          /* bytes per ranged GET */
#define LINE_SHIFT 24            /* v[0] = line << 24 | object index */
#define MAX_OBJECTS (1 << 24)

enum { COMP_AUTO, COMP_NONE, COMP_GZIP, COMP_ZSTD };
enum { SLOT_FREE, SLOT_WAIT, SLOT_BUSY, SLOT_DONE, SLOT_FAIL };

typedef struct Slot {
    int state;
    int obj;
    int64_t off, len;
    Buf data;
    Err err;
} Slot;

struct S3In {
    S3 *s3;
    char *bucket, *prefix;
    int comp_cfg, conc;
    int part, nparts;  /* scale-out: every nparts-th object from part */
    /* objects (listed at the first read) */
    bool listed;
    S3Object *objs;
    int nobj;
    /* where the stream is */
    int cur;        /* current object */
    int64_t base;   /* offset in cur's (decompressed) bytes of rbuf[0] */
    int64_t skip;   /* decompressed bytes still to drop (resume) */
    int64_t raw;    /* raw bytes of cur taken so far */
    int comp;       /* cur's compression */
    ZSTD_DStream *zd;
    z_stream zs;
    bool zs_init;
    /* the fetchers */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *th;
    int nth;
    bool stop;
    Slot *ring;
    int nring;
    int64_t head, tail;      /* slots [head, tail) are scheduled, in order */
    int sched_obj;           /* next range to schedule */
    int64_t sched_off;
    bool outage;             /* a retry is going on (reported once) */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- config */

static const char *cfg_str(const cJSON *cfg, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int tr_s3_config(InputConn *ic, const cJSON *cfg, bool open, char *why, size_t n)
{
    static const char *const keys[] = {"bucket_name", "prefix", "region", "endpoint_url",
                                       "aws_access_key_id", "aws_secret_access_key",
                                       "compression", "max_concurrent_fetches", NULL};
    if (!cfg) {
        snprintf(why, n, "s3_input needs a config with \"bucket_name\"");
        return -1;
    }
    for (const cJSON *k = cfg->child; k; k = k->next) {
        bool ok = false;
        for (int i = 0; keys[i]; i++)
            ok |= !strcmp(k->string, keys[i]);
        if (!ok) {
            snprintf(why, n, "unknown s3_input config key \"%s\" (known: bucket_name, prefix, "
                     "region, endpoint_url, aws_access_key_id, aws_secret_access_key, "
                     "compression, max_concurrent_fetches)", k->string);
            return -1;
        }
        if (strcmp(k->string, "max_concurrent_fetches") && !cJSON_IsString(k)) {
            snprintf(why, n, "s3_input \"%s\" must be a string", k->string);
            return -1;
        }
    }
    const char *bucket = cfg_str(cfg, "bucket_name");
    if (!bucket || !*bucket) {
        snprintf(why, n, "s3_input needs a \"bucket_name\" string");
        return -1;
    }
    struct S3In *s = sl_calloc(1, sizeof(*s));
    ic->s3 = s;
    s->bucket = sl_strdup(bucket);
    s->prefix = sl_strdup(cfg_str(cfg, "prefix") ? cfg_str(cfg, "prefix") : "");
    const char *comp = cfg_str(cfg, "compression");
    if (!comp || !strcmp(comp, "auto"))
        s->comp_cfg = COMP_AUTO;
    else if (!strcmp(comp, "none"))
        s->comp_cfg = COMP_NONE;
    else if (!strcmp(comp, "gzip"))
        s->comp_cfg = COMP_GZIP;
    else if (!strcmp(comp, "zstd"))
        s->comp_cfg = COMP_ZSTD;
    else {
        snprintf(why, n, "s3_input \"compression\" must be \"auto\" (by extension: .gz, .zst), "
                 "\"none\", \"gzip\" or \"zstd\"");
        return -1;
    }
    const cJSON *mc = cJSON_GetObjectItemCaseSensitive(cfg, "max_concurrent_fetches");
    s->conc = 4;
    if (mc) {
        if (!cJSON_IsNumber(mc) || mc->valuedouble < 1 || mc->valuedouble > 64) {
            snprintf(why, n, "s3_input \"max_concurrent_fetches\" must be a number from 1 to 64");
            return -1;
        }
        s->conc = (int)mc->valuedouble;
    }
    Err e;
    err_init(&e);
    S3Config sc = {.endpoint = cfg_str(cfg, "endpoint_url"), .bucket = bucket, .prefix = s->prefix,
                   .region = cfg_str(cfg, "region"), .key = cfg_str(cfg, "aws_access_key_id"),
                   .secret = cfg_str(cfg, "aws_secret_access_key")};
    if (open && s3_new(&sc, "s3_input", &s->s3, &e)) {
        if (strstr(e.msg, "no S3 endpoint"))
            snprintf(why, n, "s3_input needs \"endpoint_url\" (or AWS_ENDPOINT_URL, or "
                     "--s3-endpoint URL)");
        else
            snprintf(why, n, "%s (or give \"aws_access_key_id\" and "
                     "\"aws_secret_access_key\")", e.msg);
        return -1;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    char path[512];
    snprintf(path, sizeof(path), "s3://%s/%s", s->bucket, s->prefix);
    ic->path = sl_strdup(path);
    ic->line = 1;
    return 0;
}

void tr_s3_set_part(InputConn *ic, int part, int nparts)
{
    ic->s3->part = part;
    ic->s3->nparts = nparts;
}

/* ---------------------------------------------------------------- fetchers */

/* A failed answer worth retrying? (status 0: no answer at all) */
static bool retryable(long st) { return st == 0 || st == 429 || st == 408 || st >= 500; }

static void schedule(struct S3In *s)
{
    /* fill free slots with the next ranges, objects in order */
    while (s->tail - s->head < s->nring && s->sched_obj < s->nobj) {
        const S3Object *o = &s->objs[s->sched_obj];
        if (s->sched_off >= o->size && o->size > 0) {
            s->sched_obj++;
            s->sched_off = 0;
            continue;
        }
        Slot *sl = &s->ring[s->tail % s->nring];
        sl->state = SLOT_WAIT;
        sl->obj = s->sched_obj;
        sl->off = s->sched_off;
        sl->len = o->size - s->sched_off < RANGE ? o->size - s->sched_off : RANGE;
        buf_reset(&sl->data);
        s->tail++;
        s->sched_off += sl->len;
        if (o->size == 0) { /* an empty object: one empty slot */
            s->sched_obj++;
            s->sched_off = 0;
        }
    }
}

static void *fetcher(void *arg)
{
    struct S3In *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        Slot *sl = NULL;
        for (int64_t i = s->head; i < s->tail && !sl; i++)
            if (s->ring[i % s->nring].state == SLOT_WAIT)
                sl = &s->ring[i % s->nring];
        if (!sl) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        sl->state = SLOT_BUSY;
        const char *name = s->objs[sl->obj].name;
        int64_t off = sl->off, len = sl->len;
        Buf data = sl->data;
        sl->data = (Buf)BUF_INIT;
        pthread_mutex_unlock(&s->mu);
        double backoff = 0.1;
        Err e;
        long st = 0;
        int rc = 0;
        for (;;) {
            err_init(&e);
            rc = len ? s3_get_range(s->s3, name, off, len, &data, &st, &e) : (buf_reset(&data), 0);
            if (!rc || !retryable(st))
                break;
            pthread_mutex_lock(&s->mu);
            bool stop = s->stop;
            if (!s->outage && !stop)
                fprintf(stderr, "sluice: s3_input s3://%s/%s: %s; retrying until it answers\n",
                        s->bucket, name, e.msg);
            s->outage = true;
            pthread_mutex_unlock(&s->mu);
            if (stop)
                break;
            struct timespec ts = {(time_t)backoff, (long)((backoff - (int)backoff) * 1e9)};
            nanosleep(&ts, NULL);
            backoff = backoff * 2 > 2 ? 2 : backoff * 2;
        }
        pthread_mutex_lock(&s->mu);
        if (s->outage && !rc) {
            fprintf(stderr, "sluice: s3_input s3://%s: the server answers again\n", s->bucket);
            s->outage = false;
        }
        sl->data = data;
        if (rc) {
            sl->err = e;
            sl->state = SLOT_FAIL;
        } else {
            sl->state = SLOT_DONE;
        }
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void stop_fetchers(struct S3In *s)
{
    if (!s->th)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nth; i++)
        pthread_join(s->th[i], NULL);
    sl_free(s->th);
    s->th = NULL;
    for (int i = 0; i < s->nring; i++)
        buf_free(&s->ring[i].data);
    sl_free(s->ring);
    s->ring = NULL;
    s->stop = false;
}

static void reset_decomp(struct S3In *s)
{
    if (s->zs_init) {
        inflateEnd(&s->zs);
        s->zs_init = false;
    }
    if (s->zd)
        ZSTD_initDStream(s->zd);
}

static int comp_of(const struct S3In *s, const char *name)
{
    if (s->comp_cfg != COMP_AUTO)
        return s->comp_cfg;
    size_t n = strlen(name);
    if (n > 3 && !strcmp(name + n - 3, ".gz"))
        return COMP_GZIP;
    if (n > 4 && !strcmp(name + n - 4, ".zst"))
        return COMP_ZSTD;
    return COMP_NONE;
}

/* Start reading object `obj` at (decompressed) offset off. */
static void start_at(InputConn *ic, int obj, int64_t off)
{
    struct S3In *s = ic->s3;
    stop_fetchers(s);
    s->cur = obj;
    s->base = off;
    s->raw = 0;
    reset_decomp(s);
    s->comp = obj < s->nobj ? comp_of(s, s->objs[obj].name) : COMP_NONE;
    /* a compressed object is read from its start, the bytes before off dropped */
    s->skip = s->comp == COMP_NONE ? 0 : off;
    s->raw = s->comp == COMP_NONE ? off : 0;
    s->sched_obj = obj;
    s->sched_off = s->raw;
    s->head = s->tail = 0;
    s->nring = s->conc * 2;
    s->ring = sl_calloc((size_t)s->nring, sizeof(Slot));
    s->nth = s->conc;
    s->th = sl_calloc((size_t)s->nth, sizeof(pthread_t));
    pthread_mutex_lock(&s->mu);
    schedule(s);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nth; i++)
        pthread_create(&s->th[i], NULL, fetcher, s);
    ic->rlen = ic->rpos = 0;
    /* resuming at the very end of an object: nothing of it is fetched */
    ic->eof = obj >= s->nobj ||
              (s->comp == COMP_NONE && s->objs[obj].size > 0 && off >= s->objs[obj].size);
    sl_free(ic->path);
    Buf p = BUF_INIT;
    buf_printf(&p, "s3://%s/%s%s", s->bucket, s->prefix, obj < s->nobj ? s->objs[obj].name : "");
    ic->path = sl_strdup(buf_cstr(&p));
    buf_free(&p);
}

/* Make room for n more bytes in the read buffer. */
static void room(InputConn *ic, size_t n)
{
    if (ic->rpos > 0) {
        memmove(ic->rbuf, ic->rbuf + ic->rpos, ic->rlen - ic->rpos);
        ic->rlen -= ic->rpos;
        ic->s3->base += (int64_t)ic->rpos;
        ic->rpos = 0;
    }
    if (ic->rcap - ic->rlen < n) {
        size_t cap = ic->rcap ? ic->rcap : (1 << 20);
        while (cap - ic->rlen < n)
            cap *= 2;
        ic->rbuf = sl_realloc(ic->rbuf, cap + 1);
        ic->rcap = cap;
    }
}

/* Append decompressed bytes (dropping the first s->skip of them). */
static void put(InputConn *ic, const char *p, size_t n)
{
    struct S3In *s = ic->s3;
    if (s->skip > 0) {
        size_t d = (int64_t)n < s->skip ? n : (size_t)s->skip;
        s->skip -= (int64_t)d;
        p += d;
        n -= d;
    }
    if (!n)
        return;
    room(ic, n);
    memcpy(ic->rbuf + ic->rlen, p, n);
    ic->rlen += n;
}

static int decompress(InputConn *ic, const Buf *in, Err *err)
{
    struct S3In *s = ic->s3;
    char out[1 << 16];
    if (s->comp == COMP_NONE) {
        put(ic, (const char *)in->p, in->n);
        return 0;
    }
    if (s->comp == COMP_ZSTD) {
        if (!s->zd)
            s->zd = ZSTD_createDStream();
        ZSTD_inBuffer zi = {in->p, in->n, 0};
        for (bool full = true; zi.pos < zi.size || full;) {
            ZSTD_outBuffer zo = {out, sizeof(out), 0};
            size_t r = ZSTD_decompressStream(s->zd, &zo, &zi);
            if (ZSTD_isError(r))
                return err_set(err, SL_EIO, "%s: \"%s\": bad zstd data: %s", ic->name, ic->path,
                               ZSTD_getErrorName(r));
            put(ic, out, zo.pos);
            full = zo.pos == zo.size; /* more may be buffered inside */
        }
        return 0;
    }
    if (!s->zs_init) {
        memset(&s->zs, 0, sizeof(s->zs));
        if (inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK)
            return err_set(err, SL_EIO, "%s: cannot start gzip decompression", ic->name);
        s->zs_init = true;
    }
    s->zs.next_in = (Bytef *)in->p;
    s->zs.avail_in = (uInt)in->n;
    for (bool full = true; s->zs.avail_in > 0 || full;) {
        s->zs.next_out = (Bytef *)out;
        s->zs.avail_out = sizeof(out);
        int r = inflate(&s->zs, Z_NO_FLUSH);
        if (r != Z_OK && r != Z_STREAM_END && !(r == Z_BUF_ERROR && s->zs.avail_out))
            return err_set(err, SL_EIO, "%s: \"%s\": bad gzip data: %s", ic->name, ic->path,
                           s->zs.msg ? s->zs.msg : "inflate failed");
        put(ic, out, sizeof(out) - s->zs.avail_out);
        full = s->zs.avail_out == 0;
        if (r == Z_BUF_ERROR)
            break; /* no progress possible: wants more input */
        if (r == Z_STREAM_END) {
            if (s->zs.avail_in == 0)
                break;
            inflateReset(&s->zs); /* concatenated gzip members */
        }
    }
    return 0;
}

static int list_objects(InputConn *ic, Err *err)
{
    struct S3In *s = ic->s3;
    double backoff = 0.1;
    for (;;) {
        Err e;
        err_init(&e);
        S3Object *objs;
        int n;
        int rc = s3_list_all(s->s3, &objs, &n, &e);
        if (!rc) {
            if (n > MAX_OBJECTS) {
                s3_objects_free(objs, n);
                return err_set(err, SL_EIO, "%s: more than %d objects under the prefix",
                               ic->name, MAX_OBJECTS);
            }
            if (s->nparts > 1) { /* this part's share: objects part, part + nparts, ... */
                int k = 0;
                for (int i = 0; i < n; i++) {
                    if (i % s->nparts == s->part)
                        objs[k++] = objs[i];
                    else
                        sl_free(objs[i].name);
                }
                n = k;
            }
            s->objs = objs;
            s->nobj = n;
            s->listed = true;
            if (s->outage)
                fprintf(stderr, "sluice: s3_input s3://%s: the server answers again\n",
                        s->bucket);
            s->outage = false;
            return 0;
        }
        if (!strstr(e.msg, "HTTP 5") && strstr(e.msg, "HTTP "))
            return err_set(err, SL_EIO, "%s: %s", ic->name, e.msg);
        if (!s->outage)
            fprintf(stderr, "sluice: s3_input s3://%s/%s: %s; retrying until it answers\n",
                    s->bucket, s->prefix, e.msg);
        s->outage = true;
        if (!ic->replay)
            return 1;
        struct timespec ts = {(time_t)backoff, (long)((backoff - (int)backoff) * 1e9)};
        nanosleep(&ts, NULL);
        backoff = backoff * 2 > 2 ? 2 : backoff * 2;
    }
}

int tr_s3_fill(InputConn *ic, Err *err)
{
    struct S3In *s = ic->s3;
    if (!s->listed) {
        int rc = list_objects(ic, err);
        if (rc)
            return rc < 0 ? -1 : 1;
        start_at(ic, s->cur, s->base);
        if (ic->eof)
            return 0;
    }
    if (s->cur >= s->nobj || ic->eof) {
        ic->eof = true;
        return 0;
    }
    pthread_mutex_lock(&s->mu);
    Slot *sl = &s->ring[s->head % s->nring];
    if ((s->head == s->tail && s->sched_obj >= s->nobj) ||
        (s->head < s->tail && sl->obj != s->cur)) {
        /* the object gave fewer bytes than listed (it changed): it ends here */
        pthread_mutex_unlock(&s->mu);
        ic->eof = true;
        return 0;
    }
    double until = now_s() + 0.05;
    while (s->head == s->tail || (sl->state != SLOT_DONE && sl->state != SLOT_FAIL)) {
        if (!ic->replay && now_s() >= until) {
            pthread_mutex_unlock(&s->mu);
            return 1; /* nothing yet */
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    if (sl->state == SLOT_FAIL) {
        err_set(err, SL_EIO, "%s: %s", ic->name, sl->err.msg);
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    Buf data = sl->data;
    sl->data = (Buf)BUF_INIT;
    sl->state = SLOT_FREE;
    s->head++;
    schedule(s);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    s->raw += (int64_t)data.n;
    int rc = decompress(ic, &data, err);
    buf_free(&data);
    if (rc)
        return -1;
    if (s->raw >= s->objs[s->cur].size)
        ic->eof = true;
    return 0;
}

bool tr_s3_next_object(InputConn *ic)
{
    struct S3In *s = ic->s3;
    if (!s->listed || s->cur + 1 >= s->nobj)
        return false;
    /* the fetchers have the next object's ranges under way: keep them */
    s->cur++;
    s->base = 0;
    s->raw = 0;
    s->skip = 0;
    reset_decomp(s);
    s->comp = comp_of(s, s->objs[s->cur].name);
    ic->rlen = ic->rpos = 0;
    ic->eof = false; /* even an empty object has its (empty) slot to take */
    ic->line = 1;
    sl_free(ic->path);
    Buf p = BUF_INIT;
    buf_printf(&p, "s3://%s/%s%s", s->bucket, s->prefix, s->objs[s->cur].name);
    ic->path = sl_strdup(buf_cstr(&p));
    buf_free(&p);
    return true;
}

static void s3_pos(const InputConn *ic, InPos *out)
{
    const struct S3In *s = ic->s3;
    int64_t obj = s->cur, off = s->listed ? s->base + (int64_t)ic->rpos : s->base;
    int64_t line = ic->line;
    /* the end of an object is the start of the next one: one position
       whatever the step that reached it went on to do */
    if (s->listed && obj < s->nobj && ic->eof && ic->rpos == ic->rlen) {
        obj++;
        off = 0;
        line = 1;
    }
    out->v[0] = (int64_t)((uint64_t)line << LINE_SHIFT) | obj;
    out->v[1] = off;
}

static int s3_seek(InputConn *ic, const InPos *pos, Err *err)
{
    struct S3In *s = ic->s3;
    int obj = (int)(pos->v[0] & (MAX_OBJECTS - 1));
    int64_t line = (int64_t)((uint64_t)pos->v[0] >> LINE_SHIFT);
    if (pos->v[1] < 0 || line < 1)
        return err_set(err, SL_EIO, "%s: bad saved position (%lld, %lld)", ic->name,
                       (long long)pos->v[0], (long long)pos->v[1]);
    ic->line = line;
    ic->eof = false;
    if (!s->listed) { /* applied at the first read, after the listing */
        stop_fetchers(s);
        s->cur = obj;
        s->base = pos->v[1];
        ic->rlen = ic->rpos = 0;
        return 0;
    }
    if (obj > s->nobj)
        return err_set(err, SL_EIO, "%s: saved position names object %d, but only %d are "
                       "under the prefix", ic->name, obj, s->nobj);
    start_at(ic, obj, pos->v[1]);
    return 0;
}

static void s3_close(InputConn *ic)
{
    struct S3In *s = ic->s3;
    if (!s)
        return;
    stop_fetchers(s);
    reset_decomp(s);
    if (s->zd)
        ZSTD_freeDStream(s->zd);
    s3_objects_free(s->objs, s->nobj);
    if (s->s3)
        s3_free(s->s3);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    sl_free(s->bucket);
    sl_free(s->prefix);
    sl_free(s);
    ic->s3 = NULL;
}

/* Position: the object being read (its index in key order, its key) and
   the offset in it; high watermark: the number of objects (and their
   bytes), known once listed. */
static void s3_progress(InputConn *ic, InProgress *out)
{
    const struct S3In *s = ic->s3;
    if (!s)
        return;
    InPos p = {0};
    s3_pos(ic, &p);
    out->unit = "objects";
    out->pos = p.v[0] & (MAX_OBJECTS - 1);
    out->object_offset = p.v[1];
    snprintf(out->pos_text, sizeof(out->pos_text), "%lld", (long long)out->pos);
    if (!s->listed)
        return;
    if (out->pos < s->nobj)
        snprintf(out->object, sizeof(out->object), "%s", s->objs[out->pos].name);
    out->high = s->nobj;
    out->total_bytes = 0;
    for (int i = 0; i < s->nobj; i++)
        out->total_bytes += s->objs[i].size;
    snprintf(out->high_text, sizeof(out->high_text), "%d", s->nobj);
}

const InOps tr_s3_in_ops = {
    .next = tr_file_next, /* file_input's reader; it asks tr_s3_fill for bytes */
    .progress = s3_progress,
    .pos = s3_pos,
    .seek = s3_seek,
    .close = s3_close,
};
