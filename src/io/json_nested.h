/*
 * io/json_nested.h - JSON for ROW, MAP and ARRAYs that hold them
 * (expr/nested.h), in and out of fmt_json.c's rows.
 *
 * A ROW is a JSON object by field name (case-insensitive on input; a
 * missing member is a NULL field, an unknown one an error); a MAP is a JSON
 * object whose member names are its keys in their text form (a key is read
 * from the member name as its type's text, so MAP<INT, ...> takes
 * {"1": ...}) and whose values are JSON values; an ARRAY is a JSON array.
 * Scalars inside are as in rows: numbers and booleans bare, the rest
 * (dates, times, NaN, strings) JSON strings; a string is also read as its
 * type's text form (a ROW field "(1,2)" as that ROW).
 */
#ifndef SL_IO_JSON_NESTED_H
#define SL_IO_JSON_NESTED_H

#include "../base/buf.h"
#include "../base/err.h"
#include "../expr/chunk.h"

/* The JSON value of type t (ROW, MAP or ARRAY) at p[0..n): its encoding
   (copied into a) to *out, the bytes read to *used. 0 or SL_EDATA. */
int json_nested_parse(SqlType t, const char *p, size_t n, size_t *used, Arena *a, Str *out,
                      Err *err);
/* Value v of type t (ROW, MAP or ARRAY) as JSON. */
void json_nested_put(SqlType t, Str v, Buf *out);

/* fmt_json.c's string helpers: escapes of raw[0..n) decoded into d (room
   for n bytes; NULL or the reason), and s[0..n) as a JSON string. */
const char *fmt_json__unescape(const char *raw, size_t n, char *d, size_t *dn);
void fmt_json__put_str(Buf *out, const char *s, size_t n);

#endif
