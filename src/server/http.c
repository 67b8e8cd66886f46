/*
 * server/http.c - libmicrohttpd glue: the daemon (one thread per
 * connection, so a handler may block: an ingress request waiting for room
 * in the queue, an egress stream waiting for the next step), routing of
 * method + path to the endpoint files through one table (routes[]: path,
 * methods, handler, what a read-only key may use, whether the body
 * streams; the 404 lists it), request bodies handed over piece by
 * piece as they arrive, the size limit (413), response and error helpers,
 * and an orderly stop (streams ended, requests in flight finished).
 *
 * Bounds (docs/http.md): at most max_connections connections (more are
 * closed as soon as they are accepted), idle ones closed after
 * idle_timeout seconds (egress streams exempt), and at most max_inflight
 * bytes of request bodies being read at once (a request that would pass
 * it gets 503 before its body is read).
 *
 * The gate (docs/security.md), checked on a request's first call before
 * routing: the Host header must name this server (DNS rebinding: 403), a
 * request that changes state must not come from a foreign Origin (CSRF:
 * 403), and with API keys the request needs "Authorization: Bearer KEY"
 * (401), a read-only key only reading endpoints (403). With tls_cert and
 * tls_key the daemon speaks HTTPS (GnuTLS inside libmicrohttpd).
 *
 * Errors are JSON: {"error": "what went wrong and what to do",
 * "error_code": "CamelCase", "details": {...}}; an unknown path is a 404
 * that lists the endpoints, a known path with the wrong method a 405 with
 * an Allow header.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ctype.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../console/console.h"
#include "../sql/sql.h"
#include "http_int.h"

/* Bodies this much past the limit are refused at once (the connection is
   closed) instead of being read and discarded. */
#define DISCARD_SLACK (256LL << 20)

const char *req_arg(Req *q, const char *name)
{
    return MHD_lookup_connection_value(q->conn, MHD_GET_ARGUMENT_KIND, name);
}

bool req_flag(Req *q, const char *name, bool *bad)
{
    const char *v = req_arg(q, name);
    if (!v)
        return false;
    if (!*v || !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes"))
        return true;
    if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no"))
        return false;
    *bad = true;
    return false;
}

int req_respond(Req *q, unsigned status, const char *ctype, char *body, size_t n)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(n, body ? body : (char *)"", body ? MHD_RESPMEM_MUST_FREE
                                                                          : MHD_RESPMEM_PERSISTENT);
    if (ctype)
        MHD_add_response_header(r, "Content-Type", ctype);
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, "Retry-After", "1");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED && q->ctx)
        MHD_add_response_header(r, "Allow", (const char *)q->ctx);
    int rc = MHD_queue_response(q->conn, status, r) == MHD_YES ? 0 : -1;
    MHD_destroy_response(r);
    q->responded = true;
    return rc;
}

int req_json(Req *q, unsigned status, cJSON *j)
{
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    size_t n = strlen(text);
    /* cJSON allocates with malloc: MHD frees with free */
    char *body = realloc(text, n + 2);
    if (!body)
        sl_panic("out of memory");
    body[n] = '\n';
    return req_respond(q, status, "application/json", body, n + 1);
}

int req_error(Req *q, unsigned status, const char *code, cJSON *details, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "error", msg);
    cJSON_AddStringToObject(j, "error_code", code);
    cJSON_AddItemToObject(j, "details", details ? details : cJSON_CreateObject());
    return req_json(q, status, j);
}

int req_relation(Req *q, const char *prefix, const char *what)
{
    size_t pn = strlen(prefix);
    const char *name = strlen(q->path) >= pn ? q->path + pn : "";
    int rel = *name ? circuit_find_rel(q->s->c, name) : -1;
    if (rel >= 0)
        return rel;
    cJSON *d = cJSON_CreateObject();
    cJSON *known = cJSON_AddArrayToObject(d, "known");
    const Circuit *c = q->s->c;
    for (int i = 0; i < c->nrels; i++)
        if (c->rels[i].is_table == !strcmp(what, "table") &&
            strcmp(c->rels[i].name, PIPELINE_ERRORS_TABLE))
            cJSON_AddItemToArray(known, cJSON_CreateString(c->rels[i].name));
    cJSON_AddStringToObject(d, "name", name);
    if (!*name)
        req_error(q, MHD_HTTP_NOT_FOUND, !strcmp(what, "table") ? "UnknownTable" : "UnknownView",
                  d, "name a %s in the path: %s<name>", what, prefix);
    else
        req_error(q, MHD_HTTP_NOT_FOUND, !strcmp(what, "table") ? "UnknownTable" : "UnknownView",
                  d, "the program has no %s named \"%s\"", what, name);
    return -1;
}

/* ---------------------------------------------------------------- routing */

/* The web console's file for q (src/console/): /console/NAME, and the page
   at / for a browser (Accept: text/html; other clients get the JSON
   index), or NULL. The files hold no data, so the gate asks no key for
   them (docs/security.md); the page sends the user's key with its calls. */
static const ConsoleAsset *console_file(const Req *q)
{
    if (strcmp(q->method, "GET") && strcmp(q->method, "HEAD"))
        return NULL;
    if (!strcmp(q->path, "/")) {
        const char *acc = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Accept");
        if (!acc || !strstr(acc, "text/html"))
            return NULL;
    }
    return console_asset(q->path);
}

static int console_serve(Req *q)
{
    const ConsoleAsset *a = console_file(q);
    if (!a && !strcmp(q->path, "/"))
        return api_index(q);
    if (!a)
        return req_error(q, MHD_HTTP_NOT_FOUND, "UnknownEndpoint", NULL,
                         "the console has no file %s", q->path);
    struct MHD_Response *r = console_response(a);
    int rc = MHD_queue_response(q->conn, MHD_HTTP_OK, r) == MHD_YES ? 0 : -1;
    MHD_destroy_response(r);
    q->responded = true;
    return rc;
}

/* One endpoint: the single source of routing, of the 404's list of
   endpoints, of the 405's Allow header, of what a read-only key may do and
   of which requests stream their body. */
typedef struct Route {
    const char *path;     /* exact, or a prefix ending in '/' ("/ingress/"
                             serves "/ingress/NAME" and "/ingress") */
    const char *allow;    /* "GET", "POST", "GET, POST" */
    const char *ro_allow; /* methods a read-only key may use: NULL none, "*" any */
    bool streams;         /* the handler takes the body as it arrives */
    int (*fn)(Req *q);    /* the handler, or NULL when cmd_fn is set */
    int (*cmd_fn)(Req *q, PipeCmd cmd);
    PipeCmd cmd;          /* cmd_fn's command */
} Route;

static const Route routes[] = {
    {"/status", "GET", "GET", false, api_status, NULL, 0},
    {"/start", "POST", NULL, false, NULL, api_lifecycle, PC_START},
    {"/pause", "POST", NULL, false, NULL, api_lifecycle, PC_PAUSE},
    {"/stop", "POST", NULL, false, NULL, api_lifecycle, PC_STOP},
    {"/start_transaction", "POST", NULL, false, NULL, api_transaction, PC_TXN_START},
    {"/commit_transaction", "POST", NULL, false, NULL, api_transaction, PC_TXN_COMMIT},
    {"/abort_transaction", "POST", NULL, false, NULL, api_transaction, PC_TXN_ABORT},
    {"/completion_status", "GET", NULL, false, api_completion, NULL, 0},
    {"/checkpoint", "POST", NULL, false, api_checkpoint, NULL, 0},
    {"/checkpoint_status", "GET", NULL, false, api_checkpoint_status, NULL, 0},
    {"/diff", "GET", "GET", false, api_diff, NULL, 0},
    {"/approve", "POST", NULL, false, api_approve, NULL, 0},
    {"/reject", "POST", NULL, false, api_reject, NULL, 0},
    {"/ingress/", "POST", NULL, true, ingress_begin, NULL, 0},
    {"/egress/", "GET, POST", "*", false, egress_begin, NULL, 0},
    {"/query", "GET, POST", "GET", true, query_begin, NULL, 0},
    {"/stats", "GET", "GET", false, stats_json, NULL, 0},
    {"/metrics", "GET", "GET", false, stats_prometheus, NULL, 0},
    {"/dead_letter", "GET", "GET", false, stats_dead_letter, NULL, 0},
    {"/lineage", "GET", "GET", false, api_lineage, NULL, 0},
    {"/console/", "GET", NULL, false, console_serve, NULL, 0},
    {"/", "GET", NULL, false, console_serve, NULL, 0},
};

static bool route_is_prefix(const Route *rt)
{
    size_t n = strlen(rt->path);
    return rt->path[n - 1] == '/' && n > 1;
}

/* The route serving path, or NULL. */
static const Route *route_find(const char *path)
{
    for (size_t i = 0; i < ARRAY_LEN(routes); i++) {
        const Route *rt = &routes[i];
        size_t n = strlen(rt->path);
        if (route_is_prefix(rt) ? !strncmp(path, rt->path, n) ||
                                      (!strncmp(path, rt->path, n - 1) && !path[n - 1])
                                : !strcmp(path, rt->path))
            return rt;
    }
    return NULL;
}

static bool method_allowed(const char *allow, const char *m)
{
    size_t n = strlen(m);
    for (const char *p = allow; (p = strstr(p, m)); p += n)
        if ((p == allow || p[-1] == ' ') && (p[n] == 0 || p[n] == ','))
            return true;
    return false;
}

static int route(Req *q)
{
    const Route *rt = route_find(q->path);
    if (!rt) {
        cJSON *d = cJSON_CreateObject();
        cJSON *eps = cJSON_AddArrayToObject(d, "endpoints");
        for (size_t i = 0; i < ARRAY_LEN(routes); i++) {
            char b[96];
            snprintf(b, sizeof(b), "%s %s%s", routes[i].allow, routes[i].path,
                     route_is_prefix(&routes[i]) ? "{name}" : "");
            cJSON_AddItemToArray(eps, cJSON_CreateString(b));
        }
        return req_error(q, MHD_HTTP_NOT_FOUND, "UnknownEndpoint", d,
                         "no endpoint %s (see \"endpoints\" in details)", q->path);
    }
    if (!method_allowed(rt->allow, q->method)) {
        q->ctx = (void *)rt->allow;
        int rc = req_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed", NULL,
                           "%s does not accept %s; use %s", rt->path, q->method, rt->allow);
        q->ctx = NULL;
        return rc;
    }
    return rt->cmd_fn ? rt->cmd_fn(q, rt->cmd) : rt->fn(q);
}

/* ---------------------------------------------------------------- the gate */

/* Does "NAME" or "NAME:PORT" in v[0..n) match name (case-insensitively)
   and, when port >= 0, carry exactly that port? */
static bool host_is(const char *v, size_t n, const char *name, int port)
{
    size_t k = strlen(name);
    if (n < k || strncasecmp(v, name, k))
        return false;
    if (n == k)
        return port < 0;
    if (v[k] != ':')
        return false;
    if (port < 0)
        return true;
    char b[16];
    snprintf(b, sizeof(b), "%d", port);
    return n - k - 1 == strlen(b) && !memcmp(v + k + 1, b, n - k - 1);
}

static bool ip_literal(const char *v, size_t n)
{
    char b[64];
    struct in6_addr a6;
    if (n && v[0] == '[') {
        const char *e = memchr(v, ']', n);
        if (!e || (size_t)(e - v) - 1 >= sizeof(b))
            return false;
        snprintf(b, sizeof(b), "%.*s", (int)(e - v - 1), v + 1);
        return inet_pton(AF_INET6, b, &a6) == 1;
    }
    const char *c = memchr(v, ':', n);
    size_t hn = c ? (size_t)(c - v) : n;
    if (hn >= sizeof(b))
        return false;
    snprintf(b, sizeof(b), "%.*s", (int)hn, v);
    return inet_pton(AF_INET, b, &a6) == 1;
}

/* host[:port] as a Host header or the authority of an Origin. */
static bool host_allowed(const ServerOpts *o, int port, const char *v, size_t n)
{
    static const char *const loop[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < ARRAY_LEN(loop); i++)
        if (host_is(v, n, loop[i], port))
            return true;
    if (host_is(v, n, o->host, port))
        return true;
    /* bound to every address: an IP literal cannot be a rebinding name */
    if ((!strcmp(o->host, "0.0.0.0") || !strcmp(o->host, "::")) && ip_literal(v, n))
        return true;
    for (int i = 0; i < o->nallowed; i++)
        if (host_is(v, n, o->allowed_hosts[i], -1))
            return true;
    return false;
}

/* Compare without an early exit, so that timing does not leak a key. */
static bool key_equal(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    unsigned char d = an != bn;
    for (size_t i = 0; i < an; i++)
        d |= (unsigned char)(a[i] ^ b[i < bn ? i : 0]);
    return d == 0;
}

static bool read_only_ok(const Req *q)
{
    const Route *rt = route_find(q->path);
    if (!rt || !rt->ro_allow)
        return false;
    return !strcmp(rt->ro_allow, "*") || method_allowed(rt->ro_allow, q->method);
}

unsigned server_gate(const ServerOpts *o, int port, struct MHD_Connection *c, const char *method,
                     const char *path, bool (*ro_ok)(const void *arg), const void *arg,
                     ServerRefusal *r)
{
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (host && !host_allowed(o, port, host, strlen(host))) {
        r->code = "HostNotAllowed";
        r->details = cJSON_CreateObject();
        cJSON_AddStringToObject(r->details, "host", host);
        snprintf(r->msg, sizeof(r->msg),
                 "the Host header \"%s\" does not name this server; use %s:%d or a loopback "
                 "name, or start it with --allowed-host NAME",
                 host, o->host, port);
        return MHD_HTTP_FORBIDDEN;
    }
    bool safe = !strcmp(method, "GET") || !strcmp(method, "HEAD") || !strcmp(method, "OPTIONS");
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (origin && !safe) {
        const char *a = strstr(origin, "://");
        const char *h = a ? a + 3 : "";
        size_t hn = strcspn(h, "/");
        bool scheme = a && ((a - origin == 4 && !strncasecmp(origin, "http", 4)) ||
                            (a - origin == 5 && !strncasecmp(origin, "https", 5)));
        if (!scheme || !host_allowed(o, port, h, hn)) {
            r->code = "OriginNotAllowed";
            r->details = cJSON_CreateObject();
            cJSON_AddStringToObject(r->details, "origin", origin);
            snprintf(r->msg, sizeof(r->msg),
                     "%s %s from the web origin \"%s\" is refused (cross-site request); "
                     "start the server with --allowed-host NAME to allow that origin",
                     method, path, origin);
            return MHD_HTTP_FORBIDDEN;
        }
    }
    if (o->nkeys == 0)
        return 0;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const ServerKey *key = NULL;
    if (auth && !strncasecmp(auth, "Bearer ", 7)) {
        const char *k = auth + 7;
        while (*k == ' ')
            k++;
        size_t kn = strlen(k);
        while (kn && isspace((unsigned char)k[kn - 1]))
            kn--;
        for (int i = 0; i < o->nkeys; i++)
            if (key_equal(k, kn, o->keys[i].key) && !key)
                key = &o->keys[i];
    }
    if (!key) {
        r->code = "Unauthorized";
        snprintf(r->msg, sizeof(r->msg),
                 "%s: send \"Authorization: Bearer KEY\" with a key given to --api-key "
                 "(sluice query/push/tail/stats --api-key KEY, or SLUICE_API_KEY)",
                 auth ? "the API key is not valid" : "this server needs an API key");
        return MHD_HTTP_UNAUTHORIZED;
    }
    if (key->read_only && !ro_ok(arg)) {
        r->code = "ReadOnlyKey";
        snprintf(r->msg, sizeof(r->msg),
                 "a read-only API key may only GET /query, /stats, /status, /metrics and "
                 "/dead_letter and follow /egress, not %s %s",
                 method, path);
        return MHD_HTTP_FORBIDDEN;
    }
    return 0;
}

static bool req_read_only_ok(const void *arg) { return read_only_ok(arg); }

/* Check the request's Host, Origin and key; false when it was refused (an
   answer is queued). */
static bool gate(Req *q)
{
    ServerRefusal r = {0};
    ServerOpts o = q->s->o;
    if (console_file(q))
        o.nkeys = 0; /* the console's files: no data, no key */
    unsigned status =
        server_gate(&o, __atomic_load_n(&q->s->port, __ATOMIC_ACQUIRE), q->conn, q->method,
                    q->path, req_read_only_ok, q, &r);
    if (!status)
        return true;
    req_error(q, status, r.code, r.details, "%s", r.msg);
    return false;
}

/* Reserve n bytes of the bodies-in-flight bound; false (nothing
   reserved) when other bodies already hold it. */
static bool reserve(Req *q, int64_t n)
{
    Server *s = q->s;
    pthread_mutex_lock(&s->mu);
    bool ok = s->body_bytes == 0 || s->body_bytes + n <= s->o.max_inflight;
    if (ok) {
        s->body_bytes += n;
        q->reserved += n;
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static int busy(Req *q)
{
    return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "ServerBusy", NULL,
                     "other request bodies being read hold %lld bytes, the bound (4 x "
                     "--http-max-body); nothing was taken: retry later",
                     (long long)q->s->o.max_inflight);
}

/* Endpoints without a body to stream answer once the (ignored) body is in. */
static int deferred(Req *q) { return route(q); }

static bool streams_body(const char *path)
{
    const Route *rt = route_find(path);
    return rt && rt->streams;
}

/* A trailing '/' is dropped, except under a prefix route ("/egress/"). */
static bool under_prefix_route(const char *path)
{
    for (size_t i = 0; i < ARRAY_LEN(routes); i++)
        if (route_is_prefix(&routes[i]) &&
            !strncmp(path, routes[i].path, strlen(routes[i].path)))
            return true;
    return false;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_size, void **con_cls)
{
    Server *s = cls;
    Req *q = *con_cls;
    (void)version;
    if (!q) {
        q = sl_calloc(1, sizeof(*q));
        q->s = s;
        q->conn = conn;
        q->method = method;
        snprintf(q->path, sizeof(q->path), "%s", url);
        size_t n = strlen(q->path);
        while (n > 1 && q->path[n - 1] == '/' && !under_prefix_route(q->path))
            q->path[--n] = 0;
        *con_cls = q;
        pthread_mutex_lock(&s->mu);
        s->inflight++;
        pthread_mutex_unlock(&s->mu);
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        const char *ex = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Expect");
        long long len = cl ? atoll(cl) : -1;
        q->started = true;
        if (!gate(q))
            return MHD_YES;
        if (len > s->o.max_body) {
            q->too_big = true;
            if (ex || len > s->o.max_body + DISCARD_SLACK)
                req_error(q, MHD_HTTP_CONTENT_TOO_LARGE, "PayloadTooLarge", NULL,
                          "the request body has %lld bytes; the limit is %lld (sluice run "
                          "--http-max-body)",
                          len, (long long)s->o.max_body);
            return MHD_YES;
        }
        if (len > 0 && !reserve(q, len)) {
            busy(q);
            return MHD_YES;
        }
        if (streams_body(q->path))
            route(q); /* sets q->body and q->done, or responds */
        else
            q->done = deferred;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        q->body_bytes += (int64_t)n;
        if (q->responded || q->too_big || q->busy)
            return MHD_YES;
        if (q->body_bytes > q->reserved && !reserve(q, q->body_bytes - q->reserved)) {
            q->busy = true; /* no Content-Length: counted as it comes */
            return MHD_YES;
        }
        if (q->body_bytes > s->o.max_body) {
            q->too_big = true;
            return MHD_YES;
        }
        if (q->body && q->body(q, upload_data, n))
            q->body = NULL;
        return MHD_YES;
    }
    if (!q->responded) {
        if (q->busy)
            busy(q);
        else if (q->too_big)
            req_error(q, MHD_HTTP_CONTENT_TOO_LARGE, "PayloadTooLarge", NULL,
                      "the request body has more than %lld bytes, the limit (sluice run "
                      "--http-max-body)",
                      (long long)s->o.max_body);
        else if (q->done)
            q->done(q);
        else
            req_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalError", NULL,
                      "request for %s was not answered", q->path);
    }
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    Server *s = cls;
    Req *q = *con_cls;
    (void)conn;
    (void)toe;
    if (!q)
        return;
    if (q->free)
        q->free(q);
    buf_free(&q->raw);
    int64_t reserved = q->reserved;
    sl_free(q);
    *con_cls = NULL;
    pthread_mutex_lock(&s->mu);
    s->body_bytes -= reserved;
    if (--s->inflight == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}

static int resolve_host(const char *host, struct sockaddr_in *sa, Err *err)
{
    if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
        return 0;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc || !res)
        return err_set(err, SL_ECONFIG, "--http: cannot resolve host \"%s\": %s", host,
                       gai_strerror(rc));
    sa->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
    freeaddrinfo(res);
    return 0;
}

/* The whole of a PEM file (NUL-terminated; sl_free), or NULL with err set. */
static char *read_pem(const char *path, const char *flag, Err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, SL_ECONFIG, "%s: cannot open \"%s\": %s", flag, path, strerror(errno));
        return NULL;
    }
    Buf b = BUF_INIT;
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        buf_append(&b, tmp, n);
    bool bad = ferror(f) || b.n == 0;
    fclose(f);
    if (bad) {
        err_set(err, SL_ECONFIG, "%s: cannot read \"%s\" (empty or unreadable)", flag, path);
        buf_free(&b);
        return NULL;
    }
    buf_cstr(&b);
    return (char *)b.p;
}

static void after_step(void *arg, Pipeline *p, int64_t step)
{
    Server *s = arg;
    egress_after_step(s->eg, p, step);
}

Server *server_start(Pipeline *p, const ServerOpts *o, Err *err)
{
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o->port);
    if (resolve_host(o->host, &sa, err))
        return NULL;
    if (!o->tls_cert != !o->tls_key) {
        err_set(err, SL_ECONFIG, "--tls-cert and --tls-key go together: give both or neither");
        return NULL;
    }
    if (o->tls_cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        err_set(err, SL_ECONFIG, "--tls-cert: this libmicrohttpd is built without TLS");
        return NULL;
    }
    Server *s = sl_calloc(1, sizeof(*s));
    s->p = p;
    s->c = pipeline_circuit(p);
    s->o = *o;
    if (s->o.max_connections <= 0)
        s->o.max_connections = 256;
    if (s->o.idle_timeout == 0)
        s->o.idle_timeout = 60;
    if (s->o.egress_stall <= 0)
        s->o.egress_stall = 30;
    if (s->o.max_inflight <= 0)
        s->o.max_inflight = 4 * s->o.max_body;
    if (o->tls_cert) {
        if (!(s->tls_cert = read_pem(o->tls_cert, "--tls-cert", err)) ||
            !(s->tls_key = read_pem(o->tls_key, "--tls-key", err))) {
            sl_free(s->tls_cert);
            sl_free(s);
            return NULL;
        }
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->idle, NULL);
    s->eg = egress_new(s);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ITC | (s->tls_cert ? MHD_USE_TLS : 0);
    struct MHD_OptionItem tls[] = {
        {s->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    s->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)(s->o.idle_timeout > 0 ? s->o.idle_timeout : 0), MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)s->o.max_connections, MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
        MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    if (!s->d) {
        err_set(err, SL_EIO, "--http: cannot listen on %s:%d (address in use or not local%s?)",
                o->host, o->port, s->tls_cert ? ", or bad TLS certificate or key" : "");
        sl_free(s->tls_cert);
        sl_free(s->tls_key);
        egress_free(s->eg);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->idle);
        sl_free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    /* written after the daemon started: requests read it atomically */
    __atomic_store_n(&s->port, di ? (int)di->port : o->port, __ATOMIC_RELEASE);
    PipelineHooks h = {s, after_step};
    pipeline_set_hooks(p, &h);
    fprintf(stderr, "sluice: http: listening on %s:%d%s\n", o->host, s->port,
            s->tls_cert ? " (https)" : "");
    fflush(stderr);
    return s;
}

int server_port(const Server *s) { return s->port; }

void server_stop(Server *s)
{
    if (!s)
        return;
    MHD_socket lfd = MHD_quiesce_daemon(s->d); /* no new connections */
    egress_end_all(s->eg);
    /* let streams drain and answers go out, a few seconds at most */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 5;
    pthread_mutex_lock(&s->mu);
    while (s->inflight > 0)
        if (pthread_cond_timedwait(&s->idle, &s->mu, &dl))
            break;
    pthread_mutex_unlock(&s->mu);
    MHD_stop_daemon(s->d);
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd); /* ours once quiesced, closed only after the stop */
    egress_free(s->eg);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->idle);
    sl_free(s->tls_cert);
    sl_free(s->tls_key);
    sl_free(s);
}
