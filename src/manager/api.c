/*
 * manager/api.c - the manager's REST API (libmicrohttpd, one thread per
 * connection) under /v0/pipelines, with the reference system's names:
 *
 *   GET    /v0/pipelines               every pipeline, with its state
 *   PUT    /v0/pipelines/NAME          create or replace (program_code,
 *                                      runtime_config); compile errors: 400
 *                                      with line and column
 *   GET    /v0/pipelines/NAME          one pipeline
 *   DELETE /v0/pipelines/NAME          only once it is stopped (409 otherwise)
 *   POST   /v0/pipelines/NAME/start|pause|stop
 *   GET    /v0/pipelines/NAME/logs     the tail of its children's output
 *   any    /v0/pipelines/NAME/<other>  the pipeline's own API (proxy.c);
 *                                      503 while it is not up
 *   GET    /, /console/NAME            the web console (src/console/), served
 *                                      without a key: it holds no data
 *
 * Request bodies are read whole up to --max-body (413 past it) before the
 * handler runs. Every answer that is not the pipeline's own is JSON; errors
 * have the pipeline API's shape {"error", "error_code", "details"}. The
 * gate of docs/security.md (Host, Origin, API keys) is the server's own
 * (server_gate).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../console/console.h"
#include "../server/server.h"
#include "../sql/sql.h"
#include "mgr_int.h"

typedef struct MReq {
    Buf body;
    bool too_big;
    bool refused;           /* answered before the body was read */
} MReq;

static int not_found(struct MHD_Connection *c, const char *method, const char *url)
{
    cJSON *d = cJSON_CreateObject();
    cJSON *e = cJSON_AddArrayToObject(d, "endpoints");
    static const char *const eps[] = {
        "GET /v0/pipelines", "GET /v0/pipelines/NAME", "PUT /v0/pipelines/NAME",
        "DELETE /v0/pipelines/NAME", "POST /v0/pipelines/NAME/start",
        "POST /v0/pipelines/NAME/pause", "POST /v0/pipelines/NAME/stop",
        "GET /v0/pipelines/NAME/logs", "GET / (the web console)",
        "* /v0/pipelines/NAME/<the pipeline's own endpoint>"};
    for (size_t i = 0; i < ARRAY_LEN(eps); i++)
        cJSON_AddItemToArray(e, cJSON_CreateString(eps[i]));
    return api_error(c, MHD_HTTP_NOT_FOUND, "NotFound", d, "no endpoint %s %.300s", method, url);
}

static int bad_method(struct MHD_Connection *c, const char *method, const char *url,
                      const char *allow)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "allow", allow);
    char *text;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "error_code", "MethodNotAllowed");
    cJSON_AddItemToObject(j, "details", d);
    char msg[512];
    snprintf(msg, sizeof(msg), "%s is not allowed on %.300s (allowed: %s)", method, url, allow);
    cJSON_AddStringToObject(j, "error", msg);
    text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Allow", allow);
    int rc = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, r) == MHD_YES ? 0 : -1;
    MHD_destroy_response(r);
    return rc;
}

static int unknown_pipeline(struct MHD_Connection *c, const char *name)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "name", name);
    return api_error(c, MHD_HTTP_NOT_FOUND, "UnknownPipeline", d,
                     "there is no pipeline named \"%s\" (GET /v0/pipelines lists them)", name);
}

static int answer_pipe(Mgr *m, struct MHD_Connection *c, unsigned status, Pipe *p)
{
    mpipe_note_state(p);
    cJSON *j = mpipe_to_json(p, true);
    pthread_mutex_unlock(&m->mu);
    return api_json(c, status, j);
}

/* ------------------------------------------------------------------ PUT */

static int put_pipe(Mgr *m, struct MHD_Connection *c, const char *name, const MReq *rq)
{
    char *text = sl_strndup(rq->body.p ? (const char *)rq->body.p : "", rq->body.n);
    cJSON *j = cJSON_Parse(text);
    sl_free(text);
    if (!j)
        return api_error(c, MHD_HTTP_BAD_REQUEST, "InvalidJson", NULL,
                         "the body is not valid JSON; send {\"program_code\": \"...\", "
                         "\"runtime_config\": {...}}");
    Pipe *np = sl_calloc(1, sizeof(*np));
    snprintf(np->name, sizeof(np->name), "%.*s", MGR_NAME_MAX, name);
    Err e = {0};
    int bad = mpipe_from_json(np, j, false, &e);
    cJSON_Delete(j);
    if (bad) {
        mpipe_free(np);
        return api_error(c, MHD_HTTP_BAD_REQUEST, "InvalidPipeline", NULL, "%s", e.msg);
    }
    err_clear(&e);
    Circuit *circ = NULL;
    if (circuit_compile(np->program, &circ, &e)) {
        cJSON *d = cJSON_CreateObject();
        cJSON *errs = cJSON_AddArrayToObject(d, "errors");
        cJSON *one = cJSON_CreateObject();
        cJSON_AddNumberToObject(one, "line", e.line);
        cJSON_AddNumberToObject(one, "column", e.col);
        cJSON_AddStringToObject(one, "kind", err_kind(e.code));
        cJSON_AddStringToObject(one, "reason", e.msg);
        cJSON_AddItemToArray(errs, one);
        mpipe_free(np);
        return api_error(c, MHD_HTTP_BAD_REQUEST, "ProgramError", d,
                         "the program does not compile: %d:%d: %s: %s", e.line, e.col,
                         err_kind(e.code), e.msg);
    }
    circuit_free(circ);
    pthread_mutex_lock(&m->mu);
    Pipe *old = mpipe_find(m, name);
    if (old && (old->pid || (old->want != WANT_STOPPED && !old->failed))) {
        pthread_mutex_unlock(&m->mu);
        mpipe_free(np);
        return api_error(c, MHD_HTTP_CONFLICT, "CannotUpdateNonShutdownPipeline", NULL,
                         "pipeline \"%s\" is not stopped: POST /v0/pipelines/%s/stop first",
                         name, name);
    }
    np->want = WANT_STOPPED;
    if (mpipe_save(m, np, &e)) {
        pthread_mutex_unlock(&m->mu);
        mpipe_free(np);
        return api_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "StorageError", NULL, "%s", e.msg);
    }
    if (old) {
        np->restarts = old->restarts;
        for (int i = 0; i < m->np; i++)
            if (m->p[i] == old)
                m->p[i] = np;
        mpipe_free(old);
    } else
        *VEC_PUSH(m->p, m->np, m->cap) = np;
    fprintf(stderr, "sluice: manager: %s: %s\n", name, old ? "replaced" : "created");
    return answer_pipe(m, c, old ? MHD_HTTP_OK : MHD_HTTP_CREATED, np);
}

/* ------------------------------------------------------------ lifecycle */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) && errno != ENOENT ? -1 : 0;
}

static int delete_pipe(Mgr *m, struct MHD_Connection *c, const char *name)
{
    pthread_mutex_lock(&m->mu);
    Pipe *p = mpipe_find(m, name);
    if (!p) {
        pthread_mutex_unlock(&m->mu);
        return unknown_pipeline(c, name);
    }
    if (p->pid || (p->want != WANT_STOPPED && !p->failed)) {
        pthread_mutex_unlock(&m->mu);
        return api_error(c, MHD_HTTP_CONFLICT, "CannotDeleteNonShutdownPipeline", NULL,
                         "pipeline \"%s\" is not stopped: POST /v0/pipelines/%s/stop first "
                         "(stopping keeps its storage; delete removes it)",
                         name, name);
    }
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s.json", m->o.dir, name);
    unlink(path);
    mpipe_path(m, p, NULL, path, sizeof(path));
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < m->np; i++)
        if (m->p[i] == p) {
            m->p[i] = m->p[--m->np];
            break;
        }
    mpipe_free(p);
    pthread_mutex_unlock(&m->mu);
    fprintf(stderr, "sluice: manager: %s: deleted\n", name);
    return api_json(c, MHD_HTTP_OK, cJSON_CreateObject());
}

static int lifecycle(Mgr *m, struct MHD_Connection *c, const char *name, const char *verb)
{
    pthread_mutex_lock(&m->mu);
    Pipe *p = mpipe_find(m, name);
    if (!p) {
        pthread_mutex_unlock(&m->mu);
        return unknown_pipeline(c, name);
    }
    Want w = !strcmp(verb, "start") ? WANT_RUNNING : !strcmp(verb, "pause") ? WANT_PAUSED
                                                                            : WANT_STOPPED;
    Want before = p->want;
    p->want = w;
    if (w == WANT_STOPPED)
        p->failed = false; /* FAILED, then stopped: STOPPED (last_error kept) */
    if (w != WANT_STOPPED && (p->failed || before == WANT_STOPPED)) {
        p->failed = false;
        p->start_fails = 0;
        p->next_start = 0;
        p->backoff = 0;
    }
    Err e = {0};
    if (mpipe_save(m, p, &e))
        fprintf(stderr, "sluice: manager: %s\n", e.msg);
    pthread_cond_broadcast(&m->cv);
    if (w == WANT_STOPPED) {
        sup_stop_child(m, name); /* waits, mu released meanwhile */
        p = mpipe_find(m, name);
        if (!p) {
            pthread_mutex_unlock(&m->mu);
            return unknown_pipeline(c, name);
        }
        return answer_pipe(m, c, MHD_HTTP_OK, p);
    }
    /* a child that is up is paused or resumed through its own API */
    if (p->pid && p->port && !p->term_sent && p->paused_child != (w == WANT_PAUSED)) {
        int port = p->port;
        char key[sizeof(p->key)];
        memcpy(key, p->key, sizeof(key));
        pthread_mutex_unlock(&m->mu);
        int st = sup_child_post(port, key, w == WANT_PAUSED ? "/pause" : "/start");
        pthread_mutex_lock(&m->mu);
        p = mpipe_find(m, name);
        if (!p) {
            pthread_mutex_unlock(&m->mu);
            return unknown_pipeline(c, name);
        }
        if (st >= 200 && st < 300 && p->port == port)
            p->paused_child = w == WANT_PAUSED;
    }
    return answer_pipe(m, c, MHD_HTTP_ACCEPTED, p);
}

/* GET /v0/pipelines/NAME/logs: the last 256 KiB of DIR/NAME/log (every
   child's output, one "--- manager: started" line per start). */
static int get_logs(Mgr *m, struct MHD_Connection *c, const char *name)
{
    char path[4400];
    pthread_mutex_lock(&m->mu);
    Pipe *p = mpipe_find(m, name);
    if (p)
        mpipe_path(m, p, "log", path, sizeof(path));
    pthread_mutex_unlock(&m->mu);
    if (!p)
        return unknown_pipeline(c, name);
    FILE *f = fopen(path, "rb");
    long end = 0, from = 0;
    if (f && !fseek(f, 0, SEEK_END) && (end = ftell(f)) > (256L << 10))
        from = end - (256L << 10);
    char *text = malloc((size_t)(end - from) + 1); /* freed by MHD */
    size_t n = 0;
    if (!text)
        abort();
    if (f && !fseek(f, from, SEEK_SET))
        n = fread(text, 1, (size_t)(end - from), f);
    if (f)
        fclose(f);
    struct MHD_Response *r = MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    int rc = MHD_queue_response(c, MHD_HTTP_OK, r) == MHD_YES ? 0 : -1;
    MHD_destroy_response(r);
    return rc;
}

/* ------------------------------------------------------------- dispatch */

/* The web console's file at url (src/console/: the page at /, the rest
   under /console/) for a GET, or NULL. */
static const ConsoleAsset *console_file(const char *method, const char *url)
{
    return strcmp(method, "GET") ? NULL : console_asset(url);
}

static int dispatch(Mgr *m, struct MHD_Connection *c, const char *method, const char *url,
                    const MReq *rq)
{
    const ConsoleAsset *a = console_file(method, url);
    if (a) {
        struct MHD_Response *r = console_response(a);
        int rc = MHD_queue_response(c, MHD_HTTP_OK, r) == MHD_YES ? 0 : -1;
        MHD_destroy_response(r);
        return rc;
    }
    const char *pre = "/v0/pipelines";
    size_t pn = strlen(pre);
    if (strncmp(url, pre, pn) || (url[pn] && url[pn] != '/'))
        return not_found(c, method, url);
    const char *rest = url + pn;
    while (*rest == '/')
        rest++;
    if (!*rest) {
        if (strcmp(method, "GET"))
            return bad_method(c, method, url, "GET");
        cJSON *arr = cJSON_CreateArray();
        pthread_mutex_lock(&m->mu);
        for (int i = 0; i < m->np; i++)
            cJSON_AddItemToArray(arr, mpipe_to_json(m->p[i], false));
        pthread_mutex_unlock(&m->mu);
        return api_json(c, MHD_HTTP_OK, arr);
    }
    char name[MGR_NAME_MAX + 2];
    size_t nl = strcspn(rest, "/");
    snprintf(name, sizeof(name), "%.*s", (int)(nl <= MGR_NAME_MAX ? nl : MGR_NAME_MAX + 1), rest);
    if (nl > MGR_NAME_MAX || !mpipe_name_ok(name)) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "name", name);
        return api_error(c, MHD_HTTP_BAD_REQUEST, "InvalidName", d,
                         "a pipeline name has 1 to %d letters, digits, '_' and '-' and does "
                         "not start with '-'",
                         MGR_NAME_MAX);
    }
    const char *sub = rest + nl;
    while (*sub == '/')
        sub++;
    if (!*sub) {
        if (!strcmp(method, "PUT"))
            return put_pipe(m, c, name, rq);
        if (!strcmp(method, "DELETE"))
            return delete_pipe(m, c, name);
        if (strcmp(method, "GET"))
            return bad_method(c, method, url, "GET, PUT, DELETE");
        pthread_mutex_lock(&m->mu);
        Pipe *p = mpipe_find(m, name);
        if (!p) {
            pthread_mutex_unlock(&m->mu);
            return unknown_pipeline(c, name);
        }
        return answer_pipe(m, c, MHD_HTTP_OK, p);
    }
    if (!strcmp(sub, "logs")) {
        if (strcmp(method, "GET"))
            return bad_method(c, method, url, "GET");
        return get_logs(m, c, name);
    }
    if (!strcmp(sub, "start") || !strcmp(sub, "pause") || !strcmp(sub, "stop")) {
        if (strcmp(method, "POST"))
            return bad_method(c, method, url, "POST");
        return lifecycle(m, c, name, sub);
    }
    pthread_mutex_lock(&m->mu);
    Pipe *p = mpipe_find(m, name);
    if (!p) {
        pthread_mutex_unlock(&m->mu);
        return unknown_pipeline(c, name);
    }
    int port = p->pid && !p->term_sent ? p->port : 0;
    char key[sizeof(p->key)];
    memcpy(key, p->key, sizeof(key));
    const char *state = mpipe_state(p);
    pthread_mutex_unlock(&m->mu);
    if (!port) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "state", state);
        return api_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "PipelineUnavailable", d,
                         "pipeline \"%s\" is %s: its own API answers once it is RUNNING or "
                         "PAUSED",
                         name, state);
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    return proxy_forward(c, port, key, method, sub, ct, &rq->body);
}

/* A read-only key may read: GET, and the pipeline's /egress streams. */
static bool mgr_read_only_ok(const void *arg)
{
    const char *const *mu = arg;
    return !strcmp(mu[0], "GET") || (!strcmp(mu[0], "POST") && strstr(mu[1], "/egress/"));
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version,
                                 const char *upload, size_t *upload_size, void **con_cls)
{
    Mgr *m = cls;
    MReq *rq = *con_cls;
    (void)version;
    if (!rq) {
        rq = sl_calloc(1, sizeof(*rq));
        *con_cls = rq;
        ServerRefusal r = {0};
        const char *mu[2] = {method, url};
        int port = __atomic_load_n(&m->port, __ATOMIC_ACQUIRE);
        ServerOpts so = m->o.srv;
        if (console_file(method, url))
            so.nkeys = 0; /* the console's files: no data, no key */
        unsigned st = server_gate(&so, port, c, method, url, mgr_read_only_ok, mu, &r);
        if (st) {
            rq->refused = true;
            api_error(c, st, r.code, r.details, "%s", r.msg);
            return MHD_YES;
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && atoll(cl) > m->o.max_body) {
            rq->refused = true;
            api_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "PayloadTooLarge", NULL,
                      "the request body has %lld bytes; the limit is %lld (sluice serve "
                      "--max-body)",
                      atoll(cl), m->o.max_body);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rq->refused && !rq->too_big) {
            if ((long long)(rq->body.n + *upload_size) > m->o.max_body) {
                rq->too_big = true;
                buf_free(&rq->body);
            } else
                buf_append(&rq->body, upload, *upload_size);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->refused)
        return MHD_YES;
    if (rq->too_big) {
        api_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "PayloadTooLarge", NULL,
                  "the request body has more than %lld bytes, the limit (sluice serve "
                  "--max-body)",
                  m->o.max_body);
        rq->refused = true;
        return MHD_YES;
    }
    rq->refused = true; /* answered */
    dispatch(m, c, method, url, rq);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    MReq *rq = *con_cls;
    if (!rq)
        return;
    buf_free(&rq->body);
    sl_free(rq);
    *con_cls = NULL;
}

int api_start(Mgr *m, Err *err)
{
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)m->o.srv.port);
    if (inet_pton(AF_INET, m->o.srv.host, &sa.sin_addr) != 1) {
        struct addrinfo hints = {0}, *res = NULL;
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        int rc = getaddrinfo(m->o.srv.host, NULL, &hints, &res);
        if (rc || !res)
            return err_set(err, SL_ECONFIG, "--http: cannot resolve host \"%s\": %s",
                           m->o.srv.host, gai_strerror(rc));
        sa.sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
        freeaddrinfo(res);
    }
    /* a fixed port is known before the first request; port 0's is known
       to nobody before it is printed, but requests read it atomically */
    __atomic_store_n(&m->port, m->o.srv.port, __ATOMIC_RELEASE);
    m->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                MHD_USE_POLL | MHD_USE_ITC,
                            0, NULL, NULL, on_access, m, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                            m, MHD_OPTION_CONNECTION_LIMIT, 256u, MHD_OPTION_CONNECTION_TIMEOUT,
                            120u, MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
    if (!m->d)
        return err_set(err, SL_EIO, "--http: cannot listen on %s:%d (address in use?)",
                       m->o.srv.host, m->o.srv.port);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
    if (!m->o.srv.port && di)
        __atomic_store_n(&m->port, (int)di->port, __ATOMIC_RELEASE);
    return 0;
}

void api_stop(Mgr *m)
{
    if (m->d)
        MHD_stop_daemon(m->d);
    m->d = NULL;
}
