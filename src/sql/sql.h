/*
 * sql/sql.h - the SQL compiler's entry: program text in, a Circuit
 * (circuit/circuit.h) out. Everything a caller outside src/sql/ may use:
 * the CLI (`sluice run`/`check`), one-shot queries (pipeline/oneshot.c),
 * the HTTP server, the sqllogictest runner, tests, fuzzers and benches.
 *
 * Inside, text flows lexer.c -> parse*.c (AST, ast.h) -> compile.c (one
 * statement at a time) -> plan*.c with bind*.c (circuit nodes);
 * sql_int.h says which file holds what.
 */
#ifndef SL_SQL_SQL_H
#define SL_SQL_SQL_H

#include "../base/err.h"
#include "../circuit/circuit.h"

/* Compile SQL program text. Returns 0 or an SL_E* code with err holding
   line, column and message. The circuit is freed with circuit_free. */
int circuit_compile(const char *sql, Circuit **out, Err *err);

/* A table declared ahead of the program text (one-shot queries). */
typedef struct TableDecl {
    const char *name;
    int ncol;
    const char *const *colnames;
    const SqlType *types;
    bool append_only; /* 'append_only' = 'true' (a temporal join may read it) */
    bool has_time;    /* time_col is the program's LATENESS column: a */
    int time_col;     /* temporal join's time column (no watermark here) */
} TableDecl;
/* Flags of circuit_compile_with. */
#define CC_PRESENT 1 /* views keep ORDER BY keys (hidden trailing columns) and
                        LIMIT/OFFSET for a reader that presents them in order */
#define CC_NO_NARROW 2 /* the circuit of builds before join narrowing (plan_prune.c):
                          a join's unread input columns become constants instead
                          of being dropped; a storage written in that layout
                          restarts with it */
/* Compile sql after declaring tables decl[0..ndecl) (no connectors; none:
   decl NULL, ndecl 0). */
int circuit_compile_with(const char *sql, const TableDecl *decl, int ndecl, int flags,
                         Circuit **out, Err *err);
/* Free a compiled circuit (its arena and its relations' connectors); NULL
   is a no-op. */
void circuit_free(Circuit *c);
/* Index of the relation called name (case-insensitive), or -1. */
int circuit_find_rel(const Circuit *c, const char *name);

#endif
