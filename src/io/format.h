/*
 * io/format.h - CSV and JSON rows <-> Chunk rows.
 *
 * Parsers append one row per record to a Chunk (strings copied into an
 * arena) or fail with SL_EDATA and a reason naming the column; callers count
 * and report the bad record and go on. Formatters append text for output
 * connectors and --dump.
 *
 * CSV: RFC 4180 - fields separated by ',', optionally quoted with '"'
 *   ('""' inside quotes is a quote; quoted fields may span lines). An empty
 *   unquoted field is NULL; "" is the empty string. Values in text.h's
 *   syntax; booleans also accept t/f/1/0 (any case).
 * JSON: one object per record (JSON lines): {"insert": {...}} (+1),
 *   {"delete": {...}} (-1), or a plain row object (+1). Row objects map
 *   column names (case-insensitive) to values; a missing or null member is
 *   NULL; numbers are parsed from their text exactly (BIGINT and DECIMAL do
 *   not pass through double); strings for any type are parsed with text.h.
 *   Unknown members are an error. Parsed without building a DOM.
 * A NULL for a NOT NULL column is an error.
 */
#ifndef SL_IO_FORMAT_H
#define SL_IO_FORMAT_H

#include "../base/buf.h"
#include "../base/err.h"
#include "../expr/chunk.h"

typedef struct RowSchema {
    int ncol;
    const char *const *names;
    const SqlType *types;
} RowSchema;

/*
 * Length of the first complete CSV record in p[0..n), including its line
 * end ("\n" or "\r\n"), honouring quotes; 0 when p holds no complete record
 * yet (at_eof: a final record without a line end is complete).
 */
size_t fmt_csv_record_len(const char *p, size_t n, bool at_eof);
/* Parse one CSV record (line end optional) into a new row of out (weight
   +1). On error the chunk is unchanged and err says why. */
int fmt_csv_parse(const RowSchema *s, const char *p, size_t n, Chunk *out, Arena *a, Err *err);

/* Parse one JSON record into a new row of out with weight +1 or -1. */
int fmt_json_parse(const RowSchema *s, const char *p, size_t n, Chunk *out, Arena *a, Err *err);

/* A Debezium change event (the envelope {"op", "before", "after"}, bare
   or inside {"schema", "payload"}): op c and r insert "after", d deletes
   "before", u does both. Appends *rows (0..2) rows; out needs room for 2.
   Other members (source, ts_ms, transaction) are skipped. */
int fmt_json_parse_debezium(const RowSchema *s, const char *p, size_t n, Chunk *out, Arena *a,
                            int *rows, Err *err);

/* Record kinds and options of fmt_json_parse_rec (HTTP ingress). */
enum { JSON_REC_INSERT, JSON_REC_DELETE, JSON_REC_UPDATE };
typedef struct JsonRecOpts {
    bool raw;            /* plain row objects only (update_format=raw) */
    bool update;         /* accept {"update": {...}} (PRIMARY KEY tables) */
    bool partial_delete; /* {"delete": {...}} may omit columns (delete by key) */
} JsonRecOpts;
/* fmt_json_parse with options. *kind (may be NULL) gets the record's kind;
   present (s->ncol bytes, may be NULL) gets 1 for every member given. In a
   partial record (update, partial delete) missing members are no error:
   they are NULL, or zero in NOT NULL columns. */
int fmt_json_parse_rec(const RowSchema *s, const char *p, size_t n, const JsonRecOpts *o,
                       Chunk *out, Arena *a, uint8_t *present, int *kind, Err *err);

/* Row r of c as CSV fields (no line end): NULL as an empty unquoted field,
   empty string as "", fields quoted when they hold , " CR LF or are empty. */
void fmt_csv_row(const Chunk *c, int64_t r, Buf *out);
/* CSV header line for the schema (no line end). */
void fmt_csv_header(const RowSchema *s, Buf *out);
/* Row r of c as a JSON object {"name": value, ...} (numbers unquoted,
   booleans true/false, NULL null, temporal types and strings quoted). */
void fmt_json_row(const RowSchema *s, const Chunk *c, int64_t r, Buf *out);

#endif
