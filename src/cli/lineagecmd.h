/*
 * cli/lineagecmd.h - `sluice lineage PROGRAM.sql [--format
 * json|dot|openlineage] [--impact TABLE.COLUMN]`: the field-level lineage
 * of sql/lineage.h (docs/lineage.md).
 */
#ifndef SL_CLI_LINEAGECMD_H
#define SL_CLI_LINEAGECMD_H

/* argv after "lineage"; exit status 0, 1 (unreadable or invalid program,
   unknown --impact column) or 2 (bad command line). */
int cmd_lineage(int argc, char **argv);

#endif
