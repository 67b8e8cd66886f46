/*
 * tests/pipeline/test_ckpt_pos.c - connector positions in a checkpoint's
 * manifest read back exactly: every 64-bit integer survives the JSON text
 * (through a number below 10^15, where cJSON prints every digit, through
 * its decimal text past it), and a
 * value that is not a whole 64-bit integer is refused rather than rounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "pipeline/snapshot.h"

/* x as manifest text and back, as a restart reads it. */
static int64_t round_trip(int64_t x)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, ckpt_jint_new(x));
    char *text = cJSON_PrintUnformatted(a);
    cJSON *b = cJSON_Parse(text);
    int64_t got = 0;
    assert_true(ckpt_jint_get(cJSON_GetArrayItem(b, 0), &got));
    cJSON_free(text);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return got;
}

static void test_every_64_bit_position_reads_back_exactly(void **state)
{
    (void)state;
    const int64_t big = INT64_C(1) << 53, e15 = INT64_C(1000000000000000);
    const int64_t xs[] = {0, 1, -1, 44, e15 - 1, e15, e15 + 1, -e15, big - 1, big, big + 1,
                          -big - 1,
                          /* s3_input: line << 24 | object index; 60M lines pass 10^15 */
                          (INT64_C(600000000) << 24) | 7, INT64_MAX, INT64_MIN,
                          INT64_C(0x16B3748DEADBEEF)};
    for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++)
        assert_true(round_trip(xs[i]) == xs[i]);
}

static void test_small_positions_stay_json_numbers(void **state)
{
    (void)state; /* manifests written before large positions existed read the same */
    cJSON *v = ckpt_jint_new(123456789);
    assert_true(cJSON_IsNumber(v));
    cJSON_Delete(v);
    v = ckpt_jint_new(INT64_C(1000000000000001));
    assert_true(cJSON_IsString(v));
    assert_string_equal(v->valuestring, "1000000000000001");
    cJSON_Delete(v);
}

static void test_values_that_are_not_whole_64_bit_integers_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"[1.5]", "[9e18]", "[1000000000000000]", "[\"\"]", "[\"12a\"]", "[\" 12\"]", "[\"-\"]",
                         "[\"99999999999999999999\"]", "[null]", "[true]", "[[1]]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *a = cJSON_Parse(bad[i]);
        assert_non_null(a);
        int64_t x = 42;
        assert_false(ckpt_jint_get(cJSON_GetArrayItem(a, 0), &x));
        assert_true(x == 42);
        cJSON_Delete(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_64_bit_position_reads_back_exactly),
        cmocka_unit_test(test_small_positions_stay_json_numbers),
        cmocka_unit_test(test_values_that_are_not_whole_64_bit_integers_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
