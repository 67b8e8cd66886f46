/*
 * io/datagen.h - the datagen input transport (Feldera-compatible config).
 *
 * Every row is a pure function of (seed, plan index, row index): any worker
 * can generate any row range, so the generated set is identical for every
 * worker count and batch size. Rows are written straight into a Chunk, a
 * column at a time.
 *
 * Config (the connector's transport "config" object; all keys optional,
 * unknown keys rejected naming the key and the connector):
 *   seed (u64, default 0), workers (>= 1, default 1), plan: list of
 *   { limit, rate (rows/s), worker_chunk_size, fields: { column: {
 *       strategy: increment|uniform|zipf|word|words|sentence|name|email,
 *       range: [a, b) half-open (numbers; DATE/TIME/TIMESTAMP as epoch
 *              values (days / ms / ms) or literals "2024-01-01", ...),
 *       scale, values (list; overrides range), null_percentage (0..100),
 *       e (zipf exponent, default 1) } } }
 * Defaults follow Feldera: no fields -> every column counts up from 0;
 * "ts": {"scale": 1000} on a TIMESTAMP gives row i the time epoch + i s.
 */
#ifndef SL_IO_DATAGEN_H
#define SL_IO_DATAGEN_H

#include <cJSON.h>

#include "../base/err.h"
#include "../expr/chunk.h"

typedef struct Datagen Datagen;

/*
 * Validate config and build a generator for a table with ncols columns
 * (names[], types[]). `where` names the connector in messages, e.g.
 * "table transactions, connector 0 (datagen)". NULL config = all defaults.
 * Returns NULL with err set (SL_ECONFIG) on a bad config.
 */
Datagen *datagen_new(const cJSON *config, int ncols, const char *const *names,
                     const SqlType *types, const char *where, Err *err);
void datagen_free(Datagen *g);
/*
 * The nexmark transport (nexmark.c): a generator of one plan holding the
 * rows of Nexmark table `table` (person, auction or bid, unless config's
 * "table" says which) among config's "events"; the columns (names[],
 * types[]) are matched to the event's fields by name. NULL with err set
 * (SL_ECONFIG) on a bad config or column.
 */
Datagen *nexmark_new(const cJSON *config, const char *table, int ncols, const char *const *names,
                     const SqlType *types, const char *where, Err *err);
/* Columns with read[i] false are not generated: a nullable one is NULL in
   every row, a NOT NULL one 0 or ''. The other columns' values stay those
   of every field's own random stream (nexmark_gen.h), so skipping changes
   none of them. g must come from nexmark_new. */
void nexmark_skip_unread(Datagen *g, const bool *read);

int datagen_nplans(const Datagen *g);
/* Rows in plan p, or -1 when unlimited. */
int64_t datagen_plan_limit(const Datagen *g, int p);
/* Rows per second for plan p, 0 when unlimited. */
double datagen_plan_rate(const Datagen *g, int p);
/* worker_chunk_size of plan p (default min(rate, 10000), 10000 when no rate). */
int64_t datagen_plan_chunk(const Datagen *g, int p);
int datagen_workers(const Datagen *g);
uint64_t datagen_seed(const Datagen *g);

/*
 * Append rows [start, start+count) of plan p to out (columns = the table's
 * columns, room for count more rows), weight 1 each. Strings are allocated
 * from a. Thread-safe: g is read-only here.
 */
void datagen_fill(const Datagen *g, int p, int64_t start, int64_t count, Chunk *out, Arena *a);

#endif
