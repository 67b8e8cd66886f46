/*
 * cli/launch.c - the MPI launcher of `sluice run --hosts H`.
 *
 * Builds `mpirun --allow-run-as-root -np H [--hostfile F --map-by node]
 * --mca mpi_yield_when_idle 1 [--mca K V]... /path/to/sluice run ARGS`
 * and runs it in its own process group, so that a terminal's Ctrl-C
 * reaches only this process, which passes it on as SIGUSR1 (mpirun
 * forwards SIGUSR1 to every rank; rank 0 then stops the pipeline
 * cleanly, which stops the others). When the job fails, mpirun has said
 * which host's process ended; we add what to do next. A rank whose step
 * watchdog expires on this machine writes its message to a notes file
 * we name in SLUICE_LAUNCHER_NOTES and signals us (SIGUSR2); we end the
 * job and print the message when mpirun has gone.
 */
#include "launch.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../base/mem.h"

static volatile sig_atomic_t got_signal, got_watchdog;

static void on_signal(int sig)
{
    if (sig == SIGUSR2)
        got_watchdog = 1; /* a rank's step watchdog expired (cluster/net.c) */
    else
        got_signal = 1;
}

/* Copy what the ranks' watchdogs wrote to the notes file to stderr. */
static void print_notes(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[2048];
    while (fgets(line, sizeof(line), f))
        fputs(line, stderr);
    fclose(f);
    fflush(stderr);
}

int launch_mpi(const LaunchOpts *o, int argc, char **argv)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        fprintf(stderr, "sluice: cannot find this program's path: %s\n", strerror(errno));
        return 1;
    }
    exe[n] = 0;
    int max = argc + 2 * o->nmca + 32, k = 0;
    char **av = sl_calloc((size_t)max, sizeof(char *));
    char np[16];
    snprintf(np, sizeof(np), "%d", o->hosts);
    av[k++] = "mpirun";
    av[k++] = "--allow-run-as-root";
    av[k++] = "-np";
    av[k++] = np;
    if (o->hostfile) {
        av[k++] = "--hostfile";
        av[k++] = (char *)o->hostfile;
        av[k++] = "--map-by";
        av[k++] = "node";
    } else {
        av[k++] = "--oversubscribe";
    }
    bool yield_given = false;
    for (int i = 0; i < o->nmca; i++)
        yield_given |= !strcmp(o->mca[2 * i], "mpi_yield_when_idle");
    if (!yield_given) { /* ranks may outnumber cores: do not busy-poll */
        av[k++] = "--mca";
        av[k++] = "mpi_yield_when_idle";
        av[k++] = "1";
    }
    for (int i = 0; i < o->nmca; i++) {
        av[k++] = "--mca";
        av[k++] = (char *)o->mca[2 * i];
        av[k++] = (char *)o->mca[2 * i + 1];
    }
    av[k++] = exe;
    av[k++] = "run";
    for (int i = 0; i < argc; i++)
        av[k++] = argv[i];
    av[k] = NULL;
    fprintf(stderr, "sluice: launching %d hosts:", o->hosts);
    for (int i = 0; av[i]; i++)
        fprintf(stderr, " %s", av[i]);
    fputc('\n', stderr);

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    /* a rank on this machine whose watchdog expires tells us (SIGUSR2):
       mpirun itself may wait forever for a host that is cut off */
    char me[320], hn[256] = "";
    gethostname(hn, sizeof(hn) - 1);
    snprintf(me, sizeof(me), "%d@%s", (int)getpid(), hn);
    setenv("SLUICE_LAUNCHER", me, 1);
    /* a rank's watchdog writes its message here, and we print it once the
       job has ended (see cluster/net.c expired()) */
    const char *tmp = getenv("TMPDIR");
    char notes[4096];
    snprintf(notes, sizeof(notes), "%s/sluice-launch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int nfd = mkstemp(notes);
    if (nfd >= 0) {
        close(nfd);
        setenv("SLUICE_LAUNCHER_NOTES", notes, 1);
    } else {
        notes[0] = 0; /* the ranks write to stderr instead */
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "sluice: fork: %s\n", strerror(errno));
        sl_free(av);
        if (notes[0])
            unlink(notes);
        return 1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* this launcher killed: the job ends too */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execvp("mpirun", av);
        fprintf(stderr,
                "sluice: cannot run mpirun: %s (--hosts > 1 needs Open MPI: apt-get install "
                "openmpi-bin)\n",
                strerror(errno));
        _exit(127);
    }
    sl_free(av);
    int st = 0;
    bool forwarded = false;
    double killed_at = -1;
    for (int ticks = 0;; ticks++) {
        pid_t r = waitpid(pid, &st, got_watchdog ? WNOHANG : 0);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            break;
        if (got_signal && !forwarded) {
            fprintf(stderr, "sluice: stopping every host\n");
            kill(pid, SIGUSR1);
            forwarded = true;
        }
        if (got_watchdog) {
            if (killed_at < 0) {
                kill(pid, SIGTERM);
                killed_at = ticks;
            } else if (ticks - killed_at == 30) { /* 3 s */
                fprintf(stderr, "sluice: mpirun does not end (it waits for a lost host): "
                                "killing it\n");
                kill(pid, SIGKILL);
            }
            usleep(100000);
        }
    }
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (notes[0]) {
        print_notes(notes);
        unlink(notes);
    }
    if (code && code != 127)
        fprintf(stderr,
                "sluice: the %d-host job ended with status %d: a host's process failed (the "
                "messages above name it). With --storage, run the same command again to resume "
                "from the last checkpoint.\n",
                o->hosts, code);
    return code;
}
