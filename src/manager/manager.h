/*
 * manager/manager.h - `sluice serve`: the pipeline manager, what cli/
 * uses. It keeps named pipelines (program, runtime configuration, desired
 * state) in a directory, runs each as a supervised `sluice run` child,
 * restarts the ones that die, and serves the REST API of docs/manager.md
 * (/v0/pipelines...), proxying each pipeline's own API.
 */
#ifndef SL_MANAGER_MANAGER_H
#define SL_MANAGER_MANAGER_H

#include "../base/err.h"
#include "../server/server.h"

typedef struct MgrOpts {
    const char *dir;        /* where pipelines are kept (created if missing) */
    ServerOpts srv;         /* host and port to bind (port 0 picks a free one),
                               API keys and allowed Host names: the gate of
                               docs/security.md; other fields unused */
    const char *exe;        /* the sluice binary the children run */
    long long max_body;     /* largest request body (bytes) */
    double grace;           /* seconds between SIGTERM and SIGKILL on stop */
} MgrOpts;

/* Serve until SIGINT or SIGTERM, then stop every child (each keeps its
   storage and its desired state, so the next serve starts it again).
   Logs "sluice: manager: listening on HOST:PORT" on stderr. 0, or a
   negative SL_E* code with err set when DIR or the address cannot be used. */
int manager_serve(const MgrOpts *o, Err *err);

#endif
