/*
 * pipeline/progstore.h - the program a storage holds: every checkpoint's
 * manifest keeps the text of the program that wrote it ("program", whose
 * XXH64 is the manifest's "fingerprint"; ckpt.c writes it). `sluice diff`
 * compares it with a new program (sql/progdiff.h); bootstrapping on
 * restart (docs/bootstrapping.md) will start from it too.
 */
#ifndef SL_PIPELINE_PROGSTORE_H
#define SL_PIPELINE_PROGSTORE_H

#include <stdint.h>

#include "../base/err.h"
#include "../circuit/circuit.h"

/* The program text of the newest checkpoint that verifies in `where` (a
   directory or s3://BUCKET/PREFIX) to *text (sl_free) and its step to
   *step, reading only: a directory is neither created, locked nor
   cleaned (a running pipeline may hold it). Notes about manifests skipped
   on the way go to *notes (sl_free; NULL when none). Errors (SL_EIO,
   SL_ECONFIG) say why: no such storage, no checkpoint, a checkpoint
   written before manifests kept the program, a text that does not match
   its fingerprint. */
int progstore_read(const char *where, char **text, int64_t *step, char **notes, Err *err);

/* The program fingerprint and circuit shape ("fingerprint" and "circuit",
   each "" when absent: "circuit" came with builds of 2026-12-05) of the
   newest checkpoint that verifies in `where`, reading only as
   progstore_read does. 0, or an error (no storage, no checkpoint). */
int progstore_circuit(const char *where, char fp[32], char shape[32], Err *err);

/* The shape of a compiled circuit as checkpoints record it (ckpt.c):
   every node's kind, inputs and output column types. */
uint64_t ckpt_circuit_shape(const Circuit *c);

#endif
