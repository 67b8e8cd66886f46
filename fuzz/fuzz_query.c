/*
 * fuzz/fuzz_query.c - a one-shot query compiled AND run, as /query and the
 * PostgreSQL wire protocol run them (pipeline/livequery.c): oneshot_run
 * over a few rows of two tables, on one worker, on the calling thread,
 * under a base/budget.h Budget (a deadline and a memory bound, as
 * --query-timeout and --query-memory set). Where fuzz_sql stops at the
 * plan, this target reaches the operators and the expression kernels:
 * arrays (UNNEST, ARRAY_AGG, the array functions), WITH RECURSIVE and its
 * iteration bound, ASOF joins with NULL keys, TIMESTAMPTZ and calendar
 * intervals, GROUPING SETS, LISTAGG, window functions.
 *
 * Input: byte 0 chooses the session zone (bit 0: 'Europe/Paris', as a
 * program's SET TIME ZONE gives /query its prelude; else UTC); the rest is
 * the query's text. Tables (contents below, with NULLs everywhere):
 * t(a INT, b VARCHAR, c DECIMAL(10,2), d TIMESTAMP, e INT ARRAY,
 * f TIMESTAMPTZ) and u(k BIGINT, v DOUBLE, s VARCHAR ARRAY, ts TIMESTAMP).
 * Seeds: fuzz/corpus/query/ (query text after one zone byte). Run by hand
 * with SLUICE_FUZZ_VERBOSE=1, it prints the row count or the error.
 */
#include "fuzz.h"

#include "base/arena.h"
#include "base/budget.h"
#include "base/mem.h"
#include "pipeline/oneshot.h"

static const char *const PROGRAM =
    "CREATE TABLE t (a INT, b VARCHAR, c DECIMAL(10,2), d TIMESTAMP, e INT ARRAY,\n"
    "  f TIMESTAMPTZ);\n"
    "CREATE TABLE u (k BIGINT, v DOUBLE, s VARCHAR ARRAY, ts TIMESTAMP);\n";

static const char *const T_ROWS[] = {
    "1,x,1.50,2024-03-10 01:30:00,\"{1,2,3}\",2024-03-31 01:30:00+00\n",
    "2,y,-2.25,2024-03-10 02:30:00,\"{}\",2024-10-27 00:30:00Z\n",
    "2,,,2024-03-11 00:00:00,\"{NULL,4}\",\n",
    ",x,0.00,,,2024-01-01 00:00:00 America/New_York\n",
    "3,zz,99999999.99,1970-01-01 00:00:00,\"{2147483647,-2147483648}\",1970-01-01 00:00:00+14\n",
    "1,x,1.50,2024-03-10 01:30:00,\"{1,2,3}\",2024-03-31 01:30:00+00\n",
};
static const char *const U_ROWS[] = {
    "1,0.5,\"{a,\"\"b c\"\",NULL}\",2024-03-10 01:00:00\n",
    "2,-1e300,\"{}\",2024-03-10 02:00:00\n",
    ",,,\n",
    "2,NaN,\"{x}\",2024-03-10 02:00:00\n",
    "3,1e-300,\"{\"\"\"\",\"\"\\\\\"\"}\",2024-03-09 23:59:59.999999\n",
};

typedef struct Fixture {
    Circuit *c;
    Arena *a;
    Chunk *rows[2];
} Fixture;

static Chunk *load(const Relation *r, const char *const *rows, int n, Arena *a)
{
    RowSchema s = {r->ncol, (const char *const *)r->colnames, r->types};
    Chunk *ch = chunk_new(a, r->ncol, r->types, n);
    for (int i = 0; i < n; i++) {
        Err e;
        err_init(&e);
        if (fmt_csv_parse(&s, rows[i], strlen(rows[i]), ch, a, &e)) {
            fprintf(stderr, "fuzz: the harness row %s of %s is refused: %s\n", rows[i], r->name,
                    e.msg);
            abort();
        }
    }
    return ch;
}

static Fixture *fixture(void)
{
    static Fixture f;
    if (!f.c) {
        f.c = fz_compile(PROGRAM);
        f.a = arena_new(1 << 14);
        f.rows[0] = load(&f.c->rels[0], T_ROWS, (int)(sizeof(T_ROWS) / sizeof(*T_ROWS)), f.a);
        f.rows[1] = load(&f.c->rels[1], U_ROWS, (int)(sizeof(U_ROWS) / sizeof(*U_ROWS)), f.a);
    }
    return &f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    Fixture *f = fixture();
    char *sql = sl_malloc(size);
    memcpy(sql, data + 1, size - 1);
    sql[size - 1] = 0;
    QInput in[2];
    for (int i = 0; i < 2; i++) {
        const Relation *r = &f->c->rels[i];
        in[i] = (QInput){.name = r->name, .ncol = r->ncol, .colnames = (const char *const *)r->colnames,
                         .types = r->types, .rows = f->rows[i]};
    }
    const Chunk *steps[2] = {f->rows[0], f->rows[1]};
    /* the bounds of a /query, smaller: a query that runs away is stopped
       with an error, never a crash (ASan's own bound is 2 GiB) */
    Budget b = {.limit = (int64_t)256 << 20, .timeout = 5};
    budget_begin(&b);
    QResult res;
    Err e;
    err_init(&e);
    int rc = oneshot_run(data[0] & 1 ? "SET TIME ZONE 'Europe/Paris'" : NULL, sql, in, 2, 1,
                         steps, 1, NULL, NULL, &res, &e);
    budget_end();
    if (getenv("SLUICE_FUZZ_VERBOSE")) /* run by hand: what the query gave */
    {
        if (rc)
            fprintf(stderr, "error: %s\n", e.msg);
        else
            fprintf(stderr, "%lld rows\n", (long long)res.rows->n);
    }
    if (!rc) {
        /* what /query sends back: every value as text */
        RowSchema s = {res.ncol, (const char *const *)res.colnames, res.types};
        Buf out = BUF_INIT;
        for (int64_t r = 0; r < res.rows->n; r++) {
            buf_reset(&out);
            fmt_json_row(&s, res.rows, r, &out);
            fmt_csv_row(res.rows, r, &out);
        }
        buf_free(&out);
        qresult_free(&res);
    } else if (!e.msg[0]) {
        abort(); /* an error says why */
    }
    sl_free(sql);
    return 0;
}
