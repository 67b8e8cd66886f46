/*
 * pipeline/oneshot.h - run one SELECT once over given relation contents:
 * the engine's operators in one-shot mode. Used by the HTTP /query endpoint
 * (over a snapshot of materialized tables and views taken between steps)
 * and by the sqllogictest runner (over its tables' current contents).
 *
 * The query is compiled as a view over tables named and typed like the
 * inputs, the contents are fed as one step, and the view's integrated
 * output is returned with duplicates expanded, in the query's ORDER BY
 * order (LIMIT/OFFSET applied) or unordered when it has none.
 *
 * A run on a thread with a budget (base/budget.h) stops when the budget
 * says so, with its error: the runtime checks it per morsel and in the
 * join's output loop, collecting the result every few thousand rows.
 */
#ifndef SL_PIPELINE_ONESHOT_H
#define SL_PIPELINE_ONESHOT_H

#include "../base/err.h"
#include "../expr/chunk.h"

typedef struct QInput {
    const char *name;
    int ncol;
    const char *const *colnames;
    const SqlType *types;
    const Chunk *rows; /* contents as a Z-set (weights); NULL = empty */
    bool append_only;  /* declared 'append_only' = 'true' (TableDecl) */
    bool has_time;     /* time_col: the LATENESS column (TableDecl) */
    int time_col;
} QInput;

typedef struct QResult {
    Arena *a;          /* owns everything below */
    int ncol;
    char **colnames;
    SqlType *types;
    Chunk *rows;       /* every weight 1; duplicates repeated */
} QResult;

/* Compile and run select_sql (a query, no trailing ';' needed) over inputs
   in[0..nin) on `workers` threads. Errors carry line:column within
   select_sql. Returns 0, or an SL_E* code with err set. */
int oneshot_query(const char *select_sql, const QInput *in, int nin, int workers,
                  QResult *out, Err *err);
void qresult_free(QResult *r);

/* The bounds of each HTTP /query (server/query.c runs it under a
   base/budget.h Budget made of these): seconds (0 = none) and bytes the
   query may allocate (0 = none). Defaults: 30 s, 1 GiB. Set at start-up
   (--query-timeout, --query-memory; query_timeout_secs,
   query_memory_bytes in --config). */
typedef struct QueryLimits {
    double timeout_secs;
    int64_t memory_bytes;
} QueryLimits;
void oneshot_set_limits(const QueryLimits *l);
QueryLimits oneshot_limits(void);
/* Scale-out test mode (sluice-slt under mpirun): every MPI rank makes the
   same oneshot calls; each runs its share of the workers, exchanges rows
   with the others, and gets the whole result. Off by default (the
   pipeline's /query runs on the coordinator alone). */
void oneshot_spmd(bool on);

/* Called after step s (0-based) with the query's presented contents so far
   (freed by the caller afterwards); nonzero stops the run with that code. */
typedef int (*QStepFn)(void *arg, int step, const QResult *now);

/*
 * The general form. prelude: program text compiled before the query
 * (CREATE VIEW statements the query may use), or NULL. The inputs' rows are
 * fed over nsteps steps: step s feeds steps[s * nin + i] (a Z-set chunk, may
 * be NULL) to input i; in[i].rows is ignored. after (may be NULL) sees the
 * result after every step; *out receives it after the last.
 */
int oneshot_run(const char *prelude, const char *select_sql, const QInput *in, int nin,
                int nsteps, const Chunk *const *steps, int workers, QStepFn after, void *arg,
                QResult *out, Err *err);

/* A one-shot SELECT over a running pipeline's materialized relations
   (livequery.c; HTTP /query and the PostgreSQL wire protocol): those sql
   names are copied at a step boundary, then the query runs on a thread of
   its own under the limits of oneshot_limits() (set in *b), cancelled when
   the client on socket fd (-1: none) has gone. LQ_OK: out holds the rows;
   LQ_STOPPING: the pipeline is stopping; LQ_BUDGET: b->stop says which
   limit stopped it; LQ_SQL: err says why, and *unmat is a relation the
   query names that is not materialized (the likely cause), else -1. */
struct Pipeline;
struct Budget;
typedef enum LiveQueryRc { LQ_OK, LQ_STOPPING, LQ_BUDGET, LQ_SQL } LiveQueryRc;
LiveQueryRc pipeline_query(struct Pipeline *p, const char *sql, int fd, QResult *out,
                           struct Budget *b, int *unmat, Err *err);

/* `SELECT * FROM v` over a running pipeline, streamed (livestream.c): when
   sql is exactly that, v is materialized and large (spilled, or 4 MiB of
   state and more), *out becomes a cursor over v's contents at a step
   boundary (a forked process holds that snapshot while the pipeline goes
   on), walked `passes` times; else *out is NULL (pipeline_query answers).
   LQ_STOPPING: the pipeline is stopping. */
typedef struct QStream QStream;
typedef struct QStreamInfo {
    int ncol;
    const char *const *colnames;
    const SqlType *types;
    int64_t step; /* the snapshot's step */
} QStreamInfo;
LiveQueryRc pipeline_query_stream(struct Pipeline *p, const char *sql, int passes, QStream **out,
                                  Err *err);
const QStreamInfo *qstream_info(const QStream *s);
/* The next rows (at most 1024, every weight 1, duplicates repeated; valid
   until the next call): 1; 0 at the end of a pass (the next call starts
   the next one); -1 with err set when the snapshot could not be read. */
int qstream_next(QStream *s, const Chunk **rows, Err *err);
/* Ends the snapshot (at any point of the walk). */
void qstream_free(QStream *s);

#endif
