/*
 * server/http_int.h - what the server's files share: the Server object,
 * the per-request context, response helpers (JSON bodies, the error shape
 * {"error", "error_code", "details"}), and each endpoint family's entry
 * points. http.c routes requests to api.c (lifecycle, transactions),
 * ingress.c, egress.c, query.c and stats.c.
 */
#ifndef SL_SERVER_HTTP_INT_H
#define SL_SERVER_HTTP_INT_H

#include <cJSON.h>
#include <microhttpd.h>
#include <pthread.h>

#include "server.h"

typedef struct Egress Egress;

struct Server {
    Pipeline *p;
    const Circuit *c;
    ServerOpts o;
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu;
    pthread_cond_t idle;     /* inflight reached 0 */
    int inflight;            /* requests being handled (egress streams too) */
    int64_t body_bytes;      /* bytes of request bodies being read (reserved
                                from Content-Length, or counted as they come) */
    Egress *eg;
    char *tls_cert, *tls_key; /* PEM text, kept while the daemon runs */
};

typedef struct Req Req;
typedef int (*BodyFn)(Req *q, const char *data, size_t n);
typedef int (*DoneFn)(Req *q);
typedef void (*FreeFn)(Req *q);

/* One HTTP request, from the first call of the access handler to the
   completion notification. */
struct Req {
    Server *s;
    struct MHD_Connection *conn;
    const char *method;
    char path[512];
    bool started;
    bool responded;
    int64_t body_bytes;
    int64_t reserved;        /* of Server.body_bytes, given back at the end */
    bool too_big;
    bool busy;               /* Server.body_bytes past its bound: 503 */
    BodyFn body;             /* each piece of the body as it arrives, or NULL */
    DoneFn done;             /* the body is complete: respond */
    FreeFn free;             /* free ctx */
    void *ctx;
    Buf raw;                 /* small bodies kept whole (query) */
};

/* Query-string argument, or NULL. */
const char *req_arg(Req *q, const char *name);
/* Boolean query argument: true/1/yes. *bad set on anything else. */
bool req_flag(Req *q, const char *name, bool *bad);
/* Queue a response (takes ownership of body: malloc'd, or NULL). */
int req_respond(Req *q, unsigned status, const char *ctype, char *body, size_t n);
/* JSON response; frees j. */
int req_json(Req *q, unsigned status, cJSON *j);
/* Error response {"error": msg, "error_code": code, "details": details}
   (details may be NULL; freed). */
__attribute__((format(printf, 5, 6)))
int req_error(Req *q, unsigned status, const char *code, cJSON *details, const char *fmt, ...);
/* The relation named in the path after prefix, or -1 (a 404 was sent). */
int req_relation(Req *q, const char *prefix, const char *what);

/* api.c: everything with no body to stream. */
int api_status(Req *q);
int api_lifecycle(Req *q, PipeCmd cmd);
int api_transaction(Req *q, PipeCmd cmd);
/* POST /checkpoint, GET /checkpoint_status (fault tolerance, issue 6). */
int api_checkpoint(Req *q);
int api_checkpoint_status(Req *q);
int api_diff(Req *q);
int api_approve(Req *q);
int api_reject(Req *q);
int api_completion(Req *q);
int api_index(Req *q);
int api_lineage(Req *q); /* GET /lineage: sql/lineage.h's JSON */
/* Feldera's name of the transaction state: TransactionInProgress,
   CommitInProgress or NoTransaction (/status and /stats). */
const char *api_txn_status(const PipeStats *st);

/* ingress.c */
int ingress_begin(Req *q);

/* egress.c */
Egress *egress_new(Server *s);
void egress_free(Egress *e);
/* End every stream (sent after its queued changes). */
void egress_end_all(Egress *e);
int egress_begin(Req *q);
/* The controller's after-step hook: fan this step's changes out. */
void egress_after_step(Egress *e, Pipeline *p, int64_t step);
typedef struct EgressStats {
    int subscribers;
    int64_t records, bytes, dropped, steps;
} EgressStats;
/* Per relation (indexed like circuit->rels): n entries filled. */
void egress_stats(Egress *e, EgressStats *out, int n);

/* Whether the pipeline waits on a backpressure subscriber that does not
   read; then *sub, *rel and *secs say which and for how long. */
bool egress_stalled(Egress *e, int64_t *sub, int *rel, double *secs);

/* query.c */
int query_begin(Req *q);

/* stats.c */
int stats_json(Req *q);
int stats_dead_letter(Req *q);
int stats_prometheus(Req *q);

#endif
