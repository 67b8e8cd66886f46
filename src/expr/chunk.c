/*
 * expr/chunk.c - allocation and copying of columnar chunks.
 */
#include "chunk.h"

void vec_init(Vec *v, Arena *a, SqlType t, int64_t cap)
{
    size_t n = (size_t)(cap > 0 ? cap : 1);
    memset(v, 0, sizeof(*v));
    v->t = t;
    switch (type_phys(t)) {
    case PHYS_I64: v->i = arena_alloc(a, n * sizeof(int64_t)); break;
    case PHYS_F64: v->f = arena_alloc(a, n * sizeof(double)); break;
    case PHYS_STR: v->s = arena_alloc(a, n * sizeof(Str)); break;
    case PHYS_I128: v->x = arena_alloc(a, n * sizeof(i128)); break;
    }
    if (t.nullable)
        v->nul = arena_zalloc(a, n);
}

Chunk *chunk_new(Arena *a, int ncol, const SqlType *types, int64_t cap)
{
    Chunk *c = arena_alloc(a, sizeof(*c));
    c->ncol = ncol;
    c->n = 0;
    c->cap = cap;
    c->col = arena_alloc(a, sizeof(Vec) * (size_t)(ncol > 0 ? ncol : 1));
    for (int j = 0; j < ncol; j++)
        vec_init(&c->col[j], a, types[j], cap);
    c->w = arena_alloc(a, sizeof(int64_t) * (size_t)(cap > 0 ? cap : 1));
    return c;
}

void chunk_append_row(Chunk *dst, const Chunk *src, int64_t r)
{
    int64_t k = dst->n++;
    for (int j = 0; j < dst->ncol; j++) {
        Vec *d = &dst->col[j];
        const Vec *s = &src->col[j];
        if (d->i)
            d->i[k] = s->i[r];
        else if (d->x)
            d->x[k] = s->x[r];
        else if (d->f)
            d->f[k] = s->f[r];
        else
            d->s[k] = s->s[r];
        if (d->nul)
            d->nul[k] = s->nul ? s->nul[r] : 0;
    }
    dst->w[k] = src->w[r];
}

Chunk *chunk_slice(Arena *a, const Chunk *c, int64_t start, int64_t n)
{
    /* callers slice what they know is there; a release build clamps */
    if (NEVER(start < 0 || start > c->n))
        start = start < 0 ? 0 : c->n;
    if (NEVER(n < 0 || n > c->n - start))
        n = n < 0 ? 0 : c->n - start;
    Chunk *s = arena_alloc(a, sizeof(*s));
    s->ncol = c->ncol;
    s->n = s->cap = n;
    s->w = c->w + start;
    s->col = arena_alloc(a, sizeof(Vec) * (size_t)(c->ncol > 0 ? c->ncol : 1));
    for (int j = 0; j < c->ncol; j++) {
        const Vec *v = &c->col[j];
        Vec *d = &s->col[j];
        *d = *v;
        if (v->i) d->i = v->i + start;
        if (v->f) d->f = v->f + start;
        if (v->s) d->s = v->s + start;
        if (v->x) d->x = v->x + start;
        if (v->nul) d->nul = v->nul + start;
    }
    return s;
}
