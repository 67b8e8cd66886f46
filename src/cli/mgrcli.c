/*
 * cli/mgrcli.c - `sluice serve --dir DIR --http [HOST:]PORT` parses its
 * flags and hands over to manager_serve (src/manager/); the client
 * subcommands send one request each to a manager's /v0/pipelines API
 * (client.c) and print its answer: create (PUT with the program file's
 * text and runtime_config from flags), start|pause|stop (POST; start
 * --wait polls until RUNNING or FAILED), delete, status (the pipeline as
 * JSON), list (one line per pipeline).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "../base/mem.h"
#include "../manager/manager.h"
#include "client.h"
#include "diff.h"
#include "mgrcli.h"

enum { MAX_KEYS = 64 };

static int bad(const char *fmt, const char *v)
{
    fprintf(stderr, "sluice: ");
    fprintf(stderr, fmt, v ? v : "");
    fprintf(stderr, "\n");
    return 2;
}

int cmd_serve(int argc, char **argv)
{
    MgrOpts o = {.max_body = 64LL << 20, .grace = 10};
    o.srv.host = "127.0.0.1";
    o.srv.port = 8080;
    static char host[256];
    static ServerKey keys[MAX_KEYS];
    static const char *hosts[MAX_KEYS];
    int nk = 0, nh = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--dir") && v && *v)
            o.dir = argv[++i];
        else if (!strcmp(a, "--http") && v) {
            i++;
            const char *colon = strrchr(v, ':');
            const char *port = colon ? colon + 1 : v;
            if (colon && colon != v) {
                snprintf(host, sizeof(host), "%.*s", (int)(colon - v), v);
                o.srv.host = host;
            }
            char *end;
            long n = *port ? strtol(port, &end, 10) : -1;
            if (!*port || *end || n < 0 || n > 65535)
                return bad("--http needs HOST:PORT or PORT (0 picks a free port), not \"%s\"", v);
            o.srv.port = (int)n;
        } else if ((!strcmp(a, "--api-key") || !strcmp(a, "--api-key-ro")) && v && *v &&
                   nk < MAX_KEYS) {
            keys[nk++] = (ServerKey){argv[++i], a[9] == '-'};
        } else if (!strcmp(a, "--allowed-host") && v && *v && nh < MAX_KEYS)
            hosts[nh++] = argv[++i];
        else if (!strcmp(a, "--max-body") && v) {
            char *end;
            o.max_body = strtoll(argv[++i], &end, 10);
            if (*end || o.max_body < 1)
                return bad("--max-body needs a number of bytes, not \"%s\"", v);
        } else if (!strcmp(a, "--grace") && v) {
            char *end;
            o.grace = strtod(argv[++i], &end);
            if (*end || o.grace < 0)
                return bad("--grace needs seconds, not \"%s\"", v);
        } else
            return bad("serve: unknown option or missing value: %s (usage: sluice serve --dir "
                       "DIR [--http [HOST:]PORT] [--api-key KEY] [--api-key-ro KEY] "
                       "[--allowed-host NAME] [--max-body BYTES] [--grace SECS])",
                       a);
    }
    if (!o.dir)
        return bad("serve needs --dir DIR (where the pipelines are kept)%s", "");
    o.srv.keys = keys;
    o.srv.nkeys = nk;
    o.srv.allowed_hosts = hosts;
    o.srv.nallowed = nh;
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        fprintf(stderr, "sluice: serve: cannot find this program's path: %s\n", strerror(errno));
        return 1;
    }
    exe[n] = 0;
    o.exe = exe;
    Err e = {0};
    if (manager_serve(&o, &e)) {
        fprintf(stderr, "sluice: serve: %s\n", e.msg);
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- clients */

static const char *const verbs[] = {"create", "start", "pause", "stop",
                                    "delete", "status", "list"};

bool mgr_client_verb(const char *verb)
{
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (!strcmp(verb, verbs[i]))
            return true;
    return false;
}

static void print_error(const HttpResp *r)
{
    char *text = sl_strndup(r->body.p ? (const char *)r->body.p : "", r->body.n);
    cJSON *j = cJSON_Parse(text);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    fprintf(stderr, "sluice: HTTP %d: %s\n", r->status, cJSON_IsString(e) ? e->valuestring : text);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "details");
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(d, "errors"))
    {
        const cJSON *ln = cJSON_GetObjectItemCaseSensitive(it, "line");
        const cJSON *co = cJSON_GetObjectItemCaseSensitive(it, "column");
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(it, "reason");
        if (cJSON_IsNumber(ln) && cJSON_IsNumber(co) && cJSON_IsString(rs))
            fprintf(stderr, "  line %d, column %d: %s\n", ln->valueint, co->valueint,
                    rs->valuestring);
    }
    cJSON_Delete(j);
    sl_free(text);
}

/* One request; the parsed JSON answer of a 2xx (cJSON_Delete), or NULL
   after printing the error (*rc set). */
static cJSON *call(const HttpUrl *u, const char *method, const char *target, const char *body,
                   int *rc)
{
    HttpReq rq = {method, target, body ? "application/json" : NULL, body,
                  body ? strlen(body) : 0, NULL, NULL, NULL};
    HttpResp r;
    Err e = {0};
    if (http_do(u, &rq, &r, &e)) {
        fprintf(stderr, "sluice: %s\n", e.msg);
        buf_free(&r.body);
        *rc = 1;
        return NULL;
    }
    cJSON *j = NULL;
    if (r.status >= 200 && r.status < 300) {
        char *text = sl_strndup((const char *)r.body.p, r.body.n);
        j = cJSON_Parse(text);
        sl_free(text);
        if (!j) {
            fprintf(stderr, "sluice: HTTP %d: the answer is not JSON\n", r.status);
            *rc = 1;
        }
    } else {
        print_error(&r);
        *rc = 1;
    }
    buf_free(&r.body);
    return j;
}

static const char *str(const cJSON *j, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsString(v) ? v->valuestring : "-";
}

static void print_pipe_line(const cJSON *p)
{
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(p, "restart_count");
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(p, "port");
    char ps[16] = "-";
    if (cJSON_IsNumber(port))
        snprintf(ps, sizeof(ps), "%d", port->valueint);
    printf("%-24s %-12s %8d %6s  %s\n", str(p, "name"), str(p, "state"),
           cJSON_IsNumber(rs) ? rs->valueint : 0, ps, str(p, "last_error"));
}

/* runtime_config from the create flags */
static int create_body(int *argc, char **argv, cJSON *rc)
{
    cJSON *ft = NULL;
    for (int i = 0; i < *argc;) {
        const char *a = argv[i], *v = i + 1 < *argc ? argv[i + 1] : NULL;
        if (a[0] != '-' || !a[1]) {
            i++;
            continue;
        }
        if (!v)
            return bad("%s needs a value", a);
        char *end;
        double d = strtod(v, &end);
        if (!strcmp(a, "--workers") || !strcmp(a, "--hosts") ||
            !strcmp(a, "--checkpoint-interval")) {
            if (*end || end == v || d < 0)
                return bad("a number is needed, not \"%s\"", v);
            if (a[2] == 'c') {
                if (!ft)
                    ft = cJSON_AddObjectToObject(rc, "fault_tolerance");
                cJSON_AddNumberToObject(ft, "checkpoint_interval_secs", d);
            } else
                cJSON_AddNumberToObject(rc, a + 2, d);
        } else if (!strcmp(a, "--storage")) {
            if (!strcmp(v, "none") || !strcmp(v, "false"))
                cJSON_AddFalseToObject(rc, "storage");
            else
                cJSON_AddStringToObject(rc, "storage", v);
        } else if (!strcmp(a, "--fault-tolerance")) {
            if (!ft)
                ft = cJSON_AddObjectToObject(rc, "fault_tolerance");
            cJSON_AddStringToObject(ft, "model", v);
        } else
            return bad("unknown option %s", a);
        memmove(argv + i, argv + i + 2, sizeof(char *) * (size_t)(*argc - i - 2));
        *argc -= 2;
    }
    return 0;
}

int cmd_mgr_client(const char *verb, int argc, char **argv)
{
    const char *key = getenv("SLUICE_API_KEY"), *cacert = NULL;
    bool insecure = false, wait = false;
    for (int i = 0; i < argc;) {
        int k = 0;
        if ((!strcmp(argv[i], "--api-key") || !strcmp(argv[i], "--cacert")) && i + 1 < argc) {
            *(argv[i][2] == 'a' ? &key : &cacert) = argv[i + 1];
            k = 2;
        } else if (!strcmp(argv[i], "--insecure"))
            insecure = true, k = 1;
        else if (!strcmp(argv[i], "--wait") && !strcmp(verb, "start"))
            wait = true, k = 1;
        if (!k) {
            i++;
            continue;
        }
        memmove(argv + i, argv + i + k, sizeof(char *) * (size_t)(argc - i - k));
        argc -= k;
    }
    cJSON *body = NULL;
    if (!strcmp(verb, "create")) {
        body = cJSON_CreateObject();
        int rc = create_body(&argc, argv, cJSON_AddObjectToObject(body, "runtime_config"));
        if (rc) {
            cJSON_Delete(body);
            return rc;
        }
    }
    int want = !strcmp(verb, "list") ? 1 : !strcmp(verb, "create") ? 3 : 2;
    for (int i = 0; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1]) {
            cJSON_Delete(body);
            return bad("unknown option %s", argv[i]);
        }
    if (argc != want) {
        cJSON_Delete(body);
        fprintf(stderr, "usage: sluice create URL NAME PROGRAM.sql [--workers N] [--hosts H]\n"
                        "                 [--storage DIR|none] [--fault-tolerance MODEL]\n"
                        "                 [--checkpoint-interval SECS]\n"
                        "       sluice start URL NAME [--wait]\n"
                        "       sluice pause|stop|delete|status URL NAME\n"
                        "       sluice list URL\n"
                        "(URL: a manager, sluice serve; options --api-key KEY, --cacert FILE, "
                        "--insecure)\n");
        return 2;
    }
    HttpUrl u;
    Err e = {0};
    if (http_url_parse(argv[0], &u, &e)) {
        cJSON_Delete(body);
        fprintf(stderr, "sluice: %s\n", e.msg);
        return 2;
    }
    u.api_key = key && *key ? key : NULL;
    u.cacert = cacert;
    u.insecure = insecure;
    Buf t = BUF_INIT;
    buf_puts(&t, "/v0/pipelines");
    if (want >= 2) {
        buf_putc(&t, '/');
        http_escape(&t, argv[1]);
    }
    const char *method = "GET";
    if (!strcmp(verb, "create")) {
        char *text = cli_read_file(argv[2], &e);
        if (!text) {
            cJSON_Delete(body);
            buf_free(&t);
            fprintf(stderr, "sluice: %s\n", e.msg);
            return 1;
        }
        cJSON_AddStringToObject(body, "program_code", text);
        sl_free(text);
        method = "PUT";
    } else if (!strcmp(verb, "delete"))
        method = "DELETE";
    else if (strcmp(verb, "status") && strcmp(verb, "list")) {
        buf_printf(&t, "/%s", verb);
        method = "POST";
    }
    char *btext = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    int rc = 0;
    cJSON *j = call(&u, method, buf_cstr(&t), btext, &rc);
    free(btext);
    if (j && wait) {
        Buf g = BUF_INIT;
        buf_puts(&g, "/v0/pipelines/");
        http_escape(&g, argv[1]);
        /* until RUNNING or FAILED; a start that never gets there hangs: ^C */
        while (j && strcmp(str(j, "state"), "RUNNING") && strcmp(str(j, "state"), "FAILED")) {
            cJSON_Delete(j);
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
            j = call(&u, "GET", buf_cstr(&g), NULL, &rc);
        }
        buf_free(&g);
        if (j && !strcmp(str(j, "state"), "FAILED")) {
            fprintf(stderr, "sluice: %s is FAILED: %s\n", argv[1], str(j, "last_error"));
            rc = 1;
        }
    }
    if (j && !strcmp(verb, "list")) {
        printf("%-24s %-12s %8s %6s  %s\n", "NAME", "STATE", "RESTARTS", "PORT", "LAST ERROR");
        const cJSON *p;
        cJSON_ArrayForEach(p, j) print_pipe_line(p);
    } else if (j && !strcmp(verb, "status")) {
        char *pretty = cJSON_Print(j);
        printf("%s\n", pretty);
        free(pretty);
    } else if (j && strcmp(verb, "delete"))
        print_pipe_line(j);
    else if (j)
        printf("deleted %s\n", argv[1]);
    cJSON_Delete(j);
    buf_free(&t);
    return rc;
}
