/*
 * cli/lineagecmd.c - `sluice lineage PROGRAM.sql`: the program is read and
 * compiled as `sluice run` compiles it (cli_compile_run, so GET /lineage
 * of a running pipeline prints the same), then sql/lineage.h renders the
 * lineage of its views as JSON (the default), a Graphviz graph (dot), an
 * OpenLineage JobEvent with the column-lineage facet (openlineage), or,
 * with --impact TABLE.COLUMN, what a change of that column can change
 * (text, or JSON with --format json).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "../base/mem.h"
#include "../pipeline/pipeline.h"
#include "../sql/lineage.h"
#include "../sql/sql.h"
#include "diff.h"
#include "lineagecmd.h"

static void print_json(cJSON *j)
{
    char *s = cJSON_Print(j);
    printf("%s\n", s);
    cJSON_free(s);
    cJSON_Delete(j);
}

/* The impact as text: one line per view column, then one per view whose
   rows it decides. */
static void print_impact(cJSON *j)
{
    cJSON *it;
    printf("a change of %s can change:\n", cJSON_GetObjectItem(j, "source")->valuestring);
    int n = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "columns")) {
        printf("  column %s.%s (%s)\n", cJSON_GetObjectItem(it, "view")->valuestring,
               cJSON_GetObjectItem(it, "column")->valuestring,
               cJSON_GetObjectItem(it, "kind")->valuestring);
        n++;
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "rows")) {
        printf("  rows of %s (", cJSON_GetObjectItem(it, "view")->valuestring);
        cJSON *k;
        const char *sep = "";
        cJSON_ArrayForEach(k, cJSON_GetObjectItem(it, "kinds")) {
            printf("%s%s", sep, k->valuestring);
            sep = ", ";
        }
        printf(")\n");
        n++;
    }
    if (!n)
        printf("  nothing\n");
    cJSON_Delete(j);
}

/* The program's name for OpenLineage: the file name without directory
   and .sql. */
static char *job_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 4 && !strcmp(b + n - 4, ".sql"))
        n -= 4;
    return sl_strndup(b, n);
}

int cmd_lineage(int argc, char **argv)
{
    const char *path = NULL, *fmt = NULL, *impact = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--format") && has)
            fmt = argv[++i];
        else if (!strcmp(a, "--impact") && has)
            impact = argv[++i];
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "sluice: lineage: unknown option or missing value: %s\n", a);
            return 2;
        } else if (path) {
            fprintf(stderr, "sluice: lineage: more than one program given (%s and %s)\n", path, a);
            return 2;
        } else
            path = a;
    }
    if (!path) {
        fprintf(stderr, "sluice: lineage needs PROGRAM.sql\n");
        return 2;
    }
    if (!fmt)
        fmt = impact ? "text" : "json";
    if (strcmp(fmt, "json") && strcmp(fmt, "dot") && strcmp(fmt, "openlineage") &&
        strcmp(fmt, "text")) {
        fprintf(stderr, "sluice: lineage: --format needs json, dot, openlineage or (with --impact) text, not \"%s\"\n",
                fmt);
        return 2;
    }
    if (impact ? !strcmp(fmt, "dot") || !strcmp(fmt, "openlineage") : !strcmp(fmt, "text")) {
        fprintf(stderr, "sluice: lineage: --format %s %s --impact\n", fmt,
                impact ? "does not go with" : "needs");
        return 2;
    }
    Err e = {0};
    char *text = cli_read_file(path, &e);
    if (!text) {
        cli_print_err(path, &e); /* as run and check print it */
        return 1;
    }
    Circuit *c = cli_compile_run(text, path);
    sl_free(text);
    if (!c)
        return 1;
    Lineage *l = lineage_new(c);
    int rc = 0;
    if (impact) {
        cJSON *j = lineage_impact(l, impact, &e);
        if (!j) {
            fprintf(stderr, "sluice: lineage: %s\n", e.msg);
            rc = 1;
        } else if (!strcmp(fmt, "json"))
            print_json(j);
        else
            print_impact(j);
    } else if (!strcmp(fmt, "json")) {
        print_json(lineage_json_graph(l, PIPELINE_ERRORS_TABLE));
    } else if (!strcmp(fmt, "dot")) {
        Buf b = BUF_INIT;
        lineage_dot(l, PIPELINE_ERRORS_TABLE, &b);
        fwrite(b.p, 1, b.n, stdout);
        buf_free(&b);
    } else {
        char when[64];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        char *job = job_name(path);
        print_json(lineage_openlineage(l, "sluice", job, when, PIPELINE_ERRORS_TABLE));
        sl_free(job);
    }
    lineage_free(l);
    circuit_free(c);
    return rc;
}
