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
    case TK_INTERVAL_DT:
    case TK_INTERVAL_YM:
    case TK_DOUBLE: return 8;
    default: return 0;
    }
}

/* Store the low `width` bytes of u big-endian at p. */
static inline void put_be(uint8_t *p, uint64_t u, int width)
{
    uint64_t be = __builtin_bswap64(u << (64 - 8 * width));
    memcpy(p, &be, (size_t)width);
}

/* Load `width` bytes big-endian from p into the low bytes of the result. */
static inline uint64_t get_be(const uint8_t *p, int width)
{
    uint64_t be = 0;
    memcpy(&be, p, (size_t)width);
    return __builtin_bswap64(be) >> (64 - 8 * width);
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

static inline uint64_t enc_double(double d)
{
    uint64_t bits;
    if (isnan(d))
        bits = 0x7ff8000000000000ull;
    else {
        if (d == 0)
            d = 0.0;
        memcpy(&bits, &d, 8);
    }
    return enc_float_bits(bits, 8);
}

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

static void encode_value(const Vec *v, int64_t r, Buf *out)
{
    TypeKind k = (TypeKind)v->t.kind;
    if (v->t.nullable) {
        buf_reserve(out, 1);
        if (v->nul[r]) {
            out->p[out->n++] = KEY_NULL;
            return;
        }
        out->p[out->n++] = KEY_PRESENT;
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
    case TK_INTERVAL_DT:
    case TK_INTERVAL_YM: {
        int width = fixed_width(k);
        buf_reserve(out, 8);
        put_be(out->p + out->n, enc_int(v->i[r], width), width);
        out->n += (size_t)width;
        break;
    }
    case TK_REAL:
        buf_reserve(out, 8);
        put_be(out->p + out->n, enc_real(v->f[r]), 4);
        out->n += 4;
        break;
    case TK_DOUBLE:
        buf_reserve(out, 8);
        put_be(out->p + out->n, enc_double(v->f[r]), 8);
        out->n += 8;
        break;
    case TK_CHAR:
    case TK_VARCHAR: {
        Str s = v->s[r];
        buf_reserve(out, (size_t)s.n + 1);
        memcpy(out->p + out->n, s.p, s.n);
        out->n += s.n;
        out->p[out->n++] = 0;
        break;
    }
    case TK_NULL:
        break;
    }
}

void key_encode(const Chunk *c, const int *cols, int ncols, int64_t r, Buf *out)
{
    for (int j = 0; j < ncols; j++)
        encode_value(&c->col[cols[j]], r, out);
}

void key_encode_row(const Chunk *c, int64_t r, Buf *out)
{
    for (int j = 0; j < c->ncol; j++)
        encode_value(&c->col[j], r, out);
}

const uint8_t *key_decode(const uint8_t *p, const SqlType *types, int ncols, Chunk *dst,
                          int col0, int64_t r)
{
    for (int j = 0; j < ncols; j++) {
        Vec *v = &dst->col[col0 + j];
        TypeKind k = (TypeKind)types[j].kind;
        if (types[j].nullable) {
            if (*p++ == KEY_NULL) {
                vec_set_null(v, r);
                continue;
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
        case TK_INTERVAL_DT:
        case TK_INTERVAL_YM: {
            int width = fixed_width(k);
            v->i[r] = dec_int(get_be(p, width), width);
            p += width;
            break;
        }
        case TK_REAL: {
            uint32_t bits = (uint32_t)dec_float_bits(get_be(p, 4), 4);
            float f;
            memcpy(&f, &bits, 4);
            v->f[r] = f;
            p += 4;
            break;
        }
        case TK_DOUBLE: {
            uint64_t bits = dec_float_bits(get_be(p, 8), 8);
            memcpy(&v->f[r], &bits, 8);
            p += 8;
            break;
        }
        case TK_CHAR:
        case TK_VARCHAR: {
            size_t n = strlen((const char *)p);
            v->s[r] = (Str){(const char *)p, (uint32_t)n};
            p += n + 1;
            break;
        }
        case TK_NULL:
            v->i[r] = 0;
            break;
        }
    }
    return p;
}

const uint8_t *key_skip(const uint8_t *p, const SqlType *types, int ncols)
{
    for (int j = 0; j < ncols; j++) {
        TypeKind k = (TypeKind)types[j].kind;
        if (types[j].nullable && *p++ == KEY_NULL)
            continue;
        if (type_is_string(k))
            p += strlen((const char *)p) + 1;
        else
            p += fixed_width(k);
    }
    return p;
}
