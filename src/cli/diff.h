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
#include "../pipeline/pipeline.h"

/* A whole file as a NUL-terminated string (sl_free), or NULL with err set. */
char *cli_read_file(const char *path, Err *err);
/* An error as WHERE:LINE:COLUMN: kind: message (or sluice: kind: message
   when it has no position) on stderr. */
void cli_print_err(const char *where, const Err *e);
/* Compile program text as `sluice run` does (with the rejected-records
   table added when the program does not declare it); errors are printed
   as WHERE:LINE:COLUMN: ... NULL on error. */
Circuit *cli_compile_run(const char *text, const char *where);
/* As cli_compile_run, with circuit_compile_with's flags (CC_NO_NARROW). */
Circuit *cli_compile_run_flags(const char *text, const char *where, int flags);
/* The flags (circuit_compile_with's) to compile a program with that is
   to run over storage (NULL: none): flags, with CC_NO_NARROW toggled when
   the storage's newest checkpoint holds the other join layout (its stored
   program compiled that way has the shape the checkpoint records; one
   that records no shape is of a build before join narrowing), so its
   state is read, and a bootstrap compares programs, in the layout it was
   written in (said on stderr unless quiet). A checkpoint of a shape
   neither gives is refused when it is restored. */
int cli_storage_flags(const char *storage, int flags, bool quiet);
/* The subcommands (argv after the subcommand's name); exit status 0 (even
   when the programs differ), 1 error, 2 bad command line. */
int cmd_diff(int argc, char **argv);

/* `sluice run PROGRAM --storage DIR --bootstrap POLICY` (docs/bootstrapping.md). */
enum { BOOT_UNSET, BOOT_ALLOW, BOOT_REJECT, BOOT_AWAIT };
/* POLICY as given (allow, reject, await_approval), or -1. */
int cli_boot_policy(const char *v);
typedef struct CliBoot {
    Circuit *old;      /* the stored program, compiled */
    char *old_text;
    uint64_t old_fp;
    struct BootPlan *plan;
} CliBoot;
/* Before `run` starts c (text, from path, compiled with flags:
   cli_storage_flags) over o->storage: when the
   storage's newest checkpoint is of another program, print the diff and,
   as policy says (http: the default is await_approval, else refusing),
   refuse (1), or set o->boot (o->boot_await: wait for POST /approve). 0
   to go on. */
int cli_bootstrap(PipelineOpts *o, const Circuit *c, int flags, const char *text,
                  const char *path, int policy, bool http, CliBoot *cb);
/* pipeline_new refused because the old program's logs hold steps or
   input after its checkpoint (cb->plan->unsettled): the old program
   replays them and writes a checkpoint with nothing after it. 0, or 1
   (message printed). */
int cli_bootstrap_settle(const PipelineOpts *o, CliBoot *cb, const char *path);
void cli_bootstrap_free(CliBoot *cb);
int cmd_check_diff(int argc, char **argv);

#endif
