/*
 * cli/launch.h - `sluice run ... --hosts H` outside an MPI launch: start
 * the MPI job (mpirun) that runs this same command as H processes.
 */
#ifndef SL_CLI_LAUNCH_H
#define SL_CLI_LAUNCH_H

typedef struct LaunchOpts {
    int hosts;
    const char *hostfile;  /* --hostfile, or NULL: every process on this machine */
    const char **mca;      /* --mca KEY VALUE pairs, passed on */
    int nmca;
} LaunchOpts;

/* Run `mpirun ... THIS-BINARY run ARGS` (argc/argv: the arguments after
   "run") and wait for it; returns the exit status to use. SIGINT/SIGTERM
   become a clean stop of the pipeline (SIGUSR1 to every rank). */
int launch_mpi(const LaunchOpts *o, int argc, char **argv);

#endif
