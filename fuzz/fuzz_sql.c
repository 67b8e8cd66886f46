/*
 * fuzz/fuzz_sql.c - the SQL front end: lexer, parser, binder and planner,
 * through the compiler entry `sluice check` and `sluice run` use
 * (circuit_compile, then circuit_explain), and the one-shot entry /query
 * uses (circuit_compile_with over a declared table, CC_PRESENT).
 *
 * Input: byte 0 chooses the entry (even: a program, odd: a query over
 * tables t(a INT, b VARCHAR, c DECIMAL(10,2), d TIMESTAMP) and u(k BIGINT,
 * v DOUBLE)); the rest is the SQL text. Connectors named in a program are
 * not opened (they would touch files). Seeds: fuzz/corpus/sql/.
 */
#include "fuzz.h"

#include "base/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *sql = sl_malloc(size);
    memcpy(sql, data + 1, size - 1);
    sql[size - 1] = 0;
    Circuit *c = NULL;
    Err e;
    err_init(&e);
    int rc;
    if (data[0] & 1) {
        static const char *const tcols[] = {"a", "b", "c", "d"};
        static const char *const ucols[] = {"k", "v"};
        SqlType tt[4] = {type_make(TK_INT, 1), type_make(TK_VARCHAR, 1), type_make(TK_DECIMAL, 1),
                         type_make(TK_TIMESTAMP, 1)};
        tt[2].prec = 10;
        tt[2].scale = 2;
        SqlType ut[2] = {type_make(TK_BIGINT, 0), type_make(TK_DOUBLE, 1)};
        TableDecl d[2] = {{.name = "t", .ncol = 4, .colnames = tcols, .types = tt},
                          {.name = "u", .ncol = 2, .colnames = ucols, .types = ut}};
        rc = circuit_compile_with(sql, d, 2, CC_PRESENT, &c, &e);
    } else {
        rc = circuit_compile(sql, &c, &e);
    }
    if (!rc) {
        Buf b = BUF_INIT;
        circuit_explain(c, &b);
        buf_free(&b);
        circuit_free(c);
    }
    sl_free(sql);
    return 0;
}
