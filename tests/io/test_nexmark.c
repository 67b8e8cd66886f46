/*
 * tests/io/test_nexmark.c - the nexmark generator: row <-> event mapping
 * and row counts for any proportions, ids and times from the event id, the
 * same rows for any chunking (datagen_fill in pieces vs at once), columns
 * matched by name in any order and subset, and the config errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/arena.h"
#include "io/datagen.h"
#include "io/nexmark_gen.h"

#define WHERE "table bid, connector 0 (nexmark)"

static void test_nexmark_rows_and_events_agree_for_any_proportions(void **state)
{
    (void)state;
    const int64_t props[][3] = {{1, 3, 46}, {1, 1, 1}, {2, 5, 3}, {7, 1, 1}};
    for (size_t p = 0; p < sizeof(props) / sizeof(props[0]); p++) {
        NxConfig c;
        nx_config_default(&c);
        memcpy(c.prop, props[p], sizeof(c.prop));
        int64_t T = c.prop[0] + c.prop[1] + c.prop[2];
        for (int64_t n = 1; n <= 3 * T + 1; n++) {
            c.events = n;
            int64_t total = 0;
            for (int k = 0; k < 3; k++) {
                int64_t rows = nx_rows(&c, (NxKind)k);
                total += rows;
                /* every row's event is below n, of kind k; the next is not below n */
                for (int64_t r = 0; r < rows; r++) {
                    int64_t e = nx_event_of(&c, (NxKind)k, r), off = e % T;
                    assert_true(e < n);
                    int kind = off < c.prop[0] ? 0 : off < c.prop[0] + c.prop[1] ? 1 : 2;
                    assert_int_equal(kind, k);
                    if (r)
                        assert_true(nx_event_of(&c, (NxKind)k, r - 1) < e);
                }
                assert_true(nx_event_of(&c, (NxKind)k, rows) >= n);
            }
            assert_int_equal(total, n);
        }
    }
    NxConfig c;
    nx_config_default(&c);
    c.events = 0;
    assert_int_equal(nx_rows(&c, NX_BID), -1);
}

static void test_nexmark_ids_and_times_come_from_the_event_id(void **state)
{
    (void)state;
    NxConfig c;
    nx_config_default(&c);
    c.rate = 100;
    c.base_ms = 5000;
    NxGen *g = nx_gen_new(&c);
    assert_non_null(g);
    for (int64_t k = 0; k < 500; k++) {
        int64_t pe = nx_event_of(&c, NX_PERSON, k), ae = nx_event_of(&c, NX_AUCTION, k);
        assert_int_equal(nx_int(g, NXF_P_ID, pe), 1000 + k);
        assert_int_equal(nx_int(g, NXF_A_ID, ae), 1000 + k);
        assert_int_equal(nx_int(g, NXF_P_TIME, pe), 5000 + pe * 10);
        int64_t exp = nx_int(g, NXF_A_EXPIRES, ae), t = nx_int(g, NXF_A_TIME, ae);
        assert_true(exp > t && exp <= t + 2 * 16670);
        assert_true(nx_int(g, NXF_A_RESERVE, ae) > nx_int(g, NXF_A_INITIAL, ae));
        int64_t be = nx_event_of(&c, NX_BID, k);
        int64_t seller = nx_int(g, NXF_A_SELLER, ae), bidder = nx_int(g, NXF_B_BIDDER, be);
        assert_true(seller >= 1000 && seller <= 1000 + ae / 50 + 10);
        assert_true(bidder >= 1000 && bidder <= 1000 + be / 50 + 10);
        int64_t price = nx_int(g, NXF_B_PRICE, be);
        assert_true(price >= 100 && price <= 100000000);
    }
    nx_gen_free(g);
}

static Datagen *bid_gen(const char *json, int ncols, const char *const *names,
                        const SqlType *types)
{
    Err err = {0};
    cJSON *cfg = cJSON_Parse(json);
    assert_non_null(cfg);
    Datagen *g = nexmark_new(cfg, "bid", ncols, names, types, WHERE, &err);
    cJSON_Delete(cfg);
    if (!g)
        fail_msg("nexmark_new: %s", err.msg);
    return g;
}

static void test_nexmark_fill_is_the_same_for_any_chunking(void **state)
{
    (void)state;
    const char *names[] = {"extra", "URL", "date_time", "auction", "channel", "Price", "bidder"};
    SqlType types[7];
    for (int i = 0; i < 7; i++)
        types[i] = type_make(i == 2 ? TK_TIMESTAMP : (i == 0 || i == 1 || i == 4) ? TK_VARCHAR
                                                                                 : TK_BIGINT,
                             i == 0);
    Datagen *g = bid_gen("{\"events\": 5000, \"seed\": 3}", 7, names, types);
    int64_t rows = datagen_plan_limit(g, 0);
    assert_int_equal(rows, 5000 / 50 * 46);
    Arena *a = arena_new(0);
    Chunk *whole = chunk_new(a, 7, types, rows), *parts = chunk_new(a, 7, types, rows);
    datagen_fill(g, 0, 0, rows, whole, a);
    for (int64_t s = 0; s < rows; s += 777)
        datagen_fill(g, 0, s, s + 777 < rows ? 777 : rows - s, parts, a);
    assert_int_equal(whole->n, rows);
    assert_int_equal(parts->n, rows);
    for (int64_t r = 0; r < rows; r++) {
        assert_int_equal(whole->w[r], 1);
        assert_int_equal(whole->col[0].nul[r], 0);
        for (int c = 0; c < 7; c++) {
            const Vec *x = &whole->col[c], *y = &parts->col[c];
            if (x->s) {
                assert_int_equal(x->s[r].n, y->s[r].n);
                assert_memory_equal(x->s[r].p, y->s[r].p, x->s[r].n);
            } else {
                assert_int_equal(x->i[r], y->i[r]);
            }
        }
        /* the columns are the fields of the bid's event, whatever their order */
        int64_t e = (r / 46) * 50 + 4 + r % 46;
        assert_int_equal(whole->col[2].i[r], e * 1000 / 10000 * 1000);
    }
    /* another seed gives other bids */
    Datagen *h = bid_gen("{\"events\": 5000, \"seed\": 4}", 7, names, types);
    Chunk *other = chunk_new(a, 7, types, 100);
    datagen_fill(h, 0, 0, 100, other, a);
    int same = 0;
    for (int64_t r = 0; r < 100; r++)
        same += other->col[5].i[r] == whole->col[5].i[r];
    assert_true(same < 10);
    datagen_free(h);
    arena_free(a);
    datagen_free(g);
}

/* Columns left out by nexmark_skip_unread (a nullable string, a NOT NULL
   string, an integer) come out NULL, '' and 0; every other column is
   what a generator of all columns gives, in one piece or in two ranges
   (as two workers fill them). */
static void test_nexmark_skipped_columns_leave_the_others_unchanged(void **state)
{
    (void)state;
    const char *names[] = {"extra", "URL", "date_time", "auction", "channel", "Price", "bidder"};
    SqlType types[7];
    for (int i = 0; i < 7; i++)
        types[i] = type_make(i == 2 ? TK_TIMESTAMP : (i == 0 || i == 1 || i == 4) ? TK_VARCHAR
                                                                                 : TK_BIGINT,
                             i == 0);
    const bool read[7] = {false, false, true, true, true, true, false};
    Datagen *all = bid_gen("{\"events\": 5000, \"seed\": 3}", 7, names, types);
    int64_t rows = datagen_plan_limit(all, 0);
    Arena *a = arena_new(0);
    Chunk *want = chunk_new(a, 7, types, rows);
    datagen_fill(all, 0, 0, rows, want, a);
    for (int pieces = 1; pieces <= 2; pieces++) {
        Datagen *g = bid_gen("{\"events\": 5000, \"seed\": 3}", 7, names, types);
        nexmark_skip_unread(g, read);
        Chunk *got = chunk_new(a, 7, types, rows);
        int64_t half = pieces == 1 ? rows : rows / 2 + 13;
        datagen_fill(g, 0, 0, half, got, a);
        if (half < rows)
            datagen_fill(g, 0, half, rows - half, got, a);
        assert_int_equal(got->n, rows);
        for (int64_t r = 0; r < rows; r++) {
            assert_int_equal(got->w[r], 1);
            assert_int_equal(got->col[0].nul[r], 1); /* extra: NULL */
            assert_int_equal(got->col[1].s[r].n, 0); /* url (NOT NULL): '' */
            assert_int_equal(got->col[6].i[r], 0);   /* bidder (NOT NULL): 0 */
            for (int c = 2; c < 6; c++) {
                const Vec *x = &want->col[c], *y = &got->col[c];
                if (x->s) {
                    assert_int_equal(x->s[r].n, y->s[r].n);
                    assert_memory_equal(x->s[r].p, y->s[r].p, x->s[r].n);
                } else {
                    assert_int_equal(x->i[r], y->i[r]);
                }
            }
        }
        datagen_free(g);
    }
    arena_free(a);
    datagen_free(all);
}

static void test_nexmark_config_errors_name_the_key(void **state)
{
    (void)state;
    const char *names[] = {"auction"};
    SqlType types[] = {type_make(TK_BIGINT, false)};
    const struct {
        const char *json, *table, *want;
    } cases[] = {
        {"{\"event\": 5}", "bid", "unknown key \"event\""},
        {"{\"events\": 1.5}", "bid", "\"events\" must be an integer"},
        {"{\"bid_proportion\": 0}", "bid", "\"bid_proportion\" must be an integer in [1, 1000]"},
        {"{\"table\": 3}", "bid", "\"table\" must be"},
        {"{}", "bids", "this table is \"bids\""},
        {"{\"table\": \"person\"}", "bid", "column \"auction\" is not a field of a Nexmark person"},
        {"[]", "bid", "config must be an object"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Err err = {0};
        cJSON *cfg = cJSON_Parse(cases[i].json);
        Datagen *g = nexmark_new(cfg, cases[i].table, 1, names, types, WHERE, &err);
        cJSON_Delete(cfg);
        if (g)
            fail_msg("accepted %s", cases[i].json);
        if (!strstr(err.msg, cases[i].want) || !strstr(err.msg, WHERE))
            fail_msg("%s: got \"%s\", want \"%s\"", cases[i].json, err.msg, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nexmark_rows_and_events_agree_for_any_proportions),
        cmocka_unit_test(test_nexmark_ids_and_times_come_from_the_event_id),
        cmocka_unit_test(test_nexmark_fill_is_the_same_for_any_chunking),
        cmocka_unit_test(test_nexmark_skipped_columns_leave_the_others_unchanged),
        cmocka_unit_test(test_nexmark_config_errors_name_the_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
