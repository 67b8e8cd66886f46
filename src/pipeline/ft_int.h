/*
 * pipeline/ft_int.h - the fault-tolerance state shared by ckpt.c
 * (checkpoints: writer thread, manifests, restore) and journal.c (step
 * journal, HTTP ingress log, replay). See docs/fault-tolerance.md.
 *
 * Files in the storage directory (besides storage.h's batch files and
 * manifests):
 *   journal-<step>-<uniq>.log   journal records of the steps after <step>
 *   ingress-<seq>-<uniq>.log    HTTP input from sequence number <seq> on
 * A new segment of each starts at every checkpoint and at every start, so
 * old segments can be deleted whole once no kept checkpoint needs them.
 */
#ifndef SL_PIPELINE_FT_INT_H
#define SL_PIPELINE_FT_INT_H

#include <stdatomic.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "../storage/storage.h"
#include "ft.h"
#include "journal.h"
#include "snapshot.h"
#include "stats.h"

/* One checkpoint on its way to storage. */
typedef struct CkJob {
    int64_t seq;              /* the request it answers (0: periodic) */
    int64_t step;
    char *meta;               /* manifest JSON members besides state/files */
    int64_t ingress_seq;
    InPos *pos;               /* the input positions it records */
    pid_t pid;                /* the child writing the state, or 0 */
    int fd;                   /* its report (pipe), or -1 */
    char *reuse;              /* nothing changed: the last checkpoint's state */
    char *state;              /* the "state" array (JSON) once known */
    /* results (writer) */
    int rc;
    char err[900];
    double secs;
    double pause_secs;        /* the part the pipeline waited (the fork) */
    double started;           /* pipe_now() when it was taken */
    int64_t files, written, reused, bytes;
    /* scale-out: the other hosts' reports of phase one (ft->mu) */
    int hosts;
    char **remote;            /* per host, once it reported */
    int remote_pending;
} CkJob;

/* A journal record read back at restart. */
typedef struct JRec {
    int64_t step, seq_hi;
    int nin, nout;
    int64_t *rows;            /* per input connector */
    InPos *pos;               /* after the step */
    uint64_t *hash;
    int64_t *out_off;         /* per output: offset before the step */
} JRec;

/* An ingress log record read back at restart. */
typedef struct IRec {
    int64_t seq;
    uint8_t *p;               /* the payload (owned) */
    size_t n;
} IRec;

struct Ft {
    /* what it works on (ft_new) */
    const Circuit *c;
    Connectors *cs;
    Backend *be;
    pthread_mutex_t *qmu;     /* the HTTP queue's lock (the ingress log's order) */
    pthread_cond_t *wake;     /* the controller's: a checkpoint was written */
    const char *dir;          /* the storage (o->storage) */
    uint64_t fingerprint;     /* the program's */
    const char *program;      /* its text (manifest "program"), or NULL */
    bool replaying;           /* replay.c runs journaled steps: not journaled again */
    struct BootPlan *boot;    /* bootstrapping from another program's checkpoint (boot.h) */
    bool booting;             /* ... the restored checkpoint is that program's: the
                                 next checkpoint records "bootstrap" */
    char boot_from[32];       /* its fingerprint */
    int64_t boot_from_step;   /* its step */
    bool boot_unsettled;      /* its logs hold steps or input after it (boot.h) */
    Store *st;
    int mode;                 /* FT_* */
    double interval;
    double timeout;           /* a checkpoint's child is killed after it (s; 0: never) */
    double last_time;         /* when the last checkpoint was started */
    int64_t last_step;        /* its step (-1: none this run) */
    bool dirty;               /* a step ran since */
    /* logs */
    Log *journal;             /* current journal segment (exactly_once) */
    Log *ingress;             /* current ingress segment (qmu) */
    int64_t ing_seq;          /* last ingress sequence number given (qmu) */
    int64_t ing_consumed;     /* newest one a completed step consumed */
    JRec *recs;               /* restart: journaled steps to replay */
    int nrecs, caprecs;
    IRec *irecs;              /* restart: logged input after the checkpoint */
    int nirecs, capirecs;
    /* the writer thread */
    pthread_t thr;
    bool thr_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* writer: a job or quit; controller: job done */
    CkJob *job;               /* being written */
    CkJob *job_remote;        /* ... while it waits for other hosts' reports (mu) */
    bool job_done, quit;
    char *last_state;         /* "state" of the last complete checkpoint */
    bool full_next;           /* the last one failed: save every node again */
    double last_secs;
    int64_t kept_steps[2];    /* steps of the checkpoints kept (-1: none) */
    int64_t kept_seqs[2];     /* their ingress watermarks */
    InPos *kept_pos[2];       /* their input positions (input_release) */
    /* status (mu) */
    int64_t req_seq, req_done, req_failed;
    bool requested;
    int64_t done_step;
    double done_secs, done_pause;
    int64_t done_files, done_written, done_reused, done_bytes;
    char failure[1024];
    char storage_error[512];  /* why a log write is failing now, "" when none (mu) */
    atomic_bool storage_bad;  /* storage_error is set (read without mu) */
};

/* journal.c internals for ckpt.c: start new journal and ingress segments
   (at a checkpoint, and after a restart); read them back at restart.
   step: the last step the new journal segment follows (its records are
   of later steps; segments are read in name order). */
int ft_rotate(Ft *ft, int64_t step, Err *err);
int ft_read_logs(Ft *ft, int64_t ckpt_step, int64_t ckpt_seq, Err *err);
void ft_prune_logs(Ft *ft, int64_t oldest_step, int64_t oldest_seq);
void ft_logs_free(Ft *ft);
/* Decode an ingress log record of program c (every field checked; what
   names the file in messages, may be NULL); NULL with err set when
   malformed (replay.c too). */
InBatch *ft_ingress_decode(const Circuit *c, const uint8_t *data, size_t n, const char *what,
                           Err *err);
/* Free the records read back at restart (after replay). */
void ft_records_free(Ft *ft);

/* Say that storage is failing (why, or NULL: it works again); shown in
   /status and /stats, and in the answer to a refused push. */
void ft_storage_note(Ft *ft, const char *why);

/* The backend hands in host's report of the checkpoint at step
   (BackendReportFn; arg is the Ft). */
void ft_remote_report(void *arg, int host, int64_t step, const char *text, size_t n);
void ft_remote_abandon(Ft *ft, CkJob *j);

#endif
