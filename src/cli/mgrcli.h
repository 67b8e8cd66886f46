/*
 * cli/mgrcli.h - `sluice serve` (the pipeline manager of src/manager/) and
 * its clients: `sluice create|start|pause|stop|delete|status|list URL ...`
 * against a manager's /v0/pipelines API (docs/manager.md).
 */
#ifndef SL_CLI_MGRCLI_H
#define SL_CLI_MGRCLI_H

#include <stdbool.h>

/* argv after the subcommand's name; exit status 0, 1 (error, or an error
   answer), 2 (bad command line). */
int cmd_serve(int argc, char **argv);
/* Whether verb is one of the manager's client subcommands. */
bool mgr_client_verb(const char *verb);
int cmd_mgr_client(const char *verb, int argc, char **argv);

#endif
