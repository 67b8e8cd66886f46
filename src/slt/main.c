/*
 * slt/main.c - sluice-slt, the sqllogictest runner: reads SQLite's SLT
 * files (format: ../shared/testdata/slt/README.md), applies `statement`
 * records to the runner's database (db.c) and runs every `query` record
 * through the engine as a view over the tables, comparing the view's
 * contents with the expected values or MD5 hash.
 *
 *   sluice-slt [--incremental] [--check-steps] [--workers N] [--verbose]
 *              [--skip-list FILE] [--list-skipped FILE] FILE...
 *
 * One line per file, then exactly `N passed, N failed, N skipped`.
 * Records counted: statements and queries. Skipped: records whose
 * skipif/onlyif conditions exclude the engine name `sluice`, and records
 * named in the skip list (file:line<TAB>reason). Exit 1 if any failed.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <nettle/md5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../expr/text.h"
#include "../cluster/net.h"
#include "slt.h"

#define ENGINE "sluice"

typedef struct Opts {
    bool incremental, check_steps, verbose;
    int workers;
    const char *skip_list, *list_skipped;
} Opts;

typedef struct Counts {
    int64_t passed, failed, skipped;
} Counts;

typedef struct Skip {
    char *key; /* "path:line" (path as given, or its tail after "slt/") */
    char *reason;
} Skip;

static Skip *skips;
static int nskips, capskips;
static FILE *skipped_out;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    Buf b = BUF_INIT;
    char tmp[1 << 16];
    size_t n;
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        buf_append(&b, tmp, n);
    fclose(f);
    buf_cstr(&b);
    *len = b.n;
    return (char *)b.p;
}

/* The file's name for skip lists: the part after ".../slt/" if present. */
static const char *short_name(const char *path)
{
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    const char *p = strstr(path, "slt/");
    const char *last = NULL;
    while (p) {
        last = p;
        p = strstr(p + 1, "slt/");
    }
    return last ? last + 4 : path;
}

static const char *skip_reason(const char *file, int line)
{
    char key[4096];
    snprintf(key, sizeof(key), "%s:%d", short_name(file), line);
    for (int i = 0; i < nskips; i++)
        if (!strcmp(skips[i].key, key))
            return skips[i].reason;
    return NULL;
}

static void load_skips(const char *path)
{
    size_t n;
    char *t = slurp(path, &n);
    if (!t) {
        fprintf(stderr, "sluice-slt: cannot read skip list \"%s\": %s\n", path, strerror(errno));
        exit(2);
    }
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || !line[0])
            continue;
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        *tab = 0;
        Skip *sk = VEC_PUSH(skips, nskips, capskips);
        sk->key = strdup(line);
        sk->reason = strdup(tab + 1);
    }
    sl_free(t);
}

/* ---- values as the reference harness prints them ---- */

static void print_value(const Vec *v, int64_t r, char type, Buf *out)
{
    if (vec_is_null(v, r)) {
        buf_puts(out, "NULL");
        return;
    }
    TypeKind k = v->t.kind;
    if (type == 'I') {
        if (v->x) {
            Buf t = BUF_INIT;
            text_format_dec(v->x[r] / pow10_i128(v->t.scale), 0, &t);
            buf_append(out, t.p, t.n);
            buf_free(&t);
        } else if (k == TK_DECIMAL) {
            int64_t d = 1;
            for (int i = 0; i < v->t.scale; i++)
                d *= 10;
            buf_printf(out, "%lld", (long long)(v->i[r] / d));
        } else if (v->i) { /* booleans, integers, dates, times, intervals */
            buf_printf(out, "%lld", (long long)v->i[r]);
        } else if (v->f) {
            double f = trunc(v->f[r]);
            buf_printf(out, "%lld", (long long)(fabs(f) < 9.2e18 ? (int64_t)f : 0));
        } else {
            char tmp[64];
            size_t n = v->s[r].n < 63 ? v->s[r].n : 63;
            memcpy(tmp, v->s[r].p, n);
            tmp[n] = 0;
            buf_printf(out, "%lld", (long long)strtoll(tmp, NULL, 10));
        }
        return;
    }
    if (type == 'R') {
        double f;
        if (v->f)
            f = v->f[r];
        else if (v->x) {
            Buf t = BUF_INIT;
            text_format_dec(v->x[r], v->t.scale, &t);
            f = strtod(buf_cstr(&t), NULL);
            buf_free(&t);
        } else if (k == TK_DECIMAL) {
            f = (double)v->i[r];
            for (int i = 0; i < v->t.scale; i++)
                f /= 10;
        } else if (v->i)
            f = (double)v->i[r];
        else {
            char tmp[64];
            size_t n = v->s[r].n < 63 ? v->s[r].n : 63;
            memcpy(tmp, v->s[r].p, n);
            tmp[n] = 0;
            f = strtod(tmp, NULL);
        }
        buf_printf(out, "%.3f", f);
        return;
    }
    /* T */
    if (k == TK_ARRAY || k == TK_ROW || k == TK_MAP) { /* PostgreSQL's text form */
        text_format_vec(v, r, out);
        return;
    }
    if (k == TK_VARIANT) { /* JSON text, bytes shown as a string's are */
        Buf t = BUF_INIT;
        text_format_vec(v, r, &t);
        for (size_t i = 0; i < t.n; i++)
            buf_putc(out, t.p[i] < 0x20 || t.p[i] > 0x7e ? '@' : (char)t.p[i]);
        buf_free(&t);
        return;
    }
    if (v->s) {
        if (v->s[r].n == 0) {
            buf_puts(out, "(empty)");
            return;
        }
        for (uint32_t i = 0; i < v->s[r].n; i++) {
            unsigned char c = (unsigned char)v->s[r].p[i];
            buf_putc(out, c < 0x20 || c > 0x7e ? '@' : (char)c);
        }
        return;
    }
    if (k == TK_BOOL) {
        buf_puts(out, v->i[r] ? "1" : "0");
        return;
    }
    if (v->f) { /* SQLite prints a REAL with 15 significant digits, ".0" when integral */
        char tmp[64];
        snprintf(tmp, sizeof(tmp), "%.15g", v->f[r]);
        buf_puts(out, tmp);
        if (!strpbrk(tmp, ".eEni"))
            buf_puts(out, ".0");
        return;
    }
    text_format_vec(v, r, out);
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Compare rows as the harness does for rowsort: column 1's text, then 2... */
static int g_ncol;
static int cmp_row(const void *a, const void *b)
{
    char *const *x = a, *const *y = b;
    for (int j = 0; j < g_ncol; j++) {
        int c = strcmp(x[j], y[j]);
        if (c)
            return c;
    }
    return 0;
}

/* ---- records ---- */

typedef struct Lines {
    char **v;
    int n;
} Lines;

static void split_lines(char *text, Lines *out)
{
    int cap = 0;
    out->v = NULL;
    out->n = 0;
    VEC_RESERVE(out->v, cap, 1024);
    char *p = text;
    while (*p) {
        char *e = strchr(p, '\n');
        if (e)
            *e = 0;
        size_t n = strlen(p);
        if (n && p[n - 1] == '\r')
            p[n - 1] = 0;
        *VEC_PUSH(out->v, out->n, cap) = p;
        if (!e)
            break;
        p = e + 1;
    }
}

static bool blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

typedef struct FileRun {
    const char *path;
    const Opts *o;
    SltDb db;
    int threshold;
    Counts c;
    uint64_t seed;
} FileRun;

static void note_skip(FileRun *f, int line, const char *why)
{
    f->c.skipped++;
    if (skipped_out)
        fprintf(skipped_out, "%s:%d\t%s\n", short_name(f->path), line, why);
}

static void fail(FileRun *f, int line, const char *sql, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(FileRun *f, int line, const char *sql, const char *fmt, ...)
{
    f->c.failed++;
    if (!f->o->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "FAIL %s:%d: ", f->path, line);
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n  sql: %s\n", sql);
    va_end(ap);
}

static void run_query(FileRun *f, int line, const char *types, const char *sort, const char *sql,
                      char **expect, int nexpect)
{
    QResult res;
    Err err = {0};
    SltFeed feed = {f->o->incremental, f->o->check_steps, f->seed++, NULL};
    int ncol = (int)strlen(types);
    if (db_query(&f->db, sql, &feed, &res, &err)) {
        if (err.line)
            fail(f, line, sql, "query failed: %d:%d: %s", err.line, err.col, err.msg);
        else
            fail(f, line, sql, "query failed: %s", err.msg);
        return;
    }
    if (res.ncol != ncol) {
        fail(f, line, sql, "%d columns, expected %d", res.ncol, ncol);
        qresult_free(&res);
        sl_free(feed.step_mismatch);
        return;
    }
    int64_t nrows = res.rows->n, nv = nrows * ncol;
    char **vals = sl_malloc(sizeof(char *) * (size_t)(nv + 1));
    for (int64_t r = 0; r < nrows; r++)
        for (int j = 0; j < ncol; j++) {
            Buf b = BUF_INIT;
            print_value(&res.rows->col[j], r, types[j], &b);
            buf_cstr(&b);
            vals[r * ncol + j] = (char *)b.p;
        }
    qresult_free(&res);
    if (!strcmp(sort, "rowsort")) {
        g_ncol = ncol;
        qsort(vals, (size_t)nrows, sizeof(char *) * (size_t)ncol, cmp_row);
    } else if (!strcmp(sort, "valuesort"))
        qsort(vals, (size_t)nv, sizeof(char *), cmp_cstr);
    bool ok;
    char got[128] = "";
    int hv;
    char hh[64];
    if (nexpect == 1 && sscanf(expect[0], "%d values hashing to %63s", &hv, hh) == 2) {
        struct md5_ctx m;
        uint8_t dg[MD5_DIGEST_SIZE];
        md5_init(&m);
        for (int64_t i = 0; i < nv; i++) {
            md5_update(&m, strlen(vals[i]), (const uint8_t *)vals[i]);
            md5_update(&m, 1, (const uint8_t *)"\n");
        }
        md5_digest(&m, sizeof(dg), dg);
        int k = snprintf(got, sizeof(got), "%lld values hashing to ", (long long)nv);
        for (int i = 0; i < MD5_DIGEST_SIZE; i++)
            k += snprintf(got + k, sizeof(got) - (size_t)k, "%02x", dg[i]);
        ok = !strcmp(got, expect[0]);
        if (!ok)
            fail(f, line, sql, "expected \"%s\", got \"%s\"", expect[0], got);
    } else {
        ok = nv == nexpect;
        for (int64_t i = 0; i < nv && ok; i++)
            ok = !strcmp(vals[i], expect[i]);
        if (!ok) {
            f->c.failed++;
            if (f->o->verbose) {
                printf("FAIL %s:%d: wrong result\n  sql: %s\n  expected (%d values):", f->path,
                       line, sql, nexpect);
                for (int i = 0; i < nexpect && i < 40; i++)
                    printf(" %s", expect[i]);
                printf("\n  actual (%lld values):  ", (long long)nv);
                for (int64_t i = 0; i < nv && i < 40; i++)
                    printf(" %s", vals[i]);
                printf("\n");
            }
        }
    }
    if (ok && feed.step_mismatch) {
        ok = false;
        fail(f, line, sql, "incremental check: %s", feed.step_mismatch);
    }
    if (ok)
        f->c.passed++;
    sl_free(feed.step_mismatch);
    for (int64_t i = 0; i < nv; i++)
        sl_free(vals[i]);
    sl_free(vals);
}

static Counts run_file(const char *path, const Opts *o)
{
    FileRun f = {0};
    f.path = path;
    f.o = o;
    f.threshold = 8;
    f.seed = 0x5eed;
    db_init(&f.db, o->workers);
    size_t len;
    char *text = slurp(path, &len);
    if (!text) {
        fprintf(stderr, "sluice-slt: cannot read \"%s\": %s\n", path, strerror(errno));
        f.c.failed++;
        return f.c;
    }
    Lines L;
    split_lines(text, &L);
    int i = 0;
    Buf sql = BUF_INIT;
    while (i < L.n) {
        /* skip blank lines and comments between records */
        if (blank(L.v[i]) || L.v[i][0] == '#') {
            i++;
            continue;
        }
        bool skip = false;
        const char *why = NULL;
        char cond[64], name[64], whybuf[160];
        /* conditions */
        while (i < L.n && sscanf(L.v[i], "%63s %63s", cond, name) == 2 &&
               (!strcmp(cond, "skipif") || !strcmp(cond, "onlyif"))) {
            bool match = !strcasecmp(name, ENGINE);
            if (!strcmp(cond, "skipif") ? match : !match) {
                skip = true;
                snprintf(whybuf, sizeof(whybuf), "%s %s (not this engine's)", cond, name);
                why = whybuf;
            }
            i++;
            while (i < L.n && L.v[i][0] == '#')
                i++;
        }
        if (i >= L.n)
            break;
        char *head = L.v[i];
        int hline = i + 1;
        i++;
        char kind[64] = "", a1[64] = "", a2[64] = "", a3[64] = "";
        sscanf(head, "%63s %63s %63s %63s", kind, a1, a2, a3);
        if (!strcmp(kind, "halt")) {
            if (!skip)
                break;
            continue;
        }
        if (!strcmp(kind, "hash-threshold")) {
            f.threshold = atoi(a1);
            continue;
        }
        /* body: lines up to a blank line; comment lines dropped */
        sql.n = 0;
        char **expect = NULL;
        int nexpect = 0, cap = 0;
        bool in_result = false;
        while (i < L.n && !blank(L.v[i])) {
            char *l = L.v[i++];
            if (l[0] == '#' && !in_result)
                continue;
            if (!strcmp(kind, "query") && !in_result && !strcmp(l, "----")) {
                in_result = true;
                continue;
            }
            if (in_result) {
                *VEC_PUSH(expect, nexpect, cap) = l;
            } else {
                if (sql.n)
                    buf_putc(&sql, '\n');
                buf_puts(&sql, l);
            }
        }
        const char *reason = skip ? NULL : skip_reason(path, hline);
        if (strcmp(kind, "statement") && strcmp(kind, "query")) {
            if (!skip)
                fprintf(stderr, "sluice-slt: %s:%d: unknown record \"%s\" ignored\n", path, hline,
                        kind);
            sl_free(expect);
            continue;
        }
        if (skip || reason) {
            note_skip(&f, hline, skip ? why : reason);
            sl_free(expect);
            continue;
        }
        const char *q = buf_cstr(&sql);
        Err err = {0};
        if (getenv("SLUICE_SLT_TRACE"))
            fprintf(stderr, "%s:%d: %s\n", path, hline, q);
        if (!strcmp(kind, "statement")) {
            int rc = db_exec(&f.db, q, &err);
            bool want_ok = !strcmp(a1, "ok");
            if ((rc == 0) == want_ok)
                f.c.passed++;
            else if (want_ok)
                fail(&f, hline, q, "statement failed: %s", err.msg);
            else
                fail(&f, hline, q, "statement succeeded but an error was expected");
        } else {
            const char *sort = a2[0] && strncmp(a2, "label-", 6) ? a2 : "nosort";
            run_query(&f, hline, a1, sort, q, expect, nexpect);
        }
        sl_free(expect);
    }
    buf_free(&sql);
    sl_free(L.v);
    sl_free(text);
    db_free(&f.db);
    return f.c;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sluice-slt [--incremental] [--check-steps] [--workers N] [--verbose]\n"
            "                  [--skip-list FILE] [--list-skipped FILE] FILE...\n"
            "  --incremental      feed each table over several steps, with deletions and\n"
            "                     re-insertions, and check the view after the last\n"
            "  --check-steps      with --incremental: also compare the view after every\n"
            "                     step with a from-scratch evaluation\n"
            "  --workers N        worker threads per query (default 1)\n"
            "  --verbose          print each failing record with expected and actual\n"
            "  --skip-list FILE   skip the records listed (path:line<TAB>reason)\n"
            "  --list-skipped F   write every skipped record with its reason to F\n");
}

int main(int argc, char **argv)
{
    Opts o = {0};
    o.workers = 1;
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash keeps the lines before it */
    int nfiles = 0;
    char **files = sl_calloc((size_t)argc, sizeof(char *));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--incremental"))
            o.incremental = true;
        else if (!strcmp(a, "--check-steps"))
            o.check_steps = o.incremental = true;
        else if (!strcmp(a, "--verbose"))
            o.verbose = true;
        else if (!strcmp(a, "--workers") && i + 1 < argc)
            o.workers = atoi(argv[++i]);
        else if (!strcmp(a, "--skip-list") && i + 1 < argc)
            o.skip_list = argv[++i];
        else if (!strcmp(a, "--list-skipped") && i + 1 < argc)
            o.list_skipped = argv[++i];
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            fprintf(stderr, "sluice-slt: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else
            files[nfiles++] = argv[i];
    }
    if (!nfiles || o.workers < 1) {
        usage(stderr);
        return 2;
    }
    if (net_launched()) {
        /* under mpirun: every rank runs the same file, each with its share
           of the workers (scale-out); rank 0 alone prints */
        Err e = {0};
        if (net_init(&e)) {
            fprintf(stderr, "sluice-slt: %s\n", e.msg);
            return 2;
        }
        oneshot_spmd(true);
        if (net_host() > 0) {
            if (!freopen("/dev/null", "w", stdout))
                return 2;
            o.list_skipped = NULL;
        }
    }
    if (o.skip_list)
        load_skips(o.skip_list);
    if (o.list_skipped && !(skipped_out = fopen(o.list_skipped, "w"))) {
        fprintf(stderr, "sluice-slt: cannot write \"%s\": %s\n", o.list_skipped, strerror(errno));
        return 2;
    }
    Counts all = {0};
    for (int i = 0; i < nfiles; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        Counts c = run_file(files[i], &o);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("%s: %lld passed, %lld failed, %lld skipped (%.1f s%s)\n", files[i],
               (long long)c.passed, (long long)c.failed, (long long)c.skipped,
               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
               o.incremental ? ", incremental" : "");
        fflush(stdout);
        all.passed += c.passed;
        all.failed += c.failed;
        all.skipped += c.skipped;
    }
    printf("%lld passed, %lld failed, %lld skipped\n", (long long)all.passed,
           (long long)all.failed, (long long)all.skipped);
    fflush(stdout);
    net_finalize();
    if (skipped_out)
        fclose(skipped_out);
    for (int i = 0; i < nskips; i++) {
        free(skips[i].key);
        free(skips[i].reason);
    }
    sl_free(skips);
    sl_free(files);
    return all.failed ? 1 : 0;
}
