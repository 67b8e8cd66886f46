/*
 * tests/zset/test_hmap.c - the hash map agrees with a reference (an array
 * indexed by key id) under random upserts, finds and deletes; payloads stay
 * put while the table grows; iteration sees every entry once, also while
 * deleting the entry it just returned.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/hash.h"
#include "zset/hmap.h"

static uint64_t rng_state = 0xD1B54A32D192ED03ull;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

enum { NKEYS = 100000 };

typedef struct Payload {
    uint64_t id;
    int64_t count;
} Payload;

/* Reference state of key id. */
typedef struct Ref {
    bool present;
    int64_t count;
    Payload *p; /* payload pointer handed out at creation */
} Ref;

/* Key bytes of id: a decimal string of a length that varies with id (id 0
   is the empty key). */
static size_t key_of(uint64_t id, uint8_t *buf)
{
    if (id == 0)
        return 0;
    return (size_t)sprintf((char *)buf, "%0*llu", (int)(id % 13), (unsigned long long)id);
}

typedef uint64_t (*HashFn)(const uint8_t *k, size_t kn);

static uint64_t good_hash(const uint8_t *k, size_t kn) { return sl_hash(k, kn); }

/* Low 20 bits fixed, as after routing rows to workers by hash. */
static uint64_t routed_hash(const uint8_t *k, size_t kn) { return sl_hash(k, kn) << 20; }

/* Only 64 distinct values: long collision chains. */
static uint64_t colliding_hash(const uint8_t *k, size_t kn) { return sl_hash(k, kn) % 64; }

static void check_against_reference(HashFn hash, int64_t nops, uint64_t nkeys)
{
    HMap *m = hmap_new(sizeof(Payload));
    Ref *ref = calloc(nkeys, sizeof(Ref));
    int64_t live = 0;
    for (int64_t op = 0; op < nops; op++) {
        uint64_t id = rnd() % nkeys;
        uint8_t k[32];
        size_t kn = key_of(id, k);
        uint64_t h = hash(k, kn);
        switch (rnd() % 8) {
        case 0:
        case 1: { /* delete */
            hmap_delete(m, k, kn, h);
            if (ref[id].present)
                live--;
            ref[id].present = false;
            break;
        }
        case 2:
        case 3: { /* find */
            Payload *p = hmap_find(m, k, kn, h);
            if (!ref[id].present) {
                assert_null(p);
                break;
            }
            assert_ptr_equal(p, ref[id].p);
            assert_int_equal(p->id, id);
            assert_int_equal(p->count, ref[id].count);
            break;
        }
        default: { /* upsert and bump */
            bool created;
            Payload *p = hmap_upsert(m, k, kn, h, &created);
            assert_int_equal(created, !ref[id].present);
            assert_int_equal((uintptr_t)p % 16, 0);
            if (created) {
                assert_int_equal(p->id, 0);
                assert_int_equal(p->count, 0);
                p->id = id;
                ref[id] = (Ref){true, 0, p};
                live++;
            } else
                assert_ptr_equal(p, ref[id].p);
            p->count++;
            ref[id].count++;
            break;
        }
        }
        assert_int_equal(hmap_count(m), live);
    }
    /* every live entry once through iteration, with its key */
    size_t it = 0, seen = 0;
    const uint8_t *k;
    size_t kn;
    void *pv;
    while (hmap_next(m, &it, &k, &kn, &pv)) {
        Payload *p = pv;
        uint8_t want[32];
        assert_true(p->id < nkeys && ref[p->id].present && ref[p->id].p == p);
        assert_int_equal(key_of(p->id, want), kn);
        assert_memory_equal(k, want, kn);
        ref[p->id].present = false; /* seen */
        seen++;
    }
    assert_int_equal(seen, (size_t)live);
    assert_false(hmap_next(m, &it, &k, &kn, &pv));
    assert_true(hmap_bytes(m) >= (size_t)live * (sizeof(Payload) + 1));
    hmap_free(m);
    free(ref);
}

static void test_hmap_matches_reference_for_100k_random_keys(void **state)
{
    check_against_reference(good_hash, 600000, NKEYS);
}

static void test_hmap_handles_hashes_with_fixed_low_bits(void **state)
{
    check_against_reference(routed_hash, 200000, NKEYS / 4);
}

static void test_hmap_handles_equal_hashes_of_different_keys(void **state)
{
    check_against_reference(colliding_hash, 20000, 2000);
}

static void test_hmap_payload_pointers_stay_put_while_growing(void **state)
{
    HMap *m = hmap_new(40);
    void **ptr = malloc(NKEYS * sizeof(void *));
    for (uint64_t id = 0; id < NKEYS; id++) {
        uint8_t k[32];
        size_t kn = key_of(id, k);
        bool created;
        uint8_t *p = hmap_upsert(m, k, kn, sl_hash(k, kn), &created);
        assert_true(created);
        memset(p, (int)(id & 0xff), 40);
        ptr[id] = p;
    }
    size_t grown = hmap_bytes(m);
    for (uint64_t id = 0; id < NKEYS; id++) {
        uint8_t k[32];
        size_t kn = key_of(id, k);
        uint8_t *p = hmap_find(m, k, kn, sl_hash(k, kn));
        assert_ptr_equal(p, ptr[id]);
        assert_int_equal(p[0], id & 0xff);
        assert_int_equal(p[39], id & 0xff);
    }
    for (uint64_t id = 0; id < NKEYS; id += 2) {
        uint8_t k[32];
        size_t kn = key_of(id, k);
        hmap_delete(m, k, kn, sl_hash(k, kn));
    }
    assert_int_equal(hmap_count(m), NKEYS / 2);
    assert_true(hmap_bytes(m) < grown);
    free(ptr);
    hmap_free(m);
}

static void test_hmap_iteration_allows_deleting_the_returned_entry(void **state)
{
    enum { N = 20000 };
    HMap *m = hmap_new(sizeof(uint64_t));
    bool created;
    for (uint64_t id = 0; id < N; id++) {
        uint8_t k[32];
        size_t kn = key_of(id, k);
        *(uint64_t *)hmap_upsert(m, k, kn, sl_hash(k, kn), &created) = id;
    }
    uint8_t *seen = calloc(N, 1);
    size_t it = 0, kept = 0;
    const uint8_t *k;
    size_t kn;
    void *pv;
    while (hmap_next(m, &it, &k, &kn, &pv)) {
        uint64_t id = *(uint64_t *)pv;
        assert_int_equal(seen[id], 0);
        seen[id] = 1;
        if (id % 3 != 0)
            hmap_delete(m, k, kn, sl_hash(k, kn));
        else
            kept++;
    }
    for (uint64_t id = 0; id < N; id++)
        assert_int_equal(seen[id], 1);
    assert_int_equal(hmap_count(m), (int64_t)kept);
    /* the survivors are exactly the multiples of 3, and inserts work again */
    for (uint64_t id = 0; id < N; id++) {
        uint8_t key[32];
        size_t n = key_of(id, key);
        uint64_t *p = hmap_find(m, key, n, sl_hash(key, n));
        if (id % 3 == 0)
            assert_true(p && *p == id);
        else {
            assert_null(p);
            assert_non_null(hmap_upsert(m, key, n, sl_hash(key, n), &created));
            assert_true(created);
        }
    }
    assert_int_equal(hmap_count(m), N);
    free(seen);
    hmap_free(m);
}

static void test_hmap_slots_shrink_after_mass_deletion(void **state)
{
    enum { N = 50000 };
    HMap *m = hmap_new(8);
    uint8_t k[32];
    size_t kn;
    for (uint64_t id = 0; id < N; id++) {
        kn = key_of(id, k);
        hmap_upsert(m, k, kn, sl_hash(k, kn), NULL);
    }
    size_t full = hmap_bytes(m);
    for (uint64_t id = 0; id < N; id++) {
        kn = key_of(id, k);
        hmap_delete(m, k, kn, sl_hash(k, kn));
    }
    /* churn on a few keys: the tombstones trigger rebuilds at a small size */
    for (uint64_t id = N; id < 2 * N; id++) {
        kn = key_of(id, k);
        hmap_upsert(m, k, kn, sl_hash(k, kn), NULL);
        if (id % 10 != 0)
            hmap_delete(m, k, kn, sl_hash(k, kn));
    }
    assert_int_equal(hmap_count(m), N / 10);
    assert_true(hmap_bytes(m) < full / 4);
    hmap_free(m);
}

static void test_hmap_with_empty_payload_is_a_set(void **state)
{
    HMap *m = hmap_new(0);
    bool created;
    const uint8_t *k = (const uint8_t *)"abc";
    assert_non_null(hmap_upsert(m, k, 3, sl_hash(k, 3), &created));
    assert_true(created);
    assert_non_null(hmap_upsert(m, k, 3, sl_hash(k, 3), &created));
    assert_false(created);
    assert_non_null(hmap_find(m, k, 3, sl_hash(k, 3)));
    assert_null(hmap_find(m, k, 2, sl_hash(k, 2)));
    hmap_delete(m, k, 3, sl_hash(k, 3));
    hmap_delete(m, k, 3, sl_hash(k, 3));
    assert_int_equal(hmap_count(m), 0);
    size_t it = 0, kn;
    const uint8_t *kk;
    void *p;
    assert_false(hmap_next(m, &it, &kk, &kn, &p));
    hmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hmap_matches_reference_for_100k_random_keys),
        cmocka_unit_test(test_hmap_handles_hashes_with_fixed_low_bits),
        cmocka_unit_test(test_hmap_handles_equal_hashes_of_different_keys),
        cmocka_unit_test(test_hmap_payload_pointers_stay_put_while_growing),
        cmocka_unit_test(test_hmap_iteration_allows_deleting_the_returned_entry),
        cmocka_unit_test(test_hmap_slots_shrink_after_mass_deletion),
        cmocka_unit_test(test_hmap_with_empty_payload_is_a_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
