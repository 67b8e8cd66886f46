/*
 * tests/circuit/test_shard.c - the sharded streams an operator is handed
 * (circuit/shard.h), with the exchange played by the test: W workers'
 * Shards point at one grid of buffers [from][to][channel] the way
 * runtime/worker.c points them at an Exchange's. Every routed record
 * reaches the owner of its key (worker 0 for a global operator) on its
 * channel, with its bytes and weight; a worker reads its inboxes in worker
 * order, each in the order it was written; shard_batch consolidates them
 * (shard_batch_of several channels: what a builder makes of them);
 * shard_reset empties only the worker's own outboxes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/arena.h"
#include "base/mem.h"
#include "circuit/shard.h"
#include "zset/key.h"

enum { W = 3, NCH = 2, NROWS = 200 };

typedef struct Grid {
    Buf bufs[W][W][NCH]; /* [from][to][channel], as an Exchange holds them */
    Shard *sh[W];
    Arena *a;            /* the routed chunks */
} Grid;

/* cmocka setup: a Grid in *state. */
static int grid_setup(void **state)
{
    Grid *g = sl_calloc(1, sizeof(*g));
    g->a = arena_new(1 << 16);
    for (int me = 0; me < W; me++) {
        g->sh[me] = shard_new(W, me, NCH);
        for (int ch = 0; ch < NCH; ch++)
            for (int k = 0; k < W; k++) {
                g->sh[me]->out[ch * W + k] = &g->bufs[me][k][ch];
                g->sh[me]->in[ch * W + k] = &g->bufs[k][me][ch];
            }
    }
    *state = g;
    return 0;
}

static int grid_teardown(void **state)
{
    Grid *g = *state;
    arena_free(g->a);
    for (int me = 0; me < W; me++)
        shard_free(g->sh[me]);
    for (int f = 0; f < W; f++)
        for (int t = 0; t < W; t++)
            for (int ch = 0; ch < NCH; ch++)
                buf_free(&g->bufs[f][t][ch]);
    sl_free(g);
    return 0;
}

/* Rows (k, v) = (r % 17, r) with weight r % 5 - 2 (zeros too). */
static Chunk *rows(Arena *a, int64_t first, int64_t n)
{
    SqlType t[2] = {type_make(TK_BIGINT, false), type_make(TK_BIGINT, false)};
    Chunk *c = chunk_new(a, 2, t, n);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = first + i;
        c->col[0].i[i] = r % 17;
        c->col[1].i[i] = r;
        c->w[i] = r % 5 - 2;
    }
    c->n = n;
    return c;
}

/* Record of a row: key = column 0, value = column 1 (channel ignored). */
static void enc_test(void *ctx, int ch, const Chunk *c, int64_t r, Buf *k, Buf *v)
{
    static const int kc = 0, vc = 1;
    (void)ctx;
    (void)ch;
    key_encode(c, &kc, 1, r, k);
    key_encode(c, &vc, 1, r, v);
}

static int64_t decode1(const uint8_t *p)
{
    SqlType t = type_make(TK_BIGINT, false);
    Arena *a = arena_new(256);
    Chunk *c = chunk_new(a, 1, &t, 1);
    key_decode(p, &t, 1, c, 0, 0);
    int64_t x = c->col[0].i[0];
    arena_free(a);
    return x;
}

/* Worker `from` routes rows [from * NROWS, (from + 1) * NROWS) on channel
   ch in two morsels. */
static void route(Grid *g, int ch, bool global)
{
    Arena *a = g->a;
    for (int from = 0; from < W; from++) {
        shard_rows(g->sh[from], ch, rows(a, from * NROWS, NROWS / 2), global, enc_test, NULL);
        shard_rows(g->sh[from], ch, rows(a, from * NROWS + NROWS / 2, NROWS / 2), global,
                   enc_test, NULL);
    }
}

static void test_records_reach_their_key_owner_in_worker_then_write_order(void **state)
{
    Grid *g = *state;
    route(g, 1, false);
    int64_t seen = 0;
    for (int me = 0; me < W; me++) {
        ShardPos p = SHARD_POS_INIT;
        XRec r;
        int64_t last = -1;
        assert_false(shard_next(g->sh[me], 0, &p, &r)); /* nothing on channel 0 */
        p = (ShardPos)SHARD_POS_INIT;
        while (shard_next(g->sh[me], 1, &p, &r)) {
            int64_t v = decode1(r.v);
            assert_int_equal(op_route(r.k, r.kn, W), me);
            assert_int_equal(decode1(r.k), v % 17);
            assert_int_equal(r.w, v % 5 - 2);
            assert_true(v > last); /* worker order, then write order */
            last = v;
            seen++;
        }
    }
    assert_int_equal(seen, W * NROWS);
}

static void test_a_global_operator_sends_everything_to_worker_0(void **state)
{
    Grid *g = *state;
    route(g, 0, true);
    for (int me = 0; me < W; me++) {
        int64_t n = 0;
        ShardPos p = SHARD_POS_INIT;
        XRec r;
        while (shard_next(g->sh[me], 0, &p, &r))
            n++;
        assert_int_equal(n, me == 0 ? W * NROWS : 0);
    }
}

static void test_shard_batch_consolidates_what_a_worker_is_handed(void **state)
{
    Grid *g = *state;
    route(g, 0, false);
    route(g, 0, false); /* every record twice: weights double */
    for (int me = 0; me < W; me++) {
        Batch *b = shard_batch(g->sh[me], 0);
        for (int64_t i = 0; i < b->n; i++) {
            int64_t v = decode1(batch_val(b, i));
            assert_int_equal(b->w[i], 2 * (v % 5 - 2)); /* zero weights are gone */
            assert_int_not_equal(b->w[i], 0);
            assert_int_equal(op_route(batch_key(b, i), batch_klen(b, i), W), me);
            if (i > 0)
                assert_true(batch_key_cmp(b, i - 1, batch_key(b, i), batch_klen(b, i)) <= 0);
        }
        batch_unref(b);
    }
}

/* shard_batch_of over both channels (a join side's round-1 and round-2
   rows) is what a builder makes of the same inboxes (the path before
   batch_from_xrecs): the records sorted where they lie. */
static void test_shard_batch_of_channels_equals_a_builder_over_their_inboxes(void **state)
{
    Grid *g = *state;
    route(g, 0, false);
    route(g, 1, false);
    route(g, 1, false);
    for (int me = 0; me < W; me++) {
        Batch *b = shard_batch_of(g->sh[me], (const int[]){0, 1}, 2);
        BatchBuilder *bb = bb_new();
        for (int ch = 0; ch < NCH; ch++)
            for (int from = 0; from < W; from++)
                bb_add_xrecs(bb, g->sh[me]->in[ch * W + from]);
        Batch *r = bb_finish(bb);
        assert_int_equal(b->n, r->n);
        assert_true(b->n > 0);
        for (int64_t i = 0; i < b->n; i++) {
            assert_int_equal(batch_tlen(b, i), batch_tlen(r, i));
            assert_int_equal(batch_klen(b, i), batch_klen(r, i));
            assert_memory_equal(batch_key(b, i), batch_key(r, i), batch_tlen(b, i));
            assert_int_equal(b->w[i], r->w[i]);
            int64_t v = decode1(batch_val(b, i));
            assert_int_equal(b->w[i], 3 * (v % 5 - 2)); /* three routings in all */
        }
        batch_unref(b);
        batch_unref(r);
    }
}

static void test_shard_reset_empties_only_the_workers_own_outboxes(void **state)
{
    Grid *g = *state;
    route(g, 0, false);
    route(g, 1, false);
    shard_reset(g->sh[1]);
    for (int f = 0; f < W; f++)
        for (int t = 0; t < W; t++)
            for (int ch = 0; ch < NCH; ch++)
                if (f == 1)
                    assert_int_equal(g->bufs[f][t][ch].n, 0);
    size_t others = 0;
    for (int t = 0; t < W; t++)
        others += g->bufs[0][t][0].n + g->bufs[2][t][1].n;
    assert_true(others > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, grid_setup, grid_teardown)
        T(test_records_reach_their_key_owner_in_worker_then_write_order),
        T(test_a_global_operator_sends_everything_to_worker_0),
        T(test_shard_batch_consolidates_what_a_worker_is_handed),
        T(test_shard_batch_of_channels_equals_a_builder_over_their_inboxes),
        T(test_shard_reset_empties_only_the_workers_own_outboxes),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
