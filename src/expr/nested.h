/*
 * expr/nested.h - ROW (struct) and MAP types: the table of their shapes,
 * their byte encoding and their text form.
 *
 * Types. A ROW or MAP SqlType (types.h) keeps the id of its shape in len:
 * a NestType here holds a ROW's field names and types (and the name of
 * the CREATE TYPE that declared it, if any), or a MAP's key and value
 * types. Shapes are interned (the same shape gets the same id), so two
 * SqlTypes still compare by memcmp. The table is per process and only
 * grows; ids never reach disk (fingerprints and files use the shape,
 * nest_describe). An ARRAY of ROWs keeps the ROW's id in its len as for
 * any element type; an ARRAY of ARRAYs (elem TK_ARRAY) keeps the id of a
 * one-"field" TK_ARRAY shape holding the inner ARRAY type (types.h
 * type_array / type_elem build and read it).
 *
 * Values are PHYS_STR bytes in expr/array.h's element encoding, so that
 * they hold no NUL byte and equal values are equal bytes (hashing,
 * DISTINCT, GROUP BY, joins work as on strings):
 *   ROW: its fields one after the other, each an array.h element of the
 *        field's physical class (a nested ROW, MAP or ARRAY is a string
 *        element). memcmp order is field by field, NULL after any value:
 *        PostgreSQL's order of composite values.
 *   MAP: key, value, key, value, ... with the entries sorted by the bytes
 *        of their keys and each key once (a later duplicate wins when a
 *        map is built), so equal maps are equal bytes. Keys are never
 *        NULL; the empty map is the empty string.
 *
 * Text forms (CSV, pg-wire, casts to and from VARCHAR, sqllogictest):
 *   ROW: PostgreSQL's composite form (1,"a b",) - a NULL field is empty, a
 *        field with ( ) , " \ or spaces (or empty) is quoted, " and \ in
 *        it doubled; BOOLEANs as t/f.
 *   MAP: {k1=>v1,k2=>v2} in key order; keys and values quoted as array
 *        elements are (also when holding = or >), NULL values as NULL.
 */
#ifndef SL_EXPR_NESTED_H
#define SL_EXPR_NESTED_H

#include "../base/buf.h"
#include "../base/err.h"
#include "chunk.h"

#define NEST_MAX_FIELDS 256

typedef struct NestType {
    uint8_t kind;   /* TK_ROW, TK_MAP, or TK_ARRAY (t[0]: an inner ARRAY) */
    int n;          /* ROW: fields; MAP: 2 (t[0] the key, t[1] the value) */
    char **names;   /* ROW: field names as declared */
    SqlType *t;     /* field / key / value types, all nullable */
    char *name;     /* the CREATE TYPE name, or NULL */
} NestType;

/* The id (>= 1) of shape (kind, name, n, names, t), interned; -1 when the
   table is full. names may be NULL for a MAP. Thread-safe. */
int nest_intern(TypeKind kind, const char *name, int n, const char *const *names,
                const SqlType *t);
/* The shape of ROW or MAP type t (NULL for other types). */
const NestType *nest_get(SqlType t);
static inline SqlType type_nested(TypeKind kind, int id, bool nullable)
{
    SqlType r = {(uint8_t)kind, (uint8_t)nullable, 0, 0, id, 0, {0, 0, 0}};
    return r;
}
/* Field index of name in ROW shape s (case-insensitively), -1 if none. */
int nest_field(const NestType *s, const char *name);
/* Whether t holds a ROW or MAP anywhere (itself, or as array elements). */
static inline bool type_has_nested(SqlType t)
{
    return t.kind == TK_ROW || t.kind == TK_MAP ||
           (t.kind == TK_ARRAY && (t.elem == TK_ROW || t.elem == TK_MAP || t.elem == TK_ARRAY));
}

/* "MAP<INT, VARCHAR>", "ROW(a INT, b VARCHAR)" or the CREATE TYPE name. */
const char *nest_type_name(SqlType t, char *buf, size_t size);
/* The whole shape of t spelled out (names, field types, recursively) for
   fingerprints: never an id. */
void nest_describe(SqlType t, Buf *out);

/* Bytes of one encoded element of class ph at p (< end): its end, or end
   when malformed. */
const uint8_t *nest_elem_end(const uint8_t *p, const uint8_t *end, Phys ph);
/* The text of non-NULL element e of type et (BOOLEAN as t/f) into out. */
struct ArrElem;
void nest_elem_text(SqlType et, const struct ArrElem *e, Buf *out);
/* Element text s[0..n) of type et read into e (e->s copied into a). */
int nest_elem_parse(SqlType et, const char *s, size_t n, Arena *a, struct ArrElem *e, Err *err);

/* MAP from n entries of already encoded keys and values: entries[2k] the
   key's element bytes, entries[2k+1] the value's; sorted, deduplicated
   (the later entry wins) and appended to out. */
void nest_map_build(Str *entries, int n, Buf *out);

/* Text forms (above). Parsing returns 0 or SL_EDATA with a message that
   quotes the text; the value is copied into a. */
void nest_format_text(SqlType t, Str v, Buf *out);
int nest_parse_text(SqlType t, const char *s, size_t n, Arena *a, Str *out, Err *err);

#endif
