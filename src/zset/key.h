/*
 * zset/key.h - memcmp-comparable encoding of rows (DuckDB-style normalized
 * keys). Batches store every tuple in this form, so sorting, merging and
 * seeking compare bytes with memcmp instead of calling per-type comparators.
 *
 * Per column, in order:
 *   nullable column: one marker byte, 0x00 = NULL (then nothing else),
 *                    0x01 = present (then the value) - NULLs sort first;
 *   BOOLEAN, TINYINT: 1 byte; SMALLINT: 2; INT, DATE: 4; BIGINT, DECIMAL,
 *                    TIME, TIMESTAMP: 8, DECIMAL(p > 18): 16 - big-endian,
 *                    sign bit flipped;
 *   REAL: 4 bytes, DOUBLE: 8 bytes - IEEE bits, all bits flipped when
 *                    negative else sign bit flipped; -0.0 encoded as 0.0,
 *                    every NaN as one canonical NaN (sorts above +Inf);
 *   CHAR/VARCHAR:    the bytes, then 0x00 (strings never contain NUL).
 * The encoding is self-delimiting, so key || value concatenations sort by
 * key first. SQL order equals memcmp order for each type.
 */
#ifndef SL_ZSET_KEY_H
#define SL_ZSET_KEY_H

#include "../base/buf.h"
#include "../expr/chunk.h"

/* Append the encoding of columns cols[0..ncols) of row r of c to out. */
void key_encode(const Chunk *c, const int *cols, int ncols, int64_t r, Buf *out);
/* Append the encoding of all columns of row r of c to out. */
void key_encode_row(const Chunk *c, int64_t r, Buf *out);

/*
 * Decode ncols columns of types types[0..ncols) from p into row r of dst,
 * columns col0..col0+ncols. Strings point into p's memory (no copy).
 * Returns the position after the last decoded column.
 */
const uint8_t *key_decode(const uint8_t *p, const SqlType *types, int ncols, Chunk *dst,
                          int col0, int64_t r);
/* key_decode of the columns j with need[j] only: the others are skipped
   and left unset in dst (a consumer that reads none of them). */
const uint8_t *key_decode_some(const uint8_t *p, const SqlType *types, int ncols,
                               const bool *need, Chunk *dst, int col0, int64_t r);
/*
 * Column at a time, for rows of fixed width: key_fixed_width is the width
 * of the encoding of columns cols[0..ncols) of rows 0..c->n of c (cols
 * NULL: all of them) when that encoding has the same length in every row,
 * else -1: when every column is either an integer kind without a NULL in
 * those rows (NOT NULL, or nullable and a marker byte longer), or NULL in
 * every one of those rows, whatever its type (the marker byte alone: the
 * columns a join's input has set to NULL because nobody reads them, or a
 * nullable key column without NULLs in this chunk). key_encode_fixed
 * writes the encoding of those columns of rows 0..n (n = c->n, as judged)
 * of c at dst[r] + at, one column after the other (a tight loop per
 * column instead of a type switch per value).
 */
int key_fixed_width(const Chunk *c, const int *cols, int ncols);
void key_encode_fixed(const Chunk *c, const int *cols, int ncols, int64_t n, uint8_t *const *dst,
                      size_t at);

/*
 * A plan for decoding some columns of many encodings of one row type (a
 * join's output rows): the needed NOT NULL integer columns that every
 * encoding holds at the same offset (all columns before them are NOT NULL
 * and fixed-width) load directly from there; the needed columns from the
 * first one of variable offset on go through key_decode_some.
 */
typedef struct KeyPlan {
    int nfast;
    int *fast_col, *fast_off, *fast_w; /* column, byte offset, width */
    int slow;         /* first column of variable offset (ncols: none) */
    int slow_off;     /* its offset */
    bool slow_needed; /* some needed column is at or after slow */
    const SqlType *types;
    int ncols;
    const bool *need;
} KeyPlan;
/* The plan for ncols columns of types types (kept, not copied) of which
   need[j] (kept; NULL: all) are decoded. */
void key_plan_init(KeyPlan *kp, const SqlType *types, int ncols, const bool *need);
void key_plan_free(KeyPlan *kp);
/* Decode the needed columns of the encoding at p into row r of dst,
   columns col0.. (the others stay unset). */
void key_decode_plan(const KeyPlan *kp, const uint8_t *p, Chunk *dst, int col0, int64_t r);
/* The same for n encodings p[0..n) into rows r0..r0+n, the fixed-offset
   columns one column at a time. */
void key_decode_many(const KeyPlan *kp, const uint8_t *const *p, int64_t n, Chunk *dst, int col0,
                     int64_t r0);

/* Position after ncols encoded columns starting at p (no decoding). */
const uint8_t *key_skip(const uint8_t *p, const SqlType *types, int ncols);

#endif
