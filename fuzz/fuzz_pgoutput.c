/*
 * fuzz/fuzz_pgoutput.c - the postgres_cdc_input decoders (io/tr_pg_cdc.c):
 * pgoutput messages (Begin, Relation, Insert, Update, Delete, Commit,
 * Truncate) from the replication stream, COPY text lines of the initial
 * snapshot, the records they queue, and their parsing into rows through
 * text (input_next's half that needs no server).
 *
 * tr_pg_cdc.c is compiled into this file, so its static decoders run
 * unchanged on a connector that has no connection (its reconnect is put
 * off forever). A Relation message naming the table and its columns comes
 * first, so that changes reach the row decoder.
 *
 * Input: records framed as in fuzz.h (u16 length + bytes). A record whose
 * first byte is 'L' is a COPY line (the rest), any other a pgoutput
 * message; after each record the queue is parsed into rows (max 3 per
 * call). Seeds: fuzz/corpus/pgoutput/.
 */
#include "../src/io/tr_pg_cdc.c"

#include "fuzz.h"

static Circuit *prog;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    prog = fz_compile("CREATE TABLE src (id BIGINT NOT NULL, grp INT NOT NULL, v BIGINT, "
                      "s VARCHAR, d DATE);");
    return 0;
}

/* Relation 16384 "public"."src" with columns id, grp, v, s, d, x. */
static void relation(InputConn *ic, PgCdc *pc)
{
    Buf b = BUF_INIT;
    const char *cols[] = {"id", "grp", "v", "s", "d", "x"};
    buf_putc(&b, 'R');
    buf_append(&b, "\0\0\x40\x00", 4);
    buf_append(&b, "public", 7);
    buf_append(&b, "src", 4);
    buf_putc(&b, 'f');
    buf_append(&b, "\0\x06", 2);
    for (int k = 0; k < 6; k++) {
        buf_putc(&b, 0);
        buf_append(&b, cols[k], strlen(cols[k]) + 1);
        buf_append(&b, "\0\0\0\x19\xff\xff\xff\xff", 8);
    }
    Err e = {0};
    decode(ic, pc, b.p, b.n, &e);
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const Relation *r = &prog->rels[0];
    InputConn ic = {0};
    ic.ops = &tr_pg_cdc_in_ops;
    ic.transport = "postgres_cdc_input";
    snprintf(ic.name, sizeof(ic.name), "fuzz");
    ic.schema = (RowSchema){r->ncol, (const char *const *)r->colnames, r->types};
    cJSON *cfg = cJSON_Parse("{\"uri\": \"postgresql://nowhere/x\", \"table\": \"src\"}");
    Err e = {0};
    if (tr_pg_cdc_config(&ic, cfg, "fuzz", &e))
        abort();
    cJSON_Delete(cfg);
    PgCdc *pc = ic.cdc;
    pc->started = true;
    pc->next_try = 1e300; /* never reconnect */
    relation(&ic, pc);
    Arena *a = arena_new(1 << 16);
    const uint8_t *p = data, *end = data + size, *rec;
    size_t n;
    while (fz_next(&p, end, &rec, &n)) {
        if (n && rec[0] == 'L')
            copy_line_to_rec(pc, ic.schema.ncol, (const char *)rec + 1, n - 1);
        else
            decode(&ic, pc, rec, n, &e);
        err_init(&e);
        Piece *lists[2] = {NULL, NULL};
        if (cdc_next(&ic, 3, a, 2, lists, &e) < 0)
            err_init(&e);
        arena_reset(a);
    }
    arena_free(a);
    cdc_free(pc);
    return 0;
}
