/*
 * expr/variant.h - VARIANT (JSON) values: their canonical byte encoding,
 * JSON text in and out, access by key and index, and conversion from and
 * to the scalar types.
 *
 * A VARIANT is a PHYS_STR value (types.h) holding one JSON value encoded as
 *   0x10                       JSON null (VARIANTNULL(); SQL NULL is the
 *                              row's NULL flag, not a value)
 *   0x20 / 0x21                false / true
 *   0x31                       the number 0
 *   0x32 E3 digits 0x01        a positive number 0.d1d2...dn * 10^E with
 *                              d1 != 0 and dn != 0 (leading and trailing
 *                              zeros cut), E3 = E + 2^20 in three bytes
 *                              0x80|7 bits, big-endian; each digit d as
 *                              0x10 + d
 *   0x30 E3' digits' 0x20      a negative number: E3' = 2^21 - 1 - (E +
 *                              2^20), each digit as 0x19 - d, so that the
 *                              bytes of larger magnitudes sort lower
 *   0x40 bytes 0x01            a string: its UTF-8 bytes with 0x01 written
 *                              0x02 0x02 and 0x02 written 0x02 0x03
 *   0x50 values 0x01           an array: its elements in order
 *   0x60 (0x03 key value)* 0x01  an object: its members sorted by key
 *                              (bytes, a prefix first), each key escaped as
 *                              a string's bytes and ended by 0x01; of a
 *                              duplicated key the last value is kept
 * Numbers are exact decimals (the JSON text's digits, |E| < 2^19): 1, 1.0
 * and 1e0 are one value, and a DOUBLE 0.1 is the number 0.1. Equal JSON
 * values therefore have equal bytes (hashing, GROUP BY, DISTINCT, joins and
 * consolidation work as on strings), no value holds a NUL byte, and
 * comparing encodings as strings (memcmp, then length) orders values:
 * null < false < true < numbers (by value) < strings (by bytes) < arrays
 * (element by element, a prefix first) < objects (member by member).
 */
#ifndef SL_EXPR_VARIANT_H
#define SL_EXPR_VARIANT_H

#include "../base/arena.h"
#include "../base/buf.h"
#include "../base/err.h"
#include "chunk.h"

#define VAR_NULL  0x10
#define VAR_FALSE 0x20
#define VAR_TRUE  0x21
#define VAR_NEG   0x30
#define VAR_ZERO  0x31
#define VAR_POS   0x32
#define VAR_STR   0x40
#define VAR_ARR   0x50
#define VAR_OBJ   0x60
#define VAR_END   0x01
#define VAR_PAIR  0x03
/* Nesting of arrays and objects a JSON text may have. */
#define VAR_MAX_DEPTH 128

typedef enum VarKind {
    VK_NULL, VK_BOOL, VK_NUMBER, VK_STRING, VK_ARRAY, VK_OBJECT, VK_BAD
} VarKind;

/* Parse JSON text s[0..n) (one value, white space around it allowed) and
   append its encoding to out; NULL on success, else what is wrong (out
   then holds a partial encoding the caller drops). */
const char *var_parse_json(const char *s, size_t n, Buf *out);
/* The JSON value at the start of s[0..n): as var_parse_json, *used set to
   the bytes it took (text may follow it). */
const char *var_parse_json_prefix(const char *s, size_t n, size_t *used, Buf *out);
/* The same into an encoding copied into a: 0, or SL_EDATA on err with
   `invalid JSON ...`. For text_parse (CSV fields, literals). */
int var_parse_text(const char *s, size_t n, Arena *a, Str *out, Err *err);
/* Append v as compact JSON text ({"a":1,"b":[true,null]}), keys sorted. */
void var_to_json(Str v, Buf *out);

VarKind var_kind(Str v);
/* jsonb_typeof's name of v's kind: "null", "boolean", "number", "string",
   "array" or "object". */
const char *var_kind_name(VarKind k);
/* Member key[0..kn) of object v into *out (a slice of v); false when v is
   no object or has no such member. */
bool var_get_key(Str v, const char *key, size_t kn, Str *out);
/* Element i (0-based; negative counts from the end) of array v; false
   when v is no array or i is out of range. */
bool var_get_index(Str v, int64_t i, Str *out);
/* String v's text unescaped into a (false when v is no string). */
bool var_get_string(Str v, Arena *a, Str *out);

/* Append the encoding of a number written as decimal text s[0..n)
   (optional sign, digits, fraction, exponent); false when it is none. */
bool var_put_number(Buf *out, const char *s, size_t n);
/* Append a string value of bytes s[0..n). */
void var_put_string(Buf *out, const char *s, size_t n);
/* Append the VARIANT of row r (not NULL) of v: BOOLEAN as true/false,
   numbers as numbers (NaN and infinities as their text), strings as
   strings, ARRAYs as arrays, VARIANTs as they are, other types as their
   canonical text (text.h). */
void var_from_vec(const Vec *v, int64_t r, Buf *out);
/* Row r of out (of type out->t, not VARIANT) := v converted: a number to a
   numeric type (integers truncated toward zero; NULL out of range), a
   boolean to BOOLEAN, a string to a string type or read as the text of a
   date, time, timestamp or interval type, an array to an ARRAY (elements
   converted the same way, NULL where one does not convert). Returns false
   (the caller makes the row NULL) when v holds no convertible value. */
bool var_to_vec(Str v, Vec *out, int64_t r, Arena *a);

/* Building and changing documents; each writes a canonical encoding. */
/* Append to body the member key[0..kn) (raw bytes) : val (an encoding):
   0x03, the escaped key, 0x01, the value. */
void var_put_member(Buf *body, const char *key, size_t kn, Str val);
/* Append the object of the members body[0..n) (a run of var_put_member's
   or of members cut from encoded objects, in any order): sorted by key,
   of a duplicated key the last one kept (jsonb's rule). */
void var_put_object(Buf *out, const uint8_t *body, size_t n);
/* a || b by jsonb's rules: two objects merged (b's member wins on a shared
   key), else the elements of a (a itself when no array) then those of b,
   as an array. */
void var_concat(Str a, Str b, Buf *out);
/* The number of elements of array v; -1 when v is no array. */
int64_t var_array_length(Str v);
/* a @> b by jsonb's rules: scalars equal; an object's members each in the
   other's member of that key; an array's elements each in some element of
   the other (order and repeats ignored); at the top an array contains a
   scalar element of it. */
bool var_contains(Str a, Str b);
/* v ? key: key is a member of object v, a string element of array v, or
   the string v itself. */
bool var_exists(Str v, const char *key, size_t kn);
/* A path step as an array index (optional '-', digits); false when none. */
bool var_step_index(Str step, int64_t *i);
/* jsonb_set(v, path[0..n), nv, create) into out: v with the value at the
   path replaced by nv, or added there when its last step is missing and
   create (an array index before the first element prepends, after the
   last appends); a missing inner step leaves v as it is. False (NULL)
   when v is a scalar or an array step is no integer. */
bool var_set_path(Str v, const Str *path, int n, Str nv, bool create, Buf *out);

#endif
