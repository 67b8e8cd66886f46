/*
 * server/server.h - the pipeline's HTTP API (libmicrohttpd), what cli/
 * uses: start it beside a Pipeline before pipeline_run, stop it after.
 * docs/http.md is the API reference.
 */
#ifndef SL_SERVER_SERVER_H
#define SL_SERVER_SERVER_H

#include "../pipeline/pipeline.h"

typedef struct ServerOpts {
    const char *host;       /* address to bind (IPv4 or a name), "127.0.0.1" */
    int port;               /* 0 picks a free port */
    int64_t max_body;       /* largest accepted request body (bytes) */
    int64_t egress_buffer;  /* bytes queued per egress subscriber before a
                               slow one is disconnected (or waited for) */
    double push_wait;       /* seconds an ingress request waits for room in
                               a full queue while running, then 503 */
} ServerOpts;

typedef struct Server Server;

/* Bind and serve p; logs "sluice: http: listening on HOST:PORT" on stderr.
   NULL with err set when the address cannot be bound. */
Server *server_start(Pipeline *p, const ServerOpts *o, Err *err);
int server_port(const Server *s);
/* After pipeline_run returned: end every egress stream (queued changes are
   still sent), let requests in flight finish (a few seconds at most), close
   and free. */
void server_stop(Server *s);

#endif
