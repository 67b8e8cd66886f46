/*
 * tests/expr/test_regex.c - the regular-expression kernels of
 * expr/fn_regex.c evaluated directly (argument lists as the binder builds
 * them, sql/bind_regex.c): matching and flags, replacement with
 * back-references, counting and positions in characters, SPLIT_PART,
 * SIMILAR TO's translation, per-row errors for bad patterns, flags and
 * arguments, a pattern column that changes from row to row (the per-thread
 * cache), more distinct patterns than the cache holds, and patterns used
 * from several threads at once. The SQL surface is checked against
 * PostgreSQL 15 by tests/slt/regex.test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <cmocka.h>

#include "expr_test.h"

#define VC T(TK_VARCHAR)
#define FN(f, t, ...) mk(E_FUNC, f, t, __VA_ARGS__)

static Expr *ci(int64_t v) { return expr_const_i64(A, type_make(TK_BIGINT, false), v); }
static Expr *cs(const char *s)
{
    return expr_const_str(A, type_make(TK_VARCHAR, false), s, strlen(s));
}

/* n rows of ncol string columns, values row-major; a NULL pointer is NULL. */
static Chunk *strs(int ncol, int64_t n, const char *const *v)
{
    SqlType t[4] = {VC, VC, VC, VC};
    Chunk *c = chunk_new(A, ncol, t, n);
    c->n = n;
    for (int64_t r = 0; r < n; r++) {
        c->w[r] = 1;
        for (int j = 0; j < ncol; j++) {
            const char *s = v[r * ncol + j];
            c->col[j].s[r] = s ? (Str){s, (uint32_t)strlen(s)} : (Str){"junk", 4};
            c->col[j].nul[r] = !s;
        }
    }
    return c;
}

static Expr *like(Expr *s, Expr *p, const char *flags)
{
    return FN(FN_REGEXP_LIKE, T(TK_BOOL), 3, s, p, cs(flags));
}

static Expr *replace(Expr *s, const char *p, const char *r, int64_t start, int64_t nth,
                     const char *flags)
{
    return FN(FN_REGEXP_REPLACE, VC, 6, s, cs(p), cs(r), ci(start), ci(nth), cs(flags));
}

static void ev_fails_with(const Expr *e, const Chunk *c, const char *part)
{
    Vec v;
    err_clear(&err);
    int rc = expr_eval(e, c, NULL, c->n, &cx, &v);
    if (rc != SL_ERUNTIME)
        fail_msg("expected SL_ERUNTIME containing \"%s\", got rc %d", part, rc);
    if (!strstr(err.msg, part))
        fail_msg("message \"%s\" does not contain \"%s\"", err.msg, part);
    err_clear(&err);
}

static void test_regexp_like_matches_anywhere_with_postgres_flags(void **state)
{
    const char *v[] = {"Hello World", "abc", "a\nb", NULL};
    Chunk *c = strs(1, 4, v);
    CHECK_INTS(like(col(0, VC), cs("o W"), ""), c, 1, 0, 0, NV);
    CHECK_INTS(like(col(0, VC), cs("HELLO"), "i"), c, 1, 0, 0, NV);
    CHECK_INTS(like(col(0, VC), cs("HELLO"), "ic"), c, 0, 0, 0, NV); /* the last wins */
    /* PostgreSQL's default: . matches a newline and $ only at the end */
    CHECK_INTS(like(col(0, VC), cs("a.b"), ""), c, 0, 0, 1, NV);
    CHECK_INTS(like(col(0, VC), cs("a$"), ""), c, 0, 0, 0, NV);
    /* newline-sensitive: ^ and $ at lines, . stops at a newline */
    CHECK_INTS(like(col(0, VC), cs("a$"), "n"), c, 0, 0, 1, NV);
    CHECK_INTS(like(col(0, VC), cs("a.b"), "n"), c, 0, 0, 0, NV);
    /* q: the pattern is a literal string */
    CHECK_INTS(like(col(0, VC), cs("."), "q"), c, 0, 0, 0, NV);
}

static void test_regexp_extract_gives_a_group_or_null(void **state)
{
    const char *v[] = {"channel_id=42&x=1", "x=1&channel_id=abc", "x=1", "", NULL};
    Chunk *c = strs(1, 5, v);
    Expr *p = cs("(&|^)channel_id=([^&]*)");
    SqlType t = VC;
    CHECK_STRS(FN(FN_REGEXP_EXTRACT, t, 3, col(0, VC), p, ci(2)), c, "42", "abc", NULL, NULL,
               NULL);
    CHECK_STRS(FN(FN_REGEXP_EXTRACT, t, 3, col(0, VC), p, ci(1)), c, "", "&", NULL, NULL, NULL);
    CHECK_STRS(FN(FN_REGEXP_EXTRACT, t, 3, col(0, VC), p, ci(0)), c, "channel_id=42",
               "&channel_id=abc", NULL, NULL, NULL);
    /* no group 3, a negative group: NULL */
    CHECK_STRS(FN(FN_REGEXP_EXTRACT, t, 3, col(0, VC), p, ci(3)), c, NULL, NULL, NULL, NULL, NULL);
    CHECK_STRS(FN(FN_REGEXP_EXTRACT, t, 3, col(0, VC), p, ci(-1)), c, NULL, NULL, NULL, NULL,
               NULL);
    /* leftmost-first (Perl, Java): the first alternative that matches */
    const char *w[] = {"abcd"};
    CHECK_STRS(FN(FN_REGEXP_EXTRACT, t, 3, col(0, VC), cs("a|ab|abc"), ci(0)), strs(1, 1, w),
               "a");
}

static void test_regexp_replace_first_nth_and_global_with_back_references(void **state)
{
    const char *v[] = {"foo.bar@example.com", "aaa", "", NULL};
    Chunk *c = strs(1, 4, v);
    CHECK_STRS(replace(col(0, VC), "[a-z]+@([a-z]+)", "<\\1|\\&|\\\\>", 1, -1, ""), c,
               "foo.<example|bar@example|\\>.com", "aaa", "", NULL);
    CHECK_STRS(replace(col(0, VC), "a", "b", 1, -1, "g"), c, "foo.bbr@exbmple.com", "bbb", "",
               NULL);
    CHECK_STRS(replace(col(0, VC), "a", "b", 1, 2, ""), c, "foo.bar@exbmple.com", "aba", "",
               NULL);
    CHECK_STRS(replace(col(0, VC), "a", "b", 2, 0, ""), c, "foo.bbr@exbmple.com", "abb", "",
               NULL);
    /* empty matches: one per position, the search going on a character later */
    CHECK_STRS(replace(col(0, VC), "x*", "-", 1, -1, "g"), c,
               "-f-o-o-.-b-a-r-@-e--a-m-p-l-e-.-c-o-m-", "-a-a-a-", "-", NULL);
    /* everything replaced by nothing */
    CHECK_STRS(replace(col(0, VC), "^.*$", "", 1, -1, ""), c, "", "", "", NULL);
    /* a group that took no part gives '' */
    CHECK_STRS(replace(col(0, VC), "(x)?a", "[\\1]", 1, -1, "g"), c, "foo.b[]r@e[x]mple.com",
               "[][][]", "", NULL);
}

static void test_count_substr_and_instr_count_characters(void **state)
{
    const char *v[] = {"ÄÖÜ straße ß", "Mississippi", NULL};
    Chunk *c = strs(1, 3, v);
    SqlType it = T(TK_INT);
    CHECK_INTS(FN(FN_REGEXP_COUNT, it, 4, col(0, VC), cs("ß"), ci(1), cs("")), c, 2, 0, NV);
    CHECK_INTS(FN(FN_REGEXP_COUNT, it, 4, col(0, VC), cs("ss"), ci(4), cs("")), c, 0, 1, NV);
    CHECK_INTS(FN(FN_REGEXP_COUNT, it, 4, col(0, VC), cs("x*"), ci(1), cs("")), c, 13, 12, NV);
    CHECK_INTS(FN(FN_REGEXP_INSTR, it, 7, col(0, VC), cs("ß"), ci(1), ci(2), ci(0), cs(""),
                  ci(0)),
               c, 12, 0, NV);
    CHECK_INTS(FN(FN_REGEXP_INSTR, it, 7, col(0, VC), cs("s+"), ci(1), ci(1), ci(1), cs(""),
                  ci(0)),
               c, 6, 5, NV);
    CHECK_STRS(FN(FN_REGEXP_SUBSTR, VC, 6, col(0, VC), cs("(s+)(i)"), ci(1), ci(2), cs(""),
                  ci(1)),
               c, NULL, "ss", NULL);
    CHECK_STRS(FN(FN_REGEXP_SUBSTR, VC, 6, col(0, VC), cs("S+"), ci(5), ci(1), cs("i"), ci(0)),
               c, "s", "ss", NULL);
}

static void test_split_part_counts_fields_from_either_end(void **state)
{
    const char *v[] = {"a,b,,c", "", "abc", NULL};
    Chunk *c = strs(1, 4, v);
    CHECK_STRS(FN(FN_SPLIT_PART, VC, 3, col(0, VC), cs(","), ci(2)), c, "b", "", "", NULL);
    CHECK_STRS(FN(FN_SPLIT_PART, VC, 3, col(0, VC), cs(","), ci(-1)), c, "c", "", "abc", NULL);
    CHECK_STRS(FN(FN_SPLIT_PART, VC, 3, col(0, VC), cs(","), ci(-4)), c, "a", "", "", NULL);
    CHECK_STRS(FN(FN_SPLIT_PART, VC, 3, col(0, VC), cs(","), ci(-5)), c, "", "", "", NULL);
    CHECK_STRS(FN(FN_SPLIT_PART, VC, 3, col(0, VC), cs(""), ci(1)), c, "a,b,,c", "", "abc", NULL);
    CHECK_STRS(FN(FN_SPLIT_PART, VC, 3, col(0, VC), cs(""), ci(2)), c, "", "", "", NULL);
    ev_fails_with(FN(FN_SPLIT_PART, VC, 3, col(0, VC), cs(","), ci(0)), c,
                  "field position must not be zero");
}

static void test_similar_to_translates_to_an_anchored_regex(void **state)
{
    static const struct {
        const char *sql;
        int esc;
        const char *re;
    } cases[] = {
        {"a%b_c", '\\', "^(?:a.*b.c)$"},
        {"a.b|c*(d)[x.y]", '#', "^(?:a\\.b|c*(?:d)[x.y])$"},
        {"%#_%", '#', "^(?:.*\\_.*)$"},
        {"$^\\", -1, "^(?:\\$\\^\\\\)$"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        Buf b = BUF_INIT;
        expr_similar_to_regex(cases[i].sql, strlen(cases[i].sql), cases[i].esc, &b);
        assert_string_equal(buf_cstr(&b), cases[i].re);
        buf_free(&b);
    }
}

static void test_bad_patterns_flags_and_arguments_are_row_errors(void **state)
{
    const char *v[] = {"abc", "a(b"};
    Chunk *c = strs(2, 1, v);
    ev_fails_with(like(col(0, VC), col(1, VC), ""), c, "missing closing parenthesis");
    ev_fails_with(like(col(0, VC), cs("a"), "z"), c, "invalid regular expression option: \"z\"");
    ev_fails_with(like(col(0, VC), cs("a"), "g"), c, "does not support the \"global\" option");
    ev_fails_with(replace(col(0, VC), "a", "b", 0, -1, ""), c, "\"start\"");
    ev_fails_with(FN(FN_REGEXP_SUBSTR, VC, 6, col(0, VC), cs("a"), ci(1), ci(0), cs(""), ci(0)),
                  c, "\"n\"");
    /* catastrophic backtracking stops at PCRE2's limit instead of hanging */
    char s[64];
    memset(s, 'a', 40);
    strcpy(s + 40, "!");
    const char *w[] = {s};
    ev_fails_with(like(col(0, VC), cs("^(\\w+\\s?)*$"), ""), strs(1, 1, w),
                  "failed on a value");
    /* the check the binder runs on constant patterns */
    Err e = {0};
    int off = -2;
    assert_int_equal(expr_regex_check("ab(c", 4, NULL, 0, FN_REGEXP_LIKE, &e, &off), SL_ERUNTIME);
    assert_int_equal(off, 4);
    assert_non_null(strstr(e.msg, "missing closing parenthesis"));
    err_clear(&e);
    assert_int_equal(expr_regex_check("a", 1, "x", 1, FN_REGEXP_REPLACE, &e, &off), 0);
    assert_int_equal(expr_regex_check("a", 1, "b", 1, FN_REGEXP_REPLACE, &e, &off), SL_ERUNTIME);
    assert_int_equal(off, -1);
}

static void test_a_pattern_column_and_more_patterns_than_the_cache_holds(void **state)
{
    enum { N = 100 };
    const char *v[2 * N];
    char pats[N][16], subj[N][16];
    for (int r = 0; r < N; r++) {
        snprintf(pats[r], sizeof(pats[r]), "^x%d$", r % 37); /* 37 > the 16 slots */
        snprintf(subj[r], sizeof(subj[r]), "x%d", r % 3 ? r % 37 : r % 37 + 1);
        v[2 * r] = subj[r];
        v[2 * r + 1] = pats[r];
    }
    Chunk *c = strs(2, N, v);
    Vec out = ev(like(col(0, VC), col(1, VC), ""), c);
    for (int r = 0; r < N; r++)
        if (out.i[r] != (r % 3 != 0))
            fail_msg("row %d: %s ~ %s gave %lld", r, subj[r], pats[r], (long long)out.i[r]);
}

/* Several threads matching the same and different patterns at once. */
typedef struct Job {
    int id;
    int bad;
} Job;

static void *match_thread(void *arg)
{
    Job *j = arg;
    Arena *a = arena_new(1 << 16);
    Err e = {0};
    EvalCtx x = {.arena = a, .err = &e};
    SqlType t = VC;
    for (int round = 0; round < 200; round++) {
        arena_reset(a);
        char s[32], p[32];
        snprintf(s, sizeof(s), "k%d=v%d", round % 5, j->id);
        snprintf(p, sizeof(p), "k%d=v(\\d+)", round % 7);
        Chunk *c = chunk_new(a, 1, &t, 1);
        c->n = 1;
        c->w[0] = 1;
        c->col[0].s[0] = (Str){s, (uint32_t)strlen(s)};
        c->col[0].nul[0] = 0;
        Expr *pe = expr_const_str(a, type_make(TK_VARCHAR, false), p, strlen(p));
        Expr *e1 = expr_new(a, E_FUNC, VC, 3);
        e1->fn = FN_REGEXP_EXTRACT;
        e1->a[0] = expr_col(a, 0, VC);
        e1->a[1] = pe;
        e1->a[2] = expr_const_i64(a, type_make(TK_BIGINT, false), 1);
        Vec v;
        if (expr_eval(e1, c, NULL, 1, &x, &v)) {
            j->bad++;
            continue;
        }
        bool want = round % 5 == round % 7;
        char id[16];
        snprintf(id, sizeof(id), "%d", j->id);
        if (want != !v.nul[0] || (want && (v.s[0].n != strlen(id) || memcmp(v.s[0].p, id, v.s[0].n))))
            j->bad++;
    }
    arena_free(a);
    return NULL;
}

static void test_threads_share_nothing_but_get_the_same_answers(void **state)
{
    enum { NT = 4 };
    pthread_t th[NT];
    Job jobs[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i] = (Job){i + 10, 0};
        assert_int_equal(pthread_create(&th[i], NULL, match_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].bad, 0);
    }
}

#define T_(f) cmocka_unit_test_setup(f, reset)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T_(test_regexp_like_matches_anywhere_with_postgres_flags),
        T_(test_regexp_extract_gives_a_group_or_null),
        T_(test_regexp_replace_first_nth_and_global_with_back_references),
        T_(test_count_substr_and_instr_count_characters),
        T_(test_split_part_counts_fields_from_either_end),
        T_(test_similar_to_translates_to_an_anchored_regex),
        T_(test_bad_patterns_flags_and_arguments_are_row_errors),
        T_(test_a_pattern_column_and_more_patterns_than_the_cache_holds),
        T_(test_threads_share_nothing_but_get_the_same_answers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
