/*
 * fuzz/fuzz_csv.c - CSV records (io/fmt_csv.c): the record splitter the
 * file connector and HTTP ingress use (fmt_csv_record_len, quotes that
 * span lines), the record parser into a Chunk row (fmt_csv_parse, every
 * column type's text syntax) and, for each row it accepts, the formatter
 * (fmt_csv_row) that output connectors and --dump use.
 *
 * Input: byte 0 chooses the table (all nullable / NOT NULL columns); the
 * rest is the file's bytes. Seeds: fuzz/corpus/csv/.
 */
#include "fuzz.h"

#include "io/format.h"
#include "pipeline/pipeline.h"

static const char *const PROGRAM =
    "CREATE TABLE n (b BOOLEAN, ti TINYINT, si SMALLINT, i INT, bi BIGINT, d DECIMAL(12,3),\n"
    "  r REAL, f DOUBLE, c CHAR(3), v VARCHAR(8), s VARCHAR, dt DATE, tm TIME,\n"
    "  ts TIMESTAMP);\n"
    "CREATE TABLE m (i INT NOT NULL, s VARCHAR NOT NULL, d DECIMAL(5,2) NOT NULL,\n"
    "  ts TIMESTAMP NOT NULL);\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static Circuit *c;
    if (!c)
        c = fz_compile(PROGRAM);
    if (size < 1)
        return 0;
    int rel = data[0] & 1;
    const Relation *r = &c->rels[rel];
    RowSchema s = {r->ncol, (const char *const *)r->colnames, r->types};
    InBatch *b = inbatch_new(c, rel);
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    Buf out = BUF_INIT;
    while (p < end) {
        size_t len = fmt_csv_record_len(p, (size_t)(end - p), true);
        if (!len || len > (size_t)(end - p))
            abort(); /* at_eof: whatever is left is a record */
        Chunk *ch = inbatch_room(b);
        int64_t before = ch->n;
        Err e;
        err_init(&e);
        if (!fmt_csv_parse(&s, p, len, ch, inbatch_arena(b), &e)) {
            if (ch->n != before + 1)
                abort();
            buf_reset(&out);
            fmt_csv_row(ch, ch->n - 1, &out);
        } else if (ch->n != before || !e.msg[0]) {
            abort(); /* an error leaves the chunk unchanged and says why */
        }
        p += len;
    }
    buf_free(&out);
    inbatch_free(b);
    return 0;
}
