/*
 * fuzz/fuzz_hostmsg.c - the messages between the hosts of a scale-out
 * pipeline, as a follower reads them: the coordinator's commands
 * (pipeline/follow.c pipeline_follow: STEP with the relations wanted and
 * its encoded input pieces, CONTENTS, LOOKUP, READ, CKPT, RESTORE, DROP,
 * OUTSET, RELEASE, STOP; base/wire.h readers)
 * and, during a step, the rows other hosts' workers exchange
 * (runtime/exchange.c), all through cluster/net.c's net_exchange.
 *
 * net_fake stands in for MPI: this process is host 1 of 2 and each time
 * it waits for a command it receives the input's next framed message
 * (fuzz.h framing) from host 0; once the input is used up, a STOP, so the
 * follower leaves. What it sends is dropped (see feed). The
 * program has no connectors (generated input would make any row count
 * cost its time) and no storage (checkpoint commands fail, as they must
 * without it). Seeds: fuzz/corpus/hostmsg/ (SLUICE_FUZZ_SEEDS=DIR writes
 * them: commands built with the coordinator's layout).
 */
#include "fuzz.h"

#include "base/wire.h"
#include "cluster/net.h"
#include "pipeline/pipeline.h"
#include "zset/key.h"

static const char *const PROGRAM =
    "CREATE TABLE t (id BIGINT NOT NULL PRIMARY KEY, name VARCHAR, amount DECIMAL(10,2));\n"
    "CREATE TABLE u (k BIGINT, v DOUBLE, d DATE);\n"
    "CREATE MATERIALIZED VIEW totals AS SELECT name, sum(amount) AS total, count(*) AS n\n"
    "  FROM t GROUP BY name;\n"
    "CREATE MATERIALIZED VIEW joined AS SELECT u.k, u.d, t.name FROM u, t WHERE u.k = t.id;\n"
    "CREATE MATERIALIZED VIEW top AS SELECT * FROM t ORDER BY amount DESC LIMIT 3;\n";

/* dist.c's command kinds (pipeline/dist_wire.h) */
enum { DC_STEP = 1, DC_CONTENTS, DC_PING, DC_STOP, DC_LOOKUP, DC_CKPT, DC_RESTORE, DC_READ,
       DC_DROP, DC_OUTSET, DC_RELEASE };

typedef struct Feed {
    const uint8_t *p, *end;
} Feed;

static void cmd_head(Buf *b, int kind, int arg, int64_t step)
{
    put32(b, kind);
    put32(b, arg);
    put64(b, step);
    put32(b, 0); /* no egress watch changes */
}

/* net_exchange on host 1. A call that sends nothing is the follower
   waiting for a command: it gets the input's next message, or STOP. Any
   other call is an exchange inside a step (runtime/exchange.c: for every
   channel and worker pair, [u64 length][bytes]) or the reply to a command
   (which reads nothing back): it gets as many empty entries as it sent,
   i.e. host 0's workers had nothing for this host. Exchange payloads are
   left out on purpose: a short one is an sl_panic by design (MPI delivers
   what the peer's same build sent), and the operators' encodings are not
   host messages. */
static void feed(void *ctx, const Buf *send, Buf *recv)
{
    Feed *f = ctx;
    const uint8_t *rec;
    size_t n;
    if (send[0].n == 0) {
        if (fz_next(&f->p, f->end, &rec, &n))
            buf_append(&recv[0], rec, n);
        else
            cmd_head(&recv[0], DC_STOP, 0, 0);
        return;
    }
    size_t pos = 0, k = 0;
    while (pos + 8 <= send[0].n) {
        uint64_t len;
        memcpy(&len, send[0].p + pos, 8);
        if (len > send[0].n - pos - 8)
            return; /* not an exchange: a reply */
        pos += 8 + len;
        k++;
    }
    if (pos != send[0].n)
        return;
    uint64_t zero = 0;
    for (size_t i = 0; i < k; i++)
        buf_append(&recv[0], &zero, 8);
}

/* A STEP command giving host 1's worker (local 0) rows of t and u. */
static void seed_step(const Circuit *c, Buf *b, int64_t step)
{
    cmd_head(b, DC_STEP, 0, step);
    double wall = 1.7e9; /* when the step's input arrived (the outputs' lag) */
    int64_t wbits;
    memcpy(&wbits, &wall, 8);
    put64(b, wbits);
    put32(b, 1);   /* the relations whose changes the coordinator wants: */
    put32(b, 2);   /* totals */
    Arena *a = arena_new(4096);
    for (int rel = 0; rel < 2; rel++) {
        const Relation *r = &c->rels[rel];
        Chunk *ch = chunk_new(a, r->ncol, r->types, 2);
        for (int64_t i = 0; i < 2; i++) {
            for (int j = 0; j < r->ncol; j++) {
                Vec *v = &ch->col[j];
                if (v->i)
                    v->i[i] = 1 + i + step;
                else if (v->f)
                    v->f[i] = 0.5 * (double)i;
                else
                    v->s[i] = (Str){i ? "b" : "a", 1};
            }
            ch->w[i] = i ? -1 : 1;
        }
        ch->n = 2;
        put32(b, 0);   /* local worker */
        put32(b, rel);
        put32(b, 0);   /* kind: encoded rows */
        put64(b, ch->n);
        Buf row = BUF_INIT;
        for (int64_t i = 0; i < ch->n; i++) {
            buf_reset(&row);
            key_encode_row(ch, i, &row);
            put64(b, ch->w[i]);
            put32(b, (int32_t)row.n);
            buf_append(b, row.p, row.n);
        }
        buf_free(&row);
    }
    arena_free(a);
}

static void seeds(const Circuit *c)
{
    const char *dir = getenv("SLUICE_FUZZ_SEEDS");
    Buf in = BUF_INIT, m = BUF_INIT;
    /* 1: two steps, contents of every view, a lookup, a drop */
    seed_step(c, &m, 0);
    fz_frame(&in, m.p, m.n);
    buf_reset(&m);
    seed_step(c, &m, 1);
    fz_frame(&in, m.p, m.n);
    for (int rel = 2; rel < c->nrels; rel++) {
        buf_reset(&m);
        cmd_head(&m, DC_CONTENTS, rel, 2);
        fz_frame(&in, m.p, m.n);
    }
    buf_reset(&m);
    cmd_head(&m, DC_LOOKUP, c->rels[0].node, 2);
    put32(&m, 0);
    put32(&m, 8);
    int64_t key = 2;
    buf_append(&m, &key, 8);
    fz_frame(&in, m.p, m.n);
    buf_reset(&m);
    cmd_head(&m, DC_DROP, 0, 2);
    fz_frame(&in, m.p, m.n);
    buf_reset(&m);
    cmd_head(&m, DC_PING, 0, 2);
    fz_frame(&in, m.p, m.n);
    fz_write(dir, "steps", in.p, in.n);
    /* 2: restore from an empty state, then a step */
    buf_reset(&in);
    buf_reset(&m);
    cmd_head(&m, DC_RESTORE, 2, 0);
    put64(&m, 5);
    buf_puts(&m, "[]");
    fz_frame(&in, m.p, m.n);
    buf_reset(&m);
    seed_step(c, &m, 5);
    fz_frame(&in, m.p, m.n);
    fz_write(dir, "restore", in.p, in.n);
    buf_free(&in);
    buf_free(&m);
}

static Circuit *c;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    c = fz_compile(PROGRAM);
    if (getenv("SLUICE_FUZZ_SEEDS")) {
        seeds(c);
        _exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Feed f = {data, data + size};
    net_fake(2, 1, feed, &f);
    PipelineOpts o = {.workers = 2, .hosts = 2, .progress = 0};
    Err e;
    err_init(&e);
    pipeline_follow(c, &o, &e);
    net_fake(1, 0, NULL, NULL);
    return 0;
}
