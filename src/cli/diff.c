/*
 * cli/diff.c - `sluice diff --storage DIR NEW.sql` and `sluice check OLD.sql
 * NEW.sql`: what a restart with NEW.sql would keep, recompute, read again
 * and drop (sql/progdiff.h; rules and examples in docs/bootstrapping.md).
 *
 * The old program comes from the newest checkpoint of the storage
 * (pipeline/progstore.h, which reads without writing or locking), or from
 * a file. Both programs are compiled as `sluice run` compiles them
 * (cli_compile_run: the rejected-records table added), so node numbers
 * are the ones the checkpoints name. Exit status 0 whether or not the
 * programs differ.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <xxhash.h>

#include "../base/mem.h"
#include "../pipeline/pipeline.h"
#include "../sql/progdiff.h"
#include "../sql/sql.h"
#include "../pipeline/boot.h"
#include "../pipeline/progstore.h"
#include "diff.h"

char *cli_read_file(const char *path, Err *err)
{
    FILE *f = fopen(path, "rb");
    Buf b = BUF_INIT;
    char tmp[65536];
    size_t n;
    if (!f) {
        err_set(err, SL_EIO, "cannot open \"%s\": %s", path, strerror(errno));
        return NULL;
    }
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        buf_append(&b, tmp, n);
    if (ferror(f)) {
        err_set(err, SL_EIO, "cannot read \"%s\": %s", path, strerror(errno));
        fclose(f);
        buf_free(&b);
        return NULL;
    }
    fclose(f);
    buf_cstr(&b);
    return (char *)b.p;
}

void cli_print_err(const char *where, const Err *e)
{
    if (e->line)
        fprintf(stderr, "%s:%d:%d: %s: %s\n", where, e->line, e->col, err_kind(e->code), e->msg);
    else
        fprintf(stderr, "sluice: %s: %s\n", err_kind(e->code), e->msg);
}

Circuit *cli_compile_run_flags(const char *text, const char *where, int flags)
{
    Err e = {0};
    Circuit *c = NULL;
    if (circuit_compile_with(text, NULL, 0, flags, &c, &e)) {
        cli_print_err(where, &e);
        return NULL;
    }
    if (circuit_find_rel(c, PIPELINE_ERRORS_TABLE) >= 0)
        return c;
    /* a running pipeline keeps the records it rejects in a table of its
       own (docs/errors.md); the program's own text compiles first, so its
       errors point into it */
    Buf b = BUF_INIT;
    buf_printf(&b, "%s\n%s\n", text, PIPELINE_ERRORS_DDL);
    circuit_free(c);
    c = NULL;
    if (circuit_compile_with((const char *)b.p, NULL, 0, flags, &c, &e))
        cli_print_err(where, &e);
    buf_free(&b);
    return c;
}

Circuit *cli_compile_run(const char *text, const char *where)
{
    return cli_compile_run_flags(text, where, 0);
}

/* Does text compiled with flags (as run compiles it) have the shape the
   checkpoint records? */
static bool has_shape(const char *text, int flags, const char *shape)
{
    Circuit *c = cli_compile_run_flags(text, "the storage's program", flags);
    char cs[32];
    snprintf(cs, sizeof(cs), "%016" PRIx64, c ? ckpt_circuit_shape(c) : 0);
    bool same = c && !strcmp(cs, shape);
    circuit_free(c);
    return same;
}

int cli_storage_flags(const char *storage, int flags, bool quiet)
{
    char fp[32], shape[32];
    Err e = {0};
    if (!storage || progstore_circuit(storage, fp, shape, &e))
        return flags; /* no checkpoint: a new layout (the restart says why not) */
    int alt = flags | CC_NO_NARROW; /* no recorded shape: builds before narrowing */
    const char *how = "it records no shape";
    if (shape[0]) {
        char *text = NULL, *notes = NULL;
        int64_t step = 0;
        alt = flags;
        how = "by the shape it records";
        if (!progstore_read(storage, &text, &step, &notes, &e) && !has_shape(text, flags, shape) &&
            has_shape(text, flags ^ CC_NO_NARROW, shape))
            alt = flags ^ CC_NO_NARROW;
        sl_free(text);
        sl_free(notes);
    }
    if (alt != flags && !quiet)
        fprintf(stderr, "sluice: storage %s: its checkpoint holds %s (%s): continuing in that "
                        "layout%s\n",
                storage,
                alt & CC_NO_NARROW ? "the circuit as builds before join narrowing compiled it"
                                   : "the circuit with narrowed joins",
                how,
                alt & CC_NO_NARROW ? ", joins keep their unread columns (as constants); a new "
                                     "storage gets narrowed joins"
                                   : " (--no-join-narrowing applies to a new storage)");
    return alt;
}

/* The program in path compiled as `run` does; its text to *text. */
static Circuit *compile_path(const char *path, char **text, int flags)
{
    Err e = {0};
    *text = cli_read_file(path, &e);
    if (!*text) {
        fprintf(stderr, "sluice: %s\n", e.msg);
        return NULL;
    }
    return cli_compile_run_flags(*text, path, flags);
}

/* Print the diff of old and new; 0. */
static int show(const Circuit *old, const char *old_text, const Circuit *new_c,
                const char *new_text, const char *old_name, const char *new_name, bool json)
{
    ProgDiff *d = progdiff_new(old, old_text, new_c, new_text);
    Buf b = BUF_INIT;
    if (json) {
        cJSON *j = progdiff_json(d, PIPELINE_ERRORS_TABLE);
        cJSON_AddStringToObject(j, "old", old_name);
        cJSON_AddStringToObject(j, "new", new_name);
        char *s = cJSON_Print(j);
        buf_printf(&b, "%s\n", s);
        cJSON_free(s);
        cJSON_Delete(j);
    } else {
        buf_printf(&b, "old: %s\nnew: %s\n\n", old_name, new_name);
        progdiff_print(d, PIPELINE_ERRORS_TABLE, &b);
    }
    fwrite(b.p, 1, b.n, stdout);
    buf_free(&b);
    progdiff_free(d);
    return 0;
}

static int parse_format(const char *v, bool *json)
{
    if (!v || !strcmp(v, "text"))
        *json = false;
    else if (!strcmp(v, "json"))
        *json = true;
    else {
        fprintf(stderr, "sluice: --format needs text or json, not \"%s\"\n", v);
        return 2;
    }
    return 0;
}

int cmd_check_diff(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *fmt = NULL;
    int nf = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc)
            fmt = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "sluice: check: unknown option %s\n", argv[i]);
            return 2;
        } else if (nf < 2)
            files[nf++] = argv[i];
        else {
            fprintf(stderr, "sluice: check takes PROGRAM.sql, or OLD.sql NEW.sql\n");
            return 2;
        }
    }
    bool json;
    if (nf != 2) {
        fprintf(stderr, "sluice: check takes PROGRAM.sql, or OLD.sql NEW.sql\n");
        return 2;
    }
    if (parse_format(fmt, &json))
        return 2;
    char *otext = NULL, *ntext = NULL;
    Circuit *old = compile_path(files[0], &otext, 0);
    Circuit *new_c = old ? compile_path(files[1], &ntext, 0) : NULL;
    int rc = old && new_c ? show(old, otext, new_c, ntext, files[0], files[1], json) : 1;
    circuit_free(old);
    circuit_free(new_c);
    sl_free(otext);
    sl_free(ntext);
    return rc;
}

int cmd_diff(int argc, char **argv)
{
    const char *storage = NULL, *path = NULL, *fmt = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--storage") && has)
            storage = argv[++i];
        else if (!strcmp(a, "--format") && has)
            fmt = argv[++i];
        else if (!strcmp(a, "--s3-endpoint") && has)
            setenv("SLUICE_S3_ENDPOINT", argv[++i], 1);
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "sluice: diff: unknown option or missing value: %s\n", a);
            return 2;
        } else if (path) {
            fprintf(stderr, "sluice: diff: more than one program given (%s and %s)\n", path, a);
            return 2;
        } else
            path = a;
    }
    bool json;
    if (!storage || !path) {
        fprintf(stderr, "sluice: diff needs --storage DIR and NEW.sql\n");
        return 2;
    }
    if (parse_format(fmt, &json))
        return 2;
    char *ntext = NULL;
    int flags = cli_storage_flags(storage, 0, true); /* as run would compile them */
    Circuit *new_c = compile_path(path, &ntext, flags);
    if (!new_c) {
        sl_free(ntext);
        return 1;
    }
    int64_t step = 0;
    char *text = NULL, *notes = NULL;
    Err e = {0};
    int rc = 1;
    if (progstore_read(storage, &text, &step, &notes, &e))
        fprintf(stderr, "%s%ssluice: %s\n", notes ? "sluice: storage: " : "", notes ? notes : "",
                e.msg);
    else {
        char where[1024];
        snprintf(where, sizeof(where), "%s (program of the checkpoint of step %lld)", storage,
                 (long long)step);
        Circuit *old = cli_compile_run_flags(text, where, flags);
        if (old)
            rc = show(old, text, new_c, ntext, where, path, json);
        circuit_free(old);
    }
    sl_free(text);
    sl_free(notes);
    sl_free(ntext);
    circuit_free(new_c);
    return rc;
}

int cli_boot_policy(const char *v)
{
    if (!v)
        return -1;
    if (!strcmp(v, "allow"))
        return BOOT_ALLOW;
    if (!strcmp(v, "reject"))
        return BOOT_REJECT;
    if (!strcmp(v, "await_approval"))
        return BOOT_AWAIT;
    return -1;
}

int cli_bootstrap(PipelineOpts *o, const Circuit *c, int flags, const char *text,
                  const char *path, int policy, bool http, CliBoot *cb)
{
    memset(cb, 0, sizeof(*cb));
    int64_t step = 0;
    char *notes = NULL;
    Err e = {0};
    if (!o->storage || progstore_read(o->storage, &cb->old_text, &step, &notes, &e)) {
        sl_free(notes); /* no checkpoint (or none with its program): the restart says */
        return 0;
    }
    sl_free(notes);
    uint64_t old_fp = XXH64(cb->old_text, strlen(cb->old_text), 0);
    if (old_fp == o->fingerprint)
        return 0;
    char where[1024];
    snprintf(where, sizeof(where), "%s (program of the checkpoint of step %lld)", o->storage,
             (long long)step);
    if (!(cb->old = cli_compile_run_flags(cb->old_text, where, flags)))
        return 1;
    ProgDiff *d = progdiff_new(cb->old, cb->old_text, c, text);
    bool changed = progdiff_changed(d);
    Buf b = BUF_INIT;
    if (changed) {
        buf_printf(&b, "sluice: storage %s holds a checkpoint of another program; what "
                        "changed:\n", o->storage);
        progdiff_print(d, PIPELINE_ERRORS_TABLE, &b);
    } else { /* layout, comments, order: nothing to approve */
        buf_printf(&b, "sluice: storage %s holds a checkpoint of a program with another text "
                        "but the same tables and views: restarting with this one\n", o->storage);
        policy = BOOT_ALLOW;
    }
    fwrite(b.p, 1, b.n, stderr);
    buf_free(&b);
    progdiff_free(d);
    if (policy == BOOT_UNSET)
        policy = http ? BOOT_AWAIT : BOOT_UNSET;
    if (policy == BOOT_REJECT || policy == BOOT_UNSET) {
        fprintf(stderr, "sluice: %s: not restarting with a changed program (%s): start with the "
                        "program that wrote the storage, use a new storage directory, or give "
                        "--bootstrap allow to keep what still holds and compute what changed "
                        "(docs/bootstrapping.md)\n",
                path, policy == BOOT_REJECT ? "--bootstrap reject" : "the default without --http");
        return 1;
    }
    if (!(cb->plan = boot_plan_new(cb->old, cb->old_text, old_fp, c, text, &e))) {
        fprintf(stderr, "sluice: %s: %s\n", path, e.msg);
        return 1;
    }
    cb->old_fp = old_fp;
    o->boot = cb->plan;
    o->boot_await = policy == BOOT_AWAIT;
    return 0;
}

int cli_bootstrap_settle(const PipelineOpts *o, CliBoot *cb, const char *path)
{
    /* the old program settles its storage: its journaled steps replayed,
       a checkpoint with nothing after it */
    Err e = {0};
    PipelineOpts so = *o;
    so.fingerprint = cb->old_fp;
    so.program = cb->old_text;
    so.dump_dir = NULL;
    so.until_done = false;
    so.start_paused = false;
    so.boot = NULL;
    so.boot_await = false;
    so.progress = 0;
    /* on this host alone (scale-out: the other hosts wait for the new
       program's pipeline; a restart may use another host count) */
    so.hosts = 1;
    Pipeline *op = pipeline_new(cb->old, &so, &e);
    int rc = op ? pipeline_settle(op, &e) : e.code;
    pipeline_free(op);
    if (rc) {
        fprintf(stderr, "sluice: %s: settling the storage with its old program: %s\n", path,
                e.msg);
        return 1;
    }
    cb->plan->unsettled = false;
    return 0;
}

void cli_bootstrap_free(CliBoot *cb)
{
    boot_plan_free(cb->plan);
    circuit_free(cb->old);
    sl_free(cb->old_text);
    memset(cb, 0, sizeof(*cb));
}
