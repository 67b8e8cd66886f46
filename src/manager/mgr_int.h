/*
 * manager/mgr_int.h - what the manager's files share: the Mgr (directory,
 * lock, the table of pipelines, the supervisor thread, the HTTP daemon) and
 * one Pipe per pipeline: what is persisted (pipes.c: NAME.json in DIR) and
 * what the supervisor knows of its child (supervise.c). api.c serves the
 * REST routes and hands everything under /v0/pipelines/NAME/<endpoint> to
 * proxy.c. Every field of every Pipe is read and written under Mgr.mu.
 */
#ifndef SL_MANAGER_MGR_INT_H
#define SL_MANAGER_MGR_INT_H

#include <cJSON.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sys/types.h>

#include "../base/buf.h"
#include "manager.h"

#define MGR_NAME_MAX 100

typedef enum { WANT_STOPPED, WANT_PAUSED, WANT_RUNNING } Want;

typedef struct Pipe {
    char name[MGR_NAME_MAX + 1];
    /* persisted: the pipeline as PUT, and the desired state */
    char *program;          /* program_code */
    int workers;            /* runtime_config.workers (>= 1) */
    int hosts;              /* runtime_config.hosts (>= 1) */
    bool storage;           /* runtime_config.storage: keep state in DIR/NAME/storage */
    char *storage_path;     /* or this path (a directory or s3://...), or NULL */
    char ft[16];            /* fault_tolerance.model: exactly_once|at_least_once|none */
    double ckpt_secs;       /* fault_tolerance.checkpoint_interval_secs */
    double ckpt_timeout;    /* fault_tolerance.checkpoint_timeout_secs (0: none) */
    Want want;
    int restarts;           /* restarts after the child died unasked */
    char *error;            /* last error (NULL: none) */
    /* supervision */
    pid_t pid;              /* the child (its process group too), 0: none */
    pid_t old_group;        /* a dead child's process group, until its last
                               process (a checkpoint writer) is gone */
    int port;               /* its HTTP port, 0 until its log line says */
    char key[65];           /* the child's API key (random per start, given
                               through DIR/NAME/child.json, mode 0600) */
    long log_off;           /* where the current child's lines start in its log */
    double log_checked;     /* when its log was last bounded (supervise.c) */
    double spawned_at;      /* monotonic seconds */
    double up_at;           /* when its port became known */
    double next_start;      /* not before (backoff) */
    double backoff;         /* the next delay after a death */
    int start_fails;        /* children in a row that died before serving */
    bool failed;            /* FAILED: not restarted until the next start */
    bool term_sent;         /* SIGTERM sent at term_at (stop, delete, shutdown) */
    double term_at;
    bool paused_child;      /* the child is paused (its /pause answered) */
    struct {
        const char *state;  /* mpipe_state's answer */
        int64_t at_ms;      /* since the epoch */
    } hist[16];             /* the last state changes, oldest first */
    int nhist;
} Pipe;

typedef struct Mgr {
    MgrOpts o;
    int lock_fd;            /* DIR/manager.lock, held while serving */
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* wakes the supervisor; signalled on every change */
    Pipe **p;
    int np, cap;
    bool quit;
    struct MHD_Daemon *d;
    int port;
} Mgr;

double mgr_now(void);

/* pipes.c */
bool mpipe_name_ok(const char *name);
Pipe *mpipe_find(Mgr *m, const char *name);
/* Fill p's persisted fields from a PUT body or NAME.json; 0, or
   SL_ECONFIG with err set. persisted: also read want, restarts and error. */
int mpipe_from_json(Pipe *p, const cJSON *j, bool persisted, Err *err);
/* The API's view of p (program included when full). */
cJSON *mpipe_to_json(const Pipe *p, bool full);
const char *mpipe_state(const Pipe *p);
/* Append p's state to its history when it differs from the last one. */
void mpipe_note_state(Pipe *p);
/* Write DIR/NAME.json atomically (and DIR/NAME/program.sql); 0 or SL_EIO
   with err set. */
int mpipe_save(Mgr *m, Pipe *p, Err *err);
/* Read every DIR/NAME.json into m (a bad one is skipped with a message);
   0 or SL_EIO with err set. */
int mpipes_load(Mgr *m, Err *err);
void mpipe_free(Pipe *p);
void mpipe_set_error(Pipe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* DIR/NAME/<leaf> into b. */
void mpipe_path(const Mgr *m, const Pipe *p, const char *leaf, char *b, size_t n);

/* supervise.c */
int sup_start(Mgr *m, Err *err);
/* Stop every child (SIGTERM, SIGKILL after the grace) and join. */
void sup_stop(Mgr *m);
/* A child left by a manager killed with -9 (DIR/NAME/pid names it): ended. */
void sup_reap_orphan(Mgr *m, Pipe *p);
/* Wake the supervisor to stop pipeline name's child (its want is
   STOPPED); wait (mu held: it is released while waiting) until it is gone. */
void sup_stop_child(Mgr *m, const char *name);
/* POST path to the child (pause/start); the HTTP status, or -1. Called
   without mu. */
int sup_child_post(int port, const char *key, const char *path);

/* api.c */
int api_start(Mgr *m, Err *err);
void api_stop(Mgr *m);

/* reply.c: queue a JSON answer (frees j), or an error answer (details may
   be NULL; freed). */
int api_json(struct MHD_Connection *c, unsigned status, cJSON *j);
int api_error(struct MHD_Connection *c, unsigned status, const char *code, cJSON *details,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* proxy.c: forward method + rest + query string (+ body) to the child on
   port and stream its answer back. */
int proxy_forward(struct MHD_Connection *c, int port, const char *key, const char *method,
                  const char *rest, const char *ctype, const Buf *body);

#endif
