/*
 * tests/zset/test_batch.c - batches built, merged and searched agree with a
 * naive reference (qsort of the tuples, then a sum of equal neighbours).
 * Tuples come from generators that stress the builder's radix sort: many
 * duplicates, long common prefixes, zero bytes, tuples that are prefixes of
 * others, lengths around the 8-byte chunk boundaries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/mem.h"
#include "zset/batch.h"
#include "zset/xrec.h"

#define ZT_SEED 0x9E3779B97F4A7C15ull
#define ZT_TUP_BYTES 64
#include "zset_test.h"

/* ---- reference model ---- */

static void assert_batch_equals(const Batch *b, const Tup *t, size_t n)
{
    assert_int_equal(b->n, (int64_t)n);
    assert_int_equal(batch_off(b, 0), 0);
    for (size_t i = 0; i < n; i++) {
        size_t len = batch_tlen(b, i);
        if (len != t[i].n || memcmp(batch_key(b, i), t[i].p, len) != 0 ||
            batch_klen(b, i) != t[i].klen || b->w[i] != t[i].w)
            fail_msg("tuple %zu differs: len %zu/%zu klen %zu/%u w %lld/%lld", i, len, t[i].n,
                     batch_klen(b, i), t[i].klen, (long long)b->w[i], (long long)t[i].w);
        assert_int_equal(batch_off(b, i + 1), batch_off(b, i) + len);
    }
}

/* ---- tuple generators ---- */

enum Gen {
    GEN_SMALL_ALPHABET, /* (string key, string val), heavy duplication */
    GEN_COMMON_PREFIX,  /* "customer_000123" keys, long shared prefixes */
    GEN_FIXED12,        /* 4-byte key, 8-byte val, random bits */
    GEN_PREFIXES,       /* bytes over {00, 01, ff}, length 0..20: prefixes of each other */
    GEN_COUNT
};

static void gen_tuple(enum Gen g, Tup *t)
{
    switch (g) {
    case GEN_SMALL_ALPHABET: {
        size_t kn = rnd() % 4, vn = rnd() % 3;
        for (size_t i = 0; i < kn; i++)
            t->p[i] = (uint8_t)('a' + rnd() % 3);
        t->p[kn] = 0;
        for (size_t i = 0; i < vn; i++)
            t->p[kn + 1 + i] = (uint8_t)('x' + rnd() % 2);
        t->p[kn + 1 + vn] = 0;
        t->klen = (uint32_t)kn + 1;
        t->n = kn + vn + 2;
        break;
    }
    case GEN_COMMON_PREFIX: {
        int len = snprintf((char *)t->p, sizeof(t->p), "customer_%06u",
                           (unsigned)(rnd() % 5000));
        t->p[len] = 0;
        t->klen = (uint32_t)len + 1;
        uint32_t v = (uint32_t)(rnd() % 3);
        memcpy(t->p + len + 1, &v, 4);
        t->n = (size_t)len + 5;
        break;
    }
    case GEN_FIXED12: {
        uint64_t a = rnd(), b = rnd();
        memcpy(t->p, &a, 4);
        memcpy(t->p + 4, &b, 8);
        t->klen = 4;
        t->n = 12;
        break;
    }
    case GEN_PREFIXES: {
        static const uint8_t sym[3] = {0x00, 0x01, 0xff};
        t->n = rnd() % 21;
        for (size_t i = 0; i < t->n; i++)
            t->p[i] = sym[rnd() % 3];
        t->klen = (uint32_t)t->n;
        break;
    }
    case GEN_COUNT:
        break;
    }
    t->w = (int64_t)(rnd() % 7) - 3;
}

static void bb_add_tup(BatchBuilder *bb, const Tup *t)
{
    bb_add(bb, t->p, t->klen, t->p + t->klen, t->n - t->klen, t->w);
}

static Batch *batch_of(const Tup *t, size_t n)
{
    BatchBuilder *bb = bb_new();
    for (size_t i = 0; i < n; i++)
        bb_add_tup(bb, &t[i]);
    return bb_finish(bb);
}

static Tup *gen_tuples(enum Gen g, size_t n)
{
    Tup *t = malloc((n ? n : 1) * sizeof(Tup));
    for (size_t i = 0; i < n; i++)
        gen_tuple(g, &t[i]);
    return t;
}

/* ---- tests ---- */

static void test_batch_finish_consolidates_duplicates_and_drops_zero_weights(void **state)
{
    BatchBuilder *bb = bb_new();
    bb_add(bb, (const uint8_t *)"b", 1, (const uint8_t *)"1", 1, 2);
    bb_add(bb, (const uint8_t *)"a", 1, (const uint8_t *)"1", 1, 1);
    bb_add(bb, (const uint8_t *)"c", 1, NULL, 0, 0);
    bb_add(bb, (const uint8_t *)"a", 1, (const uint8_t *)"1", 1, 2);
    bb_add(bb, (const uint8_t *)"b", 1, (const uint8_t *)"1", 1, -2);
    bb_add(bb, (const uint8_t *)"a", 1, (const uint8_t *)"0", 1, -1);
    Batch *b = bb_finish(bb);
    assert_int_equal(b->n, 2);
    assert_memory_equal(batch_key(b, 0), "a", 1);
    assert_memory_equal(batch_val(b, 0), "0", 1);
    assert_int_equal(b->w[0], -1);
    assert_memory_equal(batch_val(b, 1), "1", 1);
    assert_int_equal(batch_klen(b, 1), 1);
    assert_int_equal(batch_vlen(b, 1), 1);
    assert_int_equal(b->w[1], 3);
    assert_int_equal(batch_off(b, 2), 4);
    batch_unref(b);
}

static void test_batch_finish_of_nothing_is_an_empty_batch(void **state)
{
    Batch *b = bb_finish(bb_new());
    assert_int_equal(b->n, 0);
    assert_int_equal(b->refs, 1);
    assert_true(batch_bytes(b) > 0);
    batch_unref(b);

    BatchBuilder *bb = bb_new();
    bb_add(bb, NULL, 0, NULL, 0, 5);
    bb_add(bb, NULL, 0, NULL, 0, -5);
    assert_int_equal(bb_count(bb), 2);
    b = bb_finish(bb);
    assert_int_equal(b->n, 0);
    batch_unref(b);

    b = batch_empty();
    assert_int_equal(b->n, 0);
    assert_int_equal(batch_seek(b, (const uint8_t *)"x", 1), 0);
    batch_unref(b);
}

static void test_batch_finish_matches_reference_for_random_tuples(void **state)
{
    static const size_t sizes[] = {0, 1, 2, 23, 24, 25, 100, 1000, 30000, 200000};
    for (int g = 0; g < GEN_COUNT; g++)
        for (size_t s = 0; s < ARRAY_LEN(sizes); s++) {
            size_t n = sizes[s];
            Tup *t = gen_tuples((enum Gen)g, n);
            Batch *b = batch_of(t, n);
            size_t m = ref_consolidate(t, n);
            assert_batch_equals(b, t, m);
            batch_unref(b);
            free(t);
        }
}

/* bb_add_xrecs over record streams (split across several buffers, as a
   shard's inboxes) builds what bb_add of each record builds. */
static void test_batch_from_xrec_streams_equals_batch_from_tuples(void **state)
{
    static const size_t sizes[] = {0, 1, 25, 1000, 30000};
    for (int g = 0; g < GEN_COUNT; g++)
        for (size_t s = 0; s < ARRAY_LEN(sizes); s++) {
            size_t n = sizes[s];
            Tup *t = gen_tuples((enum Gen)g, n);
            Buf in[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
            for (size_t i = 0; i < n; i++)
                xrec_put(&in[i % 3 == 2 ? 2 : i % 2], t[i].p, t[i].klen, t[i].p + t[i].klen,
                         (uint32_t)(t[i].n - t[i].klen), t[i].w);
            BatchBuilder *bb = bb_new();
            for (int k = 0; k < 3; k++)
                bb_add_xrecs(bb, &in[k]);
            Batch *b = bb_finish(bb);
            size_t m = ref_consolidate(t, n);
            assert_batch_equals(b, t, m);
            batch_unref(b);
            for (int k = 0; k < 3; k++)
                buf_free(&in[k]);
            free(t);
        }
}

/* Two batches hold the same tuples, weights and layout. */
static void assert_batches_same(const Batch *a, const Batch *b)
{
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->off == NULL, b->off == NULL);
    assert_int_equal(a->tlen, b->tlen);
    assert_int_equal(a->fklen, b->fklen);
    for (int64_t i = 0; i < a->n; i++) {
        assert_int_equal(batch_tlen(a, i), batch_tlen(b, i));
        assert_int_equal(batch_klen(a, i), batch_klen(b, i));
        assert_memory_equal(batch_key(a, i), batch_key(b, i), batch_tlen(a, i));
        assert_int_equal(a->w[i], b->w[i]);
    }
}

/* batch_from_xrecs (an exchange's inboxes made a batch: records sorted
   where they lie, unpadded and unaligned) builds what a builder builds
   from the same streams (bb_add_xrecs, bb_finish) and what the reference
   builds: every generator, tuples in no order, in a few sorted runs
   (the builder's merge) and in many (sorted in place), over 1..5 streams
   (some empty), some weights zero. */
static void test_batch_from_xrecs_equals_builder_and_reference(void **state)
{
    static const size_t sizes[] = {0, 1, 17, 40, 1000, 30000};
    static const int nstreams[] = {1, 2, 5};
    for (int g = 0; g < GEN_COUNT; g++)
        for (size_t s = 0; s < ARRAY_LEN(sizes); s++)
            for (size_t q = 0; q < ARRAY_LEN(nstreams); q++)
                for (int order = 0; order < 3; order++) {
                    size_t n = sizes[s];
                    int ns = nstreams[q];
                    Tup *t = gen_tuples((enum Gen)g, n);
                    for (size_t i = 0; i < n; i++)
                        if (i % 13 == 5)
                            t[i].w = 0;
                    /* order 0: as generated; 1: sorted, one block per
                       stream (ns runs); 2: 40 sorted blocks round-robin
                       over the streams */
                    size_t blocks = order == 2 ? 40 : (size_t)ns;
                    if (order == 1)
                        qsort(t, n, sizeof(Tup), tup_cmp);
                    Buf in[5] = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT};
                    for (size_t b = 0, at = 0; b < blocks; b++) {
                        size_t len = b + 1 == blocks ? n - at : n / blocks;
                        if (order == 2)
                            qsort(t + at, len, sizeof(Tup), tup_cmp);
                        int to = (int)(b % (size_t)ns);
                        if (ns == 5 && to == 3)
                            to = 4; /* stream 3 stays empty */
                        for (size_t j = at; j < at + len; j++) {
                            int dst = order == 0 ? (int)(j % (size_t)ns) : to;
                            if (ns == 5 && dst == 3)
                                dst = 1;
                            xrec_put(&in[dst], t[j].p, t[j].klen, t[j].p + t[j].klen,
                                     (uint32_t)(t[j].n - t[j].klen), t[j].w);
                        }
                        at += len;
                    }
                    const Buf *pin[5] = {&in[0], &in[1], &in[2], &in[3], &in[4]};
                    Batch *a = batch_from_xrecs(pin, ns);
                    BatchBuilder *bb = bb_new();
                    for (int k = 0; k < ns; k++)
                        bb_add_xrecs(bb, &in[k]);
                    Batch *b = bb_finish(bb);
                    assert_batches_same(a, b);
                    size_t m = ref_consolidate(t, n);
                    assert_batch_equals(a, t, m);
                    batch_unref(a);
                    batch_unref(b);
                    for (int k = 0; k < 5; k++)
                        buf_free(&in[k]);
                    free(t);
                }
}

/* batch_from_xrecs reads the records where they lie and copies nothing
   of them before the batch: it never writes to its input. */
static void test_batch_from_xrecs_leaves_its_input_unchanged(void **state)
{
    Tup *t = gen_tuples(GEN_COMMON_PREFIX, 5000);
    Buf in[2] = {BUF_INIT, BUF_INIT};
    for (size_t j = 0; j < 5000; j++)
        xrec_put(&in[j % 2], t[j].p, t[j].klen, t[j].p + t[j].klen,
                 (uint32_t)(t[j].n - t[j].klen), t[j].w);
    uint8_t *copy[2];
    for (int k = 0; k < 2; k++) {
        copy[k] = malloc(in[k].n);
        memcpy(copy[k], in[k].p, in[k].n);
    }
    const Buf *pin[2] = {&in[0], &in[1]};
    Batch *a = batch_from_xrecs(pin, 2);
    for (int k = 0; k < 2; k++) {
        assert_memory_equal(copy[k], in[k].p, in[k].n);
        free(copy[k]);
        buf_free(&in[k]);
    }
    size_t m = ref_consolidate(t, 5000);
    assert_batch_equals(a, t, m);
    batch_unref(a);
    free(t);
}

static void test_batch_finish_sorts_tuples_with_long_equal_runs(void **state)
{
    /* 20 distinct tuples, each added 5000 times: runs far longer than the
       insertion-sort cutoff that agree past several 8-byte chunks */
    enum { N = 100000 };
    BatchBuilder *bb = bb_new();
    const uint8_t k[20] = "0123456789abcdefghi";
    for (int i = 0; i < N; i++)
        bb_add(bb, k, 20, k, i % 20, i % 20 == 3 ? 1 : (i & 1 ? 1 : -1));
    Batch *b = bb_finish(bb);
    assert_int_equal(b->n, 20);
    for (int64_t i = 0; i < b->n; i++) {
        assert_int_equal(batch_vlen(b, i), i);
        assert_memory_equal(batch_key(b, i), k, 20);
        assert_int_equal(b->w[i], i == 3 || i % 2 ? N / 20 : -N / 20);
    }
    batch_unref(b);
}

/* Tuples appended as k ascending runs (each run sorted, duplicates and
   zero weights kept; a run may start with the tuple the one before ended
   with) build what unordered input builds: one run is copied out, up to
   16 are merged, more are sorted. Runs go in through bb_add and through
   xrec streams (a shard's inboxes). */
static void test_batch_finish_of_sorted_runs_matches_reference(void **state)
{
    static const int runs[] = {1, 2, 3, 5, 16, 17, 40};
    static const size_t sizes[] = {1, 2, 17, 1000, 30000};
    for (int g = 0; g < GEN_COUNT; g++)
        for (size_t r = 0; r < ARRAY_LEN(runs); r++)
            for (size_t s = 0; s < ARRAY_LEN(sizes); s++)
                for (int via_xrec = 0; via_xrec < 2; via_xrec++) {
                    size_t n = sizes[s], k = (size_t)runs[r];
                    Tup *t = gen_tuples((enum Gen)g, n);
                    /* runs of uneven lengths: run i gets about 2i+1 shares */
                    BatchBuilder *bb = bb_new();
                    for (size_t i = 0, at = 0; i < k && at < n; i++) {
                        size_t len = i + 1 == k ? n - at : n * (2 * i + 1) / (k * k);
                        if (len > n - at)
                            len = n - at;
                        qsort(t + at, len, sizeof(Tup), tup_cmp);
                        if (i > 0 && len > 0 && at > 0 && g == GEN_SMALL_ALPHABET)
                            t[at] = t[at - 1]; /* a tie across the run boundary */
                        Buf in = BUF_INIT;
                        for (size_t j = at; j < at + len; j++)
                            if (via_xrec)
                                xrec_put(&in, t[j].p, t[j].klen, t[j].p + t[j].klen,
                                         (uint32_t)(t[j].n - t[j].klen), t[j].w);
                            else
                                bb_add_tup(bb, &t[j]);
                        bb_add_xrecs(bb, &in);
                        buf_free(&in);
                        at += len;
                    }
                    Batch *b = bb_finish(bb);
                    size_t m = ref_consolidate(t, n);
                    assert_batch_equals(b, t, m);
                    batch_unref(b);
                    free(t);
                }
}

/* Sorted input whose equal neighbours cancel or add up. */
static void test_batch_finish_of_sorted_input_consolidates_neighbours(void **state)
{
    BatchBuilder *bb = bb_new();
    bb_add(bb, (const uint8_t *)"a", 1, NULL, 0, 1);
    bb_add(bb, (const uint8_t *)"a", 1, NULL, 0, -1);
    bb_add(bb, (const uint8_t *)"b", 1, NULL, 0, 2);
    bb_add(bb, (const uint8_t *)"b", 1, NULL, 0, 3);
    bb_add(bb, (const uint8_t *)"c", 1, (const uint8_t *)"x", 1, 1);
    bb_add(bb, (const uint8_t *)"c", 1, (const uint8_t *)"x", 1, -1);
    Batch *b = bb_finish(bb);
    assert_int_equal(b->n, 1);
    assert_memory_equal(batch_key(b, 0), "b", 1);
    assert_int_equal(b->w[0], 5);
    batch_unref(b);
}

static void test_batch_merge_equals_builder_over_the_union(void **state)
{
    static const size_t sizes[][2] = {{0, 0}, {0, 50}, {50, 0}, {1, 1}, {300, 7}, {5000, 5000}};
    for (int g = 0; g < GEN_COUNT; g++)
        for (size_t s = 0; s < ARRAY_LEN(sizes); s++) {
            size_t na = sizes[s][0], nb = sizes[s][1];
            Tup *t = gen_tuples((enum Gen)g, na + nb);
            Batch *a = batch_of(t, na), *b = batch_of(t + na, nb);
            Batch *m = batch_merge(a, b), *m2 = batch_merge(b, a);
            size_t n = ref_consolidate(t, na + nb);
            assert_batch_equals(m, t, n);
            assert_batch_equals(m2, t, n);
            assert_int_equal(m->refs, 1);
            batch_unref(a);
            batch_unref(b);
            batch_unref(m);
            batch_unref(m2);
            free(t);
        }
}

/* batch_merge_many of k parts equals the builder over their union, with
   tuples repeated and cancelled across parts (some parts carry negations
   of tuples in others). */
static void test_batch_merge_many_equals_builder_over_the_union(void **state)
{
    static const size_t sizes[] = {0, 1, 3, 40, 700};
    for (int g = 0; g < GEN_COUNT; g++)
        for (int k = 1; k <= 6; k++) {
            size_t at[7] = {0}, total = 0;
            for (int j = 0; j < k; j++) {
                at[j] = total;
                total += sizes[(size_t)(g + j * 3) % ARRAY_LEN(sizes)];
            }
            at[k] = total;
            Tup *t = gen_tuples((enum Gen)g, total + 1);
            /* part j > 0 takes back a third of part j - 1's first tuples */
            for (int j = 1; j < k; j++)
                for (size_t i = 0; i < (at[j] - at[j - 1]) / 3 && at[j] + i < at[j + 1]; i++) {
                    t[at[j] + i] = t[at[j - 1] + i];
                    t[at[j] + i].w = -t[at[j] + i].w;
                }
            Batch *parts[6];
            for (int j = 0; j < k; j++)
                parts[j] = batch_of(t + at[j], at[j + 1] - at[j]);
            Batch *m = batch_merge_many(parts, k);
            size_t n = ref_consolidate(t, total);
            assert_batch_equals(m, t, n);
            for (int j = 0; j < k; j++)
                batch_unref(parts[j]);
            batch_unref(m);
            free(t);
        }
}

/* 3 and 4 runs (batch_merge_many's path without a heap): one large run
   and small ones, every tuple of a small run also in others (equal in 2,
   3 or 4 runs, weights that cancel or not), against the reference. */
static void test_batch_merge_of_few_runs_matches_reference(void **state)
{
    for (int g = 0; g < GEN_COUNT; g++)
        for (int k = 3; k <= 4; k++)
            for (int rep = 0; rep < 8; rep++) {
                size_t at[5] = {0}, total = 0;
                for (int j = 0; j < k; j++) {
                    at[j] = total;
                    total += j == rep % k ? 500 + rnd() % 300 : rnd() % 60;
                }
                at[k] = total;
                Tup *t = gen_tuples((enum Gen)g, total + 1);
                /* half of each run after the first repeats tuples of the runs
                   before it, some with their weights negated */
                for (int j = 1; j < k; j++)
                    for (size_t i = at[j]; i < at[j + 1]; i++)
                        if (rnd() % 2 && at[j] > 0) {
                            t[i] = t[rnd() % at[j]];
                            if (rnd() % 3 == 0)
                                t[i].w = -t[i].w;
                        }
                Batch *parts[4];
                for (int j = 0; j < k; j++)
                    parts[j] = batch_of(t + at[j], at[j + 1] - at[j]);
                Batch *m = batch_merge_many(parts, k);
                size_t n = ref_consolidate(t, total);
                assert_batch_equals(m, t, n);
                for (int j = 0; j < k; j++)
                    batch_unref(parts[j]);
                batch_unref(m);
                free(t);
            }
}

static void test_batch_merge_with_its_negation_is_empty(void **state)
{
    enum { N = 2000 };
    Tup *t = gen_tuples(GEN_COMMON_PREFIX, N);
    Batch *a = batch_of(t, N);
    for (size_t i = 0; i < N; i++)
        t[i].w = -t[i].w;
    Batch *b = batch_of(t, N);
    Batch *m = batch_merge(a, b);
    assert_int_equal(m->n, 0);
    assert_int_equal(batch_off(m, 0), 0);
    batch_unref(a);
    batch_unref(b);
    batch_unref(m);
    free(t);
}

static void test_batch_seek_finds_first_key_not_less(void **state)
{
    enum { N = 5000 };
    Tup *t = gen_tuples(GEN_SMALL_ALPHABET, N);
    Batch *b = batch_of(t, N);
    assert_true(b->n > 10);
    for (int probe = 0; probe < 2000; probe++) {
        Tup q;
        gen_tuple(GEN_SMALL_ALPHABET, &q);
        size_t kn = probe % 3 == 0 ? rnd() % (q.klen + 1) : q.klen; /* also key prefixes */
        int64_t want = 0;
        while (want < b->n) {
            size_t bk = batch_klen(b, want), m = bk < kn ? bk : kn;
            int d = m ? memcmp(batch_key(b, want), q.p, m) : 0;
            if (d > 0 || (d == 0 && bk >= kn))
                break;
            want++;
        }
        int64_t got = batch_seek(b, q.p, kn);
        assert_int_equal(got, want);
        if (got < b->n)
            assert_true(batch_key_cmp(b, got, q.p, kn) >= 0);
        if (got > 0)
            assert_true(batch_key_cmp(b, got - 1, q.p, kn) < 0);
    }
    batch_unref(b);
    free(t);
}

static void test_batch_refcount_frees_at_the_last_unref(void **state)
{
    Tup t[3];
    for (int i = 0; i < 3; i++) {
        gen_tuple(GEN_FIXED12, &t[i]);
        t[i].w = 1;
    }
    Batch *b = batch_of(t, 3);
    batch_ref(b);
    assert_int_equal(b->refs, 2);
    batch_unref(b);
    assert_int_equal(b->refs, 1);
    assert_true(batch_bytes(b) >= 3 * 12 + 4 * sizeof(size_t) + 3 * sizeof(int64_t));
    batch_unref(b);
}


/* Tuples that agree on their first 8 bytes (an 8-byte key of few values)
   and end at, before or after 16 bytes: the sort orders them on its
   cached second chunk, and on the bytes after it, in insertion sorts and
   radix passes alike. */
static void test_batch_finish_orders_tuples_sharing_their_first_chunk(void **state)
{
    for (size_t n = 5; n <= 20000; n *= 7) {
        Tup *t = malloc(n * sizeof(Tup));
        for (size_t i = 0; i < n; i++) {
            uint64_t k = rnd() % 5 * 0x0101010101010101ull;
            size_t len = rnd() % 3 ? 8 + rnd() % 12 : rnd() % 9;
            memcpy(t[i].p, &k, 8);
            for (size_t j = 8; j < len; j++)
                t[i].p[j] = (uint8_t)(rnd() % 3 == 0 ? 0 : rnd() % 4);
            t[i].n = len;
            t[i].klen = (uint32_t)(len < 8 ? len : 8);
            t[i].w = (int64_t)(rnd() % 5) - 2;
        }
        Batch *b = batch_of(t, n);
        size_t m = ref_consolidate(t, n);
        assert_batch_equals(b, t, m);
        batch_unref(b);
        free(t);
    }
}

/* Fixed-width tuples (one length, one key length) make a uniform batch:
   no offset or key length tables, a weight and the bytes a tuple. */
static void test_batch_of_fixed_width_tuples_is_uniform(void **state)
{
    enum { N = 3000 };
    Tup *t = gen_tuples(GEN_FIXED12, N);
    Batch *b = batch_of(t, N);
    size_t n = ref_consolidate(t, N);
    assert_batch_equals(b, t, n);
    assert_null(b->off);
    assert_null(b->klen);
    assert_int_equal(b->tlen, 12);
    assert_int_equal(b->fklen, 4);
    assert_int_equal(batch_bytes(b), sizeof(Batch) + n * (12 + sizeof(int64_t)));
    /* one tuple of another length, or of another key length: tables */
    for (int other = 0; other < 2; other++) {
        BatchBuilder *bb = bb_new();
        for (size_t i = 0; i < n; i++)
            bb_add_tup(bb, &t[i]);
        bb_add(bb, t[0].p, other ? 5 : 4, t[0].p + 4, other ? 7 : 9, 1);
        Batch *g = bb_finish(bb);
        assert_non_null(g->off);
        assert_int_equal(g->n, (int64_t)n + 1);
        batch_unref(g);
    }
    batch_unref(b);
    free(t);
}

/* Tuples of one shape but from different generators' lengths: a 12-byte
   tuple with a 6-byte key. */
static void gen_fixed12_k6(Tup *t)
{
    gen_tuple(GEN_FIXED12, t);
    t->klen = 6;
}

/* Merges of uniform batches with batches of another shape or with
   tables, in every combination, equal the builder over the union; the
   result is uniform only when every non-empty input has one shape. */
static void test_batch_merge_of_mixed_layouts_equals_builder_over_the_union(void **state)
{
    enum { N = 400 };
    for (int mix = 0; mix < 4; mix++) {
        /* part 0: fixed 12/4; part 1: mix 0 the same shape, 1 a 6-byte
           key, 2 varying lengths, 3 empty; part 2: fixed 12/4 again */
        Tup *t = malloc(3 * N * sizeof(Tup));
        size_t n1 = mix == 3 ? 0 : N;
        for (size_t i = 0; i < N; i++)
            gen_tuple(GEN_FIXED12, &t[i]);
        for (size_t i = 0; i < n1; i++) {
            if (mix == 1)
                gen_fixed12_k6(&t[N + i]);
            else
                gen_tuple(mix == 2 ? GEN_COMMON_PREFIX : GEN_FIXED12, &t[N + i]);
        }
        for (size_t i = 0; i < N / 3; i++) { /* cancel some of part 0 */
            t[N + n1 + i] = t[i];
            t[N + n1 + i].w = -t[i].w;
        }
        for (size_t i = N / 3; i < N; i++)
            gen_tuple(GEN_FIXED12, &t[N + n1 + i]);
        Batch *p[3] = {batch_of(t, N), batch_of(t + N, n1), batch_of(t + N + n1, N)};
        size_t total = 2 * N + n1;
        bool uni = mix == 0 || mix == 3;
        for (int k = 2; k <= 3; k++) {
            Tup *r = malloc(total * sizeof(Tup));
            size_t rn = k == 2 ? N + n1 : total;
            memcpy(r, t, rn * sizeof(Tup));
            size_t n = ref_consolidate(r, rn);
            Batch *m = k == 2 ? batch_merge(p[0], p[1]) : batch_merge_many(p, 3);
            assert_batch_equals(m, r, n);
            if (n)
                assert_int_equal(m->off == NULL, uni);
            Batch *m2 = k == 2 ? batch_merge(p[1], p[0]) : NULL;
            if (m2)
                assert_batch_equals(m2, r, n);
            batch_unref(m);
            batch_unref(m2);
            free(r);
        }
        for (int j = 0; j < 3; j++)
            batch_unref(p[j]);
        free(t);
    }
}

/* Slices and concatenations of a uniform batch stay uniform and hold the
   same tuples; batch_compact turns a batch with tables whose tuples have
   one shape into a uniform one; batch_tables gives the tables either way. */
static void test_batch_uniform_slices_concat_compact_and_tables(void **state)
{
    enum { N = 1000 };
    Tup *t = gen_tuples(GEN_FIXED12, N);
    Batch *b = batch_of(t, N);
    size_t n = ref_consolidate(t, N);
    Batch *parts[3] = {batch_slice(b, 0, 10), batch_slice(b, 10, 500), batch_slice(b, 500, b->n)};
    for (int j = 0; j < 3; j++)
        assert_null(parts[j]->off);
    assert_batch_equals(parts[0], t, 10);
    Batch *c = batch_concat(parts, 3);
    assert_null(c->off);
    assert_batch_equals(c, t, n);

    /* a batch with tables: the uniform tuples merged with one 6-byte-key
       tuple, then sliced to the uniform part */
    Tup odd;
    gen_fixed12_k6(&odd);
    odd.p[0] = 0xff, odd.p[1] = 0xff, odd.p[2] = 0xff, odd.p[3] = 0xff; /* sorts last */
    odd.w = 1;
    Batch *o = batch_of(&odd, 1);
    Batch *g = batch_merge(b, o);
    assert_non_null(g->off);
    Batch *gs = batch_slice(g, 0, (int64_t)n);
    assert_non_null(gs->off);
    const size_t *off1;
    const uint32_t *klen;
    void *scratch;
    batch_tables(gs, &off1, &klen, &scratch);
    assert_null(scratch);
    assert_ptr_equal(off1, gs->off + 1);
    Batch *u = batch_compact(gs);
    assert_null(u->off);
    assert_batch_equals(u, t, n);
    batch_tables(u, &off1, &klen, &scratch);
    assert_non_null(scratch);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(off1[i], (i + 1) * 12);
        assert_int_equal(klen[i], 4);
    }
    sl_free(scratch);
    Batch *g2 = batch_compact(g); /* two shapes: kept as it is */
    assert_ptr_equal(g2, g);
    batch_unref(g2);
    batch_unref(u);
    batch_unref(o);
    batch_unref(c);
    for (int j = 0; j < 3; j++)
        batch_unref(parts[j]);
    batch_unref(b);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_finish_consolidates_duplicates_and_drops_zero_weights),
        cmocka_unit_test(test_batch_finish_of_nothing_is_an_empty_batch),
        cmocka_unit_test(test_batch_finish_matches_reference_for_random_tuples),
        cmocka_unit_test(test_batch_from_xrec_streams_equals_batch_from_tuples),
        cmocka_unit_test(test_batch_from_xrecs_equals_builder_and_reference),
        cmocka_unit_test(test_batch_from_xrecs_leaves_its_input_unchanged),
        cmocka_unit_test(test_batch_finish_sorts_tuples_with_long_equal_runs),
        cmocka_unit_test(test_batch_finish_of_sorted_runs_matches_reference),
        cmocka_unit_test(test_batch_finish_of_sorted_input_consolidates_neighbours),
        cmocka_unit_test(test_batch_merge_equals_builder_over_the_union),
        cmocka_unit_test(test_batch_merge_many_equals_builder_over_the_union),
        cmocka_unit_test(test_batch_merge_of_few_runs_matches_reference),
        cmocka_unit_test(test_batch_merge_with_its_negation_is_empty),
        cmocka_unit_test(test_batch_seek_finds_first_key_not_less),
        cmocka_unit_test(test_batch_refcount_frees_at_the_last_unref),
        cmocka_unit_test(test_batch_finish_orders_tuples_sharing_their_first_chunk),
        cmocka_unit_test(test_batch_of_fixed_width_tuples_is_uniform),
        cmocka_unit_test(test_batch_merge_of_mixed_layouts_equals_builder_over_the_union),
        cmocka_unit_test(test_batch_uniform_slices_concat_compact_and_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
