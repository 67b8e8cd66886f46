/*
 * fuzz/fuzz_csv.c - CSV records (io/fmt_csv.c): the record splitter the
 * file connector and HTTP ingress use (fmt_csv_record_len, quotes that
 * span lines), the record parser into a Chunk row (fmt_csv_parse, every
 * column type's text syntax) and, for each row it accepts, the formatter
 * (fmt_csv_row) that output connectors and --dump use.
 *
 * Input: byte 0 chooses the table (fz_format_table: all nullable, NOT NULL
 * columns, arrays and TIMESTAMPTZ); the
 * rest is the file's bytes. Seeds: fuzz/corpus/csv/.
 */
#include "fuzz.h"

#include "io/format.h"
#include "pipeline/pipeline.h"

static const char *const PROGRAM = FZ_FORMAT_PROGRAM(
    "CREATE TABLE m (i INT NOT NULL, s VARCHAR NOT NULL, d DECIMAL(5,2) NOT NULL,\n"
    "  ts TIMESTAMP NOT NULL);\n");

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static Circuit *c;
    int rel;
    RowSchema s;
    if (!fz_format_table(&c, PROGRAM, data, size, &rel, &s))
        return 0;
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
