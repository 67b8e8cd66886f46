/*
 * pipeline/pipeline.h - runs a compiled program: the controller loop that
 * pulls input from connectors, decides step boundaries, steps the workers,
 * delivers outputs, reports progress, and dumps materialized relations.
 */
#ifndef SL_PIPELINE_PIPELINE_H
#define SL_PIPELINE_PIPELINE_H

#include "../circuit/circuit.h"

typedef struct PipelineOpts {
    int workers;          /* worker threads (>= 1) */
    bool until_done;      /* stop once every input connector has ended */
    const char *dump_dir; /* write DIR/<name>.csv for materialized relations */
    int64_t step_rows;    /* max input rows per step (all tables), 0 = default */
    int progress;         /* 1 = always, 0 = never, -1 = auto (terminal: live line) */
} PipelineOpts;

/* Run until inputs end (until_done) or SIGINT/SIGTERM. Returns 0, or an
   SL_E* code with err set (runtime error, I/O error). */
int pipeline_run(const Circuit *c, const PipelineOpts *o, Err *err);

/* Write DIR/<name>.csv for every materialized relation (see README). */
struct Runtime;
int pipeline_dump(const Circuit *c, struct Runtime *rt, const char *dir, Err *err);

#endif
