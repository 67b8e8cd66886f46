/*
 * cli/main.c - the sluice command: `run` compiles a program and runs it,
 * `check` compiles it and prints the circuit. Exit status: 0 success,
 * 1 error in the program or while running, 2 bad command line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/mem.h"
#include "../circuit/circuit.h"
#include "../io/connector.h"
#include "../pipeline/pipeline.h"

#define SLUICE_VERSION "0.1.0"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice run PROGRAM.sql [--workers N] [--until-done] [--dump DIR]\n"
            "                  [--step-rows N] [--progress|--no-progress]\n"
            "       sluice check PROGRAM.sql\n"
            "       sluice --version\n"
            "\n"
            "run     compile the program and run it: tables are fed by their connectors,\n"
            "        views are kept up to date step by step\n"
            "  --workers N    worker threads (default 1)\n"
            "  --until-done   stop once every input connector has ended\n"
            "  --dump DIR     at the end, write DIR/<name>.csv for every materialized\n"
            "                 table and view (sorted rows, header line)\n"
            "  --step-rows N  most input rows per step (default 1048576 per worker)\n"
            "check   compile the program; print the circuit or the errors\n");
}

static char *read_file(const char *path, Err *err)
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

static void print_err(const char *path, const Err *e)
{
    if (e->line)
        fprintf(stderr, "%s:%d:%d: %s: %s\n", path, e->line, e->col, err_kind(e->code), e->msg);
    else
        fprintf(stderr, "sluice: %s: %s\n", err_kind(e->code), e->msg);
}

static Circuit *compile_file(const char *path)
{
    Err e = {0};
    Circuit *c = NULL;
    char *text = read_file(path, &e);
    if (!text) {
        print_err(path, &e);
        return NULL;
    }
    if (circuit_compile(text, &c, &e))
        print_err(path, &e);
    sl_free(text);
    return c;
}

static long parse_long(const char *flag, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || n < lo || n > hi) {
        fprintf(stderr, "sluice: %s needs a number between %ld and %ld\n", flag, lo, hi);
        exit(2);
    }
    return n;
}

static int cmd_run(int argc, char **argv)
{
    PipelineOpts o = {1, false, NULL, 0, -1};
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--workers"))
            o.workers = (int)parse_long(a, ++i < argc ? argv[i] : NULL, 1, 256);
        else if (!strcmp(a, "--until-done"))
            o.until_done = true;
        else if (!strcmp(a, "--dump")) {
            if (++i >= argc) {
                fprintf(stderr, "sluice: --dump needs a directory\n");
                return 2;
            }
            o.dump_dir = argv[i];
        } else if (!strcmp(a, "--step-rows"))
            o.step_rows = parse_long(a, ++i < argc ? argv[i] : NULL, 1, 1L << 40);
        else if (!strcmp(a, "--progress"))
            o.progress = 1;
        else if (!strcmp(a, "--no-progress"))
            o.progress = 0;
        else if (a[0] == '-') {
            fprintf(stderr, "sluice: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else if (path) {
            fprintf(stderr, "sluice: more than one program given (%s and %s)\n", path, a);
            return 2;
        } else
            path = a;
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    Circuit *c = compile_file(path);
    if (!c)
        return 1;
    Err e = {0};
    int rc = pipeline_run(c, &o, &e);
    if (rc)
        print_err(path, &e);
    circuit_free(c);
    return rc ? 1 : 0;
}

static int cmd_check(int argc, char **argv)
{
    if (argc != 1) {
        usage(stderr);
        return 2;
    }
    Circuit *c = compile_file(argv[0]);
    if (!c)
        return 1;
    Err e = {0};
    Connectors cs;
    if (connectors_open(c, false, &cs, &e)) {
        print_err(argv[0], &e);
        circuit_free(c);
        return 1;
    }
    connectors_close(&cs);
    Buf b = BUF_INIT;
    circuit_explain(c, &b);
    fwrite(b.p, 1, b.n, stdout);
    buf_free(&b);
    circuit_free(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "run"))
        return cmd_run(argc - 2, argv + 2);
    if (!strcmp(argv[1], "check"))
        return cmd_check(argc - 2, argv + 2);
    if (!strcmp(argv[1], "--version")) {
        printf("sluice %s\n", SLUICE_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "sluice: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
