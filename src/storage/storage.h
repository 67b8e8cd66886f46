/*
 * storage/storage.h - a Store: immutable checksummed batch files,
 * atomically replaced manifests and append-only record logs in one local
 * directory (or an S3 bucket mirrored through a local cache). Used by the
 * pipeline's checkpoints, journal and ingress log (pipeline/ckpt.c,
 * pipeline/journal.c).
 *
 * Files in the directory:
 *   LOCK                 the pid of the process holding the directory's lock
 *                        (an flock on the directory itself, so deleting
 *                        LOCK does not free it)
 *   batch-<hash>.slb     one Batch: header, zstd payload, xxHash64 checksum;
 *                        <hash> is the XXH3-128 of the batch's contents, so
 *                        writing an unchanged batch again is a no-op
 *   batch-<hash>-1.slb   the same bytes under its twin name (see
 *                        store_set_avoid: kept checkpoints share no file)
 *   manifest-<step>.json a checkpoint: JSON (with a "files" array naming the
 *                        batch files it needs), then a checksum line
 *   tmp-*                a file being written; never read, removed at open
 * A file appears under its final name only once complete and fsync'd
 * (temp file, fsync, rename, fsync of the directory).
 *
 * Thread safety: store_put_batch and store_get_batch may run concurrently
 * on one Store; store_write_manifest, store_latest_manifest and store_prune
 * must not run concurrently with each other or with puts whose names they
 * are meant to see (the caller serializes them, e.g. the controller).
 *
 * Fault injection: env SLUICE_CRASH_AT=<point>[:<n>] makes the process
 * _exit(137) the n-th time (default 1st) it reaches <point>: "batch-write"
 * (temp file half written), "batch-rename" (temp file complete, not yet
 * renamed), "manifest-write", "manifest-rename". Counted points (the
 * number is compared, not counted): "after-step:N" (step N's outputs are
 * delivered), "after-checkpoint:N" (this process published its N-th
 * manifest, or a follower wrote its share); "@R" limits them to MPI rank R.
 */
#ifndef SL_STORAGE_STORAGE_H
#define SL_STORAGE_STORAGE_H

#include "../base/err.h"
#include "../zset/batch.h"

#define STORE_NAME_MAX 64  /* size of a batch file name buffer, with NUL */
#define STORE_FORMAT_VERSION 1

typedef struct Store Store;

typedef struct StoreStats {
    uint64_t batches_written; /* store_put_batch calls that wrote a file */
    uint64_t batches_reused;  /* ... that found the file already there */
    uint64_t bytes_written;   /* file bytes written by puts and manifests */
} StoreStats;

/* Open (creating it and its parents if needed) the storage directory dir
   and take its lock. SL_EIO when another process or Store holds it. */
int store_open(const char *dir, Store **out, Err *err);
/*
 * Remote storage: store_open_url also takes "s3://BUCKET/PREFIX" (endpoint
 * from SLUICE_S3_ENDPOINT or AWS_ENDPOINT_URL, credentials from
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, region AWS_REGION, default
 * us-east-1). The store then works on a fresh local cache directory that
 * it first fills from the bucket, and mirrors every durable write: a
 * published file (batch, manifest) counts as written once its object is
 * PUT; a log's sync uploads the bytes appended since the last sync as one
 * part object NAME.<offset> (S3 cannot append), and the parts are joined
 * again when the cache is filled. Deletions delete the objects. There is
 * no lock in the bucket: do not run two pipelines on one prefix.
 */
int store_open_url(const char *where, Store **out, Err *err);
/* Another process of a scale-out pipeline (an MPI rank > 0) writing its
   share of the checkpoints into the coordinator's storage: a directory
   is opened without its lock (the coordinator holds it) and without
   clean-up; s3:// works through this process's own cache, which starts
   empty: store_fetch what is to be read. */
int store_open_member(const char *where, Store **out, Err *err);
/* Make a file another process wrote (store_open_member) present here: a
   directory's is there already; an S3 store downloads it into its cache.
   SL_EIO when it exists nowhere. */
int store_fetch(Store *st, const char *name, Err *err);
/* The directory, or the s3:// URL of a remote store (for messages). */
const char *store_where(const Store *st);

/* In a forked child: close this process's handle of the lock (the parent
   keeps holding it; when the parent dies the lock is free at once). */
void store_forget_lock(Store *st);
/* Release the lock and free st (NULL is fine). */
void store_close(Store *st);
const char *store_dir(const Store *st);
void store_stats(const Store *st, StoreStats *out);
/* Files of st need not survive a crash (spilled state): published without
   fsync, still atomically renamed. */
void store_set_scratch(Store *st);

/*
 * Two kept checkpoints never share a file. Every batch has two possible
 * names, batch-<hash>.slb and its twin batch-<hash>-1.slb (same bytes);
 * before writing checkpoint N the caller names the files of checkpoint
 * N-1 (store_set_avoid), and each batch of N takes whichever name N-1
 * does not use. A file that N-2 left under that name is reused (after
 * its checksum verifies; a damaged one is written again), so a state that
 * does not change costs one copy, then nothing. One damaged file thus
 * spoils at most one kept checkpoint; the other still loads.
 */
void store_set_avoid(Store *st, const char *const *names, size_t n);
/* Is name a well-formed batch file name ("batch-" 32 hex [-1] ".slb")? */
bool store_is_batch_name(const char *name);
/* The other name of a batch file (see above). */
void store_batch_twin(const char *name, char twin[STORE_NAME_MAX]);
/* Write b as an immutable file unless a verifying file with its contents
   exists under the name chosen (see above); the name goes to name_out
   either way. */
int store_put_batch(Store *st, const Batch *b, char name_out[STORE_NAME_MAX], Err *err);
/* Keep the batch file `name` (of the previous checkpoint) for the next:
   its name chosen as above goes to name_out; when that file is missing or
   damaged it is copied from `name`, whose checksum is verified on the
   way (SL_EIO naming the file when it fails: the caller saves the state
   again from memory). */
int store_reuse_batch(Store *st, const char *name, char name_out[STORE_NAME_MAX], Err *err);
/* Read a batch file back (refs 1), verifying magic, version, checksum and
   contents; a corrupt or truncated file is SL_EIO naming the file and the
   fault. */
int store_get_batch(Store *st, const char *name, Batch **out, Err *err);

/* A batch as the bytes of a batch file kept in memory (the blocks of a
   spilled run: storage/spill.c writes them end to end in one file): the
   same format, but flagged STORE_FLAG_NO_HASH with no content hash (the
   trailing checksum still covers every byte), and with `lz4` set the
   payload is one LZ4 block instead of a zstd frame (STORE_FLAG_LZ4; only
   blocks: checkpoint files are always zstd). A StoreCodec keeps the zstd
   contexts between calls (zero it first; one thread at a time). */
#define STORE_FLAG_NO_HASH 1u
#define STORE_FLAG_UNIFORM 2u /* (batchfile.c) */
#define STORE_FLAG_LZ4 4u     /* (batchfile.c) */
typedef struct StoreCodec {
    struct ZSTD_CCtx_s *cx;
    struct ZSTD_DCtx_s *dx;
    int level;  /* zstd's compression level (0: the checkpoints' level, 1) */
    bool lz4;   /* encode blocks with LZ4 (decoding follows the block's flag) */
} StoreCodec;
/* The bytes to *out (sl_free them), *n of them. */
int store_encode_batch(const Batch *b, StoreCodec *c, uint8_t **out, size_t *n, Err *err);
/* The batch of bytes f[0..n) (refs 1), verified as store_get_batch
   verifies a file; errors name `where`. */
int store_decode_batch(const char *where, const uint8_t *f, size_t n, StoreCodec *c,
                       Batch **out, Err *err);
void store_codec_free(StoreCodec *c);

/* Write manifest-<step>.json atomically. json must be a JSON object whose
   optional "files" array names batch files that exist in the store. */
int store_write_manifest(Store *st, uint64_t step, const char *json, Err *err);
/* Find the newest manifest that verifies (checksum, JSON, its files exist)
   and return its step and JSON text (*json, caller frees with sl_free).
   Manifests skipped on the way are described in *skipped (one line each,
   caller frees; NULL when none skipped; skipped may be NULL). No manifest at
   all: returns 0 with *json NULL. Manifests but none valid: SL_EIO. */
int store_latest_manifest(Store *st, uint64_t *step, char **json, char **skipped, Err *err);
/* Like store_latest_manifest, among manifests of steps below `below`
   (falling back past a checkpoint whose files turned out corrupt). With
   no valid manifest below it: 0 and *json NULL, or SL_EIO when some were
   skipped. */
int store_manifest_before(Store *st, uint64_t below, uint64_t *step, char **json,
                          char **skipped, Err *err);
/* Keep the newest `keep` valid manifests; delete every other manifest and
   every batch file that neither a kept manifest nor refs[0..nrefs) names
   (refs: files of a checkpoint being written, not yet in a manifest). */
int store_prune(Store *st, int keep, const char *const *refs, size_t nrefs, Err *err);

/* Names of the files whose name starts with prefix, sorted (free with
   store_list_free); and deleting one (a missing file is not an error). */
int store_list(Store *st, const char *prefix, char ***names, int *count, Err *err);
void store_list_free(char **names, int count);
int store_remove(Store *st, const char *name, Err *err);

/*
 * Record logs (log.c): append-only files of checksummed records, for the
 * step journal and the HTTP ingress log. A record is
 *   u32 magic, u32 payload length, u64 xxh64(payload), payload
 * written with one write(); log_sync makes everything appended so far
 * durable (fdatasync). A failed append cuts the file back to its last
 * whole record (or, if that fails too, refuses every later append and
 * sync until a cut works), so a record that does not verify can only be
 * the last thing in a file, where the writer died mid-write: a torn tail.
 * A damaged record anywhere else is reported as corruption. A log is
 * created fresh (never reopened for appending).
 */
typedef struct Log Log;
int log_create(Store *st, const char *name, Log **out, Err *err);
/* Append one record; the fault point "<crash>-write" (e.g. journal-write)
   tears it in half when SLUICE_CRASH_AT names it. Thread-safe. Returns the
   file offset after the record in *end (may be NULL). */
int log_append(Log *l, const void *p, size_t n, const char *crash, uint64_t *end, Err *err);
/* Make the log durable up to at least offset `upto` (all when UINT64_MAX);
   concurrent callers share one fdatasync (group commit). */
int log_sync(Log *l, uint64_t upto, Err *err);
const char *log_name(const Log *l);
/* Logs are reference-counted (a pusher may still sync a segment the
   controller has moved past): log_create gives one reference; the last
   release closes the file. log_close is log_release. */
void log_ref(Log *l);
void log_release(Log *l);
void log_close(Log *l);
/* Call cb for each complete record of the named log in order; cb returns
   non-zero to stop (that code is returned). A record that does not verify
   and is followed by nothing that does is a torn tail: scanning stops and
   *torn_at is its offset (else UINT64_MAX). One followed by a record that
   verifies is corruption: SL_EIO naming the file, the offset and what
   failed (records after a damaged one are never skipped silently). */
typedef int (*LogFn)(void *ctx, const uint8_t *p, size_t n);
int log_scan(Store *st, const char *name, LogFn cb, void *ctx, uint64_t *torn_at, Err *err);
/* Cut a torn tail off the named log (at the offset log_scan gave) and make
   that durable, so that later segments never follow a torn record. */
int log_cut_tail(Store *st, const char *name, uint64_t at, Err *err);

/* I/O fault injection: env SLUICE_FAULT=<point>-<error>:<n>[+<k>][,...]
   makes the n-th arrival at <point> (and the k-1 after it) fail with
   <error> (enospc, eio, edquot); log appends then write half the record
   first, as a disk that fills mid-write does. Points: ingress-write,
   journal-write, batch-write, manifest-write, log-truncate, log-sync, and
   "write" for every write. Returns the errno to fail with, or 0. */
int store_fault_due(const char *point);
/* Read SLUICE_FAULT again and restart the counts (tests; not thread-safe). */
void store_fault_reload(void);

/* The fault-injection hook (see above), for other writers of the store
   (the journal, later). */
void store_crash_point(const char *point);
/* Whether this arrival at point is the one to crash at (counts it); for
   writers that tear a write before calling _exit(137) themselves. */
bool store_crash_due(const char *point);
/* For points the caller counts itself (a step number, a checkpoint count):
   _exit(137) when SLUICE_CRASH_AT is "<point>:<n>[@<rank>]". */
void store_crash_at_count(const char *point, int64_t n);
/* Whether SLUICE_CRASH_AT is "<point>:<m>[@<rank>]" with n >= m, for
   callers that reach the point only on some counts (a step with output)
   and finish something (flush a producer) before their own _exit(137). */
bool store_crash_from_count_due(const char *point, int64_t n);

/*
 * Spilled trace state (spill.c): install the files behind zset/spill.h's
 * budget. Runs (one file each) go to storage_dir/spill, for host > 0 of hosts (scale-out)
 * storage_dir/spill/host-<host> (each its own lock; NULL: a scratch
 * directory under $TMPDIR, removed at close), made on the first spill.
 * Host 0 removes the directories of hosts >= hosts (an earlier run's).
 * conf->limit 0 turns spilling off. spill_store_where is the directory
 * once made (NULL before); close removes every spilled file.
 */
struct SpillConf;
void spill_store_setup(const char *storage_dir, int host, int hosts,
                       const struct SpillConf *conf);
const char *spill_store_where(void);
void spill_store_close(void);
/*
 * A checkpoint's forked child reads spilled blocks from these files while
 * the parent drops files it no longer needs. spill_store_hold, taken
 * before the fork, keeps every file that exists now until the hold is
 * released (by its id, or by the child's pid once told with
 * spill_store_hold_owner) after the child has exited; files made later
 * are not kept (at most 8 holds at once; more is a bug: an ALWAYS() panics
 * in debug builds, and a release build returns hold 0, keeping nothing).
 * spill_store_held: files kept for holds alone, and bytes.
 */
uint64_t spill_store_hold(void);
void spill_store_hold_owner(uint64_t hold, int pid);
void spill_store_release(uint64_t hold);
void spill_store_release_owner(int pid);
void spill_store_held(int64_t *files, size_t *bytes);

#endif
