/*
 * tests/zset/test_trace_cursor.c - the forward cursor finds, for keys probed
 * in ascending order, exactly what trace_for_key finds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "zset/trace.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

typedef struct Sum {
    int64_t w, n;
    uint64_t valsum;
} Sum;

static void add(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    Sum *s = ctx;
    uint32_t v = 0;
    memcpy(&v, val, vn < 4 ? vn : 4);
    s->w += w;
    s->n++;
    s->valsum += v * (uint64_t)(w + 1000);
}

static void test_cursor_matches_point_lookups_for_ascending_keys(void **state)
{
    (void)state;
    for (int round = 0; round < 20; round++) {
        Trace *t = trace_new();
        int nbatches = 1 + (int)(next() % 12);
        for (int b = 0; b < nbatches; b++) {
            BatchBuilder *bb = bb_new();
            int n = (int)(next() % 3000);
            for (int i = 0; i < n; i++) {
                uint8_t k[2] = {(uint8_t)(next() % 40), (uint8_t)(next() % 50)};
                uint32_t v = (uint32_t)(next() % 5);
                bb_add(bb, k, 2, (uint8_t *)&v, 4, (int64_t)(next() % 5) - 2);
            }
            trace_insert_take(t, bb_finish(bb));
        }
        TraceCursor *c = trace_cursor_new(t);
        for (int k0 = 0; k0 < 42; k0++) {
            /* keys are self-delimiting (fixed width here), as key.h's are */
            for (int k1 = 0; k1 < 52; k1 += 1 + (int)(next() % 3)) {
                    uint8_t k[2] = {(uint8_t)k0, (uint8_t)k1};
                    Sum a = {0}, b = {0};
                    trace_for_key(t, k, 2, add, &a);
                    trace_cursor_for_key(c, k, 2, add, &b);
                    assert_int_equal(a.w, b.w);
                    assert_int_equal(a.n, b.n);
                    assert_int_equal(a.valsum, b.valsum);
                }
        }
        trace_cursor_free(c);
        trace_step_end(t);
        trace_free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_matches_point_lookups_for_ascending_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
