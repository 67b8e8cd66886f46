/*
 * tests/io/test_datagen.c - the datagen transport: defaults, every strategy
 * per type, determinism across chunkings, the bank benchmark's
 * distributions, NULL rates and every config error path.
 */
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/arena.h"
#include "expr/text.h"
#include "io/datagen.h"

#define WHERE "table t, connector 0 (datagen)"

static SqlType ty(TypeKind k, bool nullable)
{
    return type_make(k, nullable);
}

static SqlType dec(int p, int s, bool nullable)
{
    SqlType t = type_make(TK_DECIMAL, nullable);
    t.prec = (uint8_t)p;
    t.scale = (uint8_t)s;
    return t;
}

static SqlType str(TypeKind k, int len, bool nullable)
{
    SqlType t = type_make(k, nullable);
    t.len = len;
    return t;
}

/* Generator for config text (NULL = no config); fails the test on error. */
static Datagen *gen(const char *json, int ncols, const char *const *names, const SqlType *types)
{
    Err err = {0};
    cJSON *cfg = json ? cJSON_Parse(json) : NULL;
    if (json)
        assert_non_null(cfg);
    Datagen *g = datagen_new(cfg, ncols, names, types, WHERE, &err);
    cJSON_Delete(cfg);
    if (!g)
        fail_msg("datagen_new: %s", err.msg);
    return g;
}

/* The error message for config text (the test fails if it is accepted). */
static void gen_err(const char *json, int ncols, const char *const *names, const SqlType *types,
                    char *msg, size_t size)
{
    Err err = {0};
    cJSON *cfg = cJSON_Parse(json);
    assert_non_null(cfg);
    Datagen *g = datagen_new(cfg, ncols, names, types, WHERE, &err);
    cJSON_Delete(cfg);
    if (g) {
        datagen_free(g);
        fail_msg("config accepted: %s", json);
    }
    assert_int_equal(err.code, SL_ECONFIG);
    snprintf(msg, size, "%s", err.msg);
}

static Chunk *rows(const Datagen *g, int plan, int64_t start, int64_t count, int ncols,
                   const SqlType *types, Arena *a)
{
    Chunk *c = chunk_new(a, ncols, types, count);
    datagen_fill(g, plan, start, count, c, a);
    assert_int_equal(c->n, count);
    return c;
}

static void expect_str(Str s, const char *want)
{
    if (s.n != strlen(want) || memcmp(s.p, want, s.n) != 0)
        fail_msg("got \"%.*s\", want \"%s\"", (int)s.n, s.p, want);
}

static bool same_value(const Vec *a, int64_t i, const Vec *b, int64_t j)
{
    if (vec_is_null(a, i) || vec_is_null(b, j))
        return vec_is_null(a, i) == vec_is_null(b, j);
    if (a->i)
        return a->i[i] == b->i[j];
    if (a->f)
        return memcmp(&a->f[i], &b->f[j], sizeof(double)) == 0;
    return a->s[i].n == b->s[j].n && memcmp(a->s[i].p, b->s[j].p, a->s[i].n) == 0;
}

/* ------------------------------------------------------------------ tests */

static void test_datagen_defaults_count_up_from_zero_in_every_type(void **state)
{
    const char *names[] = {"id", "name", "flag", "d", "t", "ts", "x", "amt", "r", "tiny"};
    SqlType types[] = {ty(TK_INT, false),  str(TK_VARCHAR, -1, false), ty(TK_BOOL, false),
                       ty(TK_DATE, false), ty(TK_TIME, false),         ty(TK_TIMESTAMP, false),
                       ty(TK_DOUBLE, true), dec(10, 2, false),          ty(TK_REAL, false),
                       ty(TK_TINYINT, false)};
    int nc = (int)ARRAY_LEN(types);
    Datagen *g = gen(NULL, nc, names, types);
    Arena *a = arena_new(0);
    assert_int_equal(datagen_nplans(g), 1);
    assert_int_equal(datagen_plan_limit(g, 0), -1);
    assert_true(datagen_plan_rate(g, 0) == 0);
    assert_int_equal(datagen_plan_chunk(g, 0), 10000);
    assert_int_equal(datagen_workers(g), 1);
    assert_true(datagen_seed(g) == 0);
    Chunk *c = rows(g, 0, 0, 300, nc, types, a);
    char buf[32];
    for (int64_t i = 0; i < 300; i++) {
        assert_int_equal(c->w[i], 1);
        assert_int_equal(c->col[0].i[i], i);
        snprintf(buf, sizeof(buf), "%lld", (long long)i);
        expect_str(c->col[1].s[i], buf);
        assert_int_equal(c->col[2].i[i], i % 2);
        assert_int_equal(c->col[3].i[i], i);
        assert_int_equal(c->col[4].i[i], i * 1000);
        assert_int_equal(c->col[5].i[i], i * 1000);
        assert_true(c->col[6].f[i] == (double)i);
        assert_int_equal(c->col[6].nul[i], 0);
        assert_int_equal(c->col[7].i[i], i * 100);
        assert_true(c->col[8].f[i] == (double)i);
        assert_int_equal(c->col[9].i[i], i % 127); /* (idx * scale) % TYPE_MAX */
    }
    arena_free(a);
    datagen_free(g);
}

static const char *mixed_cfg =
    "{\"seed\": 42, \"plan\": [{\"fields\": {"
    "\"a\": {\"strategy\": \"uniform\", \"range\": [-5, 1000]},"
    "\"b\": {\"strategy\": \"zipf\", \"range\": [1, 50], \"null_percentage\": 20},"
    "\"c\": {\"strategy\": \"zipf\", \"range\": [0, 100000000], \"e\": 1.5},"
    "\"d\": {\"strategy\": \"uniform\", \"range\": [0, 1]},"
    "\"e\": {\"strategy\": \"words\", \"null_percentage\": 50},"
    "\"f\": {\"strategy\": \"uniform\", \"values\": [\"x\", \"yy\", null, \"zzz\"]},"
    "\"g\": {\"strategy\": \"email\"},"
    "\"h\": {\"strategy\": \"uniform\"},"
    "\"i\": {\"strategy\": \"uniform\", \"range\": [\"2020-01-01T00:00:00Z\", \"2021-01-01T00:00:00Z\"]},"
    "\"j\": {\"strategy\": \"increment\", \"scale\": 7, \"range\": [3, 100]},"
    "\"k\": {\"strategy\": \"sentence\"},"
    "\"l\": {\"strategy\": \"zipf\", \"values\": [1.5, 2.5, 3.5]}"
    "}}]}";
static const char *mixed_names[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"};

static void mixed_types(SqlType *t)
{
    t[0] = ty(TK_INT, false);
    t[1] = ty(TK_BIGINT, true);
    t[2] = ty(TK_BIGINT, false);
    t[3] = ty(TK_DOUBLE, false);
    t[4] = str(TK_VARCHAR, -1, true);
    t[5] = str(TK_VARCHAR, -1, true);
    t[6] = str(TK_VARCHAR, -1, false);
    t[7] = ty(TK_BOOL, false);
    t[8] = ty(TK_TIMESTAMP, false);
    t[9] = dec(8, 3, false);
    t[10] = str(TK_CHAR, 30, false);
    t[11] = ty(TK_REAL, false);
}

static void test_datagen_rows_identical_for_any_chunking(void **state)
{
    SqlType types[12];
    mixed_types(types);
    Datagen *g = gen(mixed_cfg, 12, mixed_names, types);
    Arena *a = arena_new(0);
    const int64_t total = 3000, first = 1000000;
    Chunk *whole = rows(g, 0, first, total, 12, types, a);
    /* the same rows in uneven pieces, appended to one chunk */
    Chunk *pieces = chunk_new(a, 12, types, total);
    int64_t sizes[] = {1, 2, 3, 5, 8, 13, 100, 511, 512, 513, 1000};
    int64_t at = 0;
    for (int k = 0; at < total; k = (k + 1) % (int)ARRAY_LEN(sizes)) {
        int64_t m = SL_MIN(sizes[k], total - at);
        datagen_fill(g, 0, first + at, m, pieces, a);
        at += m;
    }
    assert_int_equal(pieces->n, total);
    /* and backwards, one row at a time, from another generator instance */
    Datagen *g2 = gen(mixed_cfg, 12, mixed_names, types);
    for (int64_t i = total - 1; i >= 0; i -= 97) {
        Chunk *one = rows(g2, 0, first + i, 1, 12, types, a);
        for (int c = 0; c < 12; c++)
            if (!same_value(&whole->col[c], i, &one->col[c], 0))
                fail_msg("row %lld column %d differs when generated alone", (long long)i, c);
    }
    for (int c = 0; c < 12; c++)
        for (int64_t i = 0; i < total; i++)
            if (!same_value(&whole->col[c], i, &pieces->col[c], i))
                fail_msg("row %lld column %d differs between chunkings", (long long)i, c);
    arena_free(a);
    datagen_free(g);
    datagen_free(g2);
}

static void test_datagen_seed_changes_random_columns_but_not_increments(void **state)
{
    const char *names[] = {"u", "n", "b"};
    SqlType types[] = {ty(TK_BIGINT, false), ty(TK_INT, false), ty(TK_BOOL, false)};
    const char *c1 = "{\"seed\": 1, \"plan\": [{\"fields\": {\"u\": {\"strategy\": \"uniform\"},"
                     "\"b\": {\"strategy\": \"uniform\"}}}]}";
    const char *c2 = "{\"seed\": \"18446744073709551615\", \"plan\": [{\"fields\": {\"u\": "
                     "{\"strategy\": \"uniform\"}, \"b\": {\"strategy\": \"uniform\"}}}]}";
    Datagen *g1 = gen(c1, 3, names, types), *g2 = gen(c2, 3, names, types);
    assert_true(datagen_seed(g2) == UINT64_MAX);
    Arena *a = arena_new(0);
    Chunk *x = rows(g1, 0, 0, 1000, 3, types, a), *y = rows(g2, 0, 0, 1000, 3, types, a);
    int diff_u = 0, diff_b = 0;
    for (int i = 0; i < 1000; i++) {
        diff_u += x->col[0].i[i] != y->col[0].i[i];
        diff_b += x->col[2].i[i] != y->col[2].i[i];
        assert_int_equal(x->col[1].i[i], y->col[1].i[i]);
    }
    assert_true(diff_u > 990);
    assert_true(diff_b > 400 && diff_b < 600);
    arena_free(a);
    datagen_free(g1);
    datagen_free(g2);
}

static const char *bank_cfg =
    "{\"plan\": [{\"limit\": 100000000, \"fields\": {"
    "\"from_account\": {\"strategy\": \"uniform\", \"range\": [1, 10]},"
    "\"to_account\": {\"strategy\": \"uniform\", \"range\": [1, 10]},"
    "\"amount\": {\"strategy\": \"zipf\", \"range\": [1, 1000]},"
    "\"ts\": {\"scale\": 1000}}}]}";

static void test_datagen_bank_config_has_the_expected_distributions(void **state)
{
    const char *names[] = {"from_account", "to_account", "amount", "ts"};
    SqlType types[] = {ty(TK_INT, false), ty(TK_INT, false), ty(TK_INT, false),
                       ty(TK_TIMESTAMP, false)};
    Datagen *g = gen(bank_cfg, 4, names, types);
    Arena *a = arena_new(0);
    const int64_t n = 200000;
    assert_int_equal(datagen_plan_limit(g, 0), 100000000);
    Chunk *c = rows(g, 0, 0, n, 4, types, a);
    int64_t from[11] = {0}, to[11] = {0}, amt[1001] = {0}, same = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t f = c->col[0].i[i], t = c->col[1].i[i], m = c->col[2].i[i];
        assert_true(f >= 1 && f <= 9); /* half-open [1, 10) */
        assert_true(t >= 1 && t <= 9);
        assert_true(m >= 1 && m <= 999);
        from[f]++;
        to[t]++;
        amt[m]++;
        same += f == t;
        assert_int_equal(c->col[3].i[i], i * 1000000); /* epoch + i seconds */
    }
    for (int k = 1; k <= 9; k++) {
        assert_true(fabs((double)from[k] / (double)n - 1.0 / 9) < 0.006);
        assert_true(fabs((double)to[k] / (double)n - 1.0 / 9) < 0.006);
    }
    assert_true(fabs((double)same / (double)n - 1.0 / 9) < 0.006); /* independent columns */
    /* zipf e=1 over 999 ranks: P(k) = 1/(k H_999), H_999 ~ 7.4849 */
    double h = 0;
    for (int k = 1; k <= 999; k++)
        h += 1.0 / k;
    for (int k = 1; k <= 4; k++)
        assert_true(fabs((double)amt[k] / (double)n - 1.0 / (k * h)) < 0.004);
    assert_true(amt[1] > amt[2] && amt[2] > amt[3] && amt[3] > amt[10] && amt[10] > amt[500]);
    Buf b = BUF_INIT;
    text_format(types[3], c->col[3].i[3661], 0, (Str){"", 0}, &b);
    assert_string_equal(buf_cstr(&b), "1970-01-01 01:01:01");
    buf_free(&b);
    arena_free(a);
    datagen_free(g);
}

static void test_datagen_increment_wraps_in_range_with_scale(void **state)
{
    const char *names[] = {"i", "n", "ts", "d", "s", "dd", "x"};
    SqlType types[] = {ty(TK_INT, false),       ty(TK_SMALLINT, false), ty(TK_TIMESTAMP, false),
                       dec(6, 2, false),        str(TK_VARCHAR, -1, false), ty(TK_DOUBLE, false),
                       ty(TK_DOUBLE, false)};
    const char *cfg =
        "{\"plan\": [{\"fields\": {"
        "\"i\": {\"range\": [10, 15], \"scale\": 2},"
        "\"n\": {\"range\": [0, 4], \"scale\": -1},"
        "\"ts\": {\"scale\": 1000, \"range\": [\"1970-01-01T00:00:00Z\", \"1970-01-01T00:00:02Z\"]},"
        "\"d\": {\"range\": [1.5, 3], \"scale\": 1},"
        "\"s\": {\"scale\": 5},"
        "\"dd\": {\"range\": [0.5, 2.5]},"
        "\"x\": {\"scale\": 0.25}"
        "}}]}";
    Datagen *g = gen(cfg, 7, names, types);
    Arena *a = arena_new(0);
    Chunk *c = rows(g, 0, 0, 10, 7, types, a);
    int64_t want_i[] = {10, 12, 14, 11, 13, 10, 12, 14, 11, 13};
    int64_t want_n[] = {0, 3, 2, 1, 0, 3, 2, 1, 0, 3};
    int64_t want_d[] = {150, 250, 200, 150, 250, 200, 150, 250, 200, 150}; /* 1.5 + (i mod 1.5) */
    double want_dd[] = {0.5, 1.5, 0.5, 1.5, 0.5, 1.5, 0.5, 1.5, 0.5, 1.5};
    char buf[16];
    for (int i = 0; i < 10; i++) {
        assert_int_equal(c->col[0].i[i], want_i[i]);
        assert_int_equal(c->col[1].i[i], want_n[i]);
        assert_int_equal(c->col[2].i[i], (i % 2) * 1000000);
        assert_int_equal(c->col[3].i[i], want_d[i]);
        snprintf(buf, sizeof(buf), "%d", i * 5);
        expect_str(c->col[4].s[i], buf);
        assert_true(c->col[5].f[i] == want_dd[i]);
        assert_true(c->col[6].f[i] == i * 0.25);
    }
    /* far rows: no overflow in idx * scale */
    Chunk *far = rows(g, 0, INT64_MAX / 2, 3, 7, types, a);
    for (int i = 0; i < 3; i++) {
        int64_t idx = INT64_MAX / 2 + i;
        assert_int_equal(far->col[0].i[i], 10 + (int64_t)(((__int128)idx * 2) % 5));
        assert_int_equal(far->col[2].i[i], (idx % 2) * 1000000);
    }
    arena_free(a);
    datagen_free(g);
}

static void test_datagen_temporal_ranges_accept_numbers_and_literals(void **state)
{
    const char *names[] = {"d", "t", "ts", "tz", "dn"};
    SqlType types[] = {ty(TK_DATE, false), ty(TK_TIME, false), ty(TK_TIMESTAMP, false),
                       ty(TK_TIMESTAMP, false), ty(TK_DATE, false)};
    const char *cfg =
        "{\"plan\": [{\"fields\": {"
        "\"d\": {\"range\": [\"2024-01-01\", \"2024-01-03\"]},"
        "\"t\": {\"range\": [\"12:00:00\", \"12:00:02\"], \"scale\": 1000},"
        "\"ts\": {\"range\": [\"2024-03-01 10:00:00\", \"2024-03-01 10:00:03\"], \"scale\": 1000},"
        "\"tz\": {\"range\": [\"2024-03-01T12:00:00+02:00\", \"2024-03-02T00:00:00Z\"], \"scale\": 60000},"
        "\"dn\": {\"range\": [19723, 19725]}"
        "}}]}";
    Datagen *g = gen(cfg, 5, names, types);
    Arena *a = arena_new(0);
    Chunk *c = rows(g, 0, 0, 4, 5, types, a);
    const char *want[4][4] = {
        {"2024-01-01", "12:00:00", "2024-03-01 10:00:00", "2024-03-01 10:00:00"},
        {"2024-01-02", "12:00:01", "2024-03-01 10:00:01", "2024-03-01 10:01:00"},
        {"2024-01-01", "12:00:00", "2024-03-01 10:00:02", "2024-03-01 10:02:00"},
        {"2024-01-02", "12:00:01", "2024-03-01 10:00:00", "2024-03-01 10:03:00"},
    };
    Buf b = BUF_INIT;
    for (int i = 0; i < 4; i++) {
        for (int col = 0; col < 4; col++) {
            buf_reset(&b);
            text_format_vec(&c->col[col], i, &b);
            assert_string_equal(buf_cstr(&b), want[i][col]);
        }
        assert_int_equal(c->col[4].i[i], 19723 + i % 2);
    }
    buf_free(&b);
    arena_free(a);
    datagen_free(g);
}

static void test_datagen_uniform_stays_in_range_for_every_type(void **state)
{
    const char *names[] = {"tiny", "big", "dec", "dbl", "real", "date", "time", "ts", "bool",
                           "sc", "s", "full"};
    SqlType types[] = {ty(TK_TINYINT, false), ty(TK_BIGINT, false),    dec(6, 2, false),
                       ty(TK_DOUBLE, false),  ty(TK_REAL, false),      ty(TK_DATE, false),
                       ty(TK_TIME, false),    ty(TK_TIMESTAMP, false), ty(TK_BOOL, false),
                       ty(TK_INT, false),     str(TK_VARCHAR, -1, false), ty(TK_DOUBLE, false)};
    const char *cfg =
        "{\"seed\": 7, \"plan\": [{\"fields\": {"
        "\"tiny\": {\"strategy\": \"uniform\"},"
        "\"big\": {\"strategy\": \"uniform\", \"range\": [-1000000000000, 1000000000000]},"
        "\"dec\": {\"strategy\": \"uniform\", \"range\": [1.5, \"2.5\"]},"
        "\"dbl\": {\"strategy\": \"uniform\", \"range\": [-1, 1]},"
        "\"real\": {\"strategy\": \"uniform\", \"range\": [0, 0.001]},"
        "\"date\": {\"strategy\": \"uniform\", \"range\": [\"2000-01-01\", \"2000-02-01\"]},"
        "\"time\": {\"strategy\": \"uniform\"},"
        "\"ts\": {\"strategy\": \"uniform\"},"
        "\"bool\": {\"strategy\": \"uniform\"},"
        "\"sc\": {\"strategy\": \"uniform\", \"range\": [1, 5], \"scale\": 100},"
        "\"s\": {\"strategy\": \"uniform\", \"range\": [2, 4]},"
        "\"full\": {\"strategy\": \"uniform\"}"
        "}}]}";
    int nc = (int)ARRAY_LEN(types);
    Datagen *g = gen(cfg, nc, names, types);
    Arena *a = arena_new(0);
    const int n = 50000;
    Chunk *c = rows(g, 0, 0, n, nc, types, a);
    int64_t tmin = 1000, tmax = -1000, trues = 0, sc[5] = {0}, lens[5] = {0};
    double dsum = 0;
    int64_t d0 = date_from_ymd(2000, 1, 1), d1 = date_from_ymd(2000, 2, 1);
    bool date_lo = false, date_hi = false;
    for (int i = 0; i < n; i++) {
        tmin = SL_MIN(tmin, c->col[0].i[i]);
        tmax = SL_MAX(tmax, c->col[0].i[i]);
        assert_true(llabs(c->col[1].i[i]) <= 1000000000000LL);
        assert_true(c->col[2].i[i] >= 150 && c->col[2].i[i] < 250);
        assert_true(c->col[3].f[i] >= -1 && c->col[3].f[i] < 1);
        dsum += c->col[3].f[i];
        assert_true(c->col[4].f[i] >= 0 && c->col[4].f[i] <= 0.001);
        assert_true(c->col[4].f[i] == (double)(float)c->col[4].f[i]);
        assert_true(c->col[5].i[i] >= d0 && c->col[5].i[i] < d1);
        date_lo |= c->col[5].i[i] == d0;
        date_hi |= c->col[5].i[i] == d1 - 1;
        assert_true(c->col[6].i[i] >= 0 && c->col[6].i[i] < 86400000000LL);
        assert_true(c->col[6].i[i] % 1000 == 0);
        assert_true(c->col[7].i[i] >= 0 && c->col[7].i[i] < 4102444800000000LL);
        trues += c->col[8].i[i];
        assert_true(c->col[9].i[i] % 100 == 0);
        sc[c->col[9].i[i] / 100]++;
        Str s = c->col[10].s[i];
        assert_true(s.n >= 2 && s.n < 4);
        lens[s.n]++;
        for (uint32_t k = 0; k < s.n; k++)
            assert_true(isalnum((unsigned char)s.p[k]));
        assert_true(isfinite(c->col[11].f[i]));
    }
    assert_int_equal(tmin, -128);
    assert_int_equal(tmax, 126); /* [MIN, MAX) */
    assert_true(fabs(dsum / n) < 0.02);
    assert_true(date_lo && date_hi);
    assert_true(trues > n * 0.48 && trues < n * 0.52);
    assert_int_equal(sc[0], 0);
    for (int k = 1; k <= 4; k++)
        assert_true(sc[k] > n / 4 - 800 && sc[k] < n / 4 + 800);
    assert_true(lens[2] > n / 2 - 800 && lens[3] > n / 2 - 800);
    arena_free(a);
    datagen_free(g);
}

static double harmonic(double n, double e)
{
    double h = 0;
    for (double k = 1; k <= n; k++)
        h += pow(k, -e);
    return h;
}

static void test_datagen_zipf_makes_rank_one_most_frequent(void **state)
{
    const char *names[] = {"small", "e2", "dbl", "huge", "date", "dec", "b", "s", "tm", "ts"};
    SqlType types[] = {ty(TK_INT, false),  ty(TK_INT, false),  ty(TK_DOUBLE, false),
                       ty(TK_BIGINT, false), ty(TK_DATE, false), dec(5, 1, false),
                       ty(TK_BOOL, false), str(TK_VARCHAR, -1, false), ty(TK_TIME, false),
                       ty(TK_TIMESTAMP, false)};
    const char *cfg =
        "{\"seed\": 3, \"plan\": [{\"fields\": {"
        "\"small\": {\"strategy\": \"zipf\", \"range\": [100, 200]},"
        "\"e2\": {\"strategy\": \"zipf\", \"range\": [0, 1000], \"e\": 2},"
        "\"dbl\": {\"strategy\": \"zipf\", \"range\": [-10, 10]},"
        "\"huge\": {\"strategy\": \"zipf\", \"range\": [0, 50000000]},"
        "\"date\": {\"strategy\": \"zipf\", \"range\": [\"2024-01-01\", \"2024-12-31\"]},"
        "\"dec\": {\"strategy\": \"zipf\", \"range\": [0.5, 10.5]},"
        "\"b\": {\"strategy\": \"zipf\"},"
        "\"s\": {\"strategy\": \"zipf\", \"range\": [1, 6]},"
        "\"tm\": {\"strategy\": \"zipf\", \"range\": [\"00:00:00\", \"00:00:10\"]},"
        "\"ts\": {\"strategy\": \"zipf\", \"range\": [\"2024-01-01T00:00:00Z\", 1704067300000]}"
        "}}]}";
    int nc = (int)ARRAY_LEN(types);
    Datagen *g = gen(cfg, nc, names, types);
    Arena *a = arena_new(0);
    const int n = 200000;
    Chunk *c = rows(g, 0, 0, n, nc, types, a);
    int64_t small[100] = {0}, e2[3] = {0}, huge[3] = {0}, dbl0 = 0, date0 = 0, dec[11] = {0};
    int64_t falses = 0, slen[6] = {0}, tm0 = 0, ts0 = 0;
    int64_t jan1 = date_from_ymd(2024, 1, 1);
    for (int i = 0; i < n; i++) {
        int64_t v = c->col[0].i[i];
        assert_true(v >= 100 && v < 200);
        small[v - 100]++;
        v = c->col[1].i[i];
        assert_true(v >= 0 && v < 1000);
        if (v < 3)
            e2[v]++;
        double d = c->col[2].f[i];
        assert_true(d >= -10 && d < 10 && d == floor(d));
        dbl0 += d == -10;
        v = c->col[3].i[i];
        assert_true(v >= 0 && v < 50000000);
        if (v < 3)
            huge[v]++;
        date0 += c->col[4].i[i] == jan1;
        v = c->col[5].i[i];
        assert_true(v >= 5 && v <= 95 && (v - 5) % 10 == 0); /* 0.5, 1.5, ... 9.5 */
        dec[(v - 5) / 10]++;
        falses += c->col[6].i[i] == 0;
        assert_true(c->col[7].s[i].n >= 1 && c->col[7].s[i].n <= 5);
        slen[c->col[7].s[i].n]++;
        v = c->col[8].i[i];
        assert_true(v >= 0 && v < 10000000 && v % 1000 == 0); /* whole ms in 10 s */
        tm0 += v == 0;
        v = c->col[9].i[i] - 1704067200000000LL; /* 2024-01-01: 100 s, 1 ms steps */
        assert_true(v >= 0 && v < 100000000 && v % 1000 == 0);
        ts0 += v == 0;
    }
    assert_true(fabs((double)tm0 / n - 1.0 / harmonic(10000, 1)) < 0.005);
    assert_true(fabs((double)ts0 / n - 1.0 / harmonic(100000, 1)) < 0.005);
    double h100 = harmonic(100, 1), h1000e2 = harmonic(1000, 2);
    for (int k = 0; k < 5; k++)
        assert_true(fabs((double)small[k] / n - 1.0 / ((k + 1) * h100)) < 0.005);
    for (int k = 0; k < 99; k++)
        assert_true(small[k] + 300 > small[k + 1]); /* non-increasing, up to noise */
    assert_true(fabs((double)e2[0] / n - 1.0 / h1000e2) < 0.005);
    assert_true(fabs((double)e2[1] / n - 1.0 / (4 * h1000e2)) < 0.005);
    /* rejection-inversion for n = 5e7: H_n ~ ln n + 0.5772 */
    double hn = log(5e7) + 0.5772156649;
    assert_true(fabs((double)huge[0] / n - 1.0 / hn) < 0.004);
    assert_true(fabs((double)huge[1] / n - 1.0 / (2 * hn)) < 0.004);
    assert_true(fabs((double)huge[2] / n - 1.0 / (3 * hn)) < 0.004);
    assert_true(fabs((double)dbl0 / n - 1.0 / harmonic(20, 1)) < 0.005);
    assert_true(fabs((double)date0 / n - 1.0 / harmonic(365, 1)) < 0.005);
    assert_true(dec[0] > dec[1] && dec[1] > dec[2] && dec[2] > dec[9]);
    assert_true(fabs((double)falses / n - 1.0 / 1.5) < 0.005); /* ranks 1, 2: 1 : 1/2 */
    assert_true(slen[1] > slen[2] && slen[2] > slen[3] && slen[4] > slen[5]);
    arena_free(a);
    datagen_free(g);
}

static void test_datagen_values_override_the_range(void **state)
{
    const char *names[] = {"i", "u", "z", "s", "ts", "d", "b", "c"};
    SqlType types[] = {ty(TK_INT, true),         ty(TK_INT, false),       ty(TK_INT, false),
                       str(TK_VARCHAR, 10, true), ty(TK_TIMESTAMP, false), dec(10, 2, false),
                       ty(TK_BOOL, false),       str(TK_CHAR, 4, false)};
    const char *cfg =
        "{\"plan\": [{\"fields\": {"
        "\"i\": {\"values\": [5, null, \"7\"], \"range\": [0, 2]},"
        "\"u\": {\"strategy\": \"uniform\", \"values\": [2, 4, 8]},"
        "\"z\": {\"strategy\": \"zipf\", \"values\": [30, 20, 10]},"
        "\"s\": {\"strategy\": \"uniform\", \"values\": [\"a\", \"b,c\", null]},"
        "\"ts\": {\"values\": [1000, \"2024-01-01 00:00:00\", \"2024-01-01T01:00:00+01:00\"]},"
        "\"d\": {\"values\": [1.25, \"-0.5\", 3]},"
        "\"b\": {\"strategy\": \"uniform\", \"values\": [true]},"
        "\"c\": {\"values\": [\"ab\"]}"
        "}}]}";
    int nc = (int)ARRAY_LEN(types);
    Datagen *g = gen(cfg, nc, names, types);
    Arena *a = arena_new(0);
    const int n = 30000;
    Chunk *c = rows(g, 0, 0, n, nc, types, a);
    int64_t u[9] = {0}, z30 = 0, z20 = 0, z10 = 0, snull = 0;
    int64_t y2024 = date_from_ymd(2024, 1, 1) * 86400000000LL;
    for (int i = 0; i < n; i++) {
        switch (i % 3) {
        case 0: assert_int_equal(c->col[0].nul[i], 0); assert_int_equal(c->col[0].i[i], 5); break;
        case 1: assert_int_equal(c->col[0].nul[i], 1); break;
        case 2: assert_int_equal(c->col[0].nul[i], 0); assert_int_equal(c->col[0].i[i], 7); break;
        }
        int64_t v = c->col[1].i[i];
        assert_true(v == 2 || v == 4 || v == 8);
        u[v]++;
        v = c->col[2].i[i];
        z30 += v == 30;
        z20 += v == 20;
        z10 += v == 10;
        if (c->col[3].nul[i]) {
            snull++;
        } else {
            Str s = c->col[3].s[i];
            assert_true((s.n == 1 && s.p[0] == 'a') || (s.n == 3 && memcmp(s.p, "b,c", 3) == 0));
        }
        int64_t want_ts[] = {1000000, y2024, y2024};
        assert_int_equal(c->col[4].i[i], want_ts[i % 3]);
        int64_t want_d[] = {125, -50, 300};
        assert_int_equal(c->col[5].i[i], want_d[i % 3]);
        assert_int_equal(c->col[6].i[i], 1);
        expect_str(c->col[7].s[i], "ab  ");
    }
    for (int k = 2; k <= 8; k *= 2)
        assert_true(u[k] > n / 3 - 600 && u[k] < n / 3 + 600);
    assert_true(z30 + z20 + z10 == n);
    assert_true(fabs((double)z30 / n - 1 / 1.8333333) < 0.01);
    assert_true(z30 > z20 && z20 > z10);
    assert_true(snull > n / 3 - 600 && snull < n / 3 + 600);
    arena_free(a);
    datagen_free(g);
}

static bool lower_word(const char *p, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!(p[k] >= 'a' && p[k] <= 'z'))
            return false;
    return n > 0;
}

static void test_datagen_string_strategies_produce_words_names_and_emails(void **state)
{
    const char *names[] = {"w", "ws", "sen", "name", "mail", "short", "fixed", "wr"};
    SqlType types[] = {str(TK_VARCHAR, -1, false), str(TK_VARCHAR, -1, false),
                       str(TK_VARCHAR, -1, false), str(TK_VARCHAR, -1, false),
                       str(TK_VARCHAR, -1, false), str(TK_VARCHAR, 5, false),
                       str(TK_CHAR, 12, false),    str(TK_VARCHAR, -1, false)};
    const char *cfg =
        "{\"seed\": 11, \"plan\": [{\"fields\": {"
        "\"w\": {\"strategy\": \"word\"},"
        "\"ws\": {\"strategy\": \"words\"},"
        "\"sen\": {\"strategy\": \"sentence\"},"
        "\"name\": {\"strategy\": \"name\"},"
        "\"mail\": {\"strategy\": \"email\"},"
        "\"short\": {\"strategy\": \"sentence\"},"
        "\"fixed\": {\"strategy\": \"name\"},"
        "\"wr\": {\"strategy\": \"words\", \"range\": [2, 3]}"
        "}}]}";
    int nc = (int)ARRAY_LEN(types);
    Datagen *g = gen(cfg, nc, names, types);
    Arena *a = arena_new(0);
    const int n = 5000;
    Chunk *c = rows(g, 0, 0, n, nc, types, a);
    int wcount[6] = {0};
    int distinct_first = 0;
    for (int i = 0; i < n; i++) {
        Str w = c->col[0].s[i];
        assert_true(lower_word(w.p, w.n));
        Str ws = c->col[1].s[i];
        int words = 1;
        for (uint32_t k = 0; k < ws.n; k++)
            words += ws.p[k] == ' ';
        assert_true(words >= 1 && words <= 4);
        wcount[words]++;
        Str sen = c->col[2].s[i];
        assert_true(sen.n >= 2 && sen.p[0] >= 'A' && sen.p[0] <= 'Z' && sen.p[sen.n - 1] == '.');
        words = 1;
        for (uint32_t k = 0; k < sen.n; k++)
            words += sen.p[k] == ' ';
        assert_true(words >= 4 && words < 12);
        Str nm = c->col[3].s[i];
        const char *sp = memchr(nm.p, ' ', nm.n);
        assert_non_null(sp);
        assert_true(nm.p[0] >= 'A' && nm.p[0] <= 'Z' && sp[1] >= 'A' && sp[1] <= 'Z');
        Str em = c->col[4].s[i];
        const char *at = memchr(em.p, '@', em.n);
        assert_non_null(at);
        assert_non_null(memchr(em.p, '.', (size_t)(at - em.p)));
        assert_true(memmem(at, (size_t)(em.p + em.n - at), "example.", 8) != NULL);
        assert_true(c->col[5].s[i].n <= 5);
        assert_int_equal(c->col[6].s[i].n, 12);
        Str wr = c->col[7].s[i];
        assert_non_null(memchr(wr.p, ' ', wr.n));
        if (i > 0 && (c->col[3].s[i].n != c->col[3].s[i - 1].n ||
                      memcmp(c->col[3].s[i].p, c->col[3].s[i - 1].p, c->col[3].s[i].n)))
            distinct_first++;
    }
    for (int k = 1; k <= 4; k++)
        assert_true(wcount[k] > n / 4 - 250 && wcount[k] < n / 4 + 250);
    assert_true(distinct_first > n - 50);
    arena_free(a);
    datagen_free(g);
}

static void test_datagen_null_percentage_gives_roughly_that_rate(void **state)
{
    const char *names[] = {"a", "b", "c", "d", "s", "nn"};
    SqlType types[] = {ty(TK_INT, true), ty(TK_DOUBLE, true), ty(TK_INT, true),
                       ty(TK_INT, true), str(TK_VARCHAR, -1, true), ty(TK_INT, false)};
    const char *cfg =
        "{\"plan\": [{\"fields\": {"
        "\"a\": {\"null_percentage\": 30},"
        "\"b\": {\"strategy\": \"uniform\", \"range\": [0, 1], \"null_percentage\": 0.5},"
        "\"c\": {\"null_percentage\": 100},"
        "\"d\": {\"null_percentage\": 0},"
        "\"s\": {\"strategy\": \"name\", \"null_percentage\": 30},"
        "\"nn\": {\"null_percentage\": 0}"
        "}}]}";
    Datagen *g = gen(cfg, 6, names, types);
    Arena *a = arena_new(0);
    const int n = 100000;
    Chunk *c = rows(g, 0, 0, n, 6, types, a);
    int64_t na = 0, nb = 0, nc = 0, nd = 0, ns = 0, both = 0;
    for (int i = 0; i < n; i++) {
        na += c->col[0].nul[i];
        nb += c->col[1].nul[i];
        nc += c->col[2].nul[i];
        nd += c->col[3].nul[i];
        ns += c->col[4].nul[i];
        both += c->col[0].nul[i] & c->col[4].nul[i];
        if (!c->col[0].nul[i])
            assert_int_equal(c->col[0].i[i], i);
    }
    assert_true(fabs((double)na / n - 0.30) < 0.01);
    assert_true(fabs((double)nb / n - 0.005) < 0.002);
    assert_int_equal(nc, n);
    assert_int_equal(nd, 0);
    assert_true(fabs((double)ns / n - 0.30) < 0.01);
    assert_true(fabs((double)both / n - 0.09) < 0.01); /* independent per column */
    assert_null(c->col[5].nul);
    arena_free(a);
    datagen_free(g);
}

static void test_datagen_plans_have_their_own_limits_rates_and_streams(void **state)
{
    const char *names[] = {"id", "u"};
    SqlType types[] = {ty(TK_BIGINT, false), ty(TK_BIGINT, false)};
    const char *cfg =
        "{\"workers\": 3, \"seed\": 9, \"plan\": ["
        "{\"limit\": 5, \"rate\": 100, \"fields\": {\"U\": {\"strategy\": \"uniform\"}}},"
        "{\"limit\": 0, \"rate\": 50000, \"worker_chunk_size\": 77,"
        " \"fields\": {\"u\": {\"strategy\": \"uniform\"}}},"
        "{\"rate\": 0.5},"
        "{}]}";
    Datagen *g = gen(cfg, 2, names, types);
    assert_int_equal(datagen_nplans(g), 4);
    assert_int_equal(datagen_workers(g), 3);
    assert_int_equal(datagen_plan_limit(g, 0), 5);
    assert_int_equal(datagen_plan_limit(g, 1), 0);
    assert_int_equal(datagen_plan_limit(g, 2), -1);
    assert_true(datagen_plan_rate(g, 0) == 100);
    assert_true(datagen_plan_rate(g, 3) == 0);
    assert_int_equal(datagen_plan_chunk(g, 0), 100);
    assert_int_equal(datagen_plan_chunk(g, 1), 77);
    assert_int_equal(datagen_plan_chunk(g, 2), 1);
    assert_int_equal(datagen_plan_chunk(g, 3), 10000);
    Arena *a = arena_new(0);
    Chunk *p0 = rows(g, 0, 0, 100, 2, types, a), *p1 = rows(g, 1, 0, 100, 2, types, a);
    int diff = 0;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(p0->col[0].i[i], i); /* row indices restart in each plan */
        assert_int_equal(p1->col[0].i[i], i);
        diff += p0->col[1].i[i] != p1->col[1].i[i];
    }
    assert_int_equal(diff, 100);
    arena_free(a);
    datagen_free(g);
}

static void test_datagen_fill_appends_after_existing_rows(void **state)
{
    const char *names[] = {"id", "s"};
    SqlType types[] = {ty(TK_INT, false), str(TK_VARCHAR, -1, true)};
    Datagen *g = gen("{\"plan\": [{\"fields\": {\"s\": {\"strategy\": \"word\"}}}]}", 2, names,
                     types);
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 2, types, 10);
    datagen_fill(g, 0, 100, 4, c, a);
    datagen_fill(g, 0, 0, 0, c, a);
    datagen_fill(g, 0, 200, 6, c, a);
    assert_int_equal(c->n, 10);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(c->col[0].i[i], i < 4 ? 100 + i : 196 + i);
        assert_int_equal(c->w[i], 1);
        assert_int_equal(c->col[1].nul[i], 0);
        assert_true(c->col[1].s[i].n > 0);
    }
    arena_free(a);
    datagen_free(g);
}

typedef struct ErrCase {
    const char *cfg;
    const char *want; /* substring of the message, besides WHERE */
} ErrCase;

static void test_datagen_config_errors_name_the_key_and_where(void **state)
{
    const char *names[] = {"id", "amount", "name", "flag", "ts", "tiny", "x"};
    SqlType types[] = {ty(TK_INT, false),    ty(TK_INT, true),        str(TK_VARCHAR, -1, true),
                       ty(TK_BOOL, false),   ty(TK_TIMESTAMP, false), ty(TK_TINYINT, false),
                       ty(TK_DOUBLE, false)};
    char msg[1024];
    gen_err("{\"plan\": [{\"limt\": 5}]}", 7, names, types, msg, sizeof(msg));
    assert_string_equal(msg, "unknown key \"limt\" in plan 0 of " WHERE);

#define F(body) "{\"plan\": [{\"fields\": {" body "}}]}"
    static const ErrCase cases[] = {
        {"{\"seeds\": 1}", "unknown key \"seeds\""},
        {"{\"seed\": 1, \"seed\": 2}", "duplicate key \"seed\""},
        {"{\"transaction_size\": 10}", "unsupported key \"transaction_size\""},
        {"[1, 2]", "config must be an object"},
        {"{\"seed\": -1}", "\"seed\""},
        {"{\"seed\": 1.5}", "\"seed\""},
        {"{\"seed\": \"12x\"}", "\"seed\""},
        {"{\"workers\": 0}", "\"workers\""},
        {"{\"workers\": \"two\"}", "\"workers\""},
        {"{\"plan\": {}}", "\"plan\""},
        {"{\"plan\": []}", "\"plan\""},
        {"{\"plan\": [5]}", "plan 0 must be an object"},
        {"{\"plan\": [{}, {\"limit\": -1}]}", "\"limit\" must be a non-negative integer, got -1 in plan 1"},
        {"{\"plan\": [{\"limit\": 2.5}]}", "\"limit\""},
        {"{\"plan\": [{\"rate\": 0}]}", "\"rate\""},
        {"{\"plan\": [{\"rate\": -5}]}", "\"rate\""},
        {"{\"plan\": [{\"rate\": \"fast\"}]}", "\"rate\""},
        {"{\"plan\": [{\"worker_chunk_size\": 0}]}", "\"worker_chunk_size\""},
        {"{\"plan\": [{\"fields\": []}]}", "\"fields\""},
        {F("\"nope\": {}"), "\"fields\" names unknown column \"nope\""},
        {F("\"id\": {}, \"ID\": {}"), "\"fields\" sets column \"id\" twice"},
        {F("\"id\": 5"), "field settings must be an object"},
        {F("\"id\": {\"rnge\": [1, 2]}"), "unknown key \"rnge\" in field \"id\" of plan 0"},
        {F("\"id\": {\"strategy\": \"gaussian\"}"), "unknown \"strategy\" \"gaussian\""},
        {F("\"id\": {\"strategy\": 5}"), "\"strategy\""},
        {F("\"id\": {\"strategy\": \"word\"}"), "\"strategy\" \"word\" is not valid for INT column \"id\""},
        {F("\"id\": {\"range\": 5}"), "\"range\" must be an array of two bounds"},
        {F("\"id\": {\"range\": [1, 2, 3]}"), "\"range\" must be an array of two bounds"},
        {F("\"id\": {\"range\": [5, 5]}"), "empty \"range\" [5,5]"},
        {F("\"id\": {\"range\": [9, 2]}"), "empty \"range\""},
        {F("\"id\": {\"range\": [\"x\", 2]}"), "bad \"range\" bound \"x\""},
        {F("\"id\": {\"range\": [1.5, 2]}"), "bad \"range\" bound 1.5"},
        {F("\"tiny\": {\"range\": [0, 1000]}"), "\"range\" [0,1000] falls outside TINYINT"},
        {F("\"id\": {\"strategy\": \"uniform\", \"range\": [0, 10], \"scale\": 1000000000}"),
         "times \"scale\""},
        {F("\"x\": {\"strategy\": \"uniform\", \"range\": [0, 10], \"scale\": 1e308}"), "times \"scale\""},
        {F("\"x\": {\"range\": [0, \"inf\"]}"), "\"range\""},
        {F("\"ts\": {\"range\": [\"2024-13-01\", \"2025-01-01\"]}"), "bad \"range\" bound \"2024-13-01\""},
        {F("\"ts\": {\"range\": [\"2024-01-01\", \"2023-01-01\"]}"), "empty \"range\""},
        {F("\"flag\": {\"range\": [0, 1]}"), "\"range\" is not supported for BOOLEAN"},
        {F("\"name\": {\"strategy\": \"words\", \"range\": [-1, 3]}"), "\"range\""},
        {F("\"id\": {\"scale\": 1.5}"), "\"scale\" must be an integer"},
        {F("\"id\": {\"scale\": \"2\"}"), "\"scale\""},
        {F("\"id\": {\"e\": -1}"), "\"e\""},
        {F("\"id\": {\"null_percentage\": 10}"), "\"null_percentage\" is 10 but column \"id\" is NOT NULL"},
        {F("\"amount\": {\"null_percentage\": 150}"), "\"null_percentage\" must be a number in [0, 100]"},
        {F("\"amount\": {\"null_percentage\": \"5\"}"), "\"null_percentage\""},
        {F("\"id\": {\"values\": []}"), "\"values\" must be a non-empty array"},
        {F("\"id\": {\"values\": 3}"), "\"values\" must be a non-empty array"},
        {F("\"id\": {\"values\": [1, \"abc\"]}"), "bad \"values\"[1] \"abc\""},
        {F("\"id\": {\"values\": [1, null]}"), "\"values\"[1] is null but column \"id\" is NOT NULL"},
        {F("\"tiny\": {\"values\": [1000]}"), "\"values\"[0] 1000 is out of range for TINYINT"},
        {F("\"name\": {\"values\": [1]}"), "bad \"values\"[0] 1: expected a string"},
        {F("\"flag\": {\"values\": [\"maybe\"]}"), "bad \"values\"[0] \"maybe\""},
        {F("\"name\": {\"strategy\": \"word\", \"values\": [\"a\"]}"), "\"values\" cannot be used with \"strategy\" \"word\""},
        {F("\"id\": {\"values\": [{}]}"), "bad \"values\"[0]"},
    };
#undef F
    for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
        gen_err(cases[k].cfg, 7, names, types, msg, sizeof(msg));
        if (!strstr(msg, cases[k].want) || !strstr(msg, WHERE))
            fail_msg("config %s\n  gave: %s\n  want: ... %s ... %s", cases[k].cfg, msg,
                     cases[k].want, WHERE);
    }
    /* where defaults to "datagen"; no config object at all is fine */
    Err err = {0};
    cJSON *cfg = cJSON_Parse("{\"bad\": 1}");
    assert_null(datagen_new(cfg, 7, names, types, NULL, &err));
    assert_string_equal(err.msg, "unknown key \"bad\" in datagen");
    cJSON_Delete(cfg);
    cfg = cJSON_Parse("null");
    Datagen *g = datagen_new(cfg, 7, names, types, WHERE, NULL);
    assert_non_null(g);
    datagen_free(g);
    cJSON_Delete(cfg);
}

static void test_datagen_field_names_match_case_insensitively(void **state)
{
    const char *names[] = {"Amount"};
    SqlType types[] = {ty(TK_INT, false)};
    Datagen *g = gen("{\"plan\": [{\"fields\": {\"amount\": {\"values\": [42]}}}]}", 1, names,
                     types);
    Arena *a = arena_new(0);
    Chunk *c = rows(g, 0, 0, 3, 1, types, a);
    assert_int_equal(c->col[0].i[2], 42);
    arena_free(a);
    datagen_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_datagen_defaults_count_up_from_zero_in_every_type),
        cmocka_unit_test(test_datagen_rows_identical_for_any_chunking),
        cmocka_unit_test(test_datagen_seed_changes_random_columns_but_not_increments),
        cmocka_unit_test(test_datagen_bank_config_has_the_expected_distributions),
        cmocka_unit_test(test_datagen_increment_wraps_in_range_with_scale),
        cmocka_unit_test(test_datagen_temporal_ranges_accept_numbers_and_literals),
        cmocka_unit_test(test_datagen_uniform_stays_in_range_for_every_type),
        cmocka_unit_test(test_datagen_zipf_makes_rank_one_most_frequent),
        cmocka_unit_test(test_datagen_values_override_the_range),
        cmocka_unit_test(test_datagen_string_strategies_produce_words_names_and_emails),
        cmocka_unit_test(test_datagen_null_percentage_gives_roughly_that_rate),
        cmocka_unit_test(test_datagen_plans_have_their_own_limits_rates_and_streams),
        cmocka_unit_test(test_datagen_fill_appends_after_existing_rows),
        cmocka_unit_test(test_datagen_config_errors_name_the_key_and_where),
        cmocka_unit_test(test_datagen_field_names_match_case_insensitively),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
