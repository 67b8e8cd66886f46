/*
 * expr/chunk.h - columnar vectors of rows with weights: the unit that flows
 * between operators within a step ("columns in, columns through").
 *
 * A Chunk is an unconsolidated Z-set: n rows, each with a weight. Its memory
 * (and the string bytes its Str values point to) belongs to a step arena or
 * to a batch that outlives the step; a Chunk is never kept across steps.
 *
 * Invariant: Vec.nul != NULL exactly when Vec.t.nullable; nul[i] == 1 marks
 * row i NULL (its value slot is then unspecified but initialised).
 */
#ifndef SL_EXPR_CHUNK_H
#define SL_EXPR_CHUNK_H

#include "../base/arena.h"
#include "types.h"

typedef struct Str {
    const char *p;
    uint32_t n;
} Str;

typedef struct Vec {
    SqlType t;
    int64_t *i; /* PHYS_I64 values, else NULL */
    double *f;  /* PHYS_F64 values, else NULL */
    Str *s;     /* PHYS_STR values, else NULL */
    i128 *x;    /* PHYS_I128 values (wide DECIMAL), else NULL */
    uint8_t *nul;
} Vec;

typedef struct Chunk {
    int ncol;
    int64_t n;   /* rows in use */
    int64_t cap; /* rows allocated */
    Vec *col;    /* ncol vectors of cap entries */
    int64_t *w;  /* weights */
} Chunk;

/* A chunk of cap rows (n = 0) with the given column types, from arena a. */
Chunk *chunk_new(Arena *a, int ncol, const SqlType *types, int64_t cap);
/* A vector of cap entries of type t from arena a (nul zeroed when nullable). */
void vec_init(Vec *v, Arena *a, SqlType t, int64_t cap);
/* Copy row r of src (same column types) to the end of dst; strings shared. */
void chunk_append_row(Chunk *dst, const Chunk *src, int64_t r);
/* View of rows [start, start+n) of c, sharing its memory (header from a). */
Chunk *chunk_slice(Arena *a, const Chunk *c, int64_t start, int64_t n);
static inline bool vec_is_null(const Vec *v, int64_t r) { return v->nul && v->nul[r]; }
/* Zero the value slot of row r of v (0, 0.0 or the empty string). */
static inline void vec_zero(Vec *v, int64_t r)
{
    if (v->i)
        v->i[r] = 0;
    else if (v->x)
        v->x[r] = 0;
    else if (v->f)
        v->f[r] = 0;
    else
        v->s[r] = (Str){"", 0};
}

/* Make row r of nullable v NULL (its value slot zeroed). */
static inline void vec_set_null(Vec *v, int64_t r)
{
    v->nul[r] = 1;
    vec_zero(v, r);
}

#endif
