/*
 * storage/storage.h - a Store: immutable checksummed batch files and
 * atomically replaced manifests in one local directory. The building block
 * for checkpoints (issue 6); nothing in the pipeline uses it yet.
 *
 * Files in the directory:
 *   LOCK                 held (flock) by the one process that has it open
 *   batch-<hash>.slb     one Batch: header, zstd payload, xxHash64 checksum;
 *                        <hash> is the XXH3-128 of the batch's contents, so
 *                        writing an unchanged batch again is a no-op
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
 * renamed), "manifest-write", "manifest-rename".
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
/* Release the lock and free st (NULL is fine). */
void store_close(Store *st);
const char *store_dir(const Store *st);
void store_stats(const Store *st, StoreStats *out);

/* Write b as an immutable file unless a file with its contents exists;
   its name goes to name_out either way. */
int store_put_batch(Store *st, const Batch *b, char name_out[STORE_NAME_MAX], Err *err);
/* Read a batch file back (refs 1), verifying magic, version, checksum and
   contents; a corrupt or truncated file is SL_EIO naming the file and the
   fault. */
int store_get_batch(Store *st, const char *name, Batch **out, Err *err);

/* Write manifest-<step>.json atomically. json must be a JSON object whose
   optional "files" array names batch files that exist in the store. */
int store_write_manifest(Store *st, uint64_t step, const char *json, Err *err);
/* Find the newest manifest that verifies (checksum, JSON, its files exist)
   and return its step and JSON text (*json, caller frees with sl_free).
   Manifests skipped on the way are described in *skipped (one line each,
   caller frees; NULL when none skipped; skipped may be NULL). No manifest at
   all: returns 0 with *json NULL. Manifests but none valid: SL_EIO. */
int store_latest_manifest(Store *st, uint64_t *step, char **json, char **skipped, Err *err);
/* Keep the newest `keep` valid manifests; delete every other manifest and
   every batch file that neither a kept manifest nor refs[0..nrefs) names
   (refs: files of a checkpoint being written, not yet in a manifest). */
int store_prune(Store *st, int keep, const char *const *refs, size_t nrefs, Err *err);

/* The fault-injection hook (see above), for other writers of the store
   (the journal, later). */
void store_crash_point(const char *point);

#endif
