/*
 * tests/zset/zset_test.h - the reference model the batch and trace tests
 * (test_batch.c, test_trace.c) check against: tuples as plain bytes with a
 * key length and a weight, ordered by their bytes, consolidated by sorting
 * and summing equal ones; and the splitmix64 generator their random inputs
 * come from. A test defines ZT_SEED (the generator's start) and
 * ZT_TUP_BYTES (the largest tuple) before including it, after cmocka.h.
 */
#ifndef SL_TESTS_ZSET_ZSET_TEST_H
#define SL_TESTS_ZSET_ZSET_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = ZT_SEED;

static inline uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct Tup {
    uint8_t p[ZT_TUP_BYTES];
    size_t n;
    uint32_t klen;
    int64_t w;
} Tup;

static inline int tup_cmp(const void *x, const void *y)
{
    const Tup *a = x, *b = y;
    size_t m = a->n < b->n ? a->n : b->n;
    int d = memcmp(a->p, b->p, m);
    if (d)
        return d;
    return (a->n > b->n) - (a->n < b->n);
}

/* Sort and consolidate t[0..n) in place; returns the surviving count. */
static inline size_t ref_consolidate(Tup *t, size_t n)
{
    if (n > 1) /* (t may be NULL when n is 0) */
        qsort(t, n, sizeof(Tup), tup_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        Tup acc = t[i];
        size_t j = i + 1;
        for (; j < n && tup_cmp(&t[j], &acc) == 0; j++)
            acc.w += t[j].w;
        if (acc.w != 0)
            t[m++] = acc;
        i = j;
    }
    return m;
}

#endif
