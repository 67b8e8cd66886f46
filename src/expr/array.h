/*
 * expr/array.h - ARRAY values: their byte encoding, element access and
 * PostgreSQL's text form.
 *
 * An ARRAY is a PHYS_STR value (types.h) whose bytes are its elements one
 * after the other, each
 *   ARR_NULL (0x11)            a NULL element, or
 *   ARR_VAL (0x10) then value  PHYS_I64: the 64 bits with the sign bit
 *                              flipped, big-endian, 7 bits a byte in 10
 *                              bytes 0x80|bits; PHYS_I128: the same in 19
 *                              bytes; PHYS_F64: key.h's order-preserving
 *                              bits of the double (-0 as 0, one NaN above
 *                              +Inf) in 10 bytes; PHYS_STR: the bytes with
 *                              0x01 written 0x02 0x02 and 0x02 written
 *                              0x02 0x03, then 0x01.
 * So no value holds a NUL byte (it is a valid string for key.h, hashing,
 * CSV) and comparing two encodings as strings (memcmp, then length) is
 * PostgreSQL's array order: element by element (a NULL element after every
 * value), then the shorter array first. Equal arrays have equal bytes, so
 * hashing, DISTINCT, GROUP BY and joins on arrays work as on strings. The
 * element type lives in the SqlType (types.h type_elem); the empty array is
 * the empty string. One dimension only.
 */
#ifndef SL_EXPR_ARRAY_H
#define SL_EXPR_ARRAY_H

#include "../base/buf.h"
#include "../base/err.h"
#include "chunk.h"

#define ARR_VAL  0x10
#define ARR_NULL 0x11

/* One element: null, or i / f / x / s per the element's physical class. */
typedef struct ArrElem {
    bool null;
    int64_t i;
    double f;
    i128 x;
    Str s; /* points into the array, or into the iterator's scratch */
} ArrElem;

typedef struct ArrIt {
    const uint8_t *p, *end;
    Phys ph;   /* of the element */
    Buf tmp;   /* unescaped strings; arr_it_done frees it */
} ArrIt;

void arr_it(ArrIt *it, SqlType t, Str v);
/* The next element into *e; false at the end (or on bytes that are no
   array: never for values this module built). e->s stays valid until the
   next call. */
bool arr_next(ArrIt *it, ArrElem *e);
void arr_it_done(ArrIt *it);
/* ARRAYs a and b hold the same bytes for the same values (an ARRAY of a
   converts to one of b by copying). */
static inline bool arr_same_elem(SqlType a, SqlType b)
{
    if (a.elem != b.elem || a.prec != b.prec || a.scale != b.scale)
        return false;
    return a.len == b.len || a.elem == TK_TIMESTAMPTZ ||
           (a.elem == TK_VARCHAR && b.len == VARCHAR_UNBOUNDED);
}

/* Number of elements. */
int64_t arr_len(SqlType t, Str v);

/* Append element e of physical class ph (NULL when e->null). */
void arr_put(Buf *b, Phys ph, const ArrElem *e);
/* Append row r of v (NULL or its value) as an element. */
void arr_put_vec(Buf *b, const Vec *v, int64_t r);
/* Row r of v (the element type) := e; a string is copied into a. */
void arr_get_vec(Vec *v, int64_t r, const ArrElem *e, Arena *a);

/* PostgreSQL's text form: {1,2,NULL}, {"a b","x\"y",""}; BOOLEAN as t/f. */
void arr_format_text(SqlType t, Str v, Buf *out);
/* Parses that form (elements as text_parse reads them; NULL unquoted, any
   case, is a NULL element) into an encoding copied into a; returns 0 or
   SL_EDATA with `malformed array literal: "..."` or the element's error. */
int arr_parse_text(SqlType t, const char *s, size_t n, Arena *a, Str *out, Err *err);

#endif
