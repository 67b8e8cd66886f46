/*
 * pipeline/livestream.c - `SELECT * FROM v` over a running pipeline,
 * streamed (oneshot.h: pipeline_query_stream): the rows of a large
 * materialized relation go to the client a chunk at a time, never copied
 * whole.
 *
 * The snapshot is a forked child, as a checkpoint's is (snapshot.c): at a
 * step boundary (pipeline_call) the controller forks; the child holds a
 * frozen copy-on-write image of every worker's sink (its map and its cold
 * trace, spilled runs read back a block at a time through the child's own
 * cache) and writes the rows into a pipe, in frames, while the parent
 * keeps stepping. The pipe's reader (the HTTP response's thread) decodes
 * them into small chunks. The spill files of the frozen state stay until
 * the child is reaped (spill_store_hold). A reader that stops (the client
 * went away, the stream ended) kills and reaps the child: the snapshot is
 * released with it.
 *
 * Frames: a tag byte, then 'R' (a row): u32 length, i64 weight, the row
 * encoding; 'P': a pass is over (the child walks the contents `passes`
 * times: the text format measures its columns first); 'D': done; 'E':
 * u32 length, a message (a spilled block could not be read back).
 *
 * Workers: a row's weights may be spread over workers (no exchange before
 * the sink); the child first collects the rows of negative weight (rare:
 * an insert and its delete on different workers), and cancels them
 * against the positive ones as they come.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../base/forkgate.h"
#include "../base/hash.h"
#include "../base/mem.h"
#include "../circuit/circuit.h"
#include "../circuit/op.h"
#include "../runtime/runtime.h"
#include "../sql/lexer.h"
#include "../sql/sql.h"
#include "../storage/storage.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "../zset/spill.h"
#include "backend.h"
#include "oneshot.h"
#include "pipeline_int.h"

#define CHUNK_ROWS 1024
#define STREAM_MIN_BYTES ((size_t)4 << 20)
#define MAX_STREAMS 4 /* children alive at once (spill_store_hold allows 8) */

static int live_streams;
static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- the child */

typedef struct COut {
    int fd;
    Buf b;
    HMap *neg; /* row -> negative weight not yet cancelled, or NULL */
} COut;

static int child_fd = -1;

static void cflush(COut *o)
{
    const uint8_t *p = o->b.p;
    size_t n = o->b.n;
    while (n) {
        ssize_t k = write(o->fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            _exit(0); /* the reader has gone: nothing more to do */
        p += k;
        n -= (size_t)k;
    }
    buf_reset(&o->b);
}

static void cframe(COut *o, char tag, const void *p1, size_t n1, const void *p2, size_t n2)
{
    buf_putc(&o->b, tag);
    if (tag == 'R' || tag == 'E') {
        uint32_t n = (uint32_t)(n2 + (tag == 'R' ? 0 : n1));
        buf_append(&o->b, &n, sizeof(n));
    }
    if (n1)
        buf_append(&o->b, p1, n1);
    if (n2)
        buf_append(&o->b, p2, n2);
    if (o->b.n >= 64 * 1024)
        cflush(o);
}

static __attribute__((noreturn)) void child_failed(const char *msg)
{
    COut o = {child_fd, BUF_INIT, NULL};
    cframe(&o, 'E', msg, strlen(msg), NULL, 0);
    cflush(&o);
    _exit(1);
}

static void add_neg(void *arg, const uint8_t *row, size_t n, int64_t w)
{
    if (w >= 0)
        return;
    bool created;
    int64_t *e = hmap_upsert(arg, row, n, sl_hash(row, n), &created);
    *e += w;
}

static void put_row(void *arg, const uint8_t *row, size_t n, int64_t w)
{
    COut *o = arg;
    if (w <= 0)
        return;
    if (o->neg && hmap_count(o->neg)) {
        uint64_t h = sl_hash(row, n);
        bool created;
        int64_t *e = hmap_upsert(o->neg, row, n, h, &created);
        int64_t take = -*e < w ? -*e : w;
        *e += take;
        w -= take;
        if (*e == 0)
            hmap_delete(o->neg, row, n, h);
        if (w <= 0)
            return;
    }
    cframe(o, 'R', &w, sizeof(w), row, n);
}

static __attribute__((noreturn)) void child_main(Runtime *rt, int sink, int passes, int fd)
{
    COut o = {fd, BUF_INIT, NULL};
    child_fd = fd;
    signal(SIGPIPE, SIG_IGN);
    spill_on_read_error(child_failed);
    /* let go of every socket (the server's, its clients'): a connection the
       parent closes must close, not live on in this child */
    struct rlimit rl;
    int maxfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur
                                                                          : 65536;
    for (int f = 3; f < maxfd; f++) {
        struct stat st;
        if (f != fd && fstat(f, &st) == 0 && S_ISSOCK(st.st_mode))
            close(f);
    }
    int W = rt_workers(rt);
    for (int pass = 0; pass < passes; pass++) {
        if (W > 1) {
            o.neg = hmap_new(sizeof(int64_t));
            for (int w = 0; w < W; w++)
                op_sink_rows(rt_op(rt, w, sink), add_neg, o.neg);
        }
        for (int w = 0; w < W; w++)
            op_sink_rows(rt_op(rt, w, sink), put_row, &o);
        cframe(&o, 'P', NULL, 0, NULL, 0);
        if (o.neg)
            hmap_free(o.neg);
        o.neg = NULL;
    }
    cframe(&o, 'D', NULL, 0, NULL, 0);
    cflush(&o);
    _exit(0);
}

/* --------------------------------------------------------------- the parent */

struct QStream {
    QStreamInfo info;
    pid_t pid;
    int fd;
    bool done;       /* 'D' read */
    Buf in;          /* bytes read from the pipe, from pos on unread */
    size_t pos;
    Arena *a;        /* the chunk handed out */
    Buf row;         /* the row being repeated (its weight left: rep) */
    int64_t rep;
};

/* At least n unread bytes in s->in (false: the pipe ended first). */
static bool fill(QStream *s, size_t n)
{
    if (s->in.n - s->pos >= n)
        return true;
    if (s->pos) { /* move the unread bytes to the front */
        memmove(s->in.p, s->in.p + s->pos, s->in.n - s->pos);
        s->in.n -= s->pos;
        s->pos = 0;
    }
    while (s->in.n < n) {
        buf_reserve(&s->in, 64 * 1024);
        ssize_t k = read(s->fd, s->in.p + s->in.n, s->in.cap - s->in.n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        s->in.n += (size_t)k;
    }
    return true;
}

/* Append s->row to c (its strings copied into s->a). */
static void add_row(QStream *s, Chunk *c)
{
    int64_t r = c->n;
    key_decode(s->row.p, s->info.types, s->info.ncol, c, 0, r);
    for (int j = 0; j < s->info.ncol; j++)
        if (c->col[j].s && !vec_is_null(&c->col[j], r)) {
            Str *x = &c->col[j].s[r];
            x->p = arena_strndup(s->a, x->p, x->n);
        }
    c->w[r] = 1;
    c->n++;
}

int qstream_next(QStream *s, const Chunk **rows, Err *err)
{
    arena_reset(s->a);
    Chunk *c = chunk_new(s->a, s->info.ncol, s->info.types, CHUNK_ROWS);
    *rows = c;
    while (c->n < CHUNK_ROWS) {
        if (s->rep > 0) {
            add_row(s, c);
            s->rep--;
            continue;
        }
        if (s->done || !fill(s, 1))
            break;
        char tag = (char)s->in.p[s->pos];
        if (tag == 'P' || tag == 'D') {
            if (c->n) /* the pass's last rows first */
                return 1;
            s->pos++;
            s->done = tag == 'D';
            return 0;
        }
        uint32_t n;
        if ((tag != 'R' && tag != 'E') || !fill(s, 1 + sizeof(n)))
            break;
        memcpy(&n, s->in.p + s->pos + 1, sizeof(n));
        size_t head = 1 + sizeof(n) + (tag == 'R' ? sizeof(int64_t) : 0);
        if (!fill(s, head + n))
            break;
        const uint8_t *p = s->in.p + s->pos;
        if (tag == 'E') {
            err_set(err, SL_EIO, "reading the snapshot: %.*s", (int)n, (const char *)p + head);
            return -1;
        }
        memcpy(&s->rep, p + 1 + sizeof(n), sizeof(int64_t));
        buf_reset(&s->row);
        buf_append(&s->row, p + head, n);
        s->pos += head + n;
    }
    if (c->n)
        return 1;
    if (s->done)
        return 0;
    err_set(err, SL_EIO, "the snapshot's process ended before the rows did");
    return -1;
}

const QStreamInfo *qstream_info(const QStream *s) { return &s->info; }

void qstream_free(QStream *s)
{
    if (!s)
        return;
    kill(s->pid, SIGKILL); /* (done or not: it exits either way) */
    close(s->fd);
    int status;
    while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
        ;
    spill_store_release_owner(s->pid);
    pthread_mutex_lock(&streams_mu);
    live_streams--;
    pthread_mutex_unlock(&streams_mu);
    arena_free(s->a);
    buf_free(&s->in);
    buf_free(&s->row);
    sl_free(s);
}

/* ------------------------------------------------------------ the snapshot */

/* The relation of `SELECT * FROM name [;]`, or -1. */
static int select_star(const Circuit *c, const char *sql)
{
    Arena *a = arena_new(4096);
    Token *t = NULL;
    int n = 0, rel = -1;
    Err e = {0};
    if (!lex(sql, a, &t, &n, &e)) {
        while (n > 0 && (t[n - 1].k == T_EOF || (t[n - 1].k == T_OP && !strcmp(t[n - 1].s, ";"))))
            n--;
        if (n == 4 && t[0].k == T_IDENT && !strcasecmp(t[0].s, "select") && t[1].k == T_OP &&
            !strcmp(t[1].s, "*") && t[2].k == T_IDENT && !strcasecmp(t[2].s, "from") &&
            t[3].k == T_IDENT)
            rel = circuit_find_rel(c, t[3].s);
    }
    arena_free(a);
    return rel;
}

typedef struct ForkCall {
    int rel, passes;
    QStream *s;
    Err *err;
} ForkCall;

/* On the controller, between steps: fork the snapshot's child when the
   relation is large enough (or spilled) to be worth it. */
static void fork_snapshot(Pipeline *p, void *arg)
{
    ForkCall *fc = arg;
    const Relation *r = &p->c->rels[fc->rel];
    Runtime *rt = p->be->rt;
    if (p->be->hosts != 1 || !rt)
        return;
    OpMem m = {0};
    for (int w = 0; w < rt_workers(rt); w++)
        op_mem(rt_op(rt, w, r->sink), &m);
    if (m.disk_bytes == 0 && m.bytes < STREAM_MIN_BYTES && !getenv("SLUICE_QUERY_STREAM"))
        return; /* small: copying it is cheaper than a process */
    pthread_mutex_lock(&streams_mu);
    bool room = live_streams < MAX_STREAMS;
    live_streams += room;
    pthread_mutex_unlock(&streams_mu);
    if (!room)
        return;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        goto fail;
    uint64_t hold = spill_store_hold();
    fflush(NULL);
    pid_t pid = sl_fork();
    if (pid < 0) {
        spill_store_release(hold);
        close(fds[0]);
        close(fds[1]);
        goto fail;
    }
    if (pid == 0) {
        close(fds[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* dies with the pipeline */
        if (getppid() == 1)
            _exit(1);
        child_main(rt, r->sink, fc->passes, fds[1]);
    }
    spill_store_hold_owner(hold, pid);
    close(fds[1]);
    QStream *s = sl_calloc(1, sizeof(*s));
    s->info = (QStreamInfo){r->ncol - r->nhidden, (const char *const *)r->colnames, r->types,
                            pipeline_step(p)};
    s->pid = pid;
    s->fd = fds[0];
    s->a = arena_new(1 << 16);
    fc->s = s;
    return;
fail:
    pthread_mutex_lock(&streams_mu);
    live_streams--;
    pthread_mutex_unlock(&streams_mu);
    /* (the copying path answers instead) */
    fprintf(stderr, "sluice: query: cannot fork the snapshot's process (%s); copying it\n",
            strerror(errno));
}

LiveQueryRc pipeline_query_stream(Pipeline *p, const char *sql, int passes, QStream **out,
                                  Err *err)
{
    *out = NULL;
    int rel = select_star(p->c, sql);
    if (rel < 0 || !p->c->rels[rel].materialized || p->c->rels[rel].sink < 0)
        return LQ_OK;
    ForkCall fc = {rel, passes, NULL, err};
    if (pipeline_call(p, fork_snapshot, &fc))
        return LQ_STOPPING;
    *out = fc.s;
    return LQ_OK;
}
