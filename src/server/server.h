/*
 * server/server.h - the pipeline's HTTP API (libmicrohttpd), what cli/
 * uses: start it beside a Pipeline before pipeline_run, stop it after.
 * docs/http.md is the API reference.
 */
#ifndef SL_SERVER_SERVER_H
#define SL_SERVER_SERVER_H

#include "../pipeline/pipeline.h"

/* An API key (--api-key); a read-only one may only read (docs/security.md). */
typedef struct ServerKey {
    const char *key;
    bool read_only;
} ServerKey;

typedef struct ServerOpts {
    const char *host;       /* address to bind (IPv4 or a name), "127.0.0.1" */
    int port;               /* 0 picks a free port */
    int64_t max_body;       /* largest accepted request body (bytes) */
    int64_t egress_buffer;  /* bytes queued per egress subscriber before a
                               slow one is disconnected (or waited for) */
    double push_wait;       /* seconds an ingress request waits for room in
                               a full queue while running, then 503 */
    /* Fields below: zero picks the default given. */
    int max_connections;    /* open connections; more are closed at once (256) */
    int idle_timeout;       /* seconds a connection may sit idle (60; < 0: none);
                               egress streams are exempt */
    double egress_stall;    /* seconds a backpressure subscriber may not read
                               while the pipeline waits on it (30) */
    int64_t max_inflight;   /* bytes of request bodies being read at once,
                               across requests (4 * max_body); more: 503 */
    const ServerKey *keys;  /* nkeys API keys: every request needs one */
    int nkeys;
    const char *const *allowed_hosts; /* extra names the Host header may give */
    int nallowed;
    const char *tls_cert, *tls_key;   /* PEM files: serve HTTPS (both or neither) */
} ServerOpts;

typedef struct Server Server;

/* Bind and serve p; logs "sluice: http: listening on HOST:PORT" on stderr.
   NULL with err set when the address cannot be bound or the TLS files
   cannot be read. */
Server *server_start(Pipeline *p, const ServerOpts *o, Err *err);
int server_port(const Server *s);

/* The gate of docs/security.md on its own, for another libmicrohttpd
   daemon on the same terms (the pipeline manager, src/manager/): the Host
   header must name o->host:port or a loopback or allowed name, a request
   that changes state must not come from a foreign Origin, and with keys
   the request needs "Authorization: Bearer KEY" (a read-only key only
   where ro_ok(arg) says so). 0 when the request may go on, else the HTTP
   status of the refusal, its error code, message and details (a cJSON
   object or NULL, the caller's) in *r. */
struct MHD_Connection;
struct cJSON;
typedef struct ServerRefusal {
    const char *code;
    struct cJSON *details;
    char msg[1024];
} ServerRefusal;
unsigned server_gate(const ServerOpts *o, int port, struct MHD_Connection *c, const char *method,
                     const char *path, bool (*ro_ok)(const void *arg), const void *arg,
                     ServerRefusal *r);
/* After pipeline_run returned: end every egress stream (queued changes are
   still sent), let requests in flight finish (a few seconds at most), close
   and free. */
void server_stop(Server *s);

#endif
