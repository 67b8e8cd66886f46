/*
 * fuzz/fuzz_json.c - JSON records (io/fmt_json.c): the DOM-less record
 * parser behind the file connector (fmt_json_parse) and HTTP ingress
 * (fmt_json_parse_rec with its options: insert/delete/update wrappers,
 * raw rows, partial deletes), Debezium change events (kafka_input,
 * fmt_json_parse_debezium), and for each accepted row the formatter
 * (fmt_json_row) that output connectors and egress use.
 *
 * Input: byte 0 chooses the table (bits 0 and 7, fz_format_table) and the
 * options (bits 1-5); the rest is JSON lines,
 * each parsed as one record. Seeds: fuzz/corpus/json/.
 */
#include "fuzz.h"

#include "io/format.h"
#include "pipeline/pipeline.h"

static const char *const PROGRAM = FZ_FORMAT_PROGRAM(
    "CREATE TABLE m (i INT NOT NULL PRIMARY KEY, s VARCHAR NOT NULL, d DECIMAL(5,2),\n"
    "  ts TIMESTAMP NOT NULL);\n");

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static Circuit *c;
    int rel;
    RowSchema s;
    if (!fz_format_table(&c, PROGRAM, data, size, &rel, &s))
        return 0;
    bool plain = data[0] & 2;
    JsonRecOpts o = {.raw = data[0] & 4, .update = data[0] & 8, .partial_delete = data[0] & 16};
    InBatch *b = inbatch_new(c, rel);
    uint8_t *present = calloc((size_t)s.ncol + 1, 1);
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    Buf out = BUF_INIT;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        Err e;
        err_init(&e);
        if (data[0] & 32) { /* debezium: 0 to 2 rows per record */
            Chunk *dc = chunk_new(inbatch_arena(b), s.ncol, s.types, 2);
            int rows = -1;
            int rc = fmt_json_parse_debezium(&s, p, len, dc, inbatch_arena(b), &rows, &e);
            if (rc ? dc->n != 0 || !e.msg[0] : dc->n != rows || rows < 1 || rows > 2)
                abort();
            for (int64_t r = 0; r < dc->n; r++) {
                buf_reset(&out);
                fmt_json_row(&s, dc, r, &out);
            }
            p += len + (nl ? 1 : 0);
            continue;
        }
        Chunk *ch = inbatch_room(b);
        int64_t before = ch->n;
        int kind = -1;
        int rc = plain ? fmt_json_parse(&s, p, len, ch, inbatch_arena(b), &e)
                       : fmt_json_parse_rec(&s, p, len, &o, ch, inbatch_arena(b), present, &kind,
                                            &e);
        if (!rc) {
            if (ch->n != before + 1)
                abort();
            buf_reset(&out);
            fmt_json_row(&s, ch, ch->n - 1, &out);
        } else if (ch->n != before || !e.msg[0]) {
            abort(); /* an error leaves the chunk unchanged and says why */
        }
        p += len + (nl ? 1 : 0);
    }
    buf_free(&out);
    free(present);
    inbatch_free(b);
    return 0;
}
