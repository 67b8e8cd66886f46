/*
 * tests/zset/test_key.c - the key encoding sorts like SQL and round-trips.
 * Values go into one-row-per-value chunks, are encoded with key_encode and
 * compared with memcmp against the SQL order of the values, then decoded
 * back with key_decode / key_skip.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/arena.h"
#include "base/buf.h"
#include "zset/key.h"

static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* memcmp order, a proper prefix first. */
static int enc_cmp(const Buf *a, const Buf *b)
{
    size_t m = a->n < b->n ? a->n : b->n;
    int d = m ? memcmp(a->p, b->p, m) : 0;
    if (d)
        return d < 0 ? -1 : 1;
    return (a->n > b->n) - (a->n < b->n);
}

static int sgn(int64_t x) { return (x > 0) - (x < 0); }

/* Encoding of row r of the one-column chunk c into a fresh buffer. */
static Buf enc_row(const Chunk *c, int64_t r)
{
    Buf b = BUF_INIT;
    key_encode_row(c, r, &b);
    return b;
}

/* Assert that rows 0..n) of c encode in strictly increasing order, except
   that rows marked in same[] (same[i]: row i equals row i-1) encode equally. */
static void assert_rows_ascend(const Chunk *c, const bool *same)
{
    for (int64_t r = 1; r < c->n; r++) {
        Buf a = enc_row(c, r - 1), b = enc_row(c, r);
        int want = same && same[r] ? 0 : -1;
        if (enc_cmp(&a, &b) != want)
            fail_msg("rows %lld and %lld: memcmp %d, want %d", (long long)r - 1, (long long)r,
                     enc_cmp(&a, &b), want);
        buf_free(&a);
        buf_free(&b);
    }
}

static const TypeKind int_kinds[] = {TK_BOOL,    TK_TINYINT, TK_SMALLINT, TK_INT,
                                     TK_BIGINT,  TK_DECIMAL, TK_DATE,     TK_TIME,
                                     TK_TIMESTAMP};

static void int_range(TypeKind k, int64_t *lo, int64_t *hi)
{
    type_int_range(k == TK_DATE ? TK_INT : k, lo, hi);
}

static void test_key_order_matches_sql_order_for_ints(void **state)
{
    Arena *a = arena_new(0);
    for (size_t t = 0; t < ARRAY_LEN(int_kinds); t++) {
        TypeKind k = int_kinds[t];
        int64_t lo, hi;
        int_range(k, &lo, &hi);
        int64_t cand[] = {lo, lo + 1, -1000, -129, -128, -1, 0, 1, 127, 128, 255, 256, 1000, hi - 1, hi};
        for (int nullable = 0; nullable < 2; nullable++) {
            SqlType ty = type_make(k, nullable);
            Chunk *c = chunk_new(a, 1, &ty, 32);
            if (nullable)
                c->col[0].nul[c->n++] = 1, c->col[0].i[0] = 0;
            int64_t last = 0;
            bool any = false;
            for (size_t i = 0; i < ARRAY_LEN(cand); i++) {
                int64_t v = cand[i];
                if (v < lo || v > hi || (any && v <= last))
                    continue;
                c->col[0].i[c->n++] = v;
                last = v;
                any = true;
            }
            assert_rows_ascend(c, NULL);
        }
        /* random pairs */
        SqlType ty = type_make(k, false);
        Chunk *c = chunk_new(a, 1, &ty, 2);
        c->n = 2;
        for (int i = 0; i < 2000; i++) {
            uint64_t span = (uint64_t)hi - (uint64_t)lo;
            int64_t x = (int64_t)((uint64_t)lo + (span == UINT64_MAX ? rnd() : rnd() % (span + 1)));
            int64_t y = (int64_t)((uint64_t)lo + (span == UINT64_MAX ? rnd() : rnd() % (span + 1)));
            c->col[0].i[0] = x;
            c->col[0].i[1] = y;
            Buf ex = enc_row(c, 0), ey = enc_row(c, 1);
            assert_int_equal(enc_cmp(&ex, &ey), sgn((x > y) - (x < y)));
            buf_free(&ex);
            buf_free(&ey);
        }
    }
    arena_free(a);
}

static void test_key_order_matches_sql_order_for_doubles(void **state)
{
    double nan_neg = -NAN, nan_payload;
    uint64_t bits = 0x7ff0000000000123ull;
    memcpy(&nan_payload, &bits, 8);
    const double vals[] = {-INFINITY, -1e300, -2.5, -1, -1e-300, -4.9e-324, -0.0, 0.0, 4.9e-324,
                           1e-300, 1, 2.5, 1e300, INFINITY, NAN, nan_neg, nan_payload};
    const bool same[] = {[7] = true, [15] = true, [16] = true};
    Arena *a = arena_new(0);
    for (int nullable = 0; nullable < 2; nullable++) {
        SqlType ty = type_make(TK_DOUBLE, nullable);
        Chunk *c = chunk_new(a, 1, &ty, 32);
        bool s[32] = {0};
        if (nullable)
            c->col[0].nul[c->n] = 1, c->col[0].f[c->n++] = 0;
        for (size_t i = 0; i < ARRAY_LEN(vals); i++) {
            s[c->n] = i < ARRAY_LEN(same) && same[i];
            c->col[0].f[c->n++] = vals[i];
        }
        assert_rows_ascend(c, s);
    }
    arena_free(a);
}

static void test_key_order_matches_sql_order_for_reals(void **state)
{
    /* values are rounded to float first: 1 + 1e-12 equals 1 as a REAL */
    const double vals[] = {-INFINITY, -3.4e38, -1, -1e-40, -0.0, 0.0, 1e-40, 1, 1 + 1e-12, 1.5,
                           3.4e38, 1e39, INFINITY, NAN, -NAN};
    const bool same[] = {[5] = true, [8] = true, [12] = true, [14] = true};
    Arena *a = arena_new(0);
    for (int nullable = 0; nullable < 2; nullable++) {
        SqlType ty = type_make(TK_REAL, nullable);
        Chunk *c = chunk_new(a, 1, &ty, 32);
        bool s[32] = {0};
        if (nullable)
            c->col[0].nul[c->n] = 1, c->col[0].f[c->n++] = 0;
        for (size_t i = 0; i < ARRAY_LEN(vals); i++) {
            s[c->n] = i < ARRAY_LEN(same) && same[i];
            c->col[0].f[c->n++] = vals[i];
        }
        assert_rows_ascend(c, s);
        Buf e = enc_row(c, nullable ? 1 : 0);
        assert_int_equal(e.n, (size_t)(4 + nullable));
        buf_free(&e);
    }
    arena_free(a);
}

static void test_key_order_matches_sql_order_for_strings_with_prefixes(void **state)
{
    const char *vals[] = {"", "a", "a b", "aa", "ab", "abc", "b", "ba", "z", "\x7f", "\x80", "\xff"};
    Arena *a = arena_new(0);
    const TypeKind kinds[] = {TK_CHAR, TK_VARCHAR};
    for (size_t t = 0; t < 2; t++)
        for (int nullable = 0; nullable < 2; nullable++) {
            SqlType ty = type_make(kinds[t], nullable);
            Chunk *c = chunk_new(a, 1, &ty, 32);
            if (nullable)
                c->col[0].nul[c->n] = 1, c->col[0].s[c->n++] = (Str){"", 0};
            for (size_t i = 0; i < ARRAY_LEN(vals); i++)
                c->col[0].s[c->n++] = (Str){vals[i], (uint32_t)strlen(vals[i])};
            assert_rows_ascend(c, NULL);
        }
    arena_free(a);
}

static void test_key_multi_column_keys_sort_by_first_column_then_next(void **state)
{
    /* (VARCHAR, INT NULL, DOUBLE): rows listed in SQL order */
    SqlType ty[3] = {type_make(TK_VARCHAR, false), type_make(TK_INT, true),
                     type_make(TK_DOUBLE, false)};
    struct {
        const char *s;
        bool null;
        int64_t i;
        double d;
    } rows[] = {
        {"a", true, 0, 5},  {"a", false, -5, 1}, {"a", false, 7, -1}, {"a", false, 7, 2},
        {"ab", true, 0, 0}, {"ab", false, 0, 0}, {"b", true, 0, -9},  {"b", false, INT32_MIN, 0},
    };
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 3, ty, 16);
    for (size_t r = 0; r < ARRAY_LEN(rows); r++) {
        c->col[0].s[r] = (Str){rows[r].s, (uint32_t)strlen(rows[r].s)};
        c->col[1].nul[r] = rows[r].null;
        c->col[1].i[r] = rows[r].i;
        c->col[2].f[r] = rows[r].d;
    }
    c->n = (int64_t)ARRAY_LEN(rows);
    assert_rows_ascend(c, NULL);

    /* a column subset in a different order: (DOUBLE, VARCHAR) */
    int cols[2] = {2, 0};
    Buf x = BUF_INIT, y = BUF_INIT;
    key_encode(c, cols, 2, 6, &x); /* (-9, "b") */
    key_encode(c, cols, 2, 0, &y); /* (5, "a") */
    assert_true(enc_cmp(&x, &y) < 0);
    buf_free(&x);
    buf_free(&y);
    arena_free(a);
}

/* Random value of kind k for row r of v (NULL one time in five when nullable). */
static void random_value(Vec *v, int64_t r, TypeKind k)
{
    static const char *words[] = {"", "a", "ab", "sluice", "\xc3\xa9t\xc3\xa9", "zzz zzz"};
    if (v->nul) {
        v->nul[r] = rnd() % 5 == 0;
        if (v->nul[r]) {
            if (v->i) v->i[r] = 0;
            if (v->f) v->f[r] = 0;
            if (v->s) v->s[r] = (Str){"", 0};
            return;
        }
    }
    switch (type_phys(v->t)) {
    case PHYS_I64: {
        int64_t lo, hi;
        int_range(k, &lo, &hi);
        uint64_t span = (uint64_t)hi - (uint64_t)lo;
        v->i[r] = (int64_t)((uint64_t)lo + (span == UINT64_MAX ? rnd() : rnd() % (span + 1)));
        break;
    }
    case PHYS_F64: {
        static const double special[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e-310};
        double d = rnd() % 4 == 0 ? special[rnd() % ARRAY_LEN(special)]
                                  : ((double)(int64_t)rnd()) / (double)(1 + rnd() % 1000000);
        v->f[r] = k == TK_REAL ? (double)(float)d : d;
        break;
    }
    case PHYS_STR: {
        const char *w = words[rnd() % ARRAY_LEN(words)];
        v->s[r] = (Str){w, (uint32_t)strlen(w)};
        break;
    }
    case PHYS_I128: {
        i128 hi = pow10_i128(38) - 1, x = (i128)(((unsigned __int128)rnd() << 64) | rnd());
        v->x[r] = x % (hi + 1);
        break;
    }
    }
}

static void assert_value_equal(const Vec *a, const Vec *b, int64_t r)
{
    if (a->nul) {
        assert_int_equal(a->nul[r], b->nul[r]);
        if (a->nul[r])
            return;
    }
    if (a->i)
        assert_int_equal(a->i[r], b->i[r]);
    else if (a->x)
        assert_true(a->x[r] == b->x[r]);
    else if (a->f) {
        if (isnan(a->f[r]))
            assert_true(isnan(b->f[r]));
        else if (a->f[r] == 0)
            assert_true(b->f[r] == 0 && !signbit(b->f[r]));
        else
            assert_true(a->f[r] == b->f[r]);
    } else {
        assert_int_equal(a->s[r].n, b->s[r].n);
        assert_memory_equal(a->s[r].p, b->s[r].p, a->s[r].n);
    }
}

static void test_key_decode_round_trips_every_type(void **state)
{
    static const TypeKind kinds[] = {TK_BOOL,    TK_TINYINT, TK_SMALLINT, TK_INT,  TK_BIGINT,
                                     TK_DECIMAL, TK_REAL,    TK_DOUBLE,   TK_CHAR, TK_VARCHAR,
                                     TK_DATE,    TK_TIME,    TK_TIMESTAMP};
    enum { NK = ARRAY_LEN(kinds), NC = 2 * NK, ROWS = 300 };
    SqlType ty[NC];
    for (int j = 0; j < NC; j++)
        ty[j] = type_make(kinds[j % NK], j >= NK);
    Arena *a = arena_new(0);
    Chunk *src = chunk_new(a, NC, ty, ROWS);
    Chunk *dst = chunk_new(a, NC + 1, (SqlType[NC + 1]){0}, ROWS); /* column 0 unused */
    for (int j = 0; j < NC; j++)
        vec_init(&dst->col[j + 1], a, ty[j], ROWS);
    for (int64_t r = 0; r < ROWS; r++)
        for (int j = 0; j < NC; j++)
            random_value(&src->col[j], r, kinds[j % NK]);
    src->n = dst->n = ROWS;

    for (int64_t r = 0; r < ROWS; r++) {
        Buf b = BUF_INIT;
        key_encode_row(src, r, &b);
        const uint8_t *end = key_decode(b.p, ty, NC, dst, 1, r);
        assert_ptr_equal(end, b.p + b.n);
        assert_ptr_equal(key_skip(b.p, ty, NC), b.p + b.n);
        for (int j = 0; j < NC; j++)
            assert_value_equal(&src->col[j], &dst->col[j + 1], r);
        /* re-encoding the decoded row gives the same bytes */
        Buf again = BUF_INIT;
        int cols[NC];
        for (int j = 0; j < NC; j++)
            cols[j] = j + 1;
        key_encode(dst, cols, NC, r, &again);
        assert_int_equal(again.n, b.n);
        assert_memory_equal(again.p, b.p, b.n);
        buf_free(&again);
        buf_free(&b);
    }
    arena_free(a);
}

static void test_key_decode_of_null_zeroes_the_value_slot(void **state)
{
    SqlType ty[3] = {type_make(TK_BIGINT, true), type_make(TK_DOUBLE, true),
                     type_make(TK_VARCHAR, true)};
    const uint8_t enc[3] = {0, 0, 0};
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 3, ty, 4);
    c->col[0].i[2] = 77;
    c->col[1].f[2] = 7.5;
    c->col[2].s[2] = (Str){"junk", 4};
    assert_ptr_equal(key_decode(enc, ty, 3, c, 0, 2), enc + 3);
    assert_int_equal(c->col[0].nul[2], 1);
    assert_int_equal(c->col[1].nul[2], 1);
    assert_int_equal(c->col[2].nul[2], 1);
    assert_int_equal(c->col[0].i[2], 0);
    assert_true(c->col[1].f[2] == 0);
    assert_int_equal(c->col[2].s[2].n, 0);
    arena_free(a);
}

/* key_decode_plan and key_decode_many (and key_decode_some under them)
   decode exactly the needed
   columns as key_decode does, whatever the mix of fixed-offset NOT NULL
   integers in front and other columns after; unneeded columns stay as
   they were. */
static void test_key_decode_plan_decodes_the_needed_columns_like_key_decode(void **state)
{
    static const TypeKind kinds[] = {TK_BIGINT, TK_INT,    TK_SMALLINT, TK_TINYINT, TK_DATE,
                                     TK_DOUBLE, TK_VARCHAR, TK_REAL,    TK_TIMESTAMP, TK_BOOL};
    enum { NK = ARRAY_LEN(kinds), NC = 6, ROWS = 40, SHAPES = 200 };
    Arena *a = arena_new(0);
    for (int shape = 0; shape < SHAPES; shape++) {
        SqlType ty[NC];
        TypeKind kd[NC];
        bool need[NC];
        for (int j = 0; j < NC; j++) {
            kd[j] = kinds[rnd() % NK];
            ty[j] = type_make(kd[j], rnd() % 3 == 0);
            need[j] = rnd() % 2;
        }
        Chunk *src = chunk_new(a, NC, ty, ROWS);
        Chunk *want = chunk_new(a, NC, ty, ROWS);
        Chunk *got = chunk_new(a, NC, ty, ROWS);
        for (int64_t r = 0; r < ROWS; r++)
            for (int j = 0; j < NC; j++)
                random_value(&src->col[j], r, kd[j]);
        src->n = want->n = got->n = ROWS;
        KeyPlan kp;
        key_plan_init(&kp, ty, NC, shape % 5 ? need : NULL);
        for (int64_t r = 0; r < ROWS; r++) {
            Buf b = BUF_INIT;
            key_encode_row(src, r, &b);
            key_decode(b.p, ty, NC, want, 0, r);
            for (int j = 0; j < NC; j++) { /* the marks of "not decoded" */
                Vec *v = &got->col[j];
                if (v->nul)
                    v->nul[r] = 7;
                if (v->i)
                    v->i[r] = 0x5eed;
            }
            key_decode_plan(&kp, b.p, got, 0, r);
            for (int j = 0; j < NC; j++) {
                const Vec *v = &got->col[j];
                if (shape % 5 == 0 || need[j])
                    assert_value_equal(&want->col[j], v, r);
                else {
                    if (v->nul)
                        assert_int_equal(v->nul[r], 7);
                    if (v->i)
                        assert_int_equal(v->i[r], 0x5eed);
                }
            }
            buf_free(&b);
        }
        /* key_decode_many over all rows at once gives the same values */
        Chunk *many = chunk_new(a, NC, ty, ROWS);
        Buf all = BUF_INIT;
        size_t at[ROWS];
        for (int64_t r = 0; r < ROWS; r++) {
            at[r] = all.n;
            key_encode_row(src, r, &all);
        }
        const uint8_t *ptr[ROWS];
        for (int64_t r = 0; r < ROWS; r++)
            ptr[r] = all.p + at[r];
        key_decode_many(&kp, ptr + 1, ROWS - 1, many, 0, 1);
        for (int64_t r = 1; r < ROWS; r++) {
            key_decode(ptr[r], ty, NC, want, 0, r); /* strings into `all` */
            for (int j = 0; j < NC; j++)
                if (shape % 5 == 0 || need[j])
                    assert_value_equal(&want->col[j], &many->col[j], r);
        }
        buf_free(&all);
        key_plan_free(&kp);
    }
    arena_free(a);
}

/* key_encode_fixed writes, column by column, the bytes key_encode writes
   row by row; key_fixed_width says which column sets qualify: NOT NULL
   integers, nullable integers without a NULL in the chunk, and columns of
   any type NULL in every row. */
static void test_key_encode_fixed_equals_key_encode(void **state)
{
    static const TypeKind kinds[] = {TK_BOOL, TK_TINYINT, TK_SMALLINT, TK_INT, TK_BIGINT,
                                     TK_DECIMAL, TK_DATE, TK_TIME, TK_TIMESTAMP};
    static const TypeKind any[] = {TK_BIGINT, TK_VARCHAR, TK_DOUBLE, TK_DATE};
    enum { NK = ARRAY_LEN(kinds), NC = 5, ROWS = 50 };
    Arena *a = arena_new(0);
    for (int shape = 0; shape < 300; shape++) {
        SqlType ty[NC];
        TypeKind kd[NC];
        int mode[NC]; /* 0 NOT NULL, 1 nullable without NULLs, 2 all NULL */
        for (int j = 0; j < NC; j++) {
            mode[j] = shape < 100 ? 0 : (int)(rnd() % 3);
            kd[j] = mode[j] == 2 ? any[rnd() % ARRAY_LEN(any)] : kinds[rnd() % NK];
            ty[j] = type_make(kd[j], mode[j] != 0);
        }
        int cols[3] = {(int)(rnd() % NC), (int)(rnd() % NC), (int)(rnd() % NC)};
        Chunk *c = chunk_new(a, NC, ty, ROWS);
        for (int64_t r = 0; r < ROWS; r++)
            for (int j = 0; j < NC; j++) {
                random_value(&c->col[j], r, kd[j]);
                if (mode[j] == 1 && c->col[j].nul[r]) { /* a value instead */
                    c->col[j].nul[r] = 0;
                    if (c->col[j].i)
                        c->col[j].i[r] = 1;
                }
                if (mode[j] == 2)
                    c->col[j].nul[r] = 1;
            }
        c->n = ROWS;
        int w = key_fixed_width(c, cols, 3), wall = key_fixed_width(c, NULL, NC);
        assert_true(w >= 3 && wall >= NC);
        uint8_t *bytes = arena_alloc(a, (size_t)ROWS * (size_t)(w + wall) + 1);
        uint8_t *dst[ROWS];
        for (int64_t r = 0; r < ROWS; r++)
            dst[r] = bytes + r * (w + wall);
        key_encode_fixed(c, cols, 3, ROWS, dst, 0);
        key_encode_fixed(c, NULL, NC, ROWS, dst, (size_t)w);
        for (int64_t r = 0; r < ROWS; r++) {
            Buf b = BUF_INIT;
            key_encode(c, cols, 3, r, &b);
            key_encode_row(c, r, &b);
            assert_int_equal(b.n, (size_t)(w + wall));
            assert_memory_equal(b.p, dst[r], b.n);
            buf_free(&b);
        }
    }
    SqlType mixed[2] = {type_make(TK_INT, false), type_make(TK_INT, true)};
    Chunk *c = chunk_new(a, 2, mixed, 2);
    c->n = 2;
    c->col[1].nul[0] = 1; /* a NULL and a value: no one width */
    assert_int_equal(key_fixed_width(c, (int[]){0}, 1), 4);
    assert_int_equal(key_fixed_width(c, NULL, 2), -1);
    c->col[1].nul[1] = 1; /* NULL in every row: the marker byte */
    assert_int_equal(key_fixed_width(c, NULL, 2), 5);
    c->col[1].nul[0] = c->col[1].nul[1] = 0; /* none NULL: marker and value */
    assert_int_equal(key_fixed_width(c, NULL, 2), 9);
    SqlType strs[1] = {type_make(TK_VARCHAR, true)};
    c = chunk_new(a, 1, strs, 2);
    c->n = 2;
    c->col[0].s[0] = c->col[0].s[1] = (Str){"x", 1};
    assert_int_equal(key_fixed_width(c, NULL, 1), -1); /* strings: only when all NULL */
    c->col[0].nul[0] = 1;
    assert_int_equal(key_fixed_width(c, NULL, 1), -1);
    c->col[0].nul[1] = 1;
    assert_int_equal(key_fixed_width(c, NULL, 1), 1);
    SqlType other[2] = {type_make(TK_DOUBLE, false), type_make(TK_VARCHAR, false)};
    c = chunk_new(a, 2, other, 1);
    assert_int_equal(key_fixed_width(c, (int[]){0}, 1), -1);
    assert_int_equal(key_fixed_width(c, (int[]){1}, 1), -1);
    assert_int_equal(key_fixed_width(c, NULL, 0), 0);
    arena_free(a);
}

/* DECIMAL(38,s) values: 16 bytes each, memcmp order = numeric order, and
   they decode to the same values (with 10^38 - 1 and its negation). */
static void test_key_wide_decimals_take_16_bytes_and_sort_numerically(void **state)
{
    enum { ROWS = 400 };
    SqlType ty = type_make(TK_DECIMAL, false);
    ty.prec = 38;
    ty.scale = 4;
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 1, &ty, ROWS);
    Chunk *d = chunk_new(a, 1, &ty, ROWS);
    i128 top = pow10_i128(38) - 1;
    for (int64_t r = 0; r < ROWS; r++)
        random_value(&c->col[0], r, TK_DECIMAL);
    c->col[0].x[0] = top;
    c->col[0].x[1] = -top;
    c->col[0].x[2] = 0;
    c->col[0].x[3] = -1;
    c->col[0].x[4] = (i128)INT64_MAX + 1;
    c->n = d->n = ROWS;
    for (int64_t r = 0; r < ROWS; r++) {
        Buf x = enc_row(c, r);
        assert_int_equal(x.n, 16);
        key_decode(x.p, &ty, 1, d, 0, r);
        assert_true(d->col[0].x[r] == c->col[0].x[r]);
        for (int64_t q = 0; q < r; q++) {
            Buf y = enc_row(c, q);
            int m = memcmp(x.p, y.p, 16);
            i128 u = c->col[0].x[r], v = c->col[0].x[q];
            assert_int_equal(m < 0 ? -1 : m > 0, (u > v) - (u < v));
            buf_free(&y);
        }
        buf_free(&x);
    }
    assert_int_equal(key_fixed_width(c, NULL, 1), -1);
    arena_free(a);
}

static void test_key_widths_follow_the_type(void **state)
{
    static const struct {
        TypeKind k;
        size_t width;
    } w[] = {{TK_BOOL, 1},   {TK_TINYINT, 1}, {TK_SMALLINT, 2}, {TK_INT, 4},
             {TK_DATE, 4},   {TK_BIGINT, 8},  {TK_DECIMAL, 8},  {TK_TIME, 8},
             {TK_TIMESTAMP, 8}, {TK_REAL, 4}, {TK_DOUBLE, 8}};
    Arena *a = arena_new(0);
    for (size_t t = 0; t < ARRAY_LEN(w); t++) {
        SqlType ty = type_make(w[t].k, false);
        Chunk *c = chunk_new(a, 1, &ty, 1);
        if (c->col[0].i)
            c->col[0].i[0] = 1;
        else
            c->col[0].f[0] = 1;
        c->n = 1;
        Buf b = enc_row(c, 0);
        assert_int_equal(b.n, w[t].width);
        buf_free(&b);
    }
    /* INT 1 is 80 00 00 01; BIGINT -1 is 7f ff .. ff */
    SqlType ty[2] = {type_make(TK_INT, false), type_make(TK_BIGINT, false)};
    Chunk *c = chunk_new(a, 2, ty, 1);
    c->col[0].i[0] = 1;
    c->col[1].i[0] = -1;
    c->n = 1;
    Buf b = enc_row(c, 0);
    const uint8_t want[12] = {0x80, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(b.n, 12);
    assert_memory_equal(b.p, want, 12);
    buf_free(&b);
    arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_order_matches_sql_order_for_ints),
        cmocka_unit_test(test_key_encode_fixed_equals_key_encode),
        cmocka_unit_test(test_key_decode_plan_decodes_the_needed_columns_like_key_decode),
        cmocka_unit_test(test_key_order_matches_sql_order_for_doubles),
        cmocka_unit_test(test_key_order_matches_sql_order_for_reals),
        cmocka_unit_test(test_key_order_matches_sql_order_for_strings_with_prefixes),
        cmocka_unit_test(test_key_multi_column_keys_sort_by_first_column_then_next),
        cmocka_unit_test(test_key_decode_round_trips_every_type),
        cmocka_unit_test(test_key_decode_of_null_zeroes_the_value_slot),
        cmocka_unit_test(test_key_widths_follow_the_type),
        cmocka_unit_test(test_key_wide_decimals_take_16_bytes_and_sort_numerically),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
