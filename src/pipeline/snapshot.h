/*
 * pipeline/snapshot.h - one host's share of a checkpoint (snapshot.c):
 * save a runtime's operator state in a forked child, read its report,
 * load a manifest's "state" back. Used by ckpt.c (the coordinator, or the
 * only host) and follow.c (every other host of a scale-out pipeline).
 *
 * A report is text: one line "<worker> <node> <file>" per batch file, then
 * "OK <written> <reused> <bytes>" (or "ERR <why>"; "DIED" when the child
 * did not finish). A "state" array holds {"node", "worker", "files"}.
 */
#ifndef SL_PIPELINE_SNAPSHOT_H
#define SL_PIPELINE_SNAPSHOT_H

#include <sys/types.h>

#include <cjson/cJSON.h>

#include "../runtime/runtime.h"
#include "../storage/storage.h"

/* Fork a child that saves rt's nodes with dirty[n] (the others keep the
   files prev_state lists) into st and reports on *fd. */
int ckpt_fork(Store *st, Runtime *rt, int nnodes, const bool *dirty, const char *prev_state,
              pid_t *pid, int *fd, Err *err);
/* Read a child's report to its end into text and reap the child. A child
   still running after timeout seconds (0: no deadline) is killed (SIGKILL)
   and its report says so ("ERR ... killed": ckpt_parse_report fails it). */
void ckpt_reap(int fd, pid_t pid, double timeout, Buf *text);
/* The same with the deadline given as a time of ckpt_clock (0: none), for
   a follower that polls its child meanwhile; timeout is what the report
   names. */
void ckpt_reap_until(int fd, pid_t pid, double end, double timeout, Buf *text);
/* Seconds since an arbitrary start (CLOCK_MONOTONIC). */
double ckpt_clock(void);
/* Append a report's entries to state (a JSON array) and add its figures;
   SL_EIO when the child failed. */
int ckpt_parse_report(const char *text, cJSON *state, int64_t *written, int64_t *reused,
                      int64_t *bytes, Err *err);
/* Load the workers of rt (global ids) from a manifest's "state" (written
   with W0 workers; another count re-shards, single host only). */
int ckpt_load_state(Store *st, Runtime *rt, int nnodes, const cJSON *state, int W0, Err *err);
/* Tell st which files the checkpoint that stays kept beside the one at
   step uses (the newest manifest before step, else the files of prev, a
   "state" array), so that the new one takes their twins. */
void ckpt_avoid_previous(Store *st, const cJSON *prev, int64_t step);
/* An integer member of a manifest object (0 when missing or not one). */
int64_t ckpt_jint(const cJSON *o, const char *k);
/* A 64-bit integer as a manifest value that reads back exactly: a JSON
   number when cJSON prints it exactly (|x| < 10^15), else its decimal text
   (connector positions: S3 packs the line number into high bits, Kafka
   offsets and LSNs may be large). */
cJSON *ckpt_jint_new(int64_t x);
/* Read such a value back (either form); false when v is neither a whole
   number within 64 bits nor such a text. */
bool ckpt_jint_get(const cJSON *v, int64_t *out);

#endif
