/*
 * fuzz/fuzz_ft.h - what the storage targets (fuzz_manifest, fuzz_journal,
 * fuzz_ingress_log) share: a program with a generated input, a table fed
 * over "HTTP" and stateful views; a template storage directory written
 * once per process by a real run of it (checkpoint batch files, manifest,
 * journal and ingress log: the harness needs no checked-in binary files
 * that a format change would break); and the entry that reads storage
 * back, pipeline_new with --storage (ckpt.c ft_open: manifests through
 * store.c, the state's batch files, the journal and the ingress log
 * through journal.c and log.c, the logged input queued again).
 *
 * SLUICE_FUZZ_SEEDS=DIR in the environment makes a target write its seed
 * inputs, cut from the template, into DIR and exit (how fuzz/corpus/ was
 * made; fuzz/README.md).
 */
#ifndef SL_FUZZ_FUZZ_FT_H
#define SL_FUZZ_FUZZ_FT_H

#include <signal.h>
#include <sys/wait.h>
#include <xxhash.h>

#include "fuzz.h"
#include "base/mem.h"
#include "io/format.h"
#include "pipeline/pipeline.h"
#include "storage/storage.h"

static const char *const FT_PROGRAM =
    "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, amount DECIMAL(10,2) NOT NULL) WITH\n"
    "  ('connectors' = '[{\"transport\": {\"name\": \"datagen\", \"config\": {\"seed\": 1,\n"
    "    \"plan\": [{\"limit\": 40, \"fields\": {\"id\": {\"range\": [1, 8]},\n"
    "    \"amount\": {\"range\": [1, 100]}}}]}}}]');\n"
    "CREATE TABLE u (k BIGINT NOT NULL PRIMARY KEY, v DOUBLE, s VARCHAR, d DATE);\n"
    "CREATE MATERIALIZED VIEW totals AS SELECT name, sum(amount) AS total, count(*) AS n\n"
    "  FROM t GROUP BY name;\n"
    "CREATE MATERIALIZED VIEW joined AS SELECT u.k, u.s, t.amount FROM u, t WHERE u.k = t.id;\n";

static Circuit *ft_c;
static const char *ft_tpl;    /* the template storage directory */

static inline PipelineOpts fz_ft_opts(const char *dir)
{
    PipelineOpts o = {.workers = 2, .progress = 0, .storage = dir,
                      .fault_tolerance = FT_EXACTLY_ONCE, .checkpoint_interval = 0,
                      .fingerprint = XXH64(FT_PROGRAM, strlen(FT_PROGRAM), 0)};
    return o;
}

/* Push rows (JSON lines) into table rel of p as one HTTP batch would. */
static inline void fz_ft_push(Pipeline *p, int rel, const char *lines)
{
    const Relation *r = &ft_c->rels[rel];
    RowSchema s = {r->ncol, (const char *const *)r->colnames, r->types};
    InBatch *b = inbatch_new(ft_c, rel);
    for (const char *l = lines; *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        Err e;
        err_init(&e);
        if (fmt_json_parse(&s, l, n, inbatch_room(b), inbatch_arena(b), &e)) {
            fprintf(stderr, "fuzz: template row does not parse: %s\n", e.msg);
            abort();
        }
        l += n + (nl ? 1 : 0);
    }
    int64_t token;
    if (pipeline_push_take(p, b, 0, &token)) {
        fprintf(stderr, "fuzz: template push refused\n");
        abort();
    }
}

/* Two runs of the program into ft_tpl: a checkpoint, then a restart. */
static inline void fz_ft_build(void)
{
    for (int round = 0; round < 2; round++) {
        PipelineOpts o = fz_ft_opts(ft_tpl);
        o.until_done = true;
        Err e;
        err_init(&e);
        Pipeline *p = pipeline_new(ft_c, &o, &e);
        if (!p) {
            fprintf(stderr, "fuzz: template pipeline: %s\n", e.msg);
            abort();
        }
        int u = circuit_find_rel(ft_c, "u");
        fz_ft_push(p, u, round ? "{\"k\": 3, \"v\": 0.5, \"s\": \"three\", \"d\": \"2024-02-29\"}\n"
                                 "{\"k\": 9, \"v\": null, \"s\": \"\", \"d\": null}"
                               : "{\"k\": 1, \"v\": 1.5, \"s\": \"one\", \"d\": \"2024-01-01\"}\n"
                                 "{\"k\": 2, \"v\": -2e10, \"s\": \"two\", \"d\": \"1999-12-31\"}");
        if (pipeline_run(p, &e)) {
            fprintf(stderr, "fuzz: template run: %s\n", e.msg);
            abort();
        }
        pipeline_free(p);
    }
}

/*
 * Compile the program and write the template storage (once). The runs
 * happen in a child process of their own (a process group, so that the
 * checkpoint's grandchild goes too), retried when one makes no progress
 * for two minutes: a checkpoint fork()s while threads run, and a child can
 * then block forever in the sanitizer's allocator (clang 14's ASan is not
 * fork-safe) - a hang of the harness, not a finding.
 */
static inline void fz_ft_init(void)
{
    if (ft_c)
        return;
    ft_c = fz_compile(FT_PROGRAM);
    ft_tpl = fz_dir("template");
    for (int attempt = 0; attempt < 5; attempt++) {
        fz_clear(ft_tpl);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
            abort();
        if (pid == 0) {
            setpgid(0, 0);
            fz_ft_build();
            _exit(0);
        }
        setpgid(pid, pid);
        int status = 0;
        bool done = false;
        for (int tick = 0; tick < 1200 && !done; tick++) { /* hang guard: 120 s */
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid)
                done = true;
            else
                usleep(100000);
        }
        if (!done) {
            fprintf(stderr, "fuzz: writing the template storage hung; trying again\n");
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            continue;
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            return;
        fprintf(stderr, "fuzz: writing the template storage failed (status %d)\n", status);
        abort();
    }
    fprintf(stderr, "fuzz: writing the template storage hung 5 times\n");
    abort();
}

/* Hard-link the template's batch files into dir (manifests name them). */
static inline void fz_ft_link_batches(const char *dir)
{
    DIR *d = opendir(ft_tpl);
    struct dirent *de;
    char from[512], to[512];
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, "batch-", 6))
            continue;
        snprintf(from, sizeof(from), "%s/%s", ft_tpl, de->d_name);
        snprintf(to, sizeof(to), "%s/%s", dir, de->d_name);
        if (link(from, to))
            abort();
    }
    if (d)
        closedir(d);
}

/* Read what dir holds back the way a restart does; errors are fine. */
static inline void fz_ft_open(const char *dir)
{
    PipelineOpts o = fz_ft_opts(dir);
    o.start_paused = true;
    Err e;
    err_init(&e);
    Pipeline *p = pipeline_new(ft_c, &o, &e);
    if (p)
        pipeline_free(p);
    else if (!e.msg[0])
        abort(); /* a failure says why */
}

/* The seed directory, when seeds are asked for. */
static inline const char *fz_seed_dir(void) { return getenv("SLUICE_FUZZ_SEEDS"); }

static inline void fz_seed_write(const char *name, const Buf *b)
{
    fz_write(fz_seed_dir(), name, b->p, b->n);
}

/* Records of the template's logs whose names start with prefix, as seeds:
   framed (mode 0) and raw (mode 1, the whole file). */
typedef struct SeedCtx {
    Buf framed;
} SeedCtx;

static inline int fz_seed_rec(void *ctx, const uint8_t *p, size_t n)
{
    fz_frame(&((SeedCtx *)ctx)->framed, p, n);
    return 0;
}

static inline void fz_ft_log_seeds(const char *prefix)
{
    Store *st;
    Err e;
    err_init(&e);
    if (store_open(ft_tpl, &st, &e))
        abort();
    char **names;
    int n;
    if (store_list(st, prefix, &names, &n, &e))
        abort();
    for (int i = 0; i < n; i++) {
        SeedCtx x = {BUF_INIT};
        buf_putc(&x.framed, 0);
        uint64_t torn;
        if (log_scan(st, names[i], fz_seed_rec, &x, &torn, &e))
            abort();
        if (x.framed.n <= 1) {
            buf_free(&x.framed);
            continue;
        }
        char name[300];
        snprintf(name, sizeof(name), "framed-%d", i);
        fz_seed_write(name, &x.framed);
        Buf b = BUF_INIT;
        buf_putc(&b, 1);
        fz_read(ft_tpl, names[i], &b);
        snprintf(name, sizeof(name), "raw-%d", i);
        fz_seed_write(name, &b);
        buf_free(&b);
        buf_free(&x.framed);
    }
    store_list_free(names, n);
    store_close(st);
}

/*
 * The log targets (fuzz_journal, fuzz_ingress_log): one segment named
 * segment (its prefix up to the first '-' names the kind) in a scratch
 * directory, read back by fz_ft_open. Input byte 0 bit 0 clear: the rest
 * is records framed as in fuzz.h, each appended with log_append (so they
 * pass the checksum and reach the decoder); set: the segment's bytes as
 * they are.
 */
static inline void fz_ft_write_log(const char *dir, const char *segment, const uint8_t *data,
                                   size_t size)
{
    if (data[0] & 1) {
        fz_write(dir, segment, data + 1, size - 1);
        return;
    }
    Store *st;
    Log *l;
    Err e;
    err_init(&e);
    if (store_open(dir, &st, &e) || log_create(st, segment, &l, &e))
        abort();
    const uint8_t *p = data + 1, *rec;
    size_t n;
    while (fz_next(&p, data + size, &rec, &n))
        if (log_append(l, rec, n, NULL, NULL, &e))
            abort();
    log_close(l);
    store_close(st);
}

/* LLVMFuzzerInitialize of a log target: the template, and with
   SLUICE_FUZZ_SEEDS the seeds of the logs named prefix* (then exit). */
static inline int fz_ft_log_init(const char *prefix)
{
    fz_ft_init();
    if (fz_seed_dir()) {
        fz_ft_log_seeds(prefix);
        fz_remove_dirs();
        _exit(0);
    }
    return 0;
}

/* LLVMFuzzerTestOneInput of a log target: scratch directory *dir (made
   on the first call, named for what), segment written, storage read. */
static inline int fz_ft_log_run(const char **dir, const char *what, const char *segment,
                                const uint8_t *data, size_t size)
{
    if (!*dir)
        *dir = fz_dir(what);
    if (size < 1)
        return 0;
    fz_clear(*dir);
    fz_ft_write_log(*dir, segment, data, size);
    fz_ft_open(*dir);
    return 0;
}

#endif
