/*
 * pipeline/reject.h - poison records (reject.c, docs/errors.md): after a
 * step that a runtime error rolled back, the input records that make it
 * fail are found, taken out of the step's input and reported (log, the
 * errors table, /stats, the pushing request), and the step runs again.
 */
#ifndef SL_PIPELINE_REJECT_H
#define SL_PIPELINE_REJECT_H

#include "pending.h"

/* Rejections per HTTP batch token, newest REJECT_TOKENS kept (reject.c). */
#define REJECT_TOKENS 256
typedef struct RejTok {
    int64_t token, n;
    char why[200];
} RejTok;
typedef struct Rejects {
    RejTok tok[REJECT_TOKENS];
    int next;
    int64_t total;            /* records rejected by runtime errors */
    char last[200];           /* ... the newest one's error */
} Rejects;

/* After a step that rolled back (rt_rolled_back): find the rows of pd
   that fail in the linear operators over their table, take them out of
   pd, report them. Returns the rows taken out (0: none fails alone, the
   error lies elsewhere). Controller only. */
int64_t reject_isolate(Pipeline *p, Pending *pd);
/* When reject_isolate found nothing: reject, in input order, each row
   that makes the step fail after the rows before it (dry steps, see
   reject.c). Returns the rows rejected; 0 when none is to blame (or the
   operators cannot undo). */
int64_t reject_by_steps(Pipeline *p, Pending *pd, Err *err);
/* Under mu: count a rejection against an HTTP batch token. */
void rejects_note_token(Rejects *r, int64_t token, const char *why);

#endif
