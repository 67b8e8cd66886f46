/*
 * zset/key.c - memcmp-comparable encoding of chunk rows (format in key.h).
 * In: rows of columnar chunks, encoded by operators before they enter a
 * BatchBuilder. Out: decoded values written back into chunk vectors, with
 * strings pointing into the encoded bytes (so into a batch).
 *
 * Integers are stored big-endian in their type's width with the sign bit
 * flipped; floats use the usual total-order trick (negative: flip all bits,
 * else flip the sign bit) after -0.0 and NaN are canonicalised.
 */
#include "key.h"

#include <math.h>

#include "../base/mem.h"

#define KEY_NULL    0x00
#define KEY_PRESENT 0x01

/* Bytes of the fixed-width encoding of kind k; 0 for strings (and for the
   NULL type, whose only value is NULL and so needs no value bytes). */
static inline int fixed_width(TypeKind k)
{
    switch (k) {
    case TK_BOOL:
    case TK_TINYINT: return 1;
    case TK_SMALLINT: return 2;
    case TK_INT:
    case TK_DATE:
    case TK_REAL: return 4;
    case TK_BIGINT:
    case TK_DECIMAL:
    case TK_TIME:
    case TK_TIMESTAMP:
    case TK_TIMESTAMPTZ:
    case TK_INTERVAL_DT:
    case TK_INTERVAL_YM:
    case TK_DOUBLE: return 8;
    default: return 0;
    }
}

/* Store the low `width` bytes (1, 2, 4 or 8) of u big-endian at p. One
   fixed-size move per width: a move of a variable size is a call. */
static inline void put_be(uint8_t *p, uint64_t u, int width)
{
    switch (width) {
    case 1:
        p[0] = (uint8_t)u;
        break;
    case 2: {
        uint16_t be = __builtin_bswap16((uint16_t)u);
        memcpy(p, &be, 2);
        break;
    }
    case 4: {
        uint32_t be = __builtin_bswap32((uint32_t)u);
        memcpy(p, &be, 4);
        break;
    }
    default: {
        uint64_t be = __builtin_bswap64(u);
        memcpy(p, &be, 8);
        break;
    }
    }
}

/* Load `width` bytes (1, 2, 4 or 8) big-endian from p into the low bytes
   of the result. */
static inline uint64_t get_be(const uint8_t *p, int width)
{
    switch (width) {
    case 1:
        return p[0];
    case 2: {
        uint16_t be;
        memcpy(&be, p, 2);
        return __builtin_bswap16(be);
    }
    case 4: {
        uint32_t be;
        memcpy(&be, p, 4);
        return __builtin_bswap32(be);
    }
    default: {
        uint64_t be;
        memcpy(&be, p, 8);
        return __builtin_bswap64(be);
    }
    }
}

static inline uint64_t enc_int(int64_t x, int width)
{
    return (uint64_t)x ^ (1ull << (8 * width - 1));
}

static inline int64_t dec_int(uint64_t u, int width)
{
    int sh = 64 - 8 * width;
    u ^= 1ull << (8 * width - 1);
    return (int64_t)(u << sh) >> sh;
}

static inline uint64_t enc_float_bits(uint64_t bits, int width)
{
    uint64_t sign = 1ull << (8 * width - 1);
    uint64_t all = width == 8 ? ~0ull : 0xffffffffull;
    return (bits & sign) ? (~bits & all) : (bits | sign);
}

static inline uint64_t dec_float_bits(uint64_t u, int width)
{
    uint64_t sign = 1ull << (8 * width - 1);
    uint64_t all = width == 8 ? ~0ull : 0xffffffffull;
    return (u & sign) ? (u ^ sign) : (~u & all);
}

static inline uint64_t enc_double(double d) { return f64_order(d); }

static inline uint64_t enc_real(double d)
{
    float f = (float)d;
    uint32_t bits;
    if (isnan(f))
        bits = 0x7fc00000u;
    else {
        if (f == 0)
            f = 0.0f;
        memcpy(&bits, &f, 4);
    }
    return enc_float_bits(bits, 4);
}

/* Bytes of the fixed-width encoding of type t: a wide DECIMAL takes 16. */
static inline int type_width(SqlType t)
{
    return type_is_wide(t) ? 16 : fixed_width((TypeKind)t.kind);
}

/* A wide DECIMAL: 16 bytes big-endian, sign bit flipped. */
static inline void put_i128(uint8_t *p, i128 x)
{
    unsigned __int128 u = (unsigned __int128)x ^ ((unsigned __int128)1 << 127);
    put_be(p, (uint64_t)(u >> 64), 8);
    put_be(p + 8, (uint64_t)u, 8);
}

static inline i128 get_i128(const uint8_t *p)
{
    unsigned __int128 u = ((unsigned __int128)get_be(p, 8) << 64) | get_be(p + 8, 8);
    return (i128)(u ^ ((unsigned __int128)1 << 127));
}

/* Bytes the encoding of value r of v may take: a marker, then at most 16
   bytes for a fixed-width value, or the string and its NUL. */
static inline size_t value_bound(const Vec *v, int64_t r)
{
    return v->s ? (size_t)v->s[r].n + 2 : 17;
}

/* Encode value r of v at p, which has value_bound bytes of room; returns
   the end. */
static inline uint8_t *encode_value(const Vec *v, int64_t r, uint8_t *p)
{
    TypeKind k = (TypeKind)v->t.kind;
    if (v->t.nullable) {
        if (v->nul[r]) {
            *p++ = KEY_NULL;
            return p;
        }
        *p++ = KEY_PRESENT;
    }
    switch (k) {
    case TK_BOOL:
    case TK_TINYINT:
    case TK_SMALLINT:
    case TK_INT:
    case TK_DATE:
    case TK_BIGINT:
    case TK_DECIMAL:
    case TK_TIME:
    case TK_TIMESTAMP:
    case TK_TIMESTAMPTZ:
    case TK_INTERVAL_DT:
    case TK_INTERVAL_YM: {
        if (v->x) {
            put_i128(p, v->x[r]);
            return p + 16;
        }
        int width = fixed_width(k);
        put_be(p, enc_int(v->i[r], width), width);
        return p + width;
    }
    case TK_REAL:
        put_be(p, enc_real(v->f[r]), 4);
        return p + 4;
    case TK_DOUBLE:
        put_be(p, enc_double(v->f[r]), 8);
        return p + 8;
    case TK_CHAR:
    case TK_VARCHAR:
    case TK_ARRAY:
    case TK_ROW:
    case TK_MAP:
    case TK_VARIANT: {
        Str s = v->s[r];
        if (s.n)
            memcpy(p, s.p, s.n);
        p[s.n] = 0;
        return p + s.n + 1;
    }
    case TK_NULL:
        break;
    }
    return p;
}

/* One reservation per row: the bound of every value, then the values. */
void key_encode(const Chunk *c, const int *cols, int ncols, int64_t r, Buf *out)
{
    size_t need = 0;
    for (int j = 0; j < ncols; j++)
        need += value_bound(&c->col[cols[j]], r);
    if (!need) /* no columns (out->p may be NULL) */
        return;
    buf_reserve(out, need);
    uint8_t *p = out->p + out->n;
    for (int j = 0; j < ncols; j++)
        p = encode_value(&c->col[cols[j]], r, p);
    out->n = (size_t)(p - out->p);
}

void key_encode_row(const Chunk *c, int64_t r, Buf *out)
{
    size_t need = 0;
    for (int j = 0; j < c->ncol; j++)
        need += value_bound(&c->col[j], r);
    if (!need) /* no columns (out->p may be NULL) */
        return;
    buf_reserve(out, need);
    uint8_t *p = out->p + out->n;
    for (int j = 0; j < c->ncol; j++)
        p = encode_value(&c->col[j], r, p);
    out->n = (size_t)(p - out->p);
}

/* Decode one value of type t at p into row r of v; returns the end. */
static inline const uint8_t *decode_value(const uint8_t *p, SqlType t, Vec *v, int64_t r)
{
    TypeKind k = (TypeKind)t.kind;
    if (t.nullable) {
        if (*p++ == KEY_NULL) {
            vec_set_null(v, r);
            return p;
        }
        v->nul[r] = 0;
    }
    switch (k) {
    case TK_BOOL:
    case TK_TINYINT:
    case TK_SMALLINT:
    case TK_INT:
    case TK_DATE:
    case TK_BIGINT:
    case TK_DECIMAL:
    case TK_TIME:
    case TK_TIMESTAMP:
    case TK_TIMESTAMPTZ:
    case TK_INTERVAL_DT:
    case TK_INTERVAL_YM: {
        if (type_is_wide(t)) {
            v->x[r] = get_i128(p);
            return p + 16;
        }
        int width = fixed_width(k);
        v->i[r] = dec_int(get_be(p, width), width);
        return p + width;
    }
    case TK_REAL: {
        uint32_t bits = (uint32_t)dec_float_bits(get_be(p, 4), 4);
        float f;
        memcpy(&f, &bits, 4);
        v->f[r] = f;
        return p + 4;
    }
    case TK_DOUBLE: {
        v->f[r] = f64_unorder(get_be(p, 8));
        return p + 8;
    }
    case TK_CHAR:
    case TK_VARCHAR:
    case TK_ARRAY:
    case TK_ROW:
    case TK_MAP:
    case TK_VARIANT: {
        size_t n = strlen((const char *)p);
        v->s[r] = (Str){(const char *)p, (uint32_t)n};
        return p + n + 1;
    }
    case TK_NULL:
        v->i[r] = 0;
        break;
    }
    return p;
}

/* Position after one encoded value of type t at p. */
static inline const uint8_t *skip_value(const uint8_t *p, SqlType t)
{
    if (t.nullable && *p++ == KEY_NULL)
        return p;
    if (type_phys(t) == PHYS_STR)
        return p + strlen((const char *)p) + 1;
    return p + type_width(t);
}

const uint8_t *key_decode(const uint8_t *p, const SqlType *types, int ncols, Chunk *dst,
                          int col0, int64_t r)
{
    for (int j = 0; j < ncols; j++)
        p = decode_value(p, types[j], &dst->col[col0 + j], r);
    return p;
}

const uint8_t *key_decode_some(const uint8_t *p, const SqlType *types, int ncols,
                               const bool *need, Chunk *dst, int col0, int64_t r)
{
    for (int j = 0; j < ncols; j++)
        p = need[j] ? decode_value(p, types[j], &dst->col[col0 + j], r) : skip_value(p, types[j]);
    return p;
}

const uint8_t *key_skip(const uint8_t *p, const SqlType *types, int ncols)
{
    for (int j = 0; j < ncols; j++)
        p = skip_value(p, types[j]);
    return p;
}

/* An integer kind: decoded into Vec.i from its fixed width. */
static bool int_kind(TypeKind k)
{
    return fixed_width(k) > 0 && k != TK_REAL && k != TK_DOUBLE;
}

void key_plan_init(KeyPlan *kp, const SqlType *types, int ncols, const bool *need)
{
    memset(kp, 0, sizeof(*kp));
    kp->types = types;
    kp->ncols = ncols;
    kp->need = need;
    kp->fast_col = sl_calloc((size_t)ncols + 1, sizeof(int));
    kp->fast_off = sl_calloc((size_t)ncols + 1, sizeof(int));
    kp->fast_w = sl_calloc((size_t)ncols + 1, sizeof(int));
    int off = 0, j = 0;
    for (; j < ncols; j++) {
        TypeKind k = (TypeKind)types[j].kind;
        if (types[j].nullable || !int_kind(k) || type_is_wide(types[j]))
            break;
        if (!need || need[j]) {
            kp->fast_col[kp->nfast] = j;
            kp->fast_off[kp->nfast] = off;
            kp->fast_w[kp->nfast] = fixed_width(k);
            kp->nfast++;
        }
        off += fixed_width(k);
    }
    kp->slow = j;
    kp->slow_off = off;
    for (; j < ncols; j++)
        kp->slow_needed |= !need || need[j];
}

void key_plan_free(KeyPlan *kp)
{
    sl_free(kp->fast_col);
    sl_free(kp->fast_off);
    sl_free(kp->fast_w);
    memset(kp, 0, sizeof(*kp));
}

void key_decode_plan(const KeyPlan *kp, const uint8_t *p, Chunk *dst, int col0, int64_t r)
{
    for (int f = 0; f < kp->nfast; f++) {
        int w = kp->fast_w[f];
        dst->col[col0 + kp->fast_col[f]].i[r] = dec_int(get_be(p + kp->fast_off[f], w), w);
    }
    if (!kp->slow_needed)
        return;
    int n = kp->ncols - kp->slow;
    const SqlType *t = kp->types + kp->slow;
    if (kp->need)
        key_decode_some(p + kp->slow_off, t, n, kp->need + kp->slow, dst, col0 + kp->slow, r);
    else
        key_decode(p + kp->slow_off, t, n, dst, col0 + kp->slow, r);
}

/* One fixed-offset column of width `width` (a constant in each caller). */
static inline __attribute__((always_inline)) void dec_col(const uint8_t *const *p, int64_t n,
                                                          int off, int width, int64_t *out)
{
    for (int64_t k = 0; k < n; k++)
        out[k] = dec_int(get_be(p[k] + off, width), width);
}

void key_decode_many(const KeyPlan *kp, const uint8_t *const *p, int64_t n, Chunk *dst, int col0,
                     int64_t r0)
{
    for (int f = 0; f < kp->nfast; f++) {
        int64_t *out = dst->col[col0 + kp->fast_col[f]].i + r0;
        int off = kp->fast_off[f];
        switch (kp->fast_w[f]) {
        case 1: dec_col(p, n, off, 1, out); break;
        case 2: dec_col(p, n, off, 2, out); break;
        case 4: dec_col(p, n, off, 4, out); break;
        default: dec_col(p, n, off, 8, out); break;
        }
    }
    if (!kp->slow_needed)
        return;
    int ns = kp->ncols - kp->slow;
    const SqlType *t = kp->types + kp->slow;
    for (int64_t k = 0; k < n; k++) {
        if (kp->need)
            key_decode_some(p[k] + kp->slow_off, t, ns, kp->need + kp->slow, dst, col0 + kp->slow,
                            r0 + k);
        else
            key_decode(p[k] + kp->slow_off, t, ns, dst, col0 + kp->slow, r0 + k);
    }
}

/* How many of rows 0..n of v are NULL. */
static int64_t null_count(const Vec *v, int64_t n)
{
    if (!v->nul)
        return 0;
    int64_t k = 0;
    for (int64_t r = 0; r < n; r++)
        k += v->nul[r] != 0;
    return k;
}

int key_fixed_width(const Chunk *c, const int *cols, int ncols)
{
    int w = 0;
    for (int j = 0; j < ncols; j++) {
        const Vec *v = &c->col[cols ? cols[j] : j];
        const SqlType t = v->t;
        bool fixed = int_kind((TypeKind)t.kind) && !type_is_wide(t);
        if (t.nullable) {
            if (!fixed && (c->n == 0 || !v->nul[0]))
                return -1; /* a value of variable width (or no rows) */
            int64_t nulls = null_count(v, c->n);
            if (nulls == c->n && c->n > 0) { /* a NULL in every row: the marker */
                w += 1;
                continue;
            }
            if (nulls || !fixed)
                return -1;
            w += 1; /* KEY_PRESENT in every row */
        } else if (!fixed) {
            return -1;
        }
        w += fixed_width((TypeKind)t.kind);
    }
    return w;
}

/* One column of width `width` (a constant in each caller below, so that
   put_be's switch folds away). */
static inline __attribute__((always_inline)) void enc_col(const int64_t *v, int64_t n, int width,
                                                          uint8_t *const *dst, size_t at)
{
    for (int64_t r = 0; r < n; r++)
        put_be(dst[r] + at, enc_int(v[r], width), width);
}

void key_encode_fixed(const Chunk *c, const int *cols, int ncols, int64_t n, uint8_t *const *dst,
                      size_t at)
{
    for (int j = 0; j < ncols; j++) {
        const Vec *v = &c->col[cols ? cols[j] : j];
        if (v->t.nullable) { /* every row NULL, or none (key_fixed_width) */
            bool null = n > 0 && v->nul[0];
            for (int64_t r = 0; r < n; r++)
                dst[r][at] = null ? KEY_NULL : KEY_PRESENT;
            at++;
            if (null)
                continue;
        }
        int width = fixed_width((TypeKind)v->t.kind);
        switch (width) {
        case 1: enc_col(v->i, n, 1, dst, at); break;
        case 2: enc_col(v->i, n, 2, dst, at); break;
        case 4: enc_col(v->i, n, 4, dst, at); break;
        default: enc_col(v->i, n, 8, dst, at); break;
        }
        at += (size_t)width;
    }
}
