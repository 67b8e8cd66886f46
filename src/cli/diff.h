/*
 * cli/diff.h - `sluice diff --storage DIR NEW.sql` and `sluice check OLD.sql
 * NEW.sql`: the program diff of sql/progdiff.h between the program a
 * storage's newest checkpoint holds (or a file) and a new file; and the
 * helpers every subcommand shares: reading a file, printing an error,
 * compiling a program the way `run` does.
 */
#ifndef SL_CLI_DIFF_H
#define SL_CLI_DIFF_H

#include "../base/err.h"
#include "../circuit/circuit.h"

/* A whole file as a NUL-terminated string (sl_free), or NULL with err set. */
char *cli_read_file(const char *path, Err *err);
/* An error as WHERE:LINE:COLUMN: kind: message (or sluice: kind: message
   when it has no position) on stderr. */
void cli_print_err(const char *where, const Err *e);
/* Compile program text as `sluice run` does (with the rejected-records
   table added when the program does not declare it); errors are printed
   as WHERE:LINE:COLUMN: ... NULL on error. */
Circuit *cli_compile_run(const char *text, const char *where);
/* The subcommands (argv after the subcommand's name); exit status 0 (even
   when the programs differ), 1 error, 2 bad command line. */
int cmd_diff(int argc, char **argv);
int cmd_check_diff(int argc, char **argv);

#endif
